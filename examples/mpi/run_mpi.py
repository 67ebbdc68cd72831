#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs allreduce_mpi under mpirun on this machine: writes a loopback job for N ranks, starts the
aggregator daemon (netagg-switchd; with --fpgad also netagg-fpgad's HLS model, float32 on the
wire), runs `mpirun --allow-run-as-root --oversubscribe -np N allreduce_mpi` against each and
stops the daemon. Exit status: 0 every run verified, 1 a run failed, 77 mpirun is missing (the
test is skipped).

    python3 examples/mpi/run_mpi.py --program build/examples/mpi/allreduce_mpi \\
        --switchd build/sim/switch/netagg-switchd [--fpgad build/sim/fpga/netagg-fpgad]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

SKIP = 77


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(command, name):
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready = f"{name}: listening on "
    lines = []
    for line in p.stdout:
        lines.append(line.rstrip())
        if line.startswith(ready):
            return p, line[len(ready):].split()[0]
    p.wait()
    raise RuntimeError(f"{name} exited with status {p.returncode}: {' | '.join(lines[-5:])}")


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def run(args, folder, daemon, name, extra_args, env_extra, window, per_packet):
    job = {"job_id": 1, "slots": {"base": 0, "count": window},
           "elements_per_packet": per_packet,
           "workers": [{"rank": r, "address": f"127.0.0.1:{free_udp_port()}"}
                       for r in range(args.np)]}
    job_path = os.path.join(folder, f"{name}.json")
    with open(job_path, "w") as f:
        json.dump(job, f)
    p, address = start_daemon([daemon, "--listen", "127.0.0.1:0", "--job", job_path, "--quiet"]
                              + extra_args, os.path.basename(daemon))
    exports = {"NETAGG_JOB_FILE": job_path, "NETAGG_AGGREGATOR": address, **env_extra}
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np)]
    for key in exports:
        command += ["-x", key]
    command += [args.program, "--count", str(args.count)]
    env = dict(os.environ, **exports)
    for key in ("NETAGG_RANK", "NETAGG_WORLD_SIZE", "NETAGG_EPOCH", "RANK", "WORLD_SIZE"):
        env.pop(key, None)  # the rank and the epoch must come from mpirun
    print(f"== {name}: {' '.join(f'{k}={v}' for k, v in exports.items())} {' '.join(command)}",
          flush=True)
    try:
        result = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=args.timeout)
        output, status = result.stdout, result.returncode
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        output = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
        status = f"timeout after {args.timeout} s"
    finally:
        stop(p)
    print(output.rstrip())
    ok = status == 0 and "int32 ok, float32 ok" in output
    print(f"{name}: {'ok' if ok else f'FAILED (mpirun: {status})'}", flush=True)
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--program", required=True, help="allreduce_mpi")
    p.add_argument("--switchd", required=True, help="netagg-switchd")
    p.add_argument("--fpgad", help="netagg-fpgad (also run through its HLS model)")
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--count", type=int, default=300000)
    p.add_argument("--timeout", type=int, default=60)
    args = p.parse_args()
    if shutil.which("mpirun") is None:
        print("skipped: mpirun not found (Debian: openmpi-bin)")
        return SKIP
    ok = True
    with tempfile.TemporaryDirectory(prefix="netagg-mpi-") as folder:
        ok &= run(args, folder, args.switchd, "switch", [], {}, 128, 1024)
        if args.fpgad:
            ok &= run(args, folder, args.fpgad, "fpga-hls", ["--model", "hls"],
                      {"NETAGG_FLOAT_WIRE": "fp32"}, 16, 256)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""An aggregator daemon on this machine, started by rank 0 when the process group is made.

With NETAGG_LOCAL_AGGREGATOR set, every rank picks a free UDP port on 127.0.0.1 and publishes it
in the c10d store; rank 0 writes the job (docs/job-format.md), starts the daemon on loopback,
waits for its "listening on" line and publishes the job with the daemon's address; every rank
writes it to a file of its own and points NETAGG_JOB_FILE at it, and NETAGG_RANK and
NETAGG_WORLD_SIZE at its rank in the group and the group's size (a group made by new_group
gets a daemon and a job of its own). The daemon stops when rank 0's
process exits, after every rank has said it is done (at most the job timeout, NETAGG_JOB_TIMEOUT_MS,
and 5 s more: a rank still retransmitting gives up by then), and dies with rank 0 if that is
killed.

    NETAGG_LOCAL_AGGREGATOR   switch (netagg-switchd, the switch model), fpga-hls (netagg-fpgad
                              --model hls, the FPGA aggregator's HLS C++ model) or fpga-rtl
                              (netagg-fpgad --model rtl, its RTL in Verilator)
    NETAGG_LOCAL_WINDOW       the job's window (slots per worker); default 128 for switch, 16
                              for the FPGA's models (at most 64: its slots)
    NETAGG_LOCAL_ELEMENTS_PER_PACKET   default 1024 for switch, 256 for the FPGA (what a slot
                              holds)
    NETAGG_SWITCHD, NETAGG_FPGAD       the daemons' paths; default: this build's
    NETAGG_LOCAL_PORT_BASE=P  fixed UDP ports instead of free ones (a firewall, a capture
                              filter): the daemon listens on P and rank r sends from P + 1 + r;
                              the n-th process group made (0 the default group) adds 1024 n
    NETAGG_LOCAL_VERBOSE=1    the daemon's output on stderr
    NETAGG_LOCAL_DIE_AT_DATAGRAM=N   fault injection: the daemon kills itself (SIGKILL) when
                              its N-th datagram arrives; the workers finish on the hosts
                              (docs/fallback.md)

For the FPGA's models it sets NETAGG_FLOAT_WIRE=fp32-exact unless set (exact fp32 sums, the same
bits whatever the order). Every rank
must run on this machine (LOCAL_WORLD_SIZE, where torchrun sets it, must be WORLD_SIZE).
"""

import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

try:
    from . import _build
except ImportError:  # not from a build tree
    _build = None

# kind: (program, its arguments besides --listen and --job, window, elements per packet)
AGGREGATORS = {
    "switch": ("netagg-switchd", [], 128, 1024),
    "fpga-hls": ("netagg-fpgad", ["--model", "hls"], 16, 256),
    "fpga-rtl": ("netagg-fpgad", ["--model", "rtl"], 16, 256),
}

_JOB_ID = 1
_started = []  # this process's daemons, stopped at exit


def _program(name):
    variable = "NETAGG_SWITCHD" if name == "netagg-switchd" else "NETAGG_FPGAD"
    path = os.environ.get(variable)
    if not path and _build is not None:
        path = _build.SWITCHD if name == "netagg-switchd" else _build.FPGAD
    if not path:
        raise RuntimeError(f"netagg: {name} is not part of this build; set {variable}")
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"netagg: {name} not found at {path}: build it (cmake --build BUILD --target "
            f"netagg-torch) or set {variable}")
    return path


def _port_base(generation, world_size):
    """NETAGG_LOCAL_PORT_BASE for this process group, or 0 (free ports)."""
    text = os.environ.get("NETAGG_LOCAL_PORT_BASE")
    if not text:
        return 0
    try:
        base = int(text)
    except ValueError:
        raise ValueError(f"NETAGG_LOCAL_PORT_BASE: '{text}' is not a port number") from None
    base += 1024 * generation
    if world_size > 1023 or not 1 <= base or base + world_size > 65535:
        raise ValueError(f"NETAGG_LOCAL_PORT_BASE: ports {base}..{base + world_size} of process "
                         f"group {generation} ({world_size} ranks) are not all UDP ports")
    return base


def _free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _positive_env(name, default, largest):
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= largest:
        raise RuntimeError(f"netagg: {name}={text!r} is not an integer in 1..{largest}")
    return value


def _die_with_parent():
    # Runs in the child between fork and exec: SIGTERM when the parent (rank 0) dies.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class _Daemon:
    """One aggregator daemon: started, its ready line awaited, its output drained."""

    def __init__(self, kind, job, workdir, port=0):
        program, args, _, _ = AGGREGATORS[kind]
        self.name = program
        self.workdir = workdir
        job_path = os.path.join(workdir, "job.json")
        with open(job_path, "w") as f:
            json.dump(job, f)
        command = [_program(program), "--listen", f"127.0.0.1:{port}", "--job", job_path] + args
        die_at = os.environ.get("NETAGG_LOCAL_DIE_AT_DATAGRAM")
        if die_at:
            command += ["--die-at-datagram", die_at]
        self.verbose = os.environ.get("NETAGG_LOCAL_VERBOSE") == "1"
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, preexec_fn=_die_with_parent)
        self.output = []
        ready = f"{program}: listening on "
        deadline = time.monotonic() + 60  # the RTL model programs its job through simulated CSRs
        self.address = None
        while self.address is None:
            line = self.process.stdout.readline()
            if not line:
                self.process.wait()
                raise RuntimeError(
                    f"netagg: {program} exited with status {self.process.returncode} before it "
                    f"listened: {' | '.join(l.strip() for l in self.output[-5:])}")
            self._keep(line)
            if line.startswith(ready):
                self.address = line[len(ready):].split()[0]
            elif time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"netagg: {program} did not listen within 60 s")
        threading.Thread(target=self._drain, daemon=True).start()

    def _keep(self, line):
        self.output = self.output[-20:] + [line]
        if self.verbose:
            sys.stderr.write(f"[{self.name}] {line}")

    def _drain(self):
        for line in self.process.stdout:  # a full pipe would stall the daemon
            self._keep(line)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _job(kind, ports):
    _, _, window, per_packet = AGGREGATORS[kind]
    largest_window = 64 if kind.startswith("fpga") else 32768
    largest_packet = 256 if kind.startswith("fpga") else 1024
    return {
        "job_id": _JOB_ID,
        "slots": {"base": 0,
                  "count": _positive_env("NETAGG_LOCAL_WINDOW", window, largest_window)},
        "elements_per_packet": _positive_env("NETAGG_LOCAL_ELEMENTS_PER_PACKET", per_packet,
                                             largest_packet),
        "workers": [{"rank": r, "address": f"127.0.0.1:{p}"} for r, p in enumerate(ports)],
    }


def _finish(store, key, rank, world_size, daemon):
    """At exit: ranks other than 0 say they are done; rank 0 waits for them, then stops its
    daemon, so that a rank still retransmitting its last packets finds the aggregator."""
    try:
        if rank != 0:
            store.add(key + "done", 1)
            return
        timeout_ms = os.environ.get("NETAGG_JOB_TIMEOUT_MS", os.environ.get("NETAGG_TIMEOUT_MS"))
        timeout_s = float(timeout_ms or "10000") / 1000
        deadline = time.monotonic() + timeout_s + 5
        while store.add(key + "done", 0) < world_size - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    except Exception:  # the store went away with its host: nobody to wait for
        pass
    finally:
        if daemon is not None:
            daemon.stop()
            shutil.rmtree(daemon.workdir, ignore_errors=True)


def prepare(store, rank, world_size, timeout):
    """Runs before the process group is made. Without NETAGG_LOCAL_AGGREGATOR it does nothing."""
    kind = os.environ.get("NETAGG_LOCAL_AGGREGATOR")
    if not kind:
        return
    if kind not in AGGREGATORS:
        raise RuntimeError(f"netagg: NETAGG_LOCAL_AGGREGATOR={kind!r} is not one of "
                           f"{', '.join(AGGREGATORS)}")
    if os.environ.get("NETAGG_CONFIG"):
        raise RuntimeError("netagg: NETAGG_LOCAL_AGGREGATOR writes the job itself; unset "
                           "NETAGG_CONFIG or NETAGG_LOCAL_AGGREGATOR")
    local_world, world = os.environ.get("LOCAL_WORLD_SIZE"), os.environ.get("WORLD_SIZE")
    if local_world is not None and world is not None and local_world != world:
        raise RuntimeError(
            f"netagg: NETAGG_LOCAL_AGGREGATOR runs the aggregator on loopback, so every rank "
            f"must run on this machine: LOCAL_WORLD_SIZE={local_world}, WORLD_SIZE={world}")
    if kind.startswith("fpga"):
        # fp32 summed exactly: the same bits in every run
        os.environ.setdefault("NETAGG_FLOAT_WIRE", "fp32-exact")

    # Keys of this process group (see ProcessGroupNetagg's generation).
    generation = (store.add("netagg-local/arrivals", 1) - 1) // world_size
    key = f"netagg-local/{generation}/"
    base = _port_base(generation, world_size)
    store.set(key + f"port/{rank}", str(base + 1 + rank if base else _free_udp_port()))
    daemon = None
    if rank == 0:
        try:
            ports = [int(store.get(key + f"port/{r}")) for r in range(world_size)]
            if len(set(ports)) != len(ports):
                raise RuntimeError(f"netagg: two ranks drew the same UDP port ({ports}): retry")
            job = _job(kind, ports)
            workdir = tempfile.mkdtemp(prefix="netagg-torch-")
            daemon = _Daemon(kind, job, workdir, base)
            _started.append(daemon)
            job["aggregator"] = daemon.address
            store.set(key + "job", json.dumps(job))
        except Exception as e:
            store.set(key + "job", json.dumps({"error": str(e)}))
            raise
    job = json.loads(store.get(key + "job"))
    if "error" in job:
        raise RuntimeError(f"netagg: rank 0 could not start the aggregator: {job['error']}")
    fd, path = tempfile.mkstemp(prefix=f"netagg-job-rank{rank}-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(job, f)
    os.environ["NETAGG_JOB_FILE"] = path
    # The job lists the group's ranks: a group made by new_group has ranks of its own.
    os.environ["NETAGG_RANK"] = str(rank)
    os.environ["NETAGG_WORLD_SIZE"] = str(world_size)
    atexit.register(os.remove, path)
    atexit.register(_finish, store, key, rank, world_size, daemon)

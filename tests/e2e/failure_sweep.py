#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The aggregator killed for good or killed and started again at 50, 80, 95 and 99 % of a run,
for every target (switch model, the FPGA's RTL and HLS model), int32 and fp32, 1 % loss, four
workers, each point repeated: every worker of every run must verify its sums (exit 0).

  failure_sweep.py BUILD_DIR [--repetitions N] [--targets switch,rtl,hls] [--json OUT]

Label long (make test-long). Prints one line per point: runs, failures, the fallback's median
time and the runs' median and worst all-reduce time.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

TARGETS = {
    "switch": (["--target", "switch-sim"], 40000),
    "rtl": (["--target", "fpga-sim", "--fpga-model", "rtl"], 8000),
    "hls": (["--target", "fpga-sim", "--fpga-model", "hls"], 8000),
}


def run(build, target, dtype, fraction, restart, seed):
    args, count = TARGETS[target]
    per_packet = 64
    packets = 4 * ((count + per_packet - 1) // per_packet + 1)
    at = max(1, int(fraction * packets))
    cmd = [f"{build}/sim/launcher/netagg-local", "--workers", "4", "--json", "--timeout", "20",
           "--dtype", dtype, "--count", str(count), "--elements-per-packet", str(per_packet),
           "--window", "16", "--loss", "0.01", "--seed", str(seed),
           "--kill-aggregator-at", str(at)] + args
    if restart:
        cmd.append("--restart-aggregator")
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - start
    try:
        summary = json.loads(p.stdout)
    except json.JSONDecodeError:
        summary = {}
    ok = p.returncode == 0 and summary.get("verification") == "ok"
    return ok, wall, summary, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--repetitions", type=int, default=20)
    ap.add_argument("--targets", default="switch,rtl,hls")
    ap.add_argument("--json")
    o = ap.parse_args()
    rows, failures = [], 0
    for target in o.targets.split(","):
        for restart in (False, True):
            for fraction in (0.5, 0.8, 0.95, 0.99):
                for dtype in ("int32", "fp32"):
                    walls, fallback, bad = [], [], []
                    for rep in range(o.repetitions):
                        ok, wall, s, p = run(o.build, target, dtype, fraction, restart, 100 + rep)
                        walls.append(wall)
                        fallback.append(s.get("fallback_seconds", 0.0))
                        if not ok:
                            bad.append(rep)
                            sys.stderr.write(f"FAILED {target} {'restart' if restart else 'kill'} "
                                             f"{fraction} {dtype} rep {rep}:\n{p.stdout}\n{p.stderr}\n")
                    failures += len(bad)
                    row = {"target": target, "failure": "restart" if restart else "kill",
                           "at": fraction, "dtype": dtype, "runs": o.repetitions,
                           "failed": len(bad), "wall_median_s": statistics.median(walls),
                           "wall_max_s": max(walls),
                           "fallback_median_s": statistics.median(fallback)}
                    rows.append(row)
                    print(f"{target:6} {row['failure']:7} at {fraction:4.2f} {dtype:5}: "
                          f"{o.repetitions - len(bad)}/{o.repetitions} ok, wall median "
                          f"{row['wall_median_s']:.2f} s max {row['wall_max_s']:.2f} s, fallback "
                          f"median {row['fallback_median_s']:.3f} s", flush=True)
    if o.json:
        with open(o.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"failure_sweep: {failures} failed runs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

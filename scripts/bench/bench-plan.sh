#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg-plan on k-ary fat trees, run as `bash scripts/bench/bench-plan.sh BUILD_DIR`: for k = 4, 8, 16
# (16, 128 and 1024 hosts; host h0 the root, every other host a worker; 10 Gbit/s links, every
# switch programmable and aggregating 30 Gbit/s) the rate of each policy (Scheme 1, Scheme 2,
# GRID and the LP bound), GRID's gap to the bound, the sizes of the programs and the solve times.
# The plans count the all-reduce's results on the reverse routes (netagg-plan's default);
# PLAN_ARGS=--upward-only plans the streams towards the root alone.
#
# Writes BUILD_DIR/bench/plan.json (one entry per k and policy, and the raw reports in
# BUILD_DIR/bench/plan-raw/) and BUILD_DIR/bench/plan.png (scripts/bench/plot-plan.py, matplotlib), and
# prints a table.
#
# Environment: PLAN_K (default "4 8 16"), PLAN_ARGS (more netagg-plan options, e.g.
# "--agg-gbps 15 --rounds 32").
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: bash scripts/bench/bench-plan.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
plan="$build/plan/netagg-plan"
[ -x "$plan" ] || { echo "bench-plan: $plan not built (ninja -C $build netagg-plan; needs GLPK)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out="$build/bench"
raw="$out/plan-raw"
mkdir -p "$raw"
ks=${PLAN_K:-4 8 16}
args=${PLAN_ARGS:-}

for k in $ks; do
  echo "bench-plan: k = $k ..." >&2
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # PLAN_ARGS is a list of options
  "$plan" --fat-tree "$k" $args --quiet --json "$raw/k$k.json"
  end=$(date +%s.%N)
  echo "$k $start $end" >> "$raw/wall.txt.$$"
done

python3 - "$raw" "$out/plan.json" "$raw/wall.txt.$$" "$args" <<'PY'
import json, os, platform, sys
raw, out, wall_file, args = sys.argv[1:5]
wall = {}
for line in open(wall_file):
    k, start, end = line.split()
    wall[int(k)] = float(end) - float(start)
os.remove(wall_file)
cpu = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
results = []
for k in sorted(wall):
    report = json.load(open(os.path.join(raw, f"k{k}.json")))
    policies = report["policies"]
    bound = policies["lp"]["rate_gbps"]
    for name in ("scheme1", "scheme2", "grid", "lp"):
        p = policies[name]
        d = p["details"]
        entry = {"k": k, "hosts": k ** 3 // 4, "workers": report["topology"]["workers"],
                 "policy": name, "rate_gbps": p["rate_gbps"], "of_lp": p["rate_gbps"] / bound,
                 "seconds": p["seconds"], "status": p["status"],
                 "trees": len(p.get("trees", [])) if p["executable"] else None}
        if name == "grid":
            entry["single_tree_gbps"] = d["single_tree_gbps"]
            entry["rounding_seconds"] = d["rounding_seconds"]
            entry["lp_seconds"] = d["lp_seconds"]
            entry["lp_size"] = d["lp"]
        if name == "lp":
            entry["route_seconds"] = d["route_seconds"]
            entry["candidate_routes"] = d["candidate_routes"]
        if name == "scheme1":
            entry["milp_size"] = d["milp"]
        results.append(entry)
json.dump({"command": f"netagg-plan --fat-tree K {args}".strip() + " --quiet --json ...",
           "options": report["options"], "machine": {"cpu": cpu, "cores": os.cpu_count(),
                                                     "system": platform.platform()},
           "wall_seconds": wall, "results": results}, open(out, "w"), indent=2)
print(f"{'k':>3} {'workers':>7} {'policy':<8} {'rate Gbit/s':>12} {'of LP':>6} {'trees':>5} "
      f"{'seconds':>8}  program (rows x columns)")
for e in results:
    size = e.get("lp_size") or e.get("milp_size")
    size = f"{size['rows']} x {size['columns']}" if size else ""
    trees = "-" if e["trees"] is None else e["trees"]
    print(f"{e['k']:>3} {e['workers']:>7} {e['policy']:<8} {e['rate_gbps']:>12.4f} "
          f"{e['of_lp']:>6.3f} {trees:>5} {e['seconds']:>8.2f}  {size}")
for k, s in wall.items():
    print(f"k = {k}: netagg-plan ran {s:.1f} s in all (routes, all policies, reports)")
print(f"model: {report['options'].get('traffic', 'upward-only')}")
PY

if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 "$here/plot-plan.py" "$out/plan.json" "$out/plan.png"
  echo "bench-plan: $out/plan.json, $out/plan.png" >&2
else
  echo "bench-plan: $out/plan.json (no plot: python3-matplotlib is not installed)" >&2
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg-plan on k-ary fat trees, run as `bash scripts/bench/bench-plan.sh BUILD_DIR`: for k = 4, 8,
# 16 (16, 128 and 1024 hosts; host h0 the root, every other host a worker; 10 Gbit/s links, every
# switch programmable and aggregating 30 Gbit/s) the rate of each policy (Scheme 1, Scheme 2, GRID
# and the LP bound), GRID's gap to the bound, the sizes of the programs and the solve times. The
# plans count the all-reduce's results on the reverse routes (netagg-plan's default);
# PLAN_ARGS=--upward-only plans the streams towards the root alone.
#
# Writes BUILD_DIR/bench/plan.json (one entry per k and policy, and the raw reports in
# BUILD_DIR/bench/plan-raw/) and BUILD_DIR/bench/plan.png (netagg_bench.plots, matplotlib), and
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
bench_py() { /usr/bin/python3 "$here/netagg_bench" "$@"; }  # the Python steps
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

bench_py plan-report --raw "$raw" --out "$out/plan.json" --wall "$raw/wall.txt.$$" --args="$args"

if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  bench_py plan-plot "$out/plan.json" "$out/plan.png"
  echo "bench-plan: $out/plan.json, $out/plan.png" >&2
else
  echo "bench-plan: $out/plan.json (no plot: python3-matplotlib is not installed)" >&2
fi

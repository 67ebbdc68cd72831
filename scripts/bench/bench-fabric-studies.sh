#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two studies in the ns-3 fabric (docs/fabric.md, "Measured"), run by `make bench-fabric` after the
# worker sweep, as `bash scripts/bench/bench-fabric-studies.sh BUILD_DIR`:
#
# 1. Several trees on an oversubscribed fabric (sim/fabric/oversubscribed.json: 2:1 leaf-spine,
#    32 workers, 4 MiB, 30 % background load of 1 MiB TCP flows, per-flow ECMP): K = 1, 2, 4
#    trees with congestion control on and off, and the ring all-reduce on the same fabric; each
#    run stops after 200 ms of simulated time (unfinished then).
# 2. Congestion control against long DCTCP flows (sim/fabric/congestion.json: 8 long flows across
#    the fabric, all on spine 0's links with the all-reduce's tree): congestion control on;
#    off (contributions not ECN-capable: RED drops them at the marking threshold); and
#    ECN-capable but not reacting to the marks.
#
# Output: BUILD_DIR/bench/fabric-studies.json (one summary per run; raw results under
# BUILD_DIR/bench/fabric-studies/), BUILD_DIR/bench/fabric-studies.png, tables on stdout.
# BENCH_FABRIC_STUDIES_QUICK=1 runs the congestion study only.
set -euo pipefail

usage() { echo "usage: bash scripts/bench/bench-fabric-studies.sh BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "bench-fabric-studies: no build directory '$1'" >&2; exit 2; }
bin="$build/sim/fabric/netagg-fabric"
[ -x "$bin" ] || { echo "bench-fabric-studies: $bin not built (needs ns-3)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
bench_py() { /usr/bin/python3 "$here/scripts/bench/netagg_bench" "$@"; }  # the Python steps
raw="$build/bench/fabric-studies"
mkdir -p "$raw"

# variant NAME BASE KEY=JSON...: writes $raw/NAME.json, BASE with the keys (dotted paths) set.
variant() {
  local name=$1 base=$2
  shift 2
  bench_py fabric-variant "$base" "$raw/$name.json" "$@"
}

runs=()
O="$here/sim/fabric/oversubscribed.json"
C="$here/sim/fabric/congestion.json"
if [ "${BENCH_FABRIC_STUDIES_QUICK:-0}" != 1 ]; then
  # 200 ms of simulated time at most: a run without congestion control that has not finished
  # by then (the all-reduce takes well under a millisecond with it) is reported unfinished.
  for k in 1 2 4; do
    variant "trees-$k-cc-on" "$O" "job.trees=$k" "time_limit_s=0.2"
    variant "trees-$k-cc-off" "$O" "job.trees=$k" "job.congestion_control=false" "time_limit_s=0.2"
    runs+=("trees-$k-cc-on" "trees-$k-cc-off")
  done
  variant "ring-oversubscribed" "$O" 'modes=["ring"]' "time_limit_s=0.2"
  runs+=("ring-oversubscribed")
fi
variant "cc-on" "$C"
variant "cc-off" "$C" "job.congestion_control=false"
variant "cc-ignores-marks" "$C" "job.congestion_control=false" "job.ecn_capable=true"
runs+=("cc-on" "cc-off" "cc-ignores-marks")

status=0
for r in "${runs[@]}"; do
  echo "bench-fabric-studies: $r" >&2
  if ! "$bin" "$raw/$r.json" --quiet --out "$raw/$r.result.json"; then
    echo "bench-fabric-studies: $r FAILED (see $raw/$r.result.json)" >&2
    status=1
  fi
done

bench_py fabric-studies-report --raw "$raw" --out "$build/bench" "${runs[@]}"
exit $status

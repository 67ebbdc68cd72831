#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg against Gloo's ring on bandwidth-limited links, run by `make bench` as
# `bash scripts/bench/bench-shaped.sh BUILD_DIR`.
#
# Each worker sits in its own network namespace behind a veth shaped with `tbf` in both directions;
# netagg-switchd runs unshaped in another namespace; a bridge joins them
# (scripts/netns/dpdk-netns.sh). In one run, for each link rate and worker count: netagg (kernel
# UDP, through the switch model, fp32 as block floating point and int32) and Gloo's ring all-reduce
# (fp32 over TCP between the same namespaces), one after the other on the same links. The in-network
# bound: each worker moves its tensor once each way instead of 2(N-1)/N times, so netagg's time can
# reach N / (2(N-1)) of the ring's.
#
# Writes BUILD_DIR/bench/shaped.json (every measurement, the ratios to the ring and to the bound)
# and BUILD_DIR/bench/shaped.png (time against workers per rate, the bound drawn), and prints a
# table. Needs root (namespaces, tc); otherwise it writes the reason to the JSON and exits 0.
#
# Environment:
#   SHAPED_WORKERS     worker counts. Default: 4 8.
#   SHAPED_RATES       link rates in Mbit/s. Default: 100 200 400.
#   SHAPED_BYTES       tensor size in bytes (K/M suffixes). Default: 16M.
#   SHAPED_ITERATIONS  timed all-reduces per measurement (median reported). Default: 3.
#   SHAPED_DTYPES      netagg's element types. Default: fp32 int32.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: bash scripts/bench/bench-shaped.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
bench_py() { /usr/bin/python3 "$repo/scripts/bench/netagg_bench" "$@"; }  # the Python steps
out="$build/bench"
raw="$out/shaped-raw"
mkdir -p "$raw"
json="$out/shaped.json"

workers_list=${SHAPED_WORKERS:-"4 8"}
rates=${SHAPED_RATES:-"100 200 400"}
size=${SHAPED_BYTES:-16M}
iterations=${SHAPED_ITERATIONS:-3}
dtypes=${SHAPED_DTYPES:-"fp32 int32"}
case $size in
  *K) bytes=$(( ${size%K} * 1024 )) ;;
  *M) bytes=$(( ${size%M} * 1048576 )) ;;
  *) bytes=$size ;;
esac

skip() {
  echo "bench-shaped: skipped: $1" >&2
  printf '{"skipped": "%s"}\n' "$1" > "$json"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, tc)"
command -v tc > /dev/null || skip "tc (iproute2) not found"
netagg_bin="$build/host/tools/netagg-allreduce"
switchd_bin="$build/sim/switch/netagg-switchd"
gloo_bin="$build/bench/gloo_allreduce"
for b in "$netagg_bin" "$switchd_bin" "$gloo_bin"; do
  [ -x "$b" ] || { echo "bench-shaped: $b is not built" >&2; exit 1; }
done

ns="nas$$"
netns() { bash "$repo/scripts/netns/dpdk-netns.sh" "$@"; }
trap 'netns down "$ns"' EXIT

# tbf on both ends of every worker's veth (dpdk-netns.sh shape).
shape() { netns shape "$ns" "$1" "$2"; }

# netagg: a fresh switch, all workers at once; the slowest worker's median time.
run_netagg() {
  local n=$1 dtype=$2 name=$3 job r sw status=0
  job="$raw/$name.job.json"
  netns job "$n" 256 64 > "$job"
  ip netns exec "$ns-agg" "$switchd_bin" --listen 10.77.0.254:20033 --job "$job" --slots 64 \
    > "$raw/$name.switch.log" 2>&1 &
  sw=$!
  for _ in $(seq 50); do grep -q "listening on" "$raw/$name.switch.log" && break; sleep 0.1; done
  local pids=() epoch
  epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')  # one per run, the same on every worker
  for (( r = 0; r < n; ++r )); do
    ip netns exec "$ns-w$r" timeout --kill-after=10 600 "$netagg_bin" --rank "$r" --job "$job" \
      --dtype "$dtype" --count $(( bytes / 4 )) --iterations $(( iterations + 1 )) --timeout 30 \
      --epoch "$epoch" --json > "$raw/$name.w$r.json" 2> "$raw/$name.w$r.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  kill "$sw" 2> /dev/null || true
  wait "$sw" 2> /dev/null || true
  if [ "$status" -ne 0 ]; then echo "bench-shaped: $name failed (exit $status), see $raw" >&2; fi
}

# Gloo's ring: one rank per namespace, bound to the worker's address, a FileStore rendezvous.
run_gloo() {
  local n=$1 name=$2 r store status=0
  store="$raw/$name.store"
  rm -rf "$store" && mkdir -p "$store"
  local pids=()
  for (( r = 0; r < n; ++r )); do
    ip netns exec "$ns-w$r" timeout --kill-after=10 600 "$gloo_bin" --rank "$r" --size "$n" \
      --store "$store" --hostname "10.77.0.$(( r + 1 ))" --bytes "$bytes" --warmup 1 \
      --iterations "$iterations" --timeout 120 > "$raw/$name.r$r.json" 2> "$raw/$name.r$r.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  if [ "$status" -ne 0 ]; then echo "bench-shaped: $name failed (exit $status), see $raw" >&2; fi
}

runs=()
for n in $workers_list; do
  netns down "$ns"
  netns up "$ns" "$n"
  netns addresses "$ns" "$n" on
  for mbit in $rates; do
    shape "$n" "$mbit"
    echo "bench-shaped: $n workers, $mbit Mbit/s, $bytes bytes" >&2
    run_gloo "$n" "gloo-n$n-r$mbit"
    runs+=("gloo-n$n-r$mbit")
    for dtype in $dtypes; do
      run_netagg "$n" "$dtype" "netagg-$dtype-n$n-r$mbit"
      runs+=("netagg-$dtype-n$n-r$mbit")
    done
  done
done
netns down "$ns"
trap - EXIT

bench_py shaped-report --raw "$raw" --out "$json" --png "$out/shaped.png" --bytes "$bytes" \
  --workers "$workers_list" --rates "$rates" --dtypes "$dtypes" --iterations "$iterations"

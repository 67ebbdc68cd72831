#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A competing TCP flow through one worker's link, run by `make bench` as root:
# `bash scripts/bench/bench-competing.sh BUILD_DIR`. The layout of scripts/bench/bench-shaped.sh
# (workers in namespaces behind tbf-shaped veths, netagg-switchd unshaped); one iperf3 TCP flow from
# worker 0's namespace to the aggregator's, so that it shares worker 0's shaped uplink with worker
# 0's contributions. Measured: the flow alone, netagg alone, and both at once with netagg's
# congestion control off and on (NETAGG_CONGESTION_CONTROL). This kernel's qdiscs do not mark ECN,
# so the shaper drops and the window reacts to loss only.
#
# Writes BUILD_DIR/bench/competing.json and prints a table. Environment: COMPETING_WORKERS
# (default 4), COMPETING_RATE Mbit/s (default 200), COMPETING_BYTES (default 16M),
# COMPETING_ITERATIONS all-reduces while the flow runs (default 8), COMPETING_SECONDS the flow's
# length (default 8).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: bash scripts/bench/bench-competing.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
bench_py() { /usr/bin/python3 "$repo/scripts/bench/netagg_bench" "$@"; }  # the Python steps
out="$build/bench"
raw="$out/competing-raw"
json="$out/competing.json"
mkdir -p "$raw"
n=${COMPETING_WORKERS:-4}
mbit=${COMPETING_RATE:-200}
size=${COMPETING_BYTES:-16M}
iterations=${COMPETING_ITERATIONS:-8}
seconds=${COMPETING_SECONDS:-8}
case "$size" in
  *K) bytes=$(( ${size%K} * 1024 )) ;;
  *M) bytes=$(( ${size%M} * 1048576 )) ;;
  *) bytes=$size ;;
esac

skip() {
  echo "bench-competing: skipped: $1" >&2
  printf '{"skipped": "%s"}\n' "$1" > "$json"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, tc)"
command -v tc > /dev/null || skip "tc (iproute2) not found"
command -v iperf3 > /dev/null || skip "iperf3 not found (scripts/install-deps.sh installs it)"
netagg_bin="$build/host/tools/netagg-allreduce"
switchd_bin="$build/sim/switch/netagg-switchd"
for b in "$netagg_bin" "$switchd_bin"; do
  [ -x "$b" ] || { echo "bench-competing: $b is not built" >&2; exit 1; }
done

ns="nac$$"
netns() { bash "$repo/scripts/netns/dpdk-netns.sh" "$@"; }
trap 'netns down "$ns"' EXIT
netns up "$ns" "$n"
netns addresses "$ns" "$n" on
netns shape "$ns" "$n" "$mbit"
ip netns exec "$ns-agg" iperf3 --server --daemon --bind 10.77.0.254 --port 5201 \
  --logfile "$raw/iperf3-server.log"
sleep 0.5

# flow NAME SECONDS: the TCP flow from worker 0, JSON to $raw/NAME.iperf.json.
flow() {
  ip netns exec "$ns-w0" iperf3 --client 10.77.0.254 --port 5201 --time "$2" --json \
    > "$raw/$1.iperf.json" 2> "$raw/$1.iperf.log"
}

# netagg NAME CC: all workers, `iterations` timed all-reduces of fp32, congestion control CC.
netagg() {
  local name=$1 cc=$2 job="$raw/job.json" sw r status=0 epoch
  netns job "$n" 256 64 > "$job"
  ip netns exec "$ns-agg" "$switchd_bin" --listen 10.77.0.254:20033 --job "$job" --slots 64 \
    > "$raw/$name.switch.log" 2>&1 &
  sw=$!
  for _ in $(seq 50); do grep -q "listening on" "$raw/$name.switch.log" && break; sleep 0.1; done
  epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  local pids=()
  for (( r = 0; r < n; ++r )); do
    ip netns exec "$ns-w$r" env NETAGG_CONGESTION_CONTROL="$cc" timeout --kill-after=10 600 \
      "$netagg_bin" --rank "$r" --job "$job" --dtype fp32 --count $(( bytes / 4 )) \
      --iterations "$iterations" --timeout 60 --epoch "$epoch" --json \
      > "$raw/$name.w$r.json" 2> "$raw/$name.w$r.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  kill "$sw" 2> /dev/null || true
  wait "$sw" 2> /dev/null || true
  [ "$status" -eq 0 ] || echo "bench-competing: $name failed (exit $status), see $raw" >&2
}

echo "bench-competing: $n workers, $mbit Mbit/s, flow alone" >&2
flow alone "$seconds"
for cc in 0 1; do
  echo "bench-competing: netagg alone, congestion control $cc" >&2
  netagg "netagg-cc$cc" "$cc"
  echo "bench-competing: netagg with the flow, congestion control $cc" >&2
  flow "both-cc$cc" "$seconds" &
  fpid=$!
  sleep 0.5
  netagg "both-cc$cc" "$cc"
  wait "$fpid" || true
done
pkill -f "iperf3 --server --daemon --bind 10.77.0.254" || true
netns down "$ns"
trap - EXIT

bench_py competing-report --raw "$raw" --out "$json" --workers "$n" --mbit "$mbit" --bytes "$bytes"

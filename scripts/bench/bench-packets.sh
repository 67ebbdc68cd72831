#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of a packet, run by `make bench` as `bash scripts/bench/bench-packets.sh BUILD_DIR`:
# packets per CPU second of netagg-switchd and of a netagg-allreduce worker, against a plain
# recvmmsg/sendmmsg UDP reflector and its load (bench/udp_reflector.cpp) in the same run, all on
# loopback. Four workers (or four loads) keep a window of 64 packets of 1046 bytes (256 int32 or
# fp32) in flight each; the aggregator (or the reflector) answers every packet once.
#
#   reflector: its packets in per CPU second of its own;  load: replies per CPU second
#   switchd:   packets_in per CPU second (/proc/PID/stat); worker: packets sent (first ones and
#              retransmissions) per CPU second of the whole process (set-up and checks included)
# netagg runs three times: with UDP GSO/GRO (the default), without (switchd --no-udp-offload,
# NETAGG_UDP_OFFLOAD=0 for the workers), and with offload and switchd --threads 2; the reflector
# and its load use neither.
#
# Writes BUILD_DIR/bench/packets.json and prints a table.
#
# Environment: PACKETS_COUNT elements per worker and all-reduce (default 4194304, 16384
# packets), PACKETS_ITERATIONS all-reduces (default 10).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: bash scripts/bench/bench-packets.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bench_py() { /usr/bin/python3 "$here/netagg_bench" "$@"; }  # the Python steps
out="$build/bench"
raw="$out/packets-raw"
mkdir -p "$raw"
count=${PACKETS_COUNT:-4194304}
iterations=${PACKETS_ITERATIONS:-10}
workers=4
reflector="$build/bench/udp_reflector"
switchd="$build/sim/switch/netagg-switchd"
worker="$build/host/tools/netagg-allreduce"
for b in "$reflector" "$switchd" "$worker"; do
  [ -x "$b" ] || { echo "bench-packets: $b is not built" >&2; exit 1; }
done
packets_per_worker=$(( (count + 255) / 256 * iterations ))

# CPU seconds of a running process (user + system) from /proc.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
wait_listening() {
  for _ in $(seq 50); do grep -q "listening on" "$1" && return 0; sleep 0.1; done
  echo "bench-packets: no 'listening on' in $1" >&2; return 1
}

# ---- the reflector and its load ----
"$reflector" reflect --listen 127.0.0.1:0 > "$raw/reflector.out" 2>&1 &
rpid=$!
wait_listening "$raw/reflector.out"
raddr=$(sed -n 's/.*listening on //p' "$raw/reflector.out" | head -1)
pids=()
for (( r = 0; r < workers; ++r )); do
  "$reflector" blast --target "$raddr" --packets "$packets_per_worker" --window 64 --bytes 1046 \
    > "$raw/load$r.json" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
kill -TERM "$rpid"; wait "$rpid" || true

# ---- netagg-switchd and four workers ----
job="$raw/job.json"
bench_py packets-job --out "$job" --workers "$workers"
# run_netagg LABEL OFFLOAD [THREADS]: switchd (from THREADS threads, default 1) and the workers
# with UDP GSO/GRO on (1) or off (0); the daemon's CPU seconds go to $raw/LABEL/switchd.cpu.
run_netagg() {
  local label=$1 offload=$2 dir="$raw/$1" spid saddr epoch status=0 flags=()
  mkdir -p "$dir"
  [ "$offload" = 1 ] || flags=(--no-udp-offload)
  flags+=(--threads "${3:-1}")
  "$switchd" --listen 127.0.0.1:0 --job "$job" --slots 64 --counters-json "$dir/switchd.json" \
    "${flags[@]}" > "$dir/switchd.out" 2>&1 &
  spid=$!
  wait_listening "$dir/switchd.out"
  saddr=$(sed -n 's/.*listening on //p' "$dir/switchd.out" | head -1)
  local pids=()
  epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')  # the run's, the same on every worker
  for (( r = 0; r < workers; ++r )); do
    NETAGG_UDP_OFFLOAD=$offload "$worker" --rank "$r" --job "$job" --target "$saddr" \
      --dtype int32 --count "$count" --iterations "$iterations" --epoch "$epoch" --json \
      > "$dir/worker$r.json" 2> "$dir/worker$r.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  cpu_of "$spid" > "$dir/switchd.cpu"
  kill -TERM "$spid"; wait "$spid" || true
  [ "$status" -eq 0 ] || { echo "bench-packets: a worker failed, see $dir" >&2; exit 1; }
}
run_netagg offload 1
run_netagg plain 0
run_netagg threads 1 2

bench_py packets-report --raw "$raw" --out "$out/packets.json" --workers "$workers"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The host fallback (docs/fallback.md) against Gloo's ring alone, in one run, 4 workers on
# loopback:
#   - host mode: the switch model dies at its first datagram, so after the first all-reduce every
#     one runs on the hosts (netagg-local --kill-aggregator-at 1); per size the median of the
#     later iterations, against gloo_allreduce's ring (TCP, the same bytes);
#   - death to completion: one all-reduce whose aggregator dies half-way, against the same
#     all-reduce with a live aggregator.
# JSON in BUILD/bench/fallback.json, a table on stdout.
#   bash scripts/bench/bench-fallback.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench-fallback.sh BUILD_DIR}
out="$build/bench"
here=$(cd "$(dirname "$0")" && pwd)
bench_py() { /usr/bin/python3 "$here/netagg_bench" "$@"; }  # the Python steps
mkdir -p "$out"
local_bin="$build/sim/launcher/netagg-local"
gloo_bin="$build/bench/gloo_allreduce"
for b in "$local_bin" "$gloo_bin"; do
  [[ -x $b ]] || { echo "bench-fallback: $b is not built" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sizes=(65536 1048576 16777216)
for bytes in "${sizes[@]}"; do
  count=$((bytes / 4))
  "$local_bin" --workers 4 --dtype int32 --count "$count" --iterations 8 --timeout 30 \
    --kill-aggregator-at 1 --json > "$tmp/host-$bytes.json"
  "$gloo_bin" --ranks 4 --bytes "$bytes" --warmup 2 --iterations 7 > "$tmp/gloo-$bytes.json"
  # Half of the datagrams of the all-reduce (1024 elements a packet) and of its barrier.
  half=$(( (4 * ((count + 1023) / 1024 + 1)) / 2 ))
  "$local_bin" --workers 4 --dtype int32 --count "$count" --timeout 30 \
    --kill-aggregator-at "$half" --json > "$tmp/death-$bytes.json"
  "$local_bin" --workers 4 --dtype int32 --count "$count" --timeout 30 \
    --json > "$tmp/live-$bytes.json"
done

bench_py fallback-report --folder "$tmp" --out "$out/fallback.json" --sizes "${sizes[*]}"

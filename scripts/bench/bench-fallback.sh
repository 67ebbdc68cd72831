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

/usr/bin/python3 - "$tmp" "$out/fallback.json" "${sizes[@]}" <<'PY'
import json, statistics, sys
tmp, path, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
rows = []
for b in sizes:
    load = lambda name: json.load(open(f"{tmp}/{name}-{b}.json"))
    host, gloo, death, live = load("host"), load("gloo"), load("death"), load("live")
    for name, run in (("host", host), ("death", death), ("live", live)):
        if run["verification"] != "ok":
            sys.exit(f"bench-fallback: {name} run of {b} bytes: {run['verification']}: "
                     f"{run.get('problems')}")
    later = host["seconds_all"][1:]  # the first one includes the detection
    rows.append({
        "bytes": b,
        "host_mode_seconds_median": statistics.median(later),
        "gloo_ring_seconds_median": gloo["seconds_median"],
        "host_over_gloo": statistics.median(later) / gloo["seconds_median"],
        "death_to_completion_seconds": death["seconds"],
        "live_seconds": live["seconds"],
        "death_fallback_seconds": death["fallback_seconds"],
    })
json.dump({"workers": 4, "rows": rows}, open(path, "w"), indent=1)
print("| bytes | host mode (median) | Gloo ring (median) | ratio | aggregator dies half-way | live | of which the session |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['bytes']} | {1e3 * r['host_mode_seconds_median']:.2f} ms | "
          f"{1e3 * r['gloo_ring_seconds_median']:.2f} ms | {r['host_over_gloo']:.2f} | "
          f"{r['death_to_completion_seconds']:.3f} s | {1e3 * r['live_seconds']:.2f} ms | "
          f"{r['death_fallback_seconds']:.3f} s |")
print(f"bench-fallback: {path}")
PY

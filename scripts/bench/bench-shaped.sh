#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg against Gloo's ring on bandwidth-limited links, run by `make bench` as
# `bash scripts/bench/bench-shaped.sh BUILD_DIR`.
#
# Each worker sits in its own network namespace behind a veth shaped with `tbf` in both
# directions; netagg-switchd runs unshaped in another namespace; a bridge joins them
# (scripts/netns/dpdk-netns.sh). In one run, for each link rate and worker count: netagg (kernel UDP,
# through the switch model, fp32 as block floating point and int32) and Gloo's ring all-reduce
# (fp32 over TCP between the same namespaces), one after the other on the same links. The
# in-network bound: each worker moves its tensor once each way instead of 2(N-1)/N times, so
# netagg's time can reach N / (2(N-1)) of the ring's.
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

SHAPED_RAW="$raw" SHAPED_JSON="$json" SHAPED_PNG="$out/shaped.png" SHAPED_BYTES="$bytes" \
SHAPED_WORKERS="$workers_list" SHAPED_RATES="$rates" SHAPED_DTYPES="$dtypes" \
SHAPED_ITERATIONS="$iterations" /usr/bin/python3 - <<'PY'
"""Merges the raw outputs into shaped.json, prints the table and draws shaped.png."""
import glob
import json
import os
import sys

raw = os.environ["SHAPED_RAW"]
size = int(os.environ["SHAPED_BYTES"])
workers = [int(w) for w in os.environ["SHAPED_WORKERS"].split()]
rates = [int(r) for r in os.environ["SHAPED_RATES"].split()]
dtypes = os.environ["SHAPED_DTYPES"].split()


def last_json(path):
    try:
        lines = [l for l in open(path).read().splitlines() if l.strip().startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def netagg_time(name, n):
    ranks = [last_json(f"{raw}/{name}.w{r}.json") for r in range(n)]
    if any(r is None or r.get("verification") != "ok" for r in ranks):
        return None, ranks
    # seconds_all holds every iteration, the first one a warm-up; the slowest rank per iteration.
    per_iteration = [max(r["seconds_all"][i] for r in ranks)
                     for i in range(1, len(ranks[0]["seconds_all"]))]
    per_iteration.sort()
    return per_iteration[len(per_iteration) // 2], ranks


rows, failures = [], []
for n in workers:
    bound = n / (2 * (n - 1))
    for mbit in rates:
        gloo = last_json(f"{raw}/gloo-n{n}-r{mbit}.r0.json")
        gloo_s = gloo.get("seconds_median") if gloo else None
        if gloo_s is None:
            failures.append(f"gloo n={n} {mbit} Mbit/s")
        for dtype in dtypes:
            t, ranks = netagg_time(f"netagg-{dtype}-n{n}-r{mbit}", n)
            if t is None:
                failures.append(f"netagg {dtype} n={n} {mbit} Mbit/s")
            ratio = t / gloo_s if t and gloo_s else None
            link_s = size * 8 / (mbit * 1e6)  # one tensor over one link
            rows.append({
                "workers": n, "link_mbit": mbit, "bytes": size, "dtype": dtype,
                "netagg_seconds": t, "ring_seconds": gloo_s,
                "netagg_link_share": link_s / t if t else None,
                "ring_link_share": link_s * 2 * (n - 1) / n / gloo_s if gloo_s else None,
                "ratio_netagg_over_ring": ratio, "bound": bound,
                "ratio_over_bound": ratio / bound if ratio else None,
                "retransmissions": sum(r.get("retransmissions", 0) for r in ranks if r),
                "spurious_retransmissions":
                    sum(r.get("spurious_retransmissions", 0) for r in ranks if r),
                "packets_sent": sum(r.get("packets_sent", 0) for r in ranks if r),
            })

json.dump({"rows": rows, "failures": failures,
           "command": "bash scripts/bench/bench-shaped.sh BUILD_DIR",
           "iterations": int(os.environ["SHAPED_ITERATIONS"])},
          open(os.environ["SHAPED_JSON"], "w"), indent=1)


def f(x, spec):
    return format(x, spec) if x is not None else "-"


print(f"netagg against Gloo's ring on tbf-shaped links, {size} bytes, median of "
      f"{os.environ['SHAPED_ITERATIONS']} (slowest worker). share: of the link rate used.")
print(f"{'N':>2} {'Mbit/s':>6} {'dtype':>5} {'netagg s':>9} {'ring s':>8} {'netagg share':>12} "
      f"{'ring share':>10} {'ratio':>6} {'bound':>6} {'/bound':>6} {'retx':>6}")
for r in rows:
    print(f"{r['workers']:>2} {r['link_mbit']:>6} {r['dtype']:>5} {f(r['netagg_seconds'], '9.3f')} "
          f"{f(r['ring_seconds'], '8.3f')} {f(r['netagg_link_share'], '12.2f')} "
          f"{f(r['ring_link_share'], '10.2f')} {f(r['ratio_netagg_over_ring'], '6.2f')} "
          f"{r['bound']:6.3f} {f(r['ratio_over_bound'], '6.2f')} {r['retransmissions']:>6}")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(rates), figsize=(5 * len(rates), 4), squeeze=False)
    for ax, mbit in zip(axes[0], rates):
        sel = [r for r in rows if r["link_mbit"] == mbit]
        ring = {r["workers"]: r["ring_seconds"] for r in sel if r["ring_seconds"]}
        ax.plot(sorted(ring), [ring[n] for n in sorted(ring)], "o-", label="Gloo ring")
        ax.plot(sorted(ring), [ring[n] * n / (2 * (n - 1)) for n in sorted(ring)], "k--",
                label="bound: ring × N/(2(N−1))")
        for dtype in dtypes:
            pts = sorted((r["workers"], r["netagg_seconds"]) for r in sel
                         if r["dtype"] == dtype and r["netagg_seconds"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "s-", label=f"netagg {dtype}")
        ax.set_title(f"{mbit} Mbit/s per link, {size >> 20} MiB")
        ax.set_xlabel("workers")
        ax.set_ylabel("seconds per all-reduce")
        ax.set_xticks(workers)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.environ["SHAPED_PNG"], dpi=100)
    print(f"plot: {os.environ['SHAPED_PNG']}")
except ImportError:
    print("plot: matplotlib not installed, none drawn", file=sys.stderr)
print(f"JSON: {os.environ['SHAPED_JSON']}")
for fail in failures:
    print(f"FAILED: {fail}", file=sys.stderr)
sys.exit(1 if failures else 0)
PY

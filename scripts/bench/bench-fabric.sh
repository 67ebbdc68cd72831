#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ns-3 fabric's benchmark, run by `make bench-fabric` as `bash scripts/bench/bench-fabric.sh
# BUILD_DIR`: the all-reduce's completion time against the number of workers N, in-network (an
# aggregation tree: each leaf switch aggregates its hosts, spine 0 is the root) and ring
# all-reduce over TCP, on the same fabric and tensor. One netagg-fabric run per N.
#
# Fabric for N workers: 100 Gbit/s host links, 1 us per link, RED marking at 65 packets,
# congestion control on, 256 elements a packet. Up to 256 workers a leaf-spine:
# hosts_per_leaf = N/2 up to 8 (so at least 2 leaves), leaves = N / hosts_per_leaf, spines =
# leaves / 2 between 1 and 4, no oversubscription (a leaf's links to the spines together are as
# fast as its hosts'). Above 256 workers (more than 32 leaves of 8, and a switch-model job holds
# at most 32 members) the first N hosts of a k = 16 fat tree (1024 hosts, full bisection): edge
# switches aggregate their 8 hosts, aggregation switches their pod's edges, core 0 the pods. A
# sends its partial sums to the root at a host link's rate; when one leaf-spine link is slower
# than that, the job runs on K trees rooted on K spines (K = spines / hosts_per_leaf, rounded
# up), each with window 128 / K. (With at most 4 spines and 8 hosts a leaf, K is 1.)
#
# Output: BUILD_DIR/bench/fabric.json (every run's summary, the scenarios and the raw results
# under BUILD_DIR/bench/fabric/), BUILD_DIR/bench/fabric.png (time against N, and the ring's time
# over the in-network time against the bound 2(N-1)/N), a table on stdout. docs/fabric.md has the
# numbers this printed.
#
# Environment:
#   BENCH_FABRIC_WORKERS  worker counts, space or comma separated, even.
#                         Default: 4 8 16 32 64 128 256 512 1024 (about 20 minutes on 2 cores;
#                         up to 256: 2 minutes).
#   BENCH_FABRIC_BYTES    tensor size in bytes (a multiple of 4). Default: 4194304 (4 MiB).
#   BENCH_FABRIC_QUICK=1  workers 4 8 16 and 1 MiB (a smoke run, a few seconds).
set -euo pipefail

usage() { echo "usage: bash scripts/bench/bench-fabric.sh BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "bench-fabric: no build directory '$1'" >&2; exit 2; }
bin="$build/sim/fabric/netagg-fabric"
if [ ! -x "$bin" ]; then
  echo "bench-fabric: $bin not built (it needs ns-3: scripts/install-deps.sh, then" \
       "cmake --build $1 --target netagg-fabric)" >&2
  exit 2
fi
out="$build/bench"
raw="$out/fabric"
mkdir -p "$raw"

if [ "${BENCH_FABRIC_QUICK:-0}" = 1 ]; then
  workers_list="4 8 16"
  bytes=1048576
else
  workers_list=${BENCH_FABRIC_WORKERS:-"4 8 16 32 64 128 256 512 1024"}
  workers_list=${workers_list//,/ }
  bytes=${BENCH_FABRIC_BYTES:-4194304}
fi
if ! [[ $bytes =~ ^[0-9]+$ ]] || (( bytes == 0 || bytes % 4 != 0 )); then
  echo "bench-fabric: BENCH_FABRIC_BYTES=$bytes is not a positive multiple of 4" >&2; exit 2
fi

status=0
results=()
for n in $workers_list; do
  if ! [[ $n =~ ^[0-9]+$ ]] || (( n < 4 || n % 2 != 0 )); then
    echo "bench-fabric: bad worker count '$n' (even, at least 4)" >&2; exit 2
  fi
  if (( n > 1024 )); then
    echo "bench-fabric: $n workers: at most 1024 (a k = 16 fat tree)" >&2; exit 2
  fi
  hpl=$(( n / 2 < 8 ? n / 2 : 8 ))
  if (( n <= 256 && n % hpl != 0 )); then
    echo "bench-fabric: $n workers do not fill leaves of $hpl hosts" >&2; exit 2
  fi
  leaves=$(( n / hpl ))
  spines=$(( leaves / 2 > 1 ? (leaves / 2 < 4 ? leaves / 2 : 4) : 1 ))
  trees=$(( (spines + hpl - 1) / hpl ))
  window=$(( 128 / trees ))
  scenario="$raw/scenario-$n.json"
  result="$raw/result-$n.json"
  topology="\"leaves\": $leaves, \"spines\": $spines, \"hosts_per_leaf\": $hpl"
  shape="$leaves leaves x $hpl hosts, $spines spines, $trees tree(s)"
  if (( n > 256 )); then
    topology="\"kind\": \"fat-tree\", \"k\": 16"
    shape="the first $n hosts of a k = 16 fat tree"
    trees=1
    window=128
  fi
  cat >"$scenario" <<EOF
{
  "name": "bench-fabric: $n workers, $bytes bytes",
  "topology": {$topology,
               "host_gbps": 100, "oversubscription": 1, "delay_us": 1},
  "queues": {"kind": "red-ecn", "ecn_threshold_packets": 65, "capacity_packets": 1000},
  "job": {"tensor_bytes": $bytes, "elements_per_packet": 256, "window": $window,
          "aggregation": "tree", "trees": $trees, "congestion_control": true,
          "workers": $n},
  "modes": ["innetwork", "ring"]
}
EOF
  echo "bench-fabric: N=$n ($shape)" >&2
  if ! "$bin" "$scenario" --out "$result" --quiet; then
    echo "bench-fabric: N=$n FAILED (see $result)" >&2
    status=1
  fi
  [ -s "$result" ] && results+=("$result")
done

[ ${#results[@]} -gt 0 ] || { echo "bench-fabric: no result" >&2; exit 1; }

OUT="$out" /usr/bin/python3 - "${results[@]}" <<'PY'
import json, os, sys

out = os.environ["OUT"]
rows = []
for path in sys.argv[1:]:
    r = json.load(open(path))
    i, g = r.get("innetwork", {}), r.get("ring", {})
    rows.append({
        "workers": r["workers"],
        "tensor_bytes": r["tensor_bytes"],
        "topology": r["scenario"]["topology"],
        "trees": r["scenario"]["job"]["trees"],
        "innetwork_s": i.get("completion_s"),
        "innetwork_verified": i.get("verified"),
        "innetwork_retransmissions": i.get("retransmissions"),
        "innetwork_ce_marks": i.get("queues", {}).get("ecn_marks"),
        "ring_s": g.get("completion_s"),
        "ring_completed": g.get("completed"),
        "ring_over_innetwork": r.get("ring_over_innetwork"),
        "bound": r["bound"],
        "ideal_innetwork_s": r["ideal"]["innetwork_s"],
        "ideal_ring_s": r["ideal"]["ring_s"],
        "wall_s": (i.get("wall_s") or 0) + (g.get("wall_s") or 0),
        "simulated_packets": (i.get("simulated_packets") or 0) + (g.get("simulated_packets") or 0),
        "result": path,
    })
rows.sort(key=lambda x: x["workers"])
for x in rows:
    x["simulated_packets_per_wall_s"] = x["simulated_packets"] / x["wall_s"] if x["wall_s"] else 0
with open(os.path.join(out, "fabric.json"), "w") as f:
    json.dump({"benchmark": "fabric", "runs": rows}, f, indent=2)

print(f"{'N':>5} {'in-network ms':>14} {'ring ms':>9} {'ring/in-net':>11} {'bound':>6} "
      f"{'ideal in-net':>12} {'verified':>8} {'wall s':>7} {'pkts/s':>8}")
for x in rows:
    def ms(v):
        return f"{v * 1e3:.3f}" if v else "-"
    ratio = f"{x['ring_over_innetwork']:.2f}" if x["ring_over_innetwork"] else "-"
    print(f"{x['workers']:>5} {ms(x['innetwork_s']):>14} {ms(x['ring_s']):>9} {ratio:>11} "
          f"{x['bound']:>6.3f} {ms(x['ideal_innetwork_s']):>12} {str(x['innetwork_verified']):>8} "
          f"{x['wall_s']:>7.1f} {x['simulated_packets_per_wall_s']:>8.0f}")

done = [x["innetwork_s"] for x in rows if x["innetwork_s"] and x["innetwork_verified"]]
if len(done) > 1:
    print(f"in-network time over N: slowest / fastest = {max(done) / min(done):.4f}")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot: matplotlib not installed, none drawn", file=sys.stderr)
    sys.exit(0)
n = [x["workers"] for x in rows]
fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
a.plot(n, [x["innetwork_s"] * 1e3 for x in rows], "o-", label="in-network (tree of switch models)")
a.plot(n, [x["ring_s"] * 1e3 for x in rows], "s-", label="ring all-reduce (TCP)")
a.plot(n, [x["ideal_innetwork_s"] * 1e3 for x in rows], ":", color="C0", label="S / host link")
a.plot(n, [x["ideal_ring_s"] * 1e3 for x in rows], ":", color="C1",
       label="2(N-1)/N · S / host link")
a.set_xscale("log", base=2)
a.set_xlabel("workers N")
a.set_ylabel("completion time (ms, slowest worker)")
a.set_title(f"all-reduce of {rows[0]['tensor_bytes'] >> 20} MiB, 100 Gbit/s hosts")
a.set_ylim(bottom=0)
a.legend(fontsize=8)
b.plot(n, [x["ring_over_innetwork"] for x in rows], "o-", label="measured ring / in-network")
b.plot(n, [x["bound"] for x in rows], "--", label="bound 2(N-1)/N (bytes per worker)")
b.set_xscale("log", base=2)
b.set_xlabel("workers N")
b.set_ylabel("ring time / in-network time")
b.set_ylim(bottom=0)
b.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "fabric.png"), dpi=110)
print(f"bench-fabric: {os.path.join(out, 'fabric.json')}, {os.path.join(out, 'fabric.png')}")
PY
exit $status

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
here=$(cd "$(dirname "$0")" && pwd)
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

/usr/bin/python3 "$here/netagg_bench" fabric-report --out "$out" "${results[@]}"
exit $status

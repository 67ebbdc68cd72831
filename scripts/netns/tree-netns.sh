#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job on aggregation trees of netagg-switchd processes, each daemon and each worker in a
# network namespace of its own, all on one bridge, with loss injected at every aggregator
# (nftables, both directions). The workers verify their sums; this script checks every worker
# and daemon and prints a JSON summary on stdout. Root only. Used by tests/e2e (label netns) and
# runnable by hand:
#
#   bash scripts/netns/tree-netns.sh BUILD_DIR [options]
#     --workers N      workers (default 6), spread over the leaves in rank order (r mod L)
#     --leaves L       leaf daemons (default 3)
#     --trees K        trees, each with a root daemon of its own; the leaves are in every tree
#                      (default 1)
#     --loss P         percent of netagg UDP dropped at every aggregator, each way (default 1)
#     --dtype D        int32 or fp32 (block floating point; default int32)
#     --count C        elements per worker (default 200000)
#     --iterations I   all-reduces (default 2)
#     --name NAME      namespace prefix (default ntree$$); everything is NAME-*
#
# Namespaces: NAME-br (bridge br0), NAME-a<i> (daemon i: roots first, then leaves; 10.78.0.(200+i),
# UDP 20033), NAME-w<r> (worker r; 10.78.0.(1+r), UDP 20100). Exit: 0 all verified, 1 a worker
# or daemon failed, 2 usage or set-up error.
set -euo pipefail

die() { echo "tree-netns: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: bash scripts/netns/tree-netns.sh BUILD_DIR [options]"
build=$(cd "$1" && pwd) || die "no build directory $1"
shift
workers=6 leaves=3 trees=1 loss=1 dtype=int32 count=200000 iterations=2 name="ntree$$"
while [ $# -gt 0 ]; do
  case $1 in
    --workers) workers=$2 ;;
    --leaves) leaves=$2 ;;
    --trees) trees=$2 ;;
    --loss) loss=$2 ;;
    --dtype) dtype=$2 ;;
    --count) count=$2 ;;
    --iterations) iterations=$2 ;;
    --name) name=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
for v in workers leaves trees loss count iterations; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--$v: '${!v}' is not a number"
done
(( workers >= 1 && workers <= 100 )) || die "--workers: 1..100"
(( leaves >= 1 && leaves <= workers && leaves + trees <= 50 )) || die "--leaves: 1..workers"
(( trees >= 1 && trees <= 8 )) || die "--trees: 1..8"
switchd="$build/sim/switch/netagg-switchd"
worker="$build/host/tools/netagg-allreduce"
for b in "$switchd" "$worker"; do [ -x "$b" ] || die "$b is not built"; done

readonly subnet=10.78.0 agg_port=20033 worker_port=20100 window=32
daemons=$(( trees + leaves ))
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name}-(br|a[0-9]+|w[0-9]+)$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- namespaces: one bridge, a veth per daemon and per worker ----
ip netns add "$name-br"
ip -n "$name-br" link add br0 type bridge
ip -n "$name-br" link set br0 up
attach() {  # attach NS IP: a namespace on the bridge with address IP
  local ns=$1 addr=$2 peer=$3
  ip netns add "$ns"
  ip link add eth0 netns "$ns" type veth peer name "$peer" netns "$name-br"
  ip -n "$name-br" link set "$peer" master br0 up
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
}
for (( i = 0; i < daemons; ++i )); do attach "$name-a$i" "$subnet.$(( 200 + i ))" "pa$i"; done
for (( r = 0; r < workers; ++r )); do attach "$name-w$r" "$subnet.$(( 1 + r ))" "pw$r"; done

# ---- the job: K trees, roots a0..a(K-1), leaves a(K).. in every tree ----
job="$tmp/job.json"
python3 - "$job" "$workers" "$leaves" "$trees" "$window" <<'PY'
import json, sys
path, n, leaves, trees, window = sys.argv[1], *map(int, sys.argv[2:])
agg = lambda i: f"10.78.0.{200 + i}:20033"
job = {"job_id": 1, "elements_per_packet": 256,
       "workers": [{"rank": r, "address": f"10.78.0.{1 + r}:20100"} for r in range(n)],
       "trees": []}
for k in range(trees):
    aggs = [{"name": f"root{k}", "address": agg(k)}]
    for l in range(leaves):
        aggs.append({"name": f"leaf{l}", "address": agg(trees + l), "parent": f"root{k}",
                     "slot_base": k * window, "workers": list(range(l, n, leaves))})
    job["trees"].append({"job_id": 1 + k, "window": window, "aggregators": aggs})
json.dump(job, open(path, "w"), indent=1)
PY

# ---- loss at every aggregator, both directions ----
if (( loss > 0 )); then
  for (( i = 0; i < daemons; ++i )); do
    ip netns exec "$name-a$i" nft -f - <<EOF
table inet netagg_loss {
  chain in { type filter hook input priority 0; udp dport $agg_port numgen random mod 100 < $loss drop; }
  chain out { type filter hook output priority 0; udp sport $agg_port numgen random mod 100 < $loss drop; }
}
EOF
  done
fi

# ---- the daemons ----
for (( i = 0; i < daemons; ++i )); do
  if (( i < trees )); then as="root$i"; else as="leaf$(( i - trees ))"; fi
  ip netns exec "$name-a$i" "$switchd" --listen "$subnet.$(( 200 + i )):$agg_port" --job "$job" \
    --as "$as" --slots $(( trees * window )) --counters-json "$tmp/a$i.json" \
    > "$tmp/a$i.out" 2>&1 &
  pids+=($!)
done
for (( i = 0; i < daemons; ++i )); do
  for (( t = 0; t < 100; ++t )); do
    grep -q "listening on" "$tmp/a$i.out" 2>/dev/null && break
    sleep 0.05
  done
  grep -q "listening on" "$tmp/a$i.out" || { cat "$tmp/a$i.out" >&2; die "daemon a$i did not start"; }
done

# ---- the workers ----
epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
wpids=()
start=$(date +%s.%N)
for (( r = 0; r < workers; ++r )); do
  ip netns exec "$name-w$r" "$worker" --rank "$r" --job "$job" --epoch "$epoch" --dtype "$dtype" \
    --count "$count" --iterations "$iterations" --timeout 20 --json \
    > "$tmp/w$r.json" 2> "$tmp/w$r.err" &
  wpids+=($!)
done
status=0
for (( r = 0; r < workers; ++r )); do wait "${wpids[$r]}" || status=1; done
end=$(date +%s.%N)
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" || status=1; done
pids=()

WORKERS=$workers DAEMONS=$daemons TREES=$trees TMP=$tmp STATUS=$status \
  SECONDS_WALL=$(echo "$end - $start" | bc) LOSS=$loss DTYPE=$dtype COUNT=$count \
  python3 - <<'PY'
import json, os
tmp, n, d, k = os.environ["TMP"], int(os.environ["WORKERS"]), int(os.environ["DAEMONS"]), int(os.environ["TREES"])
ok = os.environ["STATUS"] == "0"
workers = []
for r in range(n):
    lines = [l for l in open(f"{tmp}/w{r}.json").read().splitlines() if l.startswith("{")]
    w = json.loads(lines[-1]) if lines else {}
    ok = ok and w.get("verification") == "ok"
    workers.append({"rank": r, "verification": w.get("verification"),
                    "retransmissions": w.get("retransmissions"), "seconds": w.get("seconds"),
                    "error": w.get("error")})
aggs = {}
for i in range(d):
    name = f"root{i}" if i < k else f"leaf{i - k}"
    try:
        c = json.load(open(f"{tmp}/a{i}.json"))
    except (OSError, ValueError):
        c, ok = {}, False
    aggs[name] = {key: c.get(key) for key in ("packets_in", "completions", "sent_to_parent",
                                              "resent_to_parent", "results_from_parent",
                                              "results_resent")}
print(json.dumps({"verification": "ok" if ok else "failed", "workers": n, "trees": k,
                  "loss_percent": int(os.environ["LOSS"]), "dtype": os.environ["DTYPE"],
                  "count": int(os.environ["COUNT"]),
                  "wall_seconds": float(os.environ["SECONDS_WALL"]),
                  "ranks": workers, "aggregators": aggs}, indent=1))
PY
if [ "$status" != 0 ]; then
  for (( r = 0; r < workers; ++r )); do sed "s/^/w$r: /" "$tmp/w$r.err" >&2; done
  for (( i = 0; i < daemons; ++i )); do sed "s/^/a$i: /" "$tmp/a$i.out" >&2; done
  exit 1
fi

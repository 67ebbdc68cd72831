#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg-plan's plans of GRID's example (plan/topologies/grid-example.json) run on real
# processes: one network namespace per node, each link a veth pair shaped by tbf on both ends,
# every stream pinned by policy routing to the route the plan gives it, a netagg-switchd with
# the node's capacity as --max-gbps at every aggregator, netagg-allreduce workers paced at the
# plan's rate. Measures each worker's time and compares the slowest worker's rate with the
# prediction (docs/routing.md, "Execution on real processes"). Root only.
#
#   bash scripts/netns/grid-netns.sh BUILD_DIR [options]
#     --policy P        scheme1, scheme2, grid or all (default all)
#     --scale S         Mbit/s per Gbit/s of the plan (default 20: a 3 Gbit/s link runs at 60
#                       Mbit/s); every link, capacity and pace is scaled alike
#     --bytes N         tensor bytes per worker (int32; default: what the plan's rate moves in
#                       15 s at the scale)
#     --check-ratio R   exit 1 if some policy's measured/predicted rate is below R
#     --elements-per-packet E   int32 elements a packet (default 1024: 4 KiB, jumbo frames on the
#                       veths); fewer packets per second leave more of the machine to the rest
#     --out DIR         keep the report, jobs, logs and summary.json here (default: a temp dir,
#                       removed)
#     --name NAME       namespace prefix (default ngrid$$); everything is NAME-<node>
#
# Rates are of the tensor's bytes, as in the plan's model, which has no headers: each packet
# carries elements_per_packet * 4 bytes of tensor, the netagg header (22 bytes) on top in its UDP
# payload and UDP, IPv4 and Ethernet (42 bytes) on top of that on the link. So the pace and
# --max-gbps (which count UDP payload) are the scaled rate times (data + 22) / data, and tbf's rate
# (which counts the Ethernet frame) the scaled link times (data + 64) / data.
#
# Prints a table on stderr and a JSON summary on stdout. Exit: 0 every worker verified (and the
# ratio check held), 1 a run failed or the check did not hold, 2 usage or set-up error.
set -euo pipefail

die() { echo "grid-netns: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: bash scripts/netns/grid-netns.sh BUILD_DIR [--policy P] [--scale S] [--bytes N] [--check-ratio R]"
build=$(cd "$1" && pwd) || die "no build directory $1"
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
policy=all scale=20 bytes="" check_ratio="" out="" name="ngrid$$" epp=1024
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case $1 in
    --policy) policy=$2 ;;
    --scale) scale=$2 ;;
    --bytes) bytes=$2 ;;
    --check-ratio) check_ratio=$2 ;;
    --out) out=$2 ;;
    --elements-per-packet) epp=$2 ;;
    --name) name=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
case $policy in
  all) policies="scheme1 scheme2 grid" ;;
  scheme1 | scheme2 | grid) policies=$policy ;;
  *) die "--policy: '$policy' is not scheme1, scheme2, grid or all" ;;
esac
[[ $scale =~ ^[0-9]+([.][0-9]+)?$ ]] && python3 -c "import sys; sys.exit(not 0 < float('$scale') <= 1000)" ||
  die "--scale: '$scale' is not a number in (0, 1000]"
[ -z "$bytes" ] || [[ $bytes =~ ^[0-9]+$ ]] || die "--bytes: '$bytes' is not a number"
[ -z "$bytes" ] || (( bytes >= 4096 )) || die "--bytes: at least 4096"
[ -z "$check_ratio" ] || [[ $check_ratio =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--check-ratio: '$check_ratio' is not a number"
[[ $epp =~ ^[0-9]+$ ]] && (( epp >= 1 && epp <= 1024 )) || die "--elements-per-packet: 1..1024"
[[ $name =~ ^[A-Za-z0-9]{1,16}$ ]] || die "--name: 1 to 16 letters or digits"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
for tool in ip tc python3; do command -v $tool > /dev/null || die "$tool is not installed"; done
plan="$build/plan/netagg-plan"
switchd="$build/sim/switch/netagg-switchd"
worker="$build/host/tools/netagg-allreduce"
for b in "$plan" "$switchd" "$worker"; do [ -x "$b" ] || die "$b is not built"; done

tmp=$(mktemp -d)
pids=()
nodes=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  for n in "${nodes[@]}"; do ip netns del "$name-$n" 2> /dev/null || true; done
  if [ -n "$out" ]; then cp -r "$tmp"/. "$out"/ 2> /dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
[ -z "$out" ] || mkdir -p "$out" || die "cannot create $out"

# ---- the plan: the example with every node's address, planned ----
python3 - "$here/plan/topologies/grid-example.json" "$tmp/topology.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for i, n in enumerate(t["nodes"]):
    port = 31000 if n["kind"] == "worker" else 20033
    n["address"] = f"10.79.0.{i + 1}:{port}"
json.dump(t, open(sys.argv[2], "w"), indent=1)
PY
"$plan" "$tmp/topology.json" --elements-per-packet "$epp" --json "$tmp/plan.json" --jobs "$tmp/jobs" --quiet > "$tmp/plan.out" 2>&1 ||
  { cat "$tmp/plan.out" >&2; die "netagg-plan failed"; }

# ---- what to set up: namespaces, links, and per policy the routes, daemons and workers ----
# setup.sh: namespaces and links. POLICY.routes.sh: the policy's rules and routes. POLICY.env:
# the daemons and workers, one per line.
python3 - "$tmp" "$scale" "${bytes:-0}" "$name" "$policies" <<'PY'
import json, os, sys
tmp, scale, bytes_opt, prefix, policies = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
topo = json.load(open(f"{tmp}/topology.json"))
report = json.load(open(f"{tmp}/plan.json"))
nodes = {n["name"]: n for n in topo["nodes"]}
addr = {n["name"]: n["address"].split(":")[0] for n in topo["nodes"]}
ns = lambda n: f"{prefix}-{n}"
dev = lambda a, b: f"to{b}"  # in a's namespace, the veth towards b

setup = ["set -e"]
for n in nodes:
    setup += [f"ip netns add {ns(n)}",
              f"ip netns exec {ns(n)} sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 net.ipv6.conf.all.disable_ipv6=1",
              f"ip -n {ns(n)} link set lo up",
              f"ip -n {ns(n)} addr add {addr[n]}/32 dev lo"]
    if nodes[n]["kind"] == "switch":
        setup.append(f"ip netns exec {ns(n)} sysctl -qw net.ipv4.ip_forward=1")

epp = None
for p in policies:
    job = json.load(open(f"{tmp}/jobs/{p}.job.json"))
    epp = job["elements_per_packet"] if epp is None else epp
data = epp * 4
udp_factor = (data + 22) / data          # netagg header in the UDP payload
frame_factor = (data + 22 + 8 + 20 + 14) / data  # UDP, IPv4, Ethernet on the veth
links = {}
for l in topo["links"]:
    a, b = l["ends"]
    links[frozenset((a, b))] = l["gbps"]
    kbit = round(l["gbps"] * scale * 1000 * frame_factor)
    # Burst: 4 ms at the rate, at least 32 KB (the senders' pacing lets 0.5 ms through at once,
    # and several paced streams meet on a link); queue: 200 ms at the rate.
    burst = max(32768, int(kbit * 1000 / 8 * 0.004))
    setup.append(f"ip link add {dev(a, b)} netns {ns(a)} type veth peer name {dev(b, a)} netns {ns(b)}")
    for x, y in ((a, b), (b, a)):
        setup += [f"ip netns exec {ns(x)} sysctl -qw net.ipv4.conf.{dev(x, y)}.rp_filter=0",
                  f"ip -n {ns(x)} link set {dev(x, y)} mtu 9000 up",
                  f"tc -n {ns(x)} qdisc add dev {dev(x, y)} root tbf rate {kbit}kbit burst {burst} latency 200ms"]
open(f"{tmp}/setup.sh", "w").write("\n".join(setup) + "\n")

summary_in = {"scale_mbit_per_gbit": scale, "elements_per_packet": epp,
              "udp_payload_factor": udp_factor, "frame_factor": frame_factor, "policies": {}}
for p in policies:
    plan = report["policies"][p]
    job = json.load(open(f"{tmp}/jobs/{p}.job.json"))
    rate = plan["rate_gbps"]
    # Streams: (source node, destination node, route) for every worker and aggregator, per tree.
    streams = []
    aggregators = {}
    for k, tree in enumerate(job["trees"]):
        for a in tree["aggregators"]:
            aggregators[a["name"]] = a
    for w in plan["workers"]:
        for t in w["trees"]:
            tree = job["trees"][t["tree"]]
            to = [a["name"] for a in tree["aggregators"] if w["rank"] in a.get("workers", [])]
            assert len(to) == 1, (p, w["name"], t)
            route = t["route"]
            assert to[0] in route, (p, w["name"], route, to)
            streams.append((w["name"], to[0], route[: route.index(to[0]) + 1]))
    for t in plan["trees"]:
        for a in t["aggregators"]:
            if "parent" in a:
                streams.append((a["name"], a["parent"], a["route"]))
    paths = {}
    for s, d, route in streams:
        for hop in zip(route, route[1:]):
            if frozenset(hop) not in links:
                sys.exit(f"grid-netns: {p}: route {route} uses {hop}, which is no link")
        for key, r in (((s, d), route), ((d, s), route[::-1])):
            if paths.setdefault(key, r) != r:
                sys.exit(f"grid-netns: {p}: {key} on two routes {paths[key]} and {r}: the "
                         "addresses cannot tell them apart")
    routes = ["set -e"]
    for i, ((s, d), r) in enumerate(sorted(paths.items())):
        table = 1000 + i
        for here, nxt in zip(r, r[1:]):
            routes += [f"ip -n {ns(here)} rule add from {addr[s]} to {addr[d]} table {table} priority {100 + i}",
                       f"ip -n {ns(here)} route add {addr[d]}/32 via {addr[nxt]} dev {dev(here, nxt)} onlink table {table}"]
    open(f"{tmp}/{p}.routes.sh", "w").write("\n".join(routes) + "\n")
    # Daemons: every aggregator of the job, at its node's capacity.
    runs = []
    for a in sorted(aggregators):
        cap = nodes[a].get("aggregation_gbps", nodes[a].get("ingress_gbps"))
        limit = cap * scale / 1000 * udp_factor
        runs.append(f"daemon {a} {aggregators[a]['address']} {limit:.9g}")
    pace = rate * scale / 1000 * udp_factor
    count = bytes_opt // 4 if bytes_opt else int(rate * scale * 1e6 * 15 / 8 / 4)
    count = max(epp, count // epp * epp)
    for w in plan["workers"]:
        runs.append(f"worker {w['name']} {w['rank']} {pace:.9g} {count}")
    open(f"{tmp}/{p}.runs", "w").write("\n".join(runs) + "\n")
    summary_in["policies"][p] = {"predicted_gbps": rate, "predicted_mbit_scaled": rate * scale,
                                 "pace_gbps_udp_payload": pace, "count": count,
                                 "bytes": count * 4, "trees": len(job["trees"]),
                                 "weights": [t["weight"] for t in job["trees"]],
                                 "pinned_streams": len(paths)}
json.dump(summary_in, open(f"{tmp}/summary_in.json", "w"), indent=1)
PY

for n in $(python3 -c "import json; print(' '.join(n['name'] for n in json.load(open('$tmp/topology.json'))['nodes']))"); do
  nodes+=("$n")
done
bash "$tmp/setup.sh" > "$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log" >&2; die "set-up failed"; }

status=0
for p in $policies; do
  bash "$tmp/$p.routes.sh" > "$tmp/$p.routes.log" 2>&1 ||
    { cat "$tmp/$p.routes.log" >&2; die "$p: routes failed"; }
  job="$tmp/jobs/$p.job.json"
  dpids=() dnames=()
  while read -r kind node a b c; do
    [ "$kind" = daemon ] || continue
    ip netns exec "$name-$node" "$switchd" --listen "$a" --job "$job" --as "$node" --max-gbps "$b" \
      --counters-json "$tmp/$p.$node.counters.json" > "$tmp/$p.$node.out" 2>&1 &
    dpids+=($!) dnames+=("$node")
    pids+=($!)
  done < "$tmp/$p.runs"
  for node in "${dnames[@]}"; do
    for (( t = 0; t < 100; ++t )); do
      grep -q "listening on" "$tmp/$p.$node.out" 2> /dev/null && break
      sleep 0.05
    done
    grep -q "listening on" "$tmp/$p.$node.out" || { cat "$tmp/$p.$node.out" >&2; die "$p: daemon $node did not start"; }
  done
  epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  wpids=()
  while read -r kind node rank pace count; do
    [ "$kind" = worker ] || continue
    ip netns exec "$name-$node" "$worker" --rank "$rank" --job "$job" --epoch "$epoch" \
      --dtype int32 --count "$count" --iterations 1 --timeout 60 --pace-gbps "$pace" --json \
      > "$tmp/$p.$node.json" 2> "$tmp/$p.$node.err" &
    wpids+=($!)
  done < "$tmp/$p.runs"
  for wp in "${wpids[@]}"; do wait "$wp" || status=1; done
  for dp in "${dpids[@]}"; do kill -TERM "$dp" 2> /dev/null || true; done
  for dp in "${dpids[@]}"; do wait "$dp" || status=1; done
  pids=()
  # The policy's rules and tables go; the namespaces and links stay for the next policy.
  for n in "${nodes[@]}"; do
    ip -n "$name-$n" rule show | awk -F: '$1 >= 100 && $1 < 1000 {print $1}' | while read -r prio; do
      ip -n "$name-$n" rule del priority "$prio"
    done
    for table in $(ip -n "$name-$n" route show table all | grep -o 'table 1[0-9][0-9][0-9]' | awk '{print $2}' | sort -u); do
      ip -n "$name-$n" route flush table "$table"
    done
  done
done

TMP=$tmp STATUS=$status CHECK=$check_ratio python3 - <<'PY'
import json, os, sys
tmp = os.environ["TMP"]
s = json.load(open(f"{tmp}/summary_in.json"))
ok = os.environ["STATUS"] == "0"
check = float(os.environ["CHECK"]) if os.environ["CHECK"] else None
rows = []
for p, v in s["policies"].items():
    workers, seconds, retx = [], [], 0
    for line in open(f"{tmp}/{p}.runs"):
        f = line.split()
        if f[0] != "worker":
            continue
        try:
            lines = [l for l in open(f"{tmp}/{p}.{f[1]}.json").read().splitlines() if l.startswith("{")]
            w = json.loads(lines[-1]) if lines else {}
        except OSError:
            w = {}
        workers.append({"node": f[1], "rank": int(f[2]), "verification": w.get("verification"),
                        "seconds": w.get("seconds"), "retransmissions": w.get("retransmissions"),
                        "error": w.get("error")})
        if w.get("verification") != "ok":
            ok = False
        else:
            seconds.append(w["seconds"])
            retx += w.get("retransmissions", 0)
    aggs = {}
    for line in open(f"{tmp}/{p}.runs"):
        f = line.split()
        if f[0] == "daemon":
            try:
                c = json.load(open(f"{tmp}/{p}.{f[1]}.counters.json"))
            except (OSError, ValueError):
                c = {}
            aggs[f[1]] = {"max_gbps": float(f[3]), **{k: c.get(k) for k in (
                "packets_in", "completions", "sent_to_parent", "results_from_parent",
                "rate_limit_drops")}}
    verified = len(seconds) == len(workers) and len(workers) > 0
    slowest = max(seconds) if verified else None
    measured = v["bytes"] * 8 / slowest / 1e6 if verified else None  # Mbit/s
    ratio = measured / v["predicted_mbit_scaled"] if verified else None
    v.update({"verified": verified, "slowest_seconds": slowest, "measured_mbit": measured,
              "ratio": ratio, "retransmissions": retx, "workers": workers, "aggregators": aggs})
    if check is not None and (ratio is None or ratio < check):
        ok = False
    rows.append((p, v))
print(f"{'policy':<8} {'trees':>5} {'predicted Gbit/s':>16} {'scaled Mbit/s':>13} "
      f"{'measured Mbit/s':>15} {'ratio':>6} {'slowest s':>9} {'retx':>5} {'verified':>8}",
      file=sys.stderr)
for p, v in rows:
    fmt = lambda x, f: format(x, f) if x is not None else "-"
    print(f"{p:<8} {v['trees']:>5} {v['predicted_gbps']:>16.4f} {v['predicted_mbit_scaled']:>13.2f} "
          f"{fmt(v['measured_mbit'], '15.2f'):>15} {fmt(v['ratio'], '6.3f'):>6} "
          f"{fmt(v['slowest_seconds'], '9.2f'):>9} {v['retransmissions']:>5} {str(v['verified']):>8}",
          file=sys.stderr)
s["verification"] = "ok" if ok else "failed"
s["check_ratio"] = check
json.dump(s, open(f"{tmp}/summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
sys.exit(0 if ok else 1)
PY

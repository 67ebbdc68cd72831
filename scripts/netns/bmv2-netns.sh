#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The v1model program (p4/bmv2/netagg.p4) on BMv2's simple_switch, in network namespaces: the
# switch in one namespace, its ports veth pairs. Root only. The P4 tools are found in
# NETAGG_P4_PREFIX/bin (default /opt/netagg-p4), then on PATH (scripts/p4/p4-tools.sh).
#
#   bash scripts/netns/bmv2-netns.sh BUILD_DIR vectors [--vectors DIR|FILE] [--keep DIR]
#       Replays the switch conformance vectors (tests/vectors/switch) with netagg-replay over the
#       veths; each vector configures the switch with its own simple_switch_CLI lines after a
#       reset_state. Exit 0: every vector passed.
#   bash scripts/netns/bmv2-netns.sh BUILD_DIR allreduce [options]
#       One worker per namespace, each on its switch port; the tables and multicast group from
#       `netagg-ctl p4 bmv2` for the job; netagg-allreduce on every worker, which verifies its sum.
#     --workers N              (default 4)
#     --dtype int32|fp32       (default int32; fp32 travels as block floating point)
#     --count N                elements per worker (default 16384)
#     --elements-per-packet E  (default 64: BMv2 runs every lane's register actions in software,
#                              so fewer lanes a packet means more packets a second; at most 256)
#     --slots S                the job's slot pool (default 32)
#     --loss P                 percent of netagg packets nftables drops in every worker's
#                              namespace, each way (default 0)
#     --iterations I           all-reduces per worker, best and median reported (default 1)
#     --timeout S              netagg-allreduce's seconds without progress (default 30)
#   Both take --json FILE (DIR for vectors: kept output) to keep the summary, and print it on
#   stdout. The compiled program: BUILD_DIR/p4/bmv2/netagg.json, compiled with p4c-bm2-ss first
#   when missing or older than the sources.
#
# Exit: 0 success, 1 a vector or worker failed, 2 usage or setup error, 77 the tool chain or root
# is missing (the reason is printed).
set -uo pipefail

usage() { sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 2 ]] || usage
build=$1 mode=$2; shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $build == /* ]] || build="$PWD/$build"
case $mode in vectors|allreduce) ;; *) usage ;; esac

workers=4 dtype=int32 count=16384 epp=64 slots=32 loss=0 iterations=1 timeout=30
vectors=$root/tests/vectors/switch json_out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --workers) workers=$2 ;;
    --dtype) dtype=$2 ;;
    --count) count=$2 ;;
    --elements-per-packet) epp=$2 ;;
    --slots) slots=$2 ;;
    --loss) loss=$2 ;;
    --iterations) iterations=$2 ;;
    --timeout) timeout=$2 ;;
    --vectors) vectors=$2 ;;
    --json) json_out=$2 ;;
    *) echo "bmv2-netns: unknown option $1" >&2; usage ;;
  esac
  shift 2 || usage
done
for v in workers count epp slots loss iterations; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "bmv2-netns: --${v//epp/elements-per-packet} takes a whole number" >&2; exit 2; }
done
(( workers >= 1 && workers <= 32 )) || { echo "bmv2-netns: --workers is 1..32" >&2; exit 2; }
(( epp >= 1 && epp <= 256 )) || { echo "bmv2-netns: --elements-per-packet is 1..256" >&2; exit 2; }
case $dtype in int32|fp32) ;; *) echo "bmv2-netns: --dtype is int32 or fp32" >&2; exit 2 ;; esac

[[ $(id -u) == 0 ]] || { echo "bmv2-netns: skipped: needs root (network namespaces)"; exit 77; }
source "$root/scripts/p4/p4-tools.sh"
missing=$(p4_missing simple_switch simple_switch_CLI p4c-bm2-ss)
[[ -z $missing ]] || { echo "bmv2-netns: skipped: $missing $p4_where"; exit 77; }
simple_switch=$(p4_tool simple_switch) simple_switch_cli=$(p4_tool simple_switch_CLI)
for t in sim/switch/netagg-replay driver/tools/netagg-ctl host/tools/netagg-allreduce; do
  [[ -x $build/$t ]] || { echo "bmv2-netns: $build/$t is not built" >&2; exit 2; }
done

# ---- the compiled program ----
p4json=$build/p4/bmv2/netagg.json
if [[ ! -f $p4json || -n $(find "$root/p4/bmv2" "$root/p4/common" -newer "$p4json" -name '*.p4') ]]; then
  bash "$root/scripts/p4/p4-build.sh" "$build" --only bmv2 >&2 || { echo "bmv2-netns: the program did not compile" >&2; exit 2; }
fi

name=nbmv2$$
sw=$name-sw
tmp=$(mktemp -d)
ss_pid=""
cleanup() {
  [[ -n $ss_pid ]] && kill "$ss_pid" 2>/dev/null && wait "$ss_pid" 2>/dev/null
  for ns in $(ip netns list | awk '{print $1}' | grep "^$name-"); do ip netns del "$ns"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

quiet_ns() {  # no IPv6: the kernel's own chatter stays off the switch's ports
  for scope in all default; do ip netns exec "$1" sysctl -qw net.ipv6.conf.$scope.disable_ipv6=1; done
  ip -n "$1" link set lo up
}
ip netns add "$sw" && quiet_ns "$sw" || { echo "bmv2-netns: cannot create namespaces" >&2; exit 2; }

# start_switch PORT...: simple_switch in the switch's namespace on veths s<PORT>.
start_switch() {
  local args=()
  for p in "$@"; do args+=(-i "$p@s$p"); done
  ip netns exec "$sw" "$simple_switch" --thrift-port 9090 \
    --notifications-addr "ipc://$tmp/notifications.ipc" "${args[@]}" "$p4json" \
    > "$tmp/simple_switch.log" 2>&1 &
  ss_pid=$!
  for _ in $(seq 100); do
    if ip netns exec "$sw" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090' 2>/dev/null; then return 0; fi
    kill -0 "$ss_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bmv2-netns: simple_switch did not start:" >&2; cat "$tmp/simple_switch.log" >&2; exit 2
}
cli() { ip netns exec "$sw" "$simple_switch_cli" --thrift-port 9090; }

if [[ $mode == vectors ]]; then
  # The hosts' side of every port the vectors use, in one namespace.
  ports=$(cat "$vectors" 2>/dev/null | grep -ohE '^(in|out): [0-9]+' | awk '{print $2}' | sort -un)
  [[ -d $vectors ]] && ports=$(cat "$vectors"/*.vec | grep -ohE '^(in|out): [0-9]+' | awk '{print $2}' | sort -un)
  [[ -n $ports ]] || { echo "bmv2-netns: no vectors in $vectors" >&2; exit 2; }
  ip netns add "$name-h" && quiet_ns "$name-h"
  ifaces=()
  for p in $ports; do
    ip link add "s$p" netns "$sw" type veth peer name "h$p" netns "$name-h"
    ip -n "$sw" link set "s$p" up && ip -n "$name-h" link set "h$p" up
    ifaces+=(--iface "$p=h$p")
  done
  start_switch $ports
  cat > "$tmp/configure.sh" <<EOF
#!/bin/sh
ip netns exec $sw $simple_switch_cli --thrift-port 9090 < "\$NETAGG_BMV2_FILE" > $tmp/cli.log 2>&1 || exit 1
# The CLI says "Error" and goes on: a line the switch refused fails the vector here.
! grep -q -i "error\|invalid" $tmp/cli.log || { cat $tmp/cli.log >&2; exit 1; }
EOF
  start=$(date +%s.%N)
  ip netns exec "$name-h" "$build/sim/switch/netagg-replay" --vectors "$vectors" "${ifaces[@]}" \
    --configure "sh $tmp/configure.sh" --timeout-ms 3000 --quiet-ms 150 --verbose
  status=$?
  end=$(date +%s.%N)
  echo "bmv2-netns: vectors replayed in $(echo "$end - $start" | bc) s" >&2
  [[ $status == 0 ]] || { echo "bmv2-netns: simple_switch's log:" >&2; tail -20 "$tmp/simple_switch.log" >&2; }
  exit $(( status == 0 ? 0 : 1 ))
fi

# ---- all-reduce: one namespace per worker ----
ports=()
workers_json=""
for (( r = 0; r < workers; ++r )); do
  p=$((r + 1)) ns=$name-w$r mac=$(printf '02:00:00:00:01:%02x' $((r + 1)))
  ip netns add "$ns" && quiet_ns "$ns"
  ip link add "s$p" netns "$sw" type veth peer name eth0 netns "$ns"
  ip -n "$sw" link set "s$p" up
  ip -n "$ns" link set eth0 address "$mac"
  ip -n "$ns" addr add "10.0.1.$((r + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  # Full UDP checksums on the wire: the switch rewrites headers and does not fix offloaded ones.
  ip netns exec "$ns" ethtool -K eth0 tx off > /dev/null 2>&1
  if (( loss > 0 )); then
    # Results dropped on input; contributions on the device's egress, after the socket has sent
    # them (an output-chain drop would fail the sender's sendmmsg with EPERM: no network does that).
    ip netns exec "$ns" nft -f - <<EOF || { echo "bmv2-netns: nftables refused the loss rules" >&2; exit 2; }
table inet netagg_loss_in {
  chain in { type filter hook input priority 0; udp sport 20033 numgen random mod 100 < $loss drop; }
}
table netdev netagg_loss_out {
  chain out { type filter hook egress device eth0 priority 0; udp dport 20033 numgen random mod 100 < $loss drop; }
}
EOF
  fi
  ports+=("$p")
  workers_json+="${workers_json:+, }{\"rank\": $r, \"address\": \"10.0.1.$((r + 1)):31000\", \"mac\": \"$mac\", \"switch_port\": $p}"
done
cat > "$tmp/job.json" <<EOF
{"job_id": 1, "slots": {"base": 0, "count": $slots}, "elements_per_packet": $epp,
 "aggregator": "10.0.1.254:20033", "workers": [$workers_json]}
EOF
start_switch "${ports[@]}"
"$build/driver/tools/netagg-ctl" p4 bmv2 --job "$tmp/job.json" --switch-mac 02:00:00:00:00:fe \
  > "$tmp/lines" || { echo "bmv2-netns: netagg-ctl p4 bmv2 failed" >&2; exit 2; }
cli < "$tmp/lines" > "$tmp/cli.log" 2>&1
if grep -q -i "error\|invalid" "$tmp/cli.log"; then
  echo "bmv2-netns: simple_switch_CLI refused a line:" >&2; cat "$tmp/cli.log" >&2; exit 2
fi
ip netns exec "$name-w0" ping -c 1 -W 2 10.0.1.254 > /dev/null \
  || { echo "bmv2-netns: the switch does not answer ping" >&2; exit 1; }

epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
start=$(date +%s.%N)
pids=()
for (( r = 0; r < workers; ++r )); do
  ip netns exec "$name-w$r" env NETAGG_JOB_FILE="$tmp/job.json" NETAGG_RANK=$r NETAGG_EPOCH=$epoch \
    "$build/host/tools/netagg-allreduce" --dtype "$dtype" --count "$count" \
    --iterations "$iterations" --timeout "$timeout" --json > "$tmp/w$r.json" 2> "$tmp/w$r.err" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
end=$(date +%s.%N)
# Counters: drops by sim::DropReason index, completions, resent results, epoch takeovers.
drop_reasons=$(awk '$2 == "NETAGG_DROP_REASONS" {print $3}' "$root/p4/common/constants.p4")
{
  echo "counter_read NetaggIngress.packets_in 0"
  echo "counter_read NetaggIngress.completions 0"
  echo "counter_read NetaggIngress.results_resent 0"
  echo "counter_read NetaggIngress.epoch_takeovers 0"
  for (( i = 0; i < drop_reasons; ++i )); do echo "counter_read NetaggIngress.drops $i"; done
} | cli > "$tmp/counters.log" 2>&1

summary=$(TMP=$tmp WORKERS=$workers STATUS=$status WALL=$(echo "$end - $start" | bc) LOSS=$loss \
  DTYPE=$dtype COUNT=$count EPP=$epp SLOTS=$slots /usr/bin/python3 - <<'PY'
import json, os, re
tmp, n = os.environ["TMP"], int(os.environ["WORKERS"])
ok = os.environ["STATUS"] == "0"
ranks = []
for r in range(n):
    lines = [l for l in open(f"{tmp}/w{r}.json").read().splitlines() if l.startswith("{")]
    w = json.loads(lines[-1]) if lines else {}
    ok = ok and w.get("verification") == "ok"
    ranks.append({"rank": r, **{k: w[k] for k in ("verification", "seconds", "seconds_median",
                                                  "packets_sent", "retransmissions", "rto_ms",
                                                  "srtt_ms", "error") if k in w}})
counters = {}
# simple_switch_CLI prints "NetaggIngress.NAME[INDEX]= (B bytes, P packets)".
for m in re.finditer(r"NetaggIngress\.(\w+)\[(\d+)\]=\s*\(\d+ bytes, (\d+) packets\)",
                     open(f"{tmp}/counters.log").read()):
    name, index, packets = m.group(1), int(m.group(2)), int(m.group(3))
    if name == "drops":
        if packets: counters.setdefault("drops_by_reason_index", {})[str(index)] = packets
    else:
        counters[name] = packets
print(json.dumps({"verification": "ok" if ok else "failed", "workers": n,
                  "dtype": os.environ["DTYPE"], "count": int(os.environ["COUNT"]),
                  "elements_per_packet": int(os.environ["EPP"]), "slots": int(os.environ["SLOTS"]),
                  "loss_percent": int(os.environ["LOSS"]),
                  "wall_seconds": round(float(os.environ["WALL"]), 3),
                  "switch_counters": counters, "ranks": ranks}, indent=1))
PY
)
echo "$summary"
[[ -n $json_out ]] && echo "$summary" > "$json_out"
if [[ $status != 0 ]]; then
  for (( r = 0; r < workers; ++r )); do sed "s/^/w$r: /" "$tmp/w$r.err" >&2; done
  tail -20 "$tmp/simple_switch.log" >&2
  exit 1
fi
exit 0

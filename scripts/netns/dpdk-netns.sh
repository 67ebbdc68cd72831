#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The veth set-up of the DPDK transport's test and benchmark and of the shaped-link benchmarks
# (tests/host/dpdk_netns_test.cpp, scripts/bench/bench.sh, scripts/bench/bench-shaped.sh,
# scripts/bench/bench-competing.sh).
# Root only (network namespaces). Everything lives in namespaces named NAME-*, so that runs with
# different NAMEs (ctest -j, a benchmark beside a test) never meet:
#
#   NAME-w0 .. NAME-w(N-1)   one per worker: interface dp0 (a veth), no IP address for DPDK
#                            (net_af_packet0,iface=dp0 owns it), 10.77.0.(1+i)/24 for kernel UDP
#   NAME-agg                 the aggregator daemon: eth0 10.77.0.254/24, kernel UDP
#   NAME-br                  bridge br0 joining the other ends of all veths: one L2 segment,
#                            so workers ARP for the aggregator directly (no router)
#
# Usage:
#   dpdk-netns.sh up NAME N          create the namespaces, veths and bridge (N workers, 1..32)
#   dpdk-netns.sh down NAME          delete every namespace NAME-* (and with them the veths)
#   dpdk-netns.sh addresses NAME N on|off
#                                    give the workers' dp0 their IP (kernel UDP) or take it away
#                                    (DPDK: the kernel must not answer for the worker's address)
#   dpdk-netns.sh loss NAME PERCENT  drop PERCENT % of netagg UDP in both directions at the
#                                    aggregator (nftables in NAME-agg; 0 removes the rule)
#   dpdk-netns.sh shape NAME N MBIT  tbf at MBIT Mbit/s on both ends of every worker's veth (the
#                                    worker's egress dp0 and the bridge's egress pw<i>); burst:
#                                    10 ms at the rate, at least 2 full frames; queue: 50 ms
#   dpdk-netns.sh xdp-off NAME N     detach any XDP program from the workers' dp0 and the
#                                    aggregator's eth0 (a net_af_xdp process detaches its own at
#                                    exit; one that was killed leaves it, and the kernel's UDP on
#                                    that veth then runs through it)
#   dpdk-netns.sh job N ELEMENTS WINDOW   print the job description (job 1) for N workers
set -euo pipefail

readonly subnet=10.77.0
readonly agg_ip=$subnet.254
readonly agg_port=20033
readonly worker_port=20100

die() { echo "dpdk-netns: $*" >&2; exit 2; }
need_root() { [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"; }
worker_ip() { echo "$subnet.$(( $1 + 1 ))"; }

up() {
  local name=$1 n=$2
  need_root
  [[ $n =~ ^[0-9]+$ ]] && (( n >= 1 && n <= 32 )) || die "workers: '$n' is not in 1..32"
  ip netns add "$name-br"
  ip -n "$name-br" link add br0 type bridge
  ip -n "$name-br" link set br0 up
  # Bridged frames skip iptables (where br_netfilter is loaded it would run them through it,
  # a cost every transport would pay in the sender's context).
  ip netns exec "$name-br" sysctl -qw net.bridge.bridge-nf-call-iptables=0 \
    net.bridge.bridge-nf-call-ip6tables=0 net.bridge.bridge-nf-call-arptables=0 2> /dev/null || true
  ip netns add "$name-agg"
  ip link add eth0 netns "$name-agg" type veth peer name pagg netns "$name-br"
  ip -n "$name-br" link set pagg master br0 up
  ip -n "$name-agg" link set lo up
  ip -n "$name-agg" addr add "$agg_ip/24" dev eth0
  ip -n "$name-agg" link set eth0 up
  # Kernel UDP over veth leaves the checksum to an offload that never happens (CHECKSUM_PARTIAL);
  # a packet socket (net_af_packet) then sees a half-done checksum. Computing it in software
  # makes the frames the DPDK workers receive carry real checksums, which they verify.
  ip netns exec "$name-agg" ethtool -K eth0 tx off > /dev/null
  local i
  for (( i = 0; i < n; ++i )); do
    ip netns add "$name-w$i"
    ip link add dp0 netns "$name-w$i" type veth peer name "pw$i" netns "$name-br"
    ip -n "$name-br" link set "pw$i" master br0 up
    ip netns exec "$name-w$i" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip -n "$name-w$i" link set lo up
    ip -n "$name-w$i" link set dp0 up
  done
}

down() {
  local name=$1 ns
  need_root
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name}-(br|agg|w[0-9]+)$" || true); do
    ip netns del "$ns" || true
  done
}

addresses() {
  local name=$1 n=$2 mode=$3 i
  need_root
  for (( i = 0; i < n; ++i )); do
    case $mode in
      on) ip -n "$name-w$i" addr add "$(worker_ip "$i")/24" dev dp0 ;;
      off) ip -n "$name-w$i" addr flush dev dp0 ;;
      *) die "addresses: '$mode' is not on or off" ;;
    esac
  done
}

loss() {
  local name=$1 percent=$2
  need_root
  [[ $percent =~ ^[0-9]+$ ]] && (( percent <= 100 )) || die "loss: '$percent' is not in 0..100"
  ip netns exec "$name-agg" nft delete table inet netagg_loss 2> /dev/null || true
  (( percent > 0 )) || return 0
  ip netns exec "$name-agg" nft -f - <<EOF
table inet netagg_loss {
  chain in {
    type filter hook input priority 0;
    udp dport $agg_port numgen random mod 100 < $percent counter drop
  }
  chain out {
    type filter hook output priority 0;
    udp sport $agg_port numgen random mod 100 < $percent counter drop
  }
}
EOF
}

shape() {
  need_root
  local name=$1 n=$2 mbit=$3 i burst
  burst=$(( mbit * 1000000 / 8 / 100 ))
  (( burst >= 3100 )) || burst=3100
  for (( i = 0; i < n; ++i )); do
    ip netns exec "$name-w$i" tc qdisc replace dev dp0 root tbf rate "${mbit}mbit" \
      burst "$burst" latency 50ms
    ip netns exec "$name-br" tc qdisc replace dev "pw$i" root tbf rate "${mbit}mbit" \
      burst "$burst" latency 50ms
  done
}

xdp_off() {
  local name=$1 n=$2 i
  need_root
  ip -n "$name-agg" link set dev eth0 xdp off
  for (( i = 0; i < n; ++i )); do ip -n "$name-w$i" link set dev dp0 xdp off; done
}

job() {
  local n=$1 elements=$2 window=$3 i sep=""
  printf '{"job_id": 1, "slots": {"base": 0, "count": %d}, "elements_per_packet": %d,\n' \
    "$window" "$elements"
  printf ' "aggregator": "%s:%d", "workers": [' "$agg_ip" "$agg_port"
  for (( i = 0; i < n; ++i )); do
    printf '%s\n  {"rank": %d, "address": "%s:%d"}' "$sep" "$i" "$(worker_ip "$i")" "$worker_port"
    sep=","
  done
  printf ']}\n'
}

[ $# -ge 1 ] || die "usage: dpdk-netns.sh up|down|addresses|loss|shape|xdp-off|job ..."
cmd=$1; shift
case $cmd in
  up) [ $# -eq 2 ] || die "usage: up NAME N"; up "$@" ;;
  down) [ $# -eq 1 ] || die "usage: down NAME"; down "$@" ;;
  addresses) [ $# -eq 3 ] || die "usage: addresses NAME N on|off"; addresses "$@" ;;
  loss) [ $# -eq 2 ] || die "usage: loss NAME PERCENT"; loss "$@" ;;
  shape) [ $# -eq 3 ] || die "usage: shape NAME N MBIT"; shape "$@" ;;
  xdp-off) [ $# -eq 2 ] || die "usage: xdp-off NAME N"; xdp_off "$@" ;;
  job) [ $# -eq 3 ] || die "usage: job N ELEMENTS WINDOW"; job "$@" ;;
  *) die "unknown command '$cmd'" ;;
esac

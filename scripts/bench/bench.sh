#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg's benchmarks, run by `make bench` as `bash scripts/bench/bench.sh BUILD_DIR`.
#
# In one run on one machine: netagg's all-reduce through the switch model against Gloo's ring
# all-reduce, for every (ranks, size), the two interleaved so drift of the machine hits both; then
# the block floating point codec against memcpy. Everything is merged into
# BUILD_DIR/bench/bench.json and summarised on stdout. What the numbers mean: docs/performance.md.
#
# Environment:
#   BENCH_SIZES       tensor sizes in bytes, space or comma separated; K/M/G suffixes (binary)
#                     allowed. Default: 4K 64K 1M 16M 64M.
#   BENCH_QUICK=1     sizes 4K 64K 1M and fewer iterations (a smoke run, a few seconds).
#   BENCH_RANKS       rank counts. Default: 2 4.
#   BENCH_ITERATIONS  timed iterations per measurement (default depends on the size).
#   BENCH_WARMUP      untimed iterations before them (default depends on the size).
#   BENCH_TIMEOUT     seconds one measurement may take before it is killed. Default: 900.
#   BENCH_CODEC=0     skip the codec benchmark.
#   BENCH_FPGA=0      skip the FPGA aggregator's RTL benchmark.
#   BENCH_DPDK=0      skip DPDK against kernel UDP on veths (default: on when the build has the
#                     DPDK transport; needs root for the network namespaces, else reported as
#                     skipped): kernel UDP, DPDK on net_af_packet and DPDK on net_af_xdp (where
#                     the kernel has XDP sockets). BENCH_DPDK_RANKS (default 2 4) and
#                     BENCH_DPDK_SIZES (default 64K 1M 16M; quick: 64K 1M) set its shape.
set -euo pipefail

usage() { echo "usage: bash scripts/bench/bench.sh BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "bench: no build directory '$1'" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench_py() { /usr/bin/python3 "$repo/scripts/bench/netagg_bench" "$@"; }  # the Python steps
out="$build/bench"
raw="$out/raw"

gloo_bin="$build/bench/gloo_allreduce"
netagg_bin="$build/host/tools/netagg-allreduce"
local_bin="$build/sim/launcher/netagg-local"
codec_bin="$build/bench/codec_bench"

# Size in bytes from "4096", "4K", "64KiB", "16M", ...
to_bytes() {
  local s=${1^^} n unit
  s=${s%IB}; s=${s%B}
  n=${s%[KMG]}
  unit=${s:${#n}}
  [[ $n =~ ^[0-9]+$ ]] || { echo "bench: bad size '$1' in BENCH_SIZES" >&2; exit 2; }
  case $unit in
    K) n=$((n << 10)) ;;
    M) n=$((n << 20)) ;;
    G) n=$((n << 30)) ;;
  esac
  if (( n == 0 || n % 4 != 0 )); then
    echo "bench: size '$1' is not a positive multiple of 4 bytes (fp32)" >&2; exit 2
  fi
  echo "$n"
}

quick=${BENCH_QUICK:-0}
if [ -n "${BENCH_SIZES:-}" ]; then
  size_list=${BENCH_SIZES//,/ }
elif [ "$quick" = 1 ]; then
  size_list="4K 64K 1M"
else
  size_list="4K 64K 1M 16M 64M"
fi
sizes=()
for s in $size_list; do sizes+=("$(to_bytes "$s")"); done
ranks_list=${BENCH_RANKS:-2 4}
ranks_list=${ranks_list//,/ }
timeout_s=${BENCH_TIMEOUT:-900}
rm -rf "$raw"
mkdir -p "$raw"

# Small tensors are over in microseconds and noisy, so they get many iterations; a 64 MiB one
# takes long enough on its own. The warm-up gives the scheduler time to spread freshly started
# ranks over the cores: while two Gloo ranks share a core, each all-reduce waits for a scheduler
# tick (docs/performance.md).
iterations_for() {
  if [ -n "${BENCH_ITERATIONS:-}" ]; then echo "$BENCH_ITERATIONS"; return; fi
  local bytes=$1
  if [ "$quick" = 1 ]; then echo 20; return; fi
  if (( bytes <= 64 << 10 )); then echo 200
  elif (( bytes <= 1 << 20 )); then echo 50
  elif (( bytes <= 16 << 20 )); then echo 10
  else echo 5
  fi
}
warmup_for() {
  if [ -n "${BENCH_WARMUP:-}" ]; then echo "$BENCH_WARMUP"; return; fi
  local bytes=$1
  if (( bytes <= 64 << 10 )); then echo 100
  elif (( bytes <= 1 << 20 )); then echo 20
  else echo 2
  fi
}

# One measurement: stdout to $raw/NAME.json, stderr to $raw/NAME.log, the command line and exit
# status to $raw/NAME.cmd, so the merge step can say exactly what failed and how it was run.
run() {
  local name=$1; shift
  printf '%s\n' "$*" > "$raw/$name.cmd"
  local status=0
  timeout --kill-after=10 "$timeout_s" "$@" > "$raw/$name.json" 2> "$raw/$name.log" || status=$?
  echo "$status" >> "$raw/$name.cmd"
  if [ "$status" -ne 0 ]; then
    echo "bench: $name failed (exit $status; 124: timed out after ${timeout_s}s)," \
      "see $raw/$name.log" >&2
  fi
}

# A part that is not built is reported (and makes the run fail at the end), never silently left out.
missing=()
if [ ! -x "$gloo_bin" ]; then
  echo "bench: $gloo_bin not built (libgloo-dev missing or -DNETAGG_BENCH_GLOO=OFF):" \
    "no Gloo peer" >&2
  missing+=(gloo_allreduce)
fi
for bin in "$netagg_bin" "$local_bin"; do
  if [ ! -x "$bin" ]; then
    echo "bench: $bin not built" >&2
    missing+=("$(basename "$bin")")
  fi
done

# Other processes on the same cores show up as multi-millisecond stalls (the scheduler's time
# slice), so the load at the start and the end goes into the JSON, with a warning if it is high.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${load_before%% *}" 'BEGIN { exit !(l > 0.5) }'; then
  echo "bench: WARNING: load average $load_before before the run; other work on these cores" \
    "distorts the figures (small sizes most)" >&2
fi
echo "bench: ranks {$ranks_list}, sizes {${sizes[*]}} bytes; raw output in $raw" >&2
for ranks in $ranks_list; do
  for bytes in "${sizes[@]}"; do
    iterations=$(iterations_for "$bytes")
    warmup=$(warmup_for "$bytes")
    echo "bench: $ranks ranks, $bytes bytes: gloo, netagg ($iterations iterations)" >&2
    if [ -x "$gloo_bin" ]; then
      run "gloo-r$ranks-b$bytes" "$gloo_bin" --ranks "$ranks" --bytes "$bytes" \
        --iterations "$iterations" --warmup "$warmup"
    fi
    # netagg-local has no warm-up option: it runs warmup + iterations and the merge below
    # drops the first `warmup` samples of its seconds_all.
    if [ -x "$netagg_bin" ] && [ -x "$local_bin" ]; then
      run "netagg-r$ranks-b$bytes" "$local_bin" --workers "$ranks" --target switch-sim \
        --dtype fp32 --count $((bytes / 4)) --iterations $((iterations + warmup)) --json
      echo "$warmup" > "$raw/netagg-r$ranks-b$bytes.warmup"
    fi
  done
done

if [ "${BENCH_CODEC:-1}" != 0 ]; then
  if [ -x "$codec_bin" ]; then
    echo "bench: codec vs memcpy" >&2
    codec_args=(--benchmark_format=json)
    if [ "$quick" = 1 ]; then codec_args+=(--benchmark_min_time=0.05); fi
    run codec "$codec_bin" "${codec_args[@]}"
  else
    echo "bench: $codec_bin not built (Google Benchmark missing?): no codec figures" >&2
    missing+=(codec_bench)
  fi
fi

# The FPGA aggregator's RTL in Verilator: cycles, not seconds.
fpga_bin="$build/bench/fpga_bench"
if [ "${BENCH_FPGA:-1}" != 0 ]; then
  if [ -x "$fpga_bin" ]; then
    echo "bench: FPGA aggregator RTL, back-to-back packets on every port" >&2
    fpga_packets=512
    if [ "$quick" = 1 ]; then fpga_packets=64; fi
    # fp32 also measures the simulator's speed against the traced Verilator build (--baseline).
    run fpga_rtl_fp32 "$fpga_bin" --model rtl --dtype fp32 --packets "$fpga_packets" --baseline
    run fpga_rtl_int32 "$fpga_bin" --model rtl --dtype int32 --packets "$fpga_packets"
    run fpga_rtl_fp32_exact "$fpga_bin" --model rtl --dtype fp32_exact --packets "$fpga_packets"
  else
    echo "bench: $fpga_bin not built (Verilator missing or -DNETAGG_VERILATOR=OFF): no FPGA figures" >&2
    missing+=(fpga_bench)
  fi
fi

# Kernel UDP against DPDK on net_af_packet and DPDK on net_af_xdp, all on the same veths: workers
# in network namespaces, netagg-switchd on kernel UDP in another (and, with workers on
# net_af_xdp, once more on its own XDP socket: --dpdk), a bridge between them
# (scripts/netns/dpdk-netns.sh). The three transports alternate per (ranks, size) in one run; each
# measurement gets a fresh switch, whose CPU seconds are kept (NAME.switchd.cpu).
dpdk_enabled=0
if grep -q '^NETAGG_DPDK:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then dpdk_enabled=1; fi
dpdk_enabled=${BENCH_DPDK:-$dpdk_enabled}
dpdk_skipped=""
dpdk_ranks_list=""
switchd_bin="$build/sim/switch/netagg-switchd"
if [ "$dpdk_enabled" != 0 ]; then
  if ! grep -q '^NETAGG_DPDK:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "bench: BENCH_DPDK=1 but $build has no DPDK transport (libdpdk-dev, -DNETAGG_DPDK=ON)" >&2
    missing+=(dpdk_transport)
  elif [ "$(id -u)" != 0 ]; then
    dpdk_skipped="needs root (network namespaces, af_packet)"
    echo "bench: DPDK against kernel UDP skipped: $dpdk_skipped" >&2
  elif [ ! -x "$switchd_bin" ] || [ ! -x "$netagg_bin" ]; then
    echo "bench: DPDK comparison needs netagg-allreduce and netagg-switchd built" >&2
    missing+=(netagg-switchd)
  else
    dpdk_ns="nab$$"
    dpdk_ranks_list=${BENCH_DPDK_RANKS:-2 4}
    dpdk_ranks_list=${dpdk_ranks_list//,/ }
    dpdk_max_ranks=0
    for r in $dpdk_ranks_list; do (( r > dpdk_max_ranks )) && dpdk_max_ranks=$r; done
    if [ -n "${BENCH_DPDK_SIZES:-}" ]; then dpdk_size_list=${BENCH_DPDK_SIZES//,/ }
    elif [ "$quick" = 1 ]; then dpdk_size_list="64K 1M"
    else dpdk_size_list="64K 1M 16M"
    fi
    dpdk_sizes=()
    for s in $dpdk_size_list; do dpdk_sizes+=("$(to_bytes "$s")"); done
    # Without an XDP socket in this kernel or DPDK's net_af_xdp, the af_xdp column stays empty.
    dpdk_drivers="dpdk:af_packet"
    if grep -qw xsk_bind /proc/kallsyms 2>/dev/null &&
       ldconfig -p 2> /dev/null | grep librte_net_af_xdp > /dev/null; then  # not -q: pipefail
      dpdk_drivers+=" xdp:af_xdp xdpsw:af_xdp"
    else
      echo "bench: DPDK on net_af_xdp skipped: no XDP sockets in this kernel or no librte_net_af_xdp" >&2
    fi
    trap 'bash "$repo/scripts/netns/dpdk-netns.sh" down "$dpdk_ns"' EXIT
    bash "$repo/scripts/netns/dpdk-netns.sh" up "$dpdk_ns" "$dpdk_max_ranks"
    # One measurement: a fresh switch, all workers at once; their JSON lines merged into one array.
    run_veth() {
      local transport=$1 driver=$2 ranks=$3 bytes=$4 iterations=$5 name=$6 r status=0 sw
      local worker_transport=dpdk
      if [ "$transport" = udp ]; then worker_transport=udp; fi
      local job="$raw/dpdk-job-r$ranks.json"
      local vdev="net_${driver}0,iface=dp0" switch_env=() switch_args=()
      if [ "$transport" = xdpsw ]; then
        # The switch on its own XDP socket; the kernel gives up its address meanwhile.
        ip -n "$dpdk_ns-agg" addr flush dev eth0
        switch_env=(NETAGG_DPDK_VDEVS=net_af_xdp0,iface=eth0 NETAGG_DPDK_NO_HUGE=1
                    NETAGG_DPDK_NO_PCI=1)
        switch_args=(--dpdk)
      fi
      ip netns exec "$dpdk_ns-agg" env "${switch_env[@]}" "$switchd_bin" "${switch_args[@]}" \
        --listen 10.77.0.254:20033 --job "$job" --slots 64 > "$raw/$name.switch.log" 2>&1 &
      sw=$!
      for _ in $(seq 50); do grep -q "listening on" "$raw/$name.switch.log" && break; sleep 0.1; done
      local pids=() epoch
      epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')  # one per run, the same on every worker
      for (( r = 0; r < ranks; ++r )); do
        ip netns exec "$dpdk_ns-w$r" env NETAGG_DPDK_VDEVS="$vdev" \
          NETAGG_DPDK_NO_HUGE=1 NETAGG_DPDK_NO_PCI=1 timeout --kill-after=10 "$timeout_s" \
          "$netagg_bin" --rank "$r" --job "$job" --transport "$worker_transport" --dtype fp32 \
          --count $((bytes / 4)) --iterations "$iterations" --timeout 10 --epoch "$epoch" --json \
          > "$raw/$name.w$r.json" 2> "$raw/$name.w$r.log" &
        pids+=($!)
      done
      for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
      # The switch's CPU seconds (user + system) before it stops.
      awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$sw/stat" \
        > "$raw/$name.switchd.cpu" 2> /dev/null || true
      kill "$sw" 2> /dev/null; wait "$sw" 2> /dev/null || true
      if [ "$transport" = xdpsw ]; then ip -n "$dpdk_ns-agg" addr add 10.77.0.254/24 dev eth0; fi
      # No XDP program may stay on the veths for the next measurement (one killed by the timeout
      # would leave its own): kernel UDP through an XDP program is slower.
      bash "$repo/scripts/netns/dpdk-netns.sh" xdp-off "$dpdk_ns" "$dpdk_max_ranks"
      printf '%s\n%s\n' "ip netns exec $dpdk_ns-wR netagg-allreduce --rank R --job $job --transport $worker_transport --dtype fp32 --count $((bytes / 4)) --iterations $iterations --json (R = 0..$((ranks - 1)), NETAGG_DPDK_VDEVS=$vdev NETAGG_DPDK_NO_HUGE=1; switch: netagg-switchd ${switch_args[*]} ${switch_env[*]})" "$status" > "$raw/$name.cmd"
      local files=()
      for (( r = 0; r < ranks; ++r )); do files+=("$raw/$name.w$r.json"); done
      bench_py merge-workers "${files[@]}" > "$raw/$name.json" 2>> "$raw/$name.w0.log" \
        || echo 1 >> "$raw/$name.cmd"
      cp "$raw/$name.w0.log" "$raw/$name.log"
      if [ "$status" -ne 0 ]; then echo "bench: $name failed (exit $status), see $raw/$name.w*.log" >&2; fi
    }
    for ranks in $dpdk_ranks_list; do
      bash "$repo/scripts/netns/dpdk-netns.sh" job "$ranks" 256 64 > "$raw/dpdk-job-r$ranks.json"
      for bytes in "${dpdk_sizes[@]}"; do
        iterations=$(iterations_for "$bytes")
        warmup=$(warmup_for "$bytes")
        echo "bench: veths, $ranks ranks, $bytes bytes: kernel UDP, DPDK ($dpdk_drivers; $iterations iterations)" >&2
        for pair in udp:none $dpdk_drivers; do
          transport=${pair%%:*}
          name="veth-$transport-r$ranks-b$bytes"
          if [ "$transport" = udp ]; then
            bash "$repo/scripts/netns/dpdk-netns.sh" addresses "$dpdk_ns" "$dpdk_max_ranks" on
          else
            bash "$repo/scripts/netns/dpdk-netns.sh" addresses "$dpdk_ns" "$dpdk_max_ranks" off
          fi
          run_veth "$transport" "${pair#*:}" "$ranks" "$bytes" $((iterations + warmup)) "$name"
          echo "$warmup" > "$raw/$name.warmup"
        done
      done
    done
    bash "$repo/scripts/netns/dpdk-netns.sh" down "$dpdk_ns"
    trap - EXIT
  fi
fi

# Merges the raw outputs into bench.json and prints the tables (netagg_bench.summary, .tables).
bench_py bench-report --build "$build" --repo "$repo" --raw "$raw" --out "$out/bench.json" \
  --ranks "$ranks_list" --sizes "${sizes[*]}" --load-before "$load_before" \
  --missing="${missing[*]}" --dpdk-skipped="$dpdk_skipped" --dpdk-ranks="$dpdk_ranks_list" \
  --dpdk-sizes "${dpdk_sizes[*]:-}" --command="${BENCH_COMMAND:-bash scripts/bench/bench.sh $1}"

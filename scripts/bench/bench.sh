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
#                     skipped). BENCH_DPDK_RANKS (default 2) and BENCH_DPDK_SIZES (default
#                     64K 1M 16M; quick: 64K 1M) set its shape.
set -euo pipefail

usage() { echo "usage: bash scripts/bench/bench.sh BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "bench: no build directory '$1'" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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
  else
    echo "bench: $fpga_bin not built (Verilator missing or -DNETAGG_VERILATOR=OFF): no FPGA figures" >&2
    missing+=(fpga_bench)
  fi
fi

# DPDK (net_af_packet) against kernel UDP, both on the same veths: workers in network namespaces,
# netagg-switchd on kernel UDP in another, a bridge between them (scripts/netns/dpdk-netns.sh). The two
# transports alternate per size in one run; each measurement gets a fresh switch.
dpdk_enabled=0
if grep -q '^NETAGG_DPDK:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then dpdk_enabled=1; fi
dpdk_enabled=${BENCH_DPDK:-$dpdk_enabled}
dpdk_skipped=""
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
    dpdk_ranks=${BENCH_DPDK_RANKS:-2}
    if [ -n "${BENCH_DPDK_SIZES:-}" ]; then dpdk_size_list=${BENCH_DPDK_SIZES//,/ }
    elif [ "$quick" = 1 ]; then dpdk_size_list="64K 1M"
    else dpdk_size_list="64K 1M 16M"
    fi
    dpdk_sizes=()
    for s in $dpdk_size_list; do dpdk_sizes+=("$(to_bytes "$s")"); done
    dpdk_job="$raw/dpdk-job.json"
    trap 'bash "$repo/scripts/netns/dpdk-netns.sh" down "$dpdk_ns"' EXIT
    bash "$repo/scripts/netns/dpdk-netns.sh" up "$dpdk_ns" "$dpdk_ranks"
    bash "$repo/scripts/netns/dpdk-netns.sh" job "$dpdk_ranks" 256 64 > "$dpdk_job"
    # One measurement: a fresh switch, all workers at once; their JSON lines merged into one array.
    run_veth() {
      local transport=$1 bytes=$2 iterations=$3 name=$4 r status=0 sw
      ip netns exec "$dpdk_ns-agg" "$switchd_bin" --listen 10.77.0.254:20033 --job "$dpdk_job" \
        --slots 64 > "$raw/$name.switch.log" 2>&1 &
      sw=$!
      for _ in $(seq 50); do grep -q "listening on" "$raw/$name.switch.log" && break; sleep 0.1; done
      local pids=() epoch
      epoch=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')  # one per run, the same on every worker
      for (( r = 0; r < dpdk_ranks; ++r )); do
        ip netns exec "$dpdk_ns-w$r" env NETAGG_DPDK_VDEVS="net_af_packet0,iface=dp0" \
          NETAGG_DPDK_NO_HUGE=1 NETAGG_DPDK_NO_PCI=1 timeout --kill-after=10 "$timeout_s" \
          "$netagg_bin" --rank "$r" --job "$dpdk_job" --transport "$transport" --dtype fp32 \
          --count $((bytes / 4)) --iterations "$iterations" --timeout 10 --epoch "$epoch" --json \
          > "$raw/$name.w$r.json" 2> "$raw/$name.w$r.log" &
        pids+=($!)
      done
      for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
      kill "$sw" 2> /dev/null; wait "$sw" 2> /dev/null || true
      printf '%s\n%s\n' "ip netns exec $dpdk_ns-wR netagg-allreduce --rank R --job $dpdk_job --transport $transport --dtype fp32 --count $((bytes / 4)) --iterations $iterations --json (R = 0..$((dpdk_ranks - 1)), NETAGG_DPDK_VDEVS=net_af_packet0,iface=dp0 NETAGG_DPDK_NO_HUGE=1)" "$status" > "$raw/$name.cmd"
      python3 -c 'import json,sys; print(json.dumps([json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:]]))' \
        "${@:5}" > "$raw/$name.json" 2>> "$raw/$name.w0.log" || echo 1 >> "$raw/$name.cmd"
      cp "$raw/$name.w0.log" "$raw/$name.log"
      if [ "$status" -ne 0 ]; then echo "bench: $name failed (exit $status), see $raw/$name.w*.log" >&2; fi
    }
    for bytes in "${dpdk_sizes[@]}"; do
      iterations=$(iterations_for "$bytes")
      warmup=$(warmup_for "$bytes")
      echo "bench: veths, $dpdk_ranks ranks, $bytes bytes: kernel UDP, DPDK ($iterations iterations)" >&2
      files=()
      for transport in udp dpdk; do
        name="veth-$transport-r$dpdk_ranks-b$bytes"
        if [ "$transport" = udp ]; then
          bash "$repo/scripts/netns/dpdk-netns.sh" addresses "$dpdk_ns" "$dpdk_ranks" on
        else
          bash "$repo/scripts/netns/dpdk-netns.sh" addresses "$dpdk_ns" "$dpdk_ranks" off
        fi
        files=()
        for (( r = 0; r < dpdk_ranks; ++r )); do files+=("$raw/$name.w$r.json"); done
        run_veth "$transport" "$bytes" $((iterations + warmup)) "$name" "${files[@]}"
        echo "$warmup" > "$raw/$name.warmup"
      done
    done
    bash "$repo/scripts/netns/dpdk-netns.sh" down "$dpdk_ns"
    trap - EXIT
  fi
fi

BENCH_BUILD="$build" BENCH_REPO="$repo" BENCH_RAW="$raw" BENCH_OUT="$out/bench.json" \
BENCH_RANKS_LIST="$ranks_list" BENCH_SIZE_LIST="${sizes[*]}" BENCH_LOAD_BEFORE="$load_before" \
BENCH_MISSING="${missing[*]}" BENCH_DPDK_SKIPPED="$dpdk_skipped" \
BENCH_DPDK_RANKS_USED="${dpdk_ranks:-}" BENCH_DPDK_SIZE_LIST="${dpdk_sizes[*]:-}" BENCH_COMMAND="${BENCH_COMMAND:-bash scripts/bench/bench.sh $1}" \
  python3 - <<'PY'
"""Merges the raw outputs into bench.json and prints the comparison tables."""
import datetime
import json
import os
import platform
import re
import subprocess
import sys

build = os.environ["BENCH_BUILD"]
raw = os.environ["BENCH_RAW"]
out_path = os.environ["BENCH_OUT"]
ranks_list = [int(r) for r in os.environ["BENCH_RANKS_LIST"].split()]
sizes = [int(s) for s in os.environ["BENCH_SIZE_LIST"].split()]
failures = []
missing = os.environ["BENCH_MISSING"].split()


def load(name):
    """The JSON a measurement printed, or None (failure recorded) if it did not run or failed."""
    cmd_path = os.path.join(raw, name + ".cmd")
    if not os.path.exists(cmd_path):
        return None
    with open(cmd_path) as f:
        command, status = f.read().splitlines()[:2]
    with open(os.path.join(raw, name + ".json")) as f:
        text = f.read()
    result = None
    try:
        result = json.loads(text)
    except json.JSONDecodeError:
        # Tolerate human-readable lines around the JSON: take the last object that parses.
        decoder = json.JSONDecoder()
        for match in re.finditer(r"^\s*\{", text, re.MULTILINE):
            try:
                result = decoder.raw_decode(text, match.end() - 1)[0]
            except json.JSONDecodeError:
                pass
    if status != "0" or result is None:
        with open(os.path.join(raw, name + ".log")) as f:
            log_tail = f.read()[-2000:]
        failures.append({"name": name, "command": command, "exit_status": int(status),
                         "stderr_tail": log_tail})
        return None
    if isinstance(result, dict):
        result["command"] = command
    return result


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def summarize(result, size, warmup_to_drop=0):
    """Median and minimum time of one all-reduce (slowest rank), from the per-iteration times."""
    if result is None:
        return None
    samples = result.get("seconds_all") or []
    samples = samples[warmup_to_drop:]
    if not samples or result.get("verification") != "ok":
        return {"verification": result.get("verification")}
    seconds_median = median(samples)
    return {"seconds_median": seconds_median, "seconds_min": min(samples),
            "samples": len(samples), "goodput_gbps": size * 8 / seconds_median / 1e9,
            "verification": result["verification"]}


def warmup_of(name):
    try:
        with open(os.path.join(raw, name + ".warmup")) as f:
            return int(f.read())
    except OSError:
        return 0


def cmake_cache(key):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=os.environ["BENCH_REPO"]).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def compiler_version():
    compiler = cmake_cache("CMAKE_CXX_COMPILER")
    if not compiler:
        return None
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return compiler


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


allreduce = []
for ranks in ranks_list:
    for size in sizes:
        gloo = load(f"gloo-r{ranks}-b{size}")
        netagg_name = f"netagg-r{ranks}-b{size}"
        netagg = load(netagg_name)
        # gloo_allreduce leaves its warm-up out of seconds_all itself.
        g = summarize(gloo, size)
        n = summarize(netagg, size, warmup_of(netagg_name))
        if netagg is not None:
            netagg["warmup_dropped_here"] = warmup_of(netagg_name)
        row = {"ranks": ranks, "bytes": size, "gloo_ring": g, "netagg_switch_sim": n}
        for stat in ("median", "min"):
            key = "seconds_" + stat
            ok = g and n and key in g and key in n
            row[f"time_ratio_netagg_over_gloo_{stat}"] = n[key] / g[key] if ok else None
        row["raw"] = {"gloo": gloo, "netagg": netagg}
        allreduce.append(row)

codec = []
codec_context = None
codec_raw = None
if os.path.exists(os.path.join(raw, "codec.cmd")):
    codec_raw = load("codec")
    if isinstance(codec_raw, dict):
        codec_context = codec_raw.get("context")
        runs = [b for b in codec_raw.get("benchmarks", [])
                if b.get("run_type", "iteration") == "iteration" and "bytes_per_second" in b]

        def args_of(name):
            return name.split("/", 1)[1] if "/" in name else ""

        memcpy = {args_of(b["name"]): b for b in runs if "memcpy" in b["name"].lower()}
        for b in runs:
            if "memcpy" in b["name"].lower():
                continue
            ref = memcpy.get(args_of(b["name"]))
            gbps = b["bytes_per_second"] / 1e9
            ref_gbps = ref["bytes_per_second"] / 1e9 if ref else None
            codec.append({"name": b["name"], "gb_per_second": gbps,
                          "memcpy_name": ref["name"] if ref else None,
                          "memcpy_gb_per_second": ref_gbps,
                          "ratio_over_memcpy": gbps / ref_gbps if ref_gbps else None})

fpga = [r for r in (load("fpga_rtl_fp32"), load("fpga_rtl_int32")) if r is not None]


def slowest_rank(workers, warmup):
    """Per iteration the slowest worker's time (what the launcher reports), warm-up dropped."""
    if not isinstance(workers, list) or not workers:
        return None
    if any(w.get("verification") != "ok" for w in workers):
        return {"verification": "mismatch" if any(w.get("verification") == "mismatch"
                                                  for w in workers) else "error"}
    per_iteration = [max(t) for t in zip(*(w["seconds_all"] for w in workers))][warmup:]
    return {"seconds_all": per_iteration, "verification": "ok",
            "retransmissions": sum(w.get("retransmissions", 0) for w in workers),
            "packets_sent": sum(w.get("packets_sent", 0) for w in workers)}


dpdk = []
dpdk_ranks_used = os.environ.get("BENCH_DPDK_RANKS_USED")
for size in [int(s) for s in os.environ.get("BENCH_DPDK_SIZE_LIST", "").split()]:
    row = {"ranks": int(dpdk_ranks_used), "bytes": size}
    for transport in ("udp", "dpdk"):
        name = f"veth-{transport}-r{dpdk_ranks_used}-b{size}"
        workers = load(name)
        merged = slowest_rank(workers, warmup_of(name))
        summary = summarize(merged, size)
        if summary and merged:
            summary["retransmissions"] = merged.get("retransmissions")
            summary["packets_sent"] = merged.get("packets_sent")
        row["kernel_udp" if transport == "udp" else "dpdk_af_packet"] = summary
        row.setdefault("raw", {})[transport] = workers
    u, d = row["kernel_udp"] or {}, row["dpdk_af_packet"] or {}
    for stat in ("median", "min"):
        key = "seconds_" + stat
        row[f"time_ratio_dpdk_over_udp_{stat}"] = (d[key] / u[key]
                                                  if key in u and key in d else None)
    dpdk.append(row)

report = {
    "schema": "netagg-bench/1",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": os.environ["BENCH_COMMAND"],
    "machine": {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "kernel": platform.release(),
        "network": "loopback (127.0.0.1)",
        "note": "the switch model runs in software on the same CPUs as the workers",
        "load_average_before": [float(x) for x in os.environ["BENCH_LOAD_BEFORE"].split()],
        "load_average_after": list(os.getloadavg()),
    },
    "build": {
        "dir": build,
        "type": cmake_cache("CMAKE_BUILD_TYPE"),
        "compiler": compiler_version(),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain")),
    },
    "allreduce": allreduce,
    "codec": codec,
    "codec_context": codec_context,
    "fpga": fpga,
    "dpdk_vs_udp": {
        "setup": "veths and a bridge in network namespaces (scripts/netns/dpdk-netns.sh): workers on "
                 "net_af_packet (DPDK 22.11, --no-huge) or kernel UDP on the same veth, "
                 "netagg-switchd on kernel UDP; 256 elements per packet, window 64",
        "skipped": os.environ.get("BENCH_DPDK_SKIPPED") or None,
        "rows": dpdk,
    },
    "missing": missing,
    "failures": failures,
}
with open(out_path, "w") as f:
    json.dump(report, f, indent=2)
    f.write("\n")


def size_text(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def ms(s):
    return f"{s * 1e3:10.3f}" if s is not None else f"{'-':>10}"


def num(x, fmt):
    return format(x, fmt) if x is not None else "-"


def comparison_table(rows, peer_key, ours_key, ratio_key, peer, ours):
    """Median and minimum time of a peer and of netagg per ranks and size, with their ratios."""
    print(f"{'ranks':>5} {'size':>9} {peer + ' med':>10} {ours + ' med':>10} {'ratio':>7} "
          f"{peer + ' min':>10} {ours + ' min':>10} {'ratio':>7} {peer + ' Gb/s':>10} "
          f"{ours + ' Gb/s':>11}  check {peer[0]}/{ours[0]}")
    for row in rows:
        p = row[peer_key] or {}
        o = row[ours_key] or {}
        check = f"{p.get('verification') or '-'}/{o.get('verification') or '-'}"
        print(f"{row['ranks']:>5} {size_text(row['bytes']):>9} {ms(p.get('seconds_median'))} "
              f"{ms(o.get('seconds_median'))} {num(row[ratio_key + '_median'], '7.2f'):>7} "
              f"{ms(p.get('seconds_min'))} {ms(o.get('seconds_min'))} "
              f"{num(row[ratio_key + '_min'], '7.2f'):>7} "
              f"{num(p.get('goodput_gbps'), '10.2f'):>10} {num(o.get('goodput_gbps'), '11.2f'):>11}"
              f"  {check}")


print()
print("All-reduce of an fp32 tensor (sum): time of one operation, slowest rank, in ms.")
print("ratio = netagg time / gloo time (below 1: netagg faster), of the medians and of the minima.")
print("netagg runs through the switch model, software on the same cores as the workers.")
comparison_table(allreduce, "gloo_ring", "netagg_switch_sim", "time_ratio_netagg_over_gloo",
                 "gloo", "netagg")

if codec:
    # One row per benchmark, one column per buffer size: GB/s, and in brackets the ratio to
    # memcpy of the same buffer. Sizes of the all-reduce table when the codec ran them too.
    cells = {}
    for c in codec:
        what, _, arg = c["name"].partition("/")
        cells[(what, arg)] = c
    memcpy_rows = {}
    for c in codec:
        if c["memcpy_name"]:
            what, _, arg = c["memcpy_name"].partition("/")
            memcpy_rows[arg] = c["memcpy_gb_per_second"]
    args = list(dict.fromkeys(arg for _, arg in cells))
    wanted = [a for a in args if a.isdigit() and int(a) in sizes]
    columns = wanted or args
    names = list(dict.fromkeys(what for what, _ in cells))
    width = max(len(n) for n in names + ["memcpy"])

    def heading(arg):
        return size_text(int(arg)) if arg.isdigit() else arg

    print()
    print("Codec: GB/s of fp32 buffer per second (in brackets: ratio to memcpy of the same buffer)")
    print(f"{'':<{width}}" + "".join(f"{heading(a):>16}" for a in columns))
    print(f"{'memcpy':<{width}}" + "".join(f"{num(memcpy_rows.get(a), '16.2f'):>16}"
                                           for a in columns))
    for name in names:
        line = f"{name.removeprefix('BM_'):<{width}}"
        for a in columns:
            c = cells.get((name, a))
            text = (f"{c['gb_per_second']:.2f} ({num(c['ratio_over_memcpy'], '.2f')})"
                    if c else "-")
            line += f"{text:>16}"
        print(line)
    if codec_context and codec_context.get("simd_target"):
        print(f"codec SIMD target: {codec_context['simd_target']}")

if fpga:
    print()
    print("FPGA aggregator RTL (Verilator), back-to-back packets on every port (target: 1 beat, i.e.")
    print("16 lanes, per cycle per port; a packet's first beat is its headers):")
    print(f"{'dtype':>6} {'ports':>5} {'elem/pkt':>8} {'elem/cycle/port':>15} {'beats/cycle/port':>16} "
          f"{'latency cycles':>14} {'sim cycles/s':>12}")
    for r in fpga:
        print(f"{r['dtype']:>6} {r['ports']:>5} {r['elements_per_packet']:>8} "
              f"{r['elements_per_cycle_per_port']:>15.2f} {r['ingress_beats_per_cycle_per_port']:>16.3f} "
              f"{r['latency_cycles_last_contribution_to_first_result']:>14} "
              f"{r['simulated_cycles_per_second']:>12.0f}")
    speeds = [r for r in fpga if r.get("speed")]
    if speeds:
        print()
        print("Simulator speed, fast Verilator build against the traced one (same run, medians of")
        print("interleaved repetitions; ratio = fast / traced):")
        print(f"{'dtype':>6} {'traffic':>13} {'traced cycles/s':>15} {'fast cycles/s':>13} "
              f"{'ratio':>6} {'skipped':>8}")
        for r in speeds:
            for traffic in ("back_to_back", "in_rounds"):
                t = r["speed"][traffic]
                skipped = t["fast"]["cycles_skipped"] / t["fast"]["simulated_cycles"]
                print(f"{r['dtype']:>6} {traffic:>13} "
                      f"{t['baseline']['simulated_cycles_per_second']:>15.0f} "
                      f"{t['fast']['simulated_cycles_per_second']:>13.0f} {t['ratio']:>6.2f} "
                      f"{skipped:>8.0%}")

if dpdk:
    print()
    print("DPDK (net_af_packet) against kernel UDP on the same veths, fp32, time of one all-reduce")
    print("(slowest rank) in ms; ratio = DPDK / kernel UDP (below 1: DPDK faster). Software switch.")
    comparison_table(dpdk, "kernel_udp", "dpdk_af_packet", "time_ratio_dpdk_over_udp", "udp",
                     "dpdk")
elif os.environ.get("BENCH_DPDK_SKIPPED"):
    print()
    print(f"DPDK against kernel UDP: skipped ({os.environ['BENCH_DPDK_SKIPPED']})")

print()
print(f"JSON: {out_path}")
for failure in failures:
    print(f"FAILED: {failure['name']} (exit {failure['exit_status']}): {failure['command']}",
          file=sys.stderr)
for name in missing:
    print(f"MISSING: {name} was not built, its figures are absent", file=sys.stderr)
sys.exit(1 if failures or missing else 0)
PY

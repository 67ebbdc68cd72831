#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# All-reduce time through BMv2's simple_switch against elements per packet (scripts/netns/bmv2-netns.sh,
# no loss, 4 workers): BMv2 runs every lane's register actions in software, so its packet rate
# falls with the lanes a packet carries, and the best elements per packet is BMv2's own.
# Root and the P4 tools (simple_switch, simple_switch_CLI, p4c-bm2-ss; scripts/p4/p4-tools.sh)
# needed; exit 77 without them.
#   bash scripts/bench/bench-bmv2.sh BUILD_DIR [OUT.json] [--count N] [--dtype int32|fp32] [--loss P]
set -uo pipefail
build=${1:?usage: bench-bmv2.sh BUILD_DIR [OUT.json] [--count N] [--dtype D] [--loss P]}; shift
out=""
[[ $# -gt 0 && $1 != --* ]] && { out=$1; shift; }
count=65536 dtype=int32 loss=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --count) count=$2 ;; --dtype) dtype=$2 ;; --loss) loss=$2 ;;
    *) echo "bench-bmv2: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
here=$(cd "$(dirname "$0")" && pwd)
runs=()
for epp in 16 32 64 128 256; do
  r=$(bash "$here/../netns/bmv2-netns.sh" "$build" allreduce --workers 4 --dtype "$dtype" --count "$count" \
      --elements-per-packet "$epp" --loss "$loss" --timeout 60 2>/dev/null)
  rc=$?
  [[ $rc == 77 ]] && { echo "$r"; exit 77; }
  [[ $rc == 0 ]] || { echo "bench-bmv2: the run with $epp elements a packet failed" >&2; echo "$r" >&2; exit 1; }
  runs+=("$r")
done
RUNS=$(printf '%s\n' "${runs[@]}") /usr/bin/python3 - > "${out:-/dev/stdout}" <<'PY'
import json, os, sys
text = os.environ["RUNS"]
dec, i, runs = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    runs.append(obj)
rows = []
for r in runs:
    slowest = max(w["seconds"] for w in r["ranks"])
    packets = r["switch_counters"].get("packets_in", 0)
    row = {"elements_per_packet": r["elements_per_packet"], "seconds": round(slowest, 3),
           "elements_per_second": round(r["count"] / slowest), "switch_packets_in": packets,
           "switch_packets_per_second": round(packets / slowest),
           "retransmissions": sum(w["retransmissions"] for w in r["ranks"])}
    rows.append(row)
    print(f"{row['elements_per_packet']:>4} elements/packet: {slowest:7.3f} s, "
          f"{row['switch_packets_per_second']:>6} packets/s into the switch, "
          f"{row['retransmissions']} retransmissions", file=sys.stderr)
json.dump({"workers": 4, "dtype": runs[0]["dtype"], "count": runs[0]["count"],
           "loss_percent": runs[0]["loss_percent"], "runs": rows}, sys.stdout, indent=1)
print()
PY

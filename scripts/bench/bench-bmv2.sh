#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# All-reduce time through BMv2's simple_switch against elements per packet
# (scripts/netns/bmv2-netns.sh, no loss, 4 workers): BMv2 runs every lane's register actions in
# software, so its packet rate falls with the lanes a packet carries, and the best elements per
# packet is BMv2's own. Root and the P4 tools (simple_switch, simple_switch_CLI, p4c-bm2-ss;
# scripts/p4/p4-tools.sh) needed; exit 77 without them.
#   bash scripts/bench/bench-bmv2.sh BUILD_DIR [OUT.json] [--count N] [--dtype int32|fp32]
#                                    [--loss P]
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
printf '%s\n' "${runs[@]}" \
  | /usr/bin/python3 "$here/netagg_bench" bmv2-report > "${out:-/dev/stdout}"

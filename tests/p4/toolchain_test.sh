#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The P4 programs on the open-source P4 tools, found in NETAGG_P4_PREFIX/bin (default
# /opt/netagg-p4), then on PATH (scripts/p4/p4-tools.sh). Exit 77 (skipped, with the reason) when a
# tool is absent.
#   toolchain_test.sh BUILD bmv2-compile     p4c-bm2-ss compiles p4/bmv2/netagg.p4 with no warning
#   toolchain_test.sh BUILD tofino-p4test    p4test accepts p4/tofino/netagg.p4 with no warning
#   toolchain_test.sh BUILD tofino-compile   p4c-barefoot compiles p4/tofino/netagg.p4 with no
#                                            warning, within 12 stages, and bfas assembles it
#   toolchain_test.sh BUILD bmv2-vectors     every switch vector passes on simple_switch (root)
#   toolchain_test.sh BUILD bmv2-allreduce DTYPE   4 workers through simple_switch with 1 % loss
#                                            each way; every worker verifies its sum (root)
set -uo pipefail
build=$1 mode=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/scripts/p4/p4-tools.sh"
need() {
  local missing
  missing=$(p4_missing "$@")
  [[ -z $missing ]] || { echo "toolchain_test: skipped: $missing $p4_where"; exit 77; }
}
case $mode in
  bmv2-compile)
    need p4c-bm2-ss
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    bash "$here/scripts/p4/p4-build.sh" "$out" --only bmv2 || exit 1
    # The program's tables and registers as the control plane names them.
    for name in NetaggIngress.job_table NetaggIngress.worker_table NetaggIngress.parent_table \
                NetaggEgress.result_destination; do
      grep -q "\"$name\"" "$out/p4/bmv2/netagg.json" || { echo "no $name in netagg.json"; exit 1; }
    done ;;
  tofino-p4test)
    need p4test tna.p4
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    bash "$here/scripts/p4/p4-build.sh" "$out" --only tofino --p4test > "$out/log" 2>&1
    rc=$?
    cat "$out/log"
    [[ $rc == 0 ]] && grep -q "checked\|compiled" "$out/log" || exit 1 ;;
  tofino-compile)
    need p4c-barefoot bfas
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    bash "$here/scripts/p4/p4-build.sh" "$out" --only tofino > "$out/log" 2>&1
    rc=$?
    cat "$out/log"
    [[ $rc == 0 ]] || exit 1
    grep -q "bfas assembled" "$out/log" || exit 1
    # The program's tables and registers as the control plane names them, in the assembler's
    # context (what the SDE's driver loads).
    for name in Ingress.job_table Ingress.worker_table Ingress.parent_table \
                Egress.result_destination Ingress.round_epoch Ingress.value_31; do
      grep -q "\"$name\"" "$out/p4/tofino/pipe/context.json" || {
        echo "no $name in context.json"; exit 1; }
    done ;;
  bmv2-vectors)
    need simple_switch simple_switch_CLI p4c-bm2-ss
    exec bash "$here/scripts/netns/bmv2-netns.sh" "$build" vectors ;;
  bmv2-allreduce)
    need simple_switch simple_switch_CLI p4c-bm2-ss
    out=$(bash "$here/scripts/netns/bmv2-netns.sh" "$build" allreduce --workers 4 --dtype "$3" \
      --count 8192 --elements-per-packet 64 --loss 1)
    rc=$?
    echo "$out"
    [[ $rc == 0 ]] || exit "$rc"
    # The loss happened and was repaired: some worker retransmitted, the switch completed every
    # round (8192 / 64 per worker, and the one-element barrier before the timed all-reduce).
    OUT=$out /usr/bin/python3 -c '
import json, os, sys
d = json.loads(os.environ["OUT"])
retx = sum(r["retransmissions"] for r in d["ranks"])
done = d["switch_counters"].get("completions", 0)
ok = d["verification"] == "ok" and retx > 0 and done >= 8192 // 64 + 1
v = d["verification"]
print(f"verification {v}, {retx} retransmissions, {done} rounds completed")
sys.exit(0 if ok else 1)' ;;
  *) echo "toolchain_test: unknown mode $mode"; exit 2 ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the C preprocessor over p4/tofino/netagg.p4 and p4/bmv2/netagg.p4 as p4c/bf-p4c would
# (cpp -P with p4/common on the include path; core.p4, tna.p4, v1model.p4 replaced by empty
# stand-ins, as neither compiler is installed here). This is NOT a P4 compile: it catches broken
# includes, unbalanced macros and contract names that went missing, nothing about P4 semantics.
# Usage: p4_preprocess.sh P4_DIR WORK_DIR
set -euo pipefail
p4=$1 work=$2
mkdir -p "$work/stubs"
for f in core.p4 tna.p4 v1model.p4; do : > "$work/stubs/$f"; done
fail=0

preprocess() {  # FILE OUT
  cpp -P -undef -nostdinc -I"$work/stubs" -I"$p4/common" "$1" > "$2"
}

check() {  # NAME PREPROCESSED
  local name=$1 out=$2
  if grep -nE '\b(NETAGG_[A-Z_0-9]+|LANE_STATE|VALUE_LANE|CLEAR_BLOCK|LANE_OP|LANE_BLOCK|OP_[A-Z]+|BRIDGE_[A-Z]+|CLASS_[A-Z]+|OUTCOME_[A-Z]+)\b' "$out"; then
    echo "$name: macros left unexpanded (above)"; fail=1
  fi
  # The names of the control-plane contract (/tmp/netagg-p4-context.md, docs/switch-pipeline.md).
  for word in 'table switch_identity' 'action set_switch_identity' 'table job_table' \
      'action set_job' 'table worker_table' 'action set_worker' 'table forward' \
      'action set_egress_port' 'table result_destination' 'action set_result_destination' \
      'has_round' 'completed_seq' 'round_seq' 'round_count' 'bitmap' 'remaining' 'exponent' \
      'value_0' 'value_31' 'drops' 'packets_in' 'completions' 'results_resent' \
      'epoch_takeovers' \
      'hdr.netagg.job_id : exact' 'hdr.ipv4.src_addr : exact' 'hdr.udp.src_port : exact' \
      'hdr.ethernet.dst_addr : exact' 'egress_rid : exact' 'header netagg_h' 'header udp_h'; do
    grep -qF -- "$word" "$out" || { echo "$name: '$word' not found"; fail=1; }
  done
  grep -q 'value_32\b' "$out" && { echo "$name: more value registers than lanes per pass"; fail=1; }
  # Braces balance after expansion (a macro that lost a brace).
  local open close
  open=$(tr -cd '{' < "$out" | wc -c); close=$(tr -cd '}' < "$out" | wc -c)
  [[ $open == "$close" ]] || { echo "$name: $open '{' but $close '}'"; fail=1; }
  return 0
}

preprocess "$p4/tofino/netagg.p4" "$work/tofino.p4"
check tofino "$work/tofino.p4"
grep -q 'control Ingress' "$work/tofino.p4" || { echo "tofino: no control Ingress"; fail=1; }
grep -q 'Pipeline(' "$work/tofino.p4" || { echo "tofino: no Pipeline"; fail=1; }
preprocess "$p4/bmv2/netagg.p4" "$work/bmv2.p4"
check bmv2 "$work/bmv2.p4"
grep -q 'control NetaggIngress' "$work/bmv2.p4" || { echo "bmv2: no NetaggIngress"; fail=1; }
grep -q 'control NetaggEgress' "$work/bmv2.p4" || { echo "bmv2: no NetaggEgress"; fail=1; }

# Negative checks: the checks above must notice a broken include and a lost contract name.
sed 's|"../common/headers.p4"|"../common/no_such_headers.p4"|' "$p4/bmv2/netagg.p4" \
  > "$work/broken_include.p4"
if cpp -P -undef -nostdinc -I"$work/stubs" -I"$p4/common" "$work/broken_include.p4" \
    > /dev/null 2>&1; then
  echo "a missing include was not reported"; fail=1
fi
sed 's/table job_table/table jobs_table/' "$work/bmv2.p4" > "$work/renamed.p4"
if (fail=0; check renamed "$work/renamed.p4" > /dev/null; exit $fail); then
  echo "a renamed contract table was not reported"; fail=1
fi

[[ $fail == 0 ]] && echo "p4_preprocess: both programs preprocess; contract names present (not a P4 compile)"
exit $fail

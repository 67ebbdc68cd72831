# SPDX-License-Identifier: Apache-2.0
# Sourced by the P4 scripts and tests: where the project looks for the P4 tools. They are not
# Debian packages and the project does not build them; docs/switch-pipeline.md names them and the
# versions its results were measured with. Looked for in NETAGG_P4_PREFIX/bin (default
# /opt/netagg-p4), then on PATH.
p4_prefix=${NETAGG_P4_PREFIX:-/opt/netagg-p4}

# p4_tool NAME: the tool's path, or nothing.
p4_tool() {
  if [[ -x $p4_prefix/bin/$1 ]]; then echo "$p4_prefix/bin/$1"; else command -v "$1" 2>/dev/null; fi
}

# p4_tna_include: the directory holding tna.p4 (and core.p4), or nothing. NETAGG_P4_PREFIX/
# tna-include first, then the include directories of an installed p4c.
p4_tna_include() {
  local d tool dirs=("$p4_prefix/tna-include" "$p4_prefix/share/p4c/p4include")
  for tool in p4test p4c-barefoot; do
    tool=$(p4_tool "$tool") && [[ -n $tool ]] && dirs+=("$(dirname "$tool")/../share/p4c/p4include")
  done
  for d in "${dirs[@]}"; do
    if [[ -f $d/tna.p4 ]]; then (cd "$d" && pwd); return 0; fi
  done
  return 1
}

# p4_missing TOOL...: the names of the tools that are not found, one line.
p4_missing() {
  local t missing=()
  for t in "$@"; do
    if [[ $t == tna.p4 ]]; then p4_tna_include > /dev/null || missing+=("$t")
    else [[ -n $(p4_tool "$t") ]] || missing+=("$t"); fi
  done
  echo "${missing[*]}"
}

# p4_where: the sentence every skip ends with.
p4_where="not in $p4_prefix/bin (NETAGG_P4_PREFIX) or on PATH; the P4 tools are not Debian \
packages and the project does not build them (docs/switch-pipeline.md, \"The P4 tools\")"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make p4`: compiles the P4 programs with the compilers it finds, in NETAGG_P4_PREFIX/bin
# (default /opt/netagg-p4) first, then on PATH (scripts/p4/p4-tools.sh).
#   BMv2 (v1model):  p4c-bm2-ss --arch v1model -> BUILD/p4/bmv2/netagg.json (+ netagg.p4info.txtpb)
#   Tofino (TNA):    bf-p4c (Intel's SDE) or p4c-barefoot (p4c's open-source back end)
#                    --target tofino --arch tna -> BUILD/p4/tofino/ (resource logs there);
#                    without either, p4test with the TNA includes (NETAGG_P4_PREFIX/tna-include
#                    or p4c's own) checks the program's language and types, not its fit in the
#                    pipeline, and says so.
# Warnings fail the compilation: the programs compile clean.
# A compiler that is not installed is reported with where it was looked for, and its program
# skipped.
# Exit status: 0 if every compiler found compiled its program (also when none is installed: the
# message says so; `make p4` is not a test), 1 if a compilation failed or warned, 2 on bad usage.
# Usage: scripts/p4/p4-build.sh [BUILD_DIR] [--only bmv2|tofino] [--p4test]  (default: build)
#   --p4test  check the Tofino program with p4test even when a Tofino compiler is installed
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=build only="" force_p4test=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=${2:-}; shift 2 || true ;;
    --p4test) force_p4test=1; shift ;;
    -*) echo "p4-build: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
case $only in ""|bmv2|tofino) ;; *) echo "p4-build: --only takes bmv2 or tofino" >&2; exit 2 ;; esac
[[ $build == /* ]] || build="$root/$build"
out="$build/p4"
source "$root/scripts/p4/p4-tools.sh"
status=0 compiled=0 wanted=0

# run_compiler LOG COMMAND...: runs it, shows its output; warnings count as failure.
run_compiler() {
  local log=$1; shift
  "$@" > "$log" 2>&1
  local rc=$?
  cat "$log"
  if [[ $rc != 0 ]]; then return 1; fi
  # One warning is the Tofino back end's own, for every program (a minimal one too): it unrolls
  # the parser state it adds to pad a short parse to the minimum parse depth. It says nothing
  # of the program, so it does not count.
  if grep -i "warning:" "$log" | grep -v -q "Parser state min_parse_depth_accept_loop will be unrolled"; then
    echo "p4: warnings (above) fail the compilation"; return 1
  fi
  return 0
}

# tofino_assemble BFA: p4c-barefoot stops at the assembly and does not check how many stages it
# placed tables in. The resources are summarised from the assembly (scripts/p4/p4-resources.py,
# which fails on more than 12 stages), and the assembler, bfas (the back end's bf-asm), when
# installed, checks the rest.
tofino_assemble() {
  local bfa=$1 dir
  dir=$(dirname "$bfa")
  if [[ ! -f $bfa ]]; then echo "p4: no assembly at $bfa"; return 1; fi
  echo "p4: resources (from the assembly; $dir/../resources.json):"
  if ! /usr/bin/python3 "$root/scripts/p4/p4-resources.py" "$bfa" \
      --json "$dir/../resources.json"; then
    echo "p4: p4/tofino/netagg.p4 does not fit Tofino 1's stages"; return 1
  fi
  local asm
  asm=$(p4_tool bfas)
  if [[ -z $asm ]]; then
    echo "p4: bfas not found: the assembler's checks were not run (the stages were counted)"
    return 0
  fi
  mkdir -p "$dir/logs"
  if ! run_compiler "$dir/../bfas.log" "$asm" --no-warn --target tofino -o "$dir" "$bfa"; then
    echo "p4: bfas rejected the assembly of p4/tofino/netagg.p4"; return 1
  fi
  echo "p4: bfas assembled p4/tofino/netagg.p4 ($dir/tofino.bin)"
}

if [[ $only != tofino ]]; then
  wanted=$((wanted + 1))
  bm2=$(p4_tool p4c-bm2-ss)
  if [[ -n $bm2 ]]; then
    mkdir -p "$out/bmv2"
    echo "p4: p4c-bm2-ss $($bm2 --version 2>&1 | grep -o 'Version [^ ]*'): p4/bmv2/netagg.p4 -> $out/bmv2/"
    if run_compiler "$out/bmv2/compile.log" "$bm2" --arch v1model --std p4-16 \
        -I "$root/p4/common" --p4runtime-files "$out/bmv2/netagg.p4info.txtpb" \
        -o "$out/bmv2/netagg.json" "$root/p4/bmv2/netagg.p4"; then
      compiled=$((compiled + 1))
    else
      echo "p4: p4c-bm2-ss failed on p4/bmv2/netagg.p4"; status=1
    fi
  else
    cat <<MSG
p4: p4c-bm2-ss (p4c's BMv2 back end) not found: the BMv2 program is not compiled.
    It is $p4_where.
MSG
  fi
fi

if [[ $only != bmv2 ]]; then
  wanted=$((wanted + 1))
  bf=$(p4_tool bf-p4c)
  [[ -n $bf ]] || bf=$(p4_tool p4c-barefoot)  # p4c's open-source Tofino back end
  [[ $force_p4test == 0 ]] || bf=""
  p4test=$(p4_tool p4test)
  if [[ -n $bf ]]; then
    mkdir -p "$out/tofino"
    echo "p4: $(basename "$bf"): p4/tofino/netagg.p4 -> $out/tofino/"
    bfa=$out/tofino/pipe/netagg.bfa
    rm -f "$bfa"
    if ! run_compiler "$out/tofino/compile.log" "$bf" --target tofino --arch tna --std p4-16 \
        -I "$root/p4/common" -o "$out/tofino" "$root/p4/tofino/netagg.p4"; then
      echo "p4: $(basename "$bf") failed on p4/tofino/netagg.p4"; status=1
    elif [[ $(basename "$bf") == p4c-barefoot ]] && ! tofino_assemble "$bfa"; then
      status=1
    else
      compiled=$((compiled + 1))
    fi
  elif [[ -n $p4test ]] && tna=$(p4_tna_include); then
    mkdir -p "$out/tofino"
    echo "p4: p4test checks p4/tofino/netagg.p4's language and types against" \
      "the TNA includes (not its fit in Tofino's stages, PHV or stateful ALUs)"
    if run_compiler "$out/tofino/p4test.log" "$p4test" --std p4-16 -D__TARGET_TOFINO__=1 \
        -I "$tna" -I "$root/p4/common" "$root/p4/tofino/netagg.p4"; then
      echo "p4: p4test: p4/tofino/netagg.p4 checked (not compiled for Tofino)"
    else
      echo "p4: p4test failed on p4/tofino/netagg.p4"; status=1
    fi
  else
    cat <<MSG
p4: neither bf-p4c nor p4c-barefoot found: the Tofino program (p4/tofino/netagg.p4) is not
    compiled. bf-p4c comes with Intel's P4 Studio SDE (source its set_sde.bash so that it is on
    PATH); p4c-barefoot is p4c's open-source Tofino back end. With p4test and the TNA includes
    (tna.p4), \`make p4\` checks the program's language. They are $p4_where.
MSG
  fi
fi

if [[ $status == 0 ]]; then
  echo "p4: $compiled of $wanted programs compiled (the others need their compiler, see above)"
fi
exit $status

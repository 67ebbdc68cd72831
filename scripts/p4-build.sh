#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make p4`: compiles the P4 programs with the compilers found on PATH.
#   BMv2 (v1model):  p4c --target bmv2 --arch v1model  -> build/p4/bmv2/netagg.json (+ p4info)
#   Tofino (TNA):    bf-p4c --target tofino --arch tna -> build/p4/tofino/
# A compiler that is not installed is reported with where to get it, and its program skipped.
# Exit status: 0 if every compiler found compiled its program (also when none is installed: the
# message says so; `make p4` is not a test), 1 if a compilation failed, 2 on bad usage.
# Usage: scripts/p4-build.sh [BUILD_DIR]  (default: build)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[[ $build == /* ]] || build="$root/$build"
out="$build/p4"
status=0 compiled=0

if command -v p4c > /dev/null 2>&1; then
  mkdir -p "$out/bmv2"
  echo "p4: p4c $(p4c --version 2>/dev/null | head -n1): p4/bmv2/netagg.p4 -> $out/bmv2/"
  if p4c --target bmv2 --arch v1model --std p4-16 -I "$root/p4/common" \
      --p4runtime-files "$out/bmv2/netagg.p4info.txt" -o "$out/bmv2" "$root/p4/bmv2/netagg.p4"; then
    compiled=$((compiled + 1))
  else
    echo "p4: p4c failed on p4/bmv2/netagg.p4"; status=1
  fi
else
  cat <<'MSG'
p4: p4c not found on PATH: the BMv2 program (p4/bmv2/netagg.p4) is not compiled.
    p4c and BMv2 (simple_switch) are not Debian packages. Get them from the p4lang project:
    https://github.com/p4lang/p4c and https://github.com/p4lang/behavioral-model (build from
    source, or the Ubuntu packages p4lang-p4c / p4lang-bmv2 from the openSUSE Build Service
    repository the p4c README names), then run `make p4` again.
MSG
fi

if command -v bf-p4c > /dev/null 2>&1; then
  mkdir -p "$out/tofino"
  echo "p4: bf-p4c: p4/tofino/netagg.p4 -> $out/tofino/"
  if bf-p4c --target tofino --arch tna --std p4-16 -I "$root/p4/common" -o "$out/tofino" \
      "$root/p4/tofino/netagg.p4"; then
    compiled=$((compiled + 1))
  else
    echo "p4: bf-p4c failed on p4/tofino/netagg.p4"; status=1
  fi
else
  cat <<'MSG'
p4: bf-p4c not found on PATH: the Tofino program (p4/tofino/netagg.p4) is not compiled.
    bf-p4c comes with Intel's P4 Studio SDE for Tofino (from Intel, for Tofino users).
    Source the SDE's environment (set_sde.bash) so that bf-p4c is on PATH, then `make p4`.
MSG
fi

if [[ $status == 0 ]]; then
  echo "p4: $compiled of 2 programs compiled (the others need their compiler, see above)"
fi
exit $status

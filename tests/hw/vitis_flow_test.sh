#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make xclbin` without Vitis (ctest vitis_flow_checks): it stops at once with a message saying
# what is needed, before building anything; a bad PLATFORM or KERNEL is named with the valid ones.
# Usage: vitis_flow_test.sh SOURCE_DIR SCRATCH_DIR
set -u
src=$1
scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
fail=0
check() {  # check NAME PATTERN -- make args...   (make must fail, printing PATTERN)
  local name=$1 pattern=$2
  shift 3
  local out status
  out=$(env PATH="$path_without_vitis" make --no-print-directory -C "$src" "$@" BUILD="$scratch/build" 2>&1)
  status=$?
  if [ "$status" = 0 ]; then
    echo "FAIL $name: exit 0, expected a failure; output: $out"; fail=1; return
  fi
  if ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL $name: no '$pattern' in: $out"; fail=1; return
  fi
  echo "ok   $name"
}
# PATH without any folder that holds v++ (a machine with Vitis still tests the message).
path_without_vitis=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -x "$d/v++" ] || [ -x "$d/vivado" ] || path_without_vitis="${path_without_vitis:+$path_without_vitis:}$d"
done

check no-vitis "v++ is not on PATH" -- xclbin PLATFORM=u280
check no-vitis-says-platform "xilinx_u280_gen3x16_xdma_1_202211_1" -- xclbin PLATFORM=u280
check no-vitis-hls "v++ is not on PATH" -- xclbin PLATFORM=u55c KERNEL=hls
check bad-platform "is not one of: u250 u280 u55c" -- xclbin PLATFORM=u999
check no-platform "PLATFORM='' is not one of: u250 u280 u55c" -- xclbin
check bad-kernel "KERNEL='verilog' is not one of: rtl" -- xclbin PLATFORM=u250 KERNEL=verilog
# With the tools present (stand-ins that only fail), the Ethernet kernels are asked for next.
mkdir -p "$scratch/fakebin"
for tool in v++ vivado; do printf '#!/bin/sh\necho "stand-in $0 called" >&2\nexit 3\n' >"$scratch/fakebin/$tool"; chmod +x "$scratch/fakebin/$tool"; done
path_without_vitis="$scratch/fakebin:$path_without_vitis"
check no-cmac "CMAC_XO is empty" -- xclbin PLATFORM=u250
check missing-cmac "CMAC_XO names /nonexistent/cmac_0.xo, which does not exist" -- xclbin PLATFORM=u250 CMAC_XO=/nonexistent/cmac_0.xo
# Nothing was configured or built on the way to the error.
if [ -e "$scratch/build" ]; then echo "FAIL: make xclbin created $scratch/build"; fail=1; fi
exit $fail

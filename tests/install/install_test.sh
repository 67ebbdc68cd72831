#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The library alone: configures the tree with every optional part off (what libnetagg needs and
# nothing else), builds and installs it into a scratch prefix, then builds and runs a program
# outside the tree against it twice: with find_package(netagg) (CMake) and with pkg-config.
# Usage: install_test.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
source=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
run() {  # a step's output only when it fails
  if ! "$@" > "$scratch/step.log" 2>&1; then
    cat "$scratch/step.log" >&2
    echo "install_test: failed: $*" >&2
    exit 1
  fi
}
run cmake -S "$source" -B "$scratch/lib" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DNETAGG_BUILD_TOOLS=OFF -DNETAGG_BUILD_HW=OFF -DNETAGG_BUILD_DRIVER=OFF -DNETAGG_BUILD_SIM=OFF \
  -DNETAGG_BUILD_TESTS=OFF -DNETAGG_BUILD_BENCH=OFF -DNETAGG_BUILD_PLAN=OFF \
  -DNETAGG_BUILD_TORCH=OFF -DNETAGG_DPDK=OFF
run cmake --build "$scratch/lib"
# Nothing but the library was built: no torch extension, no netagg-plan.
if find "$scratch/lib" -name '_C*.so' -o -name 'netagg-plan' | grep -q .; then
  echo "install_test: the library alone built more than libnetagg" >&2
  exit 1
fi
run cmake --install "$scratch/lib" --prefix "$prefix"
for f in include/netagg/communicator.hpp include/netagg/wire_format.hpp \
         lib/cmake/netagg/netaggConfig.cmake lib/pkgconfig/netagg.pc \
         share/netagg/wireshark/netagg.lua; do
  [ -f "$prefix/$f" ] || { echo "install_test: $f was not installed" >&2; exit 1; }
done
# Only the public headers: the library's internals stay in the tree.
for f in engine.hpp codec.hpp fallback.hpp inproc.hpp rto.hpp split.hpp trees.hpp dpdk.hpp; do
  [ ! -e "$prefix/include/netagg/$f" ] || { echo "install_test: $f was installed" >&2; exit 1; }
done
# Every installed header compiles on its own, with only the installed ones beside it.
for h in "$prefix"/include/netagg/*.hpp; do
  echo "#include <netagg/$(basename "$h")>" > "$scratch/header.cpp"
  run c++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" "$scratch/header.cpp"
done
# CMake
run cmake -S "$here/consumer" -B "$scratch/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
run cmake --build "$scratch/cmake"
LD_LIBRARY_PATH="$prefix/lib" "$scratch/cmake/consumer"
# pkg-config
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
run pkg-config --exists netagg
c++ -std=c++20 "$here/consumer/main.cpp" -o "$scratch/consumer-pc" $(pkg-config --cflags --libs netagg)
LD_LIBRARY_PATH="$prefix/lib" "$scratch/consumer-pc"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a scratch prefix, then builds and runs a program outside the tree
# against it twice: with find_package(netagg) (CMake) and with pkg-config netagg.
# Usage: install_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
for f in include/netagg/communicator.hpp include/netagg/wire_format.hpp \
         lib/cmake/netagg/netaggConfig.cmake lib/pkgconfig/netagg.pc; do
  [ -f "$prefix/$f" ] || { echo "install_test: $f was not installed" >&2; exit 1; }
done
# CMake
cmake -S "$here/consumer" -B "$scratch/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  > "$scratch/configure.log"
cmake --build "$scratch/cmake" > "$scratch/build.log"
LD_LIBRARY_PATH="$prefix/lib" "$scratch/cmake/consumer"
# pkg-config
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --exists netagg
c++ -std=c++20 "$here/consumer/main.cpp" -o "$scratch/consumer-pc" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs netagg)
LD_LIBRARY_PATH="$prefix/lib" "$scratch/consumer-pc"

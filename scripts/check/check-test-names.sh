#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the CTest names of a build folder (`ctest -N`): none longer than 120 characters, none
# carrying GoogleTest's printout of a parameter ("# GetParam() = ...", "<TypeParam>"), none twice.
# A name must stay the same from one discovery to the next (--rerun-failed, CTest's timing
# history), so a parameterized suite names its cases (tests/CMakeLists.txt, netagg_test()).
# Usage: check-test-names.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
names=$(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: //p')
[ -n "$names" ] || { echo "check-test-names: no tests in $build" >&2; exit 2; }
status=0
long=$(awk 'length($0) > 120' <<<"$names")
if [ -n "$long" ]; then
  echo "check-test-names: longer than 120 characters:" >&2
  sed 's/^/  /' <<<"$long" >&2
  status=1
fi
printed=$(grep -E 'GetParam\(\)|TypeParam|[<>#]' <<<"$names" || true)
if [ -n "$printed" ]; then
  echo "check-test-names: a parameter's printout in the name:" >&2
  sed 's/^/  /' <<<"$printed" >&2
  status=1
fi
twice=$(sort <<<"$names" | uniq -d)
if [ -n "$twice" ]; then
  echo "check-test-names: twice:" >&2
  sed 's/^/  /' <<<"$twice" >&2
  status=1
fi
count=$(wc -l <<<"$names")
longest=$(awk '{ if (length($0) > n) n = length($0) } END { print n }' <<<"$names")
echo "check-test-names: $count names, the longest $longest characters"
exit $status

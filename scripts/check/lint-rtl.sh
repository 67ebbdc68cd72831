#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lints the RTL: `verilator --lint-only -Wall` over all of hw/rtl/files.txt, once with each
# module as the top, so modules that nothing instantiates yet are checked too (with their
# default parameters). Exits non-zero if any run warns.
#
# Usage: scripts/check/lint-rtl.sh [--verilator PATH] [MODULE...]
#   MODULE     lint only these tops (default: every non-package file of the list)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
verilator=verilator
tops=()
while [ $# -gt 0 ]; do
  case "$1" in
    --verilator) verilator=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    -*) echo "lint-rtl: unknown option $1" >&2; exit 2 ;;
    *) tops+=("$1"); shift ;;
  esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

files=()
modules=()
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%%#*}
  line=$(echo "$line" | xargs)
  [ -z "$line" ] && continue
  if [ ! -f "$root/hw/rtl/$line" ]; then
    echo "lint-rtl: hw/rtl/files.txt names $line, which does not exist" >&2
    exit 1
  fi
  files+=("$root/hw/rtl/$line")
  name=$(basename "$line" .sv)
  case "$name" in *_pkg) ;; *) modules+=("$name") ;; esac
done < "$root/hw/rtl/files.txt"
[ ${#tops[@]} -eq 0 ] && tops=("${modules[@]}")

failed=()
for top in "${tops[@]}"; do
  if "$verilator" --lint-only -Wall --top-module "$top" "${files[@]}" > "$tmp/out.txt" 2>&1; then
    echo "lint-rtl: $top clean"
  else
    cat "$tmp/out.txt"
    echo "lint-rtl: $top has warnings or errors" >&2
    failed+=("$top")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint-rtl: ${#failed[@]} of ${#tops[@]} tops failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint-rtl: ${#tops[@]} tops clean"

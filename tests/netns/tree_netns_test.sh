#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Aggregation trees of netagg-switchd processes in network namespaces, with loss at every aggregator
# (scripts/netns/tree-netns.sh): one tree and two trees, int32 and fp32; every worker must verify
# and every leaf's rounds must have been answered by a root. Exit 77 (skipped) without root.
set -euo pipefail
build=$1
[ "$(id -u)" = 0 ] || { echo "tree_netns_test: skipped: needs root (network namespaces)"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
check() {
  local out
  out=$(bash "$here/scripts/netns/tree-netns.sh" "$build" "$@") || { echo "$out"; echo "FAILED: $*"; exit 1; }
  OUT="$out" ARGS="$*" python3 - <<'PY'
import json, os, sys
d = json.loads(os.environ["OUT"])
args = os.environ["ARGS"]
bad = []
if d["verification"] != "ok": bad.append("verification " + d["verification"])
roots = {k: v for k, v in d["aggregators"].items() if k.startswith("root")}
leaves = {k: v for k, v in d["aggregators"].items() if k.startswith("leaf")}
total = sum(v["completions"] for v in roots.values())
for name, c in roots.items():
    if not c["completions"]: bad.append(f"{name} completed nothing")
for name, c in leaves.items():
    if c["sent_to_parent"] != c["results_from_parent"] or c["completions"] != total:
        bad.append(f"{name}: {c} against the roots' {total} rounds")
if not any(v["resent_to_parent"] for v in leaves.values()): bad.append("no loss above a leaf seen")
print(("FAILED " if bad else "ok ") + args + f": {d['wall_seconds']:.2f} s, roots {total} rounds"
      + ("".join("\n  " + b for b in bad)))
sys.exit(1 if bad else 0)
PY
}
check --workers 6 --leaves 3 --trees 1 --loss 2 --dtype int32
check --workers 6 --leaves 3 --trees 1 --loss 2 --dtype fp32
check --workers 8 --leaves 2 --trees 2 --loss 2 --dtype int32
check --workers 5 --leaves 2 --trees 3 --loss 2 --dtype fp32

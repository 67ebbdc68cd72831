#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netagg-plan's GRID and Scheme 1 plans of GRID's example on processes in network namespaces
# (scripts/netns/grid-netns.sh): every worker verifies its sum over the planned routes (no other
# route exists) and every aggregator of the plan completed rounds. The rate against the plan's
# prediction is printed, not checked: it depends on how busy the machine is, and is measured by
# `bash scripts/netns/grid-netns.sh BUILD --policy all` (docs/routing.md). Exit 77 (skipped) without
# root.
set -euo pipefail
build=$1
[ "$(id -u)" = 0 ] || { echo "grid_netns_test: skipped: needs root (network namespaces)"; exit 77; }
command -v tc > /dev/null || { echo "grid_netns_test: skipped: tc (iproute2) is not installed"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
for policy in grid scheme1; do
  out=$(bash "$here/scripts/netns/grid-netns.sh" "$build" --policy "$policy" --bytes 3000000) || { echo "$out"; echo "FAILED: $policy"; exit 1; }
  OUT="$out" POLICY="$policy" python3 - <<'PY'
import json, os, sys
d = json.loads(os.environ["OUT"])
p = d["policies"][os.environ["POLICY"]]
bad = []
if d["verification"] != "ok" or not p["verified"]: bad.append("not verified")
if len(p["workers"]) != 8: bad.append(f"{len(p['workers'])} workers")
for name, a in p["aggregators"].items():
    if not a["completions"]: bad.append(f"{name} completed nothing")
print(("FAILED " if bad else "ok ") + os.environ["POLICY"]
      + f": measured {p['measured_mbit']:.2f} of {p['predicted_mbit_scaled']:.2f} Mbit/s"
      + " (not checked)"
      + "".join("\n  " + b for b in bad))
sys.exit(1 if bad else 0)
PY
done

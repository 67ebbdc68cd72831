#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two studies in the ns-3 fabric (docs/fabric.md, "Measured"), run by `make bench-fabric` after the
# worker sweep, as `bash scripts/bench/bench-fabric-studies.sh BUILD_DIR`:
#
# 1. Several trees on an oversubscribed fabric (sim/fabric/oversubscribed.json: 2:1 leaf-spine,
#    32 workers, 4 MiB, 30 % background load of 1 MiB TCP flows, per-flow ECMP): K = 1, 2, 4
#    trees with congestion control on and off, and the ring all-reduce on the same fabric; each
#    run stops after 200 ms of simulated time (unfinished then).
# 2. Congestion control against long DCTCP flows (sim/fabric/congestion.json: 8 long flows across
#    the fabric, all on spine 0's links with the all-reduce's tree): congestion control on;
#    off (contributions not ECN-capable: RED drops them at the marking threshold); and
#    ECN-capable but not reacting to the marks.
#
# Output: BUILD_DIR/bench/fabric-studies.json (one summary per run; raw results under
# BUILD_DIR/bench/fabric-studies/), BUILD_DIR/bench/fabric-studies.png, tables on stdout.
# BENCH_FABRIC_STUDIES_QUICK=1 runs the congestion study only.
set -euo pipefail

usage() { echo "usage: bash scripts/bench/bench-fabric-studies.sh BUILD_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "bench-fabric-studies: no build directory '$1'" >&2; exit 2; }
bin="$build/sim/fabric/netagg-fabric"
[ -x "$bin" ] || { echo "bench-fabric-studies: $bin not built (needs ns-3)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
raw="$build/bench/fabric-studies"
mkdir -p "$raw"

# variant NAME BASE KEY=JSON...: writes $raw/NAME.json, BASE with the keys (dotted paths) set.
variant() {
  local name=$1 base=$2
  shift 2
  /usr/bin/python3 - "$base" "$raw/$name.json" "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for kv in sys.argv[3:]:
    key, value = kv.split("=", 1)
    o = s
    parts = key.split(".")
    for p in parts[:-1]:
        o = o.setdefault(p, {})
    o[parts[-1]] = json.loads(value)
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
}

runs=()
O="$here/sim/fabric/oversubscribed.json"
C="$here/sim/fabric/congestion.json"
if [ "${BENCH_FABRIC_STUDIES_QUICK:-0}" != 1 ]; then
  # 200 ms of simulated time at most: a run without congestion control that has not finished
  # by then (the all-reduce takes well under a millisecond with it) is reported unfinished.
  for k in 1 2 4; do
    variant "trees-$k-cc-on" "$O" "job.trees=$k" "time_limit_s=0.2"
    variant "trees-$k-cc-off" "$O" "job.trees=$k" "job.congestion_control=false" "time_limit_s=0.2"
    runs+=("trees-$k-cc-on" "trees-$k-cc-off")
  done
  variant "ring-oversubscribed" "$O" 'modes=["ring"]' "time_limit_s=0.2"
  runs+=("ring-oversubscribed")
fi
variant "cc-on" "$C"
variant "cc-off" "$C" "job.congestion_control=false"
variant "cc-ignores-marks" "$C" "job.congestion_control=false" "job.ecn_capable=true"
runs+=("cc-on" "cc-off" "cc-ignores-marks")

status=0
for r in "${runs[@]}"; do
  echo "bench-fabric-studies: $r" >&2
  if ! "$bin" "$raw/$r.json" --quiet --out "$raw/$r.result.json"; then
    echo "bench-fabric-studies: $r FAILED (see $raw/$r.result.json)" >&2
    status=1
  fi
done

OUT="$build/bench" RAW="$raw" /usr/bin/python3 - "${runs[@]}" <<'PY'
import json, os, sys

raw, out = os.environ["RAW"], os.environ["OUT"]
rows = []
for name in sys.argv[1:]:
    path = os.path.join(raw, name + ".result.json")
    if not os.path.exists(path):
        continue
    r = json.load(open(path))
    mode = "ring" if "ring" in r else "innetwork"
    m = r[mode]
    q = m.get("queues", {})
    row = {"run": name, "mode": mode, "trees": r["scenario"]["job"]["trees"],
           "congestion_control": r["scenario"]["job"]["congestion_control"],
           "ecn_capable": r["scenario"]["job"]["ecn_capable"],
           "completed": m.get("completed"), "verified": m.get("verified", m.get("completed")),
           "completion_s": m.get("completion_s"), "retransmissions": m.get("retransmissions"),
           "ecn_marks": q.get("ecn_marks"), "drops": q.get("drops"),
           "busiest_mean_packets": q.get("busiest_mean_packets"), "max_packets": q.get("max_packets"),
           "wall_s": m.get("wall_s"), "result": path}
    lf = m.get("background", {}).get("long_flows")
    if lf:
        for w in ("before", "during"):
            for k in ("total_gbps", "min_gbps", "jain"):
                row[f"flows_{w}_{k}"] = lf[w][k]
    rows.append(row)
json.dump({"benchmark": "fabric-studies", "runs": rows},
          open(os.path.join(out, "fabric-studies.json"), "w"), indent=2)

def ms(v):
    return f"{v * 1e3:.3f}" if v else "-"
print(f"{'run':<22} {'ms':>8} {'ok':>5} {'retx':>7} {'marks':>7} {'drops':>7} {'q mean':>7} {'q max':>6}"
      f" {'flows before':>13} {'during':>7} {'min':>5} {'Jain':>5} {'wall s':>7}")
for x in rows:
    flows = ""
    if "flows_during_total_gbps" in x:
        flows = (f" {x['flows_before_total_gbps']:>13.1f} {x['flows_during_total_gbps']:>7.1f}"
                 f" {x['flows_during_min_gbps']:>5.1f} {x['flows_during_jain']:>5.2f}")
    print(f"{x['run']:<22} {ms(x['completion_s']):>8} {str(x['verified']):>5} {x['retransmissions'] or 0:>7}"
          f" {x['ecn_marks'] or 0:>7} {x['drops'] or 0:>7} {x['busiest_mean_packets'] or 0:>7.1f}"
          f" {x['max_packets'] or 0:>6}{flows} {x['wall_s'] or 0:>7.1f}")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot: matplotlib not installed, none drawn", file=sys.stderr)
    sys.exit(0)
trees = [x for x in rows if x["run"].startswith("trees-") or x["run"] == "ring-oversubscribed"]
cc = [x for x in rows if x["run"].startswith("cc-")]
fig, axes = plt.subplots(1, 3 if trees else 2, figsize=(14 if trees else 9, 4.2))
axes = list(axes)
if trees:
    a = axes.pop(0)
    labels = [x["run"].replace("trees-", "K=").replace("-cc-", ", CC ").replace("ring-oversubscribed", "ring")
              for x in trees]
    a.bar(range(len(trees)), [x["completion_s"] * 1e3 if x["completion_s"] else 0 for x in trees],
          color=["C0" if x["congestion_control"] else "C3" for x in trees])
    a.set_xticks(range(len(trees)))
    a.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    a.set_yscale("log")
    a.set_ylabel("all-reduce completion (ms, log)")
    a.set_title("2:1 leaf-spine, 30 % background, 4 MiB")
names = [x["run"].replace("cc-", "CC ") for x in cc]
a, b = axes
a.bar(range(len(cc)), [x["busiest_mean_packets"] for x in cc], color="C1")
a.set_xticks(range(len(cc)))
a.set_xticklabels(names, fontsize=8)
a.set_ylabel("busiest switch queue, mean packets")
a.set_title("queue occupancy during the all-reduce")
w = 0.38
b.bar([i - w / 2 for i in range(len(cc))], [x.get("flows_before_total_gbps", 0) for x in cc], w,
      label="before the all-reduce")
b.bar([i + w / 2 for i in range(len(cc))], [x.get("flows_during_total_gbps", 0) for x in cc], w,
      label="during it")
b.set_xticks(range(len(cc)))
b.set_xticklabels(names, fontsize=8)
b.set_ylabel("8 long DCTCP flows, total Gbit/s")
b.set_title("background throughput")
b.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "fabric-studies.png"), dpi=110)
print(f"bench-fabric-studies: {os.path.join(out, 'fabric-studies.json')}, "
      f"{os.path.join(out, 'fabric-studies.png')}")
PY
exit $status

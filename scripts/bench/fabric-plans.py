#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plans of netagg-plan executed in the ns-3 fabric (docs/fabric.md, "Plans in the fabric").

For each topology: netagg-plan writes its report (every policy's trees, weights and routes);
netagg-fabric runs each executable policy's plan on the same graph with the streams pinned to
their routes, the aggregators limited to the nodes' capacities and the workers paced at the
plan's rate; the measured rate per worker (tensor bits over the slowest worker's time) is
compared with the predicted one.

  fabric-plans.py --plan BUILD/plan/netagg-plan --fabric BUILD/sim/fabric/netagg-fabric \
      --out DIR [--topology FILE ...] [--fat-tree K ...] [--bytes N] [--check LOW HIGH]

Writes DIR/fabric-plans.json and prints a table. With --check, exits 1 unless every run
verified and measured/predicted is within [LOW, HIGH].
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plan", required=True)
    p.add_argument("--fabric", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--topology", action="append", default=[], help="a topology file")
    p.add_argument("--fat-tree", action="append", type=int, default=[],
                   help="a k-ary fat tree of netagg-plan's (--fat-tree K)")
    p.add_argument("--policies", default="scheme1,scheme2,grid")
    p.add_argument("--bytes", type=int, default=8 << 20, help="tensor bytes (int32)")
    p.add_argument("--check", nargs=2, type=float, metavar=("LOW", "HIGH"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)

    cases = [(os.path.splitext(os.path.basename(t))[0], ["--write-topology", None, t])
             for t in args.topology]
    cases += [(f"fat-tree-{k}", ["--write-topology", None, "--fat-tree", str(k)])
              for k in args.fat_tree]
    rows, failed = [], False
    for name, plan_args in cases:
        topo = os.path.join(args.out, f"{name}.topology.json")
        report = os.path.join(args.out, f"{name}.plan.json")
        plan_args[1] = topo
        # Jumbo frames, 1024 elements a packet: the headers are 1.3 % of the wire's bytes.
        subprocess.run([args.plan, *plan_args, "--json", report, "--elements-per-packet", "1024"],
                       check=True, stdout=subprocess.DEVNULL)
        plans = json.load(open(report))["policies"]
        for policy in args.policies.split(","):
            if not plans.get(policy, {}).get("executable"):
                continue
            scenario = {
                "name": f"{name}: {policy}",
                "topology": {"kind": "graph", "file": os.path.abspath(topo), "mtu": 9000,
                             "delay_us": 1},
                "queues": {"kind": "red-ecn", "ecn_threshold_packets": 65,
                           "capacity_packets": 1000},
                "job": {"tensor_bytes": args.bytes, "elements_per_packet": 1024, "window": 64,
                        "aggregation": "plan", "plan_file": os.path.abspath(report),
                        "policy": policy, "pace_gbps": "plan"},
                "modes": ["innetwork"], "time_limit_s": 10,
            }
            sfile = os.path.join(args.out, f"{name}.{policy}.scenario.json")
            rfile = os.path.join(args.out, f"{name}.{policy}.result.json")
            json.dump(scenario, open(sfile, "w"), indent=1)
            run = subprocess.run([args.fabric, sfile, "--quiet", "--out", rfile])
            if not os.path.exists(rfile):
                print(f"fabric-plans: {name} {policy}: no result (exit {run.returncode})",
                      file=sys.stderr)
                failed = True
                continue
            m = json.load(open(rfile))["innetwork"]
            row = {"topology": name, "policy": policy,
                   "predicted_gbps": m["plan"]["predicted_gbps"],
                   "measured_gbps": m["algorithm_gbps"],
                   "ratio": m["plan"]["measured_over_predicted"],
                   "verified": m["verified"], "completion_s": m["completion_s"],
                   "retransmissions": m["retransmissions"],
                   "aggregators": len(m["aggregators"]), "trees": len(m["job"]["trees"]),
                   "wall_s": m["wall_s"], "result": rfile}
            rows.append(row)
            if not row["verified"]:
                failed = True
            if args.check and not (args.check[0] <= row["ratio"] <= args.check[1]):
                failed = True
    json.dump({"benchmark": "fabric-plans", "runs": rows},
              open(os.path.join(args.out, "fabric-plans.json"), "w"), indent=2)
    print(f"{'topology':<16} {'policy':<8} {'trees':>5} {'predicted':>10} {'measured':>10} "
          f"{'ratio':>6} {'verified':>8} {'retx':>5} {'wall s':>7}")
    for r in rows:
        print(f"{r['topology']:<16} {r['policy']:<8} {r['trees']:>5} {r['predicted_gbps']:>10.4f} "
              f"{r['measured_gbps']:>10.4f} {r['ratio']:>6.3f} {str(r['verified']):>8} "
              f"{r['retransmissions']:>5} {r['wall_s']:>7.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises the resources of a Tofino program from the assembly (.bfa) that p4c's Tofino back
end writes: the MAU stages each pipeline uses, the stateful ALUs (registers) of every stage, the
tables of every stage, and the PHV containers each pipeline allocates, by kind (B/H/W: 8/16/32-bit
normal containers, TB/TH/TW: tagalong). Tofino 1 has 12 stages per pipeline, 4 stateful ALUs per
stage, and 64 B, 96 H, 64 W normal containers and 32 TB, 48 TH, 32 TW tagalong ones for both
pipelines together.

Usage: scripts/p4/p4-resources.py PIPE_DIR/netagg.bfa [--json OUT] [--max-stages 12]
Exit status 1 when a pipeline uses more stages than --max-stages (what Intel's assembler, bfas,
rejects: the compiler alone does not stop there), 2 on bad usage."""
import argparse
import collections
import json
import re
import sys

TOFINO1_CONTAINERS = {"B": 64, "H": 96, "W": 64, "TB": 32, "TH": 48, "TW": 32}


def summarise(text):
    stages = collections.OrderedDict()   # (gress, stage) -> {"stateful": [...], "tables": [...]}
    current = None
    for line in text.split("\n"):
        m = re.match(r"^stage (\d+) (ingress|egress):", line)
        if m:
            current = (m.group(2), int(m.group(1)))
            stages[current] = {"stateful": [], "tables": []}
            continue
        if re.match(r"^\S", line):
            current = None
            continue
        if current is None:
            continue
        m = re.match(r"^  (\w+) ([^:\s]+)(?: \d+)?:\s*$", line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "stateful":
            stages[current]["stateful"].append(name.rsplit(".", 1)[-1])
        elif kind in ("exact_match", "ternary_match", "hash_action", "gateway", "phase0_match"):
            stages[current]["tables"].append(name.split("$")[0])
    containers = {}
    gress = None
    for line in text.split("\n"):
        m = re.match(r"^phv (ingress|egress):", line)
        if m:
            gress = m.group(1)
            containers[gress] = set()
            continue
        if re.match(r"^\S", line):
            gress = None
        if gress:
            containers[gress].update(re.findall(r"\b(T?[BHW]\d+)\b", line))
    result = {"pipelines": {}}
    for g in ("ingress", "egress"):
        # the stages the assembly has for the pipeline: what bfas counts against the limit
        used = [s for (gg, s) in stages if gg == g]
        per_stage = {s: {"stateful_alus": v["stateful"], "tables": sorted(set(v["tables"]))}
                     for (gg, s), v in stages.items() if gg == g}
        kinds = collections.Counter(re.match(r"T?[BHW]", c).group(0) for c in containers.get(g, ()))
        result["pipelines"][g] = {
            "stages_used": (max(used) + 1) if used else 0,
            "stateful_alus": sum(len(v["stateful_alus"]) for v in per_stage.values()),
            "stages": per_stage,
            "phv_containers": dict(sorted(kinds.items())),
        }
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bfa")
    ap.add_argument("--json")
    ap.add_argument("--max-stages", type=int, default=12)
    args = ap.parse_args()
    try:
        text = open(args.bfa).read()
    except OSError as e:
        print(f"p4-resources: {e}", file=sys.stderr)
        return 2
    r = summarise(text)
    status = 0
    for g, p in r["pipelines"].items():
        print(f"{g}: {p['stages_used']} of {args.max_stages} stages, "
              f"{p['stateful_alus']} stateful ALUs")
        for s, v in sorted(p["stages"].items()):
            print(f"  stage {s:2}: {len(v['stateful_alus'])} stateful ALUs "
                  f"{' '.join(v['stateful_alus'])}")
        print("  PHV containers: " + ", ".join(
            f"{k} {n}" for k, n in p["phv_containers"].items()))
        if p["stages_used"] > args.max_stages:
            print(f"p4-resources: {g} uses {p['stages_used']} stages, more than "
                  f"{args.max_stages}", file=sys.stderr)
            status = 1
    total = collections.Counter()
    for p in r["pipelines"].values():
        total.update(p["phv_containers"])
    print("PHV containers, both pipelines: " + ", ".join(
        f"{k} {total.get(k, 0)} of {n}" for k, n in TOFINO1_CONTAINERS.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1, sort_keys=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Plots BUILD/bench/plan.json (scripts/bench/bench-plan.sh): each policy's rate per worker on fat trees
# of growing k (log scale), and the solve times.
#
#   python3 scripts/bench/plot-plan.py BUILD/bench/plan.json OUT.png
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"scheme1": "Scheme 1 (no aggregation)", "scheme2": "Scheme 2 (nearest switch)",
          "grid": "GRID (rounding)", "lp": "LP bound"}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot-plan.py plan.json OUT.png")
    data = json.load(open(sys.argv[1]))
    results = data["results"]
    ks = sorted({r["k"] for r in results})
    fig, (rates, times) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.2
    for i, policy in enumerate(LABELS):
        values = [next(r["rate_gbps"] for r in results if r["k"] == k and r["policy"] == policy)
                  for k in ks]
        xs = [j + (i - 1.5) * width for j in range(len(ks))]
        rates.bar(xs, values, width, label=LABELS[policy])
        for x, v in zip(xs, values):
            rates.text(x, v * 1.08, f"{v:.3g}", ha="center", fontsize=7)
    rates.set_yscale("log")
    top = max(r["rate_gbps"] for r in results)
    rates.set_ylim(top=top * 40)  # room for the legend above the bars
    rates.set_xticks(range(len(ks)))
    rates.set_xticklabels([f"k={k}\n{next(r['workers'] for r in results if r['k'] == k)} workers"
                           for k in ks])
    rates.set_ylabel("rate per worker (Gbit/s)")
    traffic = data.get("options", {}).get("traffic", "upward-only")
    rates.set_title(f"Fat trees: 10 Gbit/s links ({traffic})")
    rates.legend(fontsize=8, ncol=2, loc="upper center")

    for policy in ("scheme1", "scheme2", "grid"):
        values = [next(r["seconds"] for r in results if r["k"] == k and r["policy"] == policy)
                  for k in ks]
        times.plot(ks, values, marker="o", label=LABELS[policy])
    lp = [next(r["lp_seconds"] for r in results if r["k"] == k and r["policy"] == "grid")
          for k in ks]
    times.plot(ks, lp, marker="x", linestyle="--", label="GRID's LP (part of GRID)")
    times.set_xscale("log", base=2)
    times.set_yscale("log")
    times.set_xticks(ks)
    times.set_xticklabels([str(k) for k in ks])
    times.set_xlabel("k")
    times.set_ylabel("seconds")
    times.set_title("Solve time (one core)")
    times.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""The benchmarks' figures, drawn with matplotlib (Debian's python3-matplotlib) into PNG files."""
from . import stats


def pyplot():
    """matplotlib.pyplot on the Agg back end (no display), or None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def shaped_plot(plt, report, workers, rates, dtypes, size, path):
    """bench-shaped.sh: time against workers, one panel per link rate: the ring, the in-network
    bound drawn from it, netagg per element type."""
    rows = report["rows"]
    fig, axes = plt.subplots(1, len(rates), figsize=(5 * len(rates), 4), squeeze=False)
    for ax, mbit in zip(axes[0], rates):
        sel = [r for r in rows if r["link_mbit"] == mbit]
        ring = {r["workers"]: r["ring_seconds"] for r in sel if r["ring_seconds"]}
        ax.plot(sorted(ring), [ring[n] for n in sorted(ring)], "o-", label="Gloo ring")
        ax.plot(sorted(ring), [ring[n] * stats.in_network_bound(n) for n in sorted(ring)], "k--",
                label="bound: ring × N/(2(N−1))")
        for dtype in dtypes:
            pts = sorted((r["workers"], r["netagg_seconds"]) for r in sel
                         if r["dtype"] == dtype and r["netagg_seconds"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "s-", label=f"netagg {dtype}")
        ax.set_title(f"{mbit} Mbit/s per link, {size >> 20} MiB")
        ax.set_xlabel("workers")
        ax.set_ylabel("seconds per all-reduce")
        ax.set_xticks(workers)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def dpdk_plot(plt, dpdk, transports, path):
    """bench.sh's DPDK comparison: per rank count, the median time of one all-reduce against the
    size and the packets a worker sends per CPU second inside its all-reduces, one line per
    transport that ran. `transports`: (raw name, report key, label) as summary.DPDK_TRANSPORTS."""
    rows = dpdk["rows"]
    ranks = sorted({r["ranks"] for r in rows})
    fig, axes = plt.subplots(2, len(ranks), figsize=(5.5 * len(ranks), 7.5), squeeze=False)
    for col, n in enumerate(ranks):
        sel = sorted((r for r in rows if r["ranks"] == n), key=lambda r: r["bytes"])
        for _, key, label in transports:
            pts = [(r["bytes"], r[key]) for r in sel if (r.get(key) or {}).get("seconds_median")]
            if not pts:
                continue
            sizes = [b for b, _ in pts]
            axes[0][col].plot(sizes, [t["seconds_median"] * 1e3 for _, t in pts], "o-",
                              label=label)
            rate = [(b, t.get("worker_packets_per_cpu_second")) for b, t in pts]
            rate = [(b, v) for b, v in rate if v]
            axes[1][col].plot([b for b, _ in rate], [v / 1e3 for _, v in rate], "s-", label=label)
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tensor bytes")
            ax.legend(fontsize=8)
        axes[0][col].set_yscale("log")
        axes[0][col].set_ylabel("ms per all-reduce (median, slowest rank)")
        axes[0][col].set_title(f"{n} ranks on veths")
        axes[1][col].set_ylabel("worker packets per CPU second, thousands")
        axes[1][col].set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def fabric_plot(plt, report, path):
    """bench-fabric.sh: completion time against N (in-network, ring, their ideals) and the ring's
    time over the in-network time against the bound 2(N-1)/N."""
    rows = report["runs"]
    n = [x["workers"] for x in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.plot(n, [x["innetwork_s"] * 1e3 for x in rows], "o-",
           label="in-network (tree of switch models)")
    a.plot(n, [x["ring_s"] * 1e3 for x in rows], "s-", label="ring all-reduce (TCP)")
    a.plot(n, [x["ideal_innetwork_s"] * 1e3 for x in rows], ":", color="C0", label="S / host link")
    a.plot(n, [x["ideal_ring_s"] * 1e3 for x in rows], ":", color="C1",
           label="2(N-1)/N · S / host link")
    a.set_xscale("log", base=2)
    a.set_xlabel("workers N")
    a.set_ylabel("completion time (ms, slowest worker)")
    a.set_title(f"all-reduce of {rows[0]['tensor_bytes'] >> 20} MiB, 100 Gbit/s hosts")
    a.set_ylim(bottom=0)
    a.legend(fontsize=8)
    b.plot(n, [x["ring_over_innetwork"] for x in rows], "o-", label="measured ring / in-network")
    b.plot(n, [x["bound"] for x in rows], "--", label="bound 2(N-1)/N (bytes per worker)")
    b.set_xscale("log", base=2)
    b.set_xlabel("workers N")
    b.set_ylabel("ring time / in-network time")
    b.set_ylim(bottom=0)
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def fabric_studies_plot(plt, report, path):
    """bench-fabric-studies.sh: the trees' completion times on the oversubscribed fabric (when
    run), and per congestion control the busiest queue and the long flows' throughput."""
    rows = report["runs"]
    trees = [x for x in rows if x["run"].startswith("trees-") or x["run"] == "ring-oversubscribed"]
    cc = [x for x in rows if x["run"].startswith("cc-")]
    fig, axes = plt.subplots(1, 3 if trees else 2, figsize=(14 if trees else 9, 4.2))
    axes = list(axes)
    if trees:
        a = axes.pop(0)
        labels = [x["run"].replace("trees-", "K=").replace("-cc-", ", CC ")
                  .replace("ring-oversubscribed", "ring") for x in trees]
        a.bar(range(len(trees)),
              [x["completion_s"] * 1e3 if x["completion_s"] else 0 for x in trees],
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
    b.bar([i - w / 2 for i in range(len(cc))], [x.get("flows_before_total_gbps", 0) for x in cc],
          w, label="before the all-reduce")
    b.bar([i + w / 2 for i in range(len(cc))], [x.get("flows_during_total_gbps", 0) for x in cc],
          w, label="during it")
    b.set_xticks(range(len(cc)))
    b.set_xticklabels(names, fontsize=8)
    b.set_ylabel("8 long DCTCP flows, total Gbit/s")
    b.set_title("background throughput")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


PLAN_LABELS = {"scheme1": "Scheme 1 (no aggregation)", "scheme2": "Scheme 2 (nearest switch)",
               "grid": "GRID (rounding)", "lp": "LP bound"}


def plan_plot(plt, data, path):
    """bench-plan.sh: each policy's rate per worker on fat trees of growing k (log scale), and the
    solve times."""
    results = data["results"]
    ks = sorted({r["k"] for r in results})
    fig, (rates, times) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.2
    for i, policy in enumerate(PLAN_LABELS):
        values = [next(r["rate_gbps"] for r in results if r["k"] == k and r["policy"] == policy)
                  for k in ks]
        xs = [j + (i - 1.5) * width for j in range(len(ks))]
        rates.bar(xs, values, width, label=PLAN_LABELS[policy])
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
        times.plot(ks, values, marker="o", label=PLAN_LABELS[policy])
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
    fig.savefig(path, dpi=120)

# SPDX-License-Identifier: Apache-2.0
"""The JSON document of each benchmark, from what its programs left in its raw folder.

Each function takes the raw outputs' location and the run's shape (what the script ran) and
returns the document the script writes; nothing here prints or draws.
"""
import json
import os
import platform
import statistics

from . import machine, parse, stats

# The "command" of the documents whose script takes nothing but the build folder.
PACKETS_COMMAND = "bash scripts/bench/bench-packets.sh BUILD_DIR"
SHAPED_COMMAND = "bash scripts/bench/bench-shaped.sh BUILD_DIR"
COMPETING_COMMAND = "bash scripts/bench/bench-competing.sh BUILD_DIR"

DPDK_SETUP = ("veths and a bridge in network namespaces (scripts/netns/dpdk-netns.sh): workers on "
              "kernel UDP, on DPDK over net_af_packet or on DPDK over net_af_xdp (DPDK 22.11, "
              "--no-huge; XDP socket in copy mode) on the same veth, netagg-switchd on kernel "
              "UDP, or on its own XDP socket (--dpdk) with workers on net_af_xdp; 256 elements "
              "per packet, window 64")

# The transports of the DPDK comparison: the raw files' name part, the report's key, the label.
DPDK_TRANSPORTS = (("udp", "kernel_udp", "kernel UDP"),
                   ("dpdk", "dpdk_af_packet", "DPDK af_packet"),
                   ("xdp", "dpdk_af_xdp", "DPDK af_xdp"),
                   ("xdpsw", "dpdk_af_xdp_switch_af_xdp", "DPDK af_xdp, switch af_xdp"))


class BenchError(Exception):
    """A run whose figures would be wrong (a worker that did not verify): the script stops."""


# ---- bench.sh: netagg against Gloo, the codec, the FPGA RTL, DPDK against kernel UDP ----------

def allreduce_rows(runs, ranks_list, sizes):
    """netagg through the switch model against Gloo's ring, one row per (ranks, size): both
    summaries, the time ratios of the medians and of the minima, the raw reports."""
    rows = []
    for ranks in ranks_list:
        for size in sizes:
            gloo = runs.load(f"gloo-r{ranks}-b{size}")
            netagg_name = f"netagg-r{ranks}-b{size}"
            netagg = runs.load(netagg_name)
            # gloo_allreduce leaves its warm-up out of seconds_all itself; netagg-local has no
            # warm-up option, so the script ran warmup + iterations and the warm-up goes here.
            g = stats.summarize(gloo, size)
            n = stats.summarize(netagg, size, runs.warmup(netagg_name))
            if netagg is not None:
                netagg["warmup_dropped_here"] = runs.warmup(netagg_name)
            row = {"ranks": ranks, "bytes": size, "gloo_ring": g, "netagg_switch_sim": n}
            for stat in ("median", "min"):
                row[f"time_ratio_netagg_over_gloo_{stat}"] = stats.time_ratio(n, g,
                                                                              "seconds_" + stat)
            row["raw"] = {"gloo": gloo, "netagg": netagg}
            rows.append(row)
    return rows


def codec_rows(report):
    """Google Benchmark's report of codec_bench: each codec benchmark's GB/s against memcpy's of
    the same buffer (the same benchmark arguments)."""
    runs = [b for b in report.get("benchmarks", [])
            if b.get("run_type", "iteration") == "iteration" and "bytes_per_second" in b]

    def args_of(name):
        return name.split("/", 1)[1] if "/" in name else ""

    memcpy = {args_of(b["name"]): b for b in runs if "memcpy" in b["name"].lower()}
    rows = []
    for b in runs:
        if "memcpy" in b["name"].lower():
            continue
        ref = memcpy.get(args_of(b["name"]))
        gbps = b["bytes_per_second"] / 1e9
        ref_gbps = ref["bytes_per_second"] / 1e9 if ref else None
        rows.append({"name": b["name"], "gb_per_second": gbps,
                     "memcpy_name": ref["name"] if ref else None,
                     "memcpy_gb_per_second": ref_gbps,
                     "ratio_over_memcpy": gbps / ref_gbps if ref_gbps else None})
    return rows


def dpdk_rows(runs, ranks_list, sizes):
    """Kernel UDP, DPDK on net_af_packet, DPDK on net_af_xdp (the switch on kernel UDP) and both
    on net_af_xdp, on the same veths, one row per (ranks, size): each transport's summary of the slowest worker per iteration, with the
    workers' retransmissions and packets and what a packet cost (stats.packet_rates), and the
    time ratios of each DPDK driver over kernel UDP."""
    rows = []
    for ranks in ranks_list:
        for size in sizes:
            row = {"ranks": ranks, "bytes": size}
            for transport, key, _ in DPDK_TRANSPORTS:
                name = f"veth-{transport}-r{ranks}-b{size}"
                workers = runs.load(name)
                merged = stats.slowest_rank(workers, runs.warmup(name))
                summary = stats.summarize(merged, size)
                if summary and merged:
                    summary["retransmissions"] = merged.get("retransmissions")
                    summary["packets_sent"] = merged.get("packets_sent")
                    rates = stats.packet_rates(workers, runs.number(name, ".switchd.cpu"))
                    if rates:
                        summary.update(rates)
                row[key] = summary
                row.setdefault("raw", {})[transport] = workers
            u = row["kernel_udp"] or {}
            for transport, key, _ in DPDK_TRANSPORTS[1:]:
                for stat in ("median", "min"):
                    row[f"time_ratio_{transport}_over_udp_{stat}"] = stats.time_ratio(
                        row[key] or {}, u, "seconds_" + stat)
            rows.append(row)
    return rows


def bench_machine(load_before, load_after):
    """The machine part of bench.json."""
    return {
        "cpu": machine.cpu_model() or platform.processor() or None,
        "logical_cpus": os.cpu_count(),
        "kernel": platform.release(),
        "network": "loopback (127.0.0.1)",
        "note": "the switch model runs in software on the same CPUs as the workers",
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def bench_build(build, repo):
    """The build part of bench.json."""
    return {
        "dir": build,
        "type": parse.cmake_cache(build, "CMAKE_BUILD_TYPE"),
        "compiler": machine.compiler_version(build),
        "git_commit": machine.git(repo, "rev-parse", "HEAD"),
        "git_dirty": bool(machine.git(repo, "status", "--porcelain")),
    }


def bench_report(runs, ranks_list, sizes, dpdk_ranks=(), dpdk_sizes=(), dpdk_skipped=None,
                 missing=(), command="", date="", machine_info=None, build_info=None):
    """bench.json ("netagg-bench/1"): every part of a bench.sh run. A measurement that failed
    leaves its part None and an entry in "failures"; a program that was not built is named in
    "missing"."""
    allreduce = allreduce_rows(runs, ranks_list, sizes)
    codec, codec_context = [], None
    codec_raw = runs.load("codec")
    if isinstance(codec_raw, dict):
        codec_context = codec_raw.get("context")
        codec = codec_rows(codec_raw)
    fpga = [r for r in (runs.load("fpga_rtl_fp32"), runs.load("fpga_rtl_int32")) if r is not None]
    dpdk = dpdk_rows(runs, dpdk_ranks or (), dpdk_sizes)
    return {
        "schema": "netagg-bench/1",
        "date": date,
        "command": command,
        "machine": machine_info,
        "build": build_info,
        "allreduce": allreduce,
        "codec": codec,
        "codec_context": codec_context,
        "fpga": fpga,
        "dpdk_vs_udp": {"setup": DPDK_SETUP, "skipped": dpdk_skipped or None, "rows": dpdk},
        "missing": list(missing),
        "failures": runs.failures,
    }


# ---- bench-packets.sh: packets per CPU second ---------------------------------------------------

def packets_report(raw, workers):
    """packets.json: the reflector's and its load's packets per CPU second, and netagg-switchd's
    and the workers' in the runs with UDP offload ("offload"), without ("plain") and with two
    switch threads ("threads"), each against the reflector's or the load's."""
    refl = parse.last_json(f"{raw}/reflector.out")
    loads = [parse.last_json(f"{raw}/load{r}.json") for r in range(workers)]
    reflector_pps = refl["packets_in"] / refl["cpu_seconds"]
    load_pps = sum(l["packets"] for l in loads) / sum(l["cpu_seconds"] for l in loads)

    def netagg(label):
        reports = [parse.last_json(f"{raw}/{label}/worker{r}.json") for r in range(workers)]
        with open(f"{raw}/{label}/switchd.json") as f:
            sw = json.load(f)
        with open(f"{raw}/{label}/switchd.cpu") as f:
            sw_cpu = float(f.read())
        switchd_pps = sw["packets_in"] / sw_cpu
        worker_pps = (sum(w["packets_sent"] + w["retransmissions"] for w in reports)
                      / sum(w["cpu_seconds"] for w in reports))
        return {
            "switchd_packets_per_cpu_second": switchd_pps,
            "ratio_switchd_over_reflector": switchd_pps / reflector_pps,
            "worker_packets_per_cpu_second": worker_pps,
            "ratio_worker_over_load": worker_pps / load_pps,
            "switchd": {"packets_in": sw["packets_in"], "cpu_seconds": sw_cpu,
                        "cross_thread": sw.get("cross_thread", 0)},
            "workers": [{k: w.get(k) for k in ("packets_sent", "retransmissions", "cpu_seconds",
                                               "seconds", "verification")} for w in reports],
        }

    offload, plain, threads = netagg("offload"), netagg("plain"), netagg("threads")
    return {
        "reflector_packets_per_cpu_second": reflector_pps,
        "load_packets_per_cpu_second": load_pps,
        # UDP GSO/GRO on (the default) ...
        "switchd_packets_per_cpu_second": offload["switchd_packets_per_cpu_second"],
        "ratio_switchd_over_reflector": offload["ratio_switchd_over_reflector"],
        "worker_packets_per_cpu_second": offload["worker_packets_per_cpu_second"],
        "ratio_worker_over_load": offload["ratio_worker_over_load"],
        "offload": offload,
        # ... and off (switchd --no-udp-offload, NETAGG_UDP_OFFLOAD=0)
        "no_offload": plain,
        # ... and switchd --threads 2 (slots split between two threads), with offload
        "threads_2": threads,
        "reflector": refl, "loads": loads,
        "command": PACKETS_COMMAND,
    }


# ---- bench-shaped.sh: netagg against the ring on shaped links -----------------------------------

def shaped_netagg(raw, name, workers):
    """netagg's time of run NAME: the upper median over the iterations (the first, a warm-up,
    dropped) of the slowest worker's time; None when a worker failed. With the workers' reports
    (None for a missing one)."""
    ranks = [parse.last_json_or_none(f"{raw}/{name}.w{r}.json") for r in range(workers)]
    if any(r is None or r.get("verification") != "ok" for r in ranks):
        return None, ranks
    per_iteration = stats.slowest_per_iteration(r["seconds_all"] for r in ranks)[1:]
    return statistics.median_high(per_iteration), ranks


def shaped_report(raw, size, workers_list, rates, dtypes, iterations):
    """shaped.json: per worker count, link rate and netagg element type, netagg's and the ring's
    time, the share of the link each used, their ratio and the ratio to the in-network bound."""
    rows, failures = [], []
    for n in workers_list:
        bound = stats.in_network_bound(n)
        for mbit in rates:
            gloo = parse.last_json_or_none(f"{raw}/gloo-n{n}-r{mbit}.r0.json")
            gloo_s = gloo.get("seconds_median") if gloo else None
            if gloo_s is None:
                failures.append(f"gloo n={n} {mbit} Mbit/s")
            for dtype in dtypes:
                t, ranks = shaped_netagg(raw, f"netagg-{dtype}-n{n}-r{mbit}", n)
                if t is None:
                    failures.append(f"netagg {dtype} n={n} {mbit} Mbit/s")
                ratio = t / gloo_s if t and gloo_s else None
                link_s = stats.link_seconds(size, mbit)
                rows.append({
                    "workers": n, "link_mbit": mbit, "bytes": size, "dtype": dtype,
                    "netagg_seconds": t, "ring_seconds": gloo_s,
                    "netagg_link_share": link_s / t if t else None,
                    "ring_link_share": link_s * 2 * (n - 1) / n / gloo_s if gloo_s else None,
                    "ratio_netagg_over_ring": ratio, "bound": bound,
                    "ratio_over_bound": ratio / bound if ratio else None,
                    "retransmissions": sum(r.get("retransmissions", 0) for r in ranks if r),
                    "spurious_retransmissions":
                        sum(r.get("spurious_retransmissions", 0) for r in ranks if r),
                    "packets_sent": sum(r.get("packets_sent", 0) for r in ranks if r),
                })
    return {"rows": rows, "failures": failures, "command": SHAPED_COMMAND,
            "iterations": iterations}


# ---- bench-competing.sh: a TCP flow through a worker's link -------------------------------------

def competing_netagg(raw, name, workers):
    """netagg's run NAME: the slowest worker's median time, the retransmissions and congestion
    window cuts of all; None when a report is missing or a worker did not verify."""
    try:
        reports = [parse.last_json(f"{raw}/{name}.w{r}.json") for r in range(workers)]
    except (OSError, ValueError):
        return None
    if any(w.get("verification") != "ok" for w in reports):
        return None
    seconds = max(stats.median(w.get("seconds_all") or [w["seconds"]]) for w in reports)
    return {"seconds": seconds, "retransmissions": sum(w.get("retransmissions", 0) for w in reports),
            "window_cuts": sum(w.get("window_cuts", 0) for w in reports)}


def competing_report(raw, workers, mbit, size):
    """competing.json: the flow alone; per congestion control (cc0 off, cc1 on) netagg alone,
    netagg with the flow and the flow with netagg."""
    result = {"workers": workers, "mbit": mbit, "bytes": size,
              "flow_alone_mbit": parse.iperf_mbit(f"{raw}/alone.iperf.json"),
              "command": COMPETING_COMMAND}
    for cc in (0, 1):
        result[f"cc{cc}"] = {"netagg_alone": competing_netagg(raw, f"netagg-cc{cc}", workers),
                             "netagg_with_flow": competing_netagg(raw, f"both-cc{cc}", workers),
                             "flow_with_netagg_mbit": parse.iperf_mbit(
                                 f"{raw}/both-cc{cc}.iperf.json")}
    return result


# ---- bench-fallback.sh: the host fallback against the ring --------------------------------------

def fallback_report(folder, sizes, workers=4):
    """fallback.json from FOLDER's host-, gloo-, death- and live-BYTES.json: per size the median of
    the host-mode all-reduces after the first (which includes the detection) against the ring's,
    and the all-reduce whose aggregator died against a live one. BenchError when a run did not
    verify."""
    rows = []
    for b in sizes:
        def load(name):
            with open(f"{folder}/{name}-{b}.json") as f:
                return json.load(f)
        host, gloo, death, live = load("host"), load("gloo"), load("death"), load("live")
        for name, run in (("host", host), ("death", death), ("live", live)):
            if run["verification"] != "ok":
                raise BenchError(f"bench-fallback: {name} run of {b} bytes: "
                                 f"{run['verification']}: {run.get('problems')}")
        later = host["seconds_all"][1:]
        rows.append({
            "bytes": b,
            "host_mode_seconds_median": stats.median(later),
            "gloo_ring_seconds_median": gloo["seconds_median"],
            "host_over_gloo": stats.median(later) / gloo["seconds_median"],
            "death_to_completion_seconds": death["seconds"],
            "live_seconds": live["seconds"],
            "death_fallback_seconds": death["fallback_seconds"],
        })
    return {"workers": workers, "rows": rows}


# ---- bench-bmv2.sh: BMv2 against elements per packet --------------------------------------------

def bmv2_row(run):
    """One `bmv2-netns.sh allreduce` summary as a row: the slowest worker's time, the switch's
    packet rate, the retransmissions."""
    slowest = max(w["seconds"] for w in run["ranks"])
    packets = run["switch_counters"].get("packets_in", 0)
    return {"elements_per_packet": run["elements_per_packet"], "seconds": round(slowest, 3),
            "elements_per_second": round(run["count"] / slowest), "switch_packets_in": packets,
            "switch_packets_per_second": round(packets / slowest),
            "retransmissions": sum(w["retransmissions"] for w in run["ranks"])}


def bmv2_report(runs):
    """bmv2.json from the runs' summaries (the first one gives dtype, count and loss)."""
    return {"workers": 4, "dtype": runs[0]["dtype"], "count": runs[0]["count"],
            "loss_percent": runs[0]["loss_percent"], "runs": [bmv2_row(r) for r in runs]}


# ---- bench-fabric.sh and bench-fabric-studies.sh: the ns-3 fabric ------------------------------

def fabric_row(result, path):
    """One netagg-fabric result of the worker sweep (in-network and ring) as a row."""
    i, g = result.get("innetwork", {}), result.get("ring", {})
    return {
        "workers": result["workers"],
        "tensor_bytes": result["tensor_bytes"],
        "topology": result["scenario"]["topology"],
        "trees": result["scenario"]["job"]["trees"],
        "innetwork_s": i.get("completion_s"),
        "innetwork_verified": i.get("verified"),
        "innetwork_retransmissions": i.get("retransmissions"),
        "innetwork_ce_marks": i.get("queues", {}).get("ecn_marks"),
        "ring_s": g.get("completion_s"),
        "ring_completed": g.get("completed"),
        "ring_over_innetwork": result.get("ring_over_innetwork"),
        "bound": result["bound"],
        "ideal_innetwork_s": result["ideal"]["innetwork_s"],
        "ideal_ring_s": result["ideal"]["ring_s"],
        "wall_s": (i.get("wall_s") or 0) + (g.get("wall_s") or 0),
        "simulated_packets": (i.get("simulated_packets") or 0) + (g.get("simulated_packets") or 0),
        "result": path,
    }


def fabric_report(paths):
    """fabric.json: one row per result file, by worker count, with the simulator's packets per
    wall-clock second."""
    rows = []
    for path in paths:
        with open(path) as f:
            rows.append(fabric_row(json.load(f), path))
    rows.sort(key=lambda x: x["workers"])
    for x in rows:
        x["simulated_packets_per_wall_s"] = x["simulated_packets"] / x["wall_s"] if x["wall_s"] else 0
    return {"benchmark": "fabric", "runs": rows}


def fabric_study_row(name, result, path):
    """One netagg-fabric result of the studies (one mode: ring or in-network) as a row, with the
    long background flows' throughput before and during the all-reduce when there were any."""
    mode = "ring" if "ring" in result else "innetwork"
    m = result[mode]
    q = m.get("queues", {})
    job = result["scenario"]["job"]
    row = {"run": name, "mode": mode, "trees": job["trees"],
           "congestion_control": job["congestion_control"],
           "ecn_capable": job["ecn_capable"],
           "completed": m.get("completed"), "verified": m.get("verified", m.get("completed")),
           "completion_s": m.get("completion_s"), "retransmissions": m.get("retransmissions"),
           "ecn_marks": q.get("ecn_marks"), "drops": q.get("drops"),
           "busiest_mean_packets": q.get("busiest_mean_packets"),
           "max_packets": q.get("max_packets"),
           "wall_s": m.get("wall_s"), "result": path}
    long_flows = m.get("background", {}).get("long_flows")
    if long_flows:
        for when in ("before", "during"):
            for k in ("total_gbps", "min_gbps", "jain"):
                row[f"flows_{when}_{k}"] = long_flows[when][k]
    return row


def fabric_studies_report(raw, names):
    """fabric-studies.json: the runs NAMES of which RAW has a NAME.result.json."""
    rows = []
    for name in names:
        path = os.path.join(raw, name + ".result.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            rows.append(fabric_study_row(name, json.load(f), path))
    return {"benchmark": "fabric-studies", "runs": rows}


# ---- bench-plan.sh: netagg-plan on fat trees ----------------------------------------------------

def plan_results(reports):
    """One entry per k and policy from netagg-plan's reports ({k: report}): the rate, its share of
    the LP bound, the solve time and the program sizes."""
    results = []
    for k in sorted(reports):
        report = reports[k]
        policies = report["policies"]
        bound = policies["lp"]["rate_gbps"]
        for name in ("scheme1", "scheme2", "grid", "lp"):
            p = policies[name]
            d = p["details"]
            entry = {"k": k, "hosts": k ** 3 // 4, "workers": report["topology"]["workers"],
                     "policy": name, "rate_gbps": p["rate_gbps"], "of_lp": p["rate_gbps"] / bound,
                     "seconds": p["seconds"], "status": p["status"],
                     "trees": len(p.get("trees", [])) if p["executable"] else None}
            if name == "grid":
                entry["single_tree_gbps"] = d["single_tree_gbps"]
                entry["rounding_seconds"] = d["rounding_seconds"]
                entry["lp_seconds"] = d["lp_seconds"]
                entry["lp_size"] = d["lp"]
            if name == "lp":
                entry["route_seconds"] = d["route_seconds"]
                entry["candidate_routes"] = d["candidate_routes"]
            if name == "scheme1":
                entry["milp_size"] = d["milp"]
            results.append(entry)
    return results


def plan_report(raw, wall, args):
    """plan.json from RAW/k<K>.json for every k of WALL ({k: netagg-plan's wall-clock seconds})."""
    reports = {}
    for k in sorted(wall):
        with open(os.path.join(raw, f"k{k}.json")) as f:
            reports[k] = json.load(f)
    last = reports[max(reports)]
    return {"command": f"netagg-plan --fat-tree K {args}".strip() + " --quiet --json ...",
            "options": last["options"], "machine": {"cpu": machine.cpu_model() or "",
                                                    "cores": os.cpu_count(),
                                                    "system": platform.platform()},
            "wall_seconds": wall, "results": plan_results(reports)}

# SPDX-License-Identifier: Apache-2.0
"""The text tables printed after each benchmark, from its JSON document. Each function returns the
lines to print."""

from .summary import DPDK_TRANSPORTS


def num(x, spec, missing="-"):
    """X formatted with SPEC, or MISSING for None."""
    return format(x, spec) if x is not None else missing


def size_text(b):
    """A byte count in the largest binary unit that divides it: "4 KiB", "16 MiB", "1000 B"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def ms_cell(s):
    """Seconds as milliseconds in a column of 10, "-" for None."""
    return f"{s * 1e3:10.3f}" if s is not None else f"{'-':>10}"


def ms_text(v):
    """Seconds as milliseconds, "-" for None or 0 (a run that did not finish)."""
    return f"{v * 1e3:.3f}" if v else "-"


# ---- bench.sh ------------------------------------------------------------------------------------

def comparison_table(rows, peer_key, ours_key, ratio_key, peer, ours):
    """Median and minimum time of a peer and of netagg per ranks and size, with their ratios."""
    lines = [f"{'ranks':>5} {'size':>9} {peer + ' med':>10} {ours + ' med':>10} {'ratio':>7} "
             f"{peer + ' min':>10} {ours + ' min':>10} {'ratio':>7} {peer + ' Gb/s':>10} "
             f"{ours + ' Gb/s':>11}  check {peer[0]}/{ours[0]}"]
    for row in rows:
        p = row[peer_key] or {}
        o = row[ours_key] or {}
        check = f"{p.get('verification') or '-'}/{o.get('verification') or '-'}"
        lines.append(
            f"{row['ranks']:>5} {size_text(row['bytes']):>9} {ms_cell(p.get('seconds_median'))} "
            f"{ms_cell(o.get('seconds_median'))} {num(row[ratio_key + '_median'], '7.2f'):>7} "
            f"{ms_cell(p.get('seconds_min'))} {ms_cell(o.get('seconds_min'))} "
            f"{num(row[ratio_key + '_min'], '7.2f'):>7} "
            f"{num(p.get('goodput_gbps'), '10.2f'):>10} {num(o.get('goodput_gbps'), '11.2f'):>11}"
            f"  {check}")
    return lines


def dpdk_table(rows):
    """Per ranks and size, a line per transport: the time of one all-reduce, its ratio to kernel
    UDP, and what a packet cost a worker and the switch daemon."""
    def rate(summary, key):
        value = (summary or {}).get(key)
        return f"{value / 1000:.0f}k" if value else "-"

    lines = ["Kernel UDP against DPDK on the same veths, fp32: time of one all-reduce (slowest "
             "rank) in ms, ratio of",
             "the medians = DPDK / kernel UDP (below 1: DPDK faster); packets the workers sent per "
             "CPU second of a",
             "worker inside its all-reduces and of netagg-switchd (software switch; on kernel UDP "
             "unless said).",
             f"{'ranks':>5} {'size':>9}  {'transport':<27}{'median':>9}{'min':>9}{'ratio':>7}"
             f"{'worker':>9}{'switchd':>9}  check"]
    for row in rows:
        for transport, key, label in DPDK_TRANSPORTS:
            if key not in row:
                continue
            t = row[key] or {}
            if not t and transport != "udp":
                continue  # not run (no XDP sockets here)
            ratio = None if transport == "udp" else row[f"time_ratio_{transport}_over_udp_median"]
            lines.append(
                f"{row['ranks']:>5} {size_text(row['bytes']):>9}  {label:<27}"
                f"{ms_text(t.get('seconds_median')):>9}{ms_text(t.get('seconds_min')):>9}"
                f"{num(ratio, '.2f'):>7}{rate(t, 'worker_packets_per_cpu_second'):>9}"
                f"{rate(t, 'switchd_packets_per_cpu_second'):>9}  {t.get('verification') or '-'}")
    return lines


def codec_table(codec, codec_context, sizes):
    """One row per codec benchmark, one column per buffer size: GB/s, and in brackets the ratio
    to memcpy of the same buffer. The all-reduce's sizes when the codec ran them too."""
    cells = {}
    for c in codec:
        what, _, arg = c["name"].partition("/")
        cells[(what, arg)] = c
    memcpy_rows = {}
    for c in codec:
        if c["memcpy_name"]:
            what, _, arg = c["memcpy_name"].partition("/")
            memcpy_rows[arg] = c["memcpy_gb_per_second"]
    args = list(dict.fromkeys(arg for _, arg in cells))
    wanted = [a for a in args if a.isdigit() and int(a) in sizes]
    columns = wanted or args
    names = list(dict.fromkeys(what for what, _ in cells))
    width = max(len(n) for n in names + ["memcpy"])

    def heading(arg):
        return size_text(int(arg)) if arg.isdigit() else arg

    lines = ["Codec: GB/s of fp32 buffer per second (in brackets: ratio to memcpy of the same buffer)",
             f"{'':<{width}}" + "".join(f"{heading(a):>16}" for a in columns),
             f"{'memcpy':<{width}}" + "".join(f"{num(memcpy_rows.get(a), '16.2f'):>16}"
                                              for a in columns)]
    for name in names:
        line = f"{name.removeprefix('BM_'):<{width}}"
        for a in columns:
            c = cells.get((name, a))
            text = (f"{c['gb_per_second']:.2f} ({num(c['ratio_over_memcpy'], '.2f')})"
                    if c else "-")
            line += f"{text:>16}"
        lines.append(line)
    if codec_context and codec_context.get("simd_target"):
        lines.append(f"codec SIMD target: {codec_context['simd_target']}")
    return lines


def fpga_table(fpga):
    """fpga_bench's figures per element type, and the simulator's speed when measured."""
    lines = [
        "FPGA aggregator RTL (Verilator), back-to-back packets on every port (target: 1 beat, i.e.",
        "16 lanes, per cycle per port; a packet's first beat is its headers):",
        f"{'dtype':>6} {'ports':>5} {'elem/pkt':>8} {'elem/cycle/port':>15} "
        f"{'beats/cycle/port':>16} {'latency cycles':>14} {'sim cycles/s':>12}"]
    for r in fpga:
        lines.append(
            f"{r['dtype']:>6} {r['ports']:>5} {r['elements_per_packet']:>8} "
            f"{r['elements_per_cycle_per_port']:>15.2f} "
            f"{r['ingress_beats_per_cycle_per_port']:>16.3f} "
            f"{r['latency_cycles_last_contribution_to_first_result']:>14} "
            f"{r['simulated_cycles_per_second']:>12.0f}")
    speeds = [r for r in fpga if r.get("speed")]
    if speeds:
        lines += [
            "",
            "Simulator speed, fast Verilator build against the traced one (same run, medians of",
            "interleaved repetitions; ratio = fast / traced):",
            f"{'dtype':>6} {'traffic':>13} {'traced cycles/s':>15} {'fast cycles/s':>13} "
            f"{'ratio':>6} {'skipped':>8}"]
        for r in speeds:
            for traffic in ("back_to_back", "in_rounds"):
                t = r["speed"][traffic]
                skipped = t["fast"]["cycles_skipped"] / t["fast"]["simulated_cycles"]
                lines.append(f"{r['dtype']:>6} {traffic:>13} "
                             f"{t['baseline']['simulated_cycles_per_second']:>15.0f} "
                             f"{t['fast']['simulated_cycles_per_second']:>13.0f} "
                             f"{t['ratio']:>6.2f} {skipped:>8.0%}")
    return lines


def bench_tables(report, sizes, out_path):
    """What bench.sh prints: the all-reduce comparison, the codec, the FPGA RTL, DPDK against
    kernel UDP (or why it was skipped), and where the JSON went."""
    lines = ["",
             "All-reduce of an fp32 tensor (sum): time of one operation, slowest rank, in ms.",
             "ratio = netagg time / gloo time (below 1: netagg faster), of the medians and of the "
             "minima.",
             "netagg runs through the switch model, software on the same cores as the workers."]
    lines += comparison_table(report["allreduce"], "gloo_ring", "netagg_switch_sim",
                              "time_ratio_netagg_over_gloo", "gloo", "netagg")
    if report["codec"]:
        lines += [""] + codec_table(report["codec"], report["codec_context"], sizes)
    if report["fpga"]:
        lines += [""] + fpga_table(report["fpga"])
    dpdk = report["dpdk_vs_udp"]
    if dpdk["rows"]:
        lines += [""] + dpdk_table(dpdk["rows"])
    elif dpdk["skipped"]:
        lines += ["", f"DPDK against kernel UDP: skipped ({dpdk['skipped']})"]
    lines += ["", f"JSON: {out_path}"]
    return lines


def bench_problems(report):
    """The failed measurements and the programs not built, for stderr."""
    lines = [f"FAILED: {f['name']} (exit {f['exit_status']}): {f['command']}"
             for f in report["failures"]]
    lines += [f"MISSING: {name} was not built, its figures are absent" for name in report["missing"]]
    return lines


# ---- bench-packets.sh ----------------------------------------------------------------------------

def packets_table(result, out_path):
    r_pps, l_pps = result["reflector_packets_per_cpu_second"], result["load_packets_per_cpu_second"]
    offload, plain, threads = result["offload"], result["no_offload"], result["threads_2"]
    lines = ["The cost of a packet on loopback, 4 senders with 64 packets of 1046 bytes in flight "
             "each:",
             f"{'':36}{'packets per CPU second':>24}{'ratio':>8}",
             f"{'reflector (plain UDP)':36}{r_pps:>24,.0f}"]
    for label, r in (("UDP GSO/GRO", offload), ("no offload", plain), ("2 threads", threads)):
        lines.append(f"{'netagg-switchd, ' + label:36}{r['switchd_packets_per_cpu_second']:>24,.0f}"
                     f"{r['ratio_switchd_over_reflector']:>8.2f}")
    lines.append(f"{'reflector load (sender)':36}{l_pps:>24,.0f}")
    for label, r in (("UDP GSO/GRO", offload), ("no offload", plain)):
        lines.append(f"{'netagg-allreduce worker, ' + label:36}"
                     f"{r['worker_packets_per_cpu_second']:>24,.0f}"
                     f"{r['ratio_worker_over_load']:>8.2f}")
    lines.append(f"JSON: {out_path}")
    return lines


# ---- bench-shaped.sh -----------------------------------------------------------------------------

def shaped_table(report, size):
    lines = [f"netagg against Gloo's ring on tbf-shaped links, {size} bytes, median of "
             f"{report['iterations']} (slowest worker). share: of the link rate used.",
             f"{'N':>2} {'Mbit/s':>6} {'dtype':>5} {'netagg s':>9} {'ring s':>8} "
             f"{'netagg share':>12} {'ring share':>10} {'ratio':>6} {'bound':>6} {'/bound':>6} "
             f"{'retx':>6}"]
    for r in report["rows"]:
        lines.append(
            f"{r['workers']:>2} {r['link_mbit']:>6} {r['dtype']:>5} "
            f"{num(r['netagg_seconds'], '9.3f')} {num(r['ring_seconds'], '8.3f')} "
            f"{num(r['netagg_link_share'], '12.2f')} {num(r['ring_link_share'], '10.2f')} "
            f"{num(r['ratio_netagg_over_ring'], '6.2f')} {r['bound']:6.3f} "
            f"{num(r['ratio_over_bound'], '6.2f')} {r['retransmissions']:>6}")
    return lines


# ---- bench-competing.sh --------------------------------------------------------------------------

def competing_table(result, out_path):
    def text(x, spec):
        return num(x, spec, missing="—")

    lines = [f"A TCP flow through worker 0's {result['mbit']} Mbit/s link against "
             f"{result['workers']} netagg workers (fp32, {result['bytes']} bytes):",
             f"  the flow alone: {text(result['flow_alone_mbit'], '.1f')} Mbit/s",
             f"{'congestion control':>20}{'netagg alone s':>16}{'with flow s':>13}"
             f"{'flow Mbit/s':>13}{'cuts':>7}"]
    for cc in (0, 1):
        r = result[f"cc{cc}"]
        a, b = r["netagg_alone"], r["netagg_with_flow"]
        lines.append(f"{('on' if cc else 'off'):>20}{text(a and a['seconds'], '.3f'):>16}"
                     f"{text(b and b['seconds'], '.3f'):>13}"
                     f"{text(r['flow_with_netagg_mbit'], '.1f'):>13}"
                     f"{text(b and b['window_cuts'], ''):>7}")
    lines.append(f"JSON: {out_path}")
    return lines


# ---- bench-fallback.sh ---------------------------------------------------------------------------

def fallback_table(report, out_path):
    lines = ["| bytes | host mode (median) | Gloo ring (median) | ratio | aggregator dies half-way "
             "| live | of which the session |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        lines.append(f"| {r['bytes']} | {1e3 * r['host_mode_seconds_median']:.2f} ms | "
                     f"{1e3 * r['gloo_ring_seconds_median']:.2f} ms | {r['host_over_gloo']:.2f} | "
                     f"{r['death_to_completion_seconds']:.3f} s | "
                     f"{1e3 * r['live_seconds']:.2f} ms | "
                     f"{r['death_fallback_seconds']:.3f} s |")
    lines.append(f"bench-fallback: {out_path}")
    return lines


# ---- bench-bmv2.sh -------------------------------------------------------------------------------

def bmv2_lines(report):
    """One line per run, printed on stderr as the runs are summarised."""
    return [f"{row['elements_per_packet']:>4} elements/packet: {row['seconds']:7.3f} s, "
            f"{row['switch_packets_per_second']:>6} packets/s into the switch, "
            f"{row['retransmissions']} retransmissions" for row in report["runs"]]


# ---- bench-fabric.sh and bench-fabric-studies.sh -------------------------------------------------

def fabric_table(report):
    rows = report["runs"]
    lines = [f"{'N':>5} {'in-network ms':>14} {'ring ms':>9} {'ring/in-net':>11} {'bound':>6} "
             f"{'ideal in-net':>12} {'verified':>8} {'wall s':>7} {'pkts/s':>8}"]
    for x in rows:
        ratio = f"{x['ring_over_innetwork']:.2f}" if x["ring_over_innetwork"] else "-"
        lines.append(
            f"{x['workers']:>5} {ms_text(x['innetwork_s']):>14} {ms_text(x['ring_s']):>9} "
            f"{ratio:>11} {x['bound']:>6.3f} {ms_text(x['ideal_innetwork_s']):>12} "
            f"{str(x['innetwork_verified']):>8} {x['wall_s']:>7.1f} "
            f"{x['simulated_packets_per_wall_s']:>8.0f}")
    done = [x["innetwork_s"] for x in rows if x["innetwork_s"] and x["innetwork_verified"]]
    if len(done) > 1:
        lines.append(f"in-network time over N: slowest / fastest = {max(done) / min(done):.4f}")
    return lines


def fabric_studies_table(report):
    lines = [f"{'run':<22} {'ms':>8} {'ok':>5} {'retx':>7} {'marks':>7} {'drops':>7} "
             f"{'q mean':>7} {'q max':>6} {'flows before':>13} {'during':>7} {'min':>5} "
             f"{'Jain':>5} {'wall s':>7}"]
    for x in report["runs"]:
        flows = ""
        if "flows_during_total_gbps" in x:
            flows = (f" {x['flows_before_total_gbps']:>13.1f} {x['flows_during_total_gbps']:>7.1f}"
                     f" {x['flows_during_min_gbps']:>5.1f} {x['flows_during_jain']:>5.2f}")
        lines.append(
            f"{x['run']:<22} {ms_text(x['completion_s']):>8} {str(x['verified']):>5} "
            f"{x['retransmissions'] or 0:>7} {x['ecn_marks'] or 0:>7} {x['drops'] or 0:>7} "
            f"{x['busiest_mean_packets'] or 0:>7.1f} {x['max_packets'] or 0:>6}{flows} "
            f"{x['wall_s'] or 0:>7.1f}")
    return lines


# ---- bench-plan.sh -------------------------------------------------------------------------------

def plan_table(report):
    lines = [f"{'k':>3} {'workers':>7} {'policy':<8} {'rate Gbit/s':>12} {'of LP':>6} "
             f"{'trees':>5} {'seconds':>8}  program (rows x columns)"]
    for e in report["results"]:
        size = e.get("lp_size") or e.get("milp_size")
        size = f"{size['rows']} x {size['columns']}" if size else ""
        trees = "-" if e["trees"] is None else e["trees"]
        lines.append(f"{e['k']:>3} {e['workers']:>7} {e['policy']:<8} {e['rate_gbps']:>12.4f} "
                     f"{e['of_lp']:>6.3f} {trees:>5} {e['seconds']:>8.2f}  {size}")
    for k, s in report["wall_seconds"].items():
        lines.append(f"k = {k}: netagg-plan ran {s:.1f} s in all (routes, all policies, reports)")
    lines.append(f"model: {report['options'].get('traffic', 'upward-only')}")
    return lines

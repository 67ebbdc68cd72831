# SPDX-License-Identifier: Apache-2.0
"""The commands the benchmark scripts run: `python3 scripts/bench/netagg_bench COMMAND ...`.

Lists of numbers or names are given as one space-separated argument, as the scripts hold them.
"""
import argparse
import datetime
import json
import os
import sys

from . import inputs, parse, plots, summary, tables


def words(text):
    return text.split()


def numbers(text):
    return [int(x) for x in text.split()]


def write_json(path, document, indent, newline=False):
    with open(path, "w") as f:
        json.dump(document, f, indent=indent)
        if newline:
            f.write("\n")


def emit(lines, stream=None):
    for line in lines:
        print(line, file=stream or sys.stdout)


def bench_report(a):
    runs = parse.Runs(a.raw)
    report = summary.bench_report(
        runs, a.ranks, a.sizes, dpdk_ranks=a.dpdk_ranks, dpdk_sizes=a.dpdk_sizes,
        dpdk_skipped=a.dpdk_skipped, missing=a.missing, command=a.command,
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        machine_info=summary.bench_machine([float(x) for x in a.load_before],
                                           list(os.getloadavg())),
        build_info=summary.bench_build(a.build, a.repo))
    write_json(a.out, report, indent=2, newline=True)
    if report["dpdk_vs_udp"]["rows"]:
        plt = plots.pyplot()
        if plt is not None:
            plots.dpdk_plot(plt, report["dpdk_vs_udp"], summary.DPDK_TRANSPORTS,
                            os.path.join(os.path.dirname(a.out), "dpdk.png"))
    emit(tables.bench_tables(report, a.sizes, a.out))
    emit(tables.bench_problems(report), sys.stderr)
    return 1 if report["failures"] or report["missing"] else 0


def merge_workers(a):
    print(json.dumps([parse.last_json(path) for path in a.files]))
    return 0


def packets_job(a):
    write_json(a.out, inputs.loopback_job(inputs.free_udp_ports(a.workers)), indent=None)
    return 0


def packets_report(a):
    result = summary.packets_report(a.raw, a.workers)
    write_json(a.out, result, indent=1)
    emit(tables.packets_table(result, a.out))
    return 0


def shaped_report(a):
    report = summary.shaped_report(a.raw, a.bytes, a.workers, a.rates, a.dtypes, a.iterations)
    write_json(a.out, report, indent=1)
    emit(tables.shaped_table(report, a.bytes))
    plt = plots.pyplot()
    if plt:
        plots.shaped_plot(plt, report, a.workers, a.rates, a.dtypes, a.bytes, a.png)
        print(f"plot: {a.png}")
    else:
        print("plot: matplotlib not installed, none drawn", file=sys.stderr)
    print(f"JSON: {a.out}")
    emit([f"FAILED: {failure}" for failure in report["failures"]], sys.stderr)
    return 1 if report["failures"] else 0


def competing_report(a):
    result = summary.competing_report(a.raw, a.workers, a.mbit, a.bytes)
    write_json(a.out, result, indent=1)
    emit(tables.competing_table(result, a.out))
    return 0


def fallback_report(a):
    try:
        report = summary.fallback_report(a.folder, a.sizes)
    except summary.BenchError as e:
        sys.exit(str(e))
    write_json(a.out, report, indent=1)
    emit(tables.fallback_table(report, a.out))
    return 0


def bmv2_report(a):
    report = summary.bmv2_report(parse.json_objects(sys.stdin.read()))
    emit(tables.bmv2_lines(report), sys.stderr)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


def fabric_report(a):
    report = summary.fabric_report(a.results)
    json_path, png_path = os.path.join(a.out, "fabric.json"), os.path.join(a.out, "fabric.png")
    write_json(json_path, report, indent=2)
    emit(tables.fabric_table(report))
    plt = plots.pyplot()
    if not plt:
        print("plot: matplotlib not installed, none drawn", file=sys.stderr)
        return 0
    plots.fabric_plot(plt, report, png_path)
    print(f"bench-fabric: {json_path}, {png_path}")
    return 0


def fabric_variant(a):
    with open(a.base) as f:
        scenario = json.load(f)
    write_json(a.out, inputs.set_dotted(scenario, a.assignments), indent=1)
    return 0


def fabric_studies_report(a):
    report = summary.fabric_studies_report(a.raw, a.names)
    json_path = os.path.join(a.out, "fabric-studies.json")
    png_path = os.path.join(a.out, "fabric-studies.png")
    write_json(json_path, report, indent=2)
    emit(tables.fabric_studies_table(report))
    plt = plots.pyplot()
    if not plt:
        print("plot: matplotlib not installed, none drawn", file=sys.stderr)
        return 0
    plots.fabric_studies_plot(plt, report, png_path)
    print(f"bench-fabric-studies: {json_path}, {png_path}")
    return 0


def plan_report(a):
    wall = {}
    with open(a.wall) as f:
        for line in f:
            k, start, end = line.split()
            wall[int(k)] = float(end) - float(start)
    os.remove(a.wall)
    report = summary.plan_report(a.raw, wall, a.args)
    write_json(a.out, report, indent=2)
    emit(tables.plan_table(report))
    return 0


def plan_plot(a):
    plt = plots.pyplot()
    if not plt:
        sys.exit("plan-plot: matplotlib is not installed (python3-matplotlib)")
    with open(a.plan) as f:
        plots.plan_plot(plt, json.load(f), a.png)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="netagg_bench",
                                description="The Python steps of the benchmark scripts.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("bench-report", help="bench.sh: bench.json and the tables")
    c.set_defaults(run=bench_report)
    c.add_argument("--build", required=True, help="the build folder")
    c.add_argument("--repo", required=True, help="the source tree (its git commit)")
    c.add_argument("--raw", required=True, help="the measurements' raw folder")
    c.add_argument("--out", required=True, help="bench.json")
    c.add_argument("--ranks", type=numbers, required=True, help="rank counts run")
    c.add_argument("--sizes", type=numbers, required=True, help="tensor sizes run, bytes")
    c.add_argument("--load-before", type=words, required=True, help="/proc/loadavg's first three")
    c.add_argument("--missing", type=words, default=[], help="programs not built")
    c.add_argument("--dpdk-ranks", type=numbers, default=[],
                   help="rank counts of the DPDK comparison")
    c.add_argument("--dpdk-sizes", type=numbers, default=[], help="its sizes (none: not run)")
    c.add_argument("--dpdk-skipped", default="", help="why it did not run")
    c.add_argument("--command", default="", help="how the benchmark was started")

    c = sub.add_parser("merge-workers", help="the workers' last JSON lines as one JSON array")
    c.set_defaults(run=merge_workers)
    c.add_argument("files", nargs="+")

    c = sub.add_parser("packets-job", help="bench-packets.sh: a job on free loopback ports")
    c.set_defaults(run=packets_job)
    c.add_argument("--out", required=True)
    c.add_argument("--workers", type=int, required=True)

    c = sub.add_parser("packets-report", help="bench-packets.sh: packets.json and the table")
    c.set_defaults(run=packets_report)
    c.add_argument("--raw", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--workers", type=int, required=True)

    c = sub.add_parser("shaped-report", help="bench-shaped.sh: shaped.json, the table, the plot")
    c.set_defaults(run=shaped_report)
    c.add_argument("--raw", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--png", required=True)
    c.add_argument("--bytes", type=int, required=True)
    c.add_argument("--workers", type=numbers, required=True)
    c.add_argument("--rates", type=numbers, required=True, help="Mbit/s")
    c.add_argument("--dtypes", type=words, required=True)
    c.add_argument("--iterations", type=int, required=True)

    c = sub.add_parser("competing-report", help="bench-competing.sh: competing.json, the table")
    c.set_defaults(run=competing_report)
    c.add_argument("--raw", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--workers", type=int, required=True)
    c.add_argument("--mbit", type=int, required=True)
    c.add_argument("--bytes", type=int, required=True)

    c = sub.add_parser("fallback-report", help="bench-fallback.sh: fallback.json, the table")
    c.set_defaults(run=fallback_report)
    c.add_argument("--folder", required=True, help="the runs' host-, gloo-, death-, live-B.json")
    c.add_argument("--out", required=True)
    c.add_argument("--sizes", type=numbers, required=True)

    c = sub.add_parser("bmv2-report", help="bench-bmv2.sh: bmv2-netns.sh summaries on stdin, "
                                           "bmv2.json on stdout")
    c.set_defaults(run=bmv2_report)

    c = sub.add_parser("fabric-report", help="bench-fabric.sh: fabric.json, the table, the plot")
    c.set_defaults(run=fabric_report)
    c.add_argument("--out", required=True, help="the folder of fabric.json and fabric.png")
    c.add_argument("results", nargs="+", help="netagg-fabric's results")

    c = sub.add_parser("fabric-variant", help="a scenario with keys set: BASE OUT a.b=JSON ...")
    c.set_defaults(run=fabric_variant)
    c.add_argument("base")
    c.add_argument("out")
    c.add_argument("assignments", nargs="*", metavar="KEY=JSON")

    c = sub.add_parser("fabric-studies-report",
                       help="bench-fabric-studies.sh: fabric-studies.json, the table, the plot")
    c.set_defaults(run=fabric_studies_report)
    c.add_argument("--raw", required=True, help="the folder of NAME.result.json")
    c.add_argument("--out", required=True, help="the folder of fabric-studies.json and .png")
    c.add_argument("names", nargs="+")

    c = sub.add_parser("plan-report", help="bench-plan.sh: plan.json and the table")
    c.set_defaults(run=plan_report)
    c.add_argument("--raw", required=True, help="the folder of k<K>.json")
    c.add_argument("--out", required=True)
    c.add_argument("--wall", required=True, help="lines 'K START END' (removed once read)")
    c.add_argument("--args", default="", help="the options netagg-plan was given")

    c = sub.add_parser("plan-plot", help="bench-plan.sh: plan.png from plan.json")
    c.set_defaults(run=plan_plot)
    c.add_argument("plan")
    c.add_argument("png")
    return p


def main(argv=None):
    a = parser().parse_args(argv)
    return a.run(a)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""netagg_bench.tables: the text printed after each benchmark, from the samples' documents."""
import unittest

from common import sample
from netagg_bench import parse, summary, tables


class Cells(unittest.TestCase):
    def test_sizes_in_their_largest_unit(self):
        self.assertEqual(tables.size_text(4096), "4 KiB")
        self.assertEqual(tables.size_text(64 << 20), "64 MiB")
        self.assertEqual(tables.size_text(1 << 30), "1 GiB")
        self.assertEqual(tables.size_text(1000), "1000 B")
        self.assertEqual(tables.size_text(6000), "6000 B")
        self.assertEqual(tables.size_text(6144), "6 KiB")

    def test_missing_values(self):
        self.assertEqual(tables.num(None, "7.2f"), "-")
        self.assertEqual(tables.num(0.5, "7.2f"), "   0.50")
        self.assertEqual(tables.ms_cell(None), "         -")
        self.assertEqual(tables.ms_cell(0.0015), "     1.500")
        self.assertEqual(tables.ms_text(0), "-")


class Bench(unittest.TestCase):
    def setUp(self):
        self.report = summary.bench_report(parse.Runs(sample("bench-raw")), [2], [4096, 65536],
                                           dpdk_ranks=[2], dpdk_sizes=[65536], missing=["fpga_bench"])
        self.lines = tables.bench_tables(self.report, [4096, 65536], "OUT/bench.json")

    def test_the_allreduce_rows(self):
        i = self.lines.index(next(l for l in self.lines if l.startswith("ranks")))
        self.assertEqual(self.lines[i + 1],
                         "    2     4 KiB          -          -       -          -          -"
                         "       -          -           -  -/mismatch")
        self.assertEqual(self.lines[i + 2],
                         "    2    64 KiB      3.000      1.500    0.50      2.000      1.000"
                         "    0.50       0.17        0.35  ok/ok")

    def test_the_codec_columns_are_the_allreduce_sizes(self):
        i = self.lines.index(next(l for l in self.lines if l.startswith("Codec:")))
        self.assertEqual(self.lines[i + 1].split(), ["4", "KiB", "64", "KiB"])
        self.assertEqual(self.lines[i + 2].split(), ["memcpy", "40.00", "50.00"])
        self.assertEqual(self.lines[i + 3].split(), ["BlockExponent", "200.00", "(5.00)", "100.00",
                                                     "(2.00)"])
        self.assertEqual(self.lines[i + 4].split(), ["Quantize", "-", "25.00", "(0.50)"])
        self.assertIn("codec SIMD target: AVX3", self.lines)

    def test_dpdk_then_the_json(self):
        start = self.lines.index(next(l for l in self.lines if l.startswith("Kernel UDP against")))
        rows = [l.split() for l in self.lines[start:] if l.startswith("    2    64 KiB")]
        # a line per transport that ran (the sample has no af_xdp-switch run): median, min,
        # ratio, worker and switch packets per CPU second, check
        self.assertEqual(rows, [
            ["2", "64", "KiB", "kernel", "UDP", "3.000", "3.000", "-", "-", "5k", "ok"],
            ["2", "64", "KiB", "DPDK", "af_packet", "1.500", "1.000", "0.50", "-", "-", "ok"],
            ["2", "64", "KiB", "DPDK", "af_xdp", "2.000", "2.000", "0.67", "20k", "5k", "ok"]])
        self.assertEqual(self.lines[-2:], ["", "JSON: OUT/bench.json"])

    def test_dpdk_skipped_says_why(self):
        report = summary.bench_report(parse.Runs(sample("bench-raw")), [2], [65536],
                                      dpdk_skipped="needs root")
        lines = tables.bench_tables(report, [65536], "X")
        self.assertIn("DPDK against kernel UDP: skipped (needs root)", lines)

    def test_what_failed_and_what_is_missing(self):
        self.assertEqual(tables.bench_problems(self.report), [
            "FAILED: gloo-r2-b4096 (exit 1): BUILD/bench/gloo_allreduce --ranks 2 --bytes 4096 "
            "--iterations 3 --warmup 1",
            "MISSING: fpga_bench was not built, its figures are absent"])


class Others(unittest.TestCase):
    def test_packets(self):
        lines = tables.packets_table(summary.packets_report(sample("packets-raw"), 2), "P")
        self.assertIn("reflector (plain UDP)                                400,000", lines)
        self.assertIn("netagg-switchd, UDP GSO/GRO                          600,000    1.50", lines)
        self.assertEqual(lines[-1], "JSON: P")

    def test_shaped(self):
        report = summary.shaped_report(sample("shaped-raw"), 1 << 20, [4], [100],
                                       ["fp32", "int32"], 3)
        lines = tables.shaped_table(report, 1 << 20)
        self.assertIn("1048576 bytes, median of 3", lines[0])
        self.assertEqual(lines[2].split(), ["4", "100", "fp32", "0.150", "0.160", "0.56", "0.79",
                                            "0.94", "0.667", "1.41", "6"])
        # int32: worker 2 left no report; the others' retransmissions still count
        retx = str(report["rows"][1]["retransmissions"])
        self.assertEqual(lines[3].split(), ["4", "100", "int32", "-", "0.160", "-", "0.79", "-",
                                            "0.667", "-", retx])

    def test_competing_marks_what_is_missing(self):
        result = summary.competing_report(sample("competing-raw"), 2, 200, 1 << 20)
        result["cc1"]["flow_with_netagg_mbit"] = None
        lines = tables.competing_table(result, "C")
        self.assertEqual(lines[1], "  the flow alone: 190.0 Mbit/s")
        self.assertEqual(lines[4].split(), ["on", "0.040", "0.100", "—", "7"])

    def test_fallback_as_markdown(self):
        lines = tables.fallback_table(summary.fallback_report(sample("fallback"), [65536]), "F")
        self.assertEqual(lines[2],
                         "| 65536 | 20.00 ms | 5.00 ms | 4.00 | 1.500 s | 1.00 ms | 0.250 s |")

    def test_fabric(self):
        report = summary.fabric_report([sample("fabric", "result-4.json"),
                                        sample("fabric", "result-8.json")])
        lines = tables.fabric_table(report)
        self.assertEqual(lines[1].split()[:5], ["4", "0.092", "0.175", "1.89", "1.500"])
        self.assertTrue(lines[-1].startswith("in-network time over N: slowest / fastest = "))

    def test_plan(self):
        lines = tables.plan_table(summary.plan_report(sample("plan-raw"), {4: 1.5}, ""))
        self.assertEqual(lines[1].split(), ["4", "15", "scheme1", "0.6667", "0.067", "1", "0.00",
                                            "111", "x", "58"])
        self.assertEqual(lines[-2:], ["k = 4: netagg-plan ran 1.5 s in all (routes, all policies, "
                                      "reports)", "model: all-reduce"])


if __name__ == "__main__":
    unittest.main()

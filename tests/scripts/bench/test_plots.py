#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""netagg_bench.plots: every figure drawn from the samples' documents is a PNG (skipped without
matplotlib, as the scripts then draw none)."""
import os
import tempfile
import unittest

from common import sample
from netagg_bench import parse, plots, summary

PLT = plots.pyplot()


@unittest.skipIf(PLT is None, "matplotlib is not installed (python3-matplotlib)")
class Plots(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        PLT.close("all")
        self.dir.cleanup()

    def assertPng(self, path):
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(path), 10000)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_shaped(self):
        report = summary.shaped_report(sample("shaped-raw"), 1 << 20, [4], [100],
                                       ["fp32", "int32"], 3)
        plots.shaped_plot(PLT, report, [4], [100], ["fp32", "int32"], 1 << 20, self.path("s.png"))
        self.assertPng(self.path("s.png"))

    def test_dpdk(self):
        report = summary.bench_report(parse.Runs(sample("bench-raw")), [2], [65536],
                                      dpdk_ranks=[2], dpdk_sizes=[65536])
        plots.dpdk_plot(PLT, report["dpdk_vs_udp"], summary.DPDK_TRANSPORTS, self.path("d.png"))
        self.assertPng(self.path("d.png"))

    def test_fabric(self):
        report = summary.fabric_report([sample("fabric", "result-4.json"),
                                        sample("fabric", "result-8.json")])
        plots.fabric_plot(PLT, report, self.path("f.png"))
        self.assertPng(self.path("f.png"))

    def test_fabric_studies(self):
        report = summary.fabric_studies_report(sample("fabric-studies"), ["cc-on", "cc-off"])
        plots.fabric_studies_plot(PLT, report, self.path("fs.png"))
        self.assertPng(self.path("fs.png"))

    def test_plan(self):
        report = summary.plan_report(sample("plan-raw"), {4: 1.5}, "")
        plots.plan_plot(PLT, report, self.path("p.png"))
        self.assertPng(self.path("p.png"))

    def test_a_plan_without_a_policy_is_an_error(self):
        report = summary.plan_report(sample("plan-raw"), {4: 1.5}, "")
        report["results"] = [r for r in report["results"] if r["policy"] != "grid"]
        with self.assertRaises(StopIteration):
            plots.plan_plot(PLT, report, self.path("p.png"))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""netagg_bench.summary and .inputs on the samples: each benchmark's JSON document, its medians,
ratios and failures, worked out by hand from the samples' timings."""
import json
import os
import shutil
import tempfile
import unittest

from common import sample
from netagg_bench import inputs, parse, summary


class Bench(unittest.TestCase):
    """bench.sh's raw folder: 2 ranks; 64 KiB ran (netagg with 2 warm-up iterations to drop), at
    4 KiB gloo failed and netagg did not verify; the codec, the FPGA RTL in fp32, DPDK against
    UDP at 64 KiB with one warm-up iteration."""

    def setUp(self):
        self.runs = parse.Runs(sample("bench-raw"))
        self.report = summary.bench_report(
            self.runs, [2], [4096, 65536], dpdk_ranks=[2], dpdk_sizes=[65536],
            missing=["fpga_bench"], command="bash scripts/bench/bench.sh build", date="D",
            machine_info={"cpu": "C"}, build_info={"dir": "B"})

    def row(self, size):
        return next(r for r in self.report["allreduce"] if r["bytes"] == size)

    def test_the_documents_frame(self):
        r = self.report
        self.assertEqual(r["schema"], "netagg-bench/1")
        self.assertEqual((r["date"], r["command"]), ("D", "bash scripts/bench/bench.sh build"))
        self.assertEqual((r["machine"], r["build"]), ({"cpu": "C"}, {"dir": "B"}))
        self.assertEqual(r["missing"], ["fpga_bench"])
        self.assertIsNone(r["dpdk_vs_udp"]["skipped"])
        json.dumps(r)  # all of it serialisable

    def test_netagg_against_gloo(self):
        row = self.row(65536)
        # gloo [4, 2, 3] ms; netagg [500, 500 | 2, 1, 1.5] ms, the first two dropped
        self.assertEqual(row["gloo_ring"]["seconds_median"], 0.003)
        self.assertEqual(row["netagg_switch_sim"]["seconds_median"], 0.0015)
        self.assertEqual(row["netagg_switch_sim"]["samples"], 3)
        self.assertAlmostEqual(row["time_ratio_netagg_over_gloo_median"], 0.5)
        self.assertAlmostEqual(row["time_ratio_netagg_over_gloo_min"], 0.5)
        self.assertEqual(row["raw"]["netagg"]["warmup_dropped_here"], 2)
        self.assertIn("netagg-local", row["raw"]["netagg"]["command"])

    def test_a_failed_peer_and_a_mismatch_leave_no_ratio(self):
        row = self.row(4096)
        self.assertIsNone(row["gloo_ring"])
        self.assertEqual(row["netagg_switch_sim"], {"verification": "mismatch"})
        self.assertIsNone(row["time_ratio_netagg_over_gloo_median"])
        self.assertEqual([f["name"] for f in self.report["failures"]], ["gloo-r2-b4096"])

    def test_the_codec_against_memcpy(self):
        codec = {c["name"]: c for c in self.report["codec"]}
        # BM_Memcpy/4096 40 GB/s, BM_BlockExponent/4096 200 GB/s, BM_Quantize/65536 25 of 50
        self.assertEqual(set(codec), {"BM_BlockExponent/4096", "BM_BlockExponent/65536",
                                      "BM_Quantize/65536"})
        self.assertAlmostEqual(codec["BM_BlockExponent/4096"]["ratio_over_memcpy"], 5.0)
        self.assertEqual(codec["BM_BlockExponent/4096"]["memcpy_name"], "BM_Memcpy/4096")
        self.assertAlmostEqual(codec["BM_Quantize/65536"]["gb_per_second"], 25.0)
        self.assertAlmostEqual(codec["BM_Quantize/65536"]["ratio_over_memcpy"], 0.5)
        self.assertEqual(self.report["codec_context"]["simd_target"], "AVX3")

    def test_the_fpga_rtl(self):
        [fpga] = self.report["fpga"]
        self.assertEqual((fpga["dtype"], fpga["ports"]), ("fp32", 4))

    def test_dpdk_against_udp(self):
        [row] = self.report["dpdk_vs_udp"]["rows"]
        udp, dpdk = row["kernel_udp"], row["dpdk_af_packet"]
        # udp: w0 [2, 4, 3], w1 [3, 1, 3] ms after the warm-up: slowest [3, 4, 3]
        self.assertEqual((udp["seconds_median"], udp["seconds_min"]), (0.003, 0.003))
        # dpdk: w0 [1, 2, 1], w1 [1, 1, 1.5]: slowest [1, 2, 1.5]
        self.assertEqual((dpdk["seconds_median"], dpdk["seconds_min"]), (0.0015, 0.001))
        self.assertAlmostEqual(row["time_ratio_dpdk_over_udp_median"], 0.5)
        self.assertAlmostEqual(row["time_ratio_dpdk_over_udp_min"], 1 / 3)
        self.assertEqual((udp["retransmissions"], dpdk["retransmissions"]), (1, 5))
        self.assertEqual(dpdk["packets_sent"], 2001)
        self.assertEqual(len(row["raw"]["dpdk"]), 2)
        # xdp: w0 [2, 2, 2], w1 [1, 3, 1] ms: slowest [2, 3, 2]; against udp's median 3 ms
        xdp = row["dpdk_af_xdp"]
        self.assertEqual((xdp["seconds_median"], xdp["seconds_min"]), (0.002, 0.002))
        self.assertAlmostEqual(row["time_ratio_xdp_over_udp_median"], 2 / 3)
        self.assertAlmostEqual(row["time_ratio_xdp_over_udp_min"], 2 / 3)
        # the switch on an XDP socket did not run in the sample: no summary, no ratio
        self.assertIsNone(row["dpdk_af_xdp_switch_af_xdp"])
        self.assertIsNone(row["time_ratio_xdpsw_over_udp_median"])

    def test_what_a_packet_cost(self):
        [row] = self.report["dpdk_vs_udp"]["rows"]
        udp, dpdk, xdp = row["kernel_udp"], row["dpdk_af_packet"], row["dpdk_af_xdp"]
        # xdp: 1000 + 1500 packets in 0.05 + 0.075 CPU seconds inside the all-reduces, 0.1 +
        # 0.15 in the whole processes; in 1.006 and 0.905 s of all-reduce; the switch used 0.5
        self.assertAlmostEqual(xdp["worker_packets_per_cpu_second"], 20000)
        self.assertAlmostEqual(xdp["worker_packets_per_process_cpu_second"], 10000)
        self.assertAlmostEqual(xdp["worker_packets_per_wall_second"],
                               (1000 / 1.006 + 1500 / 0.905) / 2)
        self.assertAlmostEqual(xdp["switchd_packets_per_cpu_second"], 5000)
        self.assertAlmostEqual(udp["switchd_packets_per_cpu_second"], 2001 / 0.4)
        # dpdk left no switch CPU time: that figure alone is missing
        self.assertIsNone(dpdk["switchd_packets_per_cpu_second"])
        # the dpdk sample has no all-reduce CPU time: that figure is missing, not made up
        self.assertIsNone(dpdk["worker_packets_per_cpu_second"])
        self.assertAlmostEqual(dpdk["worker_packets_per_process_cpu_second"],
                               2001 / (0.244603 + 0.240653))

    def test_dpdk_skipped(self):
        report = summary.bench_report(parse.Runs(sample("bench-raw")), [2], [65536],
                                      dpdk_skipped="needs root")
        self.assertEqual(report["dpdk_vs_udp"]["skipped"], "needs root")
        self.assertEqual(report["dpdk_vs_udp"]["rows"], [])


class Packets(unittest.TestCase):
    def test_packets_per_cpu_second_and_ratios(self):
        r = summary.packets_report(sample("packets-raw"), 2)
        # reflector 200000 packets in 0.5 s; loads 2 x 100000 packets in 0.25 + 0.5 s
        self.assertAlmostEqual(r["reflector_packets_per_cpu_second"], 400000)
        self.assertAlmostEqual(r["load_packets_per_cpu_second"], 200000 / 0.75)
        # switchd 300000 packets in 0.5 / 1.0 / 0.6 s of CPU
        self.assertAlmostEqual(r["switchd_packets_per_cpu_second"], 600000)
        self.assertAlmostEqual(r["ratio_switchd_over_reflector"], 1.5)
        self.assertAlmostEqual(r["no_offload"]["ratio_switchd_over_reflector"], 0.75)
        self.assertAlmostEqual(r["threads_2"]["switchd_packets_per_cpu_second"], 500000)
        # workers: 2 x (74000 sent + 1000 resent) in 1.0 s of CPU (1.5 without offload)
        self.assertAlmostEqual(r["worker_packets_per_cpu_second"], 150000)
        self.assertAlmostEqual(r["ratio_worker_over_load"], 150000 / (200000 / 0.75))
        self.assertAlmostEqual(r["no_offload"]["worker_packets_per_cpu_second"], 100000)
        self.assertEqual(r["offload"]["switchd"]["cpu_seconds"], 0.5)
        self.assertEqual(len(r["offload"]["workers"]), 2)
        self.assertEqual(r["command"], "bash scripts/bench/bench-packets.sh BUILD_DIR")


class Shaped(unittest.TestCase):
    def setUp(self):
        self.report = summary.shaped_report(sample("shaped-raw"), 1 << 20, [4], [100],
                                            ["fp32", "int32"], 3)
        self.fp32, self.int32 = self.report["rows"]

    def test_netagg_against_the_ring(self):
        r = self.fp32
        # slowest worker per iteration after the first: [0.13, 0.12, 0.15, 0.2]; the upper
        # median 0.15 (not their mean)
        self.assertAlmostEqual(r["netagg_seconds"], 0.15)
        self.assertEqual(r["ring_seconds"], 0.16)
        self.assertAlmostEqual(r["ratio_netagg_over_ring"], 0.15 / 0.16)
        self.assertAlmostEqual(r["bound"], 4 / 6)
        self.assertAlmostEqual(r["ratio_over_bound"], 0.15 / 0.16 / (4 / 6))
        # 1 MiB over 100 Mbit/s: 83.9 ms; the ring moves 2(N-1)/N of it
        self.assertAlmostEqual(r["netagg_link_share"], 0.08388608 / 0.15)
        self.assertAlmostEqual(r["ring_link_share"], 0.08388608 * 1.5 / 0.16)
        self.assertEqual((r["retransmissions"], r["spurious_retransmissions"]), (6, 1))
        self.assertEqual(r["packets_sent"], 4 * 1030)

    def test_a_worker_without_a_report_fails_the_run(self):
        self.assertIsNone(self.int32["netagg_seconds"])
        self.assertIsNone(self.int32["ratio_netagg_over_ring"])
        self.assertEqual(self.report["failures"], ["netagg int32 n=4 100 Mbit/s"])
        self.assertEqual(self.report["iterations"], 3)

    def test_a_missing_ring_run(self):
        report = summary.shaped_report(sample("shaped-raw"), 1 << 20, [4], [200], ["fp32"], 3)
        self.assertIn("gloo n=4 200 Mbit/s", report["failures"])


class Competing(unittest.TestCase):
    def test_the_flow_and_netagg_with_and_without_congestion_control(self):
        r = summary.competing_report(sample("competing-raw"), 2, 200, 1 << 20)
        self.assertAlmostEqual(r["flow_alone_mbit"], 190.0)
        # the slowest worker's median: max(median [40, 50, 60], median [50, 70, 50]) ms
        self.assertAlmostEqual(r["cc0"]["netagg_alone"]["seconds"], 0.05)
        self.assertAlmostEqual(r["cc0"]["netagg_with_flow"]["seconds"], 0.2)
        self.assertAlmostEqual(r["cc1"]["netagg_with_flow"]["seconds"], 0.1)
        self.assertEqual(r["cc1"]["netagg_with_flow"]["window_cuts"], 3 + 4)
        self.assertEqual(r["cc1"]["netagg_with_flow"]["retransmissions"], 1)
        self.assertAlmostEqual(r["cc0"]["flow_with_netagg_mbit"], 120.0)
        self.assertAlmostEqual(r["cc1"]["flow_with_netagg_mbit"], 150.0)

    def test_a_missing_worker_report(self):
        self.assertIsNone(summary.competing_netagg(sample("competing-raw"), "netagg-cc0", 3))


class Fallback(unittest.TestCase):
    def test_host_mode_against_the_ring(self):
        [row] = summary.fallback_report(sample("fallback"), [65536])["rows"]
        # host mode [1.2 | 20, 30, 10 ms]: the first (detection) dropped, median 20 ms; ring 5 ms
        self.assertAlmostEqual(row["host_mode_seconds_median"], 0.02)
        self.assertAlmostEqual(row["host_over_gloo"], 4.0)
        self.assertEqual((row["death_to_completion_seconds"], row["death_fallback_seconds"]),
                         (1.5, 0.25))
        self.assertEqual(row["live_seconds"], 0.001)

    def test_a_run_that_did_not_verify_stops_it(self):
        with tempfile.TemporaryDirectory() as d:
            for f in os.listdir(sample("fallback")):
                shutil.copy(sample("fallback", f), d)
            path = os.path.join(d, "live-65536.json")
            with open(path) as f:
                live = json.load(f)
            live["verification"] = "mismatch"
            with open(path, "w") as f:
                json.dump(live, f)
            with self.assertRaisesRegex(summary.BenchError, "live run of 65536 bytes: mismatch"):
                summary.fallback_report(d, [65536])


class Bmv2(unittest.TestCase):
    def test_one_row_per_elements_per_packet(self):
        with open(sample("bmv2-runs.txt")) as f:
            runs = parse.json_objects(f.read())
        report = summary.bmv2_report(runs)
        self.assertEqual((report["workers"], report["dtype"], report["count"]), (4, "int32", 65536))
        self.assertEqual([r["elements_per_packet"] for r in report["runs"]], [16, 32, 64, 128, 256])
        for run, row in zip(runs, report["runs"]):
            slowest = max(w["seconds"] for w in run["ranks"])
            self.assertEqual(row["seconds"], round(slowest, 3))
            self.assertEqual(row["elements_per_second"], round(65536 / slowest))
            self.assertEqual(row["switch_packets_per_second"],
                             round(run["switch_counters"]["packets_in"] / slowest))
            self.assertEqual(row["retransmissions"],
                             sum(w["retransmissions"] for w in run["ranks"]))


class Fabric(unittest.TestCase):
    def test_rows_by_workers(self):
        paths = [sample("fabric", "result-8.json"), sample("fabric", "result-4.json")]
        report = summary.fabric_report(paths)
        self.assertEqual(report["benchmark"], "fabric")
        four, eight = report["runs"]
        self.assertEqual((four["workers"], eight["workers"]), (4, 8))
        self.assertEqual(four["result"], paths[1])
        self.assertEqual(four["bound"], 1.5)
        self.assertTrue(four["innetwork_verified"])
        # the two modes' wall-clock seconds and simulated packets added
        self.assertAlmostEqual(four["wall_s"], 0.111980662 + 0.131515022)
        self.assertEqual(four["simulated_packets"], 12288 + 19390)
        self.assertAlmostEqual(four["simulated_packets_per_wall_s"],
                               (12288 + 19390) / (0.111980662 + 0.131515022))

    def test_studies(self):
        report = summary.fabric_studies_report(sample("fabric-studies"),
                                               ["cc-on", "trees-1-cc-on", "cc-off"])
        on, off = report["runs"]  # trees-1-cc-on has no result: left out
        self.assertEqual((on["run"], on["mode"]), ("cc-on", "innetwork"))
        self.assertEqual((on["congestion_control"], off["congestion_control"]), (True, False))
        self.assertAlmostEqual(on["busiest_mean_packets"], 63.60370837466581)
        self.assertAlmostEqual(on["flows_during_total_gbps"], 158.7483446239534)
        self.assertIn("flows_before_jain", off)

    def test_a_variant_of_a_scenario(self):
        with open(sample("fabric-studies", "base.json")) as f:
            base = json.load(f)
        v = inputs.set_dotted(base, ["job.trees=4", "job.congestion_control=false",
                                     'modes=["ring"]', "queues.extra.depth=3"])
        self.assertEqual(v["job"]["trees"], 4)
        self.assertIs(v["job"]["congestion_control"], False)
        self.assertEqual(v["modes"], ["ring"])
        self.assertEqual(v["queues"]["extra"], {"depth": 3})
        with self.assertRaises(ValueError):
            inputs.set_dotted(base, ["job.trees=four"])


class Plan(unittest.TestCase):
    def test_each_policy_against_the_lp_bound(self):
        report = summary.plan_report(sample("plan-raw"), {4: 1.5}, "--rounds 64")
        self.assertEqual(report["command"],
                         "netagg-plan --fat-tree K --rounds 64 --quiet --json ...")
        self.assertEqual(report["wall_seconds"], {4: 1.5})
        self.assertEqual(report["options"]["traffic"], "all-reduce")
        e = {r["policy"]: r for r in report["results"]}
        self.assertEqual(list(e), ["scheme1", "scheme2", "grid", "lp"])
        self.assertEqual((e["grid"]["hosts"], e["grid"]["workers"]), (16, 15))
        self.assertAlmostEqual(e["lp"]["of_lp"], 1.0)
        self.assertAlmostEqual(e["scheme1"]["of_lp"], 0.6666666666666666 / 9.999999999999996)
        self.assertAlmostEqual(e["scheme2"]["of_lp"], 0.125)
        self.assertEqual((e["grid"]["trees"], e["lp"]["trees"]), (1, None))
        self.assertEqual(e["scheme1"]["milp_size"], {"columns": 58, "nonzeros": 845, "rows": 111})
        self.assertEqual(e["grid"]["lp_size"]["rows"], 405)
        self.assertIn("route_seconds", e["lp"])


class Jobs(unittest.TestCase):
    def test_a_job_on_free_loopback_ports(self):
        ports = inputs.free_udp_ports(3)
        self.assertEqual(len(ports), 3)
        self.assertTrue(all(0 < p < 65536 for p in ports))
        job = inputs.loopback_job(ports)
        self.assertEqual(job["slots"], {"base": 0, "count": 64})
        self.assertEqual(job["elements_per_packet"], 256)
        self.assertEqual(job["workers"][2], {"rank": 2, "address": f"127.0.0.1:{ports[2]}"})


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""netagg_bench.parse on the programs' outputs: JSON after human-readable lines, objects one after
another, Google Benchmark's and iperf3's reports, and a bench.sh raw folder with its failures."""
import os
import shutil
import tempfile
import unittest

from common import sample
from netagg_bench import parse


class LastJsonLine(unittest.TestCase):
    def test_the_reflector_prints_its_address_then_its_counts(self):
        r = parse.last_json(sample("packets-raw", "reflector.out"))
        self.assertEqual(r["packets_in"], 200000)
        self.assertEqual(r["cpu_seconds"], 0.5)

    def test_the_last_of_several_objects_wins(self):
        self.assertEqual(parse.last_json_line('{"a": 1}\nwords\n  {"a": 2}\n'), {"a": 2})

    def test_no_json_line_is_an_error(self):
        with self.assertRaises(ValueError):
            parse.last_json_line("listening on 127.0.0.1:1\n")

    def test_a_worker_that_printed_nothing_is_none(self):
        empty = sample("shaped-raw", "netagg-int32-n4-r100.w2.json")
        self.assertIsNone(parse.last_json_or_none(empty))
        self.assertIsNone(parse.last_json_or_none(sample("no-such-file.json")))

    def test_a_broken_line_is_none(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"seconds": \n')
            f.flush()
            self.assertIsNone(parse.last_json_or_none(f.name))


class JsonObjects(unittest.TestCase):
    def test_bmv2_runs_printed_one_after_another(self):
        with open(sample("bmv2-runs.txt")) as f:
            runs = parse.json_objects(f.read())
        self.assertEqual([r["elements_per_packet"] for r in runs], [16, 32, 64, 128, 256])
        self.assertEqual(len(runs[0]["ranks"]), 4)

    def test_text_that_is_not_json_is_an_error(self):
        with self.assertRaises(ValueError):
            parse.json_objects('{"a": 1} skipped: no simple_switch')


class JsonDocument(unittest.TestCase):
    def test_netagg_local_after_a_line_of_its_own(self):
        with open(sample("bench-raw", "netagg-r2-b4096.json")) as f:
            self.assertEqual(parse.json_document(f.read())["verification"], "mismatch")

    def test_a_whole_document(self):
        self.assertEqual(parse.json_document('[1, 2]'), [1, 2])

    def test_nothing_that_parses(self):
        self.assertIsNone(parse.json_document("gloo_allreduce: connect refused\n"))
        self.assertIsNone(parse.json_document(""))


class Iperf(unittest.TestCase):
    def test_the_receivers_rate_in_mbit(self):
        self.assertAlmostEqual(parse.iperf_mbit(sample("competing-raw", "alone.iperf.json")), 190.0)

    def test_a_failed_or_missing_report_is_none(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"start": {}, "error": "unable to connect to server"}')
            f.flush()
            self.assertIsNone(parse.iperf_mbit(f.name))
        self.assertIsNone(parse.iperf_mbit(sample("competing-raw", "none.iperf.json")))


class CMakeCache(unittest.TestCase):
    def test_a_key_and_a_missing_one(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "CMakeCache.txt"), "w") as f:
                f.write("CMAKE_BUILD_TYPE:STRING=Release\nNETAGG_DPDK:BOOL=ON\n")
            self.assertEqual(parse.cmake_cache(d, "CMAKE_BUILD_TYPE"), "Release")
            self.assertIsNone(parse.cmake_cache(d, "CMAKE_CXX_COMPILER"))
        self.assertIsNone(parse.cmake_cache("/nonexistent", "CMAKE_BUILD_TYPE"))


class Runs(unittest.TestCase):
    def setUp(self):
        self.runs = parse.Runs(sample("bench-raw"))

    def test_a_measurement_carries_its_command_line(self):
        gloo = self.runs.load("gloo-r2-b65536")
        self.assertEqual(gloo["seconds_all"], [0.004, 0.002, 0.003])
        self.assertTrue(gloo["command"].startswith("BUILD/bench/gloo_allreduce --ranks 2"))
        self.assertEqual(self.runs.failures, [])

    def test_a_failed_measurement_is_recorded_with_its_stderr(self):
        self.assertIsNone(self.runs.load("gloo-r2-b4096"))
        [failure] = self.runs.failures
        self.assertEqual(failure["name"], "gloo-r2-b4096")
        self.assertEqual(failure["exit_status"], 1)
        self.assertIn("Connection refused", failure["stderr_tail"])

    def test_a_measurement_that_exited_0_without_json_is_a_failure(self):
        with tempfile.TemporaryDirectory() as d:
            for suffix in (".cmd", ".json", ".log"):
                shutil.copy(sample("bench-raw", "codec" + suffix), d)
            with open(os.path.join(d, "codec.json"), "w") as f:
                f.write("Run on (2 X 2596 MHz CPU s)\n")
            runs = parse.Runs(d)
            self.assertIsNone(runs.load("codec"))
            self.assertEqual(runs.failures[0]["exit_status"], 0)

    def test_what_did_not_run_is_none_and_no_failure(self):
        self.assertIsNone(self.runs.load("fpga_rtl_int32"))
        self.assertEqual(self.runs.failures, [])

    def test_the_warmup_to_drop(self):
        self.assertEqual(self.runs.warmup("netagg-r2-b65536"), 2)
        self.assertEqual(self.runs.warmup("gloo-r2-b65536"), 0)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""netagg_bench.stats: medians, the warm-up dropped, the slowest rank per iteration, ratios."""
import unittest

import common  # noqa: F401  (puts the package on the path)
from netagg_bench import stats


class Median(unittest.TestCase):
    def test_odd_and_even_counts(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)


class Summarize(unittest.TestCase):
    def test_the_warmup_is_dropped_before_the_median(self):
        report = {"seconds_all": [0.5, 0.5, 0.002, 0.001, 0.0015], "verification": "ok"}
        s = stats.summarize(report, 65536, warmup_to_drop=2)
        self.assertEqual(s["seconds_median"], 0.0015)
        self.assertEqual(s["seconds_min"], 0.001)
        self.assertEqual(s["samples"], 3)
        # 64 KiB in 1.5 ms: 524288 bits / 0.0015 s
        self.assertAlmostEqual(s["goodput_gbps"], 524288 / 0.0015 / 1e9)

    def test_a_run_that_did_not_verify_has_no_times(self):
        s = stats.summarize({"seconds_all": [0.1], "verification": "mismatch"}, 4096)
        self.assertEqual(s, {"verification": "mismatch"})

    def test_no_samples_left_after_the_warmup(self):
        s = stats.summarize({"seconds_all": [0.1, 0.2], "verification": "ok"}, 4096, 2)
        self.assertEqual(s, {"verification": "ok"})

    def test_no_report(self):
        self.assertIsNone(stats.summarize(None, 4096))


class SlowestRank(unittest.TestCase):
    def test_per_iteration_the_slowest_worker(self):
        self.assertEqual(stats.slowest_per_iteration([[1, 5, 2], [3, 4, 2, 9]]), [3, 5, 2])

    def test_workers_merged_warmup_dropped_counts_summed(self):
        workers = [{"seconds_all": [9, 1, 4], "verification": "ok", "retransmissions": 2,
                    "packets_sent": 10},
                   {"seconds_all": [8, 3, 2], "verification": "ok", "packets_sent": 11}]
        merged = stats.slowest_rank(workers, 1)
        self.assertEqual(merged["seconds_all"], [3, 4])
        self.assertEqual(merged["retransmissions"], 2)
        self.assertEqual(merged["packets_sent"], 21)

    def test_a_worker_that_did_not_verify(self):
        ok = {"seconds_all": [1], "verification": "ok"}
        self.assertEqual(stats.slowest_rank([ok, {"verification": "mismatch"}], 0),
                         {"verification": "mismatch"})
        self.assertEqual(stats.slowest_rank([ok, {"verification": "timeout"}], 0),
                         {"verification": "error"})
        self.assertIsNone(stats.slowest_rank(None, 0))
        self.assertIsNone(stats.slowest_rank([], 0))


class Ratios(unittest.TestCase):
    def test_time_ratio(self):
        self.assertEqual(stats.time_ratio({"t": 1.0}, {"t": 4.0}, "t"), 0.25)
        self.assertIsNone(stats.time_ratio({"t": 1.0}, {"verification": "mismatch"}, "t"))
        self.assertIsNone(stats.time_ratio(None, {"t": 4.0}, "t"))

    def test_the_in_network_bound(self):
        self.assertAlmostEqual(stats.in_network_bound(4), 4 / 6)
        self.assertAlmostEqual(stats.in_network_bound(2), 1.0)

    def test_a_tensor_over_a_link(self):
        # 1 MiB at 100 Mbit/s: 8388608 bits / 1e8 bit/s
        self.assertAlmostEqual(stats.link_seconds(1 << 20, 100), 0.08388608)


if __name__ == "__main__":
    unittest.main()

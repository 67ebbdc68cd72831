#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`python3 scripts/bench/netagg_bench COMMAND ...` as the scripts run it: arguments, files
written, what goes to stdout and stderr, exit statuses."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import BENCH, PACKAGE, sample


def run(*args, stdin=None, module=False):
    command = [sys.executable, *(["-m", "netagg_bench"] if module else [PACKAGE]), *args]
    env = dict(os.environ, PYTHONPATH=BENCH) if module else None
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=60)


class Cli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def test_bench_report(self):
        out = os.path.join(self.tmp, "bench.json")
        r = run("bench-report", "--build", self.tmp, "--repo", self.tmp, "--raw",
                sample("bench-raw"), "--out", out, "--ranks", "2", "--sizes", "4096 65536",
                "--load-before", "0.5 0.25 0.1",
                "--missing=", "--dpdk-ranks=2", "--dpdk-sizes", "65536", "--dpdk-skipped=",
                "--command=bash scripts/bench/bench.sh build")
        self.assertEqual(r.returncode, 1, r.stderr)  # gloo at 4 KiB failed
        with open(out) as f:
            report = json.load(f)
        self.assertEqual(report["machine"]["load_average_before"], [0.5, 0.25, 0.1])
        self.assertEqual(len(report["machine"]["load_average_after"]), 3)
        self.assertEqual(report["build"]["dir"], self.tmp)
        self.assertIsNone(report["build"]["git_commit"])  # not a repository
        self.assertEqual(report["command"], "bash scripts/bench/bench.sh build")
        self.assertEqual(len(report["allreduce"]), 2)
        self.assertTrue(r.stdout.endswith(f"JSON: {out}\n"))
        self.assertIn("FAILED: gloo-r2-b4096 (exit 1)", r.stderr)

    def test_merge_workers(self):
        files = [sample("bench-raw", f"veth-udp-r2-b65536.w{i}.json") for i in (0, 1)]
        r = run("merge-workers", *files)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(sample("bench-raw", "veth-udp-r2-b65536.json")) as f:
            self.assertEqual(json.loads(r.stdout), json.load(f))

    def test_packets_job(self):
        job = os.path.join(self.tmp, "job.json")
        self.assertEqual(run("packets-job", "--out", job, "--workers", "4").returncode, 0)
        with open(job) as f:
            self.assertEqual([w["rank"] for w in json.load(f)["workers"]], [0, 1, 2, 3])

    def test_shaped_report_fails_with_a_failed_run(self):
        out = os.path.join(self.tmp, "shaped.json")
        r = run("shaped-report", "--raw", sample("shaped-raw"), "--out", out, "--png",
                os.path.join(self.tmp, "shaped.png"), "--bytes", str(1 << 20), "--workers", "4",
                "--rates", "100", "--dtypes", "fp32 int32", "--iterations", "3")
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAILED: netagg int32 n=4 100 Mbit/s", r.stderr)
        self.assertIn(f"JSON: {out}", r.stdout)
        with open(out) as f:
            self.assertEqual(len(json.load(f)["rows"]), 2)

    def test_fallback_report_stops_on_a_run_that_did_not_verify(self):
        for f in os.listdir(sample("fallback")):
            shutil.copy(sample("fallback", f), self.tmp)
        out = os.path.join(self.tmp, "fallback.json")
        r = run("fallback-report", "--folder", self.tmp, "--out", out, "--sizes", "65536")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| 65536 | 20.00 ms |", r.stdout)
        with open(os.path.join(self.tmp, "host-65536.json")) as f:
            host = json.load(f)
        host["verification"] = "error"
        with open(os.path.join(self.tmp, "host-65536.json"), "w") as f:
            json.dump(host, f)
        r = run("fallback-report", "--folder", self.tmp, "--out", out, "--sizes", "65536")
        self.assertEqual(r.returncode, 1)
        self.assertIn("bench-fallback: host run of 65536 bytes: error", r.stderr)

    def test_bmv2_report_reads_the_runs_on_stdin(self):
        with open(sample("bmv2-runs.txt")) as f:
            r = run("bmv2-report", stdin=f.read())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["runs"]), 5)
        self.assertEqual(len(r.stderr.splitlines()), 5)
        self.assertIn(" 16 elements/packet: ", r.stderr)

    def test_fabric_variant(self):
        out = os.path.join(self.tmp, "v.json")
        r = run("fabric-variant", sample("fabric-studies", "base.json"), out, "job.trees=2",
                'modes=["ring"]')
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            v = json.load(f)
        self.assertEqual((v["job"]["trees"], v["modes"]), (2, ["ring"]))

    def test_plan_report_takes_options_that_look_like_options(self):
        wall = os.path.join(self.tmp, "wall")
        with open(wall, "w") as f:
            f.write("4 100.0 101.5\n")
        out = os.path.join(self.tmp, "plan.json")
        r = run("plan-report", "--raw", sample("plan-raw"), "--out", out, "--wall", wall,
                "--args=--upward-only")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(wall))
        with open(out) as f:
            report = json.load(f)
        self.assertEqual(report["command"],
                         "netagg-plan --fat-tree K --upward-only --quiet --json ...")
        self.assertEqual(report["wall_seconds"], {"4": 1.5})
        self.assertIn("k = 4: netagg-plan ran 1.5 s in all", r.stdout)

    def test_as_a_module_and_bad_usage(self):
        r = run("--help", module=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("bench-report", r.stdout)
        r = run("no-such-command")
        self.assertEqual(r.returncode, 2)
        self.assertIn("invalid choice", r.stderr)


if __name__ == "__main__":
    unittest.main()

# SPDX-License-Identifier: Apache-2.0
"""What the tests of scripts/bench/netagg_bench share: the package on the path, the samples.

samples/ holds outputs of the measured programs as a quick bench run left them, trimmed, with
short timings chosen so that the expected figures can be worked out by hand (each test says how).
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BENCH = os.path.join(ROOT, "scripts", "bench")
PACKAGE = os.path.join(BENCH, "netagg_bench")
SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples")

if BENCH not in sys.path:
    sys.path.insert(0, BENCH)


def sample(*parts):
    return os.path.join(SAMPLES, *parts)

# SPDX-License-Identifier: Apache-2.0
"""Reading what the measured programs print.

netagg-allreduce, netagg-switchd's counters, gloo_allreduce, fpga_bench, the UDP reflector and
netagg-local print JSON objects, some after human-readable lines; simple_switch runs come as
pretty-printed objects one after another; codec_bench prints Google Benchmark's report; iperf3 its
own. A bench.sh measurement leaves four files in the raw folder (Runs).
"""
import json
import os
import re


def last_json_line(text):
    """The JSON object on the last line of TEXT that starts with '{' (the programs print their
    result last, after any human-readable line). ValueError when there is none or it does not
    parse."""
    lines = [line for line in text.splitlines() if line.strip().startswith("{")]
    if not lines:
        raise ValueError("no JSON object on a line of its own")
    return json.loads(lines[-1])


def last_json(path):
    """last_json_line of the file at PATH."""
    with open(path) as f:
        return last_json_line(f.read())


def last_json_or_none(path):
    """last_json, or None when the file is missing, holds no JSON line or a broken one."""
    try:
        return last_json(path)
    except (OSError, ValueError):
        return None


def json_objects(text):
    """Every JSON value of TEXT, where they follow each other (pretty-printed, whitespace between)."""
    decoder, i, values = json.JSONDecoder(), 0, []
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        values.append(value)
    return values


def json_document(text):
    """TEXT as one JSON document; when human-readable lines surround it, the last object that
    starts a line and parses. None when nothing parses."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    result = None
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\s*\{", text, re.MULTILINE):
        try:
            result = decoder.raw_decode(text, match.end() - 1)[0]
        except json.JSONDecodeError:
            pass
    return result


def iperf_mbit(path):
    """The receiver's rate of an iperf3 --json report in Mbit/s, or None (no report, a broken one,
    or one without it: iperf3 failed)."""
    try:
        with open(path) as f:
            report = json.load(f)
        return report["end"]["sum_received"]["bits_per_second"] / 1e6
    except (OSError, KeyError, ValueError):
        return None


def cmake_cache(build, key):
    """The value of KEY in BUILD/CMakeCache.txt, or None."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


class Runs:
    """The measurements of a bench.sh run in its raw folder. Measurement NAME left NAME.cmd (its
    command line, then its exit status), NAME.json (its stdout), NAME.log (its stderr) and, when it
    ran warm-up iterations that its own report counts, NAME.warmup (how many to drop). What failed
    is collected in `failures`, in the order it was loaded."""

    def __init__(self, raw):
        self.raw = raw
        self.failures = []

    def _path(self, name, suffix):
        return os.path.join(self.raw, name + suffix)

    def ran(self, name):
        return os.path.exists(self._path(name, ".cmd"))

    def load(self, name):
        """The JSON the measurement printed (with its command line under "command" when an
        object), or None: it did not run, or it failed (recorded in `failures`)."""
        if not self.ran(name):
            return None
        with open(self._path(name, ".cmd")) as f:
            command, status = f.read().splitlines()[:2]
        with open(self._path(name, ".json")) as f:
            result = json_document(f.read())
        if status != "0" or result is None:
            with open(self._path(name, ".log")) as f:
                log_tail = f.read()[-2000:]
            self.failures.append({"name": name, "command": command, "exit_status": int(status),
                                  "stderr_tail": log_tail})
            return None
        if isinstance(result, dict):
            result["command"] = command
        return result

    def number(self, name, suffix):
        """A number the script left in NAME + suffix (a daemon's CPU seconds), or None."""
        try:
            with open(self._path(name, suffix)) as f:
                return float(f.read())
        except (OSError, ValueError):
            return None

    def warmup(self, name):
        """The warm-up iterations to drop from the measurement's samples (0 without a file)."""
        try:
            with open(self._path(name, ".warmup")) as f:
                return int(f.read())
        except OSError:
            return 0

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Wireshark dissector (formats/wireshark/netagg.lua) on a capture of a real run:
netagg-local (2 workers and netagg-switchd, default settings: free ports, UDP GSO/GRO on) runs
while dumpcap captures loopback, once with fp32 and once with int32 tensors, and tshark must
decode every datagram between the run's ports as netagg, merged datagrams packet by packet,
without an error, and find the packets the run counted:

- contributions = the aggregator's packets_in; everything it sent = its datagrams_sent, results
  = results_multicast + results_resent, notices = notices;
- each rank's contributions carry the seqs 0 .. P-1 (P = its first transmissions) and elements
  that add up to each all-reduce's (the one-element barrier and the tensor), and each worker
  gets a result for each of its seqs with its contribution's count;
- every packet has the job's wire dtype, one job id, a count of at most the job's elements per
  packet; at least one datagram holds several packets.

The run and the capture are in a network namespace of their own (unshare --net), so that no
other traffic on the machine's loopback reaches the capture. The capture is synchronised with
marker datagrams: one sent (again, until the capture shows it) before the run starts, one after
it ends; the capture stops once the second is seen, so it holds everything the run sent.

Usage: capture_test.py --local PATH/netagg-local [--tshark PATH] [--dumpcap PATH]
Exits 77 (a skip for CTest) without tshark, dumpcap, unshare or ip, or when not root."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "vectors"))
sys.dont_write_bytecode = True
import wire_format  # noqa: E402

LUA = os.path.join(ROOT, "formats", "wireshark", "netagg.lua")
SKIP = 77
IN_NAMESPACE = "NETAGG_CAPTURE_TEST_NAMESPACE"
MARKER_PORT = 9  # discard: nothing listens, the datagram is only captured
WAIT_SECONDS = 30  # bound on waiting for the capture to start or to catch up
BUFFER_MIB = 64  # dumpcap's kernel buffer
MARKER_INTERVAL = 0.05  # seconds between copies of a marker the capture has not shown yet
RUN_SECONDS = 60  # bound on one netagg-local run (it takes well under a second)
RUNS = [["--workers", "2", "--count", "100000", "--dtype", "fp32"],
        ["--workers", "2", "--count", "100000", "--dtype", "int32"]]


def log(text):
    print(f"capture_test: {text}", flush=True)


class Capture:
    """dumpcap on lo writing pcap to a pipe (dumpcap flushes a pipe after every packet), copied
    to a file by a thread that also watches for marker datagrams."""

    def __init__(self, dumpcap, path):
        self.path = path
        self.out = open(path, "wb")
        self.seen = {}  # marker payload -> threading.Event
        self.lock = threading.Lock()
        self.problem = None
        # A buffer that holds a whole run (a few MiB), whatever the pace of this reader.
        self.proc = subprocess.Popen([dumpcap, "-i", "lo", "-f", "udp", "-B", str(BUFFER_MIB),
                                      "-P", "-w", "-"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr = []
        self.started = threading.Event()
        self.reader = threading.Thread(target=self.read_packets, daemon=True)
        self.errors = threading.Thread(target=self.read_stderr, daemon=True)
        self.reader.start()
        self.errors.start()

    def read_stderr(self):
        for line in self.proc.stderr:
            line = line.decode(errors="replace")
            self.stderr.append(line)
            if "Capturing on" in line:
                self.started.set()
        self.started.set()  # dumpcap ended: wake a waiter, which finds it gone

    def expect(self, marker):
        with self.lock:
            return self.seen.setdefault(marker, threading.Event())

    def read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.proc.stdout.read(n - len(data))
            if not chunk:
                return None
            data += chunk
        self.out.write(data)
        return data

    def read_packets(self):
        head = self.read_exact(24)
        if head is None:
            return
        magic = struct.unpack("<I", head[:4])[0]
        order = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        while True:
            rec = self.read_exact(16)
            if rec is None:
                break
            _, _, incl, orig = struct.unpack(order + "IIII", rec)
            data = self.read_exact(incl)
            if data is None:
                break
            if incl != orig and self.problem is None:
                self.problem = f"a datagram of {orig} bytes captured as {incl} (snap length)"
            with self.lock:
                for marker, event in self.seen.items():
                    if data.endswith(marker):
                        event.set()
        self.out.flush()

    def send_marker(self, marker):
        """Sends a datagram that only the capture sees until the capture has it. dumpcap reports
        "Capturing on" a little before its socket takes packets: the first copies of the start
        marker may go uncaptured."""
        event = self.expect(marker)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(int(WAIT_SECONDS / MARKER_INTERVAL)):
                s.sendto(marker, ("127.0.0.1", MARKER_PORT))
                if event.wait(MARKER_INTERVAL):
                    return
        raise RuntimeError(f"the capture did not see the marker {marker!r} within "
                           f"{WAIT_SECONDS} s; dumpcap: {''.join(self.stderr)}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.proc.wait(WAIT_SECONDS)
        self.reader.join(WAIT_SECONDS)
        self.errors.join(WAIT_SECONDS)
        self.out.close()
        text = "".join(self.stderr)
        m = re.search(r"Packets received/dropped on interface .*: (\d+)/(\d+)", text)
        if m and int(m.group(2)):
            raise RuntimeError(f"dumpcap dropped {m.group(2)} of {m.group(1)} packets: {text}")
        if self.problem:
            raise RuntimeError(self.problem)


def tshark_packets(tshark, pcap, tmp):
    """One row per UDP frame: its ports, protocols, and per netagg tree its fields."""
    fields = ["frame.number", "udp.srcport", "udp.dstport", "frame.protocols", "netagg.type",
              "netagg.dtype", "netagg.job_id", "netagg.rank", "netagg.count", "netagg.seq",
              "netagg.error"]
    cmd = [tshark, "-n", "-r", pcap, "-X", f"lua_script:{LUA}", "-Y", "udp", "-T", "fields",
           "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp))
    if r.returncode != 0:
        raise RuntimeError(f"tshark failed ({r.returncode}): {r.stderr}")
    rows = []
    for line in r.stdout.splitlines():
        row = dict(zip(fields, line.split("|")))
        for f in fields[4:]:
            row[f] = row[f].split(",") if row[f] else []
        rows.append(row)
    return rows


def check_run(rows, summary, agg_port, markers):
    """The problems found in the decoded capture of one run, and what it saw."""
    problems = []
    wire_dtype = "fp32" if summary["float_wire"] == "fp32" else "int32"
    dtype_value = str(wire_format.DTYPES[wire_dtype])
    types = {str(v): k for k, v in wire_format.TYPES.items()}
    run = [r for r in rows if agg_port in (r["udp.srcport"], r["udp.dstport"])]
    workers = {r["udp.srcport"] for r in run if r["udp.dstport"] == agg_port}
    others = [r for r in rows if r not in run and r["frame.number"] not in markers]
    if len(workers) != summary["workers"]:
        problems.append(f"{len(workers)} worker ports sent to {agg_port}, the run had "
                        f"{summary['workers']} workers")
    errors = [(r["frame.number"], r["netagg.error"]) for r in rows if r["netagg.error"]]
    if errors:
        problems.append(f"netagg.error in {len(errors)} frames, first: {errors[:5]}")
    not_netagg = [r["frame.number"] for r in run
                  if "netagg" not in r["frame.protocols"].split(":")]
    if not_netagg:
        problems.append(f"{len(not_netagg)} of the run's {len(run)} datagrams not decoded as "
                        f"netagg (frames {not_netagg[:10]})")
    by_type = {}
    contributions = {}  # (worker port, seq) -> count
    results = {}
    merged = 0
    for r in run:
        n = len(r["netagg.seq"])
        merged += n > 1
        for name in ("netagg.type", "netagg.dtype", "netagg.job_id", "netagg.rank",
                     "netagg.count"):
            if len(r[name]) != n:
                problems.append(f"frame {r['frame.number']}: {len(r[name])} {name}, {n} seqs")
                n = min(n, len(r[name]))
        to_agg = r["udp.dstport"] == agg_port
        for i in range(n):
            kind = types.get(r["netagg.type"][i], r["netagg.type"][i])
            by_type[kind] = by_type.get(kind, 0) + 1
            if r["netagg.dtype"][i] != dtype_value:
                problems.append(f"frame {r['frame.number']}: dtype {r['netagg.dtype'][i]}, the "
                                f"run's wire dtype is {wire_dtype} ({dtype_value})")
            count = int(r["netagg.count"][i])
            if count > summary["elements_per_packet"]:
                problems.append(f"frame {r['frame.number']}: count {count} above the job's "
                                f"{summary['elements_per_packet']} elements per packet")
            key = (r["udp.srcport"] if to_agg else r["udp.dstport"], int(r["netagg.seq"][i]))
            if to_agg and kind == "contribution":
                if contributions.setdefault(key, count) != count:
                    problems.append(f"contribution {key}: counts {contributions[key]} and {count}")
            elif not to_agg and kind == "result":
                if results.setdefault(key, count) != count:
                    problems.append(f"result {key}: counts {results[key]} and {count}")
            elif kind in ("contribution", "result"):
                problems.append(f"frame {r['frame.number']}: a {kind} "
                                f"{'to' if to_agg else 'from'} the aggregator")
    job_ids = {j for r in run for j in r["netagg.job_id"]}
    if len(job_ids) != 1:
        problems.append(f"job ids {sorted(job_ids)}: one job ran")

    counters = summary["switch_counters"]
    sent = sum(v for k, v in by_type.items() if k != "contribution")
    expect = [
        ("contributions", by_type.get("contribution", 0), "packets_in", counters["packets_in"]),
        ("datagrams from the aggregator", sent, "datagrams_sent", counters["datagrams_sent"]),
        ("results", by_type.get("result", 0), "results_multicast + results_resent",
         counters["results_multicast"] + counters["results_resent"]),
    ]
    if "notices" in counters:
        expect.append(("notices", by_type.get("notice", 0), "notices", counters["notices"]))
    for what, got, name, want in expect:
        if got != want:
            problems.append(f"{got} {what} in the capture, the aggregator counted {name} = {want}")

    per_rank = summary["packets_sent"] // summary["workers"]
    elements = summary["iterations"] * (summary["count"] + 1)  # each with its barrier
    for port in sorted(workers):
        seqs = sorted(seq for p, seq in contributions if p == port)
        if seqs != list(range(per_rank)):
            problems.append(f"worker port {port}: contributions with {len(seqs)} distinct seqs, "
                            f"want 0..{per_rank - 1}")
        total = sum(c for (p, _), c in contributions.items() if p == port)
        if total != elements:
            problems.append(f"worker port {port}: its contributions hold {total} elements, "
                            f"want {elements}")
    if results != contributions:
        missing = sorted(set(contributions) - set(results))[:5]
        problems.append(f"results differ from contributions (port, seq -> count); e.g. "
                        f"unanswered {missing}")
    if not merged:
        problems.append("no datagram holds more than one packet: the split is not tested "
                        "(UDP GSO/GRO off?)")
    if others:
        problems.append(f"{len(others)} UDP datagrams outside the run in its namespace")
    seen = (f"{len(run)} datagrams ({merged} merged), " +
            ", ".join(f"{n} {k}s" for k, n in sorted(by_type.items())))
    return problems, seen


def run_once(args, tmp, index, extra):
    pcap = os.path.join(tmp, f"run{index}.pcap")
    capture = Capture(args.dumpcap, pcap)
    try:
        if not capture.started.wait(WAIT_SECONDS) or capture.proc.poll() is not None:
            raise RuntimeError(f"dumpcap did not start: {''.join(capture.stderr)}")
        capture.send_marker(f"netagg capture test {index} start".encode())
        # Default settings: no NETAGG_* variable of the caller's may change them.
        env = {k: v for k, v in os.environ.items() if not k.startswith("NETAGG_")}
        run = subprocess.run([args.local, *extra, "--json", "--verbose"], capture_output=True,
                             text=True, env=env, timeout=RUN_SECONDS)
        capture.send_marker(f"netagg capture test {index} end".encode())
    finally:
        capture.stop()
    if run.returncode != 0:
        raise RuntimeError(f"netagg-local {' '.join(extra)} failed ({run.returncode}):\n"
                           f"{run.stdout}\n{run.stderr}")
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", run.stderr)
    if not m:
        raise RuntimeError(f"no aggregator port in netagg-local --verbose's output:\n{run.stderr}")
    summary = json.loads(run.stdout)
    rows = tshark_packets(args.tshark, pcap, tmp)
    markers = {r["frame.number"] for r in rows if r["udp.dstport"] == str(MARKER_PORT)}
    problems, seen = check_run(rows, summary, m.group(1), markers)
    what = " ".join(extra)
    for p in problems:
        log(f"{what}: FAIL: {p}")
    log(f"{what}: {'ok' if not problems else 'FAILED'}: {seen}")
    return not problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local", required=True, help="netagg-local")
    parser.add_argument("--tshark", default=shutil.which("tshark"))
    parser.add_argument("--dumpcap", default=shutil.which("dumpcap"))
    args = parser.parse_args()
    for name in ("tshark", "dumpcap"):
        if not getattr(args, name):
            log(f"SKIP: {name} not found (Debian package tshark)")
            return SKIP
    if os.geteuid() != 0:
        log("SKIP: needs root (a network namespace and a capture)")
        return SKIP
    if not os.environ.get(IN_NAMESPACE):
        for tool in ("unshare", "ip"):
            if not shutil.which(tool):
                log(f"SKIP: {tool} not found (util-linux, iproute2)")
                return SKIP
        probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            log(f"SKIP: no network namespace (unshare --net: {probe.stderr.strip()})")
            return SKIP
        return subprocess.run(["unshare", "--net", "--", sys.executable, *sys.argv],
                              env=dict(os.environ, **{IN_NAMESPACE: "1"})).returncode
    if not os.access(args.local, os.X_OK):
        log(f"{args.local} is not built")
        return 1
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    tmp = tempfile.mkdtemp(prefix="capture_test.")
    try:
        ok = True
        for i, extra in enumerate(RUNS):
            ok &= run_once(args, tmp, i, extra)
        return 0 if ok else 1
    except (RuntimeError, subprocess.SubprocessError) as e:
        log(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())

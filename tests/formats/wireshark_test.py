#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The generated Wireshark dissector (formats/wireshark/netagg.lua) against the golden vectors:
every vector goes into a pcap (packet-layer vectors wrapped in Ethernet/IPv4/UDP to the netagg
port), tshark decodes it with the dissector, and every header field, the payload's element count
and, for a rejected packet, the reason must be what the vector says. Frame-layer vectors whose
frame is not UDP to the netagg port never reach the dissector and are left out.

Usage: wireshark_test.py [--tshark PATH]. Exits 77 (a skip for CTest) when tshark is missing."""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VECTORS = os.path.join(ROOT, "tests", "vectors", "wire")
LUA = os.path.join(ROOT, "formats", "wireshark", "netagg.lua")
FIELDS = ["version", "type", "dtype", "set", "fresh", "recovery", "job_id", "rank", "slot", "count",
          "exponent", "seq", "epoch"]
UDP_PORT = 20033
SKIP = 77


def read_vector(path):
    v, hexdata, in_hex = {}, [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if in_hex:
                hexdata += line.split()
            elif line.startswith("#") or not line.strip():
                continue
            elif line == "hex:":
                in_hex = True
            else:
                key, _, value = line.partition(":")
                v[key.strip()] = value.strip()
    v["bytes"] = bytes(int(b, 16) for b in hexdata)
    return v


def checksum(header):
    s = sum(struct.unpack(">10H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def wrap(packet):
    """A netagg packet in Ethernet/IPv4/UDP to the netagg port."""
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, 28 + len(packet), 0, 0x4000, 64, 17, 0,
                               0x0A000002, 0x0A0000FE))
    ip[10:12] = struct.pack(">H", checksum(bytes(ip)))
    udp = struct.pack(">HHHH", 31002, UDP_PORT, 8 + len(packet), 0)
    eth = bytes.fromhex("0200000000fe020000000002") + b"\x08\x00"
    return eth + bytes(ip) + udp + packet


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)))
            f.write(frame)


def reaches_dissector(v):
    if v["layer"] == "packet":
        return True
    frame_errors = {"not_ipv4", "not_udp", "bad_ip_header", "wrong_port", "ip_length_mismatch",
                    "udp_length_mismatch", "truncated"}
    return v["expect"] not in frame_errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tshark", default=shutil.which("tshark"))
    args = parser.parse_args()
    if not args.tshark:
        print("wireshark_test: SKIP: tshark not found (Debian package tshark)")
        return SKIP
    vectors = [read_vector(os.path.join(VECTORS, n)) for n in sorted(os.listdir(VECTORS))
               if n.endswith(".vec")]
    vectors = [v for v in vectors if reaches_dissector(v)]
    frames = [wrap(v["bytes"]) if v["layer"] == "packet" else v["bytes"] for v in vectors]
    tmp = tempfile.mkdtemp(prefix="wireshark_test.")
    try:
        pcap = os.path.join(tmp, "vectors.pcap")
        write_pcap(pcap, frames)
        cmd = [args.tshark, "-n", "-r", pcap, "-X", f"lua_script:{LUA}", "-T", "fields",
               "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
        for name in FIELDS + ["error", "int32", "fp32", "bf16"]:
            cmd += ["-e", f"netagg.{name}"]
        r = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp))
        if r.returncode != 0:
            print(f"wireshark_test: tshark failed ({r.returncode}):\n{r.stderr}")
            return 1
        rows = r.stdout.splitlines()
        if len(rows) != len(vectors):
            print(f"wireshark_test: {len(rows)} decoded frames for {len(vectors)} vectors\n"
                  f"{r.stdout}\n{r.stderr}")
            return 1
        failures = 0
        for v, row in zip(vectors, rows):
            cols = row.split("|")
            got = dict(zip(FIELDS + ["error", "int32", "fp32", "bf16"], cols))
            problems = []
            if v["expect"] == "ok":
                if got["error"]:
                    problems.append(f"reported error {got['error']!r}")
                for name in FIELDS:
                    want, have = v[name], got[name]
                    if name in ("type", "dtype"):
                        # tshark prints the number; the vector the name.
                        ok = have == want or have in {"contribution": "1", "result": "2",
                                                      "int32": "0", "fp32": "1",
                                                      "bf16": "2"}.get(want, "?").split()
                    else:
                        ok = have == want
                    if not ok:
                        problems.append(f"{name}: {have!r}, want {want!r}")
                elements = [x for x in (got["int32"], got["fp32"], got["bf16"]) if x]
                n = len(elements[0].split(",")) if elements else 0
                if n != int(v["count"]):
                    problems.append(f"{n} elements, want {v['count']}")
                if v.get("dtype") == "int32" and v.get("values"):
                    if got["int32"].split(",") != v["values"].split():
                        problems.append(f"int32 values {got['int32']!r}, want {v['values']!r}")
            elif got["error"] != v["expect"]:
                problems.append(f"error {got['error']!r}, want {v['expect']!r}")
            status = "ok" if not problems else "FAIL: " + "; ".join(problems)
            print(f"wireshark_test: {v['name']}: {status}")
            failures += bool(problems)
        print(f"wireshark_test: {len(vectors) - failures} of {len(vectors)} vectors decoded as "
              "they say")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())

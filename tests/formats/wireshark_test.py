#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The generated Wireshark dissector (formats/wireshark/netagg.lua) against the golden vectors:
every vector goes into a pcap (packet-layer vectors wrapped in Ethernet/IPv4/UDP to the netagg
port), tshark decodes it with the dissector, and every header field, the payload's element count
and, for a rejected packet, the reason must be what the vector says. Frame-layer vectors whose
frame is not UDP to the netagg port never reach the dissector and are left out.

Then the heuristic and the split of merged datagrams, each case on a port pair of its own (the
heuristic claims a conversation): every accepted vector on another port; all of them back to
back in one datagram (as UDP GSO/GRO merges them), on the netagg port and on another; such a
datagram ending in a partial packet or in a packet that fails a check (an error on the netagg
port, not netagg on another); every rejected vector on another port, a DNS query whose first
bytes pass as a netagg header, and seeded random datagrams: none of them netagg; every rejected
vector in a conversation the heuristic took: netagg with its error.

Usage: wireshark_test.py [--tshark PATH]. Exits 77 (a skip for CTest) when tshark is missing."""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "vectors"))
sys.dont_write_bytecode = True
import wire_format  # noqa: E402

VECTORS = os.path.join(ROOT, "tests", "vectors", "wire")
LUA = os.path.join(ROOT, "formats", "wireshark", "netagg.lua")
FIELDS = ["version", "type", "dtype", "set", "fresh", "recovery", "job_id", "rank", "slot", "count",
          "exponent", "seq", "epoch"]
UDP_PORT = wire_format.UDP_PORT
HEADER_SIZE = wire_format.HEADER_SIZE
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


def wrap(packet, src_port=31002, dst_port=UDP_PORT):
    """A UDP payload in Ethernet/IPv4/UDP, by default to the netagg port."""
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, 28 + len(packet), 0, 0x4000, 64, 17, 0,
                               0x0A000002, 0x0A0000FE))
    ip[10:12] = struct.pack(">H", checksum(bytes(ip)))
    udp = struct.pack(">HHHH", src_port, dst_port, 8 + len(packet), 0)
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


def tshark_rows(tshark, tmp, name, frames, fields):
    """tshark's view of the frames: one dict per frame, each field's values joined by commas."""
    pcap = os.path.join(tmp, f"{name}.pcap")
    write_pcap(pcap, frames)
    cmd = [tshark, "-n", "-r", pcap, "-X", f"lua_script:{LUA}", "-T", "fields",
           "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"]
    for field in fields:
        cmd += ["-e", field]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp))
    if r.returncode != 0:
        raise RuntimeError(f"tshark failed ({r.returncode}):\n{r.stderr}")
    rows = r.stdout.splitlines()
    if len(rows) != len(frames):
        raise RuntimeError(f"{len(rows)} decoded frames for {len(frames)}\n{r.stdout}\n{r.stderr}")
    return [dict(zip(fields, row.split("|"))) for row in rows]


def check_vectors(tshark, tmp, vectors):
    frames = [wrap(v["bytes"]) if v["layer"] == "packet" else v["bytes"] for v in vectors]
    dtypes = list(wire_format.DTYPES)
    names = FIELDS + ["error"] + dtypes
    rows = tshark_rows(tshark, tmp, "vectors", frames, [f"netagg.{n}" for n in names])
    failures = 0
    for v, row in zip(vectors, rows):
        got = {n: row[f"netagg.{n}"] for n in names}
        problems = []
        if v["expect"] == "ok":
            if got["error"]:
                problems.append(f"reported error {got['error']!r}")
            for name in FIELDS:
                want, have = v[name], got[name]
                if name in ("type", "dtype"):
                    # tshark prints the number; the vector the name.
                    enum = wire_format.TYPES if name == "type" else wire_format.DTYPES
                    ok = have == want or have == str(enum.get(want, "?"))
                else:
                    ok = have == want
                if not ok:
                    problems.append(f"{name}: {have!r}, want {want!r}")
            elements = [got[d] for d in dtypes if got[d]]
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
    return failures


def dns_query(ident, flags, name):
    qname = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    return struct.pack(">HHHHHH", ident, flags, 1, 0, 0, 0) + qname + struct.pack(">HH", 1, 1)


def header_fields(packet):
    names = [name for name, _, _ in wire_format.FIELDS]
    return dict(zip(names, struct.unpack_from(wire_format.HEADER_STRUCT, packet)))


def heuristic_cases(vectors):
    """(name, UDP payload, ports, what tshark must show). Ports: a destination port, None for a
    port pair of the case's own, or a (source, destination) pair. What to show: for netagg the
    seqs of its trees (a part with an error shows its header too when it has one), the number
    of whole packets and the error; None for not netagg."""
    ok = [v for v in vectors if v["layer"] == "packet" and v["expect"] == "ok"]
    rejected = [v for v in vectors if v["layer"] == "packet" and v["expect"] != "ok"]
    seqs = [v["seq"] for v in ok]
    merged = b"".join(v["bytes"] for v in ok)
    partial = next(v for v in ok if int(v["count"]) > 0)
    bad_version = next(v for v in rejected if v["expect"] == "bad_version")
    bad_version_seq = str(header_fields(bad_version["bytes"])["seq"])
    n = len(ok)
    cases = [(f"{v['name']} on another port", v["bytes"], None, ([v["seq"]], 1, "")) for v in ok]
    cases += [
        ("merged on the netagg port", merged, UDP_PORT, (seqs, n, "")),
        ("merged on another port", merged, None, (seqs, n, "")),
        ("merged, then a partial packet, on the netagg port", merged + partial["bytes"][:-2],
         UDP_PORT, (seqs + [partial["seq"]], n, "length_mismatch")),
        ("merged, then a partial packet, on another port", merged + partial["bytes"][:-2], None,
         None),
        ("merged, then bytes too few for a header, on the netagg port", merged + bytes(4),
         UDP_PORT, (seqs, n, "length_mismatch")),
        ("merged, then a bad version, on the netagg port", merged + bad_version["bytes"],
         UDP_PORT, (seqs + [bad_version_seq], n, "bad_version")),
        ("merged, then a bad version, on another port", merged + bad_version["bytes"], None, None),
    ]
    cases += [(f"{v['name']} on another port", v["bytes"], None, None) for v in rejected]
    # The heuristic takes a conversation: its later datagrams are netagg's, malformed or not.
    taken = (39999, 49999)
    cases.append(("a conversation's first datagram", ok[0]["bytes"], taken,
                  ([ok[0]["seq"]], 1, "")))
    cases += [(f"{v['name']} later in that conversation", v["bytes"], taken,
               ([str(header_fields(v["bytes"])["seq"])] if len(v["bytes"]) >= HEADER_SIZE
                else [], 0, v["expect"])) for v in rejected]
    # Its first 12 bytes pass every header check (version 1, contribution, fp32, flags 0, ...).
    query = dns_query(0x0101, 0x0100, "example.com")
    cases.append(("DNS query on port 53", query, 53, None))
    cases.append(("DNS query on another port", query, None, None))
    rng = random.Random(UDP_PORT)
    for i in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        cases.append((f"random datagram {i}", data, None, None))
    return cases


def check_heuristic(tshark, tmp, vectors):
    cases = heuristic_cases(vectors)
    frames = []
    for i, (_, payload, ports, _) in enumerate(cases):
        # A port pair of its own for a case unless it says: a conversation the heuristic took is
        # netagg's.
        if not isinstance(ports, tuple):
            ports = (40000 + i, ports if ports is not None else 50000 + i)
        frames.append(wrap(payload, *ports))
    fields = ["frame.protocols", "netagg.seq", "netagg.error", "_ws.col.Info"]
    rows = tshark_rows(tshark, tmp, "heuristic", frames, fields)
    failures = 0
    for (name, _, _, want), row in zip(cases, rows):
        is_netagg = "netagg" in row["frame.protocols"].split(":")
        problems = []
        if want is None:
            if is_netagg:
                problems.append(f"claimed as netagg: {row['_ws.col.Info']!r}")
        elif not is_netagg:
            problems.append(f"not netagg: {row['frame.protocols']}")
        else:
            want_seqs, whole, want_error = want
            seqs = row["netagg.seq"].split(",") if row["netagg.seq"] else []
            if seqs != want_seqs:
                problems.append(f"seqs {seqs}, want {want_seqs}")
            if row["netagg.error"] != want_error:
                problems.append(f"error {row['netagg.error']!r}, want {want_error!r}")
            info = row["_ws.col.Info"]
            if whole > 1 and not info.startswith(f"netagg {whole} packets"):
                problems.append(f"info {info!r} does not count {whole} packets")
        if problems or not name.startswith("random"):
            status = "ok" if not problems else "FAIL: " + "; ".join(problems)
            print(f"wireshark_test: {name}: {status}")
        failures += bool(problems)
    print(f"wireshark_test: {len(cases) - failures} of {len(cases)} datagrams on other ports and "
          "merged datagrams decoded as they should")
    return failures


def notice(reason, waiting=()):
    """A notice packet: int32 words, the reason's code and the waiting ranks' bitmap words."""
    words = [wire_format.NOTICE_REASONS[reason], *waiting]
    header = wire_format.pack_header(version=wire_format.VERSION, type=wire_format.TYPES["notice"],
                                     dtype=wire_format.DTYPES["int32"], flags=0, job_id=4, rank=1,
                                     slot=9, count=len(words), exponent=-32768, seq=77, epoch=5)
    return header + b"".join(struct.pack(">i", w) for w in words)


def check_notices(tshark, tmp):
    """Notices show their reason by name, and a duplicate's waiting ranks."""
    cases = [("duplicate", (0b110,)), ("stale_epoch", ()), ("unknown_job", ())]
    frames = [wrap(notice(reason, waiting), src_port=UDP_PORT, dst_port=31002)
              for reason, waiting in cases]
    rows = tshark_rows(tshark, tmp, "notices", frames,
                       ["netagg.notice_reason", "netagg.notice_waiting", "netagg.error"])
    pcap = os.path.join(tmp, "notices.pcap")
    text = subprocess.run([tshark, "-n", "-r", pcap, "-X", f"lua_script:{LUA}", "-V"],
                          capture_output=True, text=True,
                          env=dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp)).stdout
    failures = 0
    for (reason, waiting), row in zip(cases, rows):
        code = wire_format.NOTICE_REASONS[reason]
        problems = []
        if row["netagg.error"]:
            problems.append(f"error {row['netagg.error']!r}")
        if row["netagg.notice_reason"] != str(code):
            problems.append(f"reason {row['netagg.notice_reason']!r}, want {code}")
        want_waiting = ",".join(f"0x{w:08x}" for w in waiting)
        if row["netagg.notice_waiting"] != want_waiting:
            problems.append(f"waiting {row['netagg.notice_waiting']!r}, want {want_waiting!r}")
        if f"notice reason: {reason} ({code})" not in text:
            problems.append(f"'notice reason: {reason} ({code})' not in tshark -V")
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        print(f"wireshark_test: notice {reason}: {status}")
        failures += bool(problems)
    return failures


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
    tmp = tempfile.mkdtemp(prefix="wireshark_test.")
    try:
        failures = check_vectors(args.tshark, tmp, vectors)
        failures += check_heuristic(args.tshark, tmp, vectors)
        failures += check_notices(args.tshark, tmp)
        return 1 if failures else 0
    except RuntimeError as e:
        print(f"wireshark_test: {e}")
        return 1
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the golden wire vectors in tests/vectors/wire/.

This is a second, independent encoder (Python's struct, not the C++ code; the header's field table
comes from formats/wire.json through scripts/vectors/wire_format.py), so the C++ decoder, the RTL,
the HLS model and the P4 parser are all checked against bytes that none of them produced. Re-run
after changing the format:
    python3 scripts/vectors/gen_vectors.py
"""
import pathlib
import struct

import wire_format

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "wire"

TYPES = wire_format.TYPES
BAD_TYPE = max(TYPES.values()) + 1  # the first type the format does not define
DTYPES = wire_format.DTYPES
BAD_DTYPE = max(DTYPES.values()) + 1  # the first dtype the format does not define
EXP_NONE = wire_format.EXP_NONE


def header(type="contribution", dtype="int32", set=0, fresh=0, recovery=0, job_id=1, rank=0,
           slot=0, count=0, exponent=EXP_NONE, seq=0, epoch=0, version=1, flags=None,
           raw_type=None, raw_dtype=None):
    t = TYPES[type] if raw_type is None else raw_type
    d = DTYPES[dtype] if raw_dtype is None else raw_dtype
    # flags: bit 0 set, bit 1 fresh, bit 2 recovery; bits 3..7 reserved (zero).
    f = (set | fresh << 1 | recovery << 2) if flags is None else flags
    return wire_format.pack_header(version=version, type=t, dtype=d, flags=f, job_id=job_id,
                                   rank=rank, slot=slot, count=count, exponent=exponent, seq=seq,
                                   epoch=epoch)


def payload(dtype, values):
    if dtype == "int32":
        return b"".join(struct.pack(">i", v) for v in values)
    if dtype in ("fp32", "fp32_exact"):
        return b"".join(struct.pack(">f", v) for v in values)
    if dtype == "exact_lanes":  # values given as int64 lanes
        return b"".join(struct.pack(">q", v) for v in values)
    if dtype == "bf16":  # values given as raw 16-bit patterns
        return b"".join(struct.pack(">H", v) for v in values)
    raise ValueError(dtype)


def ip_checksum(hdr):
    s = sum(struct.unpack(">10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip_to_int(text):
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


FRAME_DEFAULTS = dict(src_mac="02:00:00:00:00:02", dst_mac="02:00:00:00:00:fe",
                      src_ip="10.0.0.2", dst_ip="10.0.0.254", src_port=31002, dst_port=20033,
                      ecn=0)


def frame(packet, src_mac, dst_mac, src_ip, dst_ip, src_port, dst_port, ecn, ethertype=0x0800,
          proto=17, ip_len_delta=0, udp_len_delta=0, corrupt_checksum=False, padding=0):
    ip_len = 20 + 8 + len(packet)
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, ecn & 3, ip_len + ip_len_delta, 0, 0x4000, 64,
                               proto, 0, ip_to_int(src_ip), ip_to_int(dst_ip)))
    csum = ip_checksum(bytes(ip))
    if corrupt_checksum:
        csum ^= 0x0101
    ip[10:12] = struct.pack(">H", csum)
    udp = struct.pack(">HHHH", src_port, dst_port, 8 + len(packet) + udp_len_delta, 0)
    eth = mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack(">H", ethertype)
    return eth + bytes(ip) + udp + packet + bytes(padding)


def write(name, description, layer, expect, data, fields=None, frame_fields=None, values=None):
    lines = [f"# {description}", f"name: {name}", f"layer: {layer}", f"expect: {expect}"]
    for k, v in (fields or {}).items():
        lines.append(f"{k}: {v}")
    for k, v in (frame_fields or {}).items():
        lines.append(f"frame.{k}: {v}")
    if values is not None:
        lines.append("values: " + " ".join(str(v) for v in values))
    lines.append("hex:")
    for i in range(0, len(data), 16):
        lines.append(" ".join(f"{b:02x}" for b in data[i:i + 16]))
    (OUT / f"{name}.vec").write_text("\n".join(lines) + "\n")


def packet_vector(name, description, values=None, **h):
    dtype = h.get("dtype", "int32")
    data = header(**h) + payload(dtype, values or [])
    fields = dict(version=1, type=h.get("type", "contribution"), dtype=dtype, set=h.get("set", 0),
                  fresh=h.get("fresh", 0), recovery=h.get("recovery", 0),
                  job_id=h.get("job_id", 1), rank=h.get("rank", 0), slot=h.get("slot", 0),
                  count=h.get("count", 0),
                  exponent=h.get("exponent", EXP_NONE), seq=h.get("seq", 0),
                  epoch=h.get("epoch", 0))
    write(name, description, "packet", "ok", data, fields, values=values)
    return data, fields


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.vec"):
        old.unlink()

    ints = [1, -1, 2147483647, -2147483648]
    c_int, c_fields = packet_vector(
        "contribution_int32", "Rank 2's contribution of four int32 lanes to slot 5, set 1.",
        values=ints, type="contribution", dtype="int32", set=1, job_id=1, rank=2, slot=5,
        count=4, exponent=-3, seq=7)
    packet_vector("result_int32", "The aggregator's result for slot 5, set 1, sent to rank 0.",
                  values=[10, 20, -30, 0], type="result", dtype="int32", set=1, job_id=1, rank=0,
                  slot=5, count=4, exponent=12, seq=7)
    packet_vector("contribution_fp32", "fp32 payload (FPGA path): 1.0, -2.5, 0.0, 65504.0.",
                  values=[1.0, -2.5, 0.0, 65504.0], dtype="fp32", job_id=513, rank=3, slot=1000,
                  count=4, seq=0xDEADBEEF)
    packet_vector("contribution_bf16", "bf16 payload: 1.0 (0x3f80), -2.0 (0xc000), +Inf (0x7f80).",
                  values=[0x3F80, 0xC000, 0x7F80], dtype="bf16", job_id=2, rank=1, slot=64,
                  count=3, seq=1)
    offset = wire_format.EXACT_CODE_OFFSET
    packet_vector("contribution_fp32_exact", "Exact fp32: 1.0, -0.75, 0.0, 3.0 at scale 2 (code "
                  f"{2 + offset}, the high byte), announcing exponent -5 for the chunk a window "
                  f"ahead (code {-5 + offset}, the low byte).",
                  values=[1.0, -0.75, 0.0, 3.0], dtype="fp32_exact", job_id=3, rank=1, slot=17,
                  count=4, exponent=(2 + offset) << 8 | (-5 + offset), seq=40, epoch=9)
    packet_vector("contribution_exact_lanes", "A child aggregator's unrounded partial sums: "
                  "2^54 (1.0 at scale 0), -1, and the specials +Inf (INT64_MAX), -Inf "
                  "(INT64_MIN + 1), NaN (INT64_MIN); scale code 98 (e = 0), low byte none.",
                  values=[1 << 54, -1, (1 << 63) - 1, -(1 << 63) + 1, -(1 << 63)],
                  dtype="exact_lanes", job_id=3, rank=0, slot=17, count=5, exponent=offset << 8,
                  seq=40, epoch=9)
    packet_vector("exponent_only", "A preamble packet: no elements, only the block exponent -3.",
                  values=[], job_id=1, rank=0, slot=0, count=0, exponent=-3, seq=0)
    packet_vector("max_count", "The largest packet: 1024 int32 elements 0..1023.",
                  values=list(range(1024)), job_id=7, rank=31, slot=65535, set=1, count=1024,
                  exponent=127, seq=4294967295)
    c_fresh, c_fresh_fields = packet_vector(
        "contribution_fresh", "Rank 2's first contribution to slot 3, set 0 in its run: fresh set, "
        "epoch 0x5eed0001.", values=[5, -6], job_id=1, rank=2, slot=3, set=0, fresh=1, count=2,
        exponent=0, seq=3, epoch=0x5EED0001)
    packet_vector("contribution_fresh_set1", "fresh and set both set (flags 0x03), epoch 1.",
                  values=[1], job_id=4, rank=0, slot=9, set=1, fresh=1, count=1, seq=11, epoch=1)
    packet_vector("contribution_epoch", "A later contribution of the same run (fresh clear) with "
                  "the highest epoch, 0xffffffff.", values=[7, 8, 9], job_id=1, rank=2, slot=3,
                  set=1, count=3, exponent=-1, seq=0x80000003, epoch=0xFFFFFFFF)
    packet_vector("result_epoch", "A result echoes its round's epoch 0x5eed0001 with fresh clear.",
                  values=[5, -6], type="result", job_id=1, rank=0, slot=3, set=0, count=2,
                  exponent=0, seq=3, epoch=0x5EED0001)
    c_recovery, c_recovery_fields = packet_vector(
        "contribution_recovery", "Rank 2 sends its packet 3 on slot 3, set 0 again, whose result "
        "it has, for a worker still waiting on that round: recovery set (flags 0x04), epoch "
        "0x5eed0001.", values=[-2, 40], job_id=1, rank=2, slot=3, set=0, recovery=1, count=2,
        exponent=1, seq=3, epoch=0x5EED0001)
    packet_vector("contribution_recovery_fresh_set1", "set, fresh and recovery all set (flags "
                  "0x07): a recovery copy of the sender's first packet on slot 9, set 1.",
                  values=[-7], job_id=4, rank=1, slot=9, set=1, fresh=1, recovery=1, count=1,
                  seq=11, epoch=1)

    bad = [
        ("truncated", "Ten bytes: shorter than the 22-byte header.", header(count=0)[:10]),
        ("bad_version", "Version 2.", header(version=2)),
        ("bad_type", f"Type {BAD_TYPE} is not a msg_type (contribution, result, notice).",
         header(raw_type=BAD_TYPE)),
        ("bad_dtype", f"Data type {BAD_DTYPE} is not defined.", header(raw_dtype=BAD_DTYPE)),
        ("bad_flags", "The lowest reserved flag bit (bit 3) is set.", header(flags=0x08)),
        ("bad_flags_bit7", "The highest reserved flag bit (bit 7) is set, with set and fresh.",
         header(flags=0x83)),
        ("count_too_large", "count 1025 exceeds the maximum of 1024.",
         header(count=1025) + bytes(4 * 1025)),
        ("length_mismatch_short", "count 4 but only 12 payload bytes.",
         header(count=4) + bytes(12)),
        ("length_mismatch_long", "count 4 but 20 payload bytes.", header(count=4) + bytes(20)),
        ("length_mismatch_bf16", "bf16 count 3 needs 6 bytes, has 8.",
         header(dtype="bf16", count=3) + bytes(8)),
        ("length_mismatch_exact_lanes", "exact_lanes count 2 needs 16 bytes, has 8.",
         header(dtype="exact_lanes", count=2) + bytes(8)),
    ]
    for name, desc, data in bad:
        expect = next((e for e in ("length_mismatch", "bad_flags") if name.startswith(e)), name)
        write(name, desc, "packet", expect, data)

    ff = dict(FRAME_DEFAULTS)
    write("frame_contribution_int32",
          "contribution_int32 in Ethernet/IPv4/UDP; the payload starts at frame byte 64.",
          "frame", "ok", frame(c_int, **ff), c_fields, ff, values=ints)
    ecn = dict(ff, ecn=3)
    write("frame_ecn_ce", "The same frame marked ECN CE (11) in the IPv4 TOS byte.", "frame", "ok",
          frame(c_int, **ecn), c_fields, ecn, values=ints)
    write("frame_padded", "Ethernet padding after the IP datagram is ignored.", "frame", "ok",
          frame(c_int, **ff, padding=6), c_fields, ff, values=ints)
    write("frame_contribution_fresh",
          "contribution_fresh in Ethernet/IPv4/UDP: the epoch sits in frame bytes 60..63.",
          "frame", "ok", frame(c_fresh, **ff), c_fresh_fields, ff, values=[5, -6])
    write("frame_contribution_recovery",
          "contribution_recovery in Ethernet/IPv4/UDP: the recovery flag is bit 2 of frame byte "
          "45.", "frame", "ok", frame(c_recovery, **ff), c_recovery_fields, ff, values=[-2, 40])
    frame_bad = [
        ("frame_truncated", "truncated", "41 bytes: shorter than Ethernet+IPv4+UDP.",
         frame(c_int, **ff)[:41]),
        ("frame_not_ipv4", "not_ipv4", "EtherType 0x86dd (IPv6).",
         frame(c_int, **ff, ethertype=0x86DD)),
        ("frame_bad_ip_checksum", "bad_ip_header", "IPv4 header checksum wrong.",
         frame(c_int, **ff, corrupt_checksum=True)),
        ("frame_not_udp", "not_udp", "IP protocol 6 (TCP).", frame(c_int, **ff, proto=6)),
        ("frame_wrong_port", "wrong_port", "UDP destination port 20034, not 20033.",
         frame(c_int, **dict(ff, dst_port=20034))),
        ("frame_ip_length_mismatch", "ip_length_mismatch", "IP total length 4 beyond the frame.",
         frame(c_int, **ff, ip_len_delta=4)),
        ("frame_udp_length_mismatch", "udp_length_mismatch", "UDP length 2 less than IP says.",
         frame(c_int, **ff, udp_len_delta=-2)),
        ("frame_inner_bad_version", "bad_version", "A valid frame around a version-2 packet.",
         frame(header(version=2), **ff)),
    ]
    for name, expect, desc, data in frame_bad:
        write(name, desc, "frame", expect, data)
    print(f"wrote {len(list(OUT.glob('*.vec')))} vectors to {OUT}")


if __name__ == "__main__":
    main()

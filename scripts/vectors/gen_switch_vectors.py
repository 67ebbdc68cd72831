#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the switch conformance vectors in tests/vectors/switch/.

Each vector is one case of the switch's behaviour as whole Ethernet frames: the switch's
configuration (its MAC/IP, the jobs in the docs/job-format.md JSON, and the BMv2
simple_switch_CLI lines the P4 control-plane contract derives from them), then steps: a frame in
on a port, the outcome, the frames out (port + bytes), and the counters at the end. The format is
described in tests/vectors/README.md.

Nothing here runs or imports the C++ code. Frames are encoded with Python's struct, and the
expected outputs come from a second implementation of the algorithm in sim/switch/README.md (the
seq table, the epoch, the bitmap, the countdown) and of the frame handling in
sim/switch/pipeline.md (ARP, ICMP echo, L2 forwarding, the output frames' IPv4 fields, the
round's OR of its contributions' ECN bits in its results; for a job with a parent, the partial sum
that goes up, the resends to the parent and the parent's result multicast, as
docs/wire-format.md, "Aggregation trees", states them). Every step also states the outcome
its author expects, and every case may state the sums it expects and the ECN bits of its
results (0 unless a step says otherwise): the generator stops if its model disagrees, so a
vector is right by two independent accounts.
Every contribution carries its run's epoch (CASE_EPOCH unless the step names another) and is
fresh when it is its sender's first packet on that (slot, set) in the run, or a copy of it (a
case that takes up a run after a restart of the switch says not fresh itself); `recovery` only
where a step sets it. Results carry fresh and recovery clear. A contribution carries ECN 0
(Not-ECT) in its IPv4 header unless the step gives other bits.
    python3 scripts/vectors/gen_switch_vectors.py
"""
import json
import pathlib
import struct

import wire_format

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "switch"

NETAGG_PORT = wire_format.UDP_PORT
EXP_NONE = wire_format.EXP_NONE
CONTRIBUTION, RESULT = wire_format.TYPES["contribution"], wire_format.TYPES["result"]
NOTICE = wire_format.TYPES["notice"]
BAD_TYPE = max(wire_format.TYPES.values()) + 1  # the first type the format does not define
DTYPES = wire_format.DTYPES
DTYPE_SIZES = {DTYPES[name]: size for name, size in wire_format.ELEMENT_SIZES.items()}
BAD_DTYPE = max(DTYPES.values()) + 1  # the first dtype the format does not define
MAX_COUNT = wire_format.MAX_COUNT

SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "10.0.0.254"

# Drop reasons of the netagg check (the switch's drops counter, in its order).
DROP_REASONS = wire_format.SWITCH_DROPS


# ---- encoding ---------------------------------------------------------------------------------

def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def mac_text(b):
    return ":".join(f"{x:02x}" for x in b)


def ip_int(text):
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def ip_text(v):
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


def ones_sum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksum(data):
    return (~ones_sum(data)) & 0xFFFF


def netagg_packet(type=CONTRIBUTION, dtype="int32", set=0, fresh=0, recovery=0, job_id=1, rank=0,
                  slot=0, values=(), exponent=EXP_NONE, seq=0, epoch=0,
                  version=wire_format.VERSION, flags=None, count=None, raw_dtype=None, extra=b""):
    d = DTYPES[dtype] if raw_dtype is None else raw_dtype
    n = len(values) if count is None else count
    hdr = wire_format.pack_header(version=version, type=type, dtype=d,
                                  flags=((set | fresh << 1 | recovery << 2) if flags is None
                                         else flags),
                                  job_id=job_id, rank=rank, slot=slot, count=n,
                                  exponent=exponent, seq=seq & 0xFFFFFFFF, epoch=epoch)
    if dtype == "bf16":
        body = b"".join(struct.pack(">H", v & 0xFFFF) for v in values)
    elif dtype == "exact_lanes":
        body = b"".join(struct.pack(">Q", v & 0xFFFFFFFFFFFFFFFF) for v in values)
    else:
        body = b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in values)
    return hdr + body + extra


def ipv4_header(src_ip, dst_ip, proto, payload_len, tos=0, ident=0, flags_frag=0x4000, ttl=64,
                corrupt_checksum=False, length_delta=0):
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, tos, 20 + payload_len + length_delta, ident,
                               flags_frag, ttl, proto, 0, ip_int(src_ip), ip_int(dst_ip)))
    c = checksum(bytes(ip))
    if corrupt_checksum:
        c ^= 0x0101
    ip[10:12] = struct.pack(">H", c)
    return bytes(ip)


def eth(dst_mac, src_mac, ethertype):
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack(">H", ethertype)


def udp_frame(src_mac, dst_mac, src_ip, dst_ip, src_port, dst_port, payload, tos=0, ident=0,
              ttl=64, udp_checksum=0, proto=17, **ip_kw):
    udp = struct.pack(">HHHH", src_port, dst_port, 8 + len(payload), udp_checksum)
    return (eth(dst_mac, src_mac, 0x0800) +
            ipv4_header(src_ip, dst_ip, proto, 8 + len(payload), tos=tos, ident=ident, ttl=ttl,
                        **ip_kw) + udp + payload)


def arp_frame(op, src_mac, dst_mac, sha, spa, tha, tpa):
    return eth(dst_mac, src_mac, 0x0806) + struct.pack(
        ">HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, mac_bytes(sha), struct.pack(">I", ip_int(spa)),
        mac_bytes(tha), struct.pack(">I", ip_int(tpa)))


def icmp_echo_frame(src_mac, dst_mac, src_ip, dst_ip, type, ident, seq, data, tos=0, ip_ident=0,
                    ttl=64):
    msg = bytearray(struct.pack(">BBHHH", type, 0, 0, ident, seq) + data)
    msg[2:4] = struct.pack(">H", checksum(bytes(msg)))
    return (eth(dst_mac, src_mac, 0x0800) +
            ipv4_header(src_ip, dst_ip, 1, len(msg), tos=tos, ident=ip_ident, ttl=ttl) +
            bytes(msg))


# ---- the switch, as sim/switch/README.md and sim/switch/pipeline.md state it -----------------

def serial_age(seq, round_seq):
    d = (seq - round_seq) & 0xFFFFFFFF
    return d - (1 << 32) if d >= (1 << 31) else d


class SlotSet:
    def __init__(self):
        self.bitmap = 0
        self.remaining = 0
        self.count = 0
        self.exponent = EXP_NONE
        self.seq = 0
        self.has_round = False
        self.epoch = 0
        self.ecn = 0  # the OR of the round's contributions' IPv4 ECN bits
        self.values = []
        # Trees: the round's partial sum went to the parent and its result is not here yet;
        # whether the round's first packet was fresh; the partial sum, kept after the result.
        self.upstream = False
        self.fresh = 0
        self.partials = []


class Switch:
    """The frame-level pipeline: ARP/ICMP for the switch's address, the netagg checks and
    registers, multicast by the job's workers, unicast answers, L2 forwarding."""

    def __init__(self, switch_mac, switch_ip, jobs):
        self.mac, self.ip = switch_mac, switch_ip
        self.jobs = {j["job_id"]: j for j in jobs}
        self.forward = {}
        for j in jobs:
            for w in j["workers"]:
                self.forward[w["mac"]] = w["switch_port"]
            if "parent" in j:
                self.forward[j["parent"]["mac"]] = j["parent"]["switch_port"]
        # Trees: the jobs with a parent (their results come from it)
        self.children = [j for j in jobs if "parent" in j]
        self.slots = {}
        self.counters = {}
        self.notice_drops = {}  # (reason, rank % 32): drops, for the notices' rate

    def count(self, name, n=1):
        self.counters[name] = self.counters.get(name, 0) + n

    def regs(self, slot, s):
        return self.slots.setdefault((slot, s), SlotSet())

    def drop(self, reason, error=None):
        self.count("dropped_" + reason)
        if error:
            self.count("malformed_" + error)
        return ("dropped " + reason + (" " + error if error else "")), []

    def noticed(self, reason, f, p, waiting=None):
        """Drops the contribution p (in frame f) for `reason` and, for the first drop of the
        reason from the rank (its low 5 bits) and one in every notice_interval after it, answers it with a notice out of the
        ingress port, MAC, IP and UDP port swapped, ECN 0: the packet's header with type notice,
        dtype int32, fresh and recovery clear, count and exponent of the payload [reason code,
        the bitmap of the ranks a duplicate's round waits for]. Recovery copies get none."""
        outcome, _ = self.drop(reason)
        if p[3] & 4:
            return outcome, []  # a recovery copy: its sender has the result
        rank = struct.unpack(">H", p[6:8])[0]
        key = (reason, rank % 32)  # counted by reason and the rank's low 5 bits
        before = self.notice_drops.get(key, 0)
        self.notice_drops[key] = before + 1
        if before % wire_format.NOTICE_INTERVAL and reason != "duplicate":
            return outcome, []  # not due (a duplicate answers a retransmission: always due)
        (version, type, dtype, flags, job_id, rank, slot, count, exponent, seq,
         epoch) = struct.unpack(">BBBBHHHHhII", p[:22])
        words = [wire_format.NOTICE_REASONS[reason]] + ([] if waiting is None else [waiting])
        notice = netagg_packet(type=NOTICE, set=flags & 1, job_id=job_id, rank=rank, slot=slot,
                               values=words, seq=seq, epoch=epoch)
        self.count("notices")
        src_port, dst_port = struct.unpack(">HH", f[34:38])
        frame = self.out_udp(mac_text(f[6:12]), ip_text(struct.unpack(">I", f[26:30])[0]),
                             src_port, notice, 0, src_mac=mac_text(f[0:6]),
                             src_ip=ip_text(struct.unpack(">I", f[30:34])[0]), src_port=dst_port)
        return outcome, [(self.port_in, frame)]

    def result_packet(self, job_id, slot, s, rank):
        r = self.regs(slot, s)
        # Results carry the round's epoch; fresh and recovery are 0 in results.
        return netagg_packet(type=RESULT, set=s, job_id=job_id, rank=rank, slot=slot,
                             values=r.values[:r.count], exponent=r.exponent, seq=r.seq,
                             epoch=r.epoch)

    def out_udp(self, dst_mac, dst_ip, dst_port, payload, ecn, src_mac=None, src_ip=None,
                src_port=NETAGG_PORT):
        # Every frame the switch originates: IPv4 DSCP 0 and ECN `ecn` (a result: its round's
        # OR), identification 0, DF, TTL 64, header checksum computed (it covers the TOS byte);
        # UDP checksum 0 (sim/switch/pipeline.md).
        return udp_frame(src_mac or self.mac, dst_mac, src_ip or self.ip, dst_ip, src_port,
                         dst_port, payload, tos=ecn & 3)

    def frame_error(self, f):
        """wire::decode_frame's check order, for a frame addressed to the switch's IP."""
        if len(f) < 42:
            return "truncated"
        if struct.unpack(">H", f[12:14])[0] != 0x0800:
            return "not_ipv4"
        ip = f[14:34]
        if ip[0] != 0x45 or (struct.unpack(">H", ip[6:8])[0] & 0x3FFF) or checksum(ip) != 0:
            return "bad_ip_header"
        if ip[9] != 17:
            return "not_udp"
        ip_len = struct.unpack(">H", ip[2:4])[0]
        if ip_len < 28 or 14 + ip_len > len(f):
            return "ip_length_mismatch"
        if struct.unpack(">H", f[38:40])[0] != ip_len - 20:
            return "udp_length_mismatch"
        if struct.unpack(">H", f[36:38])[0] != NETAGG_PORT:
            return "wrong_port"
        return None

    def packet_error(self, p):
        if len(p) < 22:
            return "truncated"
        version, type, dtype, flags = p[0], p[1], p[2], p[3]
        count = struct.unpack(">H", p[10:12])[0]
        if version != 1:
            return "bad_version"
        if type not in wire_format.TYPES.values():
            return "bad_type"
        if dtype not in DTYPE_SIZES:
            return "bad_dtype"
        if flags & 0xF8:  # bit 0 set, bit 1 fresh, bit 2 recovery; bits 3..7 must be zero
            return "bad_flags"
        if count > MAX_COUNT:
            return "count_too_large"
        if len(p) != 22 + count * DTYPE_SIZES[dtype]:
            return "length_mismatch"
        return None

    def process(self, port, f):
        """One frame in on `port`: returns (outcome, [(port, frame), ...])."""
        self.count("frames_in")
        self.port_in = port
        outcome, out = self.classify(port, f)
        self.count("frames_out", len(out))
        return outcome, out

    def classify(self, port, f):
        if len(f) < 14:
            self.count("dropped_runt")
            return "dropped runt", []
        ethertype = struct.unpack(">H", f[12:14])[0]
        if ethertype == 0x0806 and len(f) >= 42:
            htype, ptype, hlen, plen, op = struct.unpack(">HHBBH", f[14:22])
            tpa = ip_text(struct.unpack(">I", f[38:42])[0])
            if (htype, ptype, hlen, plen, op) == (1, 0x0800, 6, 4, 1) and tpa == self.ip:
                sha, spa = mac_text(f[22:28]), ip_text(struct.unpack(">I", f[28:32])[0])
                self.count("arp_replies")
                return "arp_reply", [(port, arp_frame(2, self.mac, sha, self.mac, self.ip, sha,
                                                      spa))]
        if ethertype == 0x0800 and len(f) >= 34 and ip_text(
                struct.unpack(">I", f[30:34])[0]) == self.ip:
            return self.for_switch(port, f)
        dst = mac_text(f[0:6])
        if dst in self.forward:
            self.count("forwarded")
            return "forwarded", [(self.forward[dst], f)]
        self.count("dropped_no_forward_entry")
        return "dropped no_forward_entry", []

    def for_switch(self, port, f):
        ip = f[14:34]
        ip_ok = (ip[0] == 0x45 and not (struct.unpack(">H", ip[6:8])[0] & 0x3FFF) and
                 checksum(ip) == 0)
        ip_len = struct.unpack(">H", ip[2:4])[0]
        if (ip_ok and ip[9] == 1 and ip_len >= 28 and 14 + ip_len <= len(f) and f[34] == 8 and
                f[35] == 0):
            # Echo reply (ECN 0, whatever the request's): type 0, the rest of the message as it
            # came; its checksum recomputed here over the whole message (the P4 and C++ update it
            # incrementally: the same result for a request whose checksum was right).
            msg = bytearray(f[34:14 + ip_len])
            msg[0] = 0
            msg[2:4] = b"\0\0"
            msg[2:4] = struct.pack(">H", checksum(bytes(msg)))
            reply = (eth(mac_text(f[6:12]), mac_text(f[0:6]), 0x0800) +
                     ipv4_header(ip_text(struct.unpack(">I", ip[16:20])[0]),
                                 ip_text(struct.unpack(">I", ip[12:16])[0]), 1, len(msg)) +
                     bytes(msg))
            self.count("icmp_echo_replies")
            return "icmp_echo_reply", [(port, reply)]
        self.count("packets_in")
        err = self.frame_error(f)
        if err:
            return self.drop("malformed", err)
        ip_len = struct.unpack(">H", f[16:18])[0]
        p = f[42:14 + ip_len]
        err = self.packet_error(p)
        if err:
            return self.drop("malformed", err)
        version, type, dtype, flags, job_id, rank, slot, count, exponent, seq, epoch = (
            struct.unpack(">BBBBHHHHhII", p[:22]))
        s, fresh, recovery = flags & 1, (flags >> 1) & 1, (flags >> 2) & 1
        src = (ip_text(struct.unpack(">I", f[26:30])[0]), struct.unpack(">H", f[34:36])[0])
        ecn = f[15] & 3  # the IPv4 ECN bits (the TOS byte's low two)
        values_in = [struct.unpack(">i", p[22 + 4 * i:26 + 4 * i])[0]
                     for i in range(count)] if DTYPE_SIZES[dtype] == 4 else []
        if type == RESULT and self.children:
            return self.from_parent(src, ecn, s, job_id, rank, slot, dtype, count, exponent, seq,
                                    epoch, values_in)
        if type != CONTRIBUTION:
            return self.drop("not_contribution")
        job = self.jobs.get(job_id)
        if job is None:
            return self.noticed("unknown_job", f, p)
        workers = sorted(job["workers"], key=lambda w: w["rank"])
        if rank >= len(workers):
            return self.noticed("rank_out_of_range", f, p)
        ip_s, port_s = workers[rank]["address"].split(":")
        if (ip_s, int(port_s)) != src:
            return self.noticed("foreign_source", f, p)
        base, n_slots = job["slots"]["base"], job["slots"]["count"]
        if not base <= slot < base + n_slots:
            return self.noticed("slot_out_of_range", f, p)
        if dtype != 0:
            return self.noticed("unsupported_dtype", f, p)
        if count > job["elements_per_packet"]:
            return self.noticed("count_too_large_for_job", f, p)

        r = self.regs(slot, s)
        bit = 1 << rank
        first = True
        # The epoch first: a round of another run is taken over by a fresh packet (its sender's
        # first on this set in its run) and closed to every other packet of that run.
        takeover = r.has_round and epoch != r.epoch
        if recovery:
            # A recovery copy (a packet whose result its sender has, sent again for workers still
            # waiting on its round) never starts a round nor takes a set over: it is only taken
            # by the round of its own epoch and seq, and then exactly as any packet.
            if takeover:
                return self.drop("stale_epoch")
            if not r.has_round:
                return self.drop("no_round")
            age = serial_age(seq, r.seq)
            if age < 0:
                return self.drop("stale")
            if age > 0:
                return self.drop("no_round")
        elif takeover and not fresh:
            return self.noticed("stale_epoch", f, p)
        if r.has_round and not takeover:
            age = serial_age(seq, r.seq)
            complete = r.remaining == 0
            if age < 0:
                return self.noticed("stale", f, p)
            # Newer: a new round, whether the set's round is complete or not. Every worker has had
            # that round's result when any sends a newer packet to the set (its packet P + 2W
            # follows the result of P + W, which needed every worker's P + W, each sent after
            # P's result), so an unfinished round there (formed again after a restart by a
            # worker whose old result then arrived) is over.
            if age == 0:
                if count != r.count:
                    return self.noticed("count_mismatch", f, p)
                if complete and r.upstream:
                    # Trees: the round waits for the parent; its copy or the parent's answer may
                    # have been lost: the partial sum goes up again (the parent adds it, or
                    # answers it from its stored result).
                    self.count("resent_to_parent")
                    return "sent_to_parent", [self.to_parent(job, slot, s, recovery=0)]
                up = []
                if complete and "parent" in job and recovery:
                    # Trees: a recovery copy to a round answered here: the parent may have
                    # restarted without this switch's part, which goes up again, flagged
                    # recovery, besides the result to the copy's sender.
                    self.count("resent_to_parent")
                    up = [self.to_parent(job, slot, s, recovery=1)]
                if complete:
                    self.count("results_resent")
                    # Back out of the ingress port, MAC, IP and UDP port swapped, with the
                    # round's ECN OR (the request's own bits are not added: the round is over).
                    answer = self.out_udp(mac_text(f[6:12]), src[0], src[1],
                                          self.result_packet(job_id, slot, s, rank), r.ecn,
                                          src_mac=mac_text(f[0:6]),
                                          src_ip=ip_text(struct.unpack(">I", f[30:34])[0]),
                                          src_port=struct.unpack(">H", f[36:38])[0])
                    return "result_resent", up + [(port, answer)]
                if r.bitmap & bit:
                    everyone = (1 << len(workers)) - 1
                    return self.noticed("duplicate", f, p, waiting=everyone & ~r.bitmap)
            first = age > 0
        values = [struct.unpack(">i", p[22 + 4 * i:26 + 4 * i])[0] for i in range(count)]
        # Every new round (the set holds none, a newer seq, or a takeover) starts with its
        # starter's bit alone, never OR'ed with the stored bits: they belong to an earlier round
        # (of this run or, on a takeover, of another). A join sets its sender's bit. The other
        # set's bitmap is never touched (no SwitchML pair update): after a restart it can hold a
        # round its sender still adds recovery copies to, and clearing the sender's bit there
        # would let the next copy be added twice.
        # The ECN OR likewise: a new round starts from its starter's bits, a join ORs its bits
        # in; a dropped packet (a duplicate too) leaves it.
        r.bitmap = bit if first else r.bitmap | bit
        r.ecn = ecn if first else r.ecn | ecn
        if first:
            r.has_round = True
            r.epoch = epoch
            r.upstream = False
            r.fresh = fresh
            r.remaining = len(workers)
            r.count = count
            r.exponent = exponent
            r.seq = seq
            r.values = values
        else:
            r.exponent = max(r.exponent, exponent)
            r.values = [((a + b + 2**31) % 2**32) - 2**31 for a, b in zip(r.values, values)]
        r.remaining -= 1
        if takeover:
            self.count("epoch_takeovers")  # besides aggregated: the set held another run's round
        self.count("aggregated")
        if r.remaining:
            return "aggregated", []
        if "parent" in job:
            # Trees: a child's round is not answered here: its partial sum goes to the parent as
            # one contribution, and the round waits for the parent's result.
            r.partials = list(r.values)
            r.upstream = True
            self.count("sent_to_parent")
            return "sent_to_parent", [self.to_parent(job, slot, s, recovery=0)]
        self.count("completions")
        self.count("results_multicast", len(workers))
        out = []
        for w in workers:
            w_ip, w_port = w["address"].split(":")
            out.append((w["switch_port"],
                        self.out_udp(w["mac"], w_ip, int(w_port),
                                     self.result_packet(job_id, slot, s, w["rank"]), r.ecn)))
        return "completed", out

    def to_parent(self, job, slot, s, recovery):
        """The round's partial sum as this switch's contribution to the parent: (port, frame)."""
        parent, r = job["parent"], self.regs(slot, s)
        pkt = netagg_packet(set=s, fresh=r.fresh if not recovery else 0, recovery=recovery,
                            job_id=parent.get("job_id", job["job_id"]), rank=parent["rank"],
                            slot=parent["slot_base"] + slot - job["slots"]["base"],
                            values=r.partials[:r.count], exponent=r.exponent, seq=r.seq,
                            epoch=r.epoch)
        ip, udp_port = parent["address"].split(":")
        return parent["switch_port"], self.out_udp(parent["mac"], ip, int(udp_port), pkt, r.ecn)

    def from_parent(self, src, ecn, s, job_id, rank, slot, dtype, count, exponent, seq, epoch,
                    values):
        """A result packet, with jobs that have a parent: the parent's answer to a round that
        waits for it completes the round; anything else is dropped."""
        job = None
        for j in self.children:
            ip, udp_port = j["parent"]["address"].split(":")
            if j["parent"].get("job_id", j["job_id"]) == job_id and (ip, int(udp_port)) == src:
                job = j
        if job is None:
            return self.drop("not_contribution")  # a result, and from no parent of ours
        parent = job["parent"]
        base, n_slots = job["slots"]["base"], job["slots"]["count"]
        if rank != parent["rank"]:
            return self.drop("rank_out_of_range")
        if not parent["slot_base"] <= slot < parent["slot_base"] + n_slots:
            return self.drop("slot_out_of_range")
        if dtype != 0:
            return self.drop("unsupported_dtype")
        own_slot = base + slot - parent["slot_base"]
        r = self.regs(own_slot, s)
        if not r.has_round:
            return self.drop("no_round")
        if epoch != r.epoch:
            return self.drop("stale_epoch")
        age = serial_age(seq, r.seq)
        if age < 0:
            return self.drop("stale")
        if age > 0 or r.remaining:
            return self.drop("no_round")
        if not r.upstream:
            return self.drop("duplicate")  # answered already
        if count != r.count:
            return self.drop("count_mismatch")
        r.values, r.exponent = values, exponent
        r.ecn |= ecn
        r.upstream = False
        workers = sorted(job["workers"], key=lambda w: w["rank"])
        self.count("results_from_parent")
        self.count("completions")
        self.count("results_multicast", len(workers))
        out = []
        for w in workers:
            w_ip, w_port = w["address"].split(":")
            out.append((w["switch_port"],
                        self.out_udp(w["mac"], w_ip, int(w_port),
                                     self.result_packet(job["job_id"], own_slot, s, w["rank"]),
                                     r.ecn)))
        return "completed", out

    def final_counters(self):
        c = dict(self.counters)
        drops = sum(v for k, v in c.items() if k[len("dropped_"):] in DROP_REASONS)
        if drops:
            c["dropped_total"] = drops
        return c


# ---- the control-plane contract: the BMv2 lines for the jobs ---------------------------------

def bmv2_lines(switch_mac, switch_ip, jobs):
    """/tmp/netagg-p4-context.md: job k gets multicast group k + 1, worker r of job k gets
    rid 1 + 32k + r, one multicast node per worker (handles 0, 1, ... in creation order)."""
    lines = [f"table_set_default NetaggIngress.switch_identity set_switch_identity "
             f"{switch_mac} {switch_ip}"]
    forwarded = {}
    for job in jobs:
        for w in sorted(job["workers"], key=lambda w: w["rank"]):
            if w["mac"] in forwarded:
                assert forwarded[w["mac"]] == w["switch_port"], "one MAC on two ports"
                continue
            forwarded[w["mac"]] = w["switch_port"]
            lines.append(f"table_add NetaggIngress.forward set_egress_port {w['mac']} => "
                         f"{w['switch_port']}")
        if "parent" in job:
            parent = job["parent"]
            if parent["mac"] in forwarded:
                assert forwarded[parent["mac"]] == parent["switch_port"], "one MAC on two ports"
            else:
                forwarded[parent["mac"]] = parent["switch_port"]
                lines.append(f"table_add NetaggIngress.forward set_egress_port {parent['mac']} "
                             f"=> {parent['switch_port']}")
    handle = 0
    for k, job in enumerate(jobs):
        workers = sorted(job["workers"], key=lambda w: w["rank"])
        grp = k + 1
        lines.append(f"table_add NetaggIngress.job_table set_job {job['job_id']} => "
                     f"{len(workers)} {job['slots']['base']} {job['slots']['count']} "
                     f"{job['elements_per_packet']} {grp}")
        for w in workers:
            ip, port = w["address"].split(":")
            lines.append(f"table_add NetaggIngress.worker_table set_worker {job['job_id']} {ip} "
                         f"{port} => {w['rank']}")
        for w in workers:
            ip, port = w["address"].split(":")
            lines.append(f"table_add NetaggEgress.result_destination set_result_destination "
                         f"{1 + 32 * k + w['rank']} => {w['mac']} {ip} {port} {w['rank']}")
        if "parent" in job:
            # Trees (docs/control-plane.md): the parent, where its results come from, and the
            # mirroring session (numbered as the group) of the recovery clones, on its port.
            parent = job["parent"]
            ip, port = parent["address"].split(":")
            parent_job = parent.get("job_id", job["job_id"])
            lines.append(f"table_add NetaggIngress.parent_table set_parent {job['job_id']} => "
                         f"{parent['mac']} {ip} {port} {parent['switch_port']} {parent_job} "
                         f"{parent['rank']} {parent['slot_base']}")
            lines.append(f"table_add NetaggIngress.parent_source set_parent_source {parent_job} "
                         f"{ip} {port} => {job['job_id']}")
            lines.append(f"mirroring_add {grp} {parent['switch_port']}")
        lines.append(f"mc_mgrp_create {grp}")
        handles = []
        for w in workers:
            lines.append(f"mc_node_create {1 + 32 * k + w['rank']} {w['switch_port']}")
            handles.append(handle)
            handle += 1
        for h in handles:
            lines.append(f"mc_node_associate {grp} {h}")
    return lines


# ---- cases ------------------------------------------------------------------------------------

def make_job(job_id, n, base, count, epp, host=1, first_port=31000, switch_port=1):
    """Worker r: MAC 02:00:00:00:<job>:<r>, IP 10.0.<job>.<host + r>, UDP first_port + r,
    switch port switch_port + r."""
    return {"job_id": job_id, "slots": {"base": base, "count": count},
            "elements_per_packet": epp, "aggregator": f"{SWITCH_IP}:{NETAGG_PORT}",
            "workers": [{"rank": r, "address": f"10.0.{job_id}.{host + r}:{first_port + r}",
                         "mac": f"02:00:00:00:{job_id:02x}:{r + 1:02x}",
                         "switch_port": switch_port + r} for r in range(n)]}


def hex_groups(frame, cuts):
    """Hex with a space between the protocol headers, so a reader sees the layers."""
    parts, at = [], 0
    for c in cuts + [len(frame)]:
        if c > at and at < len(frame):
            parts.append(frame[at:min(c, len(frame))].hex())
            at = c
    return " ".join(parts)


def layers(frame):
    if len(frame) >= 14 and frame[12:14] == b"\x08\x00":
        cuts = [6, 12, 14, 34]
        if len(frame) >= 34 and frame[23] == 17:
            cuts += [42, 64]
        return hex_groups(frame, cuts)
    return hex_groups(frame, [6, 12, 14])


# The epoch of every contribution in a case unless a step names another (a run's token).
CASE_EPOCH = 0x5EED0001

# The IPv4 ECN codepoints (RFC 3168), as a step names them.
ECN_NAMES = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}


class Case:
    def __init__(self, name, description, jobs, switch_mac=SWITCH_MAC, switch_ip=SWITCH_IP,
                 epoch=CASE_EPOCH):
        self.name, self.description, self.jobs = name, description, jobs
        self.epoch = epoch
        # (epoch, job, rank, slot, set) -> the seq of the sender's first packet there in its run.
        self.first_seq = {}
        self.switch = Switch(switch_mac, switch_ip, jobs)
        self.lines = [f"# {description}", f"name: {name}",
                      f"switch: {switch_mac} {switch_ip}"]
        self.lines += ["job: " + json.dumps(j, separators=(", ", ": ")) for j in jobs]
        self.lines += ["bmv2: " + line for line in bmv2_lines(switch_mac, switch_ip, jobs)]

    def worker(self, job_id, rank):
        return next(w for w in self.jobs_by_id()[job_id]["workers"] if w["rank"] == rank)

    def jobs_by_id(self):
        return {j["job_id"]: j for j in self.jobs}

    def frame(self, port, frame, expect, note, sums=None):
        """Sends one frame; `expect` is the author's outcome, `sums` the values every output
        frame's payload must hold. Both are checked against the model before anything is
        written."""
        outcome, out = self.switch.process(port, frame)
        if outcome != expect:
            raise SystemExit(f"{self.name}: step '{note}': model says '{outcome}', "
                             f"case says '{expect}'")
        if sums is not None:
            for _, o in out:
                got = [struct.unpack(">i", o[64 + 4 * i:68 + 4 * i])[0] for i in range(len(sums))]
                if got != sums or len(o) != 64 + 4 * len(sums):
                    raise SystemExit(f"{self.name}: step '{note}': sums {got}, case says {sums}")
        self.lines.append("")
        self.lines.append(f"step: {note}")
        self.lines.append(f"in: {port} {layers(frame)}")
        self.lines.append(f"expect: {outcome}")
        for p, o in sorted(out, key=lambda x: x[0]):
            self.lines.append(f"out: {p} {layers(o)}")
        return out

    def counter(self, name, expect):
        """The author's value of one of the model's counters so far, checked like an outcome."""
        got = self.switch.counters.get(name, 0)
        if got != expect:
            raise SystemExit(f"{self.name}: counter {name}: model says {got}, case says {expect}")

    def run_flags(self, job_id, rank, slot, s, seq, epoch=None, fresh=None, type=CONTRIBUTION):
        """The epoch (the case's unless given) and fresh flag a worker of that run puts on the
        packet: fresh on its first packet to (slot, set) in the run and on copies of that packet
        (the same seq); never on a result."""
        epoch = self.epoch if epoch is None else epoch
        if fresh is None:
            if type != CONTRIBUTION:
                return epoch, 0
            key = (epoch, job_id, rank, slot, s)
            fresh = int(self.first_seq.setdefault(key, seq & 0xFFFFFFFF) == seq & 0xFFFFFFFF)
        return epoch, fresh

    def packet(self, job_id, rank, slot, s, seq, values=(), epoch=None, fresh=None, **kw):
        """A netagg packet with the run's epoch and fresh flag (see run_flags)."""
        epoch, fresh = self.run_flags(job_id, rank, slot, s, seq, epoch, fresh,
                                      kw.get("type", CONTRIBUTION))
        return netagg_packet(set=s, fresh=fresh, job_id=job_id, rank=rank, slot=slot,
                             values=values, seq=seq, epoch=epoch, **kw)

    def send(self, job_id, rank, slot, s, seq, values, expect, exponent=EXP_NONE, sums=None,
             note=None, sender=None, epoch=None, fresh=None, recovery=0, why=None, ecn=None,
             result_ecn=0, **kw):
        """One contribution from a worker. `ecn`: the IPv4 ECN bits it carries (0 unless given;
        the step names them when given); `result_ecn`: the ECN bits the author expects on every
        result frame out (its round's OR), checked against the model's."""
        epoch, fresh = self.run_flags(job_id, rank, slot, s, seq, epoch, fresh,
                                      kw.get("type", CONTRIBUTION))
        w = self.worker(*(sender or (job_id, rank)))
        ip, port = w["address"].split(":")
        pkt = netagg_packet(set=s, fresh=fresh, recovery=recovery, job_id=job_id, rank=rank,
                            slot=slot, values=values, exponent=exponent, seq=seq, epoch=epoch,
                            **kw)
        f = udp_frame(w["mac"], SWITCH_MAC, ip, SWITCH_IP, int(port), NETAGG_PORT, pkt,
                      tos=ecn or 0)
        if note is None:
            who = f"job {job_id} rank {rank}" + (f" (from job {sender[0]} rank {sender[1]}'s "
                                                 f"address)" if sender else "")
            note = f"{who}: slot {slot} set {s} seq {seq} values {list(values)}"
            if exponent != EXP_NONE:
                note += f" exponent {exponent}"
        note += (f", epoch {epoch:#010x}" + (" fresh" if fresh else "") +
                 (" recovery" if recovery else ""))
        if ecn is not None:
            note += f", ECN {ECN_NAMES[ecn]} ({ecn})"
        if why:
            note += f": {why}"
        out = self.frame(w["switch_port"], f, expect, note, sums)
        self.check_out(out, note, epoch, s, result_ecn)
        return out

    def check_out(self, out, note, epoch, s, result_ecn):
        # A result answers a packet of the round's own epoch: it carries that epoch, fresh and
        # recovery clear (flags = the set bit only). A partial sum for a parent (type
        # contribution) carries the round's epoch and set, fresh or recovery as the model says.
        for _, o in out:
            flags, got = o[45], struct.unpack(">I", o[60:64])[0]
            if o[43] == CONTRIBUTION:
                flags &= 1
            if got != epoch or flags != s:
                raise SystemExit(f"{self.name}: step '{note}': result epoch {got:#010x} flags "
                                 f"{flags:#04x}, case says epoch {epoch:#010x} flags {s:#04x}")
            # Its IPv4 header: DSCP 0, the round's ECN OR, a checksum over that TOS byte.
            if o[15] != result_ecn or checksum(o[14:34]) != 0:
                raise SystemExit(f"{self.name}: step '{note}': result TOS {o[15]:#04x} (IPv4 "
                                 f"checksum {'right' if checksum(o[14:34]) == 0 else 'wrong'}), "
                                 f"case says ECN {result_ecn}")

    def from_parent(self, job_id, slot, s, seq, values, expect, exponent=EXP_NONE, sums=None,
                    epoch=None, rank=None, parent_job=None, udp_port=None, ecn=0, why=None,
                    result_ecn=0, count=None):
        """A result from job `job_id`'s parent (its job id, rank and slots there unless given),
        in on the parent's port. `slot` is the job's own slot; the packet carries the parent's."""
        job = self.jobs_by_id()[job_id]
        parent = job["parent"]
        epoch = self.epoch if epoch is None else epoch
        rank = parent["rank"] if rank is None else rank
        parent_job = parent.get("job_id", job_id) if parent_job is None else parent_job
        ip, port = parent["address"].split(":")
        port = int(port) if udp_port is None else udp_port
        parent_slot = parent["slot_base"] + slot - job["slots"]["base"]
        pkt = netagg_packet(type=RESULT, set=s, job_id=parent_job, rank=rank, slot=parent_slot,
                            values=values, exponent=exponent, seq=seq, epoch=epoch, count=count)
        f = udp_frame(parent["mac"], SWITCH_MAC, ip, SWITCH_IP, port, NETAGG_PORT, pkt,
                      tos=ecn)
        note = (f"the parent's result: job {parent_job} rank {rank} slot {parent_slot} "
                f"(here {slot}) set {s} seq {seq} values {list(values)}")
        if exponent != EXP_NONE:
            note += f" exponent {exponent}"
        note += f", epoch {epoch:#010x}, from {ip}:{port}"
        if ecn:
            note += f", ECN {ECN_NAMES[ecn]} ({ecn})"
        if why:
            note += f": {why}"
        out = self.frame(parent["switch_port"], f, expect, note, sums)
        self.check_out(out, note, epoch, s, result_ecn)
        return out

    def write(self):
        self.lines.append("")
        counters = self.switch.final_counters()
        self.lines.append("counters: " + " ".join(f"{k}={v}" for k, v in sorted(counters.items())))
        (OUT / f"{self.name}.vec").write_text("\n".join(self.lines) + "\n")


def cases():
    out = []
    J1 = make_job(1, 3, 8, 4, 4)  # slots [8, 12), W = 4, ports 1..3

    c = Case("basic_reduction", "Three workers add four lanes in slot 9, set 0; the last one "
             "completes the round and every worker gets the sum, addressed to it.", [J1])
    c.send(1, 0, 9, 0, 77, [1, 2, 3, 4], "aggregated", exponent=2)
    c.send(1, 2, 9, 0, 77, [100, 200, 300, 400], "aggregated", exponent=2)
    c.send(1, 1, 9, 0, 77, [10, 20, 30, 40], "completed", exponent=2, sums=[111, 222, 333, 444])
    out.append(c)

    c = Case("retransmission_after_completion", "A worker that lost its result sends its "
             "contribution again: the stored result comes back to it alone, out of its port, "
             "every time; nothing is added twice.", [J1])
    c.send(1, 0, 10, 0, 5, [1, 1, 1], "aggregated", exponent=4)
    c.send(1, 1, 10, 0, 5, [2, 2, 2], "aggregated", exponent=6)
    c.send(1, 2, 10, 0, 5, [3, 3, 3], "completed", exponent=5, sums=[6, 6, 6])
    c.send(1, 1, 10, 0, 5, [2, 2, 2], "result_resent", exponent=6, sums=[6, 6, 6])
    c.send(1, 1, 10, 0, 5, [2, 2, 2], "result_resent", exponent=6, sums=[6, 6, 6])
    out.append(c)

    J2w = make_job(1, 2, 8, 4, 4)
    c = Case("other_set", "A round in set 1 of slot 11; set 0 of the slot stays empty (a set-0 "
             "packet with another seq afterwards starts its own round).", [J2w])
    c.send(1, 0, 11, 1, 900, [7, 8], "aggregated", exponent=1)
    c.send(1, 1, 11, 1, 900, [-7, 100], "completed", exponent=3, sums=[0, 108])
    c.send(1, 0, 11, 0, 902, [1, 1], "aggregated")
    out.append(c)

    c = Case("retransmission_from_previous_set", "Set 0 of slot 8 completes; ranks 0 and 1 move "
             "on to set 1 while rank 2 lost its result: its set-0 retransmission gets the set-0 "
             "result, set 1 is left alone, then rank 2's set-1 packet completes set 1.", [J1])
    c.send(1, 0, 8, 0, 40, [1, 2], "aggregated")
    c.send(1, 1, 8, 0, 40, [3, 4], "aggregated")
    c.send(1, 2, 8, 0, 40, [5, 6], "completed", sums=[9, 12])
    c.send(1, 0, 8, 1, 44, [10, 10], "aggregated")
    c.send(1, 1, 8, 1, 44, [20, 20], "aggregated")
    c.send(1, 2, 8, 0, 40, [5, 6], "result_resent", sums=[9, 12])
    c.send(1, 2, 8, 1, 44, [30, 30], "completed", sums=[60, 60])
    out.append(c)

    J1w1 = make_job(1, 3, 20, 1, 2)  # one slot: every round alternates sets
    c = Case("both_sets", "Six rounds through one slot (W = 1), alternating sets, each in another "
             "arrival order; while each round fills, the worker that completed the previous one "
             "retransmits into the other set and gets that set's stored result.", [J1w1])
    orders = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [2, 0, 1], [0, 2, 1], [1, 2, 0]]
    for p, order in enumerate(orders):
        s = p % 2
        for i, r in enumerate(order):
            v = 1000 * (p + 1) + r
            total = 3000 * (p + 1) + 3
            last = i + 1 == len(order)
            c.send(1, r, 20, s, p, [v, -v], "completed" if last else "aggregated",
                   sums=[total, -total] if last else None)
            if i == 0 and p > 0 and orders[p - 1][-1] != r:
                q = orders[p - 1][-1]
                prev = 3000 * p + 3
                c.send(1, q, 20, 1 - s, p - 1, [1000 * p + q, -(1000 * p + q)], "result_resent",
                       sums=[prev, -prev])
    out.append(c)

    J2slot = make_job(1, 2, 30, 2, 1)
    c = Case("slot_reuse", "W = 2: packet P goes to slot 30 + P mod 2, set (P / 2) mod 2. Each "
             "set is reused every 4 packets and each new round overwrites the old sum.", [J2slot])
    for p in range(8):
        slot, s = 30 + p % 2, (p // 2) % 2
        c.send(1, 0, slot, s, p, [2 * p + 1], "aggregated")
        c.send(1, 1, slot, s, p, [2 * p + 2], "completed", sums=[4 * p + 3])
    out.append(c)

    c = Case("ignored_retransmissions", "Copies of contributions to a round in progress are "
             "dropped as duplicates; each worker is counted once.", [J1])
    c.send(1, 0, 9, 0, 1, [5, 5], "aggregated")
    c.send(1, 0, 9, 0, 1, [5, 5], "dropped duplicate")
    c.send(1, 0, 9, 0, 1, [5, 5], "dropped duplicate")
    c.send(1, 1, 9, 0, 1, [6, 6], "aggregated")
    c.send(1, 1, 9, 0, 1, [6, 6], "dropped duplicate")
    c.send(1, 2, 9, 0, 1, [7, 7], "completed", sums=[18, 18])
    out.append(c)

    J2a = make_job(1, 2, 8, 4, 4)
    J2b = make_job(2, 2, 12, 4, 4, first_port=32000, switch_port=4)
    c = Case("foreign_job", "Job 1's worker sends into job 2 (its address is not job 2's), into "
             "job 2's slots under its own job id, and to a job nobody installed; nothing of job 2 "
             "changes, which the next round of job 2 shows.", [J2a, J2b])
    c.send(2, 0, 12, 0, 0, [1], "dropped foreign_source", sender=(1, 0))
    c.send(1, 0, 12, 0, 0, [1], "dropped slot_out_of_range")
    c.send(3, 0, 8, 0, 0, [1], "dropped unknown_job", sender=(1, 0))
    c.send(2, 0, 12, 0, 0, [5], "aggregated")
    c.send(2, 1, 12, 0, 0, [6], "completed", sums=[11])
    out.append(c)

    c = Case("unknown_source", "Right job and rank from the wrong address: another UDP port, "
             "another IP, another rank's address. Dropped, no slot changes.", [J1])
    w0 = c.worker(1, 0)
    pkt = c.packet(1, 0, 8, 0, 0, [1])
    c.frame(1, udp_frame(w0["mac"], SWITCH_MAC, "10.0.1.1", SWITCH_IP, 40999, NETAGG_PORT, pkt),
            "dropped foreign_source", "rank 0's packet from 10.0.1.1:40999 (its IP, another port)")
    c.frame(1, udp_frame(w0["mac"], SWITCH_MAC, "10.0.9.9", SWITCH_IP, 31000, NETAGG_PORT, pkt),
            "dropped foreign_source", "rank 0's packet from 10.0.9.9:31000 (another IP)")
    c.send(1, 0, 8, 0, 0, [1], "dropped foreign_source", sender=(1, 1),
           note="rank 0's packet from rank 1's address")
    c.send(1, 0, 8, 0, 0, [1], "aggregated", note="rank 0's own packet starts the round")
    out.append(c)

    c = Case("slot_out_of_range", "Slots below and above the job's range [8, 12), and far "
             "outside the pool; then slot 11, the last of the range, works.", [J1])
    c.send(1, 0, 7, 0, 0, [1], "dropped slot_out_of_range")
    c.send(1, 0, 12, 0, 0, [1], "dropped slot_out_of_range")
    c.send(1, 0, 65535, 1, 0, [1], "dropped slot_out_of_range")
    c.send(1, 0, 11, 0, 0, [1], "aggregated")
    out.append(c)

    c = Case("rank_out_of_range", "Rank 3 in a three-worker job, and rank 31, the bitmap's "
             "last bit: dropped before the worker table.", [J1])
    c.send(1, 3, 8, 0, 0, [1], "dropped rank_out_of_range", sender=(1, 0))
    c.send(1, 31, 8, 0, 0, [1], "dropped rank_out_of_range", sender=(1, 2))
    out.append(c)

    J2one = make_job(1, 2, 8, 1, 2)
    c = Case("stale_and_ahead", "Rounds 0 (set 0), 1 (set 1), 2 (set 0) complete. Copies of "
             "round 0 are stale; with round 4 in progress on set 0, an older copy is stale, "
             "touches no register, and round 4 completes right. A packet newer than the set's "
             "round starts a new round, whether that round is complete (round 6 after round 4) or "
             "not (round 8 replaces round 6 before it completes): its registers are the new "
             "round's alone, and the replaced round's packets are stale from then on.", [J2one])
    for p in range(3):
        c.send(1, 0, 8, p % 2, p, [1, 1], "aggregated")
        c.send(1, 1, 8, p % 2, p, [2, 2], "completed", sums=[3, 3])
    c.send(1, 0, 8, 0, 0, [7, 7], "dropped stale")
    c.send(1, 1, 8, 0, 0, [7, 7], "dropped stale")
    c.send(1, 0, 8, 1, 3, [1, 1], "aggregated")
    c.send(1, 1, 8, 1, 3, [2, 2], "completed", sums=[3, 3])
    c.send(1, 0, 8, 0, 4, [4, 4], "aggregated")
    c.send(1, 1, 8, 0, 2, [9, 9], "dropped stale", why="older than round 4 in progress")
    c.send(1, 1, 8, 0, 4, [40, 40], "completed", sums=[44, 44],
           why="the stale copy added nothing")
    c.send(1, 0, 8, 0, 6, [6, 6], "aggregated",
           why="newer than the complete round 4: round 6 starts")
    c.send(1, 1, 8, 0, 8, [8, 8], "aggregated",
           why="newer than round 6 in progress: round 8 starts with bit 1 alone and rank 1's "
           "values, round 6 is over")
    c.send(1, 1, 8, 0, 6, [60, 60], "dropped stale", why="older than round 8")
    c.send(1, 0, 8, 0, 8, [80, 80], "completed", sums=[88, 88],
           why="rank 0's bit of round 6 is not carried over (no duplicate), nor its 6 in the sum")
    c.send(1, 0, 8, 0, 6, [6, 6], "dropped stale", why="a late copy of rank 0's packet 6")
    out.append(c)

    c = Case("retransmission_overtaken", "A late copy of rank 0's packet 0 arrives after its "
             "packet 1 started round 1 in set 1: it has set 0's seq, so it gets round 0's stored "
             "result, not a new round; round 2 then starts in set 0 from its starter's bit alone.",
             [J2one])
    c.send(1, 0, 8, 0, 0, [1, 2], "aggregated")
    c.send(1, 1, 8, 0, 0, [10, 20], "completed", sums=[11, 22])
    c.send(1, 0, 8, 1, 1, [3, 4], "aggregated")
    c.send(1, 0, 8, 0, 0, [1, 2], "result_resent", sums=[11, 22])
    c.send(1, 1, 8, 1, 1, [30, 40], "completed", sums=[33, 44])
    c.send(1, 0, 8, 0, 2, [5, 6], "aggregated")
    c.send(1, 1, 8, 0, 2, [50, 60], "completed", sums=[55, 66])
    out.append(c)

    RUN_B = 0x5EED0002
    c = Case("rerun", "The job runs again with a new epoch (0x5eed0002) after a run (0x5eed0001) "
             "that completed rounds 0, 1 and 2 on slot 8 (W = 1). The new run numbers its packets "
             "from 0 again; its fresh packets take both sets over (epoch_takeovers counts each "
             "set once) and it gets its own sums, not the stored results of the first run; a "
             "late copy of the first run's packet 2 (not fresh) is dropped as stale_epoch.",
             [J2one])
    c.send(1, 0, 8, 0, 0, [1, 2], "aggregated")
    c.send(1, 1, 8, 0, 0, [3, 4], "completed", sums=[4, 6])
    c.send(1, 0, 8, 1, 1, [5, 6], "aggregated")
    c.send(1, 1, 8, 1, 1, [7, 8], "completed", sums=[12, 14])
    c.send(1, 0, 8, 0, 2, [10, 10], "aggregated")
    c.send(1, 1, 8, 0, 2, [20, 20], "completed", sums=[30, 30])
    c.send(1, 0, 8, 0, 0, [100, 200], "aggregated", epoch=RUN_B,
           note="second run, rank 0: slot 8 set 0 seq 0 takes over the complete round 2 (by seq "
           "alone a stale copy)")
    c.counter("epoch_takeovers", 1)
    c.send(1, 1, 8, 0, 0, [300, 400], "completed", epoch=RUN_B, sums=[400, 600])
    c.counter("epoch_takeovers", 1)  # the second run's own round: joined, not taken over
    c.send(1, 1, 8, 0, 2, [20, 20], "dropped stale_epoch",
           note="first run's late copy of rank 1's packet 2 (by seq alone a new round)")
    c.send(1, 0, 8, 1, 1, [1000, 2000], "aggregated", epoch=RUN_B,
           note="second run, rank 0: slot 8 set 1 seq 1 takes over the complete round 1 (by seq "
           "alone a retransmission, answered with the first run's sums)")
    c.send(1, 1, 8, 1, 1, [3000, 4000], "completed", epoch=RUN_B, sums=[4000, 6000])
    c.send(1, 0, 8, 0, 0, [100, 200], "result_resent", epoch=RUN_B, sums=[400, 600],
           note="second run, rank 0 retransmits its packet 0: the second run's result")
    c.counter("epoch_takeovers", 2)
    out.append(c)

    c = Case("takeover_unfinished", "A run (epoch 0x5eed0001) stops after rank 0's contribution "
             "to slot 9, set 0; the next run (0x5eed0002) takes the set over with its first "
             "packet (counted once in epoch_takeovers; the new run's other fresh packets join its "
             "round): the bitmap restarts from its sender's bit (rank 0's contribution of the new "
             "run is no duplicate), count and exponent are the new run's (no count_mismatch), and "
             "the sum holds the new run's three contributions only.", [J1])
    c.send(1, 0, 9, 0, 1, [1, 1, 1], "aggregated", exponent=9, why="the first run's last packet")
    c.send(1, 1, 9, 0, 1, [10, 10], "aggregated", exponent=1, epoch=RUN_B,
           why="the next run takes the set over")
    c.counter("epoch_takeovers", 1)
    c.send(1, 0, 9, 0, 1, [20, 20], "aggregated", exponent=2, epoch=RUN_B,
           why="rank 0's bit of the first run is gone")
    c.send(1, 0, 9, 0, 1, [20, 20], "dropped duplicate", exponent=2, epoch=RUN_B,
           why="a copy within the new run")
    c.send(1, 2, 9, 0, 1, [30, 30], "completed", exponent=3, epoch=RUN_B, sums=[60, 60])
    c.counter("epoch_takeovers", 1)
    out.append(c)

    FOREIGN = 0x0BADCAFE
    c = Case("foreign_epoch", "While a round of epoch 0x5eed0001 is open, packets of another "
             "epoch that are not fresh are dropped as stale_epoch before the seq, count and "
             "bitmap decide (they would join, start a new round, mismatch the count, be "
             "duplicates, get the result); job table checks still come first. The round "
             "completes with its own contributions.", [J1])
    c.send(1, 0, 10, 1, 6, [1, 2], "aggregated")
    c.send(1, 1, 10, 1, 6, [50, 50], "dropped stale_epoch", epoch=FOREIGN, fresh=0,
           why="by seq it would join")
    c.send(1, 1, 10, 1, 14, [50, 50], "dropped stale_epoch", epoch=FOREIGN, fresh=0,
           why="by seq it would start a new round")
    c.send(1, 2, 10, 1, 6, [50, 50, 50], "dropped stale_epoch", epoch=FOREIGN, fresh=0,
           why="by count it would be a count_mismatch")
    c.send(1, 0, 10, 1, 6, [1, 2], "dropped stale_epoch", epoch=FOREIGN, fresh=0,
           why="by the bitmap it would be a duplicate")
    c.send(1, 1, 12, 1, 6, [50, 50], "dropped slot_out_of_range", epoch=FOREIGN, fresh=0,
           why="the job table decides first")
    c.send(1, 1, 10, 1, 6, [3, 4], "aggregated")
    c.send(1, 2, 10, 1, 6, [5, 6], "completed", sums=[9, 12])
    c.send(1, 2, 10, 1, 6, [5, 6], "dropped stale_epoch", epoch=FOREIGN, fresh=0,
           why="by seq it would get the result")
    c.send(1, 2, 10, 1, 6, [5, 6], "result_resent", sums=[9, 12])
    c.counter("epoch_takeovers", 0)  # no packet of another epoch was fresh
    out.append(c)

    c = Case("fresh_same_epoch", "fresh on a packet of the round's own epoch changes nothing: it "
             "joins, is a duplicate, gets the stored result, starts a new round or is stale "
             "exactly as the seq and the bitmap say.", [J1])
    c.send(1, 0, 11, 0, 3, [1], "aggregated")
    c.send(1, 0, 11, 0, 3, [1], "dropped duplicate")
    c.send(1, 1, 11, 0, 3, [2], "aggregated")
    c.send(1, 2, 11, 0, 1, [9], "dropped stale", fresh=1, why="fresh takes over no round of "
           "its own epoch: older than round 3 in progress")
    c.send(1, 2, 11, 0, 3, [3], "completed", sums=[6])
    c.send(1, 1, 11, 0, 3, [2], "result_resent", sums=[6])
    for r in range(3):
        c.send(1, r, 11, 1, 7, [10 * (r + 1)], "completed" if r == 2 else "aggregated",
               sums=[60] if r == 2 else None)
    c.send(1, 0, 11, 0, 11, [4], "aggregated", fresh=1,
           why="newer than the complete round 3: a new round, as without fresh")
    c.send(1, 1, 11, 0, 3, [2], "dropped stale", why="a late copy of its first packet")
    c.send(1, 1, 11, 0, 11, [5], "aggregated")
    c.send(1, 2, 11, 0, 11, [6], "completed", sums=[15])
    out.append(c)

    J3one = make_job(1, 3, 8, 1, 4)  # one slot (W = 1): packet P goes to set P mod 2
    c = Case("recovery_copies", "Recovery copies (flag bit 2: a packet whose result its sender "
             "has, sent again for workers still waiting on its round) on a slot whose sets hold "
             "no round, as after a restart of the switch. A recovery copy never starts a round: "
             "to a set with no round, or with a seq newer than the set's round (complete or "
             "not), it is dropped as no_round; older, stale; to a round of another epoch, "
             "stale_epoch even when fresh (no takeover). A copy of the set's own round is taken "
             "as any packet: it joins the round (and may complete it), is a duplicate or a "
             "count_mismatch, gets the stored result. No dropped copy changes a register, which "
             "the normal packets after each drop show.", [J3one])
    c.send(1, 1, 8, 0, 0, [2, 2], "dropped no_round", recovery=1,
           why="set 0 holds no round")
    c.send(1, 2, 8, 0, 0, [3, 3], "dropped no_round", recovery=1, epoch=FOREIGN, fresh=1,
           why="another epoch's fresh copy: set 0 holds no round to take over or be stale against")
    c.send(1, 0, 8, 0, 0, [1, 1], "aggregated",
           why="a normal packet starts round 0 as ever")
    c.send(1, 1, 8, 0, 0, [2, 2], "aggregated", recovery=1,
           why="the copy joins round 0 (the dropped one left no bit)")
    c.send(1, 1, 8, 0, 0, [2, 2], "dropped duplicate", recovery=1, why="rank 1's bit is set")
    c.send(1, 2, 8, 0, 0, [3, 3, 3], "dropped count_mismatch", recovery=1,
           why="checked against the round as any packet")
    c.send(1, 2, 8, 0, 0, [3, 3], "completed", recovery=1, sums=[6, 6],
           why="the copy completes round 0: the result goes to every worker")
    c.send(1, 2, 8, 0, 0, [3, 3], "result_resent", recovery=1, sums=[6, 6],
           why="a copy to the complete round: the stored result, to rank 2 alone")
    c.send(1, 2, 8, 0, 2, [30, 30], "dropped no_round", recovery=1,
           why="newer than the complete round 0 (a normal packet would start round 2)")
    c.send(1, 0, 8, 1, 1, [10, 10], "aggregated", why="round 1 starts in set 1")
    c.send(1, 1, 8, 1, 1, [20, 20], "aggregated")
    c.send(1, 2, 8, 1, 3, [40, 40], "dropped no_round", recovery=1, fresh=0,
           why="newer than round 1 in progress (a normal packet would start round 3 and end "
           "round 1)")
    c.send(1, 2, 8, 1, 1, [30, 30], "completed", sums=[60, 60],
           why="rank 2's own packet 1 completes round 1")
    c.send(1, 1, 8, 1, 1, [20, 20], "result_resent", recovery=1, sums=[60, 60],
           why="a copy to the complete round 1: its stored result")
    c.send(1, 0, 8, 0, 2, [100, 100], "aggregated", why="round 2 starts in set 0")
    c.send(1, 1, 8, 0, 0, [2, 2], "dropped stale", recovery=1,
           why="older than round 2 in progress")
    c.send(1, 1, 8, 0, 2, [200, 200], "dropped stale_epoch", recovery=1, epoch=FOREIGN, fresh=1,
           why="another epoch's fresh copy does not take round 2 over (a fresh normal packet "
           "would)")
    c.send(1, 1, 8, 0, 2, [200, 200], "aggregated",
           why="rank 1's own packet 2 joins: the stale and stale_epoch copies left no bit")
    c.send(1, 2, 8, 0, 2, [300, 300], "completed", sums=[600, 600],
           why="the sum holds round 2's own contributions only")
    c.send(1, 2, 8, 1, 3, [7, 7], "aggregated",
           why="a normal packet newer than the complete round 1 starts round 3; rank 2's "
           "no_round copy of packet 3 left no bit")
    c.send(1, 0, 8, 1, 3, [8, 8], "aggregated")
    c.send(1, 1, 8, 1, 3, [9, 9], "completed", sums=[24, 24])
    c.counter("epoch_takeovers", 0)  # a recovery copy takes no set over, fresh or not
    out.append(c)

    # After a restart of the switch every set is empty, as at the start of a case. Packets 6, 7
    # and 8 of a run with W = 1 (packet P to set P mod 2) are none of them fresh: a worker marks
    # fresh only packets below 2W. The second lane of every contribution is 1, so the second lane
    # of a result is the number of contributions added.
    c = Case("restart_recovery", "The switch restarts in the middle of a run on one slot (W = 1, "
             "three workers; every set empty, as here). Ranks 1 and 2 got the result of packet 6 "
             "(set 0) and retransmit packet 7 (set 1); rank 0 lost packet 6's result and "
             "retransmits packet 6. Ranks 1 and 2 send their recovery copies of packet 6, which "
             "complete round 6. No packet touches the other set's bitmap, so rank 1's "
             "retransmission of packet 7 stays a duplicate (had its join of round 6 cleared its "
             "bit in set 1, as SwitchML's pair update does, that copy would complete round 7 as "
             "2000 + 4000 + 2000 = 8000, without rank 0); rank 0's packet 7 completes round 7 "
             "with each contribution once. "
             "The bits the recovery joins left in set 0 are not carried into its next round: "
             "round 8 starts from its starter's bit and every rank joins it. The second lane is 1 "
             "in every contribution, so a result's second lane counts the contributions added.",
             [J3one])
    c.send(1, 1, 8, 1, 7, [2000, 1], "aggregated", fresh=0,
           why="rank 1 retransmits packet 7: set 1 holds no round, round 7 starts with bit 1")
    c.send(1, 2, 8, 1, 7, [4000, 1], "aggregated", fresh=0,
           why="rank 2 retransmits packet 7: joins, round 7 holds 2000 + 4000")
    c.send(1, 1, 8, 0, 6, [10, 1], "dropped no_round", recovery=1, fresh=0,
           why="rank 1's recovery copy of packet 6, sent with a later retransmission of packet 7: "
           "set 0 holds no round yet and a copy never starts one")
    c.send(1, 0, 8, 0, 6, [1, 1], "aggregated", fresh=0,
           why="rank 0 retransmits packet 6, whose result it lost: round 6 starts in set 0 with "
           "bit 0")
    c.send(1, 1, 8, 0, 6, [10, 1], "aggregated", recovery=1, fresh=0,
           why="rank 1's recovery copy joins round 6 (1 + 10); rank 1's bit in set 1 (its packet "
           "7 in round 7) stays set")
    c.send(1, 2, 8, 0, 6, [100, 1], "completed", recovery=1, fresh=0, sums=[111, 3],
           why="rank 2's recovery copy completes round 6: 1 + 10 + 100 = 111 from 3 "
           "contributions, to every worker; rank 2's bit in set 1 stays set")
    c.send(1, 1, 8, 1, 7, [2000, 1], "dropped duplicate", fresh=0,
           why="rank 1 retransmits packet 7 again: its bit in round 7 is still set, so 2000 is "
           "not added a second time (added, it would complete round 7 as 2000 + 4000 + 2000 = "
           "8000 without rank 0)")
    c.send(1, 1, 8, 0, 6, [10, 1], "result_resent", recovery=1, fresh=0, sums=[111, 3],
           why="the recovery copy sent with that retransmission gets round 6's stored result "
           "and changes nothing")
    c.send(1, 2, 8, 1, 7, [4000, 1], "dropped duplicate", fresh=0,
           why="rank 2's bit in round 7 is still set too")
    c.send(1, 0, 8, 1, 7, [1000, 1], "completed", fresh=0, sums=[7000, 3],
           why="rank 0, with packet 6's result, sends packet 7: 1000 + 2000 + 4000 = 7000 from 3 "
           "contributions, each rank's once")
    c.send(1, 2, 8, 0, 8, [500, 1], "aggregated", fresh=0,
           why="rank 2 sends packet 8: newer than the complete round 6, so round 8 starts in set "
           "0 with bit 2 alone, not with the bits of ranks 1 and 2 that their recovery joins of "
           "round 6 left there")
    c.send(1, 1, 8, 0, 8, [50, 1], "aggregated", fresh=0,
           why="rank 1 joins round 8: its bit of round 6 is not carried over (it would make this "
           "a duplicate and round 8 could never complete)")
    c.send(1, 0, 8, 0, 8, [5, 1], "completed", fresh=0, sums=[555, 3],
           why="rank 0 completes round 8: 5 + 50 + 500 = 555 from 3 contributions")
    out.append(c)

    c = Case("restart_recovery_lost", "The switch restarts in the middle of a run on one slot "
             "(W = 1, three workers; every set empty, as here), and rank 1's retransmission of "
             "packet 7 (set 1) is lost while the recovery copy of packet 6 (set 0) sent with it "
             "joins round 6, formed again by rank 0, which lost packet 6's result. Rank 1's next "
             "retransmission of packet 7 starts round 7 in set 1 and leaves set 0's bitmap "
             "alone, so rank 1's next recovery copy of packet 6 is a duplicate (had packet 7 "
             "cleared rank 1's bit in set 0, as SwitchML's pair update does, that copy would be "
             "added a second time and complete round 6 as 1 + 10 + 10 = 21, without rank 2). "
             "Round 6 completes once rank 2's copy arrives, round 7 once rank 0 has that result. "
             "The second lane is 1 in every contribution, so a result's second lane counts the "
             "contributions added.", [J3one])
    c.send(1, 0, 8, 0, 6, [1, 1], "aggregated", fresh=0,
           why="rank 0 retransmits packet 6, whose result it lost: round 6 starts in set 0 with "
           "bit 0")
    c.send(1, 1, 8, 0, 6, [10, 1], "aggregated", recovery=1, fresh=0,
           why="rank 1's recovery copy of packet 6, sent with a retransmission of packet 7 that "
           "was lost: joins round 6 (1 + 10)")
    c.send(1, 1, 8, 1, 7, [2000, 1], "aggregated", fresh=0,
           why="rank 1's next retransmission of packet 7: set 1 holds no round, round 7 starts "
           "with bit 1; rank 1's bit in round 6 (set 0) stays set")
    c.send(1, 1, 8, 0, 6, [10, 1], "dropped duplicate", recovery=1, fresh=0,
           why="rank 1's next recovery copy of packet 6: its bit in round 6 is set, so 10 is not "
           "added a second time (added, it would complete round 6 as 1 + 10 + 10 = 21 without "
           "rank 2)")
    c.send(1, 2, 8, 1, 7, [4000, 1], "aggregated", fresh=0,
           why="rank 2 retransmits packet 7: joins round 7 (2000 + 4000)")
    c.send(1, 2, 8, 0, 6, [100, 1], "completed", recovery=1, fresh=0, sums=[111, 3],
           why="rank 2's recovery copy completes round 6: 1 + 10 + 100 = 111 from 3 "
           "contributions, each rank's once, to every worker")
    c.send(1, 0, 8, 1, 7, [1000, 1], "completed", fresh=0, sums=[7000, 3],
           why="rank 0, with packet 6's result, sends packet 7: 1000 + 2000 + 4000 = 7000 from 3 "
           "contributions")
    out.append(c)

    c = Case("restart_orphan_round", "The switch restarts in the middle of a run on one slot "
             "(W = 1, three workers; every set empty, as here) just after it completed round 6 "
             "(set 0) and sent its result. Rank 0's copy of that result is still in flight when "
             "rank 0 retransmits packet 6: the retransmission starts round 6 again, then the old "
             "result arrives and rank 0 moves on. Nobody needs the round formed again and nobody "
             "joins it. Every worker has had round 6's result when any sends packet 8 to set 0, "
             "so packet 8 starts a new round there although round 6 never completed: the round "
             "formed again is replaced (had packets newer than an unfinished round been dropped, "
             "set 0 would hold round 6 forever and the run would stall). Round 8 holds its own "
             "contributions alone, with its own count (it is the last packet of a tensor, 2 "
             "lanes). The second lane is 1 in every contribution, so a result's second lane "
             "counts the contributions added.", [J3one])
    c.send(1, 0, 8, 0, 6, [1, 1, 1, 1], "aggregated", fresh=0,
           why="rank 0 retransmits packet 6 while its result from before the restart is still in "
           "flight: set 0 holds no round, round 6 starts with bit 0; then that result reaches "
           "rank 0, and no worker sends packet 6 again")
    c.send(1, 1, 8, 1, 7, [2000, 1, 2, 2], "aggregated", fresh=0,
           why="rank 1, with packet 6's result from before the restart, sends packet 7: set 1 "
           "holds no round, round 7 starts")
    c.send(1, 2, 8, 1, 7, [4000, 1, 4, 4], "aggregated", fresh=0)
    c.send(1, 0, 8, 1, 7, [1000, 1, 1, 1], "completed", fresh=0, sums=[7000, 3, 7, 7],
           why="rank 0, with packet 6's result, sends packet 7: 1000 + 2000 + 4000 = 7000 from 3 "
           "contributions")
    c.send(1, 2, 8, 0, 8, [500, 1], "aggregated", fresh=0,
           why="rank 2 sends packet 8: newer than round 6, which is not complete (it holds rank "
           "0's retransmission alone), so round 8 starts in set 0 with bit 2 alone, count 2, "
           "and round 6 is over")
    c.send(1, 0, 8, 0, 8, [5, 1], "aggregated", fresh=0,
           why="rank 0 joins round 8: its bit of round 6 is not carried over (it would make this "
           "a duplicate and round 8 could never complete)")
    c.send(1, 1, 8, 0, 8, [50, 1], "completed", fresh=0, sums=[555, 3],
           why="rank 1 completes round 8: 5 + 50 + 500 = 555 from 3 contributions, without rank "
           "0's 1 of round 6")
    c.send(1, 0, 8, 0, 6, [1, 1, 1, 1], "dropped stale", fresh=0,
           why="a late copy of rank 0's retransmission of packet 6: older than round 8")
    out.append(c)

    c = Case("seq_wrap", "Rounds across the 32-bit seq wrap (seq 4294967295, then 0 in the other "
             "set, then 1): serial-number arithmetic keeps them in order; 4294967295 is stale "
             "after 1.", [J2one])
    for p in (0xFFFFFFFF, 0, 1):
        s = p % 2
        c.send(1, 0, 8, s, p, [p & 0xFF, 1], "aggregated")
        c.send(1, 1, 8, s, p, [1, 1], "completed", sums=[(p & 0xFF) + 1, 2])
    c.send(1, 0, 8, 1, 0xFFFFFFFF, [9, 9], "dropped stale")
    out.append(c)

    c = Case("ecn_or", "A round ORs the IPv4 ECN bits (TOS & 3) of its contributions and every "
             "result of the round leaves with that OR in its IPv4 ECN field (the IPv4 checksum "
             "covers it): the multicast on completion and a resend of the completed round. A new "
             "round starts from its starting packet's bits; a dropped packet (a duplicate too) "
             "adds none. One slot (W = 1, three workers): round 6 (set 0) gets Not-ECT, CE and "
             "ECT(0), so its results carry CE (3), its resend too; round 7 (set 1) is all "
             "Not-ECT (0), also its resend to a request marked CE; round 8 (set 0 again) all "
             "ECT(0) (2), not CE from round 6. The second lane is 1 in every contribution, so a "
             "result's second lane counts the contributions added.", [J3one])
    c.send(1, 0, 8, 0, 6, [1, 1], "aggregated", ecn=0,
           why="round 6 starts in set 0 with rank 0's bits: the OR is 0")
    c.send(1, 1, 8, 0, 6, [10, 1], "aggregated", ecn=3,
           why="a queue on rank 1's path marked its packet: the OR is 3")
    c.send(1, 2, 8, 0, 6, [100, 1], "completed", ecn=2, sums=[111, 3], result_ecn=3,
           why="rank 2 completes round 6: every result carries CE (0 | 3 | 2), although the "
           "packet that completed the round was not marked")
    c.send(1, 2, 8, 0, 6, [100, 1], "result_resent", ecn=2, sums=[111, 3], result_ecn=3,
           why="rank 2 lost its result and sends packet 6 again: the stored result comes back "
           "with the round's CE")
    c.send(1, 0, 8, 1, 7, [2, 1], "aggregated", ecn=0)
    c.send(1, 1, 8, 1, 7, [20, 1], "aggregated", ecn=0)
    c.send(1, 2, 8, 1, 7, [200, 1], "completed", ecn=0, sums=[222, 3], result_ecn=0,
           why="round 7 in set 1, all Not-ECT: its results carry ECN 0 (set 0's CE is round "
           "6's alone)")
    c.send(1, 0, 8, 1, 7, [2, 1], "result_resent", ecn=3, sums=[222, 3], result_ecn=0,
           why="rank 0 lost its result and sends packet 7 again, marked on the way: the resend "
           "carries the round's OR, 0, not the request's bits")
    c.send(1, 1, 8, 0, 8, [30, 1], "aggregated", ecn=2,
           why="newer than the complete round 6: round 8 starts in set 0 from rank 1's ECT(0) "
           "alone, round 6's CE is not carried over")
    c.send(1, 1, 8, 0, 8, [30, 1], "dropped duplicate", ecn=3,
           why="a copy of rank 1's packet 8, marked on the way: a duplicate adds neither its "
           "values nor its ECN bits")
    c.send(1, 0, 8, 0, 8, [3, 1], "aggregated", ecn=2)
    c.send(1, 2, 8, 0, 8, [300, 1], "completed", ecn=2, sums=[333, 3], result_ecn=2,
           why="round 8, all ECT(0): every result carries ECT(0) (2)")
    out.append(c)

    c = Case("count_checks", "count differs from the round's (count_mismatch, also on a "
             "retransmission to the complete round); count above the job's elements_per_packet; "
             "count 0 carries only an exponent, max-reduced.", [J2w])
    c.send(1, 0, 8, 0, 0, [1, 2, 3], "aggregated")
    c.send(1, 1, 8, 0, 0, [1, 2], "dropped count_mismatch")
    c.send(1, 1, 8, 0, 0, [1, 2, 3, 4, 5], "dropped count_too_large_for_job")
    c.send(1, 1, 8, 0, 0, [4, 5, 6], "completed", sums=[5, 7, 9])
    c.send(1, 1, 8, 0, 0, [4, 5], "dropped count_mismatch")
    c.send(1, 0, 9, 0, 1, [], "aggregated", exponent=-3)
    c.send(1, 1, 9, 0, 1, [], "completed", exponent=7, sums=[])
    out.append(c)

    c = Case("type_and_dtype", "A result sent to the switch (not_contribution) and fp32, bf16, "
             "fp32_exact and exact_lanes contributions (the switch adds int32 only): dropped, "
             "nothing changes.", [J2w])
    c.send(1, 0, 8, 0, 0, [1], "dropped not_contribution", type=RESULT)
    c.send(1, 0, 8, 0, 0, [0x3F800000], "dropped unsupported_dtype", dtype="fp32")
    c.send(1, 0, 8, 0, 0, [0x3F80], "dropped unsupported_dtype", dtype="bf16")
    c.send(1, 0, 8, 0, 0, [0x3F800000], "dropped unsupported_dtype", dtype="fp32_exact",
           exponent=98 << 8)
    c.send(1, 0, 8, 0, 0, [1 << 54], "dropped unsupported_dtype", dtype="exact_lanes",
           exponent=98 << 8)
    c.send(1, 0, 8, 0, 0, [1], "aggregated")
    out.append(c)

    c = Case("malformed", "Frames for the switch's address that are not well-formed netagg "
             "contributions: each is dropped as malformed, counted by the decoder's reason.",
             [J2w])
    w = c.worker(1, 0)
    ip, port = w["address"].split(":")
    port = int(port)
    good = c.packet(1, 0, 8, 0, 0, [1, 2])

    def to_switch(payload, **kw):
        return udp_frame(w["mac"], SWITCH_MAC, ip, SWITCH_IP, port, kw.pop("dst_port",
                                                                           NETAGG_PORT),
                         payload, **kw)

    bad = [
        ("a 10-byte UDP payload", to_switch(good[:10]), "truncated"),
        ("version 2", to_switch(c.packet(1, 0, 8, 0, 0, version=2)), "bad_version"),
        (f"type {BAD_TYPE}", to_switch(c.packet(1, 0, 8, 0, 0, type=BAD_TYPE)), "bad_type"),
        (f"dtype {BAD_DTYPE}", to_switch(c.packet(1, 0, 8, 0, 0, raw_dtype=BAD_DTYPE)),
         "bad_dtype"),
        ("flag bit 3", to_switch(c.packet(1, 0, 8, 0, 0, flags=0x08)), "bad_flags"),
        ("flag bit 7 with set and fresh", to_switch(c.packet(1, 0, 8, 0, 0, flags=0x83)),
         "bad_flags"),
        ("count 1025", to_switch(c.packet(1, 0, 8, 0, 0, count=1025)), "count_too_large"),
        ("count 2 with 12 payload bytes",
         to_switch(c.packet(1, 0, 8, 0, 0, [1, 2], extra=b"\0" * 4)), "length_mismatch"),
        ("IPv4 header checksum wrong", to_switch(good, corrupt_checksum=True), "bad_ip_header"),
        ("UDP to port 20034", to_switch(good, dst_port=20034), "wrong_port"),
        ("TCP (protocol 6)", to_switch(good, proto=6), "not_udp"),
        ("IP total length 4 beyond the frame", to_switch(good, length_delta=4),
         "ip_length_mismatch"),
    ]
    for note, f, err in bad:
        c.frame(1, f, "dropped malformed " + err, note)
    # UDP length disagreeing with IP: built by hand.
    f = bytearray(to_switch(good))
    f[38:40] = struct.pack(">H", struct.unpack(">H", f[38:40])[0] - 2)
    c.frame(1, bytes(f), "dropped malformed udp_length_mismatch", "UDP length 2 less than IP says")
    c.send(1, 0, 8, 0, 0, [1, 2], "aggregated", note="then a good contribution is taken")
    out.append(c)

    J3 = make_job(2, 3, 0, 8, 8, switch_port=4)
    c = Case("two_jobs", "Jobs 1 (slots [8, 12), ports 1-2) and 2 (slots [0, 8), ports 4-6) at "
             "once, interleaved, the same slot offsets and seqs: each job's results go to its "
             "own workers (its multicast group), and neither sum mixes with the other.",
             [J2w, J3])
    c.send(1, 0, 8, 0, 0, [1, 1], "aggregated")
    c.send(2, 0, 0, 0, 0, [100, 100, 100], "aggregated")
    c.send(2, 1, 0, 0, 0, [200, 200, 200], "aggregated")
    c.send(1, 1, 8, 0, 0, [2, 2], "completed", sums=[3, 3])
    c.send(2, 2, 0, 0, 0, [300, 300, 300], "completed", sums=[600, 600, 600])
    c.send(2, 2, 0, 0, 0, [300, 300, 300], "result_resent", sums=[600, 600, 600])
    out.append(c)

    J1big = make_job(1, 2, 8, 2, 100)
    c = Case("many_lanes", "100 lanes per packet: four passes of 32 lanes in the model (BMv2 adds "
             "them in one pass; Tofino takes at most 64 lanes a packet, so its control plane "
             "rejects this job); values near the int32 limits wrap as the switch's ALUs do.",
             [J1big])
    a = [2147483647 - i for i in range(100)]
    b = [i + 1 for i in range(100)]
    c.send(1, 0, 9, 1, 3, a, "aggregated", exponent=-5,
           note="rank 0: 100 lanes, 2147483647 - i")
    c.send(1, 1, 9, 1, 3, b, "completed", exponent=-7, note="rank 1: 100 lanes, i + 1",
           sums=[-2147483648] * 100)
    out.append(c)

    c = Case("arp_and_icmp", "ARP requests for the switch's IP and ICMP echo requests to it are "
             "answered out of the ingress port; an ARP request for another IP is not (broadcast "
             "has no forwarding entry), nor is an ICMP echo reply sent to the switch.", [J2w])
    w0, w1 = c.worker(1, 0), c.worker(1, 1)
    ip0 = w0["address"].split(":")[0]
    ip1 = w1["address"].split(":")[0]
    c.frame(1, arp_frame(1, w0["mac"], "ff:ff:ff:ff:ff:ff", w0["mac"], ip0, "00:00:00:00:00:00",
                         SWITCH_IP), "arp_reply", "rank 0: who has 10.0.0.254? (broadcast)")
    c.frame(2, arp_frame(1, w1["mac"], SWITCH_MAC, w1["mac"], ip1, "00:00:00:00:00:00",
                         SWITCH_IP), "arp_reply", "rank 1: who has 10.0.0.254? (unicast)")
    c.frame(1, arp_frame(1, w0["mac"], "ff:ff:ff:ff:ff:ff", w0["mac"], ip0, "00:00:00:00:00:00",
                         "10.0.0.77"), "dropped no_forward_entry", "rank 0: who has 10.0.0.77?")
    data = bytes(range(56))
    c.frame(1, icmp_echo_frame(w0["mac"], SWITCH_MAC, ip0, SWITCH_IP, 8, 0x1234, 1, data,
                               ip_ident=0x5555, ttl=63),
            "icmp_echo_reply", "rank 0 pings the switch (id 0x1234, seq 1, 56 bytes)")
    c.frame(2, icmp_echo_frame(w1["mac"], SWITCH_MAC, ip1, SWITCH_IP, 8, 0xFFFF, 0xF7FF,
                               b"\xff" * 8),
            "icmp_echo_reply", "rank 1 pings the switch (a checksum that needs the carry)")
    c.frame(1, icmp_echo_frame(w0["mac"], SWITCH_MAC, ip0, SWITCH_IP, 0, 1, 1, b""),
            "dropped malformed not_udp", "an ICMP echo reply to the switch")
    out.append(c)

    c = Case("l2_forwarding", "Frames not for the switch's IP are forwarded unchanged by "
             "destination MAC (the forward table holds every worker's MAC and port); unknown MACs "
             "and broadcast are dropped. Netagg-looking frames to a worker's IP are forwarded "
             "too, not aggregated.", [J2w, J3])
    w0, w1, w2 = c.worker(1, 0), c.worker(1, 1), c.worker(2, 2)
    ip0, ip2 = w0["address"].split(":")[0], w2["address"].split(":")[0]
    c.frame(1, udp_frame(w0["mac"], w2["mac"], ip0, ip2, 5000, 6000, b"hello, job 2"),
            "forwarded", "UDP from job 1 rank 0 to job 2 rank 2")
    c.frame(6, udp_frame(w2["mac"], w0["mac"], ip2, ip0, 6000, 5000, b"x" * 30),
            "forwarded", "and back")
    c.frame(1, udp_frame(w0["mac"], w1["mac"], ip0, w1["address"].split(":")[0], 31000,
                         NETAGG_PORT, c.packet(1, 0, 8, 0, 0, [1])),
            "forwarded", "a contribution addressed to rank 1's IP, not the switch's")
    c.frame(1, eth(w1["mac"], w0["mac"], 0x88B5) + b"local experimental ethertype",
            "forwarded", "a non-IP frame (EtherType 0x88b5) to rank 1")
    c.frame(1, udp_frame(w0["mac"], "02:00:00:00:99:99", ip0, "10.0.0.99", 1, 2, b"?"),
            "dropped no_forward_entry", "to a MAC the switch does not know")
    c.frame(2, eth("ff:ff:ff:ff:ff:ff", w1["mac"], 0x88B5) + b"broadcast",
            "dropped no_forward_entry", "broadcast is not flooded")
    out.append(c)

    # ---- trees: this switch is a child; its parent is another aggregator ----------------------
    def child_job(job_id, n, base, count, epp, parent_ip, parent_job, rank, parent_base, mac,
                  port, **kw):
        j = make_job(job_id, n, base, count, epp, **kw)
        j["parent"] = {"address": f"{parent_ip}:{NETAGG_PORT}", "job_id": parent_job,
                       "rank": rank, "slot_base": parent_base, "mac": mac, "switch_port": port}
        return j

    JT = child_job(1, 2, 8, 4, 4, "10.0.9.1", 21, 2, 40, "02:00:00:00:09:01", 9)
    c = Case("tree_child", "A child in an aggregation tree: job 1 (two members, slots [8, 12)) "
             "has a parent at 10.0.9.1:20033 (port 9), where it is rank 2 of job 21 with slots "
             "[40, 44). A completed round goes up as one contribution (the partial sum, the "
             "round's max exponent and ECN OR, fresh if the round's first packet was), not to the "
             "members; every retransmission while it waits sends it up again; results that are "
             "not the parent's answer to a waiting round are dropped; the parent's result is "
             "multicast to the members (the job's own id and slot, the parent's values and "
             "exponent, its ECN bits ORed with the round's) and answers later retransmissions; a "
             "recovery copy also sends the kept partial sum up again, flagged recovery.", [JT])
    c.send(1, 0, 9, 0, 1, [1, 2, 3, 4], "aggregated", exponent=3, ecn=2)
    c.send(1, 1, 9, 0, 1, [10, 20, 30, -40], "sent_to_parent", exponent=5, ecn=1,
           sums=[11, 22, 33, -36], result_ecn=3, why="the round is complete: up it goes")
    c.send(1, 0, 9, 0, 1, [1, 2, 3, 4], "sent_to_parent", exponent=3, sums=[11, 22, 33, -36],
           result_ecn=3, why="a retransmission while the round waits: the partial sum again")
    c.send(1, 1, 9, 0, 1, [10, 20, 30, -40], "sent_to_parent", exponent=5, ecn=3,
           sums=[11, 22, 33, -36], result_ecn=3, why="and again (its ECN bits are not added)")
    total = [1000, -2000, 3000, 2147483647]
    c.from_parent(1, 9, 0, 1, total, "dropped not_contribution", exponent=7, udp_port=20034,
                  why="from another UDP port of the parent's host")
    c.from_parent(1, 9, 0, 1, total, "dropped not_contribution", exponent=7, parent_job=22,
                  why="another job at the parent")
    c.from_parent(1, 9, 0, 1, total, "dropped rank_out_of_range", exponent=7, rank=1,
                  why="another member's result")
    c.from_parent(1, 12, 0, 1, total, "dropped slot_out_of_range", exponent=7,
                  why="beyond the job's slots at the parent")
    c.from_parent(1, 9, 0, 5, total, "dropped no_round", exponent=7, why="a newer seq")
    c.from_parent(1, 9, 0, 0xFFFFFFFF, total, "dropped stale", exponent=7, why="an older seq")
    c.from_parent(1, 9, 0, 1, total, "dropped stale_epoch", exponent=7, epoch=0x0BADCAFE,
                  why="another run's")
    c.from_parent(1, 9, 0, 1, total[:3], "dropped count_mismatch", exponent=7)
    c.from_parent(1, 10, 0, 1, total, "dropped no_round", exponent=7,
                  why="a slot whose sets hold no round")
    c.from_parent(1, 9, 1, 1, total, "dropped no_round", exponent=7, why="the other set")
    c.from_parent(1, 9, 0, 1, total, "completed", exponent=7, sums=total, result_ecn=3,
                  why="the parent's answer: multicast to the members")
    c.from_parent(1, 9, 0, 1, total, "dropped duplicate", exponent=7, ecn=3,
                  why="the round is answered")
    c.send(1, 0, 9, 0, 1, [1, 2, 3, 4], "result_resent", exponent=3, sums=total, result_ecn=3,
           why="a lost result: the parent's, from here")
    c.send(1, 1, 9, 0, 1, [10, 20, 30, -40], "result_resent", exponent=5, recovery=1,
           result_ecn=3, why="a recovery copy: the result, and the kept partial sum up again "
           "for a parent that restarted (the exponent is the round's stored one: the parent's)")
    c.send(1, 1, 9, 1, 5, [7, 7, 7, 7], "aggregated",
           why="set 1 of the slot: its first round, fresh")
    c.send(1, 0, 9, 1, 5, [1, 1, 1, 1], "sent_to_parent", sums=[8, 8, 8, 8])
    c.from_parent(1, 9, 1, 5, [80, 80, 80, 80], "completed", sums=[80, 80, 80, 80])
    c.send(1, 0, 9, 0, 9, [2, 2, 2, 2], "aggregated",
           why="the next round of set 0: not fresh (rank 0's first packet there was seq 1)")
    c.send(1, 1, 9, 0, 9, [3, 3, 3, 3], "sent_to_parent", sums=[5, 5, 5, 5],
           why="so its partial sum goes up not fresh")
    c.from_parent(1, 9, 0, 1, total, "dropped stale", exponent=7,
                  why="a late copy of the parent's answer to the last round")
    out.append(c)

    c = Case("tree_child_rounds", "A child's round that waits for its parent is over like any "
             "round when a newer packet or another run's fresh packet comes to its set: the "
             "parent's answer to it is then stale (or of another epoch), a result for a round "
             "still open here is no_round, and the new round goes up when it completes.", [JT])
    c.send(1, 0, 8, 0, 0, [1, 1], "aggregated")
    c.send(1, 1, 8, 0, 0, [2, 2], "sent_to_parent", sums=[3, 3])
    c.send(1, 0, 8, 0, 8, [5, 5], "aggregated",
           why="a newer seq to the set: a new round (the waiting one is over)")
    c.from_parent(1, 8, 0, 0, [30, 30], "dropped stale", why="the answer to the old round")
    c.from_parent(1, 8, 0, 8, [60, 60], "dropped no_round", why="the new round is open here")
    c.send(1, 0, 8, 0, 8, [5, 5], "dropped duplicate",
           why="the new round waits for rank 1, not for the parent")
    c.send(1, 1, 8, 0, 8, [6, 6], "sent_to_parent", sums=[11, 11])
    c.send(1, 0, 8, 0, 0, [7, 7], "aggregated", epoch=0x0BADCAFE,
           why="another run's first packet takes the set over")
    c.from_parent(1, 8, 0, 8, [110, 110], "dropped stale_epoch",
                  why="the answer to the round taken over")
    c.send(1, 1, 8, 0, 0, [8, 8], "sent_to_parent", epoch=0x0BADCAFE, sums=[15, 15],
           why="the new run's round goes up, fresh, with its epoch")
    c.from_parent(1, 8, 0, 0, [150, 150], "completed", epoch=0x0BADCAFE, sums=[150, 150])
    out.append(c)

    JA = child_job(1, 2, 8, 4, 4, "10.0.9.1", 21, 2, 40, "02:00:00:00:09:01", 9)
    JB = child_job(2, 2, 12, 4, 4, "10.0.9.2", 21, 0, 0, "02:00:00:00:09:02", 10,
                   first_port=32000, switch_port=4)
    c = Case("tree_two_parents", "Two jobs, each a child of another parent, both job 21 there: a "
             "parent's result is told apart by the parent's address, and goes to its own job's "
             "round only.", [JA, JB])
    c.send(1, 0, 8, 0, 0, [1], "aggregated")
    c.send(1, 1, 8, 0, 0, [2], "sent_to_parent", sums=[3])
    c.send(2, 0, 12, 0, 0, [10], "aggregated")
    c.send(2, 1, 12, 0, 0, [20], "sent_to_parent", sums=[30])
    c.from_parent(2, 12, 0, 0, [300], "completed", sums=[300],
                  why="from job 2's parent (10.0.9.2): job 2's round")
    c.from_parent(2, 12, 0, 0, [300], "dropped duplicate")
    c.from_parent(1, 8, 0, 0, [33], "completed", sums=[33],
                  why="from job 1's parent: job 1's round is still waiting")
    c.send(2, 0, 12, 0, 0, [10], "result_resent", sums=[300])
    out.append(c)

    def notice_of(step, out, reason, waiting=None):
        """The author's notice for a step: one frame back to the sender, of that reason and
        waiting bitmap; or none (reason None)."""
        got = [(struct.unpack(">I", o[64:68])[0], struct.unpack(">H", o[52:54])[0],
                [struct.unpack(">I", o[68 + 4 * i:72 + 4 * i])[0]
                 for i in range(struct.unpack(">H", o[52:54])[0] - 1)])
               for _, o in out if o[43] == NOTICE]
        want = [] if reason is None else [
            (wire_format.NOTICE_REASONS[reason], 1 if waiting is None else 2,
             [] if waiting is None else [waiting])]
        if got != want or (reason is not None and len(out) != 1):
            raise SystemExit(f"notices: {step}: notices {got}, case says {want}")

    J5 = make_job(1, 5, 8, 4, 4)
    c = Case("notices", "The drops a worker can act on are answered with a notice: the "
             "packet's header with type notice, the reason in the payload's first word and, for "
             "a duplicate, the ranks its round waits for in the second. The first drop of a "
             "reason from a rank and one in every notice_interval after it are answered; "
             "recovery copies never are.", [J5])
    notice_of("unknown job", c.send(7, 0, 8, 0, 0, [1], "dropped unknown_job", sender=(1, 0)),
              "unknown_job")
    for i in range(1, wire_format.NOTICE_INTERVAL):
        notice_of(f"unknown job {i}", c.send(7, 0, 8, 0, i, [1], "dropped unknown_job",
                                             sender=(1, 0), why="no notice: not due"), None)
    notice_of("unknown job again", c.send(7, 0, 8, 0, wire_format.NOTICE_INTERVAL, [1],
                                          "dropped unknown_job", sender=(1, 0),
                                          why=f"drop {wire_format.NOTICE_INTERVAL + 1}: due"),
              "unknown_job")
    notice_of("unknown job, rank 1", c.send(7, 1, 8, 0, 0, [1], "dropped unknown_job",
                                            sender=(1, 1), why="rank 1's first: due"),
              "unknown_job")
    c.send(1, 0, 9, 0, 0, [1], "aggregated")
    c.send(1, 3, 9, 0, 0, [1], "aggregated")
    notice_of("duplicate", c.send(1, 3, 9, 0, 0, [1], "dropped duplicate",
                                  why="the round waits for ranks 1, 2 and 4"),
              "duplicate", 0b10110)
    notice_of("duplicate recovery", c.send(1, 0, 9, 0, 0, [1], "dropped duplicate", recovery=1,
                                           why="a recovery copy: no notice"), None)
    c.send(1, 1, 9, 0, 0, [1], "aggregated")
    c.send(1, 2, 9, 0, 0, [1], "aggregated")
    c.send(1, 4, 9, 0, 0, [1], "completed", sums=[5])
    c.send(1, 0, 9, 0, 5, [1], "aggregated", why="the next round of the set")
    notice_of("stale", c.send(1, 1, 9, 0, 0, [1], "dropped stale",
                              why="older than round 5: a late copy, or another run's token"),
              "stale")
    notice_of("stale epoch", c.send(1, 1, 9, 0, 5, [1], "dropped stale_epoch",
                                    epoch=0x0BADC0DE, fresh=0, why="another run's packet"),
              "stale_epoch")
    c.counter("notices", 6)
    out.append(c)
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.vec"):
        old.unlink()
    all_cases = cases()
    for c in all_cases:
        c.write()
    print(f"wrote {len(all_cases)} switch vectors to {OUT}")


if __name__ == "__main__":
    main()

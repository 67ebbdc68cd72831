// SPDX-License-Identifier: Apache-2.0
/* netagg switch pipeline for BMv2 simple_switch (v1model): the behaviour of p4/tofino/netagg.p4,
 * with the same table, action, parameter, register and counter names (controls NetaggIngress /
 * NetaggEgress), for users without a Tofino. docs/switch-pipeline.md maps it to the model
 * (sim/switch/switch_model.cpp). NOT COMPILED in CI (p4c and BMv2 are not Debian packages).
 *
 * Choice: BMv2 has no stage or ALU limits, so this program takes every decision and adds every
 * lane in ONE ingress pass, with no recirculation. The registers keep Tofino's layout: the
 * value registers value_0..value_31 (NETAGG_LANES_PER_PASS), lane 32*b + i in value_i at index
 * (slot*2 + set) * NETAGG_BMV2_MAX_PASSES + b, exactly where the Tofino program's pass b puts
 * it; b runs over NETAGG_BMV2_MAX_PASSES = 8 lane blocks (256 lanes, 1 KiB payload, fits a
 * 1500-byte MTU). The decision uses the same registers as the Tofino program (has_round and
 * epoch, completed_seq, round_seq, round_count, bitmap, remaining, exponent) in the same order;
 * where Tofino needs a second pass to mark a round complete, BMv2 marks it in the same pass.
 * Differences: `epoch` is a register of its own (Tofino keeps it in the `has_round` pair
 * register, {epoch, state}); and a duplicate leaves every register alone (the model's rule; on
 * Tofino it has run the bitmap's OR action, which for it changes nothing).
 * Seq (the model's rule): a packet whose seq is older than the set's round is stale; one whose
 * seq is newer starts the set's next round, whether the round it holds is complete or not: no
 * correct worker sends a newer packet to a set before every worker has had the result of the
 * round it holds, so that round is over for everybody (after a restart a round formed again
 * may never complete).
 * Bitmap (the model's rule): bit<32> per (slot, set), index slot*2+set, as on Tofino. Every new
 * round (from no round, a newer seq, a takeover) sets the set's word to the sender's bit alone,
 * a join ORs the bit in; no packet touches the other set's word.
 * Epoch (the model's takeover rule): a contribution to a set that holds a round of another
 * epoch takes the set over when it is fresh (a new round, as for "no round", whose bitmap is
 * the sender's bit alone; counter epoch_takeovers) and is dropped as stale_epoch otherwise,
 * before any seq rule.
 * Recovery copies (flag recovery: a packet whose result its sender has, sent again for the
 * workers still waiting on its round) never start a round: a round of another epoch drops one
 * as stale_epoch even when it is fresh (never a takeover), a set with no round or a seq newer
 * than the set's drops it as no_round; an older seq is stale, an equal one is decided as any
 * packet's. Every register write is in the branch of packets that are not dropped, so a
 * dropped recovery copy (like every dropped packet) writes no register. Results clear fresh and
 * recovery (flags = the set bit).
 * ECN (the model's SlotRegisters::ecn; docs/congestion-control.md, "Marks"): register `ecn`,
 * bit<8> per (slot, set) holding 0..3, the OR of the IPv4 ECN bits of the round's
 * contributions. A new round writes the starting packet's bits, a join ORs its packet's bits
 * in, a resend reads it; a dropped packet (a duplicate included) leaves it alone. The
 * multicast results of a completion and the resend of a completed round leave with the
 * round's OR in their IPv4 ECN field (originate_ipv4's argument), so every worker of the job
 * sees the same marks.
 * Trees (the model's send_to_parent / result_from_parent; docs/wire-format.md, "Aggregation
 * trees"): a job with a parent_table entry is a child. The packet that completes one of its
 * rounds does not become a multicast result: it leaves as ONE contribution to the parent, out
 * of the parent's port, with the partial sum (job id, rank and slot the parent's; set, seq,
 * epoch, count the round's; exponent the round's max; fresh if the round's first packet was;
 * IPv4 ECN the round's OR), and register `upstream` records that the round waits for the
 * parent. A retransmission of the round while it waits sends the partial sum up again (the
 * value registers still hold it). A result from the parent (parent_source: the parent's job id
 * and address give the child job) for a waiting round of its seq and epoch overwrites the value
 * registers with its values and the exponent with its exponent, ORs its ECN bits in, clears
 * `upstream` and is multicast to the job's members as a completion. The partial sum is kept in
 * the egress registers partial_0..31 (written by every frame that goes up), so that a recovery
 * copy to a round answered already also sends it up again, flagged recovery, to a parent that
 * restarted: an ingress-to-egress clone (mirroring session = the job's mcast_grp, on the
 * parent's port) that egress rewrites, next to the stored result resent to the copy's sender.
 * Register `fresh` holds whether the round's first packet was fresh.
 * Notices (the model's SwitchModel::drop; docs/wire-format.md, "Notices"): a contribution
 * dropped for a reason its sender can act on (unknown_job .. duplicate; not malformed,
 * not_contribution, no_round, nor any recovery copy) is answered out of its ingress port, MACs,
 * IPs and UDP ports swapped, IPv4 ECN 0: its header with type notice, dtype int32, the set bit
 * alone, exponent_none, payload word 0 the notice_reason and, for a duplicate, word 1 the ranks
 * the round waits for; the other lanes are invalidated, the lengths fixed and the frame
 * truncated. Register notice_drops (reason x rank & 31) paces them: the first drop and then
 * one in every NETAGG_NOTICE_INTERVAL; every duplicate is answered (counter notices).
 * Frames (sim/switch/pipeline.cpp, checked byte for byte by tests/vectors/switch): ARP and ICMP
 * echo answered for the switch's IP; every other frame to that IP counts in packets_in and goes
 * through wire::decode_frame's and wire::decode's checks (all drops[malformed]); frames the
 * switch originates get wire::encode_frame's IPv4 header (DSCP 0, ECN: 0 for echo
 * replies, the round's OR for results; id 0, DF, TTL 64, checksum), UDP checksum 0 and no
 * trailing bytes (truncate); forwarded frames leave unchanged.
 */
#include <core.p4>
#include <v1model.p4>

#include "../common/headers.p4"

#define NETAGG_MAX_PASSES NETAGG_BMV2_MAX_PASSES
#define NETAGG_LANES_PER_PACKET 256     /* NETAGG_LANES_PER_PASS * NETAGG_MAX_PASSES */
#define NETAGG_REGISTER_SIZE 2048       /* 2 * NETAGG_POOL_SLOTS */
#define NETAGG_VALUE_REGISTER_SIZE 16384 /* 2 * NETAGG_POOL_SLOTS * NETAGG_MAX_PASSES */
#define PKT_INSTANCE_TYPE_NORMAL 0
#define PKT_INSTANCE_TYPE_INGRESS_CLONE 1
#define PKT_INSTANCE_TYPE_REPLICATION 5
#define FIELD_LIST_TO_PARENT 1          /* what a recovery clone keeps of ingress's metadata */
#define NETAGG_NOTICE_RANKS 32          /* notice counters per reason: by the rank's low 5 bits */
#define NETAGG_NOTICE_REGISTER_SIZE 352 /* 11 notice reasons (codes 1..11) * NETAGG_NOTICE_RANKS */

#define OP_WRITE 0
#define OP_ADD 1
#define OP_READ 2

#define CLASS_NEW 1            /* no round, a takeover, or a seq newer than the set's round
                                * (complete or not) */
#define CLASS_EQUAL 2
#define CLASS_STALE 3
#define CLASS_STALE_EPOCH 4    /* a round of another epoch, and the packet is not fresh or
                                * is a recovery copy */
#define CLASS_NO_ROUND 5       /* a recovery copy to no round, or newer than the set's round */

struct headers_t {
    ethernet_h    ethernet;
    arp_h         arp;
    ipv4_h        ipv4;
    icmp_h        icmp;
    udp_h         udp;
    netagg_h      netagg;
    netagg_lane_h[NETAGG_LANES_PER_PACKET] lanes;
}

/* @field_list(FIELD_LIST_TO_PARENT): the fields egress needs to rewrite a recovery clone into
 * the partial sum for the parent (a clone keeps only these of the ingress metadata). */
struct metadata_t {
    @field_list(FIELD_LIST_TO_PARENT) mac_addr_t  switch_mac;
    @field_list(FIELD_LIST_TO_PARENT) ipv4_addr_t switch_ip;
    bit<16> lanes_left;
    bit<1>  job_hit;
    bit<8>  worker_count;
    bit<16> slot_base;
    bit<16> slot_count;
    bit<16> elements_per_packet;
    bit<16> mcast_grp;
    /* trees */
    bit<1>  from_parent;      /* a result that matched parent_source: job_id is the child's now */
    bit<16> child_job_id;
    bit<1>  parent_hit;       /* the job has a parent (parent_table) */
    @field_list(FIELD_LIST_TO_PARENT) mac_addr_t  parent_mac;
    @field_list(FIELD_LIST_TO_PARENT) ipv4_addr_t parent_ip;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> parent_udp_port;
    bit<9>  parent_port;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> parent_job_id;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> parent_rank;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> parent_slot_base;
    bit<16> child_slot;       /* the job's slot: a contribution's own, a result's translated */
    bit<8>  waiting;          /* upstream register: the round waits for the parent */
    bit<8>  round_fresh;      /* fresh register: the round's first packet was fresh */
    bit<1>  to_parent;        /* this packet leaves as the partial sum for the parent */
    @field_list(FIELD_LIST_TO_PARENT) bit<1> clone_to_parent;  /* and a clone of it does */
    @field_list(FIELD_LIST_TO_PARENT) bit<8> up_flags;  /* the partial sum's netagg flags */
    bit<1>  worker_hit;
    bit<8>  worker_rank;
    bit<32> rank_bit;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> slot_offset;
    bit<16> payload_bytes;
    bit<32> at;
    bit<1>  checked;
    bit<8>  drop_reason;
    bit<1>  drop;
    bit<8>  has_round;        /* before this packet; NONE for a takeover */
    bit<32> round_epoch;      /* the set's epoch before this packet */
    bit<1>  takeover;         /* the packet takes over a round of another epoch */
    bit<1>  stale_epoch;      /* not fresh or a recovery copy, and the set holds a round of
                               * another epoch */
    bit<1>  recovery;         /* the packet is a recovery copy: it never starts a round */
    bit<32> completed_seq;
    bit<32> round_seq;
    bit<32> seq_diff;
    bit<1>  complete;
    bit<8>  class;
    bit<16> round_count;
    bit<32> bitmap_s;
    bit<8>  remaining;
    bit<16> exponent_biased;
    @field_list(FIELD_LIST_TO_PARENT) bit<16> exponent_out;
    /* the round's ECN OR after this packet (0..3): results and partial sums carry it */
    @field_list(FIELD_LIST_TO_PARENT) bit<8>  ecn_out;
    bit<8>  op;
    bit<1>  is_result;        /* multicast copies: rewritten by result_destination */
    bit<1>  originated;       /* the switch built this frame: fresh IPv4 checksum, truncated */
    bit<32> frame_length;     /* originated frames: their exact length (truncate in egress) */
    bit<16> ipv4_residual;    /* csum16 over the whole IPv4 header, checksum included: 0 = valid */
    bit<1>  ipv4_ok;          /* wire::decode_frame's IPv4 header check */
    bit<1>  frame_holds_ipv4; /* the frame holds the IPv4 total length (14 + total_len bytes) */
    bit<1>  frame_ok;         /* a well-formed netagg UDP/20033 frame, up to the netagg header */
    @field_list(FIELD_LIST_TO_PARENT) bit<32> vbase;
    bit<32> vidx;
    bit<32> v;
    /* notices: the answer to a dropped contribution (0: none) */
    bit<8>  notice_reason;    /* NETAGG_NOTICE_*: the drop's, for an actionable drop */
    bit<32> notice_at;        /* notice_drops index: (reason - 1) * 32 + (rank & 31) */
    bit<32> notice_before;    /* the counter before this drop (mod NETAGG_NOTICE_INTERVAL) */
    bit<1>  notice_due;       /* this drop is answered */
    bit<32> all_ranks;        /* duplicate: the job's ranks, one bit each */
    bit<16> notice_count;     /* the notice's words: 1, 2 for a duplicate */
}

/* ================================= parser ================================================= */

parser NetaggParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTOCOL_ICMP): parse_icmp;
            (5, 0, IP_PROTOCOL_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_icmp {
        pkt.extract(hdr.icmp);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            NETAGG_UDP_PORT: parse_netagg;
            default: accept;
        }
    }
    state parse_netagg {
        pkt.extract(hdr.netagg);
        meta.lanes_left = hdr.netagg.count;
        /* 4-byte lanes only (bf16 and exact_lanes are dropped as unsupported before any lane
         * is used); more than NETAGG_LANES_PER_PACKET: not parsed, the packet is dropped by
         * the checks */
        transition select(hdr.netagg.dtype, hdr.netagg.count) {
            (NETAGG_DTYPE_BF16, _): accept;
            (NETAGG_DTYPE_EXACT_LANES, _): accept;
            (_, 0): accept;
            (_, 1 .. NETAGG_LANES_PER_PACKET): parse_lane;
            default: accept;
        }
    }
    state parse_lane {
        pkt.extract(hdr.lanes.next);
        meta.lanes_left = meta.lanes_left - 1;
        transition select(meta.lanes_left) {
            0: accept;
            default: parse_lane;
        }
    }
}

control NetaggVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* ================================= ingress ================================================ */

control NetaggIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    counter(NETAGG_DROP_REASONS, CounterType.packets) drops;
    counter(1, CounterType.packets) packets_in;
    counter(1, CounterType.packets) completions;
    counter(1, CounterType.packets) results_resent;
    counter(1, CounterType.packets) sent_to_parent;       /* trees: a round's partial sum */
    counter(1, CounterType.packets) resent_to_parent;     /* again: a retransmission, a recovery */
    counter(1, CounterType.packets) results_from_parent;  /* completions by a parent's result */
    counter(1, CounterType.packets) epoch_takeovers;      /* sets taken from another epoch's round */
    counter(1, CounterType.packets) notices;              /* notices sent (dropped contributions) */

    register<bit<8>>(NETAGG_REGISTER_SIZE) has_round;
    register<bit<32>>(NETAGG_REGISTER_SIZE) epoch;      /* the epoch of the set's round */
    register<bit<32>>(NETAGG_REGISTER_SIZE) completed_seq;
    register<bit<32>>(NETAGG_REGISTER_SIZE) round_seq;
    register<bit<16>>(NETAGG_REGISTER_SIZE) round_count;
    register<bit<32>>(NETAGG_REGISTER_SIZE) bitmap;
    register<bit<8>>(NETAGG_REGISTER_SIZE) remaining;
    register<bit<16>>(NETAGG_REGISTER_SIZE) exponent;   /* exponent XOR 0x8000, as on Tofino */
    register<bit<8>>(NETAGG_REGISTER_SIZE) ecn;         /* OR of the round's IPv4 ECN bits */
    register<bit<8>>(NETAGG_REGISTER_SIZE) upstream;    /* trees: 1 = waits for the parent */
    register<bit<8>>(NETAGG_REGISTER_SIZE) fresh;       /* the round's first packet was fresh */
    /* Notices: the drops of each notice reason by the sender's rank (low 5 bits), counted
     * modulo NETAGG_NOTICE_INTERVAL (the model's notice_drops_, which counts on and tests
     * wire::notice_due; the same answer, as the interval divides 2^32): 0 before a drop = due. */
    register<bit<32>>(NETAGG_NOTICE_REGISTER_SIZE) notice_drops;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_0;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_1;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_2;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_3;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_4;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_5;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_6;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_7;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_8;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_9;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_10;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_11;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_12;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_13;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_14;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_15;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_16;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_17;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_18;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_19;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_20;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_21;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_22;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_23;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_24;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_25;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_26;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_27;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_28;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_29;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_30;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) value_31;

    action set_switch_identity(bit<48> mac, bit<32> ip) {
        meta.switch_mac = mac;
        meta.switch_ip = ip;
    }
    table switch_identity {
        actions = { set_switch_identity; }
        default_action = set_switch_identity(0, 0);
        size = 1;
    }

    action set_job(bit<8> worker_count, bit<16> slot_base, bit<16> slot_count,
                   bit<16> elements_per_packet, bit<16> mcast_grp) {
        meta.job_hit = 1;
        meta.worker_count = worker_count;
        meta.slot_base = slot_base;
        meta.slot_count = slot_count;
        meta.elements_per_packet = elements_per_packet;
        meta.mcast_grp = mcast_grp;
    }
    action job_miss() { meta.job_hit = 0; }
    table job_table {
        key = { hdr.netagg.job_id : exact; }
        actions = { set_job; job_miss; }
        default_action = job_miss();
        size = 1024;
    }

    /* Trees: the job's parent. Its partial sums go to ip:udp_port (MAC mac, out of port) as
     * contributions of job job_id there, rank rank, slot slot_base + (slot - the job's
     * slot_base). */
    action set_parent(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<9> port, bit<16> job_id,
                      bit<16> rank, bit<16> slot_base) {
        meta.parent_hit = 1;
        meta.parent_mac = mac;
        meta.parent_ip = ip;
        meta.parent_udp_port = udp_port;
        meta.parent_port = port;
        meta.parent_job_id = job_id;
        meta.parent_rank = rank;
        meta.parent_slot_base = slot_base;
    }
    action parent_miss() { meta.parent_hit = 0; }
    table parent_table {
        key = { hdr.netagg.job_id : exact; }
        actions = { set_parent; parent_miss; }
        default_action = parent_miss();
        size = 1024;
    }

    /* Trees: a result from a parent (its job id there, its address) is one of job job_id's. */
    action set_parent_source(bit<16> job_id) {
        meta.from_parent = 1;
        meta.child_job_id = job_id;
    }
    action parent_source_miss() { meta.from_parent = 0; }
    table parent_source {
        key = {
            hdr.netagg.job_id : exact;
            hdr.ipv4.src_addr : exact;
            hdr.udp.src_port  : exact;
        }
        actions = { set_parent_source; parent_source_miss; }
        default_action = parent_source_miss();
        size = 1024;
    }

    action set_worker(bit<8> rank) {
        meta.worker_hit = 1;
        meta.worker_rank = rank;
    }
    action worker_miss() { meta.worker_hit = 0; }
    table worker_table {
        key = {
            hdr.netagg.job_id : exact;
            hdr.ipv4.src_addr : exact;
            hdr.udp.src_port  : exact;
        }
        actions = { set_worker; worker_miss; }
        default_action = worker_miss();
        size = 8192;
    }

    action set_egress_port(bit<9> port) { standard_metadata.egress_spec = port; }
    action forward_miss() { mark_to_drop(standard_metadata); }
    table forward {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { set_egress_port; forward_miss; }
        default_action = forward_miss();
        size = 4096;
    }

    action drop_for(bit<8> reason) {
        meta.drop = 1;
        meta.drop_reason = reason;
    }

    /* wire::encode_frame's IPv4 header for a frame the switch originates (results, echo
     * replies): DSCP 0, ECN ecn_bits (the round's OR for a result, 0 for an echo reply: the
     * frame-level model's FrameAddress::ecn), identification 0, DF, TTL 64; the checksum, ECN
     * included, is recomputed in NetaggComputeChecksum (originated frames only). Version/IHL
     * are 4/5 already (checked). */
    action originate_ipv4(bit<2> ecn_bits) {
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = ecn_bits;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = IP_FLAGS_DF;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = IP_TTL;
        meta.originated = 1;
        meta.frame_length = (bit<32>)hdr.ipv4.total_len + 14;
    }

/* Lane 32*b + i: value_i at index at * NETAGG_MAX_PASSES + b (the Tofino program's pass b). */
#define LANE_OP(i, b)                                                                         \
    if (hdr.lanes[32 * b + i].isValid()) {                                                    \
        meta.vidx = meta.vbase + b;                                                           \
        value_##i.read(meta.v, meta.vidx);                                                    \
        if (meta.op == OP_WRITE) {                                                            \
            meta.v = hdr.lanes[32 * b + i].value;                                             \
        } else if (meta.op == OP_ADD) {                                                       \
            meta.v = meta.v + hdr.lanes[32 * b + i].value;                                    \
        }                                                                                     \
        value_##i.write(meta.vidx, meta.v);                                                   \
        hdr.lanes[32 * b + i].value = meta.v;                                                 \
    }
#define LANE_BLOCK(b)                                                                         \
    LANE_OP(0, b)  LANE_OP(1, b)  LANE_OP(2, b)  LANE_OP(3, b)  LANE_OP(4, b)  LANE_OP(5, b)   \
    LANE_OP(6, b)  LANE_OP(7, b)  LANE_OP(8, b)  LANE_OP(9, b)  LANE_OP(10, b) LANE_OP(11, b)  \
    LANE_OP(12, b) LANE_OP(13, b) LANE_OP(14, b) LANE_OP(15, b) LANE_OP(16, b) LANE_OP(17, b)  \
    LANE_OP(18, b) LANE_OP(19, b) LANE_OP(20, b) LANE_OP(21, b) LANE_OP(22, b) LANE_OP(23, b)  \
    LANE_OP(24, b) LANE_OP(25, b) LANE_OP(26, b) LANE_OP(27, b) LANE_OP(28, b) LANE_OP(29, b)  \
    LANE_OP(30, b) LANE_OP(31, b)

/* Notices: lanes 32*b .. 32*b + 31 out of the frame (the notice keeps one or two words). */
#define LANE_OFF(i, b) hdr.lanes[32 * b + i].setInvalid();
#define LANE_OFF_BLOCK(b)                                                                     \
    LANE_OFF(0, b)  LANE_OFF(1, b)  LANE_OFF(2, b)  LANE_OFF(3, b)  LANE_OFF(4, b)            \
    LANE_OFF(5, b)  LANE_OFF(6, b)  LANE_OFF(7, b)  LANE_OFF(8, b)  LANE_OFF(9, b)            \
    LANE_OFF(10, b) LANE_OFF(11, b) LANE_OFF(12, b) LANE_OFF(13, b) LANE_OFF(14, b)           \
    LANE_OFF(15, b) LANE_OFF(16, b) LANE_OFF(17, b) LANE_OFF(18, b) LANE_OFF(19, b)           \
    LANE_OFF(20, b) LANE_OFF(21, b) LANE_OFF(22, b) LANE_OFF(23, b) LANE_OFF(24, b)           \
    LANE_OFF(25, b) LANE_OFF(26, b) LANE_OFF(27, b) LANE_OFF(28, b) LANE_OFF(29, b)           \
    LANE_OFF(30, b) LANE_OFF(31, b)

    apply {
        switch_identity.apply();
        meta.is_result = 0;
        meta.originated = 0;

        if (hdr.arp.isValid() && hdr.arp.hw_type == 1 && hdr.arp.proto_type == ETHERTYPE_IPV4 &&
            hdr.arp.hw_addr_len == 6 && hdr.arp.proto_addr_len == 4 &&
            hdr.arp.opcode == ARP_OPCODE_REQUEST && hdr.arp.target_proto_addr == meta.switch_ip) {
            /* ---- ARP request for the switch's IP: a 42-byte reply out of the ingress port ---- */
            hdr.ethernet.dst_addr = hdr.arp.sender_hw_addr;
            hdr.ethernet.src_addr = meta.switch_mac;
            hdr.arp.opcode = ARP_OPCODE_REPLY;
            hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
            hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
            hdr.arp.sender_hw_addr = meta.switch_mac;
            hdr.arp.sender_proto_addr = meta.switch_ip;
            standard_metadata.egress_spec = standard_metadata.ingress_port;
            meta.frame_length = 42;          /* no Ethernet padding of the request */
        } else if (hdr.ipv4.isValid() && hdr.ipv4.dst_addr == meta.switch_ip) {
            /* ---- for the switch (pipeline.cpp: EtherType IPv4, IPv4 dst = the switch's IP) ---- */
            /* wire::ipv4_checksum(header) == 0: csum16 over all ten words, checksum included */
            hash(meta.ipv4_residual, HashAlgorithm.csum16, 16w0,
                 { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                   hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                   hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.hdr_checksum,
                   hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
                 32w65536);
            if (hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5 && hdr.ipv4.flags[0:0] == 0 &&
                hdr.ipv4.frag_offset == 0 && meta.ipv4_residual == 0) {
                meta.ipv4_ok = 1;            /* 0x45, not a fragment (MF clear, offset 0) */
            }
            if ((bit<32>)hdr.ipv4.total_len + 14 <= standard_metadata.packet_length) {
                meta.frame_holds_ipv4 = 1;
            }

            if (meta.ipv4_ok == 1 && meta.frame_holds_ipv4 == 1 && hdr.icmp.isValid() &&
                hdr.ipv4.total_len >= 28 &&
                hdr.icmp.icmp_type == ICMP_ECHO_REQUEST && hdr.icmp.code == 0) {
                /* ---- ICMP echo request: the reply out of the ingress port ---- */
                hdr.icmp.icmp_type = ICMP_ECHO_REPLY;
                /* RFC 1624 eqn. 3 for the word type/code 0x0800 -> 0x0000, exactly as
                 * pipeline.cpp computes it: HC' = ~(~HC + 0xF7FF), one end-around carry.
                 * That is HC + 0x0800 (+1 on a carry), except HC = 0xF7FF, which gives 0x0000. */
                if (hdr.icmp.checksum >= 0xF800) {
                    hdr.icmp.checksum = hdr.icmp.checksum + 0x0801;
                } else if (hdr.icmp.checksum == 0xF7FF) {
                    hdr.icmp.checksum = 0;
                } else {
                    hdr.icmp.checksum = hdr.icmp.checksum + 0x0800;
                }
                mac_addr_t mac = hdr.ethernet.src_addr;
                hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
                hdr.ethernet.dst_addr = mac;
                ipv4_addr_t ip = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = ip;
                originate_ipv4(0);
                standard_metadata.egress_spec = standard_metadata.ingress_port;
            } else {
                /* ---- the netagg checks: everything else to the switch's IP ---- */
                packets_in.count(32w0);
                /* Trees: a result from a parent (parent_source: the parent's job id and
                 * address) belongs to a round of the child job the entry names; from here on
                 * the packet carries that job's id, which its multicast copies keep. */
                if (hdr.netagg.isValid() && hdr.netagg.msg_type == NETAGG_MSG_RESULT) {
                    parent_source.apply();
                    if (meta.from_parent == 1) {
                        hdr.netagg.job_id = meta.child_job_id;
                    }
                }
                job_table.apply();
                worker_table.apply();
                parent_table.apply();
                if (meta.from_parent == 1) {
                    meta.slot_offset = hdr.netagg.slot - meta.parent_slot_base;
                } else {
                    meta.slot_offset = hdr.netagg.slot - meta.slot_base;
                }
                /* the job's own slot: a contribution's, or a result's translated from the
                 * parent's slot (one window: the same offset) */
                meta.child_slot = meta.slot_base + meta.slot_offset;
                if (hdr.netagg.dtype == NETAGG_DTYPE_BF16) {
                    meta.payload_bytes = hdr.netagg.count << 1;
                } else if (hdr.netagg.dtype == NETAGG_DTYPE_EXACT_LANES) {
                    meta.payload_bytes = hdr.netagg.count << 3;
                } else {
                    meta.payload_bytes = hdr.netagg.count << 2;
                }
                meta.exponent_biased = hdr.netagg.exponent ^ 0x8000;
                meta.at = (bit<32>)meta.child_slot * 2 + (bit<32>)hdr.netagg.flags[0:0];
                /* wire::decode_frame: bad_ip_header, not_udp, ip_length_mismatch,
                 * udp_length_mismatch, wrong_port; a frame shorter than the netagg header or
                 * than its lanes is a parser error. Not UDP (TCP, ICMP other than an echo
                 * request) leaves hdr.udp invalid; another UDP port leaves hdr.netagg invalid. */
                if (meta.ipv4_ok == 1 && meta.frame_holds_ipv4 == 1 && hdr.udp.isValid() &&
                    hdr.udp.length + 20 == hdr.ipv4.total_len &&
                    hdr.udp.dst_port == NETAGG_UDP_PORT && hdr.netagg.isValid() &&
                    standard_metadata.parser_error == error.NoError) {
                    meta.frame_ok = 1;
                }

                if (meta.frame_ok == 0) {
                    drop_for(NETAGG_DROP_MALFORMED);
                } else if (hdr.netagg.version != NETAGG_WIRE_VERSION ||
                           (hdr.netagg.msg_type != NETAGG_MSG_CONTRIBUTION &&
                            hdr.netagg.msg_type != NETAGG_MSG_RESULT) ||
                           hdr.netagg.dtype > NETAGG_DTYPE_EXACT_LANES ||
                           (hdr.netagg.flags & NETAGG_FLAGS_RESERVED_MASK) != 0 ||
                           hdr.netagg.count > NETAGG_MAX_COUNT ||
                           hdr.udp.length != 8 + NETAGG_HEADER_SIZE + meta.payload_bytes) {
                    drop_for(NETAGG_DROP_MALFORMED);         /* wire::decode */
                } else if (hdr.netagg.msg_type != NETAGG_MSG_CONTRIBUTION) {
                    /* a result: taken only from the parent of one of the jobs (the model's
                     * result_from_parent, in its order) */
                    if (meta.from_parent == 0 || meta.job_hit == 0 || meta.parent_hit == 0) {
                        drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
                    } else if (hdr.netagg.rank != meta.parent_rank) {
                        drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
                    } else if (meta.slot_offset >= meta.slot_count) {
                        drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
                    } else if (hdr.netagg.dtype != NETAGG_DTYPE_INT32) {
                        drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
                    } else {
                        meta.checked = 1;
                    }
                } else if (meta.job_hit == 0) {
                    drop_for(NETAGG_DROP_UNKNOWN_JOB);
                } else if (hdr.netagg.rank >= (bit<16>)meta.worker_count) {
                    drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
                } else if (meta.worker_hit == 0 || (bit<16>)meta.worker_rank != hdr.netagg.rank) {
                    drop_for(NETAGG_DROP_FOREIGN_SOURCE);
                } else if (meta.slot_offset >= meta.slot_count) {
                    drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
                } else if (hdr.netagg.dtype != NETAGG_DTYPE_INT32) {
                    drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
                } else if (hdr.netagg.count > meta.elements_per_packet ||
                           hdr.netagg.count > NETAGG_LANES_PER_PACKET) {
                    drop_for(NETAGG_DROP_COUNT_TOO_LARGE_FOR_JOB);
                } else {
                    meta.checked = 1;
                }

                if (meta.checked == 1 && meta.from_parent == 1) {
                    /* ---- a result from the parent: it completes a round that waits for it
                     * (the model's result_from_parent). Every drop writes no register. ---- */
                    has_round.read(meta.has_round, meta.at);
                    epoch.read(meta.round_epoch, meta.at);
                    completed_seq.read(meta.completed_seq, meta.at);
                    round_seq.read(meta.round_seq, meta.at);
                    round_count.read(meta.round_count, meta.at);
                    upstream.read(meta.waiting, meta.at);
                    meta.seq_diff = hdr.netagg.seq - meta.round_seq;
                    if (meta.has_round == NETAGG_ROUND_SEEN &&
                        meta.round_seq == meta.completed_seq) {
                        meta.complete = 1;
                    }
                    if (meta.has_round == NETAGG_ROUND_NONE) {
                        drop_for(NETAGG_DROP_NO_ROUND);
                    } else if (meta.round_epoch != hdr.netagg.epoch) {
                        drop_for(NETAGG_DROP_STALE_EPOCH);
                    } else if (meta.seq_diff[31:31] == 1) {
                        drop_for(NETAGG_DROP_STALE);
                    } else if (meta.seq_diff != 0 || meta.complete == 0) {
                        drop_for(NETAGG_DROP_NO_ROUND);      /* newer, or still open here */
                    } else if (meta.waiting == 0) {
                        drop_for(NETAGG_DROP_DUPLICATE);     /* answered already */
                    } else if (meta.round_count != hdr.netagg.count) {
                        drop_for(NETAGG_DROP_COUNT_MISMATCH);
                    } else {
                        /* the parent's values and exponent become the round's result; the
                         * result's ECN bits are ORed into the round's */
                        meta.op = OP_WRITE;
                        meta.remaining = 0;                  /* a completion: multicast */
                        meta.exponent_out = meta.exponent_biased;
                        exponent.write(meta.at, meta.exponent_out);
                        ecn.read(meta.ecn_out, meta.at);
                        meta.ecn_out = meta.ecn_out | (bit<8>)hdr.ipv4.ecn;
                        ecn.write(meta.at, meta.ecn_out);
                        upstream.write(meta.at, 0);
                        hdr.netagg.slot = meta.child_slot;
                    }
                } else if (meta.checked == 1) {
                    /* BMv2 limits a shift amount to 8 bits: the rank is below the job's worker count
                     * (worker_table matched it), at most 32, so the cast keeps its value. */
                    meta.rank_bit = (bit<32>)1 << (bit<8>)hdr.netagg.rank;
                    if ((hdr.netagg.flags & NETAGG_FLAG_RECOVERY) != 0) {
                        meta.recovery = 1;
                    }
                    has_round.read(meta.has_round, meta.at);
                    epoch.read(meta.round_epoch, meta.at);
                    /* the epoch first: a round of another epoch is taken over by a fresh
                     * packet that is not a recovery copy (the set then counts as holding no
                     * round) and is not touched by any other (stale_epoch) */
                    if (meta.has_round != NETAGG_ROUND_NONE &&
                        meta.round_epoch != hdr.netagg.epoch) {
                        if ((hdr.netagg.flags & NETAGG_FLAG_FRESH) != 0 && meta.recovery == 0) {
                            meta.has_round = NETAGG_ROUND_NONE;     /* a takeover */
                            meta.takeover = 1;
                        } else {
                            meta.stale_epoch = 1;
                        }
                    }
                    completed_seq.read(meta.completed_seq, meta.at);
                    round_seq.read(meta.round_seq, meta.at);
                    meta.seq_diff = hdr.netagg.seq - meta.round_seq;
                    if (meta.has_round == NETAGG_ROUND_SEEN &&
                        meta.round_seq == meta.completed_seq) {
                        meta.complete = 1;
                    }
                    /* a seq newer than the set's round starts the next round, complete or
                     * not (the round it holds is over for every worker); a recovery copy never
                     * starts a round: no round, or a seq newer than the set's, is no_round */
                    if (meta.stale_epoch == 1) {
                        meta.class = CLASS_STALE_EPOCH;
                    } else if (meta.has_round == NETAGG_ROUND_NONE) {
                        if (meta.recovery == 1) {
                            meta.class = CLASS_NO_ROUND;
                        } else {
                            meta.class = CLASS_NEW;
                        }
                    } else if (meta.seq_diff[31:31] == 1) {
                        meta.class = CLASS_STALE;
                    } else if (meta.seq_diff != 0) {
                        if (meta.recovery == 1) {
                            meta.class = CLASS_NO_ROUND;
                        } else {
                            meta.class = CLASS_NEW;
                        }
                    } else {
                        meta.class = CLASS_EQUAL;
                    }
                    round_count.read(meta.round_count, meta.at);
                    bitmap.read(meta.bitmap_s, meta.at);
                    upstream.read(meta.waiting, meta.at);    /* 1 only while complete */
                    fresh.read(meta.round_fresh, meta.at);

                    /* Every drop below writes no register: the writes are all in the last
                     * branch (and the completion mark, for packets not dropped). */
                    if (meta.class == CLASS_STALE_EPOCH) {
                        drop_for(NETAGG_DROP_STALE_EPOCH);
                    } else if (meta.class == CLASS_NO_ROUND) {
                        drop_for(NETAGG_DROP_NO_ROUND);
                    } else if (meta.class == CLASS_STALE) {
                        drop_for(NETAGG_DROP_STALE);
                    } else if (meta.class == CLASS_EQUAL &&
                               meta.round_count != hdr.netagg.count) {
                        drop_for(NETAGG_DROP_COUNT_MISMATCH);
                    } else if (meta.class == CLASS_EQUAL && meta.complete == 1) {
                        meta.op = OP_READ;
                        exponent.read(meta.exponent_out, meta.at);
                        ecn.read(meta.ecn_out, meta.at);    /* the round's OR, unchanged */
                        if (meta.waiting == 1) {
                            /* trees: the round waits for the parent, whose copy (or answer)
                             * may have been lost: the partial sum (still in the value
                             * registers) goes up again, not the result */
                            meta.to_parent = 1;
                        } else if (meta.parent_hit == 1 && meta.recovery == 1) {
                            /* trees: a recovery copy to a round answered here; the parent may
                             * have restarted without this switch's part: the kept partial sum
                             * goes up again too (a clone), flagged recovery */
                            meta.clone_to_parent = 1;
                        }
                    } else if (meta.class == CLASS_EQUAL &&
                               (meta.bitmap_s & meta.rank_bit) != 0) {
                        drop_for(NETAGG_DROP_DUPLICATE);
                    } else {
                        /* a new round or a join. Every new round (from no round, a newer
                         * seq, a takeover) starts from the sender's bit alone: the bits there
                         * belong to an earlier round. A join ORs the sender's bit in. The other
                         * set's word is never touched (no SwitchML pair update): each set
                         * keeps its round's seq, so its word only needs the ranks of that
                         * round, and after a restart clearing a bit there could undo a recovery
                         * copy's join to it. */
                        if (meta.class == CLASS_NEW) {
                            bitmap.write(meta.at, meta.rank_bit);
                        } else {
                            bitmap.write(meta.at, meta.bitmap_s | meta.rank_bit);
                        }
                        if (meta.class == CLASS_NEW) {
                            meta.op = OP_WRITE;
                            if (meta.takeover == 1) {
                                epoch_takeovers.count(32w0);
                            }
                            if (meta.has_round == NETAGG_ROUND_NONE) {
                                /* no round, or a takeover: OPEN (also over SEEN, whose
                                 * completed_seq belongs to the other epoch's rounds) */
                                has_round.write(meta.at, NETAGG_ROUND_OPEN);
                            }
                            epoch.write(meta.at, hdr.netagg.epoch);
                            round_seq.write(meta.at, hdr.netagg.seq);
                            round_count.write(meta.at, hdr.netagg.count);
                            meta.remaining = meta.worker_count - 1;
                            meta.exponent_out = meta.exponent_biased;
                            /* the starting packet's ECN bits alone: the stored ones belong
                             * to an earlier round */
                            meta.ecn_out = (bit<8>)hdr.ipv4.ecn;
                            /* trees: a new round waits for nobody; whether it is fresh is its
                             * first packet's flag (its partial sum goes up with it) */
                            meta.round_fresh = (bit<8>)hdr.netagg.flags[1:1];
                            upstream.write(meta.at, 0);
                            fresh.write(meta.at, meta.round_fresh);
                        } else {
                            meta.op = OP_ADD;
                            remaining.read(meta.remaining, meta.at);
                            meta.remaining = meta.remaining - 1;
                            exponent.read(meta.exponent_out, meta.at);
                            if (meta.exponent_biased > meta.exponent_out) {
                                meta.exponent_out = meta.exponent_biased;
                            }
                            ecn.read(meta.ecn_out, meta.at);
                            meta.ecn_out = meta.ecn_out | (bit<8>)hdr.ipv4.ecn;
                        }
                        remaining.write(meta.at, meta.remaining);
                        exponent.write(meta.at, meta.exponent_out);
                        ecn.write(meta.at, meta.ecn_out);
                    }
                }

                if (meta.checked == 1 && meta.drop == 0 && meta.from_parent == 0 &&
                    meta.parent_hit == 1) {
                    /* trees: a partial sum for the parent carries the set bit, fresh if the
                     * round's first packet was (a recovery clone: recovery instead) */
                    if (meta.clone_to_parent == 1) {
                        meta.up_flags = (bit<8>)hdr.netagg.flags[0:0] | NETAGG_FLAG_RECOVERY;
                    } else {
                        meta.up_flags = (bit<8>)hdr.netagg.flags[0:0] |
                                        (meta.round_fresh << 1);
                    }
                }

                if (meta.drop == 1) {
                    drops.count((bit<32>)meta.drop_reason);
                    /* ---- notices (the model's SwitchModel::drop with a source): a
                     * contribution dropped for a reason its sender can act on, not a recovery
                     * copy (its sender has the result), is answered when due: every duplicate
                     * (it answers a retransmission, paced by its sender), any other reason for
                     * the first drop of (reason, rank & 31) and then one in every
                     * NETAGG_NOTICE_INTERVAL. Malformed packets, results, not_contribution and
                     * no_round get none. ---- */
                    if (hdr.netagg.isValid() && hdr.netagg.msg_type == NETAGG_MSG_CONTRIBUTION &&
                        (hdr.netagg.flags & NETAGG_FLAG_RECOVERY) == 0) {
                        if (meta.drop_reason == NETAGG_DROP_UNKNOWN_JOB) {
                            meta.notice_reason = NETAGG_NOTICE_UNKNOWN_JOB;
                        } else if (meta.drop_reason == NETAGG_DROP_RANK_OUT_OF_RANGE) {
                            meta.notice_reason = NETAGG_NOTICE_RANK_OUT_OF_RANGE;
                        } else if (meta.drop_reason == NETAGG_DROP_FOREIGN_SOURCE) {
                            meta.notice_reason = NETAGG_NOTICE_FOREIGN_SOURCE;
                        } else if (meta.drop_reason == NETAGG_DROP_SLOT_OUT_OF_RANGE) {
                            meta.notice_reason = NETAGG_NOTICE_SLOT_OUT_OF_RANGE;
                        } else if (meta.drop_reason == NETAGG_DROP_UNSUPPORTED_DTYPE) {
                            meta.notice_reason = NETAGG_NOTICE_UNSUPPORTED_DTYPE;
                        } else if (meta.drop_reason == NETAGG_DROP_COUNT_TOO_LARGE_FOR_JOB) {
                            meta.notice_reason = NETAGG_NOTICE_COUNT_TOO_LARGE_FOR_JOB;
                        } else if (meta.drop_reason == NETAGG_DROP_COUNT_MISMATCH) {
                            meta.notice_reason = NETAGG_NOTICE_COUNT_MISMATCH;
                        } else if (meta.drop_reason == NETAGG_DROP_STALE) {
                            meta.notice_reason = NETAGG_NOTICE_STALE;
                        } else if (meta.drop_reason == NETAGG_DROP_STALE_EPOCH) {
                            meta.notice_reason = NETAGG_NOTICE_STALE_EPOCH;
                        } else if (meta.drop_reason == NETAGG_DROP_DUPLICATE) {
                            meta.notice_reason = NETAGG_NOTICE_DUPLICATE;
                        }
                    }
                    if (meta.notice_reason == NETAGG_NOTICE_DUPLICATE) {
                        meta.notice_due = 1;             /* every one; no counter */
                    } else if (meta.notice_reason != 0) {
                        meta.notice_at = ((bit<32>)meta.notice_reason - 1) * NETAGG_NOTICE_RANKS +
                                         (bit<32>)(hdr.netagg.rank & (NETAGG_NOTICE_RANKS - 1));
                        notice_drops.read(meta.notice_before, meta.notice_at);
                        if (meta.notice_before == 0) {
                            meta.notice_due = 1;
                        }
                        if (meta.notice_before >= NETAGG_NOTICE_INTERVAL - 1) {
                            notice_drops.write(meta.notice_at, 0);
                        } else {
                            notice_drops.write(meta.notice_at, meta.notice_before + 1);
                        }
                    }
                    if (meta.notice_due == 1) {
                        /* wire::encode_notice: the dropped packet's header with type notice,
                         * dtype int32, the set bit alone, exponent_none, count 1 (2 for a
                         * duplicate); job_id, rank, slot, seq and epoch stay. Payload word 0
                         * the reason; a duplicate's word 1 the ranks its round waits for. */
                        notices.count(32w0);
                        hdr.netagg.msg_type = NETAGG_MSG_NOTICE;
                        hdr.netagg.dtype = NETAGG_DTYPE_INT32;
                        hdr.netagg.flags = hdr.netagg.flags & NETAGG_FLAG_SET;
                        hdr.netagg.exponent = 0x8000;    /* NETAGG_EXPONENT_NONE, 16 bits */
                        LANE_OFF_BLOCK(0) LANE_OFF_BLOCK(1) LANE_OFF_BLOCK(2) LANE_OFF_BLOCK(3)
                        LANE_OFF_BLOCK(4) LANE_OFF_BLOCK(5) LANE_OFF_BLOCK(6) LANE_OFF_BLOCK(7)
                        hdr.lanes[0].setValid();
                        hdr.lanes[0].value = (bit<32>)meta.notice_reason;
                        meta.notice_count = 1;
                        if (meta.notice_reason == NETAGG_NOTICE_DUPLICATE) {
                            /* the job's ranks whose bit the round lacks (a duplicate is a
                             * checked contribution: worker_count and bitmap_s are read) */
                            if (meta.worker_count >= NETAGG_MAX_WORKERS) {
                                meta.all_ranks = 0xFFFFFFFF;
                            } else {
                                meta.all_ranks = ((bit<32>)1 << meta.worker_count) - 1;
                            }
                            hdr.lanes[1].setValid();
                            hdr.lanes[1].value = meta.all_ranks & ~meta.bitmap_s;
                            meta.notice_count = 2;
                        }
                        hdr.netagg.count = meta.notice_count;
                        hdr.udp.length = 8 + NETAGG_HEADER_SIZE + (meta.notice_count << 2);
                        hdr.ipv4.total_len = 20 + hdr.udp.length;
                        /* back where the packet came from, as a resent result */
                        hdr.udp.checksum = 0;
                        mac_addr_t mac = hdr.ethernet.src_addr;
                        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
                        hdr.ethernet.dst_addr = mac;
                        ipv4_addr_t ip = hdr.ipv4.src_addr;
                        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                        hdr.ipv4.dst_addr = ip;
                        bit<16> port = hdr.udp.src_port;
                        hdr.udp.src_port = hdr.udp.dst_port;
                        hdr.udp.dst_port = port;
                        /* ECN 0; after total_len: frame_length is taken from it (truncate) */
                        originate_ipv4(0);
                        standard_metadata.egress_spec = standard_metadata.ingress_port;
                    } else {
                        mark_to_drop(standard_metadata);
                    }
                } else {
                    /* the value lanes: every block in this pass */
                    meta.vbase = meta.at * NETAGG_MAX_PASSES;
                    LANE_BLOCK(0) LANE_BLOCK(1) LANE_BLOCK(2) LANE_BLOCK(3)
                    LANE_BLOCK(4) LANE_BLOCK(5) LANE_BLOCK(6) LANE_BLOCK(7)
                    hdr.netagg.exponent = meta.exponent_out ^ 0x8000;
                    /* A result is this packet rewritten: its seq, count and epoch are the
                     * round's, since only a packet of the round's epoch reaches here (a
                     * takeover or a new round stored the packet's epoch, a join, a resend or a
                     * parent's result matched it), so hdr.netagg.epoch stays in place. A
                     * partial sum for the parent is rewritten in egress (to_parent_headers),
                     * where a recovery clone is rewritten the same way. */

                    if (meta.op == OP_READ && meta.to_parent == 1) {
                        /* trees: the partial sum again, to the parent */
                        resent_to_parent.count(32w0);
                        standard_metadata.egress_spec = meta.parent_port;
                    } else if (meta.op == OP_READ) {
                        /* a retransmission to a completed round: the stored result, to it alone */
                        results_resent.count(32w0);
                        if (meta.clone_to_parent == 1) {
                            resent_to_parent.count(32w0);
                            /* the original packet, with the fields egress needs, to the
                             * mirroring session numbered as the job's multicast group (the
                             * parent's port) */
                            clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.mcast_grp,
                                                        FIELD_LIST_TO_PARENT);
                        }
                        hdr.netagg.msg_type = NETAGG_MSG_RESULT;
                        /* fresh, recovery := 0 */
                        hdr.netagg.flags = hdr.netagg.flags & NETAGG_FLAG_SET;
                        hdr.udp.checksum = 0;
                        mac_addr_t mac = hdr.ethernet.src_addr;
                        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
                        hdr.ethernet.dst_addr = mac;
                        ipv4_addr_t ip = hdr.ipv4.src_addr;
                        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                        hdr.ipv4.dst_addr = ip;
                        bit<16> port = hdr.udp.src_port;
                        hdr.udp.src_port = hdr.udp.dst_port;
                        hdr.udp.dst_port = port;
                        originate_ipv4(meta.ecn_out[1:0]);  /* the round's OR */
                        standard_metadata.egress_spec = standard_metadata.ingress_port;
                    } else if (meta.remaining == 0) {
                        /* completed: mark it (Tofino does this in its result pass) */
                        has_round.write(meta.at, NETAGG_ROUND_SEEN);
                        completed_seq.write(meta.at, hdr.netagg.seq);
                        if (meta.from_parent == 0 && meta.parent_hit == 1) {
                            /* trees: a child's round; its partial sum goes to the parent
                             * (rewritten in egress) and the round waits for the result */
                            upstream.write(meta.at, 1);
                            sent_to_parent.count(32w0);
                            meta.to_parent = 1;
                            standard_metadata.egress_spec = meta.parent_port;
                        } else {
                            /* every member gets the result: multicast */
                            completions.count(32w0);
                            if (meta.from_parent == 1) {
                                results_from_parent.count(32w0);
                            }
                            hdr.netagg.msg_type = NETAGG_MSG_RESULT;
                            /* fresh, recovery := 0 */
                            hdr.netagg.flags = hdr.netagg.flags & NETAGG_FLAG_SET;
                            hdr.udp.checksum = 0;
                            /* the round's OR, this packet's bits included; every multicast
                             * copy inherits it */
                            originate_ipv4(meta.ecn_out[1:0]);
                            hdr.ethernet.src_addr = meta.switch_mac;
                            hdr.ipv4.src_addr = meta.switch_ip;
                            hdr.udp.src_port = NETAGG_UDP_PORT;
                            standard_metadata.mcast_grp = meta.mcast_grp;
                            meta.is_result = 1;
                        }
                    } else {
                        mark_to_drop(standard_metadata);    /* aggregated; nothing to send */
                    }
                }
            }
        } else {
            forward.apply();                 /* plain L2, the frame unchanged */
        }
    }
}

/* ================================= egress ================================================= */

/* Trees: the partial sum of lane 32*b + i, in partial_i at the value registers' index. A frame
 * that goes up writes it (the completion's sum, or the same sum again on a resend while the
 * round waits); a recovery clone reads it into its lanes (the value registers hold the parent's
 * result by then). */
#define PARTIAL_OP(i, b)                                                                      \
    if (hdr.lanes[32 * b + i].isValid()) {                                                    \
        meta.vidx = meta.vbase + b;                                                           \
        if (meta.clone_to_parent == 1) {                                                      \
            partial_##i.read(hdr.lanes[32 * b + i].value, meta.vidx);                         \
        } else {                                                                              \
            partial_##i.write(meta.vidx, hdr.lanes[32 * b + i].value);                        \
        }                                                                                     \
    }
#define PARTIAL_BLOCK(b)                                                                      \
    PARTIAL_OP(0, b)  PARTIAL_OP(1, b)  PARTIAL_OP(2, b)  PARTIAL_OP(3, b)  PARTIAL_OP(4, b)   \
    PARTIAL_OP(5, b)  PARTIAL_OP(6, b)  PARTIAL_OP(7, b)  PARTIAL_OP(8, b)  PARTIAL_OP(9, b)   \
    PARTIAL_OP(10, b) PARTIAL_OP(11, b) PARTIAL_OP(12, b) PARTIAL_OP(13, b) PARTIAL_OP(14, b)  \
    PARTIAL_OP(15, b) PARTIAL_OP(16, b) PARTIAL_OP(17, b) PARTIAL_OP(18, b) PARTIAL_OP(19, b)  \
    PARTIAL_OP(20, b) PARTIAL_OP(21, b) PARTIAL_OP(22, b) PARTIAL_OP(23, b) PARTIAL_OP(24, b)  \
    PARTIAL_OP(25, b) PARTIAL_OP(26, b) PARTIAL_OP(27, b) PARTIAL_OP(28, b) PARTIAL_OP(29, b)  \
    PARTIAL_OP(30, b) PARTIAL_OP(31, b)

control NetaggEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    /* Trees: the partial sums of the rounds a child sent up, laid out as value_0..value_31. */
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_0;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_1;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_2;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_3;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_4;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_5;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_6;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_7;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_8;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_9;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_10;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_11;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_12;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_13;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_14;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_15;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_16;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_17;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_18;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_19;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_20;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_21;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_22;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_23;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_24;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_25;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_26;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_27;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_28;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_29;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_30;
    register<bit<32>>(NETAGG_VALUE_REGISTER_SIZE) partial_31;

    /* Trees: the frame as the round's partial sum for the parent (the model's send_to_parent):
     * a contribution of the job at the parent, from this switch's rank there, to the parent's
     * slot; set, seq, epoch and count stay (the round's), the exponent is the round's, the
     * flags up_flags; from the switch's MAC, IP and port 20033 to the parent's, with
     * wire::encode_frame's IPv4 header and the round's ECN OR. */
    action to_parent_headers() {
        hdr.netagg.msg_type = NETAGG_MSG_CONTRIBUTION;
        hdr.netagg.flags = meta.up_flags;
        hdr.netagg.job_id = meta.parent_job_id;
        hdr.netagg.rank = meta.parent_rank;
        hdr.netagg.slot = meta.parent_slot_base + meta.slot_offset;
        hdr.netagg.exponent = meta.exponent_out ^ 0x8000;
        hdr.ethernet.src_addr = meta.switch_mac;
        hdr.ethernet.dst_addr = meta.parent_mac;
        hdr.ipv4.src_addr = meta.switch_ip;
        hdr.ipv4.dst_addr = meta.parent_ip;
        hdr.udp.src_port = NETAGG_UDP_PORT;
        hdr.udp.dst_port = meta.parent_udp_port;
        hdr.udp.checksum = 0;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = meta.ecn_out[1:0];
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = IP_FLAGS_DF;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = IP_TTL;
        meta.originated = 1;
        meta.frame_length = (bit<32>)hdr.ipv4.total_len + 14;
    }

    action set_result_destination(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<8> rank) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.dst_port = udp_port;
        hdr.netagg.rank = (bit<16>)rank;
    }
    action result_destination_miss() { mark_to_drop(standard_metadata); }
    table result_destination {
        key = { standard_metadata.egress_rid : exact; }
        actions = { set_result_destination; result_destination_miss; }
        default_action = result_destination_miss();
        size = 8192;
    }
    apply {
        if (meta.is_result == 1 &&
            standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION) {
            result_destination.apply();
        }
        /* Trees: the partial sum for the parent. The frame ingress sent up holds it in its
         * lanes (kept in partial_i); a recovery clone (the original recovery copy, parsed
         * again, with the FIELD_LIST_TO_PARENT fields) gets it from partial_i. */
        if ((meta.to_parent == 1 &&
             standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) ||
            (meta.clone_to_parent == 1 &&
             standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE)) {
            PARTIAL_BLOCK(0) PARTIAL_BLOCK(1) PARTIAL_BLOCK(2) PARTIAL_BLOCK(3)
            PARTIAL_BLOCK(4) PARTIAL_BLOCK(5) PARTIAL_BLOCK(6) PARTIAL_BLOCK(7)
            to_parent_headers();
        }
        /* An originated frame is exactly its headers (+ the request's payload for an echo
         * reply): drop whatever followed the request's IPv4 total length (Ethernet padding). */
        if (meta.frame_length != 0) {
            truncate(meta.frame_length);
        }
    }
}

control NetaggComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* Originated frames only: a forwarded frame leaves byte for byte as it came. */
        update_checksum(meta.originated == 1 && hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control NetaggDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.icmp);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.netagg);
        pkt.emit(hdr.lanes);
    }
}

V1Switch(NetaggParser(), NetaggVerifyChecksum(), NetaggIngress(), NetaggEgress(),
         NetaggComputeChecksum(), NetaggDeparser()) main;

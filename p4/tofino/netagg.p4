// SPDX-License-Identifier: Apache-2.0
/* netagg switch pipeline for Tofino 1 (TNA): SwitchML (Sapio et al., NSDI 2021, Algorithm 2)
 * plus a per-(slot, set) round seq, as sim/switch/switch_model.{hpp,cpp} (the register-level
 * model) and sim/switch/README.md (the decision table) define it. docs/switch-pipeline.md maps
 * every register, table and action to the model. DOES NOT COMPILE for Tofino yet: p4c's
 * open-source back end (p4c-barefoot) rejects the egress parser's depth (355 B; Tofino 1's egress
 * reaches 160 B, so the value lanes must move to ingress) and two has_round RegisterAction
 * outputs: see docs/switch-pipeline.md, "Compiling and running the programs".
 *
 * ---- Stage and register budget (Tofino 1: 12 MAU stages per gress, 4 stateful ALUs each) ----
 *
 * INGRESS, first pass of a contribution (the decision; 8 stateful ALUs, stages 0..11 planned,
 * stage 4 empty: one stage spare):
 *   stage 0   switch_identity, job_table, worker_table, rank_bit (const), forward, and for a
 *             result parent_source (trees)                                          (SRAM/TCAM)
 *   stage 1   header checks prepared: slot_offset = slot - slot_base, payload length,
 *             ecn_in = the packet's IPv4 ECN bits; trees: parent_table (a result's first
 *             pass, and the result pass), the job's slot of a parent's result
 *   stage 2   checks (gateways), drop reason chosen; index at = slot*2 + set (the job's slot)
 *   stage 3   has_round  pair {epoch, state} bit<32> x2 [2*POOL]  SALU 1  chosen by a gateway
 *                        on the recovery and fresh flags: fresh: another epoch or NONE ->
 *                        {epoch, OPEN}, returns NONE (a takeover is a new round); not fresh:
 *                        NONE -> {epoch, OPEN}, another epoch -> returns STALE_EPOCH, writes
 *                        nothing; recovery (fresh or not): read only, NONE -> returns NONE,
 *                        another epoch -> returns STALE_EPOCH; same epoch: returns the state
 *                        (2 conditions per action)
 *             completed_seq  bit<32> [2*POOL]  SALU 2  read
 *   stage 4   (empty: it held seq - completed_seq for the gateway that let round_seq advance
 *             only past a completed round; round_seq's own condition decides "newer" now, so
 *             bf-p4c may pull stages 5..11 up by one)
 *   stage 5   round_seq      bit<32> [2*POOL]  SALU 3  start (NONE, a takeover) / advance if
 *                        newer (a round of this epoch: value := seq if (int32)(seq - value)
 *                        > 0, one condition) / read (every recovery copy, STALE_EPOCH);
 *                        returns the value before
 *   stage 6   seq - round_seq (VLIW); complete = has_round==SEEN && round_seq==completed_seq
 *             (needed only for an equal seq: resend or join)
 *   stage 7   classify (gateways): stale epoch / new (NONE, a takeover, or newer, complete or
 *             not) / stale / equal, and for a recovery copy no round (NONE, or a seq newer than
 *             round_seq) instead of new
 *             round_count    bit<16> [2*POOL]  SALU 4  write (new) / read (equal)
 *   stage 8   count mismatch, resend (gateways)
 *             bitmap         bit<32> [2*POOL]  SALU 5  start (:= rank bit) for every new
 *                      round (class new: NONE, a takeover, a newer seq),
 *                      join (|= rank bit, returns the word before) for a join and a duplicate;
 *                      one PHV operand (rank_bit), no condition
 *   stage 9   duplicate = bitmap_before & rank_bit (VLIW)
 *   stage 10  remaining      bit<8>  [2*POOL]  SALU 6  n-1 (new) / -1 (join)
 *             exponent       bit<16> [2*POOL]  SALU 7  write / max / read (stored XOR 0x8000)
 *             ecn            bit<8>  [2*POOL]  SALU 8  write (new) / OR (join) / read
 *                      (resend); returns the value after: the round's OR of IPv4 ECN bits
 *   stage 11  outcome, counters, bridge header (with the round's ECN OR), egress port = the
 *             pipe's recirculation port
 *   SRAM: has_round 2048 x 64 bit (128 Kbit); the other seven (completed_seq, round_seq,
 *   round_count, bitmap, remaining, exponent, ecn) 2048 entries of <= 32 bit (<= 64 Kbit each;
 *   ecn 2048 x 8 bit = 16 Kbit;
 *   the bitmap 2048 x 32 bit = 64 Kbit, the same bits as SwitchML's 1024 x 64 bit pair per
 *   slot); well under one stage's 80 blocks.
 * INGRESS, result pass (recirculated, last): has_round's state := SEEN if its epoch is still
 *   the packet's (a takeover may have come in between), epoch kept, and completed_seq := seq
 *   (the same two ALUs of stage 3, other RegisterActions), IPv4 ECN := bridge.ecn (the
 *   round's OR), then multicast or unicast.
 *   RegisterActions: has_round 4 (touch fresh, touch, read, completed: the limit),
 *   completed_seq 2, round_seq 3, round_count 2, bitmap 2 (start, join), remaining 2,
 *   exponent 3, ecn 3 (write, join, read).
 *   Recovery copies (flag recovery) add no stage and no stateful ALU: a fourth has_round
 *   RegisterAction (read only), one more flag in the gateways of stages 3 and 5, and one more
 *   class (no_round) in the classify gateway of stage 7.
 *   The bitmap rules (a new round from the starter's bit alone, the other set never touched)
 *   add no stage and no stateful ALU: the bitmap stays in stage 8 with one stateful ALU, an
 *   ordinary register indexed by at with two RegisterActions (a pair per slot, SwitchML's
 *   form, would need a start and an OR action per set: four), chosen by a gateway on class
 *   new alone; no PHV operand but rank_bit.
 *   The newer rule (a newer seq starts the next round, complete or not) adds no stage, no
 *   stateful ALU and no RegisterAction: round_seq_advance's one condition compares the packet's
 *   seq with the stored one instead of the stored one with completed_seq, and the VLIW step of
 *   stage 4 is gone.
 *   The ECN OR (the model's SlotRegisters::ecn) adds no stage: its register takes the third
 *   of stage 10's four stateful ALUs, next to exponent, whose choice it shares (write for
 *   class new, OR for a join, read for a resend; nothing for a drop). It cannot use the empty
 *   stage 4: there the packet's class (stage 7) and whether it is a duplicate (stage 9) are
 *   not known yet, and a dropped packet (stale, no_round, a duplicate, ...) must not OR its
 *   bits into the round. Ingress: 12 stages planned, 11 used, stage 4 spare.
 *   Doubtful until bf-p4c places it: that the wider gateways of stages 3, 5 and 7 still fit
 *   their stages (the spare stage is the slack if one does not); that round_seq_advance's
 *   condition compiles to the sign of the 32-bit wrapped difference seq - value (P4's int<32>
 *   arithmetic; bf-p4c selects its "uus" compare for a signed full-width difference), since
 *   an unwrapped compare would disagree with the classification of stage 7 near the wrap.
 * EGRESS of every pass through the recirculation port (the value lanes; 32 stateful ALUs):
 *   stage 0       clear the pass's lanes of a resend (reads are "add 0")
 *   stages 1..8   value_0 .. value_31  bit<32> [2*POOL*2]  4 SALUs per stage, 4 RegisterActions
 *                 each (write/add x lane block 0/1); 2*1024*2*32 bit = 128 Kbit per register
 *   stage 9       next pass or result pass or drop; result_destination (multicast copies)
 *   PHV: 64 lanes (2048 bit) + headers (~700 bit) + bridge (64 bit; ecn takes 2 bits of what
 *   was padding).
 *
 * Lanes: NETAGG_LANES_PER_PASS = 32 per pass, NETAGG_TOFINO_MAX_PASSES = 2 passes, so at most
 * 64 int32 elements per packet (SwitchML's 256-byte payload); the control plane rejects jobs
 * with more. The whole payload is in the PHV on every egress pass (it must be re-emitted), so
 * more passes would not fit the PHV; more lanes per pass would not fit the stateful ALUs.
 *
 * Passes of a contribution (all through port 68 of the ingress pipe, one FIFO, so every
 * register sees the packets in the order of their decisions):
 *   pass 0   ingress: checks + decision (above); egress: lanes 0..31 (value_i index at*2+0)
 *   pass 1   ingress: nothing (bridge kind VALUES); egress: lanes 32..63 (index at*2+1)
 *            (only if count > 32)
 *   result   ingress: for a completion: has_round/completed_seq, multicast to the job's group;
 *            for a resend: back out of the sender's port, addresses swapped. A contribution that
 *            neither completes nor is answered is dropped at the end of its last egress pass.
 * Every pass writes the lane block it adds back into the packet (the register action returns
 * the updated value), so after the last pass the payload holds the whole sum, in place: a
 * result carries all lanes without any reassembly.
 *
 * Seq (the model's rule): a packet whose seq is older than the set's round (serial
 * arithmetic) is stale; one whose seq is newer starts the set's next round, whether the round
 * it holds is complete or not: no correct worker sends a newer packet to a set before every
 * worker has had the result of the round it holds, so that round is over for everybody (after a
 * restart a round formed again may never complete). round_seq_advance writes the newer seq in
 * the same stateful ALU that returns the old one, so a packet sees the round of every packet
 * decided before it.
 *
 * Bitmap (the model's rule): one bit<32> word per (slot, set), index at as the other decision
 * registers. Every new round (from no round, a takeover, or a newer seq) sets the set's word to
 * the sender's bit alone; a join ORs the bit in. No packet touches the other set's word:
 * SwitchML's pair update (clearing the sender's bit in the other set) is not needed, since each
 * set keeps its round's seq and a new round starts from the starter's bit, and after an
 * aggregator restart it would be wrong (it could undo a recovery copy's join to the other
 * set's round, letting the sender's next copy be added twice).
 * A duplicate is found by the bitmap update itself (the join action's output), so it has run
 * that action: the OR of a bit already set, no change, as the model's "no write".
 * Registers are per pipe: all workers of a job must be on one pipe.
 *
 * Epoch (the model's takeover rule): a contribution to a set that holds a round of another
 * epoch takes the set over when it is fresh (a new round, as for "no round", whose bitmap word
 * is the sender's bit alone) and is dropped as stale_epoch otherwise, before any seq rule.
 * The epoch lives in the has_round register, paired with the round state, so the rule costs no
 * stage and no stateful ALU.
 *
 * Recovery copies (the model's rule): a contribution with the recovery flag (a packet whose
 * result its sender has, sent again for the workers still waiting on its round) never starts a
 * round. In stages 3 and 5 it uses read-only RegisterActions (has_round_read, round_seq_read),
 * so it never starts or takes over a round there: a round of another epoch drops it as
 * stale_epoch (also when fresh), a set with no round (NONE) or a seq newer than round_seq drops
 * it as no_round, an older seq as stale; an equal seq is decided as any packet's (count
 * mismatch, resend, duplicate, join). A recovery copy dropped as stale_epoch, no_round or stale
 * reaches no register after round_seq, and count_mismatch only reads round_count, so these
 * write no register. One dropped as duplicate has run the bitmap's join action, which for it
 * changes nothing (this set's bit is already set), so a dropped recovery copy changes no
 * register, as in the model. Results clear fresh and recovery (flags = the set bit).
 *
 * ECN (the model's SlotRegisters::ecn; docs/congestion-control.md, "Marks"): register ecn,
 * bit<8> per (slot, set) holding 0..3, the OR of the IPv4 ECN bits of the round's
 * contributions, so that every worker of a job sees the same marks. A new round writes the
 * starting packet's bits (ecn_write), a join ORs its packet's bits in (ecn_join), a resend
 * reads it (ecn_read); a dropped packet, a duplicate included, runs none of them. How the OR
 * reaches the packet that becomes the result: each action returns the register's value after
 * its update, and stage 11 puts it in the bridge header (bridge.ecn). The bridge travels with
 * the packet through its lane passes (the egress parser extracts it and the egress deparser
 * re-emits it; the ingress of a second lane pass parses it and keeps it) into the result
 * pass, whose originate_ipv4(bridge.ecn) writes it into the IPv4 ECN field before the
 * ingress deparser recomputes the checksum; the multicast copies inherit it. For a
 * completion that value is the round's final OR: the completing contribution is the last
 * contributor's, every other join was decided (and OR'ed) before it through the same ALU,
 * and nothing ORs into the round after it (an equal seq is then a duplicate, dropped before
 * stage 10, or, once the result pass has marked the round complete, a resend, which only
 * reads). A resend reads the register in its first pass, after the result pass marked the
 * round complete, so it reads that final OR too (a newer round that overwrote it would have
 * made the resend's seq stale). The OR rides in the bridge rather than in the contribution's
 * own IPv4 ECN field so that nothing between the passes (the recirculation port's queue)
 * can change it; a round started on the set while the packet recirculates rewrites the
 * register, not the value this packet carries.
 *
 * Trees (the model's send_to_parent / result_from_parent; the BMv2 program's parent_table and
 * parent_source, the same contract): a job with a parent_table entry is a child. No stage, no
 * stateful ALU and no RegisterAction is added; has_round's completion action takes its new
 * state from a PHV operand (md.completed_state) instead of the constant SEEN.
 *   Up: the result pass of a child's completed round (parent_table, stage 1, keyed by the job
 *     id) stores ROUND_WAITING (a fourth has_round state, next to NONE, OPEN, SEEN) instead of
 *     SEEN and sends the packet, whose lanes hold the partial sum, to the parent's port as a
 *     contribution of the parent's job id, rank and slot (slot - slot_base + the parent's
 *     slot_base), flags set and fresh (the completing packet's: a correct worker's packets of
 *     one round all carry the same fresh flag; the model keeps the first packet's), IPv4 ECN
 *     the round's OR (bridge.ecn). Counter sent_to_parent.
 *   Resend: a retransmission of a round in ROUND_WAITING (complete, equal seq) reads the value
 *     registers (op READ: they still hold the partial sum) and its result pass sends it up
 *     the same way (OUTCOME_TO_PARENT, counter resent_to_parent).
 *   Down: a result from the parent takes two passes before its lane passes. First pass:
 *     parent_source (stage 0, after job_table has read the key) rewrites its job id to the
 *     child job's, parent_table (stage 1) gives this switch's rank (checked:
 *     rank_out_of_range) and the parent's slot_base; its slot becomes the offset in the window
 *     and it recirculates (BRIDGE_FROM_PARENT). Decision pass: job_table finds the job (stage
 *     0), its slot is the job's in stage 1 (so `at` is ready for stage 3), the slot range and
 *     dtype are checked, and the read-only actions decide (has_round_read, completed_seq_read,
 *     round_seq_read): no round or a newer seq or a round still open here no_round, another
 *     epoch stale_epoch, an older seq stale, a round not in ROUND_WAITING duplicate, another
 *     count count_mismatch; else exponent_write (the result's exponent), ecn_join (its ECN bits
 *     ORed in) and op WRITE: the lane passes overwrite the value registers with the result's
 *     values with the actions a new round uses (no value RegisterAction is added). Its result
 *     pass stores SEEN and multicasts it as a completion (completions, results_from_parent).
 *   Not done on Tofino: the partial sum is not kept after the parent's result (a second set of
 *     value registers needs 32 more stateful ALUs; egress has 16 free), so a recovery copy to
 *     a round answered already gets the result only and nothing goes up: a restarted parent is
 *     not recovered through a Tofino child (a round it forms again never gets this child's
 *     part; docs/switch-pipeline.md). And the waiting state is
 *     cleared in the result pass, not at the decision: a second copy of the parent's result
 *     that arrives within those passes is multicast too, and a member's retransmission then
 *     sends the values up as they are being overwritten (the parent answers it from its stored
 *     result, as it does every copy of a round it has answered).
 * Frames (sim/switch/pipeline.cpp, as the BMv2 program): ARP and ICMP echo answered for the
 * switch's IP; every other frame to that IP counts in packets_in and goes through the frame and
 * header checks (drops[malformed]); originated frames get wire::encode_frame's IPv4 header and a
 * checksum recomputed (originated frames only); forwarded frames leave unchanged. Two frame-level
 * differences the hardware imposes (docs/switch-pipeline.md): ingress cannot see the frame's
 * length (a frame shorter than its IPv4 total length is not recognised), and Tofino 1 cannot
 * truncate, so a reply carries the request's bytes after its IPv4 total length (padding).
 */
#include <core.p4>
#include <tna.p4>

#include "../common/headers.p4"

#define NETAGG_MAX_PASSES NETAGG_TOFINO_MAX_PASSES
#define NETAGG_LANES_PER_PACKET 64      /* NETAGG_LANES_PER_PASS * NETAGG_MAX_PASSES */
#define NETAGG_RECIRC_PORT 68           /* the recirculation port of each pipe (local number) */
#define NETAGG_REGISTER_SIZE 2048       /* 2 * NETAGG_POOL_SLOTS */
#define NETAGG_VALUE_REGISTER_SIZE 4096 /* 2 * NETAGG_POOL_SLOTS * NETAGG_MAX_PASSES */

/* bridge.kind (ingress -> egress) and recirculation kind (egress -> ingress) */
#define BRIDGE_NONE 0      /* forwarded / answered frame: egress leaves it alone */
#define BRIDGE_VALUES 1    /* egress adds lane block `pass`; ingress of a recirculated one: pass on */
#define BRIDGE_MCAST 2     /* a multicast result copy: egress rewrites it (result_destination) */
#define BRIDGE_RESULT 3    /* recirculated: the result pass */
#define BRIDGE_FROM_PARENT 4 /* trees: a parent's result, job id translated: its decision pass */

/* bridge.op: what the value registers do */
#define OP_WRITE 0         /* a new round: overwrite */
#define OP_ADD 1           /* a join: add */
#define OP_READ 2          /* a resend: lanes cleared, then add 0 */

/* bridge.outcome */
#define OUTCOME_AGGREGATED 0
#define OUTCOME_COMPLETED 1
#define OUTCOME_RESENT 2
#define OUTCOME_TO_PARENT 3    /* trees: a resend while the round waits: the partial sum up */
#define OUTCOME_FROM_PARENT 4  /* trees: the parent's result completes the round */

/* classification of a contribution in the first pass */
#define CLASS_NEW 1            /* no round, a takeover, or a seq newer than the set's round
                                * (complete or not) */
#define CLASS_EQUAL 2
#define CLASS_STALE 3
#define CLASS_STALE_EPOCH 4
#define CLASS_NO_ROUND 5       /* a recovery copy to no round, or newer than the set's round */
#define CLASS_DUPLICATE 6      /* trees: a parent's result to a round answered already */
#define CLASS_FROM_PARENT 7    /* trees: the parent's result to the round waiting for it */

/* has_round's output for a packet that does not take over a round of another epoch (not fresh,
 * or a recovery copy; never stored: the stored states are NETAGG_ROUND_NONE, _OPEN, _SEEN) */
#define ROUND_STALE_EPOCH 3
/* trees: a stored state, next to NETAGG_ROUND_NONE, _OPEN and _SEEN: the set's round is complete
 * here and its partial sum went to the parent, whose result is not here yet */
#define ROUND_WAITING 4

header netagg_bridge_h {
    bit<8>  kind;
    bit<8>  pass;
    bit<8>  op;
    bit<8>  outcome;
    bit<16> at;          /* slot * 2 + set */
    bit<2>  ecn;         /* the round's OR of IPv4 ECN bits (ecn register): the result's ECN */
    bit<5>  pad;
    PortId_t orig_port;  /* where the contribution came in (unicast answers) */
}

struct headers_t {
    netagg_bridge_h bridge;
    ethernet_h      ethernet;
    arp_h           arp;
    ipv4_h          ipv4;
    icmp_h          icmp;
    udp_h           udp;
    netagg_h        netagg;
    netagg_lane_h[NETAGG_LANES_PER_PACKET] lanes;   /* egress only */
}

/* has_round: the set's round state and the epoch of its round, one pair register */
struct round_state_t {
    bit<32> epoch;   /* the epoch of the set's round (0 after the job is installed) */
    bit<32> state;   /* NETAGG_ROUND_NONE, _OPEN, _SEEN or ROUND_WAITING */
}

@pa_auto_init_metadata
struct ig_metadata_t {
    mac_addr_t  switch_mac;
    ipv4_addr_t switch_ip;
    bit<1>  job_hit;
    bit<8>  worker_count;
    bit<8>  worker_count_minus_1;
    bit<16> slot_base;
    bit<16> slot_count;
    bit<16> elements_per_packet;
    bit<16> mcast_grp;
    /* trees */
    bit<1>  from_parent;      /* the decision pass of a parent's result (bridge FROM_PARENT) */
    bit<1>  parent_source_hit;  /* first pass of a result: a parent of one of the jobs sent it */
    bit<1>  parent_hit;       /* the job has a parent (parent_table) */
    mac_addr_t  parent_mac;
    ipv4_addr_t parent_ip;
    bit<16> parent_udp_port;
    bit<9>  parent_port;
    bit<16> parent_job_id;
    bit<16> parent_rank;
    bit<16> parent_slot_base;
    bit<16> child_slot;       /* the job's slot: a contribution's own, a result's translated */
    bit<32> completed_state;  /* result pass: what has_round_completed stores (SEEN, WAITING) */
    bit<1>  worker_hit;
    bit<8>  worker_rank;
    bit<32> rank_bit;
    bit<16> slot_offset;
    bit<16> payload_bytes;
    bit<16> at;
    bit<1>  checked;          /* passed every check of the job table */
    bit<1>  translate;        /* trees: a parent's result, to its decision pass */
    bit<8>  drop_reason;
    bit<1>  drop;
    bit<8>  has_round;        /* before this packet; NONE for a takeover, or ROUND_STALE_EPOCH */
    bit<1>  recovery;         /* the packet is a recovery copy: it never starts a round */
    bit<32> completed_seq;
    bit<32> round_seq;        /* before this packet */
    bit<32> seq_diff;
    bit<1>  complete;
    bit<8>  class;
    bit<16> round_count;
    bit<32> bitmap_before;
    bit<32> duplicate;
    bit<8>  remaining;        /* after this packet */
    bit<16> exponent_biased;  /* the packet's exponent XOR 0x8000 (signed order as unsigned) */
    bit<16> exponent_out;     /* the round's exponent after this packet, biased */
    bit<8>  ecn_in;           /* the packet's IPv4 ECN bits (0..3), the ecn register's operand */
    bit<8>  ecn_out;          /* the round's ECN OR after this packet (a resend: as stored) */
    bit<8>  op;
    bool    ipv4_checksum_ok; /* the parser's Checksum.verify(): wire::ipv4_checksum == 0 */
    bit<1>  ipv4_ok;          /* wire::decode_frame's IPv4 header check */
    bit<16> udp_length_plus_20;
    bit<1>  frame_ok;         /* a well-formed netagg UDP/20033 frame, up to the netagg header */
    bit<1>  originated;       /* the switch built this frame: fresh IPv4 checksum */
}

@pa_auto_init_metadata
struct eg_metadata_t {
    bit<32> value_index;
}

/* ================================= ingress ================================================ */

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_metadata_t md,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;
    state start {
        /* Every field zero before the parser writes any (what @pa_auto_init_metadata gives on
         * Tofino, said in the language, so that no field of the out parameter is undefined). */
        md = {...};
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port[6:0]) {
            NETAGG_RECIRC_PORT: parse_recirculated;
            default: parse_ethernet;
        }
    }
    state parse_recirculated {
        pkt.extract(hdr.bridge);
        transition parse_ethernet;
    }
    state parse_ethernet {
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
        ipv4_checksum.add(hdr.ipv4);                 /* all ten words, checksum included */
        md.ipv4_checksum_ok = ipv4_checksum.verify();
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
        transition accept;
    }
}

control Ingress(inout headers_t hdr, inout ig_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- counters (sim::SwitchCounters) ---- */
    Counter<bit<64>, bit<8>>(NETAGG_DROP_REASONS, CounterType_t.PACKETS) drops;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) packets_in;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) completions;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) results_resent;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) sent_to_parent;       /* trees */
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) resent_to_parent;
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) results_from_parent;

    /* ---- tables of the control-plane contract ---- */
    action set_switch_identity(bit<48> mac, bit<32> ip) {
        md.switch_mac = mac;
        md.switch_ip = ip;
    }
    table switch_identity {
        actions = { set_switch_identity; }
        default_action = set_switch_identity(0, 0);
        size = 1;
    }

    action set_job(bit<8> worker_count, bit<16> slot_base, bit<16> slot_count,
                   bit<16> elements_per_packet, bit<16> mcast_grp) {
        md.job_hit = 1;
        md.worker_count = worker_count;
        md.worker_count_minus_1 = worker_count - 1;
        md.slot_base = slot_base;
        md.slot_count = slot_count;
        md.elements_per_packet = elements_per_packet;
        md.mcast_grp = mcast_grp;
    }
    action job_miss() { md.job_hit = 0; }
    table job_table {
        key = { hdr.netagg.job_id : exact; }
        actions = { set_job; job_miss; }
        default_action = job_miss();
        size = 1024;
    }

    /* Trees (the BMv2 program's tables, the same contract): the job's parent, where a completed
     * round's partial sum goes (applied in stage 1, keyed by the job's id: the translation of
     * a parent's result has rewritten it in stage 0), and the parent_source entry that makes a
     * parent's result one of the job's (stage 0, first pass of a result). */
    action set_parent(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<9> port, bit<16> job_id,
                      bit<16> rank, bit<16> slot_base) {
        md.parent_hit = 1;
        md.parent_mac = mac;
        md.parent_ip = ip;
        md.parent_udp_port = udp_port;
        md.parent_port = port;
        md.parent_job_id = job_id;
        md.parent_rank = rank;
        md.parent_slot_base = slot_base;
    }
    action parent_miss() { md.parent_hit = 0; }
    table parent_table {
        key = { hdr.netagg.job_id : exact; }
        actions = { set_parent; parent_miss; }
        default_action = parent_miss();
        size = 1024;
    }

    action set_parent_source(bit<16> job_id) {
        md.parent_source_hit = 1;
        hdr.netagg.job_id = job_id;      /* from here on the result is one of this job's */
    }
    action parent_source_miss() { md.parent_source_hit = 0; }
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
        md.worker_hit = 1;
        md.worker_rank = rank;
    }
    action worker_miss() { md.worker_hit = 0; }
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

    action set_egress_port(bit<9> port) { ig_tm_md.ucast_egress_port = port; }
    action forward_miss() { ig_dprsr_md.drop_ctl = 1; }
    table forward {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { set_egress_port; forward_miss; }
        default_action = forward_miss();
        size = 4096;
    }

    /* rank -> its bitmap bit; Tofino has no shift by a run-time amount. Ranks >= 32 are
     * dropped (rank_out_of_range) before the bit is used. */
    action set_rank_bit(bit<32> bit_) { md.rank_bit = bit_; }
    table rank_bit {
        key = { hdr.netagg.rank : exact; }
        actions = { set_rank_bit; NoAction; }
        const entries = {
            0 : set_rank_bit(32w1 << 0);   1 : set_rank_bit(32w1 << 1);
            2 : set_rank_bit(32w1 << 2);   3 : set_rank_bit(32w1 << 3);
            4 : set_rank_bit(32w1 << 4);   5 : set_rank_bit(32w1 << 5);
            6 : set_rank_bit(32w1 << 6);   7 : set_rank_bit(32w1 << 7);
            8 : set_rank_bit(32w1 << 8);   9 : set_rank_bit(32w1 << 9);
            10 : set_rank_bit(32w1 << 10); 11 : set_rank_bit(32w1 << 11);
            12 : set_rank_bit(32w1 << 12); 13 : set_rank_bit(32w1 << 13);
            14 : set_rank_bit(32w1 << 14); 15 : set_rank_bit(32w1 << 15);
            16 : set_rank_bit(32w1 << 16); 17 : set_rank_bit(32w1 << 17);
            18 : set_rank_bit(32w1 << 18); 19 : set_rank_bit(32w1 << 19);
            20 : set_rank_bit(32w1 << 20); 21 : set_rank_bit(32w1 << 21);
            22 : set_rank_bit(32w1 << 22); 23 : set_rank_bit(32w1 << 23);
            24 : set_rank_bit(32w1 << 24); 25 : set_rank_bit(32w1 << 25);
            26 : set_rank_bit(32w1 << 26); 27 : set_rank_bit(32w1 << 27);
            28 : set_rank_bit(32w1 << 28); 29 : set_rank_bit(32w1 << 29);
            30 : set_rank_bit(32w1 << 30); 31 : set_rank_bit(32w1 << 31);
        }
        default_action = NoAction();
        size = 32;
    }

    /* ---- registers, index at = slot * 2 + set unless said ---- */
    /* {epoch, state}: the state as before (NONE -> OPEN by the first packet, SEEN by a
     * completion) and the epoch of the set's round. Zero-initialised: {0, NETAGG_ROUND_NONE}.
     * The touch and read actions have two conditions, one on each half: state == NONE and the
     * stored epoch against the packet's; the result pass's action one. Four RegisterActions,
     * the most a register takes. Outputs: the state before (a memory half), NONE (0: also what a
     * stateful ALU returns when its output is not enabled) or ROUND_STALE_EPOCH (a constant;
     * doubtful on Tofino 1 for a pair register whose two halves the other branch writes: if
     * bf-p4c rejects it, set a metadata field to ROUND_STALE_EPOCH in stage 2 and return that
     * PHV operand instead). The state is returned as bit<8> (a truncated output; doubtful too:
     * else return bit<32> into a 32-bit md.has_round). */
    Register<round_state_t, bit<16>>(NETAGG_REGISTER_SIZE) has_round;
    /* a fresh packet (its sender's first on this set in its run): a round of another epoch is
     * taken over, i.e. treated as no round: {packet's epoch, OPEN}, returns NONE */
    RegisterAction<round_state_t, bit<16>, bit<8>>(has_round) has_round_touch_fresh = {
        void apply(inout round_state_t value, out bit<8> before) {
            if (value.state == NETAGG_ROUND_NONE || value.epoch != hdr.netagg.epoch) {
                value.epoch = hdr.netagg.epoch;
                value.state = NETAGG_ROUND_OPEN;
                before = NETAGG_ROUND_NONE;
            } else {
                before = (bit<8>)value.state;
            }
        }
    };
    /* any other packet: a round of another epoch is not its run's: ROUND_STALE_EPOCH, nothing
     * written; an empty set starts its round with the packet's epoch */
    RegisterAction<round_state_t, bit<16>, bit<8>>(has_round) has_round_touch = {
        void apply(inout round_state_t value, out bit<8> before) {
            if (value.state == NETAGG_ROUND_NONE) {
                value.epoch = hdr.netagg.epoch;
                value.state = NETAGG_ROUND_OPEN;
                before = NETAGG_ROUND_NONE;
            } else if (value.epoch != hdr.netagg.epoch) {
                before = ROUND_STALE_EPOCH;
            } else {
                before = (bit<8>)value.state;
            }
        }
    };
    /* a recovery copy (fresh or not): writes nothing, so it never starts a round nor takes a
     * set over. NONE returns NONE (dropped as no_round), a round of another epoch returns
     * ROUND_STALE_EPOCH, a round of this epoch its state. */
    RegisterAction<round_state_t, bit<16>, bit<8>>(has_round) has_round_read = {
        void apply(inout round_state_t value, out bit<8> before) {
            if (value.state == NETAGG_ROUND_NONE) {
                before = NETAGG_ROUND_NONE;
            } else if (value.epoch != hdr.netagg.epoch) {
                before = ROUND_STALE_EPOCH;
            } else {
                before = (bit<8>)value.state;
            }
        }
    };
    /* the result pass: SEEN (ROUND_WAITING for a child's round, whose partial sum goes to the
     * parent; SEEN again when the parent's result completes it: md.completed_state, a PHV
     * operand), the epoch kept. Only if the set still holds the completing packet's epoch: a
     * fresh packet of another epoch may have taken the set over (OPEN) while this packet
     * recirculated, and SEEN would then pair the new round with the old epoch's
     * completed_seq, making it look complete when the seqs coincide. */
    RegisterAction<round_state_t, bit<16>, bit<8>>(has_round) has_round_completed = {
        void apply(inout round_state_t value) {
            if (value.epoch == hdr.netagg.epoch) {
                value.state = md.completed_state;
            }
        }
    };

    Register<bit<32>, bit<16>>(NETAGG_REGISTER_SIZE, 0) completed_seq;
    RegisterAction<bit<32>, bit<16>, bit<32>>(completed_seq) completed_seq_read = {
        void apply(inout bit<32> value, out bit<32> read) { read = value; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(completed_seq) completed_seq_write = {
        void apply(inout bit<32> value) { value = hdr.netagg.seq; }
    };

    Register<bit<32>, bit<16>>(NETAGG_REGISTER_SIZE, 0) round_seq;
    RegisterAction<bit<32>, bit<16>, bit<32>>(round_seq) round_seq_start = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            value = hdr.netagg.seq;
        }
    };
    /* A packet that is not a recovery copy, to a set holding a round of its epoch (OPEN or
     * SEEN): a seq newer than the stored one starts the next round, whether that round is
     * complete or not, so it is written; an equal or older one leaves it. "Newer" is serial
     * arithmetic, (int32)(seq - value) > 0: one condition, on the difference of the PHV operand
     * and the register (int<32> arithmetic wraps, so the difference's sign is the serial order,
     * as the gateways of stage 7 read it from seq_diff). Returns the value before. */
    RegisterAction<bit<32>, bit<16>, bit<32>>(round_seq) round_seq_advance = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            if ((int<32>)hdr.netagg.seq - (int<32>)value > 0) {
                value = hdr.netagg.seq;
            }
        }
    };
    /* every recovery copy (which never starts a round), and a packet of another epoch that
     * does not take the set over (ROUND_STALE_EPOCH, dropped: it writes nothing) */
    RegisterAction<bit<32>, bit<16>, bit<32>>(round_seq) round_seq_read = {
        void apply(inout bit<32> value, out bit<32> before) { before = value; }
    };

    Register<bit<16>, bit<16>>(NETAGG_REGISTER_SIZE, 0) round_count;
    RegisterAction<bit<16>, bit<16>, bit<16>>(round_count) round_count_write = {
        void apply(inout bit<16> value, out bit<16> before) {
            before = value;
            value = hdr.netagg.count;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(round_count) round_count_read = {
        void apply(inout bit<16> value, out bit<16> before) { before = value; }
    };

    /* The ranks that have joined the set's round, one bit each. The start action (the word :=
     * the sender's bit) for every new round: from no round, a takeover or a newer seq, whose
     * bits belong to an earlier round. The join action (|= the sender's bit, SwitchML's OR) for
     * a join and for a duplicate, which its output (the word before) detects. The other set's
     * word is never touched: no SwitchML pair update. */
    Register<bit<32>, bit<16>>(NETAGG_REGISTER_SIZE, 0) bitmap;
    RegisterAction<bit<32>, bit<16>, bit<32>>(bitmap) bitmap_start = {
        void apply(inout bit<32> value) { value = md.rank_bit; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(bitmap) bitmap_join = {
        void apply(inout bit<32> value, out bit<32> before) {
            before = value;
            value = value | md.rank_bit;
        }
    };

    Register<bit<8>, bit<16>>(NETAGG_REGISTER_SIZE, 0) remaining;
    RegisterAction<bit<8>, bit<16>, bit<8>>(remaining) remaining_start = {
        void apply(inout bit<8> value, out bit<8> after) {
            value = md.worker_count_minus_1;
            after = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(remaining) remaining_join = {
        void apply(inout bit<8> value, out bit<8> after) {
            value = value - 1;
            after = value;
        }
    };

    /* Holds exponent XOR 0x8000, so that the unsigned max is the signed max and the cleared
     * register (0) is wire::kExponentNone. */
    Register<bit<16>, bit<16>>(NETAGG_REGISTER_SIZE, 0) exponent;
    RegisterAction<bit<16>, bit<16>, bit<16>>(exponent) exponent_write = {
        void apply(inout bit<16> value, out bit<16> after) {
            value = md.exponent_biased;
            after = value;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(exponent) exponent_max = {
        void apply(inout bit<16> value, out bit<16> after) {
            if (md.exponent_biased > value) {
                value = md.exponent_biased;
            }
            after = value;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(exponent) exponent_read = {
        void apply(inout bit<16> value, out bit<16> after) { after = value; }
    };

    /* The OR of the IPv4 ECN bits (0..3) of the round's contributions (the model's
     * SlotRegisters::ecn). Write for every new round (the starting packet's bits alone: the
     * stored ones belong to an earlier round), OR for a join, read for a resend; each returns
     * the value after, which the bridge header carries to the result pass (the header comment,
     * "ECN"). One PHV operand (ecn_in), no condition. */
    Register<bit<8>, bit<16>>(NETAGG_REGISTER_SIZE, 0) ecn;
    RegisterAction<bit<8>, bit<16>, bit<8>>(ecn) ecn_write = {
        void apply(inout bit<8> value, out bit<8> after) {
            value = md.ecn_in;
            after = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(ecn) ecn_join = {
        void apply(inout bit<8> value, out bit<8> after) {
            value = value | md.ecn_in;
            after = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(ecn) ecn_read = {
        void apply(inout bit<8> value, out bit<8> after) { after = value; }
    };

    /* ---- actions ---- */
    action drop_for(bit<8> reason) {
        md.drop = 1;
        md.drop_reason = reason;
    }

    /* wire::encode_frame's IPv4 header for a frame the switch originates (results, echo
     * replies): DSCP 0, ECN ecn_bits (the round's OR, bridge.ecn, for a result; 0 for an echo
     * reply: the frame-level model's FrameAddress::ecn), identification 0, DF, TTL 64; the
     * ingress deparser recomputes the checksum, ECN included, of originated frames only.
     * Version/IHL are 4/5 already (checked). */
    action originate_ipv4(bit<2> ecn_bits) {
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = ecn_bits;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = IP_FLAGS_DF;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = IP_TTL;
        md.originated = 1;
    }

    action to_recirculation(bit<8> kind) {
        hdr.bridge.setValid();
        hdr.bridge.kind = kind;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port[8:7] ++ 7w68;
    }

    apply {
        switch_identity.apply();
        if (!hdr.bridge.isValid()) {
            hdr.bridge.setValid();
            hdr.bridge.kind = BRIDGE_NONE;
            hdr.bridge.pass = 0;
        }

        if (ig_intr_md.ingress_port[6:0] == NETAGG_RECIRC_PORT && hdr.netagg.isValid() &&
            hdr.bridge.kind != BRIDGE_FROM_PARENT) {
            /* ---------------- a recirculated contribution ---------------- */
            if (hdr.bridge.kind == BRIDGE_VALUES) {
                to_recirculation(BRIDGE_VALUES);           /* egress adds the next lane block */
            } else if (hdr.bridge.kind == BRIDGE_RESULT) {
                /* The result is the contribution rewritten. Its epoch stays in place: only a
                 * packet of the round's epoch reaches the value lanes (a new round or a
                 * takeover stored the packet's epoch in has_round, a join or a resend matched
                 * it), so it is the round's epoch. Flags: the set bit only (fresh and
                 * recovery := 0). IPv4 ECN: the round's OR, which the first pass's ecn action
                 * returned and put in the bridge (a completion: this packet's own join or
                 * write produced it; a resend: read from the completed round); the multicast
                 * copies inherit it. Trees: a child's completed round, and a resend while it
                 * waits, go to the parent instead (parent_table, stage 1). */
                job_table.apply();
                parent_table.apply();
                originate_ipv4(hdr.bridge.ecn);
                hdr.udp.checksum = 0;
                md.completed_state = NETAGG_ROUND_SEEN;
                if (md.parent_hit == 1 && hdr.bridge.outcome == OUTCOME_COMPLETED) {
                    md.completed_state = ROUND_WAITING;
                }
                if (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                    hdr.bridge.outcome == OUTCOME_FROM_PARENT) {
                    /* the round is complete from now on (the model: remaining == 0), unless a
                     * takeover came in between (has_round_completed checks the epoch):
                     * ROUND_WAITING for a child's round, SEEN otherwise (also when the
                     * parent's result completes it).
                     * completed_seq is written regardless: an OPEN round ignores it, and a
                     * newer round of this epoch started in between has another round_seq, so
                     * it still reads as incomplete. Not covered: a round started in between
                     * (a new epoch's, or a newer one of this epoch) that completed before this
                     * (longer, 2-pass) packet's result pass (docs/switch-pipeline.md). */
                    has_round_completed.execute(hdr.bridge.at);
                    completed_seq_write.execute(hdr.bridge.at);
                }
                if (md.parent_hit == 1 && (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                                           hdr.bridge.outcome == OUTCOME_TO_PARENT)) {
                    /* trees: the partial sum (the lanes, in place) as this switch's
                     * contribution to the parent: the parent's job id, this switch's rank
                     * there, the parent's slot; set, seq, epoch, count and exponent the
                     * round's; fresh as this packet's (every packet of a correct worker's
                     * round carries the same fresh flag), recovery cleared */
                    if (hdr.bridge.outcome == OUTCOME_COMPLETED) {
                        sent_to_parent.count(0);
                    }
                    hdr.netagg.flags = hdr.netagg.flags & (NETAGG_FLAG_SET | NETAGG_FLAG_FRESH);
                    hdr.netagg.job_id = md.parent_job_id;
                    hdr.netagg.rank = md.parent_rank;
                    hdr.netagg.slot = hdr.netagg.slot - md.slot_base + md.parent_slot_base;
                    hdr.ethernet.src_addr = md.switch_mac;
                    hdr.ethernet.dst_addr = md.parent_mac;
                    hdr.ipv4.src_addr = md.switch_ip;
                    hdr.ipv4.dst_addr = md.parent_ip;
                    hdr.udp.src_port = NETAGG_UDP_PORT;
                    hdr.udp.dst_port = md.parent_udp_port;
                    ig_tm_md.ucast_egress_port = md.parent_port;
                    hdr.bridge.kind = BRIDGE_NONE;
                } else if (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                           hdr.bridge.outcome == OUTCOME_FROM_PARENT) {
                    /* every member gets the result: multicast */
                    completions.count(0);
                    if (hdr.bridge.outcome == OUTCOME_FROM_PARENT) {
                        results_from_parent.count(0);
                    }
                    hdr.netagg.msg_type = NETAGG_MSG_RESULT;
                    hdr.netagg.flags = hdr.netagg.flags & NETAGG_FLAG_SET;
                    hdr.ethernet.src_addr = md.switch_mac;
                    hdr.ipv4.src_addr = md.switch_ip;
                    hdr.udp.src_port = NETAGG_UDP_PORT;
                    ig_tm_md.mcast_grp_a = md.mcast_grp;
                    ig_tm_md.rid = 0;
                    hdr.bridge.kind = BRIDGE_MCAST;
                } else if (hdr.bridge.outcome == OUTCOME_RESENT) {
                    /* a resend: back to the sender, addresses swapped */
                    hdr.netagg.msg_type = NETAGG_MSG_RESULT;
                    hdr.netagg.flags = hdr.netagg.flags & NETAGG_FLAG_SET;
                    mac_addr_t mac = hdr.ethernet.src_addr;
                    hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
                    hdr.ethernet.dst_addr = mac;
                    ipv4_addr_t ip = hdr.ipv4.src_addr;
                    hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                    hdr.ipv4.dst_addr = ip;
                    bit<16> port = hdr.udp.src_port;
                    hdr.udp.src_port = hdr.udp.dst_port;
                    hdr.udp.dst_port = port;
                    ig_tm_md.ucast_egress_port = hdr.bridge.orig_port;
                    hdr.bridge.kind = BRIDGE_NONE;
                } else {
                    ig_dprsr_md.drop_ctl = 1;   /* a resend to the parent of a job without one */
                }
            } else {
                ig_dprsr_md.drop_ctl = 1;
            }
        } else if (hdr.arp.isValid() && hdr.arp.hw_type == 1 &&
                   hdr.arp.proto_type == ETHERTYPE_IPV4 && hdr.arp.hw_addr_len == 6 &&
                   hdr.arp.proto_addr_len == 4 && hdr.arp.opcode == ARP_OPCODE_REQUEST &&
                   hdr.arp.target_proto_addr == md.switch_ip) {
            /* ---------------- ARP: who has the switch's IP ---------------- */
            hdr.ethernet.dst_addr = hdr.arp.sender_hw_addr;
            hdr.ethernet.src_addr = md.switch_mac;
            hdr.arp.opcode = ARP_OPCODE_REPLY;
            hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
            hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
            hdr.arp.sender_hw_addr = md.switch_mac;
            hdr.arp.sender_proto_addr = md.switch_ip;
            ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        } else if (hdr.ipv4.isValid() && hdr.ipv4.dst_addr == md.switch_ip) {
            /* ---- for the switch (pipeline.cpp: EtherType IPv4, IPv4 dst = the switch's IP) ---- */
            if (hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5 && hdr.ipv4.flags[0:0] == 0 &&
                hdr.ipv4.frag_offset == 0 && md.ipv4_checksum_ok) {
                md.ipv4_ok = 1;              /* 0x45, not a fragment (MF clear, offset 0) */
            }
            md.udp_length_plus_20 = hdr.udp.length + 20;
            if (md.ipv4_ok == 1 && hdr.icmp.isValid() && hdr.ipv4.total_len >= 28 &&
                hdr.icmp.icmp_type == ICMP_ECHO_REQUEST && hdr.icmp.code == 0) {
                /* ---------------- ICMP echo to the switch ---------------- */
                hdr.icmp.icmp_type = ICMP_ECHO_REPLY;
                /* RFC 1624 eqn. 3 for the word type/code 0x0800 -> 0x0000, exactly as
                 * pipeline.cpp computes it: HC' = ~(~HC + 0xF7FF), one end-around carry.
                 * That is HC + 0x0800 (+1 on a carry), except HC = 0xF7FF, which gives 0. */
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
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
            } else {
                /* ---- the netagg checks: first pass (and a parent's result's decision pass) ---- */
                if (hdr.bridge.kind == BRIDGE_FROM_PARENT) {
                    md.from_parent = 1;          /* its first pass counted it in packets_in */
                } else {
                    packets_in.count(0);
                }
                job_table.apply();
                worker_table.apply();
                rank_bit.apply();
                /* Trees, the first pass of a result: parent_source (stage 0, after job_table
                 * has read the key) rewrites its job id to the child job's; parent_table (stage
                 * 1) then gives this switch's rank and the job's slots at the parent. The
                 * result recirculates with its slot made the offset in the job's window, and
                 * its decision pass (bridge FROM_PARENT) finds the job in job_table (stage 0)
                 * and its own slot in stage 1, so `at` is ready for has_round in stage 3. */
                if (md.from_parent == 0 && hdr.netagg.isValid() &&
                    hdr.netagg.msg_type == NETAGG_MSG_RESULT) {
                    parent_source.apply();
                    if (md.parent_source_hit == 1) {
                        parent_table.apply();
                    }
                }
                if (md.from_parent == 1) {
                    md.slot_offset = hdr.netagg.slot;
                    md.child_slot = hdr.netagg.slot + md.slot_base;
                } else {
                    md.slot_offset = hdr.netagg.slot - md.slot_base;
                    md.child_slot = hdr.netagg.slot;
                }
                if (hdr.netagg.dtype == NETAGG_DTYPE_BF16) {
                    md.payload_bytes = hdr.netagg.count << 1;
                } else {
                    md.payload_bytes = hdr.netagg.count << 2;
                }
                md.exponent_biased = hdr.netagg.exponent ^ 0x8000;
                md.ecn_in = (bit<8>)hdr.ipv4.ecn;
                md.at = md.child_slot[14:0] ++ hdr.netagg.flags[0:0];
                /* wire::decode_frame: bad_ip_header, not_udp, udp_length_mismatch, wrong_port
                 * (not UDP leaves hdr.udp invalid, another port hdr.netagg invalid; a frame
                 * shorter than the netagg header is a parser error). The frame's length
                 * (ip_length_mismatch) is not known in ingress: docs/switch-pipeline.md. */
                if (md.ipv4_ok == 1 && hdr.udp.isValid() &&
                    md.udp_length_plus_20 == hdr.ipv4.total_len &&
                    hdr.udp.dst_port == NETAGG_UDP_PORT && hdr.netagg.isValid() &&
                    ig_prsr_md.parser_err == 0) {
                    md.frame_ok = 1;
                }

                /* wire::decode's checks, then the job table's, in the model's order */
                if (md.frame_ok == 0) {
                    drop_for(NETAGG_DROP_MALFORMED);
                } else if (hdr.netagg.version != NETAGG_WIRE_VERSION ||
                           (hdr.netagg.msg_type != NETAGG_MSG_CONTRIBUTION &&
                            hdr.netagg.msg_type != NETAGG_MSG_RESULT) ||
                           hdr.netagg.dtype > NETAGG_DTYPE_BF16 ||
                           (hdr.netagg.flags & NETAGG_FLAGS_RESERVED_MASK) != 0 ||
                           hdr.netagg.count > NETAGG_MAX_COUNT ||
                           hdr.udp.length != 8 + NETAGG_HEADER_SIZE + md.payload_bytes) {
                    drop_for(NETAGG_DROP_MALFORMED);
                } else if (hdr.netagg.msg_type != NETAGG_MSG_CONTRIBUTION &&
                           md.from_parent == 0) {
                    /* a result's first pass: taken only from the parent of one of the jobs,
                     * for this switch's rank there (the model's result_from_parent, in its
                     * order: the slot and the dtype in the decision pass) */
                    if (md.parent_source_hit == 0 || md.parent_hit == 0) {
                        drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
                    } else if (hdr.netagg.rank != md.parent_rank) {
                        drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
                    } else {
                        md.translate = 1;
                    }
                } else if (md.from_parent == 1) {
                    if (md.job_hit == 0) {
                        drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
                    } else if (md.slot_offset >= md.slot_count) {
                        drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
                    } else if (hdr.netagg.dtype != NETAGG_DTYPE_INT32) {
                        drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
                    } else {
                        md.checked = 1;
                    }
                } else if (md.job_hit == 0) {
                    drop_for(NETAGG_DROP_UNKNOWN_JOB);
                } else if (hdr.netagg.rank >= (bit<16>)md.worker_count) {
                    drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
                } else if (md.worker_hit == 0 || (bit<16>)md.worker_rank != hdr.netagg.rank) {
                    drop_for(NETAGG_DROP_FOREIGN_SOURCE);
                } else if (md.slot_offset >= md.slot_count) {
                    drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
                } else if (hdr.netagg.dtype != NETAGG_DTYPE_INT32) {
                    drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
                } else if (hdr.netagg.count > md.elements_per_packet ||
                           hdr.netagg.count > NETAGG_LANES_PER_PACKET) {
                    drop_for(NETAGG_DROP_COUNT_TOO_LARGE_FOR_JOB);
                } else {
                    md.checked = 1;
                }

                if (md.checked == 1) {
                    /* ---- the round's epoch, then its seq, decide what the packet is ---- */
                    md.recovery = hdr.netagg.flags[2:2];       /* NETAGG_FLAG_RECOVERY */
                    if (md.from_parent == 1 || hdr.netagg.flags[2:2] == 1) {
                        /* a parent's result, or a recovery copy: read only */
                        /* a recovery copy, fresh or not: read only (never a takeover) */
                        md.has_round = has_round_read.execute(md.at);
                    } else if (hdr.netagg.flags[1:1] == 1) {   /* NETAGG_FLAG_FRESH */
                        md.has_round = has_round_touch_fresh.execute(md.at);
                    } else {
                        md.has_round = has_round_touch.execute(md.at);
                    }
                    /* md.has_round: NONE (no round, or a takeover: has_round now holds
                     * {packet's epoch, OPEN}; for a recovery copy no round, nothing written),
                     * OPEN or SEEN (a round of this epoch), or ROUND_STALE_EPOCH (dropped
                     * below; the registers after has_round are only read) */
                    md.completed_seq = completed_seq_read.execute(md.at);
                    if (md.recovery == 1 || md.from_parent == 1) {
                        md.round_seq = round_seq_read.execute(md.at);   /* never starts one */
                    } else if (md.has_round == NETAGG_ROUND_NONE) {
                        md.round_seq = round_seq_start.execute(md.at);
                    } else if (md.has_round == NETAGG_ROUND_OPEN ||
                               md.has_round == NETAGG_ROUND_SEEN ||
                               md.has_round == ROUND_WAITING) {
                        /* writes the seq if it is newer, complete or not */
                        md.round_seq = round_seq_advance.execute(md.at);
                    } else {
                        md.round_seq = round_seq_read.execute(md.at);   /* stale epoch */
                    }
                    md.seq_diff = hdr.netagg.seq - md.round_seq;
                    /* for an equal seq only: a resend (complete) or a join */
                    if ((md.has_round == NETAGG_ROUND_SEEN || md.has_round == ROUND_WAITING) &&
                        md.round_seq == md.completed_seq) {
                        md.complete = 1;
                    }
                    /* a seq newer than the set's round starts the next round, complete or not
                     * (round_seq_advance has written it); a recovery copy never starts a round:
                     * NONE, or a seq newer than the set's, is no_round instead of new */
                    if (md.from_parent == 1) {
                        /* a parent's result (the model's result_from_parent): it completes
                         * the round of its seq that waits for it */
                        if (md.has_round == NETAGG_ROUND_NONE) {
                            md.class = CLASS_NO_ROUND;
                        } else if (md.has_round == ROUND_STALE_EPOCH) {
                            md.class = CLASS_STALE_EPOCH;
                        } else if (md.seq_diff[31:31] == 1) {
                            md.class = CLASS_STALE;
                        } else if (md.seq_diff != 0 || md.complete == 0) {
                            md.class = CLASS_NO_ROUND;     /* newer, or still open here */
                        } else if (md.has_round != ROUND_WAITING) {
                            md.class = CLASS_DUPLICATE;    /* answered already */
                        } else {
                            md.class = CLASS_FROM_PARENT;
                        }
                    } else if (md.has_round == ROUND_STALE_EPOCH) {
                        md.class = CLASS_STALE_EPOCH;
                    } else if (md.has_round == NETAGG_ROUND_NONE) {
                        if (md.recovery == 1) {
                            md.class = CLASS_NO_ROUND;
                        } else {
                            md.class = CLASS_NEW;
                        }
                    } else if (md.seq_diff[31:31] == 1) {
                        md.class = CLASS_STALE;
                    } else if (md.seq_diff != 0) {
                        if (md.recovery == 1) {
                            md.class = CLASS_NO_ROUND;
                        } else {
                            md.class = CLASS_NEW;
                        }
                    } else {
                        md.class = CLASS_EQUAL;
                    }

                    if (md.class == CLASS_STALE_EPOCH) {
                        drop_for(NETAGG_DROP_STALE_EPOCH);
                    } else if (md.class == CLASS_NO_ROUND) {
                        drop_for(NETAGG_DROP_NO_ROUND);
                    } else if (md.class == CLASS_STALE) {
                        drop_for(NETAGG_DROP_STALE);
                    } else if (md.class == CLASS_DUPLICATE) {
                        drop_for(NETAGG_DROP_DUPLICATE);
                    } else {
                        if (md.class == CLASS_NEW) {
                            round_count_write.execute(md.at);
                        } else {
                            md.round_count = round_count_read.execute(md.at);
                        }
                        if ((md.class == CLASS_EQUAL || md.class == CLASS_FROM_PARENT) &&
                            md.round_count != hdr.netagg.count) {
                            drop_for(NETAGG_DROP_COUNT_MISMATCH);
                        } else if (md.class == CLASS_FROM_PARENT) {
                            /* the parent's values (the lane passes write them: op WRITE) and
                             * exponent become the round's result; its ECN bits are ORed in; no
                             * bitmap or countdown */
                            md.op = OP_WRITE;
                            md.exponent_out = exponent_write.execute(md.at);
                            md.ecn_out = ecn_join.execute(md.at);
                        } else if (md.class == CLASS_EQUAL && md.complete == 1) {
                            /* a retransmission to a completed round: its stored result, or
                             * while the round waits for the parent (trees) its partial sum,
                             * still in the value registers, to the parent again */
                            md.op = OP_READ;
                            md.exponent_out = exponent_read.execute(md.at);
                            md.ecn_out = ecn_read.execute(md.at);    /* the round's OR */
                            if (md.has_round == ROUND_WAITING) {
                                resent_to_parent.count(0);
                            } else {
                                results_resent.count(0);
                            }
                        } else {
                            if (md.class == CLASS_NEW) {
                                /* every new round (no round, a takeover, a newer seq): the
                                 * word := the bit (bitmap_before stays 0; only an equal seq
                                 * is tested for a duplicate) */
                                bitmap_start.execute(md.at);
                            } else {
                                md.bitmap_before = bitmap_join.execute(md.at);
                            }
                            md.duplicate = md.bitmap_before & md.rank_bit;
                            if (md.class == CLASS_EQUAL && md.duplicate != 0) {
                                drop_for(NETAGG_DROP_DUPLICATE);
                            } else if (md.class == CLASS_NEW) {
                                md.op = OP_WRITE;
                                md.remaining = remaining_start.execute(md.at);
                                md.exponent_out = exponent_write.execute(md.at);
                                md.ecn_out = ecn_write.execute(md.at);
                            } else {
                                md.op = OP_ADD;
                                md.remaining = remaining_join.execute(md.at);
                                md.exponent_out = exponent_max.execute(md.at);
                                md.ecn_out = ecn_join.execute(md.at);
                            }
                        }
                    }
                }

                if (md.drop == 1) {
                    drops.count(md.drop_reason);
                    ig_dprsr_md.drop_ctl = 1;
                } else if (md.translate == 1) {
                    /* trees: a parent's result, now one of the child job's (job id), its slot
                     * the offset in the job's window: to its decision pass */
                    hdr.netagg.slot = hdr.netagg.slot - md.parent_slot_base;
                    to_recirculation(BRIDGE_FROM_PARENT);
                } else {
                    /* to the value lanes in egress, through the recirculation port */
                    to_recirculation(BRIDGE_VALUES);
                    hdr.bridge.pass = 0;
                    hdr.bridge.op = md.op;
                    hdr.bridge.at = md.at;
                    hdr.bridge.orig_port = ig_intr_md.ingress_port;
                    hdr.bridge.ecn = md.ecn_out[1:0];   /* for the result pass's IPv4 ECN */
                    hdr.netagg.exponent = md.exponent_out ^ 0x8000;
                    hdr.netagg.slot = md.child_slot;   /* a parent's result: the job's slot */
                    if (md.op == OP_READ && md.has_round == ROUND_WAITING) {
                        hdr.bridge.outcome = OUTCOME_TO_PARENT;
                    } else if (md.op == OP_READ) {
                        hdr.bridge.outcome = OUTCOME_RESENT;
                    } else if (md.from_parent == 1) {
                        hdr.bridge.outcome = OUTCOME_FROM_PARENT;
                    } else if (md.remaining == 0) {
                        /* completions (or sent_to_parent) are counted in the result pass,
                         * which knows whether the job has a parent */
                        hdr.bridge.outcome = OUTCOME_COMPLETED;
                    } else {
                        hdr.bridge.outcome = OUTCOME_AGGREGATED;
                    }
                }
            }
        } else {
            forward.apply();                 /* plain L2, the frame unchanged */
        }
    }
}

control IngressDeparser(packet_out pkt, inout headers_t hdr, in ig_metadata_t md,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        /* Originated frames only (echo replies, results): a forwarded frame, or a
         * contribution on its way to the recirculation port, keeps its bytes. */
        if (md.originated == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.icmp);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.netagg);
    }
}

/* ================================= egress ================================================= */

/* Lane i of the payload; a packet with count c has lanes 0..c-1. */
#define LANE_STATE(i, next)                                        \
    state parse_lane_##i {                                         \
        pkt.extract(hdr.lanes[i]);                                 \
        transition select(hdr.netagg.count) {                      \
            i + 1: accept;                                         \
            default: next;                                         \
        }                                                          \
    }

parser EgressParser(packet_in pkt, out headers_t hdr, out eg_metadata_t md,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        md = {...};
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.bridge.kind, hdr.ethernet.ether_type) {
            (BRIDGE_VALUES, ETHERTYPE_IPV4): parse_ipv4;
            (BRIDGE_MCAST, ETHERTYPE_IPV4): parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.netagg);
        transition select(hdr.bridge.kind, hdr.netagg.count) {
            (BRIDGE_VALUES, 0): accept;
            (BRIDGE_VALUES, _): parse_lane_0;
            default: accept;
        }
    }
    LANE_STATE(0, parse_lane_1)   LANE_STATE(1, parse_lane_2)   LANE_STATE(2, parse_lane_3)
    LANE_STATE(3, parse_lane_4)   LANE_STATE(4, parse_lane_5)   LANE_STATE(5, parse_lane_6)
    LANE_STATE(6, parse_lane_7)   LANE_STATE(7, parse_lane_8)   LANE_STATE(8, parse_lane_9)
    LANE_STATE(9, parse_lane_10)  LANE_STATE(10, parse_lane_11) LANE_STATE(11, parse_lane_12)
    LANE_STATE(12, parse_lane_13) LANE_STATE(13, parse_lane_14) LANE_STATE(14, parse_lane_15)
    LANE_STATE(15, parse_lane_16) LANE_STATE(16, parse_lane_17) LANE_STATE(17, parse_lane_18)
    LANE_STATE(18, parse_lane_19) LANE_STATE(19, parse_lane_20) LANE_STATE(20, parse_lane_21)
    LANE_STATE(21, parse_lane_22) LANE_STATE(22, parse_lane_23) LANE_STATE(23, parse_lane_24)
    LANE_STATE(24, parse_lane_25) LANE_STATE(25, parse_lane_26) LANE_STATE(26, parse_lane_27)
    LANE_STATE(27, parse_lane_28) LANE_STATE(28, parse_lane_29) LANE_STATE(29, parse_lane_30)
    LANE_STATE(30, parse_lane_31) LANE_STATE(31, parse_lane_32) LANE_STATE(32, parse_lane_33)
    LANE_STATE(33, parse_lane_34) LANE_STATE(34, parse_lane_35) LANE_STATE(35, parse_lane_36)
    LANE_STATE(36, parse_lane_37) LANE_STATE(37, parse_lane_38) LANE_STATE(38, parse_lane_39)
    LANE_STATE(39, parse_lane_40) LANE_STATE(40, parse_lane_41) LANE_STATE(41, parse_lane_42)
    LANE_STATE(42, parse_lane_43) LANE_STATE(43, parse_lane_44) LANE_STATE(44, parse_lane_45)
    LANE_STATE(45, parse_lane_46) LANE_STATE(46, parse_lane_47) LANE_STATE(47, parse_lane_48)
    LANE_STATE(48, parse_lane_49) LANE_STATE(49, parse_lane_50) LANE_STATE(50, parse_lane_51)
    LANE_STATE(51, parse_lane_52) LANE_STATE(52, parse_lane_53) LANE_STATE(53, parse_lane_54)
    LANE_STATE(54, parse_lane_55) LANE_STATE(55, parse_lane_56) LANE_STATE(56, parse_lane_57)
    LANE_STATE(57, parse_lane_58) LANE_STATE(58, parse_lane_59) LANE_STATE(59, parse_lane_60)
    LANE_STATE(60, parse_lane_61) LANE_STATE(61, parse_lane_62) LANE_STATE(62, parse_lane_63)
    state parse_lane_63 {
        pkt.extract(hdr.lanes[63]);
        transition accept;
    }
}

/* One value register per lane of a pass: value_i holds lane i (pass 0) and lane 32+i (pass 1)
 * of every (slot, set), at index at * 2 + pass. Four RegisterActions (the most a register
 * takes), chosen by a table with constant entries: write/add x lane block 0/1. A resend's lanes
 * were cleared, so its "add" reads. Each returns the updated value into the packet. */
#define VALUE_LANE(i, hi)                                                                   \
    Register<bit<32>, bit<32>>(NETAGG_VALUE_REGISTER_SIZE, 0) value_##i;                    \
    RegisterAction<bit<32>, bit<32>, bit<32>>(value_##i) value_##i##_write_b0 = {           \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = hdr.lanes[i].value; after = value; } };                                 \
    RegisterAction<bit<32>, bit<32>, bit<32>>(value_##i) value_##i##_add_b0 = {             \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = value + hdr.lanes[i].value; after = value; } };                         \
    RegisterAction<bit<32>, bit<32>, bit<32>>(value_##i) value_##i##_write_b1 = {           \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = hdr.lanes[hi].value; after = value; } };                                \
    RegisterAction<bit<32>, bit<32>, bit<32>>(value_##i) value_##i##_add_b1 = {             \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = value + hdr.lanes[hi].value; after = value; } };                        \
    action lane_##i##_write_b0() {                                                          \
        hdr.lanes[i].value = value_##i##_write_b0.execute(md.value_index); }                \
    action lane_##i##_add_b0() {                                                            \
        hdr.lanes[i].value = value_##i##_add_b0.execute(md.value_index); }                  \
    action lane_##i##_write_b1() {                                                          \
        hdr.lanes[hi].value = value_##i##_write_b1.execute(md.value_index); }               \
    action lane_##i##_add_b1() {                                                            \
        hdr.lanes[hi].value = value_##i##_add_b1.execute(md.value_index); }                 \
    table lane_##i {                                                                        \
        key = {                                                                             \
            hdr.bridge.pass : exact;                                                        \
            hdr.bridge.op : exact;                                                          \
            hdr.lanes[i].isValid() : exact;                                                 \
            hdr.lanes[hi].isValid() : exact;                                                \
        }                                                                                   \
        actions = { lane_##i##_write_b0; lane_##i##_add_b0; lane_##i##_write_b1;            \
                    lane_##i##_add_b1; NoAction; }                                          \
        const entries = {                                                                   \
            (0, OP_WRITE, true, false) : lane_##i##_write_b0();                             \
            (0, OP_WRITE, true, true) : lane_##i##_write_b0();                              \
            (0, OP_ADD, true, false) : lane_##i##_add_b0();                                 \
            (0, OP_ADD, true, true) : lane_##i##_add_b0();                                  \
            (0, OP_READ, true, false) : lane_##i##_add_b0();                                \
            (0, OP_READ, true, true) : lane_##i##_add_b0();                                 \
            (1, OP_WRITE, true, true) : lane_##i##_write_b1();                              \
            (1, OP_ADD, true, true) : lane_##i##_add_b1();                                  \
            (1, OP_READ, true, true) : lane_##i##_add_b1();                                 \
        }                                                                                   \
        default_action = NoAction();                                                        \
        size = 16;                                                                          \
    }

#define CLEAR_BLOCK(b, o)                                                                     \
    action clear_block_##b() {                                                                \
        hdr.lanes[o + 0].value = 0;  hdr.lanes[o + 1].value = 0;  hdr.lanes[o + 2].value = 0;   \
        hdr.lanes[o + 3].value = 0;  hdr.lanes[o + 4].value = 0;  hdr.lanes[o + 5].value = 0;   \
        hdr.lanes[o + 6].value = 0;  hdr.lanes[o + 7].value = 0;  hdr.lanes[o + 8].value = 0;   \
        hdr.lanes[o + 9].value = 0;  hdr.lanes[o + 10].value = 0; hdr.lanes[o + 11].value = 0;  \
        hdr.lanes[o + 12].value = 0; hdr.lanes[o + 13].value = 0; hdr.lanes[o + 14].value = 0;  \
        hdr.lanes[o + 15].value = 0; hdr.lanes[o + 16].value = 0; hdr.lanes[o + 17].value = 0;  \
        hdr.lanes[o + 18].value = 0; hdr.lanes[o + 19].value = 0; hdr.lanes[o + 20].value = 0;  \
        hdr.lanes[o + 21].value = 0; hdr.lanes[o + 22].value = 0; hdr.lanes[o + 23].value = 0;  \
        hdr.lanes[o + 24].value = 0; hdr.lanes[o + 25].value = 0; hdr.lanes[o + 26].value = 0;  \
        hdr.lanes[o + 27].value = 0; hdr.lanes[o + 28].value = 0; hdr.lanes[o + 29].value = 0;  \
        hdr.lanes[o + 30].value = 0; hdr.lanes[o + 31].value = 0;                             \
    }

control Egress(inout headers_t hdr, inout eg_metadata_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    VALUE_LANE(0, 32)  VALUE_LANE(1, 33)  VALUE_LANE(2, 34)  VALUE_LANE(3, 35)
    VALUE_LANE(4, 36)  VALUE_LANE(5, 37)  VALUE_LANE(6, 38)  VALUE_LANE(7, 39)
    VALUE_LANE(8, 40)  VALUE_LANE(9, 41)  VALUE_LANE(10, 42) VALUE_LANE(11, 43)
    VALUE_LANE(12, 44) VALUE_LANE(13, 45) VALUE_LANE(14, 46) VALUE_LANE(15, 47)
    VALUE_LANE(16, 48) VALUE_LANE(17, 49) VALUE_LANE(18, 50) VALUE_LANE(19, 51)
    VALUE_LANE(20, 52) VALUE_LANE(21, 53) VALUE_LANE(22, 54) VALUE_LANE(23, 55)
    VALUE_LANE(24, 56) VALUE_LANE(25, 57) VALUE_LANE(26, 58) VALUE_LANE(27, 59)
    VALUE_LANE(28, 60) VALUE_LANE(29, 61) VALUE_LANE(30, 62) VALUE_LANE(31, 63)

    CLEAR_BLOCK(0, 0)
    CLEAR_BLOCK(1, 32)

    action set_result_destination(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<8> rank) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.dst_port = udp_port;
        hdr.netagg.rank = (bit<16>)rank;
    }
    action result_destination_miss() { eg_dprsr_md.drop_ctl = 1; }
    table result_destination {
        key = { eg_intr_md.egress_rid : exact; }
        actions = { set_result_destination; result_destination_miss; }
        default_action = result_destination_miss();
        size = 8192;
    }

    apply {
        if (hdr.bridge.kind == BRIDGE_VALUES) {
            md.value_index = (bit<32>)(hdr.bridge.at ++ hdr.bridge.pass[0:0]);  /* at*2 + pass */
            if (hdr.bridge.op == OP_READ) {
                if (hdr.bridge.pass == 0) { clear_block_0(); } else { clear_block_1(); }
            }
            lane_0.apply();  lane_1.apply();  lane_2.apply();  lane_3.apply();
            lane_4.apply();  lane_5.apply();  lane_6.apply();  lane_7.apply();
            lane_8.apply();  lane_9.apply();  lane_10.apply(); lane_11.apply();
            lane_12.apply(); lane_13.apply(); lane_14.apply(); lane_15.apply();
            lane_16.apply(); lane_17.apply(); lane_18.apply(); lane_19.apply();
            lane_20.apply(); lane_21.apply(); lane_22.apply(); lane_23.apply();
            lane_24.apply(); lane_25.apply(); lane_26.apply(); lane_27.apply();
            lane_28.apply(); lane_29.apply(); lane_30.apply(); lane_31.apply();
            /* next: another lane block, the result pass, or the end of an aggregated packet */
            if (hdr.bridge.pass == 0 && hdr.netagg.count > NETAGG_LANES_PER_PASS) {
                hdr.bridge.pass = 1;                      /* recirculates: port 68 */
            } else if (hdr.bridge.outcome == OUTCOME_AGGREGATED) {
                eg_dprsr_md.drop_ctl = 1;
            } else {
                hdr.bridge.kind = BRIDGE_RESULT;          /* recirculates into the result pass */
            }
        } else if (hdr.bridge.kind == BRIDGE_FROM_PARENT) {
            /* trees: a parent's result on its way to its decision pass (port 68): the bridge
             * stays, nothing else is parsed or changed */
        } else {
            if (hdr.bridge.kind == BRIDGE_MCAST) {
                result_destination.apply();
            }
            hdr.bridge.setInvalid();                      /* leaves the switch */
        }
    }
}

control EgressDeparser(packet_out pkt, inout headers_t hdr, in eg_metadata_t md,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr.bridge);   /* valid only when recirculating */
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.netagg);
        pkt.emit(hdr.lanes);
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;

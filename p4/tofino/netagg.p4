// SPDX-License-Identifier: Apache-2.0
/* netagg switch pipeline for Tofino 1 (TNA): SwitchML (Sapio et al., NSDI 2021, Algorithm 2)
 * plus a per-(slot, set) round seq, as sim/switch/switch_model.{hpp,cpp} (the register-level
 * model) and sim/switch/README.md (the decision table) define it. docs/switch-pipeline.md maps
 * every register, table and action to the model, and gives the resources p4c's open-source
 * Tofino back end (p4c-barefoot) allocates for it ("Compiling and running the programs").
 *
 * ---- Passes (Tofino 1: 12 MAU stages per gress, 4 stateful ALUs each) ----
 *
 * Everything is in the ingress pipeline; a packet goes round it several times through the
 * recirculation port of its pipe (port 68, one FIFO, so every register sees the packets in the
 * order of their decisions). The bridge header, in front of the frame on every recirculated
 * pass, says which pass comes next (bridge.kind):
 *   checks    (from a port) wire::decode_frame's, wire::decode's and the job table's checks,
 *             in the model's order (table checks over one bit per check); a contribution that
 *             passes gets bridge.at = its (slot, set) index and kind DECIDE; a parent's result
 *             is translated to the child job (kind FROM_PARENT) and checked again as the
 *             child's in a second checks pass (kind DECIDE_FROM_PARENT after it).
 *   decision  (DECIDE) the round's registers, indexed by bridge.at from stage 0: round_epoch
 *             and completed_seq, round_state, round_seq, then table classify, round_count,
 *             bitmap, table aggregate, then remaining, exponent and ecn: what the packet is to
 *             the set's round (new, join, resend, or a drop for its reason), op WRITE, ADD or
 *             READ for the value registers, the outcome, the round's ECN OR and exponent.
 *   lanes     (VALUES, pass 0 and, for more than 32 elements, pass 1) the 32 value registers
 *             value_0..value_31 (one stateful ALU each), lane block p of the payload at index
 *             at * 2 + p: write, add or read, each returning the value after into the lane. A
 *             contribution that neither completes nor is answered ends here.
 *   result    (RESULT) a completion marks the round complete (round_state, completed_seq) and
 *             is multicast to the job's group (a child's goes to its parent); a resend goes
 *             back out of its sender's port, addresses swapped.
 * The egress pipeline only rewrites the multicast copies' destinations (result_destination)
 * and takes the bridge off frames that leave the switch; its parser reads the bridge and the
 * headers only (Tofino 1's egress parser reaches 160 bytes into a packet, less than the
 * headers and 64 lanes).
 *
 * Why so many passes: the decision's registers depend on each other in a chain (each reads
 * what the one before returned) that takes most of a pipeline's stages, the checks before it
 * take several more, and the 32 value registers take 32 of the pipeline's 48 stateful ALUs;
 * none of the three fits beside another in 12 stages. SwitchML decides and adds in one pass
 * because its decision is shorter (no epoch, no per-set seq, no recovery copies, no trees).
 *
 * Lanes: NETAGG_LANES_PER_PASS = 32 per pass, NETAGG_TOFINO_MAX_PASSES = 2 lane passes, so at
 * most 64 int32 elements per packet (SwitchML's 256-byte payload); the control plane rejects
 * jobs with more. A lane pass holds the block it adds in the PHV (hdr.lanes); in the pass of
 * block 1 the parser must extract block 0 to reach it, into hdr.carried, which no table
 * touches, so it takes tagalong PHV, not the normal containers the 64 lanes would exhaust. In
 * the pass of block 0 the parser stops after it and block 1 stays payload. Every lane pass
 * writes the block it adds back into the packet (the register action returns the updated
 * value), so after the last one the payload holds the whole sum, in place: a result carries
 * all lanes without any reassembly.
 *
 * Tofino's rules that shape the code: a stateful ALU returns one value, taken from the same
 * half of its word on every path of an action (so the round's epoch and state are two
 * registers, not one pair); a gateway compares a field with a constant, within 4 bytes of PHV
 * (so two fields are compared through a difference or an XOR that a keyless table computes,
 * and the checks and the classification are tables over bits); a table is applied in one place
 * of the control flow (job_table and parent_table are applied once, before the passes branch);
 * one action runs at most one stateful ALU operation at an address (remaining, exponent and ecn
 * each get their own gateway after table aggregate).
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
 * round_epoch {touched, epoch} returns the set's epoch before the packet (a fresh packet writes
 * its own, any other only into a set that has had no round); round_state, a stage later,
 * opens a new round for a takeover (a fresh packet, another epoch) and is otherwise touched
 * (NONE -> OPEN) or read. The opening action returns the state before: not NONE, the set held
 * a round of another epoch (counter epoch_takeovers); NONE, the set had none (a set that has
 * never had a round keeps epoch 0, "another epoch" for a fresh packet of any other).
 *
 * Recovery copies (the model's rule): a contribution with the recovery flag (a packet whose
 * result its sender has, sent again for the workers still waiting on its round) never starts a
 * round. It uses read-only RegisterActions (round_epoch_read, round_state_read, round_seq_read),
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
 * its update, and the decision pass puts it in the bridge header (bridge.ecn). The bridge
 * travels with the packet through its lane passes (each ingress parser extracts it, the
 * ingress deparser and the egress re-emit it) into the result
 * pass, whose originate_ipv4(bridge.ecn) writes it into the IPv4 ECN field before the
 * ingress deparser recomputes the checksum; the multicast copies inherit it. For a
 * completion that value is the round's final OR: the completing contribution is the last
 * contributor's, every other join was decided (and OR'ed) before it through the same ALU,
 * and nothing ORs into the round after it (an equal seq is then a duplicate, dropped by table
 * aggregate, or, once the result pass has marked the round complete, a resend, which only
 * reads). A resend reads the register in its decision pass, after the result pass marked the
 * round complete, so it reads that final OR too (a newer round that overwrote it would have
 * made the resend's seq stale). The OR rides in the bridge rather than in the contribution's
 * own IPv4 ECN field so that nothing between the passes (the recirculation port's queue)
 * can change it; a round started on the set while the packet recirculates rewrites the
 * register, not the value this packet carries.
 *
 * Trees (the model's send_to_parent / result_from_parent; the BMv2 program's parent_table and
 * parent_source, the same contract): a job with a parent_table entry is a child. No stateful
 * ALU and no RegisterAction is added for it; round_state's completion action takes its new
 * state from a PHV operand (md.completed_state) instead of the constant SEEN.
 *   Up: the result pass of a child's completed round (parent_table, keyed by the job id)
 *     stores ROUND_WAITING (a fourth round_state, next to NONE, OPEN, SEEN) instead of
 *     SEEN and sends the packet, whose lanes hold the partial sum, to the parent's port as a
 *     contribution of the parent's job id, rank and slot (slot - slot_base + the parent's
 *     slot_base), flags set and fresh (the completing packet's: a correct worker's packets of
 *     one round all carry the same fresh flag; the model keeps the first packet's), IPv4 ECN
 *     the round's OR (bridge.ecn). Counter sent_to_parent.
 *   Resend: a retransmission of a round in ROUND_WAITING (complete, equal seq) reads the value
 *     registers (op READ: they still hold the partial sum) and its result pass sends it up
 *     the same way (OUTCOME_TO_PARENT, counter resent_to_parent).
 *   Down: a result from the parent takes three passes before its lane passes. First (checks)
 *     pass: parent_source (after job_table has read the key) rewrites its job id to the
 *     child job's, parent_table then gives this switch's rank (checked: rank_out_of_range)
 *     and the parent's slot_base; its slot becomes the offset in the window and it
 *     recirculates (BRIDGE_FROM_PARENT). Second checks pass: job_table finds the child job,
 *     its slot becomes the job's, the slot range and dtype are checked. Decision pass
 *     (BRIDGE_DECIDE_FROM_PARENT): the read-only actions decide (round_epoch_read,
 *     round_state_read, completed_seq_read, round_seq_read): no round or a newer seq or a round still open here no_round, another
 *     epoch stale_epoch, an older seq stale, a round not in ROUND_WAITING duplicate, another
 *     count count_mismatch; else exponent_write (the result's exponent), ecn_join (its ECN bits
 *     ORed in) and op WRITE: the lane passes overwrite the value registers with the result's
 *     values with the actions a new round uses (no value RegisterAction is added). Its result
 *     pass stores SEEN and multicasts it as a completion (completions, results_from_parent).
 *   Not done on Tofino: the partial sum is not kept after the parent's result (a second set of
 *     value registers needs 32 more stateful ALUs; the pipelines have 7 and 48 free, and the
 *     egress parser cannot reach the lanes), so a recovery copy to
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
#define BRIDGE_FROM_PARENT 4 /* trees: a parent's result, job id translated: its checks pass */
#define BRIDGE_DECIDE 5    /* a checked contribution: its decision pass */
#define BRIDGE_DECIDE_FROM_PARENT 6  /* trees: a checked parent's result: its decision pass */

/* bridge.op: what the value registers do */
#define OP_WRITE 0         /* a new round: overwrite */
#define OP_ADD 1           /* a join: add */
#define OP_READ 2          /* a resend: the stored values read into the lanes */

/* md.agg: what the countdown, exponent and ECN registers do */
#define AGG_NEW 1
#define AGG_JOIN 2
#define AGG_READ 3
#define AGG_FROM_PARENT 4

/* bridge.outcome */
#define OUTCOME_AGGREGATED 0
#define OUTCOME_COMPLETED 1
#define OUTCOME_RESENT 2
#define OUTCOME_TO_PARENT 3    /* trees: a resend while the round waits: the partial sum up */
#define OUTCOME_FROM_PARENT 4  /* trees: the parent's result completes the round */

/* classification of a packet in its decision pass (table classify) */
#define CLASS_NEW 1            /* no round, a takeover, or a seq newer than the set's round
                                * (complete or not) */
#define CLASS_JOIN 2           /* the seq of the set's round, not complete */
#define CLASS_RESEND 8         /* the seq of the set's round, complete: its result again */
#define CLASS_RESEND_TO_PARENT 9   /* trees: complete, waiting for the parent: up again */
#define CLASS_FROM_PARENT 7    /* trees: the parent's result to the round waiting for it */

/* md.has_round for a packet to a round of another epoch that it does not take over (not fresh,
 * or a recovery copy; never stored: the stored states are NETAGG_ROUND_NONE, _OPEN, _SEEN and
 * ROUND_WAITING) */
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
    bit<16> vindex;      /* lane passes: the value registers' index, at * 2 + the lane block */
    bit<8>  ecn;         /* the round's OR of IPv4 ECN bits (ecn register): the result's ECN */
    bit<8>  workers_minus_1;  /* the job's worker count - 1 (remaining_start's operand) */
    bit<7>  pad1;        /* each field written from another source in its own container */
    bit<1>  has_parent;  /* trees: the job has a parent (result pass: ROUND_WAITING) */
    bit<7>  pad;
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
    /* lane passes only: the block the pass adds, and before it, in the pass of lane block 1,
     * block 0 carried through unchanged (the parser must extract it to reach block 1; the
     * pipeline never touches it, so it needs no PHV container of its own: Tofino's tagalong
     * PHV takes it). Block 1 in the pass of block 0 is payload the parser never reaches. */
    netagg_lane_h[NETAGG_LANES_PER_PASS] carried;
    netagg_lane_h[NETAGG_LANES_PER_PASS] lanes;
}

/* round_epoch: the epoch of the set's round, and whether the set has had a round since the job
 * was installed (the condition of a non-fresh packet's write) */
struct round_epoch_t {
    bit<32> touched;   /* 0 until the set's first round, then 1 */
    bit<32> epoch;     /* the epoch of the set's round (0 after the job is installed) */
}

@pa_auto_init_metadata
struct ig_metadata_t {
    mac_addr_t  switch_mac;
    ipv4_addr_t switch_ip;
    bit<32> dst_xor;          /* IPv4 destination ^ the switch's IP: 0 for the switch */
    bit<32> arp_xor;          /* ARP target ^ the switch's IP */
    bit<1>  for_switch;       /* dst_xor == 0 */
    bit<1>  arp_for_switch;   /* arp_xor == 0 */
    bit<1>  arp_a;            /* an ARP request for IPv4 over Ethernet, in two gateways */
    bit<1>  arp_b;
    bit<1>  echo_a;           /* an ICMP echo request, in two gateways */
    bit<1>  echo_b;
    bit<1>  job_hit;
    bit<8>  worker_count;
    bit<8>  worker_count_minus_1;
    bit<16> slot_base;
    bit<16> slot_count;
    bit<16> elements_per_packet;
    bit<16> mcast_grp;
    /* trees */
    bit<1>  from_parent;      /* a parent's translated result (bridge FROM_PARENT, DECIDE_FROM_PARENT) */
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
    bit<8>  completed_state;  /* result pass: what round_state_completed stores (SEEN, WAITING) */
    bit<1>  worker_hit;
    bit<8>  worker_rank;
    bit<32> rank_bit;
    bit<16> slot_offset;
    /* the checks pass */
    bit<16> payload_bytes;
    bit<16> len_diff;
    bit<16> length_diff;
    bit<16> rank_diff;
    bit<16> worker_xor;
    bit<16> parent_rank_xor;
    bit<16> slot_diff;
    bit<16> count_diff_job;
    bool    ipv4_checksum_ok; /* the parser's Checksum.verify(): wire::ipv4_checksum == 0 */
    bit<1>  ipv4_ok;          /* wire::decode_frame's IPv4 header check */
    bit<1>  ok_frame;
    bit<1>  ok_len;
    bit<1>  ok_header;
    bit<1>  ok_size;
    bit<1>  ok_parent_rank;
    bit<1>  ok_rank;
    bit<1>  ok_worker;
    bit<1>  ok_slot;
    bit<1>  ok_int32;
    bit<1>  ok_count_job;
    bit<1>  checked;          /* passed every check: to the decision pass */
    bit<1>  translate;        /* trees: a parent's result, to its checks pass as the child's */
    bit<8>  drop_reason;
    bit<1>  drop;
    /* the decision pass */
    bit<32> epoch_before;     /* round_epoch's epoch before this packet */
    bit<8>  state_before;     /* round_state's state before this packet (not for a takeover) */
    bit<8>  state_taken;      /* a takeover's: round_state's state before it (NONE: no round) */
    bit<8>  has_round;        /* before this packet; NONE for a takeover, or ROUND_STALE_EPOCH */
    bit<32> completed_seq;
    bit<32> round_seq;        /* before this packet */
    bit<32> seq_diff;
    bit<32> rs_xor;           /* round_seq ^ completed_seq: 0 for a completed round */
    bit<8>  class;
    bit<16> count_diff;       /* the round's count - the packet's */
    bit<32> bitmap_before;
    bit<8>  remaining;        /* after this packet */
    bit<16> exponent_biased;  /* the packet's exponent XOR 0x8000 (signed order as unsigned) */
    bit<16> exponent_out;     /* the round's exponent after this packet, biased */
    bit<8>  ecn_in;           /* the packet's IPv4 ECN bits (0..3), the ecn register's operand */
    bit<8>  ecn_out;          /* the round's ECN OR after this packet (a resend: as stored) */
    bit<8>  op;
    bit<8>  agg;              /* what remaining, exponent and ecn do (AGG_*) */
    bit<8>  outcome;
    bit<1>  originated;       /* the switch built this frame: fresh IPv4 checksum */
}

struct eg_metadata_t {
}

/* ================================= ingress ================================================ */

/* Lane i of the payload, into lanes[j] (j = i mod 32, its place in its block); a packet with
 * count c has lanes 0..c-1. */
#define CARRY(j) pkt.extract(hdr.carried[j]);
#define LANE_STATE(i, j, next)                                     \
    state parse_lane_##i {                                         \
        pkt.extract(hdr.lanes[j]);                                 \
        transition select(hdr.netagg.count) {                      \
            i + 1: accept;                                         \
            default: next;                                         \
        }                                                          \
    }

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
            default: parse_port;
        }
    }
    /* a frame from a port gets its bridge here, kind NONE: set by the parser, not by a stage,
     * so that no table waits for it */
    state parse_port {
        hdr.bridge.setValid();
        hdr.bridge.kind = BRIDGE_NONE;
        hdr.bridge.pass = 0;
        transition parse_ethernet;
    }
    state parse_recirculated {
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.kind) {
            BRIDGE_VALUES: parse_values;
            BRIDGE_FROM_PARENT: parse_from_parent;
            BRIDGE_DECIDE_FROM_PARENT: parse_from_parent;
            default: parse_ethernet;
        }
    }
    state parse_from_parent {
        md.from_parent = 1;
        transition parse_ethernet;
    }
    /* a lane pass: the frame is a checked contribution; its payload is parsed lane by lane up
     * to its count (lanes of the other block too: they precede or follow in the packet, and
     * the deparser re-emits them) */
    state parse_values {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.netagg);
        transition select(hdr.bridge.pass, hdr.netagg.count) {
            (0, 0): accept;
            (0, _): parse_lane_0;
            default: parse_carried;
        }
    }
    state parse_carried {
        CARRY(0)  CARRY(1)  CARRY(2)  CARRY(3)  CARRY(4)  CARRY(5)  CARRY(6)  CARRY(7)
        CARRY(8)  CARRY(9)  CARRY(10) CARRY(11) CARRY(12) CARRY(13) CARRY(14) CARRY(15)
        CARRY(16) CARRY(17) CARRY(18) CARRY(19) CARRY(20) CARRY(21) CARRY(22) CARRY(23)
        CARRY(24) CARRY(25) CARRY(26) CARRY(27) CARRY(28) CARRY(29) CARRY(30) CARRY(31)
        transition parse_lane_32;
    }
    LANE_STATE(0, 0, parse_lane_1)
    LANE_STATE(1, 1, parse_lane_2)
    LANE_STATE(2, 2, parse_lane_3)
    LANE_STATE(3, 3, parse_lane_4)
    LANE_STATE(4, 4, parse_lane_5)
    LANE_STATE(5, 5, parse_lane_6)
    LANE_STATE(6, 6, parse_lane_7)
    LANE_STATE(7, 7, parse_lane_8)
    LANE_STATE(8, 8, parse_lane_9)
    LANE_STATE(9, 9, parse_lane_10)
    LANE_STATE(10, 10, parse_lane_11)
    LANE_STATE(11, 11, parse_lane_12)
    LANE_STATE(12, 12, parse_lane_13)
    LANE_STATE(13, 13, parse_lane_14)
    LANE_STATE(14, 14, parse_lane_15)
    LANE_STATE(15, 15, parse_lane_16)
    LANE_STATE(16, 16, parse_lane_17)
    LANE_STATE(17, 17, parse_lane_18)
    LANE_STATE(18, 18, parse_lane_19)
    LANE_STATE(19, 19, parse_lane_20)
    LANE_STATE(20, 20, parse_lane_21)
    LANE_STATE(21, 21, parse_lane_22)
    LANE_STATE(22, 22, parse_lane_23)
    LANE_STATE(23, 23, parse_lane_24)
    LANE_STATE(24, 24, parse_lane_25)
    LANE_STATE(25, 25, parse_lane_26)
    LANE_STATE(26, 26, parse_lane_27)
    LANE_STATE(27, 27, parse_lane_28)
    LANE_STATE(28, 28, parse_lane_29)
    LANE_STATE(29, 29, parse_lane_30)
    LANE_STATE(30, 30, parse_lane_31)
    state parse_lane_31 {
        pkt.extract(hdr.lanes[31]);
        transition accept;
    }
    LANE_STATE(32, 0, parse_lane_33)
    LANE_STATE(33, 1, parse_lane_34)
    LANE_STATE(34, 2, parse_lane_35)
    LANE_STATE(35, 3, parse_lane_36)
    LANE_STATE(36, 4, parse_lane_37)
    LANE_STATE(37, 5, parse_lane_38)
    LANE_STATE(38, 6, parse_lane_39)
    LANE_STATE(39, 7, parse_lane_40)
    LANE_STATE(40, 8, parse_lane_41)
    LANE_STATE(41, 9, parse_lane_42)
    LANE_STATE(42, 10, parse_lane_43)
    LANE_STATE(43, 11, parse_lane_44)
    LANE_STATE(44, 12, parse_lane_45)
    LANE_STATE(45, 13, parse_lane_46)
    LANE_STATE(46, 14, parse_lane_47)
    LANE_STATE(47, 15, parse_lane_48)
    LANE_STATE(48, 16, parse_lane_49)
    LANE_STATE(49, 17, parse_lane_50)
    LANE_STATE(50, 18, parse_lane_51)
    LANE_STATE(51, 19, parse_lane_52)
    LANE_STATE(52, 20, parse_lane_53)
    LANE_STATE(53, 21, parse_lane_54)
    LANE_STATE(54, 22, parse_lane_55)
    LANE_STATE(55, 23, parse_lane_56)
    LANE_STATE(56, 24, parse_lane_57)
    LANE_STATE(57, 25, parse_lane_58)
    LANE_STATE(58, 26, parse_lane_59)
    LANE_STATE(59, 27, parse_lane_60)
    LANE_STATE(60, 28, parse_lane_61)
    LANE_STATE(61, 29, parse_lane_62)
    LANE_STATE(62, 30, parse_lane_63)
    state parse_lane_63 {
        pkt.extract(hdr.lanes[31]);
        transition accept;
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

/* One value register per lane of a block: value_j holds lane j (block 0) and lane 32+j (block
 * 1) of every (slot, set), at index at * 2 + block. Three RegisterActions, chosen by a table
 * with constant entries on the bridge's op: write (a new round), add (a join), read (a resend).
 * Each returns the register's value after, into the packet's lane. */
#define VALUE_LANE(j)                                                                       \
    Register<bit<32>, bit<16>>(NETAGG_VALUE_REGISTER_SIZE, 0) value_##j;                    \
    RegisterAction<bit<32>, bit<16>, bit<32>>(value_##j) value_##j##_write = {              \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = hdr.lanes[j].value; after = value; } };                                 \
    RegisterAction<bit<32>, bit<16>, bit<32>>(value_##j) value_##j##_add = {                \
        void apply(inout bit<32> value, out bit<32> after) {                                \
            value = value + hdr.lanes[j].value; after = value; } };                         \
    RegisterAction<bit<32>, bit<16>, bit<32>>(value_##j) value_##j##_read = {               \
        void apply(inout bit<32> value, out bit<32> after) { after = value; } };            \
    action lane_##j##_write() {                                                             \
        hdr.lanes[j].value = value_##j##_write.execute(hdr.bridge.vindex); }                   \
    action lane_##j##_add() {                                                               \
        hdr.lanes[j].value = value_##j##_add.execute(hdr.bridge.vindex); }                     \
    action lane_##j##_read() {                                                              \
        hdr.lanes[j].value = value_##j##_read.execute(hdr.bridge.vindex); }                    \
    table lane_##j {                                                                        \
        key = {                                                                             \
            hdr.bridge.op : exact;                                                          \
            hdr.lanes[j].isValid() : exact;                                                 \
        }                                                                                   \
        actions = { lane_##j##_write; lane_##j##_add; lane_##j##_read; NoAction; }          \
        const entries = {                                                                   \
            (OP_WRITE, true) : lane_##j##_write();                                          \
            (OP_ADD, true) : lane_##j##_add();                                              \
            (OP_READ, true) : lane_##j##_read();                                            \
        }                                                                                   \
        default_action = NoAction();                                                        \
        size = 4;                                                                           \
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
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) epoch_takeovers;

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
     * round's partial sum goes (keyed by the job's id: the translation of a parent's result
     * has rewritten it), and the parent_source entry that makes a parent's result one of the
     * job's (first pass of a result). */
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

    /* ---- registers, index at = slot * 2 + set ---- */
    /* The set's round is two registers, its epoch's and its state's, in consecutive stages: a
     * stateful ALU of Tofino 1 has one output, taken from the same half of its word on every
     * path of an action, so one {epoch, state} pair could not return the state on one path and
     * "another epoch" on another. round_epoch returns the epoch before the packet; round_state,
     * one stage later, is chosen knowing whether that epoch is the packet's.
     * round_epoch {touched, epoch}, zero-initialised: touched is 1 from the set's first round
     * on, exactly when round_state is not NETAGG_ROUND_NONE (both change in the same packet). */
    Register<round_epoch_t, bit<16>>(NETAGG_REGISTER_SIZE) round_epoch;
    /* a fresh packet (its sender's first on this set in its run): the set's epoch becomes the
     * packet's (a round of another epoch is taken over) */
    RegisterAction<round_epoch_t, bit<16>, bit<32>>(round_epoch) round_epoch_fresh = {
        void apply(inout round_epoch_t value, out bit<32> before) {
            before = value.epoch;
            value.touched = 1;
            value.epoch = hdr.netagg.epoch;
        }
    };
    /* any other packet: a set without a round starts one with the packet's epoch; a round of
     * another epoch is left alone (the packet is dropped as stale_epoch) */
    RegisterAction<round_epoch_t, bit<16>, bit<32>>(round_epoch) round_epoch_touch = {
        void apply(inout round_epoch_t value, out bit<32> before) {
            before = value.epoch;
            if (value.touched == 0) {
                value.touched = 1;
                value.epoch = hdr.netagg.epoch;
            }
        }
    };
    /* a recovery copy, a parent's result and the result pass: read only */
    RegisterAction<round_epoch_t, bit<16>, bit<32>>(round_epoch) round_epoch_read = {
        void apply(inout round_epoch_t value, out bit<32> before) { before = value.epoch; }
    };

    /* NETAGG_ROUND_NONE until the set's first round, OPEN from a round's first packet, SEEN
     * (ROUND_WAITING for a child's round) from its result pass. Four RegisterActions, the most
     * a register takes; each returns the state before (or nothing). */
    Register<bit<8>, bit<16>>(NETAGG_REGISTER_SIZE, 0) round_state;
    /* a takeover: a fresh packet to a round of another epoch (round_epoch returned another
     * epoch) opens a new round; returns the state before (NONE: the set had no round, so it
     * was no takeover) */
    RegisterAction<bit<8>, bit<16>, bit<8>>(round_state) round_state_start = {
        void apply(inout bit<8> value, out bit<8> before) {
            before = value;
            value = NETAGG_ROUND_OPEN;
        }
    };
    /* any packet that reads or writes the round of its epoch: NONE opens the set's first round;
     * returns the state before */
    RegisterAction<bit<8>, bit<16>, bit<8>>(round_state) round_state_touch = {
        void apply(inout bit<8> value, out bit<8> before) {
            before = value;
            if (value == NETAGG_ROUND_NONE) {
                value = NETAGG_ROUND_OPEN;
            }
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(round_state) round_state_read = {
        void apply(inout bit<8> value, out bit<8> before) { before = value; }
    };
    /* the result pass, when the set still holds the completing packet's epoch (a fresh packet
     * of another epoch may have taken the set over while this packet recirculated, and SEEN
     * would then pair the new round with the old epoch's completed_seq): SEEN, or
     * ROUND_WAITING for a child's round (md.completed_state, a PHV operand) */
    RegisterAction<bit<8>, bit<16>, bit<8>>(round_state) round_state_completed = {
        void apply(inout bit<8> value) {
            if (value != NETAGG_ROUND_NONE) {   /* not a set the control plane cleared since */
                value = md.completed_state;
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
     * as table classify reads it from seq_diff). Returns the value before. */
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
        void apply(inout bit<16> value) { value = hdr.netagg.count; }
    };
    /* returns the round's count minus the packet's: 0 when they agree */
    RegisterAction<bit<16>, bit<16>, bit<16>>(round_count) round_count_compare = {
        void apply(inout bit<16> value, out bit<16> diff) { diff = value - hdr.netagg.count; }
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
            value = hdr.bridge.workers_minus_1;
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

    /* ---- the value lanes (lane passes) ---- */
    VALUE_LANE(0)  VALUE_LANE(1)  VALUE_LANE(2)  VALUE_LANE(3)
    VALUE_LANE(4)  VALUE_LANE(5)  VALUE_LANE(6)  VALUE_LANE(7)
    VALUE_LANE(8)  VALUE_LANE(9)  VALUE_LANE(10) VALUE_LANE(11)
    VALUE_LANE(12) VALUE_LANE(13) VALUE_LANE(14) VALUE_LANE(15)
    VALUE_LANE(16) VALUE_LANE(17) VALUE_LANE(18) VALUE_LANE(19)
    VALUE_LANE(20) VALUE_LANE(21) VALUE_LANE(22) VALUE_LANE(23)
    VALUE_LANE(24) VALUE_LANE(25) VALUE_LANE(26) VALUE_LANE(27)
    VALUE_LANE(28) VALUE_LANE(29) VALUE_LANE(30) VALUE_LANE(31)


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

    /* Differences and XORs for the conditions that compare two fields: a gateway compares a
     * field with a constant. Each is an action of a keyless table, so that the compiler keeps
     * the value in the PHV for the gateway that reads it instead of folding the expression
     * into the condition. The checks rely on these ranges: rank < NETAGG_MAX_WORKERS (checked
     * with them), slot_count <= NETAGG_POOL_SLOTS and elements_per_packet <= 1024 (the control
     * plane's limits). */
    action compare_addresses() {
        md.dst_xor = hdr.ipv4.dst_addr ^ md.switch_ip;
        md.arp_xor = hdr.arp.target_proto_addr ^ md.switch_ip;
    }
    table address_compare {
        actions = { compare_addresses; }
        default_action = compare_addresses();
        size = 1;
    }
    action compute_check_differences() {
        md.len_diff = hdr.ipv4.total_len - hdr.udp.length;          /* 20 */
        md.rank_diff = hdr.netagg.rank - (bit<16>)md.worker_count;  /* < 0 */
        md.worker_xor = (bit<16>)md.worker_rank ^ hdr.netagg.rank;  /* 0 */
        md.parent_rank_xor = hdr.netagg.rank ^ md.parent_rank;      /* 0 */
        md.slot_diff = md.slot_offset - md.slot_count;              /* < 0 */
        md.count_diff_job = hdr.netagg.count - md.elements_per_packet; /* not 1..64 */
    }
    table check_differences {
        actions = { compute_check_differences; }
        default_action = compute_check_differences();
        size = 1;
    }
    action compute_length_difference() {
        md.length_diff = hdr.udp.length - md.payload_bytes;         /* 8 + the header */
    }
    table length_difference {
        actions = { compute_length_difference; }
        default_action = compute_length_difference();
        size = 1;
    }
    /* ---- the checks pass: wire::decode_frame's, wire::decode's and the job table's checks,
     * in the model's order. Each check is a bit (md.ok_*) computed from one field and a
     * constant, or from one difference computed before it; this table takes the first that
     * fails, by the order of its entries, and drops for its reason, or sends the packet on. */
    action checks_decide() {
        md.checked = 1;
    }
    action checks_translate() {
        md.translate = 1;
    }
    table checks {
        key = {
            md.ok_frame : ternary;
            md.ok_len : ternary;
            md.ok_header : ternary;
            md.ok_size : ternary;
            hdr.netagg.msg_type : ternary;
            md.from_parent : ternary;
            md.parent_source_hit : ternary;
            md.parent_hit : ternary;
            md.ok_parent_rank : ternary;
            md.job_hit : ternary;
            md.ok_rank : ternary;
            md.ok_worker : ternary;
            md.ok_slot : ternary;
            md.ok_int32 : ternary;
            md.ok_count_job : ternary;
        }
        actions = { drop_for; checks_decide; checks_translate; }
        const entries = {
            /* wire::decode_frame, then wire::decode */
            (0, _, _, _, _, _, _, _, _, _, _, _, _, _, _) : drop_for(NETAGG_DROP_MALFORMED);
            (_, 0, _, _, _, _, _, _, _, _, _, _, _, _, _) : drop_for(NETAGG_DROP_MALFORMED);
            (_, _, 0, _, _, _, _, _, _, _, _, _, _, _, _) : drop_for(NETAGG_DROP_MALFORMED);
            (_, _, _, 0, _, _, _, _, _, _, _, _, _, _, _) : drop_for(NETAGG_DROP_MALFORMED);
            /* a result's first pass: taken only from the parent of one of the jobs, for this
             * switch's rank there (the model's result_from_parent, in its order: the slot and
             * the dtype in its checks pass as the child job's) */
            (_, _, _, _, NETAGG_MSG_RESULT, 0, 0, _, _, _, _, _, _, _, _) :
                drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
            (_, _, _, _, NETAGG_MSG_RESULT, 0, _, 0, _, _, _, _, _, _, _) :
                drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
            (_, _, _, _, NETAGG_MSG_RESULT, 0, _, _, 0, _, _, _, _, _, _) :
                drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
            (_, _, _, _, NETAGG_MSG_RESULT, 0, _, _, _, _, _, _, _, _, _) : checks_translate();
            /* a parent's result as the child job's */
            (_, _, _, _, _, 1, _, _, _, 0, _, _, _, _, _) : drop_for(NETAGG_DROP_NOT_CONTRIBUTION);
            (_, _, _, _, _, 1, _, _, _, _, _, _, 0, _, _) : drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
            (_, _, _, _, _, 1, _, _, _, _, _, _, _, 0, _) : drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
            (_, _, _, _, _, 1, _, _, _, _, _, _, _, _, _) : checks_decide();
            /* a contribution */
            (_, _, _, _, _, _, _, _, _, 0, _, _, _, _, _) : drop_for(NETAGG_DROP_UNKNOWN_JOB);
            (_, _, _, _, _, _, _, _, _, _, 0, _, _, _, _) : drop_for(NETAGG_DROP_RANK_OUT_OF_RANGE);
            (_, _, _, _, _, _, _, _, _, _, _, 0, _, _, _) : drop_for(NETAGG_DROP_FOREIGN_SOURCE);
            (_, _, _, _, _, _, _, _, _, _, _, _, 0, _, _) : drop_for(NETAGG_DROP_SLOT_OUT_OF_RANGE);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, 0, _) : drop_for(NETAGG_DROP_UNSUPPORTED_DTYPE);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, 0) :
                drop_for(NETAGG_DROP_COUNT_TOO_LARGE_FOR_JOB);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _) : checks_decide();
        }
        size = 32;
    }

    /* ---- the decision pass: what the packet is to the set's round (the model's rules; the
     * header comment). Keys: the round's state before the packet (md.has_round), the serial
     * difference of the packet's seq and the round's (md.seq_diff: 0 equal, sign set older,
     * else newer), and md.rs_xor, 0 when the round's seq is its set's last completed one (a
     * complete round, if its state is SEEN or ROUND_WAITING). First match wins. */
    action set_class(bit<8> class) {
        md.class = class;
    }
    table classify {
        key = {
            md.from_parent : ternary;
            hdr.netagg.flags : ternary;    /* NETAGG_FLAG_RECOVERY */
            md.has_round : ternary;
            md.seq_diff : ternary;
            md.rs_xor : ternary;
        }
        actions = { set_class; drop_for; }
        const entries = {
            /* a parent's result: it completes the round of its seq that waits for it */
            (1, _, NETAGG_ROUND_NONE, _, _) : drop_for(NETAGG_DROP_NO_ROUND);
            (1, _, ROUND_STALE_EPOCH, _, _) : drop_for(NETAGG_DROP_STALE_EPOCH);
            (1, _, _, 0x80000000 &&& 0x80000000, _) : drop_for(NETAGG_DROP_STALE);
            (1, _, ROUND_WAITING, 0, 0) : set_class(CLASS_FROM_PARENT);
            (1, _, NETAGG_ROUND_SEEN, 0, 0) : drop_for(NETAGG_DROP_DUPLICATE);  /* answered */
            (1, _, _, _, _) : drop_for(NETAGG_DROP_NO_ROUND);  /* newer, or still open here */
            /* a contribution; a recovery copy never starts a round */
            (0, _, ROUND_STALE_EPOCH, _, _) : drop_for(NETAGG_DROP_STALE_EPOCH);
            (0, NETAGG_FLAG_RECOVERY &&& NETAGG_FLAG_RECOVERY, NETAGG_ROUND_NONE, _, _) : drop_for(NETAGG_DROP_NO_ROUND);
            (0, 0 &&& NETAGG_FLAG_RECOVERY, NETAGG_ROUND_NONE, _, _) : set_class(CLASS_NEW);
            (0, _, _, 0x80000000 &&& 0x80000000, _) : drop_for(NETAGG_DROP_STALE);
            (0, _, ROUND_WAITING, 0, 0) : set_class(CLASS_RESEND_TO_PARENT);
            (0, _, NETAGG_ROUND_SEEN, 0, 0) : set_class(CLASS_RESEND);
            (0, _, _, 0, _) : set_class(CLASS_JOIN);
            (0, NETAGG_FLAG_RECOVERY &&& NETAGG_FLAG_RECOVERY, _, _, _) : drop_for(NETAGG_DROP_NO_ROUND);   /* newer than the set's */
            (0, 0 &&& NETAGG_FLAG_RECOVERY, _, _, _) : set_class(CLASS_NEW);             /* newer: the next round */
        }
        size = 16;
    }

    /* What the round's registers do, once the round's count has been compared (md.count_diff:
     * 0 when the packet's count is the round's) and the bitmap updated (md.bitmap_before, the
     * word before a join): a join whose rank's bit was set already is a duplicate. */
    action aggregate_new() {
        md.op = OP_WRITE;
        md.agg = AGG_NEW;
    }
    action aggregate_join() {
        md.op = OP_ADD;
        md.agg = AGG_JOIN;
    }
    /* a retransmission to a completed round: its stored result */
    action aggregate_resend() {
        md.op = OP_READ;
        md.agg = AGG_READ;
        md.outcome = OUTCOME_RESENT;
    }
    /* trees: a retransmission while the round waits for the parent: its partial sum, still in
     * the value registers, to the parent again */
    action aggregate_resend_to_parent() {
        md.op = OP_READ;
        md.agg = AGG_READ;
        md.outcome = OUTCOME_TO_PARENT;
    }
    /* trees: the parent's values (the lane passes write them) and exponent become the round's
     * result; its ECN bits are ORed in; no bitmap or countdown */
    action aggregate_from_parent() {
        md.op = OP_WRITE;
        md.agg = AGG_FROM_PARENT;
        md.outcome = OUTCOME_FROM_PARENT;
    }
#define DUPLICATE_OF(r) \
    (CLASS_JOIN, 0, 32w1 << r &&& 32w1 << r, r) : drop_for(NETAGG_DROP_DUPLICATE);
    table aggregate {
        key = {
            md.class : ternary;
            md.count_diff : ternary;
            md.bitmap_before : ternary;
            hdr.netagg.rank : ternary;
        }
        actions = { aggregate_new; aggregate_join; aggregate_resend; aggregate_resend_to_parent;
                    aggregate_from_parent; drop_for; NoAction; }
        const entries = {
            (CLASS_NEW, _, _, _) : aggregate_new();
            DUPLICATE_OF(0)  DUPLICATE_OF(1)  DUPLICATE_OF(2)  DUPLICATE_OF(3)
            DUPLICATE_OF(4)  DUPLICATE_OF(5)  DUPLICATE_OF(6)  DUPLICATE_OF(7)
            DUPLICATE_OF(8)  DUPLICATE_OF(9)  DUPLICATE_OF(10) DUPLICATE_OF(11)
            DUPLICATE_OF(12) DUPLICATE_OF(13) DUPLICATE_OF(14) DUPLICATE_OF(15)
            DUPLICATE_OF(16) DUPLICATE_OF(17) DUPLICATE_OF(18) DUPLICATE_OF(19)
            DUPLICATE_OF(20) DUPLICATE_OF(21) DUPLICATE_OF(22) DUPLICATE_OF(23)
            DUPLICATE_OF(24) DUPLICATE_OF(25) DUPLICATE_OF(26) DUPLICATE_OF(27)
            DUPLICATE_OF(28) DUPLICATE_OF(29) DUPLICATE_OF(30) DUPLICATE_OF(31)
            (CLASS_JOIN, 0, _, _) : aggregate_join();
            (CLASS_RESEND, 0, _, _) : aggregate_resend();
            (CLASS_RESEND_TO_PARENT, 0, _, _) : aggregate_resend_to_parent();
            (CLASS_FROM_PARENT, 0, _, _) : aggregate_from_parent();
            (_, _, _, _) : drop_for(NETAGG_DROP_COUNT_MISMATCH);
        }
        size = 64;
    }

    apply {
        /* Every packet has its bridge: a recirculated one its own (kind VALUES, RESULT,
         * FROM_PARENT, DECIDE or DECIDE_FROM_PARENT), one from a port kind NONE (the parser). */
        if (hdr.bridge.kind == BRIDGE_VALUES && hdr.netagg.isValid()) {
            /* ---------------- a lane pass: lane block `pass` of the round's values ---------- */
            lane_0.apply();  lane_1.apply();  lane_2.apply();  lane_3.apply();
            lane_4.apply();  lane_5.apply();  lane_6.apply();  lane_7.apply();
            lane_8.apply();  lane_9.apply();  lane_10.apply(); lane_11.apply();
            lane_12.apply(); lane_13.apply(); lane_14.apply(); lane_15.apply();
            lane_16.apply(); lane_17.apply(); lane_18.apply(); lane_19.apply();
            lane_20.apply(); lane_21.apply(); lane_22.apply(); lane_23.apply();
            lane_24.apply(); lane_25.apply(); lane_26.apply(); lane_27.apply();
            lane_28.apply(); lane_29.apply(); lane_30.apply(); lane_31.apply();
            /* next: another lane block, the result pass, or the end of an aggregated packet */
            if (hdr.bridge.pass == 0 && (hdr.netagg.count[15:6] != 0 ||
                (hdr.netagg.count[5:5] == 1 && hdr.netagg.count[4:0] != 0))) {  /* > 32 */
                to_recirculation(BRIDGE_VALUES);
                hdr.bridge.pass = 1;
                hdr.bridge.vindex = hdr.bridge.at[14:0] ++ 1w1;
            } else if (hdr.bridge.outcome == OUTCOME_AGGREGATED) {
                ig_dprsr_md.drop_ctl = 1;
            } else {
                to_recirculation(BRIDGE_RESULT);
            }
        } else if ((hdr.bridge.kind == BRIDGE_DECIDE ||
                    hdr.bridge.kind == BRIDGE_DECIDE_FROM_PARENT) && hdr.netagg.isValid()) {
            /* ---------------- the decision pass: the round's epoch, then its seq ---------- */
            rank_bit.apply();
            md.exponent_biased = hdr.netagg.exponent ^ 0x8000;
            md.ecn_in = (bit<8>)hdr.ipv4.ecn;
            /* the set's epoch before this packet: a fresh packet makes it its own (a takeover
             * if it was another), any other starts a set without a round with its own; a
             * parent's result and a recovery copy only read */
            /* a parent's result, or a recovery copy (NETAGG_FLAG_RECOVERY): read only */
            if (hdr.bridge.kind == BRIDGE_DECIDE_FROM_PARENT || hdr.netagg.flags[2:2] == 1) {
                md.epoch_before = round_epoch_read.execute(hdr.bridge.at);
            } else if (hdr.netagg.flags[1:1] == 1) {   /* NETAGG_FLAG_FRESH */
                md.epoch_before = round_epoch_fresh.execute(hdr.bridge.at);
            } else {
                md.epoch_before = round_epoch_touch.execute(hdr.bridge.at);
            }
            md.completed_seq = completed_seq_read.execute(hdr.bridge.at);
            /* the set's state: a takeover opens a new round (state_before stays NONE: the
             * model's "a takeover is a new round"); a round of another epoch is left alone
             * (touch writes only NONE, which has no epoch) */
            if (hdr.bridge.kind == BRIDGE_DECIDE_FROM_PARENT || hdr.netagg.flags[2:2] == 1) {
                md.state_before = round_state_read.execute(hdr.bridge.at);
            } else if (hdr.netagg.flags[1:1] == 1 && md.epoch_before != hdr.netagg.epoch) {
                md.state_taken = round_state_start.execute(hdr.bridge.at);
            } else {
                md.state_before = round_state_touch.execute(hdr.bridge.at);
            }
            /* md.has_round: NONE (no round, or a takeover; for a recovery copy no round,
             * nothing written), OPEN, SEEN or ROUND_WAITING (a round of this epoch), or
             * ROUND_STALE_EPOCH (a round of another epoch that the packet does not take over:
             * dropped by classify; the registers before it have written nothing for it).
             * round_seq is chosen on the same conditions, in the same stage. */
            if (md.state_before != NETAGG_ROUND_NONE && md.epoch_before != hdr.netagg.epoch) {
                md.has_round = ROUND_STALE_EPOCH;
            } else {
                md.has_round = md.state_before;
            }
            if (hdr.bridge.kind == BRIDGE_DECIDE_FROM_PARENT || hdr.netagg.flags[2:2] == 1) {
                md.round_seq = round_seq_read.execute(hdr.bridge.at);   /* never starts one */
            } else if (md.state_before == NETAGG_ROUND_NONE) {
                md.round_seq = round_seq_start.execute(hdr.bridge.at);  /* new, or a takeover */
            } else if (md.epoch_before != hdr.netagg.epoch) {
                md.round_seq = round_seq_read.execute(hdr.bridge.at);   /* stale epoch */
            } else {
                /* a round of this epoch: writes the seq if it is newer, complete or not */
                md.round_seq = round_seq_advance.execute(hdr.bridge.at);
            }
            md.seq_diff = hdr.netagg.seq - md.round_seq;
            md.rs_xor = md.round_seq ^ md.completed_seq;
            classify.apply();
            /* the round's count: set by a new round, compared by every other (the difference,
             * 0 when equal); then the bitmap, after the count, so that a packet dropped for
             * its count never joins */
            if (md.class == CLASS_NEW) {
                round_count_write.execute(hdr.bridge.at);
            } else if (md.class != 0) {
                md.count_diff = round_count_compare.execute(hdr.bridge.at);
            }
            if (md.class == CLASS_NEW) {
                /* every new round (no round, a takeover, a newer seq): the word := the bit */
                bitmap_start.execute(hdr.bridge.at);
            } else if (md.class == CLASS_JOIN && md.count_diff == 0) {
                md.bitmap_before = bitmap_join.execute(hdr.bridge.at);
            }
            if (md.class != 0) {
                aggregate.apply();
            }
            /* the countdown, the exponent and the ECN OR (one stateful ALU operation per
             * register and table: a gateway each) */
            if (md.agg == AGG_NEW) {
                md.remaining = remaining_start.execute(hdr.bridge.at);
            } else if (md.agg == AGG_JOIN) {
                md.remaining = remaining_join.execute(hdr.bridge.at);
            }
            if (md.agg == AGG_NEW || md.agg == AGG_FROM_PARENT) {
                md.exponent_out = exponent_write.execute(hdr.bridge.at);
            } else if (md.agg == AGG_JOIN) {
                md.exponent_out = exponent_max.execute(hdr.bridge.at);
            } else if (md.agg == AGG_READ) {
                md.exponent_out = exponent_read.execute(hdr.bridge.at);
            }
            if (md.agg == AGG_NEW) {
                md.ecn_out = ecn_write.execute(hdr.bridge.at);
            } else if (md.agg == AGG_JOIN || md.agg == AGG_FROM_PARENT) {
                md.ecn_out = ecn_join.execute(hdr.bridge.at);
            } else if (md.agg == AGG_READ) {
                md.ecn_out = ecn_read.execute(hdr.bridge.at);    /* the round's OR */
            }
            if (md.outcome == OUTCOME_RESENT) {
                results_resent.count(0);
            } else if (md.outcome == OUTCOME_TO_PARENT) {
                resent_to_parent.count(0);
            }
            if (md.state_taken != NETAGG_ROUND_NONE) {
                epoch_takeovers.count(0);     /* a new round over another epoch's */
            }
            if (md.agg != 0) {
                /* to its lane passes, through the recirculation port */
                to_recirculation(BRIDGE_VALUES);
                hdr.bridge.pass = 0;
                hdr.bridge.vindex = hdr.bridge.at[14:0] ++ 1w0;
                hdr.bridge.op = md.op;
                hdr.bridge.ecn = md.ecn_out;    /* for the result pass's IPv4 ECN */
                hdr.netagg.exponent = md.exponent_out ^ 0x8000;
                /* completions (or sent_to_parent) are counted in the result pass, which
                 * knows whether the job has a parent */
                if ((md.agg == AGG_NEW || md.agg == AGG_JOIN) && md.remaining == 0) {
                    hdr.bridge.outcome = OUTCOME_COMPLETED;
                } else {
                    hdr.bridge.outcome = md.outcome;
                }
            }
        } else {
            /* The lane and decision passes come first in the control flow and use no table of
             * the job: their registers start in stage 0. What the result pass writes in the
             * round's registers comes before the job's tables too (the registers' stages are
             * the decision's). */
            if (hdr.bridge.kind == BRIDGE_RESULT && hdr.netagg.isValid()) {
                md.completed_state = NETAGG_ROUND_SEEN;
                if (hdr.bridge.has_parent == 1 && hdr.bridge.outcome == OUTCOME_COMPLETED) {
                    md.completed_state = ROUND_WAITING;
                }
                if (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                    hdr.bridge.outcome == OUTCOME_FROM_PARENT) {
                    /* the round is complete from now on (the model: remaining == 0), unless a
                     * takeover came in between (the set's epoch is no longer the packet's):
                     * ROUND_WAITING for a child's round, SEEN otherwise (also when the parent's
                     * result completes it). completed_seq is written regardless: an OPEN round
                     * ignores it, and a newer round of this epoch started in between has another
                     * round_seq, so it still reads as incomplete. Not covered: a round started in
                     * between (a new epoch's, or a newer one of this epoch) that completed before
                     * this (longer, 2-pass) packet's result pass (docs/switch-pipeline.md). */
                    md.epoch_before = round_epoch_read.execute(hdr.bridge.at);
                    completed_seq_write.execute(hdr.bridge.at);
                    if (md.epoch_before == hdr.netagg.epoch) {
                        round_state_completed.execute(hdr.bridge.at);
                    }
                }
            }
            switch_identity.apply();
            /* is the frame for the switch? (a gateway compares a field with a constant) */
            address_compare.apply();
            if (md.dst_xor == 0) {
                md.for_switch = 1;
            }
            if (md.arp_xor == 0) {
                md.arp_for_switch = 1;
            }

            /* The tables of the job, each applied in one place (Tofino chains a table to its next
             * in one place of the control flow): the checks use them, the result pass the
             * multicast group and the parent. parent_source, for a result's first pass, rewrites
             * its job id after job_table has read it (a parent's job id: job_table's answer is
             * not used in that pass), so that parent_table finds the child job's parent. */
            if (hdr.netagg.isValid()) {
                job_table.apply();
                if (hdr.bridge.kind == BRIDGE_NONE && hdr.netagg.msg_type == NETAGG_MSG_RESULT &&
                    md.for_switch == 1) {
                    parent_source.apply();
                }
                parent_table.apply();
                /* the slot in the job's window, and the job's slot: a parent's translated result
                 * carries the offset (its first pass subtracted the parent's slot_base) */
                if (md.from_parent == 1) {
                    md.slot_offset = hdr.netagg.slot;
                    md.child_slot = hdr.netagg.slot + md.slot_base;
                } else {
                    md.slot_offset = hdr.netagg.slot - md.slot_base;
                    md.child_slot = hdr.netagg.slot;
                }
            }
            /* frames for the switch: ARP, ICMP echo, and netagg's checks pass */
            if (hdr.arp.isValid() && hdr.arp.hw_type == 1 && hdr.arp.proto_type == ETHERTYPE_IPV4) {
                md.arp_a = 1;
            }
            if (hdr.arp.hw_addr_len == 6 && hdr.arp.proto_addr_len == 4 &&
                hdr.arp.opcode == ARP_OPCODE_REQUEST) {
                md.arp_b = 1;
            }
            if (hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5 && hdr.ipv4.flags[0:0] == 0 &&
                hdr.ipv4.frag_offset == 0 && md.ipv4_checksum_ok) {
                md.ipv4_ok = 1;              /* 0x45, not a fragment (MF clear, offset 0) */
            }
            if (hdr.icmp.isValid() && hdr.icmp.icmp_type == ICMP_ECHO_REQUEST &&
                hdr.icmp.code == 0) {
                md.echo_a = 1;
            }
            if (hdr.ipv4.total_len[15:5] != 0 || hdr.ipv4.total_len[4:2] == 7) {   /* >= 28 */
                md.echo_b = 1;
            }

            if (hdr.bridge.kind == BRIDGE_RESULT && hdr.netagg.isValid()) {
                /* ---------------- the result pass ---------------- */
                /* The result is the contribution rewritten. Its epoch stays in place: only a
                 * packet of the round's epoch reaches the value lanes (a new round or a takeover
                 * stored the packet's epoch in round_epoch, a join or a resend matched it), so it
                 * is the round's epoch. Flags: the set bit only (fresh and recovery := 0). IPv4
                 * ECN: the round's OR, which the decision pass's ecn action returned and put in
                 * the bridge (a completion: this packet's own join or write produced it; a resend:
                 * read from the completed round); the multicast copies inherit it. Trees: a
                 * child's completed round, and a resend while it waits, go to the parent instead
                 * (parent_table). */
                originate_ipv4(hdr.bridge.ecn[1:0]);
                hdr.udp.checksum = 0;
                /* "has a parent" as the checks pass saw it, the same that chose the state
                 * stored above (the control plane may change parent_table meanwhile) */
                if (hdr.bridge.has_parent == 1 && md.parent_hit == 0 &&
                    (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                     hdr.bridge.outcome == OUTCOME_TO_PARENT)) {
                    ig_dprsr_md.drop_ctl = 1;   /* the parent's entry is gone: nowhere to go */
                } else if (hdr.bridge.has_parent == 1 &&
                           (hdr.bridge.outcome == OUTCOME_COMPLETED ||
                            hdr.bridge.outcome == OUTCOME_TO_PARENT)) {
                    /* trees: the partial sum (the lanes, in place) as this switch's contribution to
                     * the parent: the parent's job id, this switch's rank there, the parent's slot;
                     * set, seq, epoch, count and exponent the round's; fresh as this packet's
                     * (every packet of a correct worker's round carries the same fresh flag),
                     * recovery cleared */
                    if (hdr.bridge.outcome == OUTCOME_COMPLETED) {
                        sent_to_parent.count(0);
                    }
                    hdr.netagg.flags = hdr.netagg.flags & (NETAGG_FLAG_SET | NETAGG_FLAG_FRESH);
                    hdr.netagg.job_id = md.parent_job_id;
                    hdr.netagg.rank = md.parent_rank;
                    hdr.netagg.slot = md.slot_offset + md.parent_slot_base;
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
            } else if (hdr.bridge.kind != BRIDGE_NONE && hdr.bridge.kind != BRIDGE_FROM_PARENT) {
                ig_dprsr_md.drop_ctl = 1;        /* not a netagg frame: never recirculated */
            } else if (hdr.bridge.kind == BRIDGE_NONE && md.arp_a == 1 && md.arp_b == 1 &&
                       md.arp_for_switch == 1) {
                /* ---------------- ARP: who has the switch's IP ---------------- */
                hdr.ethernet.dst_addr = hdr.arp.sender_hw_addr;
                hdr.ethernet.src_addr = md.switch_mac;
                hdr.arp.opcode = ARP_OPCODE_REPLY;
                hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
                hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
                hdr.arp.sender_hw_addr = md.switch_mac;
                hdr.arp.sender_proto_addr = md.switch_ip;
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
            } else if (hdr.bridge.kind == BRIDGE_NONE && hdr.ipv4.isValid() && md.for_switch == 1 &&
                       md.ipv4_ok == 1 && md.echo_a == 1 && md.echo_b == 1) {
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
            } else if (hdr.bridge.kind == BRIDGE_FROM_PARENT ||
                       (hdr.ipv4.isValid() && md.for_switch == 1)) {
                /* ---------------- the checks pass ---------------- */
                /* a contribution from a port, another frame for the switch (dropped as malformed),
                 * a result from a port (a parent's: translated), or a parent's translated result
                 * (FROM_PARENT, checked as the child job's) */
                if (md.from_parent == 0) {
                    packets_in.count(0);         /* a parent's result: in its first pass */
                }
                worker_table.apply();
                if (hdr.netagg.dtype == NETAGG_DTYPE_BF16) {
                    md.payload_bytes = hdr.netagg.count << 1;
                } else if (hdr.netagg.dtype == NETAGG_DTYPE_EXACT_LANES) {
                    md.payload_bytes = hdr.netagg.count << 3;
                } else {
                    md.payload_bytes = hdr.netagg.count << 2;
                }
                /* differences for the checks that compare two fields (a gateway compares a field
                 * with a constant). The ranges they rely on: rank < NETAGG_MAX_WORKERS is checked
                 * with them, slot_count <= NETAGG_POOL_SLOTS, elements_per_packet <= 1024 (the
                 * control plane's limits). */
                check_differences.apply();
                length_difference.apply();
                /* wire::decode_frame: bad_ip_header, not_udp, udp_length_mismatch, wrong_port
                 * (not UDP leaves hdr.udp invalid, another port hdr.netagg invalid; a frame
                 * shorter than the netagg header is a parser error). The frame's length
                 * (ip_length_mismatch) is not known in ingress: docs/switch-pipeline.md. */
                if (md.ipv4_ok == 1 && hdr.udp.isValid() && hdr.netagg.isValid() &&
                    ig_prsr_md.parser_err == 0) {
                    md.ok_frame = 1;
                }
                if (md.len_diff == 20) {
                    md.ok_len = 1;
                }
                /* wire::decode */
                if (hdr.netagg.version == NETAGG_WIRE_VERSION &&
                    (hdr.netagg.msg_type == NETAGG_MSG_CONTRIBUTION ||
                     hdr.netagg.msg_type == NETAGG_MSG_RESULT) &&
                    hdr.netagg.dtype <= NETAGG_DTYPE_EXACT_LANES &&
                    (hdr.netagg.flags & NETAGG_FLAGS_RESERVED_MASK) == 0) {
                    md.ok_header = 1;
                }
                if ((hdr.netagg.count[15:10] == 0 || hdr.netagg.count == NETAGG_MAX_COUNT) &&
                    md.length_diff == 8 + NETAGG_HEADER_SIZE) {
                    md.ok_size = 1;
                }
                /* the job's */
                if (md.parent_rank_xor == 0) {
                    md.ok_parent_rank = 1;
                }
                if (hdr.netagg.rank[15:5] == 0 && md.rank_diff[15:15] == 1) {   /* < 32 */
                    md.ok_rank = 1;
                }
                if (md.worker_hit == 1 && md.worker_xor == 0) {
                    md.ok_worker = 1;
                }
                if (md.slot_offset[15:11] == 0 && md.slot_diff[15:15] == 1) {   /* < 2048 */
                    md.ok_slot = 1;
                }
                if (hdr.netagg.dtype == NETAGG_DTYPE_INT32) {
                    md.ok_int32 = 1;
                }
                /* count <= 64, and count - elements_per_packet not in 1..64 */
                if (hdr.netagg.count[15:6] == 0 || hdr.netagg.count == NETAGG_LANES_PER_PACKET) {
                    if (md.count_diff_job == 0 || md.count_diff_job[15:7] != 0 ||
                        (md.count_diff_job[6:6] == 1 && md.count_diff_job[5:0] != 0)) {
                        md.ok_count_job = 1;
                    }
                }
                checks.apply();
                if (md.translate == 1) {
                    /* trees: a parent's result, now one of the child job's (job id), its slot the
                     * offset in the job's window: to its checks pass as the child job's */
                    hdr.netagg.slot = hdr.netagg.slot - md.parent_slot_base;
                    to_recirculation(BRIDGE_FROM_PARENT);
                } else if (md.checked == 1) {
                    /* to the decision pass, with the set's index and the job's slot */
                    if (md.from_parent == 1) {
                        to_recirculation(BRIDGE_DECIDE_FROM_PARENT);
                    } else {
                        to_recirculation(BRIDGE_DECIDE);
                        hdr.bridge.orig_port = ig_intr_md.ingress_port;
                    }
                    /* what the decision and result passes need of the job's tables, which
                     * they do not apply (their registers start in stage 0) */
                    hdr.bridge.workers_minus_1 = md.worker_count_minus_1;
                    hdr.bridge.has_parent = md.parent_hit;
                    hdr.bridge.at = md.child_slot[14:0] ++ hdr.netagg.flags[0:0];
                    hdr.netagg.slot = md.child_slot;
                }
            } else {
                forward.apply();                 /* plain L2, the frame unchanged */
            }

        }

        if (md.drop == 1) {
            drops.count(md.drop_reason);
            ig_dprsr_md.drop_ctl = 1;
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
        pkt.emit(hdr.carried);
        pkt.emit(hdr.lanes);
    }
}

/* ================================= egress ================================================= */

parser EgressParser(packet_in pkt, out headers_t hdr, out eg_metadata_t md,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        md = {...};
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.kind) {
            BRIDGE_MCAST: parse_result;
            default: accept;          /* the rest of the frame is payload, unchanged */
        }
    }
    /* a multicast copy of a result: its destination is rewritten */
    state parse_result {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.netagg);
        transition accept;
    }
}

control Egress(inout headers_t hdr, inout eg_metadata_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {


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
        if (hdr.bridge.kind == BRIDGE_MCAST) {
            result_destination.apply();
        }
        if (hdr.bridge.kind == BRIDGE_NONE || hdr.bridge.kind == BRIDGE_MCAST) {
            hdr.bridge.setInvalid();            /* leaves the switch */
        }
        /* any other kind is a pass next (decision, lanes, result, a parent's result's checks):
         * to the recirculation port with its bridge, the rest of the frame unparsed */
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
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;

// SPDX-License-Identifier: Apache-2.0
// Round decisions and the slot state of every (slot, set): the switch model's algorithm
// (sim/switch/README.md) plus dtype_mismatch, see docs/fpga-aggregator.md ("Round checks",
// "Groups", "The round decision pipeline"). Five stages, so that no register-to-register path
// is much longer than the fp32 adder's:
//
//  C   the port heads' check results (netagg_admit, job table) are registered. A port whose
//      head failed a check is popped and counted from here. A head popped this cycle, or
//      checked against a job table or AGG_UDP_PORT that changes at this edge (inval_i), is
//      registered as not valid and checked again.
//  D1  among the valid eligible heads not already in D2/D3, one group is taken: the leader is
//      the first from a round-robin pointer, the group all heads with the leader's (slot, set),
//      job and epoch. The state of every head's (slot, set) is read, the leader's kept.
//  D2  every comparison the decision needs, of each member against the state and against each
//      other member (sequence age, count, dtype, rank, exponent), each member's class under
//      each possible reference round, the result-queue lock, and the member that starts a new
//      round (if one does). A state of another epoch is no round for a fresh member (it takes
//      the set over, with an empty bitmap) and a stale_epoch drop for the others. A recovery
//      copy never starts a round: where it would, it is a no_round drop.
//  D3  the members' decisions (computed for all at once, equal to deciding them one after the
//      other in port order), the pops, the token to the adder pipeline (netagg_accum). D3
//      waits while the adder pipeline or the result queue cannot take the group, or the
//      (slot, set) has a read-modify-write hazard in the adder pipeline; D1 and D2 wait
//      behind it.
//  D4  the (slot, set)'s new state is written, a completed round or resends go to the
//      replication queue, the counters are incremented.
//
// Hazards between groups: a group's state is read in D1 and written in D4, so D1 takes no
// group on a slot (either set) that a group in D2..D4 holds (it waits); only D4 writes the
// state, and commands change it only when the pipeline is empty (empty_o).
//
// A member that would start a new round or get a resend after an earlier member was added,
// get a resend its rank already gets in this group, or start a new round while that
// (slot, set) still has result frames queued, stays at its port's head.
//
// Trees (a job with a parent, parent_i): a round that completes sends its sum to the parent
// (one frame, queued like a result) instead of its results, and waits (`upstream`); a
// retransmission to a waiting round sends the sum up again (one per group: a second member
// asking for it stays at its head). A result from the job's parent (a head that is no
// contribution; netagg_admit passed it and gave it the job's own slot and id) forms a group
// alone; it is taken only by the round that waits for it (else dropped: no_round, stale_epoch,
// stale, duplicate, count_mismatch, dtype_mismatch, in the switch model's order), and not while
// the (slot, set) has frames queued (it stays at its head). Taken, its values overwrite the
// accumulators (a token that stores, as for a new round), its exponent replaces the round's,
// its ECN bits are ORed in, and the round completes: results to every member.
`default_nettype none

module netagg_round #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned SLOTS = 64,
    parameter int unsigned MAX_BEATS = 16,
    parameter int unsigned JOB_W = 3,     // job table entry bits
    parameter int unsigned FI_W = 1,      // ingress buffer entry bits
    parameter int unsigned HZ_N = 4,      // pipeline hazard entries (netagg_accum)
    parameter int unsigned LOCK_N = 9,    // queued results (netagg_replicate)
    parameter int unsigned INC_W = 4,     // counter increment bits
    // derived, do not change
    parameter int unsigned SLOT_W = $clog2(SLOTS),
    parameter int unsigned KEY_W = SLOT_W + 1,
    parameter int unsigned BEATS_W = $clog2(MAX_BEATS + 1)
) (
    input  logic                                        clk_i,
    input  logic                                        rst_ni,
    input  logic                                        block_i,   // a command is executing
    input  logic                                        inval_i,   // the head checks change
    output logic                                        empty_o,   // no group in D1..D4
    // port heads (flat, port p at [p*W +: W])
    input  logic [NUM_PORTS-1:0]                        drop_i,    // failed a check ...
    input  logic [NUM_PORTS*netagg_agg_pkg::REASON_W-1:0] reason_i,  // ... this one
    input  logic [NUM_PORTS-1:0]                        eligible_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::DESC_W-1:0] desc_i,
    input  logic [NUM_PORTS*FI_W-1:0]                   frame_i,   // buffer entry of the head
    input  logic [NUM_PORTS*JOB_W-1:0]                  entry_i,   // job table entry
    input  logic [NUM_PORTS*netagg_agg_pkg::NWORKERS_W-1:0] workers_i,
    input  logic [NUM_PORTS-1:0]                        parent_i,  // the job has a parent
    output logic [NUM_PORTS-1:0]                        pop_o,
    output logic [NUM_PORTS-1:0]                        hold_o,    // popped, payload read later
    // adder pipeline
    input  logic                                        accum_ready_i,
    input  logic [BEATS_W-1:0]                          accum_busy_i, // cycles until ready
    input  logic [HZ_N-1:0]                             hz_valid_i,
    input  logic [HZ_N*KEY_W-1:0]                       hz_key_i,
    output logic                                        tok_valid_o,
    output logic [KEY_W-1:0]                            tok_key_o,
    output logic [2:0]                                  tok_dtype_o,  // the members' (see D3)
    output logic [7:0]                                  tok_scale_o,  // exact: the scale code
    output logic [15:0]                                 tok_count_o,  // elements
    output logic [BEATS_W-1:0]                          tok_beats_o,  // 0: nothing to add
    output logic                                        tok_new_o,    // store, do not add
    output logic [NUM_PORTS-1:0]                        tok_members_o,
    output logic [NUM_PORTS*FI_W-1:0]                   tok_frames_o,
    output logic                                        tok_result_o, // releases a result
    // replication queue
    input  logic                                        rq_space_i,   // room for one ...
    input  logic                                        rq_space2_i,  // ... for two
    input  logic [LOCK_N-1:0]                           lock_valid_i, // queued results' keys
    input  logic [LOCK_N*KEY_W-1:0]                     lock_key_i,
    output logic                                        rq_push_o,
    output logic [netagg_agg_pkg::RESULT_W-1:0]         rq_data_o,
    // slot clearing (job commit, soft reset)
    input  logic                                        clear_i,
    input  logic                                        clear_all_i,
    input  logic [15:0]                                 clear_base_i,
    input  logic [15:0]                                 clear_count_i,
    // counters
    output logic [netagg_csr_pkg::NUM_COUNTERS*INC_W-1:0] cnt_inc_o,
    // notices (netagg_notice): each port's frame popped as a drop in the previous cycle, its
    // reason and, for a duplicate, the ranks its round waits for; a port whose notice queue has
    // no room pops no drop (and takes part in no decided group)
    input  logic [NUM_PORTS-1:0]                        notice_room_i,
    output logic [NUM_PORTS-1:0]                        ntc_drop_o,
    output logic [NUM_PORTS*netagg_agg_pkg::REASON_W-1:0] ntc_reason_o,
    output logic [NUM_PORTS*32-1:0]                     ntc_waiting_o
);
  localparam int unsigned NK = 2 * SLOTS;
  localparam int unsigned NW = netagg_agg_pkg::NWORKERS_W;
  localparam int unsigned RW = netagg_agg_pkg::RANK_W;
  localparam int unsigned REASON_W = netagg_agg_pkg::REASON_W;
  localparam int unsigned DESC_W = netagg_agg_pkg::DESC_W;
  localparam int unsigned NC = netagg_csr_pkg::NUM_COUNTERS;
  localparam int unsigned PI_W = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 1;
  localparam int unsigned CNT_W = $clog2(netagg_agg_pkg::LANES * MAX_BEATS + 1);

  if (SLOTS < 2 || (SLOTS & (SLOTS - 1)) != 0 || SLOTS > 65536) begin : gen_bad_slots
    $error("netagg_round: SLOTS must be a power of two in 2..65536");
  end
  if (NUM_PORTS < 1 || NUM_PORTS > 8) begin : gen_bad_ports
    $error("netagg_round: NUM_PORTS must be in 1..8");
  end

  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned EST_W = BEATS_W + 2;  // beats ahead of a new group, summed
  localparam int unsigned J_W = $clog2(NUM_PORTS + 1);  // 0..NUM_PORTS

  // ---- slot state ----------------------------------------------------------------------------
  // In flip-flops, so that a job's slots are cleared in one cycle.
  logic [NK-1:0] has_round_q;
  logic [31:0] epoch_q[NK];
  logic [31:0] seq_q[NK];
  logic [NK*32-1:0] bitmap_q;  // key k at [32k +: 32]; packed: a loop clears it
  logic [NW-1:0] remaining_q[NK];
  logic [CNT_W-1:0] count_q[NK];
  logic [2:0] dtype_q[NK];  // fp32_exact for a round of the exact class
  logic [15:0] exponent_q[NK];
  logic [1:0] ecn_q[NK];
  logic [NK-1:0] upstream_q;  // trees: complete here, its sum sent to the parent, no result yet
  logic [NK-1:0] fresh_q;     // the round's first contribution was fresh (its sum goes up so)
  logic [NK-1:0] rounded_q;   // exact: the accumulators hold the parent's rounded result

  // ---- C: the heads' checks, registered ------------------------------------------------------
  logic [NP-1:0] c_valid_q, c_drop_q, c_elig_q;
  logic [REASON_W-1:0] c_reason_q[NP];
  logic [DESC_W-1:0] c_desc_q[NP];
  logic [FI_W-1:0] c_frame_q[NP];
  logic [JOB_W-1:0] c_entry_q[NP];
  logic [NW-1:0] c_workers_q[NP];
  logic [NP-1:0] c_parent_q;
  logic [NP-1:0] busy, drop_pop, group_pop, taken_pop;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) c_valid_q <= '0;
    else c_valid_q <= (drop_i | eligible_i) & ~pop_o & ~{NP{inval_i}};
  end
  always_ff @(posedge clk_i) begin
    c_drop_q <= drop_i;
    c_elig_q <= eligible_i;
    c_parent_q <= parent_i;
    for (int p = 0; p < NP; p++) begin
      c_reason_q[p] <= reason_i[p*REASON_W+:REASON_W];
      c_desc_q[p] <= desc_i[p*DESC_W+:DESC_W];
      c_frame_q[p] <= frame_i[p*FI_W+:FI_W];
      c_entry_q[p] <= entry_i[p*JOB_W+:JOB_W];
      c_workers_q[p] <= workers_i[p*NW+:NW];
    end
  end

  logic [KEY_W-1:0] c_key[NP];
  logic [RW-1:0] c_rank[NP];
  logic [31:0] c_seq[NP], c_epoch[NP];
  logic [NP-1:0] c_fresh, c_recovery, c_result;
  logic [15:0] c_count[NP];
  logic [2:0] c_dtype[NP];
  logic [15:0] c_exponent[NP];
  logic [1:0] c_ecn[NP];
  logic [15:0] c_job_id[NP];
  // One head at a time (yosys takes no structs in generate blocks); the checks read the rest.
  /* verilator lint_off UNUSEDSIGNAL */
  netagg_agg_pkg::desc_t d;
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      d = c_desc_q[p];
      c_key[p] = {d.slot[SLOT_W-1:0], d.set_bit};
      c_rank[p] = d.rank[RW-1:0];
      c_seq[p] = d.seq;
      c_epoch[p] = d.epoch;
      c_fresh[p] = d.fresh;
      c_recovery[p] = d.recovery;
      c_result[p] = !d.contribution;  // (eligible: a result from the job's parent)
      c_count[p] = d.count;
      c_dtype[p] = d.dtype;
      c_exponent[p] = d.exponent;
      c_ecn[p] = d.ecn;
      c_job_id[p] = d.job_id;
    end
  end

  // Heads that failed a check leave from here (not while a command runs: it counts them
  // against the table it leaves; not while their port's notice queue is full).
  assign drop_pop = c_valid_q & c_drop_q & ~busy & {NP{!block_i}} & notice_room_i;

  // ---- pipeline registers D1 -> D2 (r1_*), D2 -> D3 (r2_*), D3 -> D4 (r3_*) ----------------
  // One packed struct per payload that travels, so that a stage passes it on in one assignment.
  // A member's fields are flat vectors, member p at [p*W +: W] (yosys takes no arrays of
  // structs); a stage's reader copies what it indexes by a signal into a plain vector.
  localparam int unsigned CL_START = 0;  // no round: start one
  localparam int unsigned CL_STALE = 1;  // older sequence number: stale
  localparam int unsigned CL_NEWER = 2;  // newer: start (the stored round is over)
  localparam int unsigned CL_COUNT = 3;  // count_mismatch
  localparam int unsigned CL_DTYPE = 4;  // dtype_mismatch
  localparam int unsigned CL_SAME = 5;   // same round: resend, duplicate or join
  localparam int unsigned CL_EPOCH = 6;  // another epoch's round, not fresh: stale_epoch
  localparam int unsigned CL_NOROUND = 7;  // a recovery copy that would start a round: no_round
  localparam int unsigned CL_SCALE = 8;  // exact: another scale than the round's: scale_mismatch
  localparam int unsigned CL_W = 9;

  localparam logic [2:0] DT_FP32 = 3'(netagg_pkg::DTYPE_FP32);
  localparam logic [2:0] DT_EXACT = 3'(netagg_pkg::DTYPE_FP32_EXACT);
  localparam logic [2:0] DT_LANES = 3'(netagg_pkg::DTYPE_EXACT_LANES);
  // The dtype a round records: fp32_exact for the exact class (fp32_exact from workers,
  // exact_lanes from a child aggregator), the others their own.
  function automatic logic [2:0] dclass(input logic [2:0] dt);
    dclass = (dt == DT_LANES) ? DT_EXACT : dt;
  endfunction
  // Accumulator beats of count elements of dtype dt in the token: wire beats (exact_lanes: 8
  // lanes a beat, two a beat of accumulators), else accumulator beats.
  function automatic logic [BEATS_W:0] wire_beats(input logic [15:0] count,
                                                  input logic lanes);
    wire_beats = lanes ? (BEATS_W + 1)'((32'(count) + 32'd7) >> 3)
                       : (BEATS_W + 1)'((32'(count) + 32'd15) >> 4);
  endfunction

  // The group D1 took: the leader's job and epoch, and every head's fields (cand: the members).
  typedef struct packed {
    logic [NP-1:0] cand;
    logic [KEY_W-1:0] key;
    logic [JOB_W-1:0] entry;
    logic [15:0] job_id;
    logic [NW-1:0] workers;
    logic [BEATS_W-1:0] est;  // beats the group's token will likely take
    logic [31:0] epoch;       // the group's epoch (every member's)
    logic res;                // the group is a result from the job's parent
    logic lanes;              // the group is of exact_lanes (a child's partial sums)
    logic parent;             // the job has a parent
    logic [NP-1:0] fresh;
    logic [NP-1:0] recovery;
    logic [NP*RW-1:0] rank;
    logic [NP*32-1:0] seq;
    logic [NP*16-1:0] count;
    logic [NP*3-1:0] dtype;
    logic [NP*16-1:0] exp;
    logic [NP*2-1:0] ecn;
    logic [NP*FI_W-1:0] frame;
  } group_t;
  // The (slot, set)'s state as D1 read it.
  typedef struct packed {
    logic has;
    logic [31:0] epoch;
    logic [31:0] seq;
    logic [31:0] bitmap;
    logic [NW-1:0] rem;
    logic [CNT_W-1:0] count;
    logic [2:0] dtype;
    logic [15:0] exp;
    logic [1:0] ecn;
    logic up;
    logic fresh;
    logic rounded;
  } state_t;
  // D2's comparisons and classes (see D2).
  typedef struct packed {
    logic other;  // the state holds a round of another epoch than the group's
    logic [NP*32-1:0] bit_r;
    logic [NP*CL_W-1:0] st_cls;
    logic [NP*NP*CL_W-1:0] pq_cls;
    logic [NP-1:0] st_dup;
    logic [NP-1:0] st_gt;
    logic [NP-1:0] st_lt;
    logic [NP-1:0] beats_nz;
    logic [NP*NP-1:0] pq_rank_eq;
    logic [NP*NP-1:0] pq_gt;
    logic [NP:0] rem_eq;  // remaining == k
    logic [NP:0] nw_eq;   // workers == k
    logic [NP*BEATS_W-1:0] beats;
    logic [BEATS_W-1:0] s_beats;
    logic [31:0] all_mask;
    logic [NP-1:0] starter;
    logic [NP-1:0] res_ok;
    logic [NP*REASON_W-1:0] res_reason;
    logic locked;
  } cmp_t;
  // D3's decision.
  typedef struct packed {
    logic started;
    logic res_take;
    logic acc_any;
    logic resend_any;
    logic [NP-1:0] starter;
    logic [NP-1:0] added;
    logic [NP-1:0] resent;
    logic [NP-1:0] drop;
    logic [NP*REASON_W-1:0] reason;
    logic [J_W-1:0] joined;
    logic [INC_W-1:0] n_added;
    logic [INC_W-1:0] n_resent;
  } decision_t;

  logic r1_valid_q, r2_valid_q, r3_valid_q, go, r1_load, r2_load;
  /* verilator lint_off UNUSEDSIGNAL */
  group_t r1_g_q, r2_g_q, r3_g_q;  // (each stage reads some of the fields)
  state_t r1_s_q, r2_s_q, r3_s_q;
  cmp_t r2_c_q, r3_c_q;
  /* verilator lint_on UNUSEDSIGNAL */
  decision_t r3_d_q;

  assign r2_load = !r2_valid_q || go;  // D3 is empty or done this cycle
  assign r1_load = !r1_valid_q || r2_load;
  assign busy = (r1_valid_q ? r1_g_q.cand : '0) | (r2_valid_q ? r2_g_q.cand : '0);
  assign empty_o = !r1_valid_q && !r2_valid_q && !r3_valid_q;

  // ---- D1: leader, group, state read ---------------------------------------------------------
  logic [PI_W-1:0] rr_q, lead;
  logic [NP-1:0] elig, cand;
  logic lead_found, conflict, soon, take;
  logic [KEY_W-1:0] lkey;
  logic [JOB_W-1:0] lentry;
  logic [EST_W-1:0] ahead;
  int unsigned idx;

  assign elig = c_valid_q & c_elig_q & ~busy;

  always_comb begin
    lead_found = 1'b0;
    lead = '0;
    for (int k = 0; k < NP; k++) begin
      idx = 32'(rr_q) + 32'(k);
      if (idx >= NP) idx = idx - NP;
      if (!lead_found && elig[idx]) begin
        lead_found = 1'b1;
        lead = PI_W'(idx);
      end
    end
  end

  assign lkey = c_key[lead];

  // The state of every head's (slot, set) and the other set's bitmap, read beside the leader
  // choice (not behind it), the leader's taken.
  logic hd_has[NP];
  logic [31:0] hd_seq[NP], hd_bitmap[NP];
  logic [NW-1:0] hd_rem[NP];
  logic [CNT_W-1:0] hd_count[NP];
  logic [2:0] hd_dtype[NP];
  logic [1:0] hd_ecn[NP];
  logic [15:0] hd_exp[NP];
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      hd_has[p] = has_round_q[c_key[p]];
      hd_seq[p] = seq_q[c_key[p]];
      hd_bitmap[p] = bitmap_q[32*c_key[p]+:32];
      hd_rem[p] = remaining_q[c_key[p]];
      hd_count[p] = count_q[c_key[p]];
      hd_dtype[p] = dtype_q[c_key[p]];
      hd_exp[p] = exponent_q[c_key[p]];
      hd_ecn[p] = ecn_q[c_key[p]];
    end
  end
  assign lentry = c_entry_q[lead];
  // A result from the parent is a group of its own; exact_lanes members (which stream two
  // wire beats an accumulator beat) form groups without the others.
  always_comb begin
    for (int p = 0; p < NP; p++)
      cand[p] = elig[p] && c_key[p] == lkey && c_entry_q[p] == lentry &&
                c_epoch[p] == c_epoch[lead] &&
                (c_result[lead] ? 32'(p) == 32'(lead) : !c_result[p]) &&
                ((c_dtype[p] == DT_LANES) == (c_dtype[lead] == DT_LANES));
  end
  // A group in D2 or D3 on the same slot writes the state D1 would read.
  assign conflict = (r1_valid_q && r1_g_q.key[KEY_W-1:1] == lkey[KEY_W-1:1]) ||
                    (r2_valid_q && r2_g_q.key[KEY_W-1:1] == lkey[KEY_W-1:1]) ||
                    (r3_valid_q && r3_g_q.key[KEY_W-1:1] == lkey[KEY_W-1:1]);
  // Take a group only shortly before the adder pipeline can start it: heads arriving
  // meanwhile on other ports then still join it (a group taken early is summed alone).
  assign ahead = EST_W'(accum_busy_i) + (r1_valid_q ? EST_W'(r1_g_q.est) : '0) +
                 (r2_valid_q ? EST_W'(r2_g_q.est) : '0);
  assign soon = ahead <= EST_W'(3);
  assign take = lead_found && !block_i && !conflict && soon && r1_load;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rr_q <= '0;
      r1_valid_q <= 1'b0;
      r2_valid_q <= 1'b0;
    end else begin
      if (take && !clear_i) rr_q <= (32'(lead) + 1 >= NP) ? '0 : lead + 1'b1;
      if (r1_load) r1_valid_q <= take;
      if (r2_load) r2_valid_q <= r1_valid_q;
    end
  end

  group_t g1;
  state_t s1;
  always_comb begin
    g1.cand = cand;
    g1.key = lkey;
    g1.entry = lentry;
    g1.job_id = c_job_id[lead];
    g1.workers = c_workers_q[lead];
    g1.est = BEATS_W'(wire_beats(c_count[lead], c_dtype[lead] == DT_LANES));
    g1.epoch = c_epoch[lead];
    g1.res = c_result[lead];
    g1.lanes = c_dtype[lead] == DT_LANES;
    g1.parent = c_parent_q[lead];
    g1.fresh = c_fresh;
    g1.recovery = c_recovery;
    for (int p = 0; p < NP; p++) begin
      g1.rank[p*RW+:RW] = c_rank[p];
      g1.seq[p*32+:32] = c_seq[p];
      g1.count[p*16+:16] = c_count[p];
      g1.dtype[p*3+:3] = c_dtype[p];
      g1.exp[p*16+:16] = c_exponent[p];
      g1.ecn[p*2+:2] = c_ecn[p];
      g1.frame[p*FI_W+:FI_W] = c_frame_q[p];
    end
    s1.has = hd_has[lead];
    s1.epoch = epoch_q[lkey];
    s1.seq = hd_seq[lead];
    s1.bitmap = hd_bitmap[lead];
    s1.rem = hd_rem[lead];
    s1.count = hd_count[lead];
    s1.dtype = hd_dtype[lead];
    s1.exp = hd_exp[lead];
    s1.ecn = hd_ecn[lead];
    s1.up = upstream_q[lkey];
    s1.fresh = fresh_q[lkey];
    s1.rounded = rounded_q[lkey];
  end
  always_ff @(posedge clk_i) begin
    if (r1_load) begin
      r1_g_q <= g1;
      r1_s_q <= s1;
    end
  end

  // ---- D2: comparisons and classes ----------------------------------------------------------
  // Each member against the state (st_*) and against each other member q that may have started
  // the round before it (pq_*, member p against member q at [p*NP + q]), and its class under
  // each of these references: what the decision table says before `remaining` and the bitmap,
  // which the members before it change, are looked at.
  logic [31:0] bit_r[NP];
  logic [CL_W-1:0] st_cls[NP];
  logic [CL_W-1:0] pq_cls[NP*NP];
  logic [NP-1:0] st_dup, st_gt, st_lt, beats_nz;
  logic [NP*NP-1:0] pq_rank_eq, pq_gt;
  logic [NP:0] rem_eq, nw_eq;  // remaining == k, workers == k
  logic [BEATS_W-1:0] p_beats[NP];
  logic [BEATS_W-1:0] s_beats;
  logic [31:0] all_mask;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] diff;  // (its sign)
  /* verilator lint_on UNUSEDSIGNAL */
  logic locked, zero, cnt_eq, dt_eq, sc_eq, blocked, epoch_eq, s_has;
  logic [NP-1:0] want_start, starter_d2, res_ok;
  logic [REASON_W-1:0] res_reason[NP];

  function automatic logic [CL_W-1:0] classify(input logic has, input logic older,
                                               input logic same_seq, input logic same_count,
                                               input logic same_dtype, input logic same_scale);
    logic [CL_W-1:0] c;
    c = '0;
    if (!has) c[CL_START] = 1'b1;
    else if (older) c[CL_STALE] = 1'b1;
    else if (!same_seq) c[CL_NEWER] = 1'b1;
    else if (!same_count) c[CL_COUNT] = 1'b1;
    else if (!same_dtype) c[CL_DTYPE] = 1'b1;
    else if (!same_scale) c[CL_SCALE] = 1'b1;
    else c[CL_SAME] = 1'b1;
    classify = c;
  endfunction

  logic [31:0] r1_s_bitmap;  // (indexed by a signal)
  assign r1_s_bitmap = r1_s_q.bitmap;
  always_comb begin
    // A round of another epoch: no round for a fresh member, stale_epoch for the others.
    epoch_eq = r1_s_q.epoch == r1_g_q.epoch;
    s_has = r1_s_q.has && epoch_eq;
    for (int p = 0; p < NP; p++) begin
      bit_r[p] = 32'd1 << r1_g_q.rank[p*RW+:RW];
      diff = r1_g_q.seq[p*32+:32] - r1_s_q.seq;  // serial-number arithmetic: diff[31] = older
      zero = r1_g_q.seq[p*32+:32] == r1_s_q.seq;
      cnt_eq = r1_g_q.count[p*16+:16] == 16'(r1_s_q.count);
      dt_eq = dclass(r1_g_q.dtype[p*3+:3]) == r1_s_q.dtype;
      // (exact class: the scale byte; the stored round's dtype is its class)
      sc_eq = r1_s_q.dtype != DT_EXACT || r1_g_q.exp[p*16+8+:8] == r1_s_q.exp[15:8];
      st_cls[p] = classify(s_has, diff[31], zero, cnt_eq, dt_eq, sc_eq);
      if (r1_g_q.recovery[p] && (st_cls[p][CL_START] || st_cls[p][CL_NEWER]))
        st_cls[p] = CL_W'(1) << CL_NOROUND;
      if (r1_s_q.has && !epoch_eq && (!r1_g_q.fresh[p] || r1_g_q.recovery[p]))
        st_cls[p] = CL_W'(1) << CL_EPOCH;
      st_dup[p] = s_has && r1_s_bitmap[r1_g_q.rank[p*RW+:RW]];
      // A result from the parent, against the round waiting for it.
      res_ok[p] = 1'b0;
      res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      if (!r1_s_q.has) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      else if (!epoch_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE_EPOCH);
      else if (diff[31]) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE);
      else if (!zero || r1_s_q.rem != '0)
        res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      else if (!r1_s_q.up) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DUPLICATE);
      else if (!cnt_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_COUNT_MISMATCH);
      else if (!dt_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DTYPE_MISMATCH);
      else if (!sc_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_SCALE_MISMATCH);
      else res_ok[p] = 1'b1;
      st_gt[p] = $signed(r1_g_q.exp[p*16+:16]) > $signed(r1_s_q.exp);
      st_lt[p] = $signed(r1_g_q.exp[p*16+:16]) < $signed(r1_s_q.exp);
      p_beats[p] = BEATS_W'(wire_beats(r1_g_q.count[p*16+:16], r1_g_q.lanes));
      beats_nz[p] = r1_g_q.count[p*16+:16] != '0;
      for (int q = 0; q < NP; q++) begin
        diff = r1_g_q.seq[p*32+:32] - r1_g_q.seq[q*32+:32];
        zero = r1_g_q.seq[p*32+:32] == r1_g_q.seq[q*32+:32];
        cnt_eq = r1_g_q.count[p*16+:16] == r1_g_q.count[q*16+:16];
        dt_eq = dclass(r1_g_q.dtype[p*3+:3]) == dclass(r1_g_q.dtype[q*3+:3]);
        sc_eq = dclass(r1_g_q.dtype[q*3+:3]) != DT_EXACT ||
                r1_g_q.exp[p*16+8+:8] == r1_g_q.exp[q*16+8+:8];
        pq_cls[p*NP+q] = classify(1'b1, diff[31], zero, cnt_eq, dt_eq, sc_eq);
        if (r1_g_q.recovery[p] && pq_cls[p*NP+q][CL_NEWER]) pq_cls[p*NP+q] = CL_W'(1) << CL_NOROUND;
        pq_rank_eq[p*NP+q] = r1_g_q.rank[p*RW+:RW] == r1_g_q.rank[q*RW+:RW];
        pq_gt[p*NP+q] = $signed(r1_g_q.exp[p*16+:16]) > $signed(r1_g_q.exp[q*16+:16]);
      end
    end
    s_beats = BEATS_W'(wire_beats(16'(r1_s_q.count), r1_g_q.lanes));
    for (int k = 0; k <= NP; k++) begin
      rem_eq[k] = r1_s_q.rem == NW'(k);
      nw_eq[k] = r1_g_q.workers == NW'(k);
    end
    all_mask = (r1_g_q.workers >= NW'(32)) ? '1 : ((32'd1 << r1_g_q.workers) - 32'd1);
    locked = 1'b0;
    for (int i = 0; i < LOCK_N; i++)
      if (lock_valid_i[i] && lock_key_i[i*KEY_W+:KEY_W] == r1_g_q.key) locked = 1'b1;
    // The member that starts a round, if one does: the first that would start one against
    // the state, unless an earlier member joined or got a resend (no member before it changed
    // `remaining`: it is the stored one) or the (slot, set) is locked.
    blocked = locked;
    starter_d2 = '0;
    for (int p = 0; p < NP; p++) begin
      want_start[p] = st_cls[p][CL_START] || st_cls[p][CL_NEWER];
      if (r1_g_q.cand[p] && !r1_g_q.res) begin
        if (want_start[p] && !blocked) starter_d2[p] = 1'b1;
        if (want_start[p] || (st_cls[p][CL_SAME] && (rem_eq[0] || !st_dup[p]))) blocked = 1'b1;
      end
    end
  end

  // A lock seen here is still there in D3 or has gone (the group then leaves a frame at its
  // head that could have started a round: it is taken again later); no group ahead of this
  // one can add a lock on its (slot, set) (D1's conflict rule), so D3 may use `starter`.
  cmp_t c2;
  always_comb begin
    c2.other = r1_s_q.has && !epoch_eq;
    for (int p = 0; p < NP; p++) begin
      c2.bit_r[p*32+:32] = bit_r[p];
      c2.st_cls[p*CL_W+:CL_W] = st_cls[p];
      c2.beats[p*BEATS_W+:BEATS_W] = p_beats[p];
      c2.res_reason[p*REASON_W+:REASON_W] = res_reason[p];
    end
    for (int i = 0; i < NP * NP; i++) c2.pq_cls[i*CL_W+:CL_W] = pq_cls[i];
    c2.st_dup = st_dup;
    c2.st_gt = st_gt;
    c2.st_lt = st_lt;
    c2.beats_nz = beats_nz;
    c2.pq_rank_eq = pq_rank_eq;
    c2.pq_gt = pq_gt;
    c2.rem_eq = rem_eq;
    c2.nw_eq = nw_eq;
    c2.s_beats = s_beats;
    c2.all_mask = all_mask;
    c2.starter = starter_d2;
    c2.res_ok = res_ok;
    c2.locked = locked;
  end
  always_ff @(posedge clk_i) begin
    if (r2_load) begin
      r2_g_q <= r1_g_q;
      r2_s_q <= r1_s_q;
      r2_c_q <= c2;
    end
  end

  // ---- D3: the group decision ----------------------------------------------------------------
  logic hazard;
  always_comb begin
    hazard = 1'b0;
    for (int i = 0; i < HZ_N; i++)
      if (hz_valid_i[i] && hz_key_i[i*KEY_W+:KEY_W] == r2_g_q.key) hazard = 1'b1;
  end
  // (the queue must also hold the result D4 is pushing now; a member's notice queue must have
  // room for the notice it may get)
  assign go = r2_valid_q && accum_ready_i && rq_space_i && !(rq_push_o && !rq_space2_i) &&
              !hazard && &(notice_room_i | ~r2_g_q.cand);

  // The decision, member by member in port order against the state the members before it
  // left (docs/fpga-aggregator.md, "Round checks"), computed for all members at once:
  //  - the reference round of member p is the stored one, or the one the starter (decided in
  //    D2) started if that is an earlier member; `cls` is p's class against it;
  //  - joins all go to that one round; a member that would join (same round, rank not in the
  //    bitmap) is a joiner unless an earlier would-be joiner or the starter has its rank;
  //    `remaining` reaches 0 once as many joiners as the round still needs came before p;
  //  - a resend needs the stored round complete and no member added before it, and is sent
  //    once per rank.
  logic started, acc_any, new_round, resend_any, complete_now, res_take;
  logic [NP-1:0] starter, added, resent, round_drop, exp_win, res_taken;
  logic [NP-1:0] after_start, same, would_join, joiner, rem_zero, resend_cand, joined;
  logic [CL_W-1:0] cls[NP];
  logic [REASON_W-1:0] round_reason[NP];
  logic [J_W-1:0] n_joined, ahead_joins;
  logic [3:0] n_added, n_resent;
  logic need_zero;
  assign starter = r2_c_q.starter;

  always_comb begin
    for (int p = 0; p < NP; p++) begin
      after_start[p] = 1'b0;  // the starter is an earlier member
      for (int q = 0; q < p; q++) if (starter[q]) after_start[p] = 1'b1;
      cls[p] = r2_c_q.st_cls[p*CL_W+:CL_W];
      for (int q = 0; q < p; q++) if (starter[q]) cls[p] = r2_c_q.pq_cls[(p*NP+q)*CL_W+:CL_W];
      same[p] = r2_g_q.cand[p] && cls[p][CL_SAME] && !r2_g_q.res;
      // (after the starter, against the new round's bits: a new round starts from its starter's)
      would_join[p] = same[p] && !(r2_c_q.st_dup[p] && !after_start[p]);
    end
    for (int p = 0; p < NP; p++) begin
      joiner[p] = would_join[p];
      for (int q = 0; q < p; q++)
        if ((would_join[q] || starter[q]) && r2_c_q.pq_rank_eq[p*NP+q]) joiner[p] = 1'b0;
      // remaining == 0 at p: the joiners before p used up what the round needed
      ahead_joins = '0;
      for (int q = 0; q < p; q++) ahead_joins = ahead_joins + J_W'(joiner[q]);
      // (ahead_joins < NP)
      need_zero = 1'b0;
      for (int k = 0; k < NP; k++)
        if (32'(k) <= 32'(ahead_joins))
          need_zero = need_zero | (after_start[p] ? r2_c_q.nw_eq[k+1] : r2_c_q.rem_eq[k]);
      rem_zero[p] = need_zero;
      joined[p] = joiner[p] && !rem_zero[p];
      resend_cand[p] = same[p] && r2_c_q.rem_eq[0] && !after_start[p] && !starter[p];
    end
    for (int p = 0; p < NP; p++) begin
      // (a round waiting for the parent sends its sum up once per group)
      resent[p] = resend_cand[p];
      for (int q = 0; q < p; q++)
        if (resend_cand[q] && (r2_c_q.pq_rank_eq[p*NP+q] || r2_s_q.up)) resent[p] = 1'b0;
      // a result from the parent: taken unless results of the (slot, set) are queued
      res_taken[p] = r2_g_q.res && r2_g_q.cand[p] && r2_c_q.res_ok[p] && !r2_c_q.locked;
      added[p] = joined[p] || starter[p] || res_taken[p];
      round_reason[p] = '0;
      round_drop[p] = 1'b0;
      if (r2_g_q.res && r2_g_q.cand[p] && !r2_c_q.res_ok[p]) begin
        round_drop[p] = 1'b1;
        round_reason[p] = r2_c_q.res_reason[p*REASON_W+:REASON_W];
      end
      if (r2_g_q.cand[p] && !starter[p] && !r2_g_q.res) begin
        if (cls[p][CL_STALE]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE);
        end
        if (cls[p][CL_EPOCH]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE_EPOCH);
        end
        if (cls[p][CL_NOROUND]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
        end
        if (cls[p][CL_COUNT]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_COUNT_MISMATCH);
        end
        if (cls[p][CL_DTYPE]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DTYPE_MISMATCH);
        end
        if (cls[p][CL_SCALE]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_SCALE_MISMATCH);
        end
        if (cls[p][CL_SAME] && !rem_zero[p] && !joiner[p]) begin
          round_drop[p] = 1'b1;
          round_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DUPLICATE);
        end
      end
      group_pop[p] = added[p] || resent[p] || round_drop[p];
    end
    started = |starter;
    res_take = |res_taken;
    new_round = started || res_take;  // (the parent's values are stored, not added)
    acc_any = started || |joined || res_take;
    resend_any = |resent;
    n_joined = '0;
    n_added = '0;
    n_resent = '0;
    for (int p = 0; p < NP; p++) begin
      n_joined = n_joined + J_W'(joined[p]);
      n_added = n_added + 4'(joined[p] || starter[p]);
      n_resent = n_resent + 4'(resent[p]);
    end
  end

  // What the adder pipeline needs now: members, beats (of the starter's count or the stored
  // one), the members' dtype (the round's; an exact round's: exact_lanes for a group of them,
  // fp32_exact for the others, fp32 for the parent's rounded result, which is stored as it is),
  // an exact round's scale code and its count.
  logic [BEATS_W-1:0] t_beats;
  logic [2:0] t_dtype;
  logic [7:0] t_scale;
  logic [15:0] t_count;
  logic t_nonempty;
  always_comb begin
    t_beats = r2_c_q.s_beats;
    t_dtype = r2_s_q.dtype;
    if (r2_s_q.dtype == DT_EXACT)
      t_dtype = r2_g_q.res ? DT_FP32 : (r2_g_q.lanes ? DT_LANES : DT_EXACT);
    t_scale = r2_s_q.exp[15:8];
    t_count = 16'(r2_s_q.count);
    t_nonempty = r2_s_q.count != '0;
    for (int p = 0; p < NP; p++) begin
      if (starter[p]) begin
        t_beats = r2_c_q.beats[p*BEATS_W+:BEATS_W];
        t_dtype = r2_g_q.dtype[p*3+:3];
        t_scale = r2_g_q.exp[p*16+8+:8];
        t_count = r2_g_q.count[p*16+:16];
        t_nonempty = r2_c_q.beats_nz[p];
      end
    end
  end

  // The decision does not wait for `go` (it is on no path through it); what it does happens
  // only with `go`.
  assign taken_pop = go ? group_pop : '0;
  assign pop_o = drop_pop | taken_pop;
  assign hold_o = (go && t_nonempty) ? added : '0;
  assign tok_valid_o = go && (acc_any || resend_any);
  assign tok_key_o = r2_g_q.key;
  assign tok_dtype_o = t_dtype;
  assign tok_scale_o = t_scale;
  assign tok_count_o = t_count;
  assign tok_beats_o = acc_any ? t_beats : '0;
  assign tok_new_o = new_round;
  assign tok_members_o = added;
  assign tok_result_o = rq_push_o;  // (a cycle after the token, see netagg_accum)
  assign tok_frames_o = r2_g_q.frame;

  // Which frames were decided this cycle: read by the testbench (through Verilator's public
  // signals) to feed the reference model the same groups.
  logic [NP-1:0] dbg_group_pop  /* verilator public_flat_rd */;
  logic [NP-1:0] dbg_admit_pop  /* verilator public_flat_rd */;
  assign dbg_group_pop = taken_pop;
  assign dbg_admit_pop = drop_pop;

  // ---- D3 -> D4 ------------------------------------------------------------------------------

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      r3_valid_q <= 1'b0;
    end else begin
      r3_valid_q <= go;
    end
  end
  decision_t d3;
  always_comb begin
    d3.started = started;
    d3.res_take = res_take;
    d3.acc_any = acc_any;
    d3.resend_any = resend_any;
    d3.starter = starter;
    d3.added = added;
    d3.resent = resent;
    d3.drop = go ? round_drop : '0;
    for (int p = 0; p < NP; p++) d3.reason[p*REASON_W+:REASON_W] = round_reason[p];
    d3.joined = n_joined;
    d3.n_added = go ? INC_W'(n_added) : '0;
    d3.n_resent = go ? INC_W'(n_resent) : '0;
  end
  always_ff @(posedge clk_i) begin
    r3_g_q <= r2_g_q;
    r3_s_q <= r2_s_q;
    r3_c_q <= r2_c_q;
    r3_d_q <= d3;
  end

  // ---- D4: the (slot, set)'s new state, the result, the counters -----------------------------
  logic f_has, state_win, f_up, f_fresh, f_rounded, up_send, up_resend;
  logic [31:0] f_seq, f_bitmap, added_ranks, resend_mask;
  logic [NW-1:0] f_rem;
  logic [CNT_W-1:0] f_count;
  logic [2:0] f_dtype;
  logic [1:0] f_ecn;
  logic [15:0] f_exp;
  logic [J_W-1:0] r3_next;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [NP:0] r3_nw_eq;  // (indexed by a signal; workers >= 1)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [NP:0] r3_rem_eq;
  assign r3_nw_eq = r3_c_q.nw_eq;
  assign r3_rem_eq = r3_c_q.rem_eq;
  always_comb begin
    r3_next = r3_d_q.joined + 1'b1;
    // (the parent's result completes the round waiting for it)
    complete_now = r3_d_q.res_take || (r3_d_q.acc_any && (r3_d_q.started ? r3_nw_eq[r3_next] :
                                                                       r3_rem_eq[r3_d_q.joined]));
    f_has = r3_s_q.has || r3_d_q.started;
    f_seq = r3_s_q.seq;
    f_count = r3_s_q.count;
    f_dtype = r3_s_q.dtype;
    f_ecn = r3_d_q.started ? 2'b00 : r3_s_q.ecn;
    f_rem = r3_d_q.started ? r3_g_q.workers - 1'b1 : r3_s_q.rem;
    added_ranks = '0;
    resend_mask = '0;
    f_fresh = r3_s_q.fresh;
    for (int p = 0; p < NP; p++) begin
      if (r3_d_q.starter[p]) begin
        f_seq = r3_g_q.seq[p*32+:32];
        f_count = CNT_W'(r3_g_q.count[p*16+:16]);
        f_dtype = dclass(r3_g_q.dtype[p*3+:3]);
        f_fresh = r3_g_q.fresh[p];
      end
      if (r3_d_q.added[p]) begin
        if (!r3_d_q.res_take) added_ranks = added_ranks | r3_c_q.bit_r[p*32+:32];
        f_ecn = f_ecn | r3_g_q.ecn[p*2+:2];
      end
      if (r3_d_q.resent[p]) resend_mask = resend_mask | r3_c_q.bit_r[p*32+:32];
    end
    f_rem = f_rem - NW'(r3_d_q.joined);
    // A new round starts from an empty bitmap (the bits are an earlier round's). The other set's
    // bitmap is left alone: after a restart it may hold a round its members still add to.
    f_bitmap = (r3_d_q.started ? '0 : r3_s_q.bitmap) | added_ranks;
    // The exponent: the signed max of the stored one (unless a round started) and the added
    // members'. Every candidate nothing beats is a max; equal maxima are equal bits.
    state_win = !r3_d_q.started;
    for (int p = 0; p < NP; p++) begin
      if (r3_d_q.added[p] && r3_c_q.st_gt[p]) state_win = 1'b0;
      exp_win[p] = r3_d_q.added[p] && !(!r3_d_q.started && r3_c_q.st_lt[p]);
      for (int q = 0; q < NP; q++)
        if (q != p && r3_d_q.added[q] && r3_c_q.pq_gt[q*NP+p]) exp_win[p] = 1'b0;
    end
    f_exp = state_win ? r3_s_q.exp : '0;
    for (int p = 0; p < NP; p++) if (exp_win[p]) f_exp = f_exp | r3_g_q.exp[p*16+:16];
    // The parent's result: its exponent is the round's.
    if (r3_d_q.res_take) begin
      f_exp = '0;
      for (int p = 0; p < NP; p++) if (r3_d_q.added[p]) f_exp = r3_g_q.exp[p*16+:16];
    end
    // Trees: a completed round of a job with a parent sends its sum up and waits; a
    // retransmission to a waiting round sends it again; the parent's result ends the wait.
    up_send = complete_now && r3_g_q.parent && !r3_d_q.res_take;
    up_resend = r3_d_q.resend_any && r3_s_q.up;
    f_up = r3_d_q.started ? 1'b0 : r3_s_q.up;
    if (up_send) f_up = 1'b1;
    if (r3_d_q.res_take) f_up = 1'b0;
    // An exact round's accumulators hold the parent's result rounded once it is taken.
    f_rounded = r3_d_q.started ? 1'b0 : r3_s_q.rounded;
    if (r3_d_q.res_take) f_rounded = f_dtype == DT_EXACT;
  end

  netagg_agg_pkg::result_t result;
  always_comb begin
    result = '0;
    result.slot = 16'(r3_g_q.key[KEY_W-1:1]);
    result.set_bit = r3_g_q.key[0];
    result.entry = 8'(r3_g_q.entry);
    result.job_id = r3_g_q.job_id;
    result.dtype = f_dtype;
    result.count = 16'(f_count);
    result.exponent = f_exp;
    result.seq = f_seq;
    result.epoch = r3_g_q.epoch;  // the group's: a completion or resend is of a round of it
    result.ecn = f_ecn;
    result.dest = complete_now ? r3_c_q.all_mask : resend_mask;
    result.up = up_send || up_resend;
    result.fresh = f_fresh;
    result.rounded = f_rounded;
  end
  assign rq_push_o = r3_valid_q && (complete_now || r3_d_q.resend_any);
  assign rq_data_o = result;

  // Counters: the check drops of the previous cycle and D4's, registered (they reach the
  // counters two cycles after the pop and one after D4).
  logic [NC*INC_W-1:0] inc;
  logic [NP-1:0] a_drop_q;
  logic [REASON_W-1:0] a_reason_q[NP];
  always_ff @(posedge clk_i) begin
    if (!rst_ni) a_drop_q <= '0;
    else a_drop_q <= drop_pop;
  end
  always_ff @(posedge clk_i) begin
    for (int p = 0; p < NP; p++) a_reason_q[p] <= c_reason_q[p];
  end
  // Each drop adds one to the counter its reason names. The drops are summed per counter
  // bit-sliced: a drop is a word with one bit per counter (its reason decoded), added into
  // INC_W words that hold bit b of every counter's count. Every count bit is then a function of
  // the drops alone, a few LUT levels, and a simulator adds whole words; a reason beyond the
  // counters decodes to no bit. On a cycle without drops nothing but the clear runs.
  logic [NC-1:0] drop_plane[INC_W];  // bit c of drop_plane[b]: bit b of counter c's drops
  always_comb begin
    logic [NC-1:0] drop_carry;
    inc = '0;
    drop_carry = '0;
    for (int b = 0; b < INC_W; b++) drop_plane[b] = '0;
    if (|{a_drop_q, r3_d_q.drop}) begin
      for (int i = 0; i < 2 * NP; i++) begin
        if (i < NP) drop_carry = a_drop_q[i] ? NC'(1) << a_reason_q[i] : '0;
        else drop_carry = r3_d_q.drop[i-NP] ? NC'(1) << r3_d_q.reason[(i-NP)*REASON_W+:REASON_W] : '0;
        for (int b = 0; b < INC_W; b++) begin
          drop_plane[b] = drop_plane[b] ^ drop_carry;
          drop_carry = drop_carry & ~drop_plane[b];
        end
      end
      for (int c = 0; c < NC; c++)
        for (int b = 0; b < INC_W; b++) inc[c*INC_W+b] = drop_plane[b][c];
    end
    inc[netagg_csr_pkg::CNT_AGGREGATED*INC_W+:INC_W] = r3_d_q.n_added;
    inc[netagg_csr_pkg::CNT_COMPLETIONS*INC_W+:INC_W] =
        INC_W'(r3_valid_q && complete_now && !up_send);
    inc[netagg_csr_pkg::CNT_RESULTS_RESENT*INC_W+:INC_W] = r3_s_q.up ? '0 : r3_d_q.n_resent;
    inc[netagg_csr_pkg::CNT_SENT_TO_PARENT*INC_W+:INC_W] = INC_W'(r3_valid_q && up_send);
    inc[netagg_csr_pkg::CNT_RESENT_TO_PARENT*INC_W+:INC_W] = r3_s_q.up ? r3_d_q.n_resent : '0;
    inc[netagg_csr_pkg::CNT_RESULTS_FROM_PARENT*INC_W+:INC_W] =
        INC_W'(r3_valid_q && r3_d_q.res_take);
    // A round started over another epoch's: the group's starter took the set over.
    inc[netagg_csr_pkg::CNT_EPOCH_TAKEOVERS*INC_W+:INC_W] =
        INC_W'(r3_valid_q && r3_d_q.started && r3_c_q.other);
  end
  always_ff @(posedge clk_i) begin
    if (!rst_ni) cnt_inc_o <= '0;
    else cnt_inc_o <= inc;
  end

  // The drops popped in the previous cycle, for their notices: a port's frame is a check drop
  // or a member's drop, never both. A duplicate's round waits for the job's ranks that neither
  // the round (the stored bitmap, or none if an earlier member started it) nor the members
  // added before it in port order have.
  logic [31:0] w_base, w_added;
  always_comb begin
    w_added = '0;
    w_base = r3_s_q.bitmap;
    for (int p = 0; p < NP; p++) begin
      ntc_drop_o[p] = a_drop_q[p] || r3_d_q.drop[p];
      ntc_reason_o[p*REASON_W+:REASON_W] = a_drop_q[p] ? a_reason_q[p]
                                                         : r3_d_q.reason[p*REASON_W+:REASON_W];
      ntc_waiting_o[p*32+:32] = r3_c_q.all_mask & ~(w_base | w_added);
      if (r3_d_q.starter[p]) w_base = '0;
      if (r3_d_q.added[p]) w_added = w_added | r3_c_q.bit_r[p*32+:32];
    end
  end

  // ---- state update (D4) ---------------------------------------------------------------------
  logic [KEY_W-1:0] wkey;
  assign wkey = r3_g_q.key;

  // Whether a clear covers key k (both sets of its slot).
  function automatic logic cleared(input int unsigned k);
    cleared = clear_all_i || (32'(k >> 1) >= 32'(clear_base_i) &&
                              32'(k >> 1) - 32'(clear_base_i) < 32'(clear_count_i));
  endfunction

  // has_round and the bitmap are reset and cleared; otherwise D4 writes its key's. No write
  // happens in a cycle with a clear. The write compares the key with each constant key instead
  // of indexing by it: yosys builds an indexed part-select write as a shifter across all 4096
  // bitmap bits (about 7 500 LUTs more), the comparisons as one enable per key; a simulator
  // makes them only in cycles with a write.
  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) begin
      for (int unsigned k = 0; k < NK; k++) begin
        if (!rst_ni || cleared(k)) begin
          has_round_q[k] <= 1'b0;
          bitmap_q[32*k+:32] <= '0;
          upstream_q[k] <= 1'b0;
        end
      end
    end else if (r3_valid_q) begin
      for (int unsigned k = 0; k < NK; k++) begin
        if (wkey == KEY_W'(k)) begin
          has_round_q[k] <= f_has;
          bitmap_q[32*k+:32] <= f_bitmap;
          upstream_q[k] <= f_up;
        end
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (r3_valid_q && !clear_i) begin
      seq_q[wkey] <= f_seq;
      if (r3_d_q.started) epoch_q[wkey] <= r3_g_q.epoch;
      remaining_q[wkey] <= f_rem;
      count_q[wkey] <= f_count;
      dtype_q[wkey] <= f_dtype;
      exponent_q[wkey] <= f_exp;
      ecn_q[wkey] <= f_ecn;
      fresh_q[wkey] <= f_fresh;
      rounded_q[wkey] <= f_rounded;
    end
  end

endmodule

`default_nettype wire

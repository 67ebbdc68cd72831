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
    output logic [1:0]                                  tok_dtype_o,
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
    output logic [netagg_csr_pkg::NUM_COUNTERS*INC_W-1:0] cnt_inc_o
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
  logic [1:0] dtype_q[NK];
  logic [15:0] exponent_q[NK];
  logic [1:0] ecn_q[NK];
  logic [NK-1:0] upstream_q;  // trees: complete here, its sum sent to the parent, no result yet
  logic [NK-1:0] fresh_q;     // the round's first contribution was fresh (its sum goes up so)

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
  logic [1:0] c_dtype[NP];
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
  // against the table it leaves).
  assign drop_pop = c_valid_q & c_drop_q & ~busy & {NP{!block_i}};

  // ---- pipeline registers D1 -> D2 (r1_*), D2 -> D3 (r2_*) --------------------------------
  logic r1_valid_q, r2_valid_q, r3_valid_q, go, r1_load, r2_load;
  logic [KEY_W-1:0] r3_key_q;  // (D3 -> D4, below)
  logic [NP-1:0] r1_cand_q, r2_cand_q;
  logic [KEY_W-1:0] r1_key_q, r2_key_q;
  logic [JOB_W-1:0] r1_entry_q, r2_entry_q;
  logic [15:0] r1_job_id_q, r2_job_id_q;
  logic [NW-1:0] r1_workers_q, r2_workers_q;
  logic [BEATS_W-1:0] r1_est_q, r2_est_q;  // beats the group's token will likely take
  logic [RW-1:0] r1_rank_q[NP];  // (compared in D2)
  logic [31:0] r1_seq_q[NP], r2_seq_q[NP];
  logic [NP-1:0] r1_fresh_q, r1_recovery_q, r2_fresh_q;
  logic r1_res_q, r2_res_q;        // the group is a result from the job's parent
  logic r1_parent_q, r2_parent_q;  // the job has a parent
  logic r1_s_up_q, r2_s_up_q, r1_s_fresh_q, r2_s_fresh_q;
  logic r2_s_other_q;  // the state holds a round of another epoch than the group's
  logic [31:0] r1_epoch_q, r2_epoch_q;  // the group's epoch (every member's)
  logic [31:0] r1_s_epoch_q;
  logic [15:0] r1_count_q[NP], r2_count_q[NP];
  logic [1:0] r1_dtype_q[NP], r2_dtype_q[NP];
  logic [15:0] r1_exp_q[NP], r2_exp_q[NP];
  logic [1:0] r1_ecn_q[NP], r2_ecn_q[NP];
  logic [FI_W-1:0] r1_frame_q[NP], r2_frame_q[NP];
  // the (slot, set)'s state as D1 read it
  logic r1_s_has_q, r2_s_has_q;
  logic [31:0] r1_s_seq_q, r2_s_seq_q, r1_s_bitmap_q, r2_s_bitmap_q;
  logic [NW-1:0] r1_s_rem_q, r2_s_rem_q;
  logic [CNT_W-1:0] r1_s_count_q, r2_s_count_q;
  logic [1:0] r1_s_dtype_q, r2_s_dtype_q, r1_s_ecn_q, r2_s_ecn_q;
  logic [15:0] r1_s_exp_q, r2_s_exp_q;

  assign r2_load = !r2_valid_q || go;  // D3 is empty or done this cycle
  assign r1_load = !r1_valid_q || r2_load;
  assign busy = (r1_valid_q ? r1_cand_q : '0) | (r2_valid_q ? r2_cand_q : '0);
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
  logic [1:0] hd_dtype[NP], hd_ecn[NP];
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
  // A result from the parent is a group of its own.
  always_comb begin
    for (int p = 0; p < NP; p++)
      cand[p] = elig[p] && c_key[p] == lkey && c_entry_q[p] == lentry &&
                c_epoch[p] == c_epoch[lead] &&
                (c_result[lead] ? 32'(p) == 32'(lead) : !c_result[p]);
  end
  // A group in D2 or D3 on the same slot writes the state D1 would read.
  assign conflict = (r1_valid_q && r1_key_q[KEY_W-1:1] == lkey[KEY_W-1:1]) ||
                    (r2_valid_q && r2_key_q[KEY_W-1:1] == lkey[KEY_W-1:1]) ||
                    (r3_valid_q && r3_key_q[KEY_W-1:1] == lkey[KEY_W-1:1]);
  // Take a group only shortly before the adder pipeline can start it: heads arriving
  // meanwhile on other ports then still join it (a group taken early is summed alone).
  assign ahead = EST_W'(accum_busy_i) + (r1_valid_q ? EST_W'(r1_est_q) : '0) +
                 (r2_valid_q ? EST_W'(r2_est_q) : '0);
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

  always_ff @(posedge clk_i) begin
    if (r1_load) begin
      r1_cand_q <= cand;
      r1_key_q <= lkey;
      r1_entry_q <= lentry;
      r1_job_id_q <= c_job_id[lead];
      r1_workers_q <= c_workers_q[lead];
      r1_est_q <= BEATS_W'((32'(c_count[lead]) + 32'd15) >> 4);
      r1_epoch_q <= c_epoch[lead];
      r1_fresh_q <= c_fresh;
      r1_recovery_q <= c_recovery;
      r1_res_q <= c_result[lead];
      r1_parent_q <= c_parent_q[lead];
      r1_s_up_q <= upstream_q[lkey];
      r1_s_fresh_q <= fresh_q[lkey];
      r1_s_epoch_q <= epoch_q[lkey];
      for (int p = 0; p < NP; p++) begin
        r1_rank_q[p] <= c_rank[p];
        r1_seq_q[p] <= c_seq[p];
        r1_count_q[p] <= c_count[p];
        r1_dtype_q[p] <= c_dtype[p];
        r1_exp_q[p] <= c_exponent[p];
        r1_ecn_q[p] <= c_ecn[p];
        r1_frame_q[p] <= c_frame_q[p];
      end
      r1_s_has_q <= hd_has[lead];
      r1_s_seq_q <= hd_seq[lead];
      r1_s_bitmap_q <= hd_bitmap[lead];
      r1_s_rem_q <= hd_rem[lead];
      r1_s_count_q <= hd_count[lead];
      r1_s_dtype_q <= hd_dtype[lead];
      r1_s_exp_q <= hd_exp[lead];
      r1_s_ecn_q <= hd_ecn[lead];
    end
  end

  // ---- D2: comparisons and classes ----------------------------------------------------------
  // Each member against the state (st_*) and against each other member q that may have started
  // the round before it (pq_*, member p against member q at [p*NP + q]), and its class under
  // each of these references: what the decision table says before `remaining` and the bitmap,
  // which the members before it change, are looked at.
  localparam int unsigned CL_START = 0;  // no round: start one
  localparam int unsigned CL_STALE = 1;  // older sequence number: stale
  localparam int unsigned CL_NEWER = 2;  // newer: start (the stored round is over)
  localparam int unsigned CL_COUNT = 3;  // count_mismatch
  localparam int unsigned CL_DTYPE = 4;  // dtype_mismatch
  localparam int unsigned CL_SAME = 5;   // same round: resend, duplicate or join
  localparam int unsigned CL_EPOCH = 6;  // another epoch's round, not fresh: stale_epoch
  localparam int unsigned CL_NOROUND = 7;  // a recovery copy that would start a round: no_round
  localparam int unsigned CL_W = 8;
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
  logic locked, zero, cnt_eq, dt_eq, blocked, epoch_eq, s_has;
  logic [NP-1:0] want_start, starter_d2, res_ok;
  logic [REASON_W-1:0] res_reason[NP];

  function automatic logic [CL_W-1:0] classify(input logic has, input logic older,
                                               input logic same_seq, input logic same_count,
                                               input logic same_dtype);
    logic [CL_W-1:0] c;
    c = '0;
    if (!has) c[CL_START] = 1'b1;
    else if (older) c[CL_STALE] = 1'b1;
    else if (!same_seq) c[CL_NEWER] = 1'b1;
    else if (!same_count) c[CL_COUNT] = 1'b1;
    else if (!same_dtype) c[CL_DTYPE] = 1'b1;
    else c[CL_SAME] = 1'b1;
    classify = c;
  endfunction

  always_comb begin
    // A round of another epoch: no round for a fresh member, stale_epoch for the others.
    epoch_eq = r1_s_epoch_q == r1_epoch_q;
    s_has = r1_s_has_q && epoch_eq;
    for (int p = 0; p < NP; p++) begin
      bit_r[p] = 32'd1 << r1_rank_q[p];
      diff = r1_seq_q[p] - r1_s_seq_q;  // serial-number arithmetic: diff[31] = older
      zero = r1_seq_q[p] == r1_s_seq_q;
      cnt_eq = r1_count_q[p] == 16'(r1_s_count_q);
      dt_eq = r1_dtype_q[p] == r1_s_dtype_q;
      st_cls[p] = classify(s_has, diff[31], zero, cnt_eq, dt_eq);
      if (r1_recovery_q[p] && (st_cls[p][CL_START] || st_cls[p][CL_NEWER]))
        st_cls[p] = CL_W'(1) << CL_NOROUND;
      if (r1_s_has_q && !epoch_eq && (!r1_fresh_q[p] || r1_recovery_q[p]))
        st_cls[p] = CL_W'(1) << CL_EPOCH;
      st_dup[p] = s_has && r1_s_bitmap_q[r1_rank_q[p]];
      // A result from the parent, against the round waiting for it.
      res_ok[p] = 1'b0;
      res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      if (!r1_s_has_q) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      else if (!epoch_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE_EPOCH);
      else if (diff[31]) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE);
      else if (!zero || r1_s_rem_q != '0)
        res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_NO_ROUND);
      else if (!r1_s_up_q) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DUPLICATE);
      else if (!cnt_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_COUNT_MISMATCH);
      else if (!dt_eq) res_reason[p] = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DTYPE_MISMATCH);
      else res_ok[p] = 1'b1;
      st_gt[p] = $signed(r1_exp_q[p]) > $signed(r1_s_exp_q);
      st_lt[p] = $signed(r1_exp_q[p]) < $signed(r1_s_exp_q);
      p_beats[p] = BEATS_W'((32'(r1_count_q[p]) + 32'd15) >> 4);
      beats_nz[p] = r1_count_q[p] != '0;
      for (int q = 0; q < NP; q++) begin
        diff = r1_seq_q[p] - r1_seq_q[q];
        zero = r1_seq_q[p] == r1_seq_q[q];
        cnt_eq = r1_count_q[p] == r1_count_q[q];
        dt_eq = r1_dtype_q[p] == r1_dtype_q[q];
        pq_cls[p*NP+q] = classify(1'b1, diff[31], zero, cnt_eq, dt_eq);
        if (r1_recovery_q[p] && pq_cls[p*NP+q][CL_NEWER]) pq_cls[p*NP+q] = CL_W'(1) << CL_NOROUND;
        pq_rank_eq[p*NP+q] = r1_rank_q[p] == r1_rank_q[q];
        pq_gt[p*NP+q] = $signed(r1_exp_q[p]) > $signed(r1_exp_q[q]);
      end
    end
    s_beats = BEATS_W'((32'(r1_s_count_q) + 32'd15) >> 4);
    for (int k = 0; k <= NP; k++) begin
      rem_eq[k] = r1_s_rem_q == NW'(k);
      nw_eq[k] = r1_workers_q == NW'(k);
    end
    all_mask = (r1_workers_q >= NW'(32)) ? '1 : ((32'd1 << r1_workers_q) - 32'd1);
    locked = 1'b0;
    for (int i = 0; i < LOCK_N; i++)
      if (lock_valid_i[i] && lock_key_i[i*KEY_W+:KEY_W] == r1_key_q) locked = 1'b1;
    // The member that starts a round, if one does: the first that would start one against
    // the state, unless an earlier member joined or got a resend (no member before it changed
    // `remaining`: it is the stored one) or the (slot, set) is locked.
    blocked = locked;
    starter_d2 = '0;
    for (int p = 0; p < NP; p++) begin
      want_start[p] = st_cls[p][CL_START] || st_cls[p][CL_NEWER];
      if (r1_cand_q[p] && !r1_res_q) begin
        if (want_start[p] && !blocked) starter_d2[p] = 1'b1;
        if (want_start[p] || (st_cls[p][CL_SAME] && (rem_eq[0] || !st_dup[p]))) blocked = 1'b1;
      end
    end
  end

  // A lock seen here is still there in D3 or has gone (the group then leaves a frame at its
  // head that could have started a round: it is taken again later); no group ahead of this
  // one can add a lock on its (slot, set) (D1's conflict rule), so D3 may use `starter`.
  logic [31:0] r2_bit_r_q[NP];
  logic [CL_W-1:0] r2_st_cls_q[NP];
  /* verilator lint_off UNUSEDSIGNAL */
  logic [CL_W-1:0] r2_pq_cls_q[NP*NP];  // (the decision reads the pairs p > q ...
  logic [NP*NP-1:0] r2_pq_rank_eq_q;   // ...
  logic [NP:0] r2_nw_eq_q;             // ... and workers >= 1)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [NP-1:0] r2_st_dup_q, r2_st_gt_q, r2_st_lt_q, r2_beats_nz_q;
  logic [NP*NP-1:0] r2_pq_gt_q;
  logic [NP:0] r2_rem_eq_q;
  logic [BEATS_W-1:0] r2_beats_q[NP];
  logic [BEATS_W-1:0] r2_s_beats_q;
  logic [31:0] r2_all_mask_q;
  logic [NP-1:0] r2_starter_q, r2_res_ok_q;
  logic [REASON_W-1:0] r2_res_reason_q[NP];
  logic r2_locked_q;

  always_ff @(posedge clk_i) begin
    if (r2_load) begin
      r2_cand_q <= r1_cand_q;
      r2_key_q <= r1_key_q;
      r2_entry_q <= r1_entry_q;
      r2_job_id_q <= r1_job_id_q;
      r2_workers_q <= r1_workers_q;
      r2_est_q <= r1_est_q;
      r2_epoch_q <= r1_epoch_q;
      r2_fresh_q <= r1_fresh_q;
      r2_res_q <= r1_res_q;
      r2_parent_q <= r1_parent_q;
      r2_s_up_q <= r1_s_up_q;
      r2_s_fresh_q <= r1_s_fresh_q;
      r2_s_other_q <= r1_s_has_q && !epoch_eq;
      r2_res_ok_q <= res_ok;
      r2_locked_q <= locked;
      for (int p = 0; p < NP; p++) begin
        r2_res_reason_q[p] <= res_reason[p];
        r2_seq_q[p] <= r1_seq_q[p];
        r2_count_q[p] <= r1_count_q[p];
        r2_dtype_q[p] <= r1_dtype_q[p];
        r2_exp_q[p] <= r1_exp_q[p];
        r2_ecn_q[p] <= r1_ecn_q[p];
        r2_frame_q[p] <= r1_frame_q[p];
        r2_bit_r_q[p] <= bit_r[p];
        r2_st_cls_q[p] <= st_cls[p];
        r2_beats_q[p] <= p_beats[p];
      end
      for (int i = 0; i < NP * NP; i++) r2_pq_cls_q[i] <= pq_cls[i];
      r2_s_has_q <= r1_s_has_q;
      r2_s_seq_q <= r1_s_seq_q;
      r2_s_bitmap_q <= r1_s_bitmap_q;
      r2_s_rem_q <= r1_s_rem_q;
      r2_s_count_q <= r1_s_count_q;
      r2_s_dtype_q <= r1_s_dtype_q;
      r2_s_exp_q <= r1_s_exp_q;
      r2_s_ecn_q <= r1_s_ecn_q;
      r2_s_beats_q <= s_beats;
      r2_st_dup_q <= st_dup;
      r2_st_gt_q <= st_gt;
      r2_st_lt_q <= st_lt;
      r2_beats_nz_q <= beats_nz;
      r2_pq_rank_eq_q <= pq_rank_eq;
      r2_pq_gt_q <= pq_gt;
      r2_rem_eq_q <= rem_eq;
      r2_nw_eq_q <= nw_eq;
      r2_all_mask_q <= all_mask;
      r2_starter_q <= starter_d2;
    end
  end

  // ---- D3: the group decision ----------------------------------------------------------------
  logic hazard;
  always_comb begin
    hazard = 1'b0;
    for (int i = 0; i < HZ_N; i++)
      if (hz_valid_i[i] && hz_key_i[i*KEY_W+:KEY_W] == r2_key_q) hazard = 1'b1;
  end
  // (the queue must also hold the result D4 is pushing now)
  assign go = r2_valid_q && accum_ready_i && rq_space_i && !(rq_push_o && !rq_space2_i) &&
              !hazard;

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
  assign starter = r2_starter_q;

  always_comb begin
    for (int p = 0; p < NP; p++) begin
      after_start[p] = 1'b0;  // the starter is an earlier member
      for (int q = 0; q < p; q++) if (starter[q]) after_start[p] = 1'b1;
      cls[p] = r2_st_cls_q[p];
      for (int q = 0; q < p; q++) if (starter[q]) cls[p] = r2_pq_cls_q[p*NP+q];
      same[p] = r2_cand_q[p] && cls[p][CL_SAME] && !r2_res_q;
      // (after the starter, against the new round's bits: a new round starts from its starter's)
      would_join[p] = same[p] && !(r2_st_dup_q[p] && !after_start[p]);
    end
    for (int p = 0; p < NP; p++) begin
      joiner[p] = would_join[p];
      for (int q = 0; q < p; q++)
        if ((would_join[q] || starter[q]) && r2_pq_rank_eq_q[p*NP+q]) joiner[p] = 1'b0;
      // remaining == 0 at p: the joiners before p used up what the round needed
      ahead_joins = '0;
      for (int q = 0; q < p; q++) ahead_joins = ahead_joins + J_W'(joiner[q]);
      // (ahead_joins < NP)
      need_zero = 1'b0;
      for (int k = 0; k < NP; k++)
        if (32'(k) <= 32'(ahead_joins))
          need_zero = need_zero | (after_start[p] ? r2_nw_eq_q[k+1] : r2_rem_eq_q[k]);
      rem_zero[p] = need_zero;
      joined[p] = joiner[p] && !rem_zero[p];
      resend_cand[p] = same[p] && r2_rem_eq_q[0] && !after_start[p] && !starter[p];
    end
    for (int p = 0; p < NP; p++) begin
      // (a round waiting for the parent sends its sum up once per group)
      resent[p] = resend_cand[p];
      for (int q = 0; q < p; q++)
        if (resend_cand[q] && (r2_pq_rank_eq_q[p*NP+q] || r2_s_up_q)) resent[p] = 1'b0;
      // a result from the parent: taken unless results of the (slot, set) are queued
      res_taken[p] = r2_res_q && r2_cand_q[p] && r2_res_ok_q[p] && !r2_locked_q;
      added[p] = joined[p] || starter[p] || res_taken[p];
      round_reason[p] = '0;
      round_drop[p] = 1'b0;
      if (r2_res_q && r2_cand_q[p] && !r2_res_ok_q[p]) begin
        round_drop[p] = 1'b1;
        round_reason[p] = r2_res_reason_q[p];
      end
      if (r2_cand_q[p] && !starter[p] && !r2_res_q) begin
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
  // one), dtype.
  logic [BEATS_W-1:0] t_beats;
  logic [1:0] t_dtype;
  logic t_nonempty;
  always_comb begin
    t_beats = r2_s_beats_q;
    t_dtype = r2_s_dtype_q;
    t_nonempty = r2_s_count_q != '0;
    for (int p = 0; p < NP; p++) begin
      if (starter[p]) begin
        t_beats = r2_beats_q[p];
        t_dtype = r2_dtype_q[p];
        t_nonempty = r2_beats_nz_q[p];
      end
    end
  end

  // The decision does not wait for `go` (it is on no path through it); what it does happens
  // only with `go`.
  assign taken_pop = go ? group_pop : '0;
  assign pop_o = drop_pop | taken_pop;
  assign hold_o = (go && t_nonempty) ? added : '0;
  assign tok_valid_o = go && (acc_any || resend_any);
  assign tok_key_o = r2_key_q;
  assign tok_dtype_o = t_dtype;
  assign tok_beats_o = acc_any ? t_beats : '0;
  assign tok_new_o = new_round;
  assign tok_members_o = added;
  assign tok_result_o = rq_push_o;  // (a cycle after the token, see netagg_accum)
  always_comb begin
    for (int p = 0; p < NP; p++) tok_frames_o[p*FI_W+:FI_W] = r2_frame_q[p];
  end

  // Which frames were decided this cycle: read by the testbench (through Verilator's public
  // signals) to feed the reference model the same groups.
  logic [NP-1:0] dbg_group_pop  /* verilator public_flat_rd */;
  logic [NP-1:0] dbg_admit_pop  /* verilator public_flat_rd */;
  assign dbg_group_pop = taken_pop;
  assign dbg_admit_pop = drop_pop;

  // ---- D3 -> D4 ------------------------------------------------------------------------------
  logic r3_started_q, r3_acc_any_q, r3_resend_any_q, r3_res_take_q, r3_parent_q;
  logic r3_s_up_q, r3_s_fresh_q, r3_s_other_q;
  logic [NP-1:0] r3_fresh_q;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [NP:0] r3_nw_eq_q;  // (workers >= 1)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [NP:0] r3_rem_eq_q;
  logic [NP-1:0] r3_starter_q, r3_added_q, r3_resent_q, r3_drop_q;
  logic [REASON_W-1:0] r3_reason_q[NP];
  logic [J_W-1:0] r3_joined_q;
  logic [INC_W-1:0] r3_n_added_q, r3_n_resent_q;
  logic [JOB_W-1:0] r3_entry_q;
  logic [15:0] r3_job_id_q, r3_s_exp_q;
  logic [NW-1:0] r3_workers_q, r3_s_rem_q;
  logic [31:0] r3_seq_q[NP];
  logic [15:0] r3_count_q[NP];
  logic [1:0] r3_dtype_q[NP];
  logic [15:0] r3_exp_q[NP];
  logic [1:0] r3_ecn_q[NP];
  logic [31:0] r3_bit_r_q[NP];
  logic r3_s_has_q;
  logic [31:0] r3_epoch_q;
  logic [31:0] r3_s_seq_q, r3_s_bitmap_q, r3_all_mask_q;
  logic [CNT_W-1:0] r3_s_count_q;
  logic [1:0] r3_s_dtype_q, r3_s_ecn_q;
  logic [NP-1:0] r3_st_gt_q, r3_st_lt_q;
  logic [NP*NP-1:0] r3_pq_gt_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      r3_valid_q <= 1'b0;
    end else begin
      r3_valid_q <= go;
    end
  end
  always_ff @(posedge clk_i) begin
    r3_started_q <= started;
    r3_res_take_q <= res_take;
    r3_parent_q <= r2_parent_q;
    r3_s_up_q <= r2_s_up_q;
    r3_s_fresh_q <= r2_s_fresh_q;
    r3_s_other_q <= r2_s_other_q;
    r3_fresh_q <= r2_fresh_q;
    r3_acc_any_q <= acc_any;
    r3_resend_any_q <= resend_any;
    r3_rem_eq_q <= r2_rem_eq_q;
    r3_nw_eq_q <= r2_nw_eq_q;
    r3_starter_q <= starter;
    r3_added_q <= added;
    r3_resent_q <= resent;
    r3_drop_q <= go ? round_drop : '0;
    r3_joined_q <= n_joined;
    r3_n_added_q <= go ? INC_W'(n_added) : '0;
    r3_n_resent_q <= go ? INC_W'(n_resent) : '0;
    r3_key_q <= r2_key_q;
    r3_entry_q <= r2_entry_q;
    r3_job_id_q <= r2_job_id_q;
    r3_workers_q <= r2_workers_q;
    r3_s_rem_q <= r2_s_rem_q;
    r3_s_exp_q <= r2_s_exp_q;
    r3_s_has_q <= r2_s_has_q;
    r3_epoch_q <= r2_epoch_q;
    r3_s_seq_q <= r2_s_seq_q;
    r3_s_bitmap_q <= r2_s_bitmap_q;
    r3_all_mask_q <= r2_all_mask_q;
    r3_s_count_q <= r2_s_count_q;
    r3_s_dtype_q <= r2_s_dtype_q;
    r3_s_ecn_q <= r2_s_ecn_q;
    r3_st_gt_q <= r2_st_gt_q;
    r3_st_lt_q <= r2_st_lt_q;
    r3_pq_gt_q <= r2_pq_gt_q;
    for (int p = 0; p < NP; p++) begin
      r3_reason_q[p] <= round_reason[p];
      r3_seq_q[p] <= r2_seq_q[p];
      r3_count_q[p] <= r2_count_q[p];
      r3_dtype_q[p] <= r2_dtype_q[p];
      r3_exp_q[p] <= r2_exp_q[p];
      r3_ecn_q[p] <= r2_ecn_q[p];
      r3_bit_r_q[p] <= r2_bit_r_q[p];
    end
  end

  // ---- D4: the (slot, set)'s new state, the result, the counters -----------------------------
  logic f_has, state_win, f_up, f_fresh, up_send, up_resend;
  logic [31:0] f_seq, f_bitmap, added_ranks, resend_mask;
  logic [NW-1:0] f_rem;
  logic [CNT_W-1:0] f_count;
  logic [1:0] f_dtype, f_ecn;
  logic [15:0] f_exp;
  logic [J_W-1:0] r3_next;
  always_comb begin
    r3_next = r3_joined_q + 1'b1;
    // (the parent's result completes the round waiting for it)
    complete_now = r3_res_take_q || (r3_acc_any_q && (r3_started_q ? r3_nw_eq_q[r3_next] :
                                                                       r3_rem_eq_q[r3_joined_q]));
    f_has = r3_s_has_q || r3_started_q;
    f_seq = r3_s_seq_q;
    f_count = r3_s_count_q;
    f_dtype = r3_s_dtype_q;
    f_ecn = r3_started_q ? 2'b00 : r3_s_ecn_q;
    f_rem = r3_started_q ? r3_workers_q - 1'b1 : r3_s_rem_q;
    added_ranks = '0;
    resend_mask = '0;
    f_fresh = r3_s_fresh_q;
    for (int p = 0; p < NP; p++) begin
      if (r3_starter_q[p]) begin
        f_seq = r3_seq_q[p];
        f_count = CNT_W'(r3_count_q[p]);
        f_dtype = r3_dtype_q[p];
        f_fresh = r3_fresh_q[p];
      end
      if (r3_added_q[p]) begin
        if (!r3_res_take_q) added_ranks = added_ranks | r3_bit_r_q[p];
        f_ecn = f_ecn | r3_ecn_q[p];
      end
      if (r3_resent_q[p]) resend_mask = resend_mask | r3_bit_r_q[p];
    end
    f_rem = f_rem - NW'(r3_joined_q);
    // A new round starts from an empty bitmap (the bits are an earlier round's). The other set's
    // bitmap is left alone: after a restart it may hold a round its members still add to.
    f_bitmap = (r3_started_q ? '0 : r3_s_bitmap_q) | added_ranks;
    // The exponent: the signed max of the stored one (unless a round started) and the added
    // members'. Every candidate nothing beats is a max; equal maxima are equal bits.
    state_win = !r3_started_q;
    for (int p = 0; p < NP; p++) begin
      if (r3_added_q[p] && r3_st_gt_q[p]) state_win = 1'b0;
      exp_win[p] = r3_added_q[p] && !(!r3_started_q && r3_st_lt_q[p]);
      for (int q = 0; q < NP; q++)
        if (q != p && r3_added_q[q] && r3_pq_gt_q[q*NP+p]) exp_win[p] = 1'b0;
    end
    f_exp = state_win ? r3_s_exp_q : '0;
    for (int p = 0; p < NP; p++) if (exp_win[p]) f_exp = f_exp | r3_exp_q[p];
    // The parent's result: its exponent is the round's.
    if (r3_res_take_q) begin
      f_exp = '0;
      for (int p = 0; p < NP; p++) if (r3_added_q[p]) f_exp = r3_exp_q[p];
    end
    // Trees: a completed round of a job with a parent sends its sum up and waits; a
    // retransmission to a waiting round sends it again; the parent's result ends the wait.
    up_send = complete_now && r3_parent_q && !r3_res_take_q;
    up_resend = r3_resend_any_q && r3_s_up_q;
    f_up = r3_started_q ? 1'b0 : r3_s_up_q;
    if (up_send) f_up = 1'b1;
    if (r3_res_take_q) f_up = 1'b0;
  end

  netagg_agg_pkg::result_t result;
  always_comb begin
    result = '0;
    result.slot = 16'(r3_key_q[KEY_W-1:1]);
    result.set_bit = r3_key_q[0];
    result.entry = 8'(r3_entry_q);
    result.job_id = r3_job_id_q;
    result.dtype = f_dtype;
    result.count = 16'(f_count);
    result.exponent = f_exp;
    result.seq = f_seq;
    result.epoch = r3_epoch_q;  // the group's: a completion or resend is of a round of it
    result.ecn = f_ecn;
    result.dest = complete_now ? r3_all_mask_q : resend_mask;
    result.up = up_send || up_resend;
    result.fresh = f_fresh;
  end
  assign rq_push_o = r3_valid_q && (complete_now || r3_resend_any_q);
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
    if (|{a_drop_q, r3_drop_q}) begin
      for (int i = 0; i < 2 * NP; i++) begin
        if (i < NP) drop_carry = a_drop_q[i] ? NC'(1) << a_reason_q[i] : '0;
        else drop_carry = r3_drop_q[i-NP] ? NC'(1) << r3_reason_q[i-NP] : '0;
        for (int b = 0; b < INC_W; b++) begin
          drop_plane[b] = drop_plane[b] ^ drop_carry;
          drop_carry = drop_carry & ~drop_plane[b];
        end
      end
      for (int c = 0; c < NC; c++)
        for (int b = 0; b < INC_W; b++) inc[c*INC_W+b] = drop_plane[b][c];
    end
    inc[netagg_csr_pkg::CNT_AGGREGATED*INC_W+:INC_W] = r3_n_added_q;
    inc[netagg_csr_pkg::CNT_COMPLETIONS*INC_W+:INC_W] =
        INC_W'(r3_valid_q && complete_now && !up_send);
    inc[netagg_csr_pkg::CNT_RESULTS_RESENT*INC_W+:INC_W] = r3_s_up_q ? '0 : r3_n_resent_q;
    inc[netagg_csr_pkg::CNT_SENT_TO_PARENT*INC_W+:INC_W] = INC_W'(r3_valid_q && up_send);
    inc[netagg_csr_pkg::CNT_RESENT_TO_PARENT*INC_W+:INC_W] = r3_s_up_q ? r3_n_resent_q : '0;
    inc[netagg_csr_pkg::CNT_RESULTS_FROM_PARENT*INC_W+:INC_W] =
        INC_W'(r3_valid_q && r3_res_take_q);
    // A round started over another epoch's: the group's starter took the set over.
    inc[netagg_csr_pkg::CNT_EPOCH_TAKEOVERS*INC_W+:INC_W] =
        INC_W'(r3_valid_q && r3_started_q && r3_s_other_q);
  end
  always_ff @(posedge clk_i) begin
    if (!rst_ni) cnt_inc_o <= '0;
    else cnt_inc_o <= inc;
  end

  // ---- state update (D4) ---------------------------------------------------------------------
  logic [KEY_W-1:0] wkey;
  assign wkey = r3_key_q;

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
      if (r3_started_q) epoch_q[wkey] <= r3_epoch_q;
      remaining_q[wkey] <= f_rem;
      count_q[wkey] <= f_count;
      dtype_q[wkey] <= f_dtype;
      exponent_q[wkey] <= f_exp;
      ecn_q[wkey] <= f_ecn;
      fresh_q[wkey] <= f_fresh;
    end
  end

endmodule

`default_nettype wire

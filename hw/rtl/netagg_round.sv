// Round decisions and the slot state of every (slot, set): the switch model's algorithm
// (sim/switch/README.md) plus dtype_mismatch, see docs/fpga-aggregator.md. Each cycle:
//
//  - every port whose head failed a check (netagg_admit) is popped and counted;
//  - among the eligible heads one group is taken: the leader is the first eligible port from a
//    round-robin pointer, the group all eligible heads with the leader's (slot, set) and job.
//    Its members are decided one after the other in port order against the state as the
//    members before them left it (one cycle, so the next group sees the result). A member that
//    would start a new round or get a resend after an earlier member was added, get a resend
//    its rank already gets in this group, or start a new round while that (slot, set) still
//    has result frames queued, stays at its port's head.
//  - the added members become one token for the adder pipeline (netagg_accum), which sums them
//    in port order and adds the sum to the accumulators or stores it (new round); a completed
//    round or resends push one result (all workers, or the resending ranks) to the replication
//    queue, released when the token leaves the pipeline.
//
// The slot state lives in flip-flops so that a decision sees the previous cycle's updates and
// a job's slots are cleared in one cycle.
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
    // port heads (flat, port p at [p*W +: W])
    input  logic [NUM_PORTS-1:0]                        drop_i,    // failed a check ...
    input  logic [NUM_PORTS*netagg_agg_pkg::REASON_W-1:0] reason_i,  // ... this one
    input  logic [NUM_PORTS-1:0]                        eligible_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::DESC_W-1:0] desc_i,
    input  logic [NUM_PORTS*FI_W-1:0]                   frame_i,   // buffer entry of the head
    input  logic [NUM_PORTS*JOB_W-1:0]                  entry_i,   // job table entry
    input  logic [NUM_PORTS*netagg_agg_pkg::NWORKERS_W-1:0] workers_i,
    output logic [NUM_PORTS-1:0]                        pop_o,
    output logic [NUM_PORTS-1:0]                        hold_o,    // popped, payload read later
    // adder pipeline
    input  logic                                        accum_ready_i,
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
    input  logic                                        rq_space_i,
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

  // ---- slot state ------------------------------------------------------------------------
  logic [NK-1:0] has_round_q;
  logic [31:0] seq_q[NK];
  logic [31:0] bitmap_q[NK];
  logic [NW-1:0] remaining_q[NK];
  logic [CNT_W-1:0] count_q[NK];
  logic [1:0] dtype_q[NK];
  logic [15:0] exponent_q[NK];
  logic [1:0] ecn_q[NK];

  // ---- the heads' fields -------------------------------------------------------------------
  logic [KEY_W-1:0] p_key[NUM_PORTS];
  logic [SLOT_W-1:0] p_slot[NUM_PORTS];
  logic [RW-1:0] p_rank[NUM_PORTS];
  logic [31:0] p_seq[NUM_PORTS];
  logic [15:0] p_count[NUM_PORTS];
  logic [1:0] p_dtype[NUM_PORTS];
  logic [15:0] p_exponent[NUM_PORTS];
  logic [1:0] p_ecn[NUM_PORTS];
  logic [15:0] p_job_id[NUM_PORTS];
  logic [JOB_W-1:0] p_entry[NUM_PORTS];
  logic [NW-1:0] p_workers[NUM_PORTS];
  // One head at a time (yosys takes no structs in generate blocks); the checks read the rest.
  /* verilator lint_off UNUSEDSIGNAL */
  netagg_agg_pkg::desc_t d;
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    for (int p = 0; p < NUM_PORTS; p++) begin
      d = desc_i[p*DESC_W+:DESC_W];
      p_slot[p] = d.slot[SLOT_W-1:0];
      p_key[p] = {d.slot[SLOT_W-1:0], d.set_bit};
      p_rank[p] = d.rank[RW-1:0];
      p_seq[p] = d.seq;
      p_count[p] = d.count;
      p_dtype[p] = d.dtype;
      p_exponent[p] = d.exponent;
      p_ecn[p] = d.ecn;
      p_job_id[p] = d.job_id;
      p_entry[p] = entry_i[p*JOB_W+:JOB_W];
      p_workers[p] = workers_i[p*NW+:NW];
    end
  end
  // ---- leader and stall --------------------------------------------------------------------
  logic [PI_W-1:0] rr_q, lead;
  logic lead_found, hazard, locked, take;
  logic [KEY_W-1:0] lkey, okey;
  int unsigned idx;

  always_comb begin
    lead_found = 1'b0;
    lead = '0;
    for (int k = 0; k < NUM_PORTS; k++) begin
      idx = 32'(rr_q) + 32'(k);
      if (idx >= NUM_PORTS) idx = idx - NUM_PORTS;
      if (!lead_found && eligible_i[idx]) begin
        lead_found = 1'b1;
        lead = PI_W'(idx);
      end
    end
  end

  assign lkey = p_key[lead];
  assign okey = lkey ^ KEY_W'(1);  // the slot's other set

  always_comb begin
    hazard = 1'b0;
    for (int i = 0; i < HZ_N; i++)
      if (hz_valid_i[i] && hz_key_i[i*KEY_W+:KEY_W] == lkey) hazard = 1'b1;
    locked = 1'b0;
    for (int i = 0; i < LOCK_N; i++)
      if (lock_valid_i[i] && lock_key_i[i*KEY_W+:KEY_W] == lkey) locked = 1'b1;
  end

  assign take = lead_found && !block_i && accum_ready_i && rq_space_i && !hazard;

  // ---- the group decision ------------------------------------------------------------------
  logic s_has;
  logic [31:0] s_seq, s_bitmap, o_bitmap, bit_r, age;
  logic [NW-1:0] s_remaining, n_workers;
  logic [CNT_W-1:0] s_count;
  logic [1:0] s_dtype, s_ecn;
  logic [15:0] s_exponent;
  logic acc_any, new_round, resend_any, complete_now;
  logic [31:0] resend_mask, all_mask;
  logic [NUM_PORTS-1:0] member, added, group_pop, round_drop;
  logic [REASON_W-1:0] round_reason[NUM_PORTS];
  logic start, join_round, resend, drop;
  logic [REASON_W-1:0] why;
  logic [3:0] n_added, n_resent;

  always_comb begin
    s_has = has_round_q[lkey];
    s_seq = seq_q[lkey];
    s_bitmap = bitmap_q[lkey];
    s_remaining = remaining_q[lkey];
    s_count = count_q[lkey];
    s_dtype = dtype_q[lkey];
    s_exponent = exponent_q[lkey];
    s_ecn = ecn_q[lkey];
    o_bitmap = bitmap_q[okey];
    n_workers = p_workers[lead];
    acc_any = 1'b0;
    new_round = 1'b0;
    resend_any = 1'b0;
    resend_mask = '0;
    member = '0;
    added = '0;
    group_pop = '0;
    round_drop = '0;
    n_added = '0;
    n_resent = '0;
    for (int p = 0; p < NUM_PORTS; p++) begin
      round_reason[p] = '0;
      member[p] = take && eligible_i[p] && p_key[p] == lkey && p_entry[p] == p_entry[lead];
      bit_r = 32'd1 << p_rank[p];
      age = p_seq[p] - s_seq;  // serial-number arithmetic: age[31] = older
      start = 1'b0;
      join_round = 1'b0;
      resend = 1'b0;
      drop = 1'b0;
      why = '0;
      if (!s_has) start = 1'b1;
      else if (age[31]) begin
        drop = 1'b1;
        why = REASON_W'(netagg_csr_pkg::CNT_DROPPED_STALE);
      end else if (age != 0 && s_remaining != 0) begin
        drop = 1'b1;
        why = REASON_W'(netagg_csr_pkg::CNT_DROPPED_AHEAD);
      end else if (age != 0) start = 1'b1;  // the set's round is complete: its next round
      else if (p_count[p] != 16'(s_count)) begin
        drop = 1'b1;
        why = REASON_W'(netagg_csr_pkg::CNT_DROPPED_COUNT_MISMATCH);
      end else if (p_dtype[p] != s_dtype) begin
        drop = 1'b1;
        why = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DTYPE_MISMATCH);
      end else if (s_remaining == 0) resend = 1'b1;
      else if ((s_bitmap & bit_r) != 0) begin
        drop = 1'b1;
        why = REASON_W'(netagg_csr_pkg::CNT_DROPPED_DUPLICATE);
      end else join_round = 1'b1;

      // Decide, or leave at the head (see the module comment): only members change anything.
      if (member[p]) begin
        if (start) begin
          if (!acc_any && !resend_any && !locked) begin
            s_has = 1'b1;
            s_seq = p_seq[p];
            s_bitmap = s_bitmap | bit_r;
            s_remaining = n_workers - 1'b1;
            s_count = CNT_W'(p_count[p]);
            s_dtype = p_dtype[p];
            s_exponent = p_exponent[p];
            s_ecn = p_ecn[p];
            o_bitmap = o_bitmap & ~bit_r;
            acc_any = 1'b1;
            new_round = 1'b1;
            added[p] = 1'b1;
          end
        end else if (join_round) begin
          s_bitmap = s_bitmap | bit_r;
          s_remaining = s_remaining - 1'b1;
          if ($signed(p_exponent[p]) > $signed(s_exponent)) s_exponent = p_exponent[p];
          s_ecn = s_ecn | p_ecn[p];
          o_bitmap = o_bitmap & ~bit_r;
          acc_any = 1'b1;
          added[p] = 1'b1;
        end else if (resend) begin
          // (a second copy from the same rank gets its own result frame in a later group)
          if (!acc_any && (resend_mask & bit_r) == 0) begin
            resend_any = 1'b1;
            resend_mask = resend_mask | bit_r;
            n_resent = n_resent + 1'b1;
            group_pop[p] = 1'b1;
          end
        end else if (drop) begin
          round_drop[p] = 1'b1;
          round_reason[p] = why;
        end
        if (added[p]) n_added = n_added + 1'b1;
        if (added[p] || round_drop[p]) group_pop[p] = 1'b1;
      end
    end
    complete_now = acc_any && s_remaining == 0;
    all_mask = (n_workers >= NW'(32)) ? '1 : ((32'd1 << n_workers) - 32'd1);
  end

  // ---- outputs -----------------------------------------------------------------------------
  netagg_agg_pkg::result_t result;
  always_comb begin
    result = '0;
    result.slot = 16'(p_slot[lead]);
    result.set_bit = lkey[0];
    result.entry = 8'(p_entry[lead]);
    result.job_id = p_job_id[lead];
    result.dtype = s_dtype;
    result.count = 16'(s_count);
    result.exponent = s_exponent;
    result.seq = s_seq;
    result.ecn = s_ecn;
    result.dest = complete_now ? all_mask : resend_mask;
  end

  assign pop_o = (block_i ? '0 : drop_i) | group_pop;
  assign hold_o = added & {NUM_PORTS{s_count != 0}};
  assign tok_valid_o = acc_any || resend_any;
  assign tok_key_o = lkey;
  assign tok_dtype_o = s_dtype;
  assign tok_beats_o = acc_any ? BEATS_W'((32'(s_count) + 32'd15) >> 4) : '0;
  assign tok_new_o = new_round;
  assign tok_members_o = added;
  assign tok_frames_o = frame_i;
  assign tok_result_o = complete_now || resend_any;
  assign rq_push_o = complete_now || resend_any;
  assign rq_data_o = result;

  // Which frames were decided this cycle: read by the testbench (through Verilator's public
  // signals) to feed the reference model the same groups.
  logic [NUM_PORTS-1:0] dbg_group_pop  /* verilator public_flat_rd */;
  logic [NUM_PORTS-1:0] dbg_admit_pop  /* verilator public_flat_rd */;
  assign dbg_group_pop = group_pop;
  assign dbg_admit_pop = block_i ? '0 : drop_i;

  // ---- counters ----------------------------------------------------------------------------
  always_comb begin
    cnt_inc_o = '0;
    for (int c = 0; c < NC; c++) begin
      for (int p = 0; p < NUM_PORTS; p++) begin
        if (!block_i && drop_i[p] && reason_i[p*REASON_W+:REASON_W] == REASON_W'(c))
          cnt_inc_o[c*INC_W+:INC_W] = cnt_inc_o[c*INC_W+:INC_W] + 1'b1;
        if (round_drop[p] && round_reason[p] == REASON_W'(c))
          cnt_inc_o[c*INC_W+:INC_W] = cnt_inc_o[c*INC_W+:INC_W] + 1'b1;
      end
    end
    cnt_inc_o[netagg_csr_pkg::CNT_AGGREGATED*INC_W+:INC_W] = INC_W'(n_added);
    cnt_inc_o[netagg_csr_pkg::CNT_COMPLETIONS*INC_W+:INC_W] = INC_W'(complete_now);
    cnt_inc_o[netagg_csr_pkg::CNT_RESULTS_RESENT*INC_W+:INC_W] = INC_W'(n_resent);
  end

  // ---- state update ------------------------------------------------------------------------
  logic [NK-1:0] clear_mask;
  always_comb begin
    for (int k = 0; k < NK; k++)
      clear_mask[k] = clear_all_i ||
                      (32'(k >> 1) >= 32'(clear_base_i) &&
                       32'(k >> 1) - 32'(clear_base_i) < 32'(clear_count_i));
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) rr_q <= '0;
    else if (take && !clear_i) rr_q <= (32'(lead) + 1 >= NUM_PORTS) ? '0 : lead + 1'b1;
  end

  // has_round and the bitmap are reset and cleared; one always block per (slot, set).
  for (genvar k = 0; k < NK; k++) begin : gen_state
    always_ff @(posedge clk_i) begin
      if (!rst_ni || (clear_i && clear_mask[k])) begin
        has_round_q[k] <= 1'b0;
        bitmap_q[k] <= '0;
      end else if (take && !clear_i) begin
        if (lkey == KEY_W'(k)) begin
          has_round_q[k] <= s_has;
          bitmap_q[k] <= s_bitmap;
        end else if (okey == KEY_W'(k)) begin
          bitmap_q[k] <= o_bitmap;
        end
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (take && !clear_i) begin
      seq_q[lkey] <= s_seq;
      remaining_q[lkey] <= s_remaining;
      count_q[lkey] <= s_count;
      dtype_q[lkey] <= s_dtype;
      exponent_q[lkey] <= s_exponent;
      ecn_q[lkey] <= s_ecn;
    end
  end

endmodule

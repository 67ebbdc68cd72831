// SPDX-License-Identifier: Apache-2.0
// The adder pipeline: streams the payload beats of a group (a token of netagg_round) from the
// ports' ingress buffers through the adder tree and into the slot's accumulators, one
// accumulator beat a cycle. Stages (cycle offsets from S0, the beat's first cycle):
//
//   S0            read the members' ingress buffers (wire beat = accumulator beat, bf16: half)
//   S1            big-endian elements -> lanes (bf16 widened to fp32), registered
//   S2            into the adder tree
//   S1+TL-1       read the accumulator beat             (TL = 1 + the tree's latency)
//   S1+TL         tree sum; accumulator + sum (or the sum alone for a new round)
//   S1+TL+STAGES  write the accumulator beat; the token's last beat releases its result
//
// Exact fp32 (EXACT, dtypes fp32_exact and exact_lanes; docs/exact-fp32.md): in S1 each
// fp32_exact element enters netagg_exact_to_lane at the token's scale (its lane two cycles
// later), an exact_lanes wire beat (8 lanes) is decoded, and every second one is joined with
// the one before into a beat of 16 lanes (the token streams wire beats; it writes on the odd
// ones and on its last); netagg_exact_tree adds the ports' lanes as integers, with the fp32
// tree's latency; the accumulate stage adds 64 bits and ORs the specials. The memory beat is
// {specials, high halves, low halves} (32 + 512 + 512 bits; the other dtypes use the low
// halves). Every written beat is also rounded to fp32 (netagg_exact_to_fp32, RND cycles) into
// the rounded bank, which results read; a token's release waits for that (RND cycles for every
// dtype, so results stay in order).
//
// Read-modify-write hazard: a token's beat j reads the accumulator STAGES + 1 cycles before the
// previous token's beat j is written. netagg_round therefore does not start a token on a
// (slot, set) whose earlier token started fewer than STAGES + 2 cycles before (hz_*). Tokens of
// MAX_BEATS-long packets never wait; short packets to the same (slot, set) back to back do.
`default_nettype none

module netagg_accum #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned SLOTS = 64,
    parameter int unsigned MAX_BEATS = 16,
    parameter int unsigned FI_W = 1,     // ingress buffer entry bits
    parameter int unsigned STAGES = 3,   // fp32 add latency
    parameter bit EXACT = 1'b1,          // the exact fp32 datapath
    // derived, do not change
    parameter int unsigned SLOT_W = $clog2(SLOTS),
    parameter int unsigned KEY_W = SLOT_W + 1,
    parameter int unsigned BEATS_W = $clog2(MAX_BEATS + 1),
    parameter int unsigned BI_W = (MAX_BEATS > 1) ? $clog2(MAX_BEATS) : 1,
    parameter int unsigned MA_W = $clog2(2 * SLOTS * MAX_BEATS),
    parameter int unsigned HZ_N = STAGES + 1,
    parameter int unsigned MEM_W = EXACT ? 2 * netagg_agg_pkg::BEAT_W + 2 * netagg_agg_pkg::LANES
                                         : netagg_agg_pkg::BEAT_W
) (
    input  logic                                        clk_i,
    input  logic                                        rst_ni,
    // token from netagg_round
    input  logic                                        tok_valid_i,
    input  logic [KEY_W-1:0]                            tok_key_i,
    input  logic [2:0]                                  tok_dtype_i,
    input  logic [7:0]                                  tok_scale_i,  // exact: scale code
    input  logic [15:0]                                 tok_count_i,
    input  logic [BEATS_W-1:0]                          tok_beats_i,
    input  logic                                        tok_new_i,
    input  logic [NUM_PORTS-1:0]                        tok_members_i,
    input  logic [NUM_PORTS*FI_W-1:0]                   tok_frames_i,
    input  logic                                        tok_result_i, // a cycle later
    output logic                                        ready_o,      // takes a token now
    output logic [BEATS_W-1:0]                          busy_o,       // cycles until ready_o
    output logic [HZ_N-1:0]                             hz_valid_o,
    output logic [HZ_N*KEY_W-1:0]                       hz_key_o,
    // ingress buffers
    output logic [NUM_PORTS-1:0]                        rd_en_o,
    output logic [NUM_PORTS*FI_W-1:0]                   rd_frame_o,
    output logic [BI_W-1:0]                             rd_beat_o,
    input  logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0] rd_data_i,
    output logic [NUM_PORTS-1:0]                        free_o,
    output logic [NUM_PORTS*FI_W-1:0]                   free_frame_o,
    // accumulators
    output logic                                        mem_re_o,
    output logic [MA_W-1:0]                             mem_raddr_o,
    input  logic [MEM_W-1:0]                            mem_rdata_i,
    output logic                                        mem_we_o,
    output logic [MA_W-1:0]                             mem_waddr_o,
    output logic [MEM_W-1:0]                            mem_wdata_o,
    // exact: the rounded bank (fp32 of every written beat's lanes)
    output logic                                        rnd_we_o,
    output logic [MA_W-1:0]                             rnd_waddr_o,
    output logic [netagg_agg_pkg::BEAT_W-1:0]           rnd_wdata_o,
    output logic [6:0]                                  oor_inc_o,    // exact_out_of_range
    // status
    output logic                                        release_o,    // a result may leave
    output logic                                        empty_o
);
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned LANES = netagg_agg_pkg::LANES;
  localparam int unsigned LEVELS = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 0;
  localparam int unsigned TL = 1 + LEVELS * STAGES;  // lane register, tree
  localparam int unsigned DEPTH = 1 + TL + STAGES;  // S1 .. write stage
  localparam logic [2:0] DT_INT32 = 3'(netagg_pkg::DTYPE_INT32);
  localparam logic [2:0] DT_BF16 = 3'(netagg_pkg::DTYPE_BF16);
  localparam logic [2:0] DT_EXACT = 3'(netagg_pkg::DTYPE_FP32_EXACT);
  localparam logic [2:0] DT_LANES = 3'(netagg_pkg::DTYPE_EXACT_LANES);
  localparam int unsigned LW = LANES * 66;  // a beat of exact lanes {special, lane}
  localparam int unsigned RND = EXACT ? 4 : 0;  // rounding stages after the write
  // (the exact lanes reach the tree two cycles after S1, one after the fp32 lanes)
  localparam int unsigned XT_LAT = LEVELS * STAGES - 1;

  if (EXACT && LEVELS * STAGES < LEVELS + 1) begin : gen_bad_exact
    $error("netagg_accum: EXACT needs an adder tree with room for the conversion (NUM_PORTS > 1)");
  end

  // Sideband of a beat, flat: valid, write, new round, release, dtype, key, beat, members,
  // exact: the scale as an int16 exponent (none: 16'h8000), the smallest biased fp32 exponent
  // out of its range (e + 127), the elements of the beat (0..16), the wire beat's half
  // (exact_lanes: lanes 8..15), whether it is read only (exact_lanes: the first of a pair).
  localparam int unsigned SB_VALID = 0;
  localparam int unsigned SB_WE = 1;
  localparam int unsigned SB_NEW = 2;
  localparam int unsigned SB_REL = 3;
  localparam int unsigned SB_DT = 4;
  localparam int unsigned SB_KEY = 7;
  localparam int unsigned SB_BEAT = SB_KEY + KEY_W;
  localparam int unsigned SB_MEM = SB_BEAT + BI_W;
  localparam int unsigned SB_E = SB_MEM + NP;
  localparam int unsigned SB_THR = SB_E + 16;
  localparam int unsigned SB_NL = SB_THR + 9;
  localparam int unsigned SB_HALF = SB_NL + 5;
  localparam int unsigned SB_RD = SB_HALF + 1;
  localparam int unsigned SB_W = SB_RD + 1;

  // ---- S0: the token being streamed ----------------------------------------------------------
  logic tok_valid_q, tok_new_q, tok_result_q, tok_first_q, tok_result;
  logic [KEY_W-1:0] tok_key_q;
  logic [2:0] tok_dtype_q;
  logic [7:0] tok_scale_q;
  logic [15:0] tok_count_q;
  logic [BEATS_W-1:0] tok_beats_q;
  logic [NP-1:0] tok_members_q;
  logic [NP*FI_W-1:0] tok_frames_q;
  logic [BI_W-1:0] beat_q;
  logic last, s0_we;
  logic [SB_W-1:0] s0;

  assign last = (tok_beats_q <= BEATS_W'(1)) || (BEATS_W'(beat_q) == tok_beats_q - 1'b1);
  assign ready_o = !tok_valid_q || last;
  always_comb begin
    if (!tok_valid_q) busy_o = '0;
    else if (tok_beats_q <= BEATS_W'(1)) busy_o = BEATS_W'(1);
    else busy_o = tok_beats_q - BEATS_W'(beat_q);
  end
  assign s0_we = tok_valid_q && tok_beats_q != '0;

  // Whether the token releases a result comes a cycle after the token (netagg_round decides
  // it behind the token's other fields), in the token's first cycle here.
  assign tok_result = tok_first_q ? tok_result_i : tok_result_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) tok_first_q <= 1'b0;
    else tok_first_q <= ready_o && tok_valid_i;
  end
  always_ff @(posedge clk_i) if (tok_first_q) tok_result_q <= tok_result_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      tok_valid_q <= 1'b0;
      beat_q <= '0;
    end else if (ready_o) begin
      tok_valid_q <= tok_valid_i;
      beat_q <= '0;
    end else begin
      beat_q <= beat_q + 1'b1;
    end
  end

  always_ff @(posedge clk_i) begin
    if (ready_o && tok_valid_i) begin
      tok_key_q <= tok_key_i;
      tok_dtype_q <= tok_dtype_i;
      tok_scale_q <= tok_scale_i;
      tok_count_q <= tok_count_i;
      tok_beats_q <= tok_beats_i;
      tok_new_q <= tok_new_i;
      tok_members_q <= tok_members_i;
      tok_frames_q <= tok_frames_i;
    end
  end

  // An exact_lanes token streams wire beats, two an accumulator beat: the first of a pair is
  // read and held (SB_RD), the second (or a last one alone) written.
  logic s0_lanes, s0_hold;
  logic [15:0] s0_e;
  assign s0_e = netagg_agg_pkg::exact_exponent(tok_scale_q);
  logic [15:0] s0_done;  // elements of the beats before this accumulator beat
  assign s0_lanes = EXACT && tok_dtype_q == DT_LANES;
  assign s0_hold = s0_lanes && !beat_q[0] && !last;
  assign s0_done = 16'((s0_lanes ? (32'(beat_q) >> 1) : 32'(beat_q)) << 4);
  always_comb begin
    s0 = '0;
    s0[SB_VALID] = tok_valid_q;
    s0[SB_WE] = s0_we && !s0_hold;
    s0[SB_NEW] = tok_new_q;
    s0[SB_REL] = tok_valid_q && tok_result && last;
    s0[SB_DT+:3] = tok_dtype_q;
    s0[SB_KEY+:KEY_W] = tok_key_q;
    s0[SB_BEAT+:BI_W] = s0_lanes ? (beat_q >> 1) : beat_q;
    s0[SB_MEM+:NP] = tok_members_q;
    s0[SB_E+:16] = s0_e;
    s0[SB_THR+:9] = 9'(s0_e + 16'd127);
    s0[SB_NL+:5] = (tok_count_q <= s0_done) ? 5'd0
                 : (tok_count_q - s0_done >= 16'd16) ? 5'd16 : 5'(tok_count_q - s0_done);
    s0[SB_HALF] = s0_lanes && beat_q[0];
    s0[SB_RD] = s0_we && s0_hold;
  end

  assign rd_en_o = s0_we ? tok_members_q : '0;
  assign rd_frame_o = tok_frames_q;
  assign rd_beat_o = (tok_dtype_q == DT_BF16) ? (beat_q >> 1) : beat_q;
  assign free_o = (s0_we && last) ? tok_members_q : '0;
  assign free_frame_o = tok_frames_q;

  // ---- sideband pipeline: stage i (1..DEPTH) at [(i-1)*SB_W +: SB_W] ---------------------------
  logic [DEPTH*SB_W-1:0] sb_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      sb_q <= '0;
    end else begin
      sb_q[0+:SB_W] <= s0;
      for (int i = 1; i < DEPTH; i++) sb_q[i*SB_W+:SB_W] <= sb_q[(i-1)*SB_W+:SB_W];
    end
  end

  // ---- S1: elements to lanes -----------------------------------------------------------------
  logic [SB_W-1:0] s1;
  logic s1_bf16, s1_half;
  logic [NP*W-1:0] lanes;
  logic [NP-1:0] lanes_valid;
  assign s1 = sb_q[0+:SB_W];
  assign s1_bf16 = (s1[SB_DT+:3] == DT_BF16);
  assign s1_half = s1[SB_BEAT];  // odd accumulator beat: upper half of the bf16 wire beat
  assign lanes_valid = s1[SB_WE] ? s1[SB_MEM+:NP] : '0;

  for (genvar p = 0; p < NP; p++) begin : gen_port
    logic [W-1:0] words, halves;  // the beat as 32-bit and as 16-bit values
    assign words = netagg_pkg::swap_lanes32(rd_data_i[p*W+:W]);
    assign halves = netagg_pkg::swap_lanes16(rd_data_i[p*W+:W]);
    for (genvar i = 0; i < LANES; i++) begin : gen_lane
      logic [15:0] bf16_lo, bf16_hi;
      logic [31:0] wide_lo, wide_hi, word;
      assign word = words[32*i+:32];
      assign bf16_lo = halves[16*i+:16];
      assign bf16_hi = halves[W/2+16*i+:16];
      netagg_bf16_to_fp32 u_lo (
          .bf16_i(bf16_lo),
          .fp32_o(wide_lo)
      );
      netagg_bf16_to_fp32 u_hi (
          .bf16_i(bf16_hi),
          .fp32_o(wide_hi)
      );
      assign lanes[p*W+32*i+:32] = !s1_bf16 ? word : (s1_half ? wide_hi : wide_lo);
    end
  end

  // The lane register: the dtype multiplexers above are not in series with the first adder.
  logic [NP*W-1:0] lanes_q;
  logic [NP-1:0] lanes_valid_q;
  logic lanes_int_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) lanes_valid_q <= '0;
    else lanes_valid_q <= lanes_valid;
  end
  always_ff @(posedge clk_i) begin
    lanes_q <= lanes;
    lanes_int_q <= (s1[SB_DT+:3] == DT_INT32);
  end

  logic [W-1:0] tree_sum;
  logic tree_valid;
  netagg_adder_tree #(
      .NUM_PORTS(NUM_PORTS),
      .STAGES   (STAGES)
  ) u_tree (
      .clk_i   (clk_i),
      .rst_ni  (rst_ni),
      .beats_i (lanes_q),
      .valid_i (lanes_valid_q),
      .is_int_i(lanes_int_q),
      .sum_o   (tree_sum),
      .valid_o (tree_valid)
  );

  // ---- exact lanes (S1 .. S3), the exact tree (to S1+TL) ---------------------------------------
  logic [LW-1:0] x_sum;
  logic [6:0] oor;
  logic rnd_busy;  // a rounding or a release in flight
  if (EXACT) begin : gen_exact
    logic s1_exact, s1_lanes;
    logic [NP*LW-1:0] conv, dec_q2, dec;
    logic [NP*LANES-1:0] conv_valid;  // (the sideband's valid is used)
    logic x_valid;
    logic s1_none;
    logic [15:0] s1_e;
    logic [8:0] s1_thr;
    assign s1_exact = s1[SB_DT+:3] == DT_EXACT;
    assign s1_lanes = s1[SB_DT+:3] == DT_LANES;
    assign s1_e = s1[SB_E+:16];
    assign s1_none = s1_e == 16'h8000;
    assign s1_thr = s1[SB_THR+:9];
    for (genvar p = 0; p < NP; p++) begin : gen_port
      logic [W-1:0] words;
      assign words = netagg_pkg::swap_lanes32(rd_data_i[p*W+:W]);
      for (genvar i = 0; i < LANES; i++) begin : gen_lane
        logic [63:0] lane;
        logic [1:0] special;
        netagg_exact_to_lane #(
            .STAGES(2)
        ) u_conv (
            .clk_i     (clk_i),
            .rst_ni    (rst_ni),
            .valid_i   (1'b1),
            .fp32_i    (words[32*i+:32]),
            .exponent_i(s1_e),
            .valid_o   (conv_valid[p*LANES+i]),
            .lane_o    (lane),
            .special_o (special)
        );
        assign conv[p*LW+i*66+:66] = {special, lane};
      end
      // exact_lanes: wire lane j (8 bytes, big-endian: words 2j, 2j + 1) with its special
      for (genvar j = 0; j < LANES / 2; j++) begin : gen_wire_lane
        logic [63:0] v;
        logic [65:0] x;
        assign v = {words[64*j+:32], words[64*j+32+:32]};
        always_comb begin
          if (v == 64'h7FFF_FFFF_FFFF_FFFF) x = {2'd1, 64'd0};
          else if (v == 64'h8000_0000_0000_0001) x = {2'd2, 64'd0};
          else if (v == 64'h8000_0000_0000_0000) x = {2'd3, 64'd0};
          else x = {2'd0, v};
        end
        // the first wire beat of a pair is held; the second, or a last alone, joins it
        logic [65:0] held_q;
        always_ff @(posedge clk_i) if (s1[SB_RD]) held_q <= x;
        assign dec[p*LW+j*66+:66] = s1[SB_HALF] ? held_q : x;
        assign dec[p*LW+(j+LANES/2)*66+:66] = s1[SB_HALF] ? x : '0;
      end
    end
    // the decoded lanes meet the converted ones two cycles after S1
    logic [NP*LW-1:0] dec_q;
    logic lanes_q1, lanes_q2;
    always_ff @(posedge clk_i) begin
      dec_q <= dec;
      dec_q2 <= dec_q;
      lanes_q1 <= s1_lanes;
      lanes_q2 <= lanes_q1;
    end
    logic [NP*LW-1:0] x_in;
    assign x_in = lanes_q2 ? dec_q2 : conv;
    logic [SB_W-1:0] s3;
    assign s3 = sb_q[2*SB_W+:SB_W];
    netagg_exact_tree #(
        .NUM_PORTS(NUM_PORTS),
        .LATENCY  (XT_LAT)
    ) u_xtree (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .lanes_i(x_in),
        .valid_i(s3[SB_WE] ? s3[SB_MEM+:NP] : '0),
        .sum_o  (x_sum),
        .valid_o(x_valid)
    );
    logic unused_exact;
    assign unused_exact = ^{conv_valid, x_valid};
    // Elements of fp32_exact out of their scale's range (finite, nonzero, |x| >= 2^e or scale
    // none), within the beat's count, per member: flagged in S1, counted in S2.
    logic [NP*LANES-1:0] oor_flag, oor_flag_q;
    always_comb begin
      logic [31:0] x;
      logic [7:0] biased;
      x = '0;
      biased = '0;
      oor_flag = '0;
      for (int p = 0; p < NP; p++) begin
        for (int i = 0; i < LANES; i++) begin
          x = rd_data_i[p*W+32*i+:32];
          x = {x[7:0], x[15:8], x[23:16], x[31:24]};  // big-endian on the wire
          biased = x[30:23];
          oor_flag[p*LANES+i] = s1[SB_WE] && s1_exact && s1[SB_MEM+p] &&
                                5'(i) < s1[SB_NL+:5] && biased != 8'hFF && x[30:0] != '0 &&
                                (s1_none || (biased != 8'd0 && {1'b0, biased} >= s1_thr));
        end
      end
    end
    logic [6:0] n;
    always_comb begin
      n = '0;
      for (int k = 0; k < NP * LANES; k++) n = n + 7'(oor_flag_q[k]);
    end
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        oor_flag_q <= '0;
        oor <= '0;
      end else begin
        oor_flag_q <= oor_flag;
        oor <= n;
      end
    end
  end else begin : gen_no_exact
    assign x_sum = '0;
    assign oor = '0;
  end
  assign oor_inc_o = oor;

  // ---- accumulate ----------------------------------------------------------------------------
  function automatic logic [MA_W-1:0] mem_addr(input logic [KEY_W-1:0] key,
                                               input logic [BI_W-1:0] beat);
    mem_addr = MA_W'(32'(key) * MAX_BEATS + 32'(beat));
  endfunction

  logic [SB_W-1:0] s_read, s_add, s_write;
  assign s_read = sb_q[(TL-1)*SB_W+:SB_W];  // (TL >= 1)
  assign s_add = sb_q[TL*SB_W+:SB_W];
  assign s_write = sb_q[(DEPTH-1)*SB_W+:SB_W];

  assign mem_re_o = s_read[SB_WE];
  assign mem_raddr_o = mem_addr(s_read[SB_KEY+:KEY_W], s_read[SB_BEAT+:BI_W]);

  logic [W-1:0] acc_sum;
  logic acc_valid;
  netagg_beat_add #(
      .STAGES(STAGES)
  ) u_acc (
      .clk_i    (clk_i),
      .rst_ni   (rst_ni),
      .a_i      (mem_rdata_i[0+:W]),
      .a_valid_i(tree_valid && !s_add[SB_NEW]),
      .b_i      (tree_sum),
      .b_valid_i(tree_valid),
      .is_int_i (s_add[SB_DT+:3] == DT_INT32),
      .sum_o    (acc_sum),
      .valid_o  (acc_valid)
  );

  assign mem_we_o = s_write[SB_WE] && acc_valid;
  assign mem_waddr_o = mem_addr(s_write[SB_KEY+:KEY_W], s_write[SB_BEAT+:BI_W]);

  logic rel;
  assign rel = s_write[SB_VALID] && s_write[SB_REL];
  if (EXACT) begin : gen_exact_acc
    // The accumulators' lanes plus the tree's (or the tree's alone for a new round), then
    // delayed with the fp32 accumulate adders.
    logic [LW-1:0] x_acc;
    always_comb begin
      for (int i = 0; i < LANES; i++) begin
        logic [65:0] a;
        a = s_add[SB_NEW] ? '0 : {mem_rdata_i[2*W+2*i+:2], mem_rdata_i[W+32*i+:32],
                                  mem_rdata_i[32*i+:32]};
        x_acc[i*66+64+:2] = a[65:64] | x_sum[i*66+64+:2];
        x_acc[i*66+:64] = a[63:0] + x_sum[i*66+:64];
      end
    end
    logic [STAGES*LW-1:0] x_acc_q;
    always_ff @(posedge clk_i) begin
      x_acc_q[0+:LW] <= x_acc;
      for (int i = 1; i < STAGES; i++) x_acc_q[i*LW+:LW] <= x_acc_q[(i-1)*LW+:LW];
    end
    logic [LW-1:0] x_w;
    logic w_exact;
    assign x_w = x_acc_q[(STAGES-1)*LW+:LW];
    assign w_exact = s_write[SB_DT+:3] == DT_EXACT || s_write[SB_DT+:3] == DT_LANES;
    logic [W-1:0] lo, hi, rnd;
    logic [2*LANES-1:0] sp;
    always_comb begin
      for (int i = 0; i < LANES; i++) begin
        lo[32*i+:32] = x_w[i*66+:32];
        hi[32*i+:32] = x_w[i*66+32+:32];
        sp[2*i+:2] = x_w[i*66+64+:2];
      end
    end
    assign mem_wdata_o = w_exact ? {sp, hi, lo} : {{(2 * LANES){1'b0}}, {W{1'b0}}, acc_sum};
    // Every written exact beat rounded to fp32 at its scale into the rounded bank, RND cycles
    // later; releases wait as long (for every dtype, so they stay in order).
    logic [15:0] w_e;
    assign w_e = s_write[SB_E+:16];
    for (genvar i = 0; i < LANES; i++) begin : gen_round
      netagg_exact_to_fp32 #(
          .STAGES(RND)
      ) u_round (
          .clk_i     (clk_i),
          .rst_ni    (rst_ni),
          .valid_i   (1'b1),
          .lane_i    (x_w[i*66+:64]),
          .special_i (x_w[i*66+64+:2]),
          .exponent_i(w_e),
          .valid_o   (rnd_valid[i]),
          .fp32_o    (rnd[32*i+:32])
      );
    end
    logic [LANES-1:0] rnd_valid;  // (the write's own delay is used)
    logic unused_rnd;
    assign unused_rnd = ^rnd_valid;
    logic [RND-1:0] r_we_q, r_rel_q;
    logic [RND*MA_W-1:0] r_addr_q;
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        r_we_q <= '0;
        r_rel_q <= '0;
      end else begin
        r_we_q <= {r_we_q[RND-2:0], mem_we_o && w_exact};
        r_rel_q <= {r_rel_q[RND-2:0], rel};
      end
    end
    always_ff @(posedge clk_i) r_addr_q <= {r_addr_q[(RND-1)*MA_W-1:0], mem_waddr_o};
    assign rnd_we_o = r_we_q[RND-1];
    assign rnd_waddr_o = r_addr_q[(RND-1)*MA_W+:MA_W];
    assign rnd_wdata_o = rnd;
    assign release_o = r_rel_q[RND-1];
    assign rnd_busy = |{r_we_q, r_rel_q};
  end else begin : gen_plain_acc
    assign mem_wdata_o = acc_sum;
    assign rnd_we_o = 1'b0;
    assign rnd_waddr_o = '0;
    assign rnd_wdata_o = '0;
    assign release_o = rel;
    assign rnd_busy = 1'b0;
  end

  // ---- status --------------------------------------------------------------------------------
  always_comb begin
    empty_o = !tok_valid_q && !rnd_busy;
    for (int i = 1; i <= DEPTH; i++) if (sb_q[(i-1)*SB_W+SB_VALID]) empty_o = 1'b0;
  end

  // Hazard window: keys of the tokens whose first beat was in S0 during the last STAGES + 1
  // cycles (entry 0: this cycle).
  logic [HZ_N-1:1] hz_valid_q;
  logic [HZ_N*KEY_W-1:KEY_W] hz_key_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) hz_valid_q <= '0;
    else hz_valid_q <= hz_valid_o[HZ_N-2:0];
  end
  always_ff @(posedge clk_i) hz_key_q <= hz_key_o[(HZ_N-1)*KEY_W-1:0];
  assign hz_valid_o = {hz_valid_q, s0_we && beat_q == '0};
  assign hz_key_o = {hz_key_q, tok_key_q};

  // Sideband bits the write stage does not look at.
  logic unused;
  assign unused = ^{s_write, s_add, s_read, s1, x_sum};

endmodule

`default_nettype wire

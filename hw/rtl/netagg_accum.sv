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
    // derived, do not change
    parameter int unsigned SLOT_W = $clog2(SLOTS),
    parameter int unsigned KEY_W = SLOT_W + 1,
    parameter int unsigned BEATS_W = $clog2(MAX_BEATS + 1),
    parameter int unsigned BI_W = (MAX_BEATS > 1) ? $clog2(MAX_BEATS) : 1,
    parameter int unsigned MA_W = $clog2(2 * SLOTS * MAX_BEATS),
    parameter int unsigned HZ_N = STAGES + 1
) (
    input  logic                                        clk_i,
    input  logic                                        rst_ni,
    // token from netagg_round
    input  logic                                        tok_valid_i,
    input  logic [KEY_W-1:0]                            tok_key_i,
    input  logic [1:0]                                  tok_dtype_i,
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
    input  logic [netagg_agg_pkg::BEAT_W-1:0]           mem_rdata_i,
    output logic                                        mem_we_o,
    output logic [MA_W-1:0]                             mem_waddr_o,
    output logic [netagg_agg_pkg::BEAT_W-1:0]           mem_wdata_o,
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
  localparam logic [1:0] DT_INT32 = 2'(netagg_pkg::DTYPE_INT32);
  localparam logic [1:0] DT_BF16 = 2'(netagg_pkg::DTYPE_BF16);

  // Sideband of a beat, flat: valid, write, new round, release, dtype, key, beat, members.
  localparam int unsigned SB_VALID = 0;
  localparam int unsigned SB_WE = 1;
  localparam int unsigned SB_NEW = 2;
  localparam int unsigned SB_REL = 3;
  localparam int unsigned SB_DT = 4;
  localparam int unsigned SB_KEY = 6;
  localparam int unsigned SB_BEAT = SB_KEY + KEY_W;
  localparam int unsigned SB_MEM = SB_BEAT + BI_W;
  localparam int unsigned SB_W = SB_MEM + NP;

  // ---- S0: the token being streamed ----------------------------------------------------------
  logic tok_valid_q, tok_new_q, tok_result_q, tok_first_q, tok_result;
  logic [KEY_W-1:0] tok_key_q;
  logic [1:0] tok_dtype_q;
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
      tok_beats_q <= tok_beats_i;
      tok_new_q <= tok_new_i;
      tok_members_q <= tok_members_i;
      tok_frames_q <= tok_frames_i;
    end
  end

  always_comb begin
    s0 = '0;
    s0[SB_VALID] = tok_valid_q;
    s0[SB_WE] = s0_we;
    s0[SB_NEW] = tok_new_q;
    s0[SB_REL] = tok_valid_q && tok_result && last;
    s0[SB_DT+:2] = tok_dtype_q;
    s0[SB_KEY+:KEY_W] = tok_key_q;
    s0[SB_BEAT+:BI_W] = beat_q;
    s0[SB_MEM+:NP] = tok_members_q;
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
  assign s1_bf16 = (s1[SB_DT+:2] == DT_BF16);
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
    lanes_int_q <= (s1[SB_DT+:2] == DT_INT32);
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
      .a_i      (mem_rdata_i),
      .a_valid_i(tree_valid && !s_add[SB_NEW]),
      .b_i      (tree_sum),
      .b_valid_i(tree_valid),
      .is_int_i (s_add[SB_DT+:2] == DT_INT32),
      .sum_o    (acc_sum),
      .valid_o  (acc_valid)
  );

  assign mem_we_o = s_write[SB_WE] && acc_valid;
  assign mem_waddr_o = mem_addr(s_write[SB_KEY+:KEY_W], s_write[SB_BEAT+:BI_W]);
  assign mem_wdata_o = acc_sum;
  assign release_o = s_write[SB_VALID] && s_write[SB_REL];

  // ---- status --------------------------------------------------------------------------------
  always_comb begin
    empty_o = !tok_valid_q;
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
  assign unused = ^{s_write, s_add, s_read, s1};

endmodule

`default_nettype wire

// SPDX-License-Identifier: Apache-2.0
// Adds two 512-bit beats lane by lane (16 x 32 bits), as int32 (wrap-around) or fp32
// (netagg_fp32_add), in STAGES cycles, fully pipelined. An operand whose valid bit is low is
// skipped: the other one passes through unchanged (no `x + 0`, which would turn -0 into +0), so
// the adder tree can take any subset of ports. a is the first operand of the fp32 add (it
// decides which NaN payload survives, docs/fpga-aggregator.md).
`default_nettype none

module netagg_beat_add #(
    parameter int unsigned STAGES = 3  // latency, = netagg_fp32_add's
) (
    input  logic                              clk_i,
    input  logic                              rst_ni,
    input  logic [netagg_agg_pkg::BEAT_W-1:0] a_i,
    input  logic                              a_valid_i,
    input  logic [netagg_agg_pkg::BEAT_W-1:0] b_i,
    input  logic                              b_valid_i,
    input  logic                              is_int_i,  // int32 lanes, else fp32
    output logic [netagg_agg_pkg::BEAT_W-1:0] sum_o,
    output logic                              valid_o    // a_valid_i | b_valid_i, delayed
);
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned LANES = netagg_agg_pkg::LANES;

  if (STAGES < 1) begin : gen_bad_stages
    $error("netagg_beat_add: STAGES must be at least 1");
  end

  // What leaves when the fp32 adders' result is not the answer: the int32 sum or the operand
  // passing alone. Delayed with the fp32 adders.
  logic [W-1:0] other;
  logic use_fp;
  always_comb begin
    for (int i = 0; i < LANES; i++) begin
      if (a_valid_i && b_valid_i) other[32*i+:32] = a_i[32*i+:32] + b_i[32*i+:32];
      else if (a_valid_i) other[32*i+:32] = a_i[32*i+:32];
      else other[32*i+:32] = b_i[32*i+:32];
    end
  end
  assign use_fp = a_valid_i && b_valid_i && !is_int_i;

  logic [STAGES*W-1:0] other_q;
  logic [STAGES-1:0] use_fp_q, valid_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      use_fp_q <= '0;
      valid_q <= '0;
    end else begin
      use_fp_q[0] <= use_fp;
      valid_q[0] <= a_valid_i || b_valid_i;
      for (int i = 1; i < STAGES; i++) begin
        use_fp_q[i] <= use_fp_q[i-1];
        valid_q[i] <= valid_q[i-1];
      end
    end
  end
  always_ff @(posedge clk_i) begin
    other_q[0+:W] <= other;
    for (int i = 1; i < STAGES; i++) other_q[i*W+:W] <= other_q[(i-1)*W+:W];
  end

  logic [W-1:0] fp_sum;
  logic [LANES-1:0] fp_valid;
  for (genvar i = 0; i < LANES; i++) begin : gen_lane
    netagg_fp32_add #(
        .STAGES(STAGES)
    ) u_add (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .valid_i(use_fp),
        .a_i    (a_i[32*i+:32]),
        .b_i    (b_i[32*i+:32]),
        .valid_o(fp_valid[i]),
        .sum_o  (fp_sum[32*i+:32])
    );
  end

  assign sum_o = use_fp_q[STAGES-1] ? fp_sum : other_q[(STAGES-1)*W+:W];
  assign valid_o = valid_q[STAGES-1];

  logic unused;
  assign unused = ^fp_valid;  // the select above is delayed here; the adders' own is not needed

endmodule

`default_nettype wire

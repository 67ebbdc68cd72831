// SPDX-License-Identifier: Apache-2.0
// One fp32 element to a lane of the exact fp32 arithmetic (docs/numerics.md, "Exact fp32"):
// lane = RNE(x * 2^(54 - e)) as a 64-bit two's-complement integer, e the agreed exponent, and
// the lane's special. Fully pipelined (one element a cycle, its lane STAGES cycles later); bit
// for bit hls/include/netagg_hls/exact.hpp's exact_to_lane (tests/hw/exact_convert_test.cpp).
//
//  input                              lane_o             special_o
//  +-0                                0                  finite
//  +-Inf                              0                  +Inf / -Inf
//  NaN                                0                  NaN
//  nonzero and e is none              0                  NaN (the contributions agreed on zeros)
//  |x| >= 2^e                         0                  NaN (outside the agreed range)
//  anything else                      RNE(x * 2^(54-e))  finite
//
// x = m * 2^scale with a 24-bit m; the lane is m shifted by scale + 54 - e, at most 30 to the
// left (|x| < 2^e) and any amount to the right. Both are one right shift of m * 2^30 by
// 30 - (scale + 54 - e), with guard and sticky bits for round to nearest even; from 55 on
// everything is below half a unit and the lane is 0.
//
// Two phases; STAGES places the registers (an output register always):
//
//  STAGES  placement
//  1       classify  shift |
//  2       classify | shift |
//
//  classify  the special, the range check (the leading one of m against e), the shift amount
//  shift     the right shift with guard and sticky, the rounding add, the sign

`default_nettype none

module netagg_exact_to_lane #(
  parameter int unsigned STAGES /*verilator public*/ = 2
) (
  input  logic        clk_i,
  input  logic        rst_ni,      // synchronous, active low: empties the pipeline
  input  logic        valid_i,
  input  logic [31:0] fp32_i,
  input  logic [15:0] exponent_i,  // int16: the agreed exponent, -97..128, or -32768 (none)
  output logic        valid_o,
  output logic [63:0] lane_o,
  output logic [1:0]  special_o    // 0 finite, 1 +Inf, 2 -Inf, 3 NaN (or-ing two joins them)
);

  if (STAGES < 1 || STAGES > 2) begin : gen_bad_stages
    $error("netagg_exact_to_lane: STAGES must be 1 or 2");
  end

  localparam logic [15:0] ExponentNone = 16'h8000;
  localparam int          FractionBits = 54;

  // ---- classify ------------------------------------------------------------------------------
  typedef struct packed {
    logic       sign;
    logic       zero_lane;  // the lane is 0 (special, zero, none or out of range)
    logic [1:0] special;
    logic [23:0] m;
    logic [5:0] amount;     // right shift of m * 2^30, 0..55
  } classify_t;

  classify_t classify_d, classify_q;
  logic      classify_valid_q;

  always_comb begin
    logic               is_special, is_zero, out_of_range;
    logic [7:0]         biased;
    logic signed [11:0] scale, top, e, right;

    biased     = fp32_i[30:23];
    is_special = &biased;
    is_zero    = biased == 8'd0 && fp32_i[22:0] == 23'd0;
    classify_d.sign = fp32_i[31];
    classify_d.m    = {biased != 8'd0, fp32_i[22:0]};
    scale = (biased != 8'd0) ? 12'($signed({4'd0, biased})) - 12'sd150 : -12'sd149;
    e     = 12'($signed(exponent_i));

    // The leading one of m: bit 23 for normals, below it for subnormals.
    top = -12'sd1;
    for (int i = 0; i < 24; i = i + 1) begin
      if (classify_d.m[i]) top = 12'(i);
    end
    out_of_range = (top + scale) >= e;

    // 30 - (scale + FractionBits - e): >= 0 for every element in range.
    right = 12'sd30 - (scale + 12'(FractionBits) - e);
    classify_d.amount = (right > 12'sd55) ? 6'd55 : right[5:0];

    classify_d.special = 2'd0;
    if (is_special) begin
      classify_d.special = (fp32_i[22:0] != 23'd0) ? 2'd3 : (fp32_i[31] ? 2'd2 : 2'd1);
    end else if (!is_zero && (exponent_i == ExponentNone || out_of_range)) begin
      classify_d.special = 2'd3;
    end
    classify_d.zero_lane = is_special || is_zero || exponent_i == ExponentNone || out_of_range;
  end

  netagg_stage #(.WIDTH($bits(classify_d)), .ENABLE(STAGES >= 2)) u_classify (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(valid_i), .data_i(classify_d),
      .valid_o(classify_valid_q), .data_o(classify_q));

  // ---- shift ---------------------------------------------------------------------------------
  logic [65:0] shift_d;  // {special, lane}

  always_comb begin
    logic        guard, sticky, round_up;
    logic [54:0] wide, kept, below;
    logic [63:0] q;

    wide   = {1'b0, classify_q.m, 30'd0};  // bit 54 is 0: a shift by 55 keeps nothing
    kept   = wide >> classify_q.amount;
    below  = wide & ~({55{1'b1}} << classify_q.amount);  // the bits shifted out
    guard  = (classify_q.amount != 6'd0) && wide[classify_q.amount - 6'd1];
    sticky = (classify_q.amount > 6'd1) &&
             ((below & ~({55{1'b1}} << (classify_q.amount - 6'd1))) != 55'd0);
    round_up = guard && (sticky || kept[0]);
    q = {9'd0, kept} + {63'd0, round_up};
    shift_d[65:64] = classify_q.special;
    if (classify_q.zero_lane) begin
      shift_d[63:0] = 64'd0;
    end else begin
      shift_d[63:0] = classify_q.sign ? (64'd0 - q) : q;
    end
  end

  netagg_stage #(.WIDTH(66), .ENABLE(1'b1)) u_out (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(classify_valid_q), .data_i(shift_d),
      .valid_o(valid_o), .data_o({special_o, lane_o}));

endmodule

`default_nettype wire

// SPDX-License-Identifier: Apache-2.0
// A lane sum of the exact fp32 arithmetic (docs/numerics.md, "Exact fp32") back to fp32:
// lane * 2^(e - 54), rounded once to nearest even. Fully pipelined (one lane a cycle, its result
// STAGES cycles later); bit for bit hls/include/netagg_hls/exact.hpp's exact_to_fp32
// (tests/hw/exact_convert_test.cpp).
//
//  lane                                 fp32_o
//  special +Inf / -Inf / NaN            0x7F800000 / 0xFF800000 / 0x7FC00000
//  0, or e is none                      +0
//  |sum| rounds past the largest float  +-Inf with the sum's sign
//  |sum| < 2^-126                       rounded at the subnormal grid 2^-149
//  anything else                        24 significant bits, ties to even
//
// Four phases; STAGES places the registers (an output register always):
//
//  STAGES  placement
//  1       lead  normalize  pick  round |
//  2       lead | normalize  pick  round |
//  3       lead | normalize | pick  round |
//  4       lead | normalize | pick | round |
//
//  lead       the magnitude and the position of its leading one
//  normalize  the leading one to bit 63; the result's exponent and how many bits to drop: 40
//             for a normal result, 40 + (-126 - exponent) for a subnormal one, at most 64
//  pick       the kept bits, the guard bit and the sticky bit
//  round      round to nearest even by adding into the packed exponent|fraction (a carry moves
//             into the exponent, as for the largest subnormal rounding up to the smallest
//             normal), overflow to infinity, the specials

`default_nettype none

module netagg_exact_to_fp32 #(
  parameter int unsigned STAGES /*verilator public*/ = 4
) (
  input  logic        clk_i,
  input  logic        rst_ni,      // synchronous, active low: empties the pipeline
  input  logic        valid_i,
  input  logic [63:0] lane_i,
  input  logic [1:0]  special_i,   // 0 finite, 1 +Inf, 2 -Inf, 3 NaN
  input  logic [15:0] exponent_i,  // int16: the agreed exponent, -97..128, or -32768 (none)
  output logic        valid_o,
  output logic [31:0] fp32_o
);

  if (STAGES < 1 || STAGES > 4) begin : gen_bad_stages
    $error("netagg_exact_to_fp32: STAGES must be 1 to 4");
  end

  localparam logic [15:0] ExponentNone = 16'h8000;
  localparam int          FractionBits = 54;

  // What travels with every phase: the result when it does not depend on the magnitude.
  typedef struct packed {
    logic        fixed;        // fixed_value is the result
    logic [31:0] fixed_value;
    logic        sign;
  } side_t;

  // ---- lead ----------------------------------------------------------------------------------
  typedef struct packed {
    side_t              side;
    logic [63:0]        magnitude;
    logic [5:0]         top;       // the leading one (magnitude is not 0 unless side.fixed)
    logic signed [11:0] e;
  } lead_t;

  lead_t lead_d, lead_q;
  logic  lead_valid_q;

  always_comb begin
    lead_d.side.sign = lane_i[63];
    lead_d.magnitude = lane_i[63] ? (64'd0 - lane_i) : lane_i;
    lead_d.e         = 12'($signed(exponent_i));
    lead_d.top       = 6'd0;
    for (int i = 0; i < 64; i = i + 1) begin
      if (lead_d.magnitude[i]) lead_d.top = 6'(i);
    end
    lead_d.side.fixed = 1'b1;
    case (special_i)
      2'd1: lead_d.side.fixed_value = 32'h7F800000;
      2'd2: lead_d.side.fixed_value = 32'hFF800000;
      2'd3: lead_d.side.fixed_value = 32'h7FC00000;
      default: begin
        lead_d.side.fixed_value = 32'd0;
        lead_d.side.fixed = exponent_i == ExponentNone || lane_i == 64'd0;
      end
    endcase
  end

  netagg_stage #(.WIDTH($bits(lead_d)), .ENABLE(STAGES >= 2)) u_lead (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(valid_i), .data_i(lead_d),
      .valid_o(lead_valid_q), .data_o(lead_q));

  // ---- normalize -----------------------------------------------------------------------------
  typedef struct packed {
    side_t              side;
    logic [63:0]        normalized;
    logic signed [11:0] exponent;   // 2^exponent <= |sum| < 2^(exponent + 1)
    logic               subnormal;
    logic [6:0]         drop;       // 40..64
  } norm_t;

  norm_t norm_d, norm_q;
  logic  norm_valid_q;

  always_comb begin
    logic signed [11:0] deficit;
    norm_d.side       = lead_q.side;
    norm_d.normalized = lead_q.magnitude << (6'd63 - lead_q.top);
    norm_d.exponent   = 12'($signed({6'd0, lead_q.top})) + lead_q.e - 12'(FractionBits);
    norm_d.subnormal  = norm_d.exponent < -12'sd126;
    deficit           = -12'sd126 - norm_d.exponent;
    if (!norm_d.subnormal) begin
      norm_d.drop = 7'd40;
    end else if (deficit >= 12'sd24) begin
      norm_d.drop = 7'd64;
    end else begin
      norm_d.drop = 7'd40 + 7'(deficit);
    end
  end

  netagg_stage #(.WIDTH($bits(norm_d)), .ENABLE(STAGES >= 3)) u_norm (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(lead_valid_q), .data_i(norm_d),
      .valid_o(norm_valid_q), .data_o(norm_q));

  // ---- pick ----------------------------------------------------------------------------------
  typedef struct packed {
    side_t              side;
    logic signed [11:0] exponent;
    logic               subnormal;
    logic [22:0]        kept;       // the kept bits below the hidden one (a subnormal has none)
    logic               guard;      // the highest bit dropped
    logic               sticky;     // any bit below it
  } pick_t;

  pick_t pick_d, pick_q;
  logic  pick_valid_q;

  always_comb begin
    pick_d.side      = norm_q.side;
    pick_d.exponent  = norm_q.exponent;
    pick_d.subnormal = norm_q.subnormal;
    pick_d.kept   = (norm_q.drop == 7'd64) ? 23'd0 : 23'(norm_q.normalized >> norm_q.drop);
    pick_d.guard  = norm_q.normalized[6'(norm_q.drop - 7'd1)];
    pick_d.sticky = (norm_q.normalized << (7'd65 - norm_q.drop)) != 64'd0;
  end

  netagg_stage #(.WIDTH($bits(pick_d)), .ENABLE(STAGES >= 4)) u_pick (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(norm_valid_q), .data_i(pick_d),
      .valid_o(pick_valid_q), .data_o(pick_q));

  // ---- round ---------------------------------------------------------------------------------
  logic [31:0] round_d;

  always_comb begin
    logic        round_up;
    logic [30:0] packed_value;

    round_up = pick_q.guard && (pick_q.sticky || pick_q.kept[0]);
    if (pick_q.subnormal) begin
      packed_value = {8'd0, pick_q.kept} + {30'd0, round_up};
    end else begin
      packed_value = {8'(pick_q.exponent + 12'sd127), pick_q.kept} + {30'd0, round_up};
    end

    if (pick_q.side.fixed) begin
      round_d = pick_q.side.fixed_value;
    end else if (!pick_q.subnormal &&
                 (pick_q.exponent > 12'sd127 || packed_value >= 31'h7F800000)) begin
      round_d = {pick_q.side.sign, 31'h7F800000};  // beyond the largest float
    end else begin
      round_d = {pick_q.side.sign, packed_value};
    end
  end

  netagg_stage #(.WIDTH(32), .ENABLE(1'b1)) u_out (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(pick_valid_q), .data_i(round_d),
      .valid_o(valid_o), .data_o(fp32_o));

endmodule

`default_nettype wire

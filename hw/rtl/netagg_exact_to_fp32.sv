// SPDX-License-Identifier: Apache-2.0
// A lane sum of the exact fp32 arithmetic (docs/numerics.md, "Exact fp32") back to fp32:
// lane * 2^(e - 54), rounded once to nearest even. Combinational; bit for bit
// hls/include/netagg_hls/exact.hpp's exact_to_fp32 (tests/hw/exact_convert_test.cpp).
//
//  lane                                 fp32_o
//  special +Inf / -Inf / NaN            0x7F800000 / 0xFF800000 / 0x7FC00000
//  0, or e is none                      +0
//  |sum| rounds past the largest float  +-Inf with the sum's sign
//  |sum| < 2^-126                       rounded at the subnormal grid 2^-149
//  anything else                        24 significant bits, ties to even
//
// The magnitude is normalized (its leading one to bit 63); a normal result keeps the top 24
// bits (40 shifted out), a subnormal one 40 + (-126 - exponent) fewer, all of them from 64 on.
// A rounding carry into bit 24 moves into the exponent: the packed exponent|fraction add does
// that, as for the largest subnormal rounding up to the smallest normal.

`default_nettype none

module netagg_exact_to_fp32 (
  input  logic [63:0] lane_i,
  input  logic [1:0]  special_i,   // 0 finite, 1 +Inf, 2 -Inf, 3 NaN
  input  logic [15:0] exponent_i,  // int16: the agreed exponent, -97..128, or -32768 (none)
  output logic [31:0] fp32_o
);

  localparam logic [15:0] ExponentNone = 16'h8000;
  localparam int          FractionBits = 54;

  always_comb begin
    logic               sign, guard, sticky, round_up, subnormal;
    logic [63:0]        a, normalized, lost;
    logic [22:0]        kept;  // the kept bits below the hidden one (a subnormal has none)
    logic signed [11:0] top, e, exponent;
    logic [5:0]         lead;
    logic [6:0]         drop;  // bits shifted out of the normalized magnitude, 40..64
    logic [30:0]        packed_value;
    logic signed [11:0] deficit;

    sign = lane_i[63];
    a    = sign ? (64'd0 - lane_i) : lane_i;
    e    = 12'($signed(exponent_i));

    top = -12'sd1;
    for (int i = 0; i < 64; i = i + 1) begin
      if (a[i]) top = 12'(i);
    end
    lead       = 6'(12'sd63 - top);
    normalized = a << lead;
    exponent   = top + e - 12'(FractionBits);  // 2^exponent <= |sum| < 2^(exponent + 1)

    subnormal = exponent < -12'sd126;
    deficit   = -12'sd126 - exponent;
    if (!subnormal) begin
      drop = 7'd40;
    end else if (deficit >= 12'sd24) begin
      drop = 7'd64;
    end else begin
      drop = 7'd40 + 7'(deficit);
    end
    kept   = (drop == 7'd64) ? 23'd0 : 23'(normalized >> drop);
    guard  = normalized[6'(drop - 7'd1)];        // the highest bit shifted out
    lost   = normalized << (7'd65 - drop);        // the bits below it
    sticky = lost != 64'd0;
    round_up = guard && (sticky || kept[0]);

    // exponent|fraction as one number: a normal's biased exponent above its 23 fraction bits
    // (the hidden bit dropped), a subnormal's 0 above its kept bits; the rounding add carries.
    if (subnormal) begin
      packed_value = {8'd0, kept} + {30'd0, round_up};
    end else begin
      packed_value = {8'(exponent + 12'sd127), kept} + {30'd0, round_up};
    end

    if (special_i == 2'd1) begin
      fp32_o = 32'h7F800000;
    end else if (special_i == 2'd2) begin
      fp32_o = 32'hFF800000;
    end else if (special_i == 2'd3) begin
      fp32_o = 32'h7FC00000;
    end else if (exponent_i == ExponentNone || lane_i == 64'd0) begin
      fp32_o = 32'd0;
    end else if (!subnormal && (exponent > 12'sd127 || packed_value >= 31'h7F800000)) begin
      fp32_o = {sign, 31'h7F800000};  // beyond the largest float, before or by rounding
    end else begin
      fp32_o = {sign, packed_value};
    end
  end

endmodule

`default_nettype wire

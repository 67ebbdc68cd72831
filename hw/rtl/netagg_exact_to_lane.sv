// SPDX-License-Identifier: Apache-2.0
// One fp32 element to a lane of the exact fp32 arithmetic (docs/numerics.md, "Exact fp32"):
// lane = RNE(x * 2^(54 - e)) as a 64-bit two's-complement integer, e the agreed exponent, and
// the lane's special. Combinational; bit for bit hls/include/netagg_hls/exact.hpp's
// exact_to_lane (tests/hw/exact_convert_test.cpp).
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
// 30 - (scale + 54 - e) = 30 - shift, with guard and sticky bits for round to nearest even; from
// 55 on everything is below half a unit and the lane is 0.

`default_nettype none

module netagg_exact_to_lane (
  input  logic [31:0] fp32_i,
  input  logic [15:0] exponent_i,  // int16: the agreed exponent, -97..128, or -32768 (none)
  output logic [63:0] lane_o,
  output logic [1:0]  special_o    // 0 finite, 1 +Inf, 2 -Inf, 3 NaN (or-ing two joins them)
);

  localparam logic [15:0] ExponentNone = 16'h8000;
  localparam int          FractionBits = 54;

  always_comb begin
    logic               sign, is_special, is_zero, out_of_range, round_up, guard, sticky;
    logic [7:0]         biased;
    logic [23:0]        m;
    logic signed [11:0] scale, top, e, shift, right;
    logic [5:0]         amount;
    logic [54:0]        wide, kept, below;
    logic [63:0]        q;

    sign       = fp32_i[31];
    biased     = fp32_i[30:23];
    is_special = &biased;
    is_zero    = biased == 8'd0 && fp32_i[22:0] == 23'd0;
    m          = {biased != 8'd0, fp32_i[22:0]};
    scale      = (biased != 8'd0) ? 12'($signed({4'd0, biased})) - 12'sd150 : -12'sd149;
    e          = 12'($signed(exponent_i));

    // The leading one of m: bit 23 for normals, below it for subnormals.
    top = -12'sd1;
    for (int i = 0; i < 24; i = i + 1) begin
      if (m[i]) top = 12'(i);
    end
    out_of_range = (top + scale) >= e;

    // The right shift of m * 2^30: 30 - shift, where shift = scale + FractionBits - e.
    shift  = scale + 12'(FractionBits) - e;
    right  = 12'sd30 - shift;
    amount = (right > 12'sd55) ? 6'd55 : right[5:0];  // right >= 0 for every in-range element
    wide   = {1'b0, m, 30'd0};                      // bit 54 is 0: a shift by 55 keeps nothing
    kept   = wide >> amount;
    below  = wide & ~({55{1'b1}} << amount);        // the bits shifted out
    guard  = (amount != 6'd0) && wide[amount - 6'd1];
    sticky = (amount > 6'd1) && ((below & ~({55{1'b1}} << (amount - 6'd1))) != 55'd0);
    round_up = guard && (sticky || kept[0]);
    q = {9'd0, kept} + {63'd0, round_up};

    lane_o    = 64'd0;
    special_o = 2'd0;
    if (is_special) begin
      special_o = (fp32_i[22:0] != 23'd0) ? 2'd3 : (sign ? 2'd2 : 2'd1);
    end else if (is_zero) begin
      special_o = 2'd0;
    end else if (exponent_i == ExponentNone || out_of_range) begin
      special_o = 2'd3;
    end else begin
      lane_o = sign ? (64'd0 - q) : q;
    end
  end

endmodule

`default_nettype wire

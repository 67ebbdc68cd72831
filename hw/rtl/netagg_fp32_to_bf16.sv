// SPDX-License-Identifier: Apache-2.0
// IEEE binary32 -> bfloat16, round to nearest even. Combinational.
//
//  input                              output
//  NaN                                the upper half with the quiet bit set: NaN stays NaN even
//                                     when its payload sits in the dropped low half
//  finite, rounds past the largest    infinity with the input's sign
//  subnormal                          rounded like any other value (no flush to zero)
//  anything else                      nearest bf16, ties to the even one
//
// Rounding adds one to the upper half when the dropped half is above 0x8000, or equal to it
// and the kept half is odd; a carry out of the fraction moves into the exponent, which is the
// correct result in every case (largest subnormal -> smallest normal, largest finite ->
// infinity).

`default_nettype none

module netagg_fp32_to_bf16 (
  input  logic [31:0] fp32_i,
  output logic [15:0] bf16_o
);

  logic is_nan, round_up;

  assign is_nan   = (&fp32_i[30:23]) && (|fp32_i[22:0]);
  assign round_up = fp32_i[15] && ((|fp32_i[14:0]) || fp32_i[16]);

  always_comb begin
    if (is_nan) begin
      bf16_o = fp32_i[31:16] | netagg_pkg::BF16_QUIET_BIT;
    end else begin
      bf16_o = fp32_i[31:16] + {15'd0, round_up};
    end
  end

endmodule

`default_nettype wire

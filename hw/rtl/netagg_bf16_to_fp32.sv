// SPDX-License-Identifier: Apache-2.0
// bfloat16 -> IEEE binary32, exact: a bf16 is the upper half of the binary32 with the same
// value, so widening appends sixteen zero fraction bits. Every class keeps its bits (a signaling
// NaN stays signaling; the adder quiets it). Combinational.

`default_nettype none

module netagg_bf16_to_fp32 (
  input  logic [15:0] bf16_i,
  output logic [31:0] fp32_o
);

  assign fp32_o = {bf16_i, 16'h0000};

endmodule

`default_nettype wire

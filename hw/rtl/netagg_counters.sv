// SPDX-License-Identifier: Apache-2.0
// The 64-bit event counters of the CSR map (netagg_csr_pkg::CNT_*), each incremented by up to
// 2^INC_W - 1 a cycle (several ports count the same event in one cycle), cleared together;
// counter WIDE_C also by up to 2^WIDE_W - 1 (elements of a beat of every port).
`default_nettype none

module netagg_counters #(
    parameter int unsigned INC_W = 4,  // increment bits per counter and cycle
    parameter int unsigned WIDE_C = netagg_csr_pkg::CNT_EXACT_OUT_OF_RANGE,
    parameter int unsigned WIDE_W = 7,
    // derived, do not change
    parameter int unsigned NC = netagg_csr_pkg::NUM_COUNTERS,
    parameter int unsigned IDX_W = netagg_csr_pkg::COUNTER_INDEX_BITS
) (
    input  logic              clk_i,
    input  logic              rst_ni,
    input  logic              clear_i,
    input  logic [NC*INC_W-1:0] inc_i,  // counter c at [c*INC_W +: INC_W]
    input  logic [WIDE_W-1:0] wide_inc_i,  // counter WIDE_C, besides
    input  logic [IDX_W-1:0]  index_i,
    output logic [63:0]       value_o
);
  logic [63:0] count_q[NC];

  for (genvar c = 0; c < NC; c++) begin : gen_counter
    always_ff @(posedge clk_i) begin
      if (!rst_ni || clear_i) count_q[c] <= '0;
      else if (c == WIDE_C)
        count_q[c] <= count_q[c] + 64'(inc_i[c*INC_W+:INC_W]) + 64'(wide_inc_i);
      else count_q[c] <= count_q[c] + 64'(inc_i[c*INC_W+:INC_W]);
    end
  end

  assign value_o = (32'(index_i) < NC) ? count_q[index_i] : '0;

endmodule

`default_nettype wire

// SPDX-License-Identifier: Apache-2.0
// An optional pipeline stage: with ENABLE a register (valid reset to 0, data loaded only when
// valid_i, so an idle stage does not toggle), without it a wire. Lets a pipeline trade latency
// for clock rate by parameter (netagg_fp32_add's STAGES).
`default_nettype none

module netagg_stage #(
    parameter int unsigned WIDTH = 1,
    parameter bit          ENABLE = 1'b1
) (
    input  logic             clk_i,
    input  logic             rst_ni,
    input  logic             valid_i,
    input  logic [WIDTH-1:0] data_i,
    output logic             valid_o,
    output logic [WIDTH-1:0] data_o
);
  if (ENABLE) begin : gen_reg
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        valid_o <= 1'b0;
      end else begin
        valid_o <= valid_i;
      end
      if (valid_i) begin
        data_o <= data_i;
      end
    end
  end else begin : gen_wire
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused;
    assign unused = ^{clk_i, rst_ni};
    /* verilator lint_on UNUSEDSIGNAL */
    assign data_o  = data_i;
    assign valid_o = valid_i;
  end
endmodule

`default_nettype wire

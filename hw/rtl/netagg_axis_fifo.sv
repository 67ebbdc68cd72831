// SPDX-License-Identifier: Apache-2.0
// A small first-word-fall-through FIFO in flip-flops, the egress buffer of one port: the
// replication stage pushes whole beats into every port of a wave in the same cycle, each port's
// AXI4-Stream master drains at its own TREADY. The pusher checks count_o for room.
`default_nettype none

module netagg_axis_fifo #(
    parameter int unsigned DEPTH = 4,   // entries (power of two, >= 2)
    parameter int unsigned DW = 577,    // TDATA + TKEEP + TLAST
    // derived, do not change
    parameter int unsigned PTR_W = $clog2(DEPTH)
) (
    input  logic          clk_i,
    input  logic          rst_ni,
    input  logic          push_i,
    input  logic [DW-1:0] data_i,
    output logic [DW-1:0] data_o,
    output logic          valid_o,
    input  logic          ready_i,
    output logic [PTR_W:0] count_o
);
  if (DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0) begin : gen_bad_depth
    $error("netagg_axis_fifo: DEPTH must be a power of two >= 2");
  end

  logic [DW-1:0] mem_q[DEPTH];
  logic [PTR_W-1:0] rd_q, wr_q;
  logic [PTR_W:0] count_q;
  logic pop;

  assign valid_o = count_q != '0;
  assign pop = valid_o && ready_i;
  assign data_o = mem_q[rd_q];
  assign count_o = count_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rd_q <= '0;
      wr_q <= '0;
      count_q <= '0;
    end else begin
      if (push_i) wr_q <= wr_q + 1'b1;
      if (pop) rd_q <= rd_q + 1'b1;
      count_q <= count_q + {{PTR_W{1'b0}}, push_i} - {{PTR_W{1'b0}}, pop};
    end
  end

  always_ff @(posedge clk_i) if (push_i) mem_q[wr_q] <= data_i;

endmodule

`default_nettype wire

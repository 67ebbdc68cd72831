// SPDX-License-Identifier: Apache-2.0
// The accumulators: MAX_BEATS beats of 16 x 32 bits per slot and set (exact fp32: 16 x 66 bits),
// at ((slot * 2 + set) * MAX_BEATS + beat). One write port and two registered read ports (the
// adder pipeline's read-modify-write and the replication stage), or one (the rounded bank). A
// read in the cycle of a write to the same address returns the old value; netagg_accum's hazard
// window accounts for that.
`default_nettype none

module netagg_slot_mem #(
    parameter int unsigned DEPTH = 2048,  // beats (2 * SLOTS * MAX_BEATS)
    parameter int unsigned W = 512,       // bits a beat
    parameter int unsigned READS = 2,     // read ports: 2 (a and b) or 1 (b only)
    // derived, do not change
    parameter int unsigned A_W = $clog2(DEPTH)
) (
    input  logic           clk_i,
    input  logic           we_i,
    input  logic [A_W-1:0] waddr_i,
    input  logic [W-1:0]   wdata_i,
    input  logic           re_a_i,
    input  logic [A_W-1:0] raddr_a_i,
    output logic [W-1:0]   rdata_a_o,
    input  logic           re_b_i,
    input  logic [A_W-1:0] raddr_b_i,
    output logic [W-1:0]   rdata_b_o
);
  logic [W-1:0] mem_q[DEPTH];

  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
    if (re_b_i) rdata_b_o <= mem_q[raddr_b_i];
  end
  // (a read port the memory does not have is not built: a synthesis tool keeps a copy of the
  // memory for every read port)
  if (READS == 2) begin : gen_port_a
    always_ff @(posedge clk_i) if (re_a_i) rdata_a_o <= mem_q[raddr_a_i];
  end else begin : gen_no_port_a
    assign rdata_a_o = '0;
    logic unused;
    assign unused = ^{re_a_i, raddr_a_i};
  end

endmodule

`default_nettype wire

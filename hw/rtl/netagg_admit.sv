// SPDX-License-Identifier: Apache-2.0
// Head check of one ingress port (combinational): the first failing check of the stored frame
// in the order of docs/fpga-aggregator.md -- the frame checks before the UDP port (made when
// the frame was stored), the UDP destination port against AGG_UDP_PORT, the packet checks, then
// the job table. A frame that passes is eligible for the round decision; one that fails is
// dropped with that reason (a counter index) and never touches a slot. A result frame passes
// only from a job's parent (trees: the job table looked it up by its source and job id): with
// the child's rank at the parent, a slot in the parent's range of the job, which slot_o maps to
// the job's own slot (the one the round decision uses).
`default_nettype none

module netagg_admit #(
    parameter int unsigned SLOTS = 64,     // slots in the pool
    parameter int unsigned MAX_BEATS = 16  // accumulator beats a slot holds
) (
    input  logic                                   valid_i,     // head present
    input  logic [netagg_agg_pkg::DESC_W-1:0]      desc_i,
    input  logic [15:0]                            agg_udp_port_i,
    // job table lookup of desc_i's job id and rank
    input  logic                                   found_i,
    input  logic [netagg_agg_pkg::NWORKERS_W-1:0]  workers_i,
    input  logic [15:0]                            slot_base_i,
    input  logic [15:0]                            slot_count_i,
    input  logic [15:0]                            elements_i,
    input  logic [31:0]                            worker_ip_i,
    input  logic [15:0]                            worker_udp_i,
    input  logic [15:0]                            parent_rank_i,  // a result: the entry's parent
    input  logic [15:0]                            parent_base_i,
    // verdict
    output logic                                   drop_o,      // valid_i and a check failed
    output logic [netagg_agg_pkg::REASON_W-1:0]    reason_o,
    output logic                                   eligible_o,  // valid_i and every check passed
    output logic [15:0]                            slot_o       // the slot of the job it is for
);
  localparam int unsigned RW = netagg_agg_pkg::REASON_W;
  localparam logic [31:0] CAPACITY = 32'(netagg_agg_pkg::LANES * MAX_BEATS);
  // exact_lanes elements take 8 bytes, two 32-bit lanes of a stored frame's beats
  localparam logic [31:0] LANES_CAPACITY = 32'(netagg_agg_pkg::LANES * MAX_BEATS / 2);

  netagg_agg_pkg::desc_t d;
  logic bad;
  logic [RW-1:0] reason;
  logic [15:0] slot_offset, parent_offset;
  logic [16:0] own_slot;
  logic [31:0] capacity;

  assign d = desc_i;
  assign slot_offset = d.slot - slot_base_i;
  assign parent_offset = d.slot - parent_base_i;
  assign own_slot = {1'b0, slot_base_i} + {1'b0, parent_offset};
  assign capacity = (d.dtype == 3'(netagg_pkg::DTYPE_EXACT_LANES)) ? LANES_CAPACITY : CAPACITY;

  always_comb begin
    bad = 1'b1;
    reason = '0;
    if (d.pre_bad) reason = d.pre_reason;
    else if (d.dst_port != agg_udp_port_i)
      reason = RW'(netagg_csr_pkg::CNT_MALFORMED_WRONG_PORT);
    else if (d.post_bad) reason = d.post_reason;
    else if (!d.contribution) begin  // a result (the packet checks passed: its type is valid)
      if (!found_i) reason = RW'(netagg_csr_pkg::CNT_DROPPED_NOT_CONTRIBUTION);
      else if (d.rank != parent_rank_i)
        reason = RW'(netagg_csr_pkg::CNT_DROPPED_RANK_OUT_OF_RANGE);
      else if (d.slot < parent_base_i || parent_offset >= slot_count_i || 32'(own_slot) >= SLOTS)
        reason = RW'(netagg_csr_pkg::CNT_DROPPED_SLOT_OUT_OF_RANGE);
      else if (d.count > elements_i || 32'(d.count) > capacity)
        reason = RW'(netagg_csr_pkg::CNT_DROPPED_COUNT_TOO_LARGE_FOR_JOB);
      else bad = 1'b0;
    end
    else if (!found_i) reason = RW'(netagg_csr_pkg::CNT_DROPPED_UNKNOWN_JOB);
    else if (d.rank >= {10'd0, workers_i})
      reason = RW'(netagg_csr_pkg::CNT_DROPPED_RANK_OUT_OF_RANGE);
    else if (d.src_ip != worker_ip_i || d.src_port != worker_udp_i)
      reason = RW'(netagg_csr_pkg::CNT_DROPPED_FOREIGN_SOURCE);
    else if (d.slot < slot_base_i || slot_offset >= slot_count_i || 32'(d.slot) >= SLOTS)
      reason = RW'(netagg_csr_pkg::CNT_DROPPED_SLOT_OUT_OF_RANGE);
    else if (d.count > elements_i || 32'(d.count) > capacity)
      reason = RW'(netagg_csr_pkg::CNT_DROPPED_COUNT_TOO_LARGE_FOR_JOB);
    else bad = 1'b0;
  end

  assign drop_o = valid_i && bad;
  assign reason_o = reason;
  assign eligible_o = valid_i && !bad;
  assign slot_o = d.contribution ? d.slot : own_slot[15:0];
  logic unused;
  assign unused = ^d;  // the round decision reads the other fields

endmodule

`default_nettype wire

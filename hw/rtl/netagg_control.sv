// SPDX-License-Identifier: Apache-2.0
// Executes the commands of the CSR block (docs/fpga-aggregator.md, "Commands"): COMMIT store
// job / store worker / remove job, and the soft reset. A command first makes the aggregator
// quiet -- no new group is taken (block_o) and the adder pipeline drains; a commit then waits
// until every queued result has left, a soft reset makes the replication stage drop them
// (flush_o) -- and then acts in one cycle: job table write, clearing the job's slots (or all of
// them, the job table and the counters for a soft reset). busy_o covers all of it.
`default_nettype none

module netagg_control #(
    parameter int unsigned MAX_JOBS = 8,
    // derived, do not change
    parameter int unsigned JOB_W = (MAX_JOBS > 1) ? $clog2(MAX_JOBS) : 1
) (
    input  logic              clk_i,
    input  logic              rst_ni,
    // from netagg_csr
    input  logic              commit_i,
    input  logic [1:0]        commit_cmd_i,
    input  logic              soft_reset_i,
    input  logic [31:0]       job_index_i,
    input  logic [31:0]       job_slots_i,
    input  logic [31:0]       worker_index_i,
    output logic              busy_o,
    // the datapath
    input  logic              accum_empty_i,
    input  logic              replicate_idle_i,
    output logic              block_o,
    output logic              flush_o,
    // job table (its other write fields come straight from the CSRs, stable while busy)
    output logic              store_job_o,
    output logic              store_worker_o,
    output logic              remove_job_o,
    output logic              clear_table_o,
    output logic [JOB_W-1:0]  entry_o,
    input  logic [15:0]       entry_base_i,    // the entry's current slot range
    input  logic [15:0]       entry_count_i,
    // slot state
    output logic              clear_slots_o,
    output logic              clear_all_o,
    output logic [15:0]       clear_base_o,
    output logic [15:0]       clear_count_o,
    output logic              clear_counters_o
);
  localparam logic [1:0] CMD_STORE_JOB = 2'd1;
  localparam logic [1:0] CMD_STORE_WORKER = 2'd2;
  localparam logic [1:0] CMD_REMOVE_JOB = 2'd3;

  typedef enum logic [2:0] {
    IDLE,
    CMD_DRAIN,     // commit: pipeline empty, results sent
    CMD_APPLY,
    RESET_DRAIN,   // soft reset: pipeline empty
    RESET_FLUSH,   // soft reset: queued results dropped
    RESET_APPLY
  } state_e;

  state_e state_q;
  logic [1:0] cmd_q;
  logic entry_ok, worker_ok;

  assign entry_ok = job_index_i < 32'(MAX_JOBS);
  assign worker_ok = worker_index_i < 32'(netagg_agg_pkg::MAX_WORKERS);
  assign entry_o = JOB_W'(job_index_i);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q <= IDLE;
      cmd_q <= '0;
    end else begin
      unique case (state_q)
        IDLE: begin
          if (soft_reset_i) state_q <= RESET_DRAIN;
          else if (commit_i) begin
            state_q <= CMD_DRAIN;
            cmd_q <= commit_cmd_i;
          end
        end
        CMD_DRAIN: if (accum_empty_i && replicate_idle_i) state_q <= CMD_APPLY;
        CMD_APPLY: state_q <= IDLE;
        RESET_DRAIN: if (accum_empty_i) state_q <= RESET_FLUSH;
        RESET_FLUSH: if (replicate_idle_i) state_q <= RESET_APPLY;
        RESET_APPLY: state_q <= IDLE;
        default: state_q <= IDLE;
      endcase
    end
  end

  assign busy_o = (state_q != IDLE);
  assign block_o = (state_q != IDLE);
  assign flush_o = (state_q == RESET_FLUSH);

  always_comb begin
    store_job_o = 1'b0;
    store_worker_o = 1'b0;
    remove_job_o = 1'b0;
    clear_table_o = 1'b0;
    clear_slots_o = 1'b0;
    clear_all_o = 1'b0;
    clear_base_o = '0;
    clear_count_o = '0;
    clear_counters_o = 1'b0;
    if (state_q == CMD_APPLY && entry_ok) begin
      unique case (cmd_q)
        CMD_STORE_JOB: begin
          store_job_o = 1'b1;
          clear_slots_o = 1'b1;
          clear_base_o = job_slots_i[15:0];
          clear_count_o = job_slots_i[31:16];
        end
        CMD_STORE_WORKER: store_worker_o = worker_ok;
        CMD_REMOVE_JOB: begin
          remove_job_o = 1'b1;
          clear_slots_o = 1'b1;
          clear_base_o = entry_base_i;
          clear_count_o = entry_count_i;
        end
        default: ;
      endcase
    end
    if (state_q == RESET_APPLY) begin
      clear_table_o = 1'b1;
      clear_slots_o = 1'b1;
      clear_all_o = 1'b1;
      clear_counters_o = 1'b1;
    end
  end

endmodule

`default_nettype wire

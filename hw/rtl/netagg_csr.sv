// SPDX-License-Identifier: Apache-2.0
// AXI4-Lite slave with the registers of formats/csr.json (offsets from the generated
// netagg_csr_pkg). Holds the configuration (aggregator address, the staged JOB_* / WORKER_*
// fields, COUNTER_INDEX) and turns a write that changes the sequence field of COMMIT or CONTROL
// into a one-cycle command for netagg_control. The JOB_PARENT_* registers are staged like JOB_*
// (a child's parent in an aggregation tree, stored with the job). While a command executes
// (busy_i) STATUS.busy is set and a further COMMIT or CONTROL write is not accepted until it is
// done; other registers stay writable. Reading COUNTER_LO latches the whole 64-bit counter for
// COUNTER_HI. JOB_ENTRY_* read the job table entry JOB_INDEX selects, as stored (0 unless it is
// valid). Unmapped addresses read 0 and ignore writes; every response is OKAY.
`default_nettype none

module netagg_csr #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned SLOTS = 64,
    parameter int unsigned MAX_BEATS = 16,
    parameter int unsigned MAX_JOBS = 8,
    parameter bit EXACT = 1'b1,  // FEATURES bit 5
    // derived, do not change
    parameter int unsigned AW = netagg_csr_pkg::CSR_ADDR_BITS,
    parameter int unsigned IDX_W = netagg_csr_pkg::COUNTER_INDEX_BITS
) (
    input  logic             clk_i,
    input  logic             rst_ni,
    // AXI4-Lite
    input  netagg_agg_pkg::axil_req_t axil_i,
    output netagg_agg_pkg::axil_rsp_t axil_o,
    // configuration
    output logic [47:0]      agg_mac_o,
    output logic [31:0]      agg_ip_o,
    output logic [15:0]      agg_udp_port_o,
    output logic [31:0]      job_index_o,
    output logic [31:0]      job_id_o,
    output logic [31:0]      job_workers_o,
    output logic [31:0]      job_slots_o,
    output logic [31:0]      job_elements_o,
    output logic [31:0]      worker_index_o,
    output logic [31:0]      worker_ip_o,
    output logic [31:0]      worker_udp_o,
    output logic [47:0]      worker_mac_o,
    output logic [31:0]      parent_id_o,     // JOB_PARENT_ID: 15:0 job id, 31 valid
    output logic [15:0]      parent_rank_o,
    output logic [15:0]      parent_slots_o,  // the job's first slot at the parent
    output logic [31:0]      parent_ip_o,
    output logic [31:0]      parent_udp_o,    // 15:0 UDP port, 19:16 egress port
    output logic [47:0]      parent_mac_o,
    // commands
    output logic             commit_o,        // COMMIT sequence changed: command ...
    output logic [1:0]       commit_cmd_o,    // ... this one
    output logic             soft_reset_o,    // CONTROL sequence changed with bit 0
    output logic             clear_counters_o,  // ... with bit 1
    input  logic             busy_i,
    // the job table entry job_index_o selects (its low bits), for JOB_ENTRY_*
    input  logic             entry_valid_i,
    input  logic [15:0]      entry_job_id_i,
    input  logic [netagg_agg_pkg::NWORKERS_W-1:0] entry_workers_i,
    input  logic [15:0]      entry_slot_base_i,
    input  logic [15:0]      entry_slot_count_i,
    input  logic [15:0]      entry_elements_i,
    input  logic             entry_parent_i,
    input  logic [15:0]      entry_parent_id_i,
    // counters
    output logic [IDX_W-1:0] counter_index_o,
    input  logic [63:0]      counter_value_i
);
  localparam logic [15:0] DESIGN_VERSION = 16'd1;
  localparam logic [7:0] WIRE_VERSION = netagg_pkg::WIRE_VERSION;

  if (MAX_JOBS > 255 || MAX_BEATS > 255 || NUM_PORTS > 15) begin : gen_bad_features
    $error("netagg_csr: FEATURES cannot describe these parameters");
  end

  logic [31:0] control_q, agg_mac_lo_q, agg_mac_hi_q, agg_ip_q, agg_udp_port_q, job_index_q;
  logic [31:0] job_id_q, job_workers_q, job_slots_q, job_elements_q, worker_index_q;
  logic [31:0] worker_ip_q, worker_udp_q, worker_mac_lo_q, worker_mac_hi_q, commit_q;
  logic [31:0] counter_index_q, counter_hi_q;
  logic [31:0] parent_id_q, parent_rank_q, parent_slots_q, parent_ip_q, parent_udp_q;
  logic [31:0] parent_mac_lo_q, parent_mac_hi_q;
  logic bvalid_q, rvalid_q, cmd_pending_q, busy;
  logic [31:0] rdata_q;

  // ---- writes ------------------------------------------------------------------------------
  logic [AW-1:0] waddr;
  logic is_command, take_write;
  logic [31:0] wmask;
  assign waddr = {axil_i.awaddr[AW-1:2], 2'b00};
  assign is_command = (waddr == netagg_csr_pkg::CSR_COMMIT) ||
                      (waddr == netagg_csr_pkg::CSR_CONTROL);
  assign busy = busy_i || cmd_pending_q;
  assign take_write = axil_i.awvalid && axil_i.wvalid && !bvalid_q && !(is_command && busy);
  assign axil_o.awready = take_write;
  assign axil_o.wready = take_write;
  assign axil_o.bvalid = bvalid_q;
  assign axil_o.bresp = 2'b00;
  for (genvar b = 0; b < 4; b++) begin : gen_strobe
    assign wmask[8*b+:8] = {8{axil_i.wstrb[b]}};
  end

  function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data,
                                        input logic [31:0] mask);
    merge = (old & ~mask) | (data & mask);
  endfunction

  logic [31:0] commit_new, control_new;
  assign commit_new = merge(commit_q, axil_i.wdata, wmask);
  assign control_new = merge(control_q, axil_i.wdata, wmask);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      control_q <= '0;
      agg_mac_lo_q <= '0;
      agg_mac_hi_q <= '0;
      agg_ip_q <= '0;
      agg_udp_port_q <= netagg_csr_pkg::CSR_AGG_UDP_PORT_RESET;
      job_index_q <= '0;
      job_id_q <= '0;
      job_workers_q <= '0;
      job_slots_q <= '0;
      job_elements_q <= '0;
      worker_index_q <= '0;
      worker_ip_q <= '0;
      worker_udp_q <= '0;
      worker_mac_lo_q <= '0;
      worker_mac_hi_q <= '0;
      commit_q <= '0;
      counter_index_q <= '0;
      parent_id_q <= '0;
      parent_rank_q <= '0;
      parent_slots_q <= '0;
      parent_ip_q <= '0;
      parent_udp_q <= '0;
      parent_mac_lo_q <= '0;
      parent_mac_hi_q <= '0;
      bvalid_q <= 1'b0;
      cmd_pending_q <= 1'b0;
      commit_o <= 1'b0;
      commit_cmd_o <= '0;
      soft_reset_o <= 1'b0;
      clear_counters_o <= 1'b0;
    end else begin
      commit_o <= 1'b0;
      soft_reset_o <= 1'b0;
      clear_counters_o <= 1'b0;
      cmd_pending_q <= 1'b0;
      if (bvalid_q && axil_i.bready) bvalid_q <= 1'b0;
      if (take_write) begin
        bvalid_q <= 1'b1;
        unique case (waddr)
          netagg_csr_pkg::CSR_CONTROL: begin
            control_q <= control_new;
            if (control_new[31:16] != control_q[31:16]) begin
              soft_reset_o <= control_new[0];
              clear_counters_o <= control_new[1];
              cmd_pending_q <= control_new[0];
            end
          end
          netagg_csr_pkg::CSR_AGG_MAC_LO: agg_mac_lo_q <= merge(agg_mac_lo_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_AGG_MAC_HI: agg_mac_hi_q <= merge(agg_mac_hi_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_AGG_IP: agg_ip_q <= merge(agg_ip_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_AGG_UDP_PORT: agg_udp_port_q <= merge(agg_udp_port_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_INDEX: job_index_q <= merge(job_index_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_ID: job_id_q <= merge(job_id_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_WORKERS: job_workers_q <= merge(job_workers_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_SLOTS: job_slots_q <= merge(job_slots_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_ELEMENTS: job_elements_q <= merge(job_elements_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_WORKER_INDEX: worker_index_q <= merge(worker_index_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_WORKER_IP: worker_ip_q <= merge(worker_ip_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_WORKER_UDP_PORT: worker_udp_q <= merge(worker_udp_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_WORKER_MAC_LO:
            worker_mac_lo_q <= merge(worker_mac_lo_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_WORKER_MAC_HI:
            worker_mac_hi_q <= merge(worker_mac_hi_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_COMMIT: begin
            commit_q <= commit_new;
            if (commit_new[31:16] != commit_q[31:16] && commit_new[1:0] != 2'd0) begin
              commit_o <= 1'b1;
              commit_cmd_o <= commit_new[1:0];
              cmd_pending_q <= 1'b1;
            end
          end
          netagg_csr_pkg::CSR_COUNTER_INDEX:
            counter_index_q <= merge(counter_index_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_ID: parent_id_q <= merge(parent_id_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_RANK:
            parent_rank_q <= merge(parent_rank_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_SLOTS:
            parent_slots_q <= merge(parent_slots_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_IP: parent_ip_q <= merge(parent_ip_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_UDP_PORT:
            parent_udp_q <= merge(parent_udp_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_MAC_LO:
            parent_mac_lo_q <= merge(parent_mac_lo_q, axil_i.wdata, wmask);
          netagg_csr_pkg::CSR_JOB_PARENT_MAC_HI:
            parent_mac_hi_q <= merge(parent_mac_hi_q, axil_i.wdata, wmask);
          default: ;  // read-only or unmapped
        endcase
      end
    end
  end

  // ---- reads -------------------------------------------------------------------------------
  logic [AW-1:0] raddr;
  logic take_read, entry_shown;
  logic [31:0] rvalue;
  // JOB_ENTRY_* show a valid entry of the table, else read 0.
  assign entry_shown = entry_valid_i && job_index_q < 32'(MAX_JOBS);
  assign raddr = {axil_i.araddr[AW-1:2], 2'b00};
  assign take_read = axil_i.arvalid && !rvalid_q;
  assign axil_o.arready = take_read;
  assign axil_o.rvalid = rvalid_q;
  assign axil_o.rdata = rdata_q;
  assign axil_o.rresp = 2'b00;

  always_comb begin
    unique case (raddr)
      netagg_csr_pkg::CSR_VERSION: rvalue = {DESIGN_VERSION, 8'd0, WIRE_VERSION};
      netagg_csr_pkg::CSR_FEATURES:
        rvalue = {8'(MAX_BEATS), 8'($clog2(SLOTS)), 8'(MAX_JOBS), 4'd0, 4'(NUM_PORTS)} |
                 netagg_csr_pkg::FEATURES_JOB_TABLE_READBACK |
                 (EXACT ? netagg_csr_pkg::FEATURES_EXACT : 32'd0);
      netagg_csr_pkg::CSR_CONTROL: rvalue = control_q;
      netagg_csr_pkg::CSR_STATUS: rvalue = {31'd0, busy};
      netagg_csr_pkg::CSR_AGG_MAC_LO: rvalue = agg_mac_lo_q;
      netagg_csr_pkg::CSR_AGG_MAC_HI: rvalue = agg_mac_hi_q;
      netagg_csr_pkg::CSR_AGG_IP: rvalue = agg_ip_q;
      netagg_csr_pkg::CSR_AGG_UDP_PORT: rvalue = agg_udp_port_q;
      netagg_csr_pkg::CSR_JOB_INDEX: rvalue = job_index_q;
      netagg_csr_pkg::CSR_JOB_ID: rvalue = job_id_q;
      netagg_csr_pkg::CSR_JOB_WORKERS: rvalue = job_workers_q;
      netagg_csr_pkg::CSR_JOB_SLOTS: rvalue = job_slots_q;
      netagg_csr_pkg::CSR_JOB_ELEMENTS: rvalue = job_elements_q;
      netagg_csr_pkg::CSR_WORKER_INDEX: rvalue = worker_index_q;
      netagg_csr_pkg::CSR_WORKER_IP: rvalue = worker_ip_q;
      netagg_csr_pkg::CSR_WORKER_UDP_PORT: rvalue = worker_udp_q;
      netagg_csr_pkg::CSR_WORKER_MAC_LO: rvalue = worker_mac_lo_q;
      netagg_csr_pkg::CSR_WORKER_MAC_HI: rvalue = worker_mac_hi_q;
      netagg_csr_pkg::CSR_COMMIT: rvalue = commit_q;
      netagg_csr_pkg::CSR_COUNTER_INDEX: rvalue = counter_index_q;
      netagg_csr_pkg::CSR_COUNTER_LO: rvalue = counter_value_i[31:0];
      netagg_csr_pkg::CSR_COUNTER_HI: rvalue = counter_hi_q;
      netagg_csr_pkg::CSR_JOB_PARENT_ID: rvalue = parent_id_q;
      netagg_csr_pkg::CSR_JOB_PARENT_RANK: rvalue = parent_rank_q;
      netagg_csr_pkg::CSR_JOB_PARENT_SLOTS: rvalue = parent_slots_q;
      netagg_csr_pkg::CSR_JOB_PARENT_IP: rvalue = parent_ip_q;
      netagg_csr_pkg::CSR_JOB_PARENT_UDP_PORT: rvalue = parent_udp_q;
      netagg_csr_pkg::CSR_JOB_PARENT_MAC_LO: rvalue = parent_mac_lo_q;
      netagg_csr_pkg::CSR_JOB_PARENT_MAC_HI: rvalue = parent_mac_hi_q;
      netagg_csr_pkg::CSR_JOB_ENTRY_ID:
        rvalue = entry_shown ? (netagg_csr_pkg::JOB_ENTRY_VALID | 32'(entry_job_id_i)) : '0;
      netagg_csr_pkg::CSR_JOB_ENTRY_WORKERS: rvalue = entry_shown ? 32'(entry_workers_i) : '0;
      netagg_csr_pkg::CSR_JOB_ENTRY_SLOTS:
        rvalue = entry_shown ? {entry_slot_count_i, entry_slot_base_i} : '0;
      netagg_csr_pkg::CSR_JOB_ENTRY_ELEMENTS: rvalue = entry_shown ? 32'(entry_elements_i) : '0;
      netagg_csr_pkg::CSR_JOB_ENTRY_PARENT_ID:
        rvalue = (entry_shown && entry_parent_i) ?
                 (netagg_csr_pkg::JOB_ENTRY_HAS_PARENT | 32'(entry_parent_id_i)) : '0;
      default: rvalue = '0;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rvalid_q <= 1'b0;
      rdata_q <= '0;
      counter_hi_q <= '0;
    end else begin
      if (rvalid_q && axil_i.rready) rvalid_q <= 1'b0;
      if (take_read) begin
        rvalid_q <= 1'b1;
        rdata_q <= rvalue;
        if (raddr == netagg_csr_pkg::CSR_COUNTER_LO) counter_hi_q <= counter_value_i[63:32];
      end
    end
  end

  assign agg_mac_o = {agg_mac_hi_q[15:0], agg_mac_lo_q};
  assign agg_ip_o = agg_ip_q;
  assign agg_udp_port_o = agg_udp_port_q[15:0];
  assign job_index_o = job_index_q;
  assign job_id_o = job_id_q;
  assign job_workers_o = job_workers_q;
  assign job_slots_o = job_slots_q;
  assign job_elements_o = job_elements_q;
  assign worker_index_o = worker_index_q;
  assign worker_ip_o = worker_ip_q;
  assign worker_udp_o = worker_udp_q;
  assign worker_mac_o = {worker_mac_hi_q[15:0], worker_mac_lo_q};
  assign parent_id_o = parent_id_q;
  assign parent_rank_o = parent_rank_q[15:0];
  assign parent_slots_o = parent_slots_q[15:0];
  assign parent_ip_o = parent_ip_q;
  assign parent_udp_o = parent_udp_q;
  assign parent_mac_o = {parent_mac_hi_q[15:0], parent_mac_lo_q};
  assign counter_index_o = (counter_index_q < 32'(netagg_csr_pkg::NUM_COUNTERS)) ?
                           IDX_W'(counter_index_q) : IDX_W'(netagg_csr_pkg::NUM_COUNTERS);

  logic unused;
  assign unused = ^{axil_i.awaddr[1:0], axil_i.araddr[1:0], agg_mac_hi_q[31:16], agg_udp_port_q[31:16],
                    worker_mac_hi_q[31:16], parent_rank_q[31:16], parent_slots_q[31:16],
                    parent_mac_hi_q[31:16]};

endmodule

`default_nettype wire

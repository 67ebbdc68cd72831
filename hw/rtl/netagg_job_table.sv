// SPDX-License-Identifier: Apache-2.0
// The job table: MAX_JOBS entries (job id, workers, slot range, elements per packet, and for a
// child in an aggregation tree its parent: job id and rank there, the parent's first slot, its
// IPv4 address, UDP port, MAC and the egress port towards it) and per entry MAX_WORKERS worker
// records (IPv4 address, UDP port, egress port, MAC). Written by the control sequencer when a
// COMMIT command executes (netagg_control); read combinationally by the head check of every
// ingress port (job id -> entry, rank -> registered source; a result: the parent's job id and
// address -> the child's entry) and by the replication stage (entry -> which ranks leave on
// which egress port, rank -> addresses, the parent's addresses). The entry JOB_INDEX selects
// (wr_entry_i) is also read for the commands (its slot range) and for the CSR readback
// (JOB_ENTRY_*), off the packet path.
`default_nettype none

module netagg_job_table #(
    parameter int unsigned NUM_PORTS = 4,  // ingress/egress ports
    parameter int unsigned MAX_JOBS = 8,   // entries
    // derived, do not change
    parameter int unsigned JOB_W = (MAX_JOBS > 1) ? $clog2(MAX_JOBS) : 1,
    parameter int unsigned PORT_W = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 1
) (
    input  logic                      clk_i,
    input  logic                      rst_ni,
    // writes (one command a cycle)
    input  logic                      store_job_i,     // entry <- job fields
    input  logic                      store_worker_i,  // entry, rank <- worker fields
    input  logic                      remove_job_i,    // entry invalid
    input  logic                      clear_all_i,     // every entry invalid (soft reset)
    input  logic [JOB_W-1:0]          wr_entry_i,
    input  logic                      wr_valid_i,      // JOB_ID bit 31
    input  logic [15:0]               wr_job_id_i,
    input  logic [31:0]               wr_workers_i,    // JOB_WORKERS
    input  logic [31:0]               wr_slots_i,      // JOB_SLOTS: 15:0 first, 31:16 count
    input  logic [15:0]               wr_elements_i,
    input  logic [netagg_agg_pkg::RANK_W-1:0] wr_rank_i,
    input  logic [31:0]               wr_ip_i,
    input  logic [31:0]               wr_udp_i,        // WORKER_UDP_PORT: 15:0 port, 19:16 egress
    input  logic [47:0]               wr_mac_i,
    input  logic [31:0]               wr_parent_id_i,    // JOB_PARENT_ID: 15:0 id, 31 valid
    input  logic [15:0]               wr_parent_rank_i,
    input  logic [15:0]               wr_parent_base_i,
    input  logic [31:0]               wr_parent_ip_i,
    input  logic [31:0]               wr_parent_udp_i,   // 15:0 port, 19:16 egress port
    input  logic [47:0]               wr_parent_mac_i,
    output logic [15:0]               ent_slot_base_o, // entry wr_entry_i's slot range
    output logic [15:0]               ent_slot_count_o,
    // the CSR readback (JOB_ENTRY_*): entry wr_entry_i as stored
    output logic                      ent_valid_o,
    output logic [15:0]               ent_job_id_o,
    output logic [netagg_agg_pkg::NWORKERS_W-1:0] ent_workers_o,
    output logic [15:0]               ent_elements_o,
    output logic                      ent_parent_o,    // the entry has a parent
    output logic [15:0]               ent_parent_id_o,
    // head checks, one lookup per ingress port (flat: port p at [p*W +: W]); a result
    // (lk_result_i) is looked up by its source and job id among the entries' parents
    input  logic [NUM_PORTS*16-1:0]   lk_job_id_i,
    input  logic [NUM_PORTS*16-1:0]   lk_rank_i,
    input  logic [NUM_PORTS-1:0]      lk_result_i,
    input  logic [NUM_PORTS*32-1:0]   lk_src_ip_i,
    input  logic [NUM_PORTS*16-1:0]   lk_src_udp_i,
    output logic [NUM_PORTS-1:0]      lk_found_o,
    output logic [NUM_PORTS*16-1:0]   lk_id_o,          // the entry's job id
    output logic [NUM_PORTS-1:0]      lk_parent_o,      // the entry has a parent
    output logic [NUM_PORTS*16-1:0]   lk_parent_rank_o,
    output logic [NUM_PORTS*16-1:0]   lk_parent_base_o,
    output logic [NUM_PORTS*JOB_W-1:0] lk_entry_o,
    output logic [NUM_PORTS*netagg_agg_pkg::NWORKERS_W-1:0] lk_workers_o,
    output logic [NUM_PORTS*16-1:0]   lk_slot_base_o,
    output logic [NUM_PORTS*16-1:0]   lk_slot_count_o,
    output logic [NUM_PORTS*16-1:0]   lk_elements_o,
    output logic [NUM_PORTS*32-1:0]   lk_ip_o,         // registered source of that rank
    output logic [NUM_PORTS*16-1:0]   lk_udp_o,
    // replication: which ranks of entry pm_entry_i leave on each egress port (port p's at
    // [p*32 +: 32]), and the addresses of one rank per port of entry rp_entry_i
    input  logic [JOB_W-1:0]          pm_entry_i,
    output logic [NUM_PORTS*netagg_agg_pkg::MAX_WORKERS-1:0] pm_port_ranks_o,
    input  logic [JOB_W-1:0]          rp_entry_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::RANK_W-1:0] rp_rank_i,
    output logic [NUM_PORTS*48-1:0]   rp_mac_o,
    output logic [NUM_PORTS*32-1:0]   rp_ip_o,
    output logic [NUM_PORTS*16-1:0]   rp_udp_o,
    // trees: the parent of entry pm_entry_i (its egress port) and of rp_entry_i (addresses,
    // job id and rank there, parent slot - own slot)
    output logic [PORT_W-1:0]         pm_parent_port_o,
    output logic [47:0]               rp_parent_mac_o,
    output logic [31:0]               rp_parent_ip_o,
    output logic [15:0]               rp_parent_udp_o,
    output logic [15:0]               rp_parent_id_o,
    output logic [15:0]               rp_parent_rank_o,
    output logic [15:0]               rp_parent_delta_o
);
  localparam int unsigned MW = netagg_agg_pkg::MAX_WORKERS;
  localparam int unsigned RW = netagg_agg_pkg::RANK_W;
  localparam int unsigned NW = netagg_agg_pkg::NWORKERS_W;
  localparam int unsigned RECORDS = MAX_JOBS * MW;

  if (MAX_JOBS < 1 || MAX_JOBS > 256) begin : gen_bad_jobs
    $error("netagg_job_table: MAX_JOBS must be in 1..256");
  end

  logic [MAX_JOBS-1:0] valid_q;
  // A worker record reads as all zeros until stored and again after a soft reset (as the
  // reference model's cleared records).
  logic [RECORDS-1:0] stored_q;
  logic [15:0] job_id_q[MAX_JOBS];
  logic [NW-1:0] workers_q[MAX_JOBS];
  logic [15:0] slot_base_q[MAX_JOBS];
  logic [15:0] slot_count_q[MAX_JOBS];
  logic [15:0] elements_q[MAX_JOBS];
  logic [31:0] ip_q[RECORDS];
  logic [15:0] udp_q[RECORDS];
  logic [PORT_W-1:0] port_q[RECORDS];
  logic [47:0] mac_q[RECORDS];
  logic [MAX_JOBS-1:0] parent_q;  // the entry has a parent
  logic [15:0] parent_id_q[MAX_JOBS];
  logic [15:0] parent_rank_q[MAX_JOBS];
  logic [15:0] parent_base_q[MAX_JOBS];
  logic [31:0] parent_ip_q[MAX_JOBS];
  logic [15:0] parent_udp_q[MAX_JOBS];
  logic [PORT_W-1:0] parent_port_q[MAX_JOBS];
  logic [47:0] parent_mac_q[MAX_JOBS];

  // A job needs 1..MAX_WORKERS workers (else it is stored as not valid); an egress port the
  // design does not have is port 0.
  logic wr_job_ok;
  logic [3:0] wr_egress;
  logic [PORT_W-1:0] wr_port;
  assign wr_job_ok = wr_valid_i && wr_workers_i >= 32'd1 && wr_workers_i <= 32'(MW);
  assign wr_egress = wr_udp_i[19:16];
  assign wr_port = (32'(wr_egress) < NUM_PORTS) ? PORT_W'(wr_egress) : '0;
  logic [3:0] wr_parent_egress;
  logic [PORT_W-1:0] wr_parent_port;
  assign wr_parent_egress = wr_parent_udp_i[19:16];
  assign wr_parent_port = (32'(wr_parent_egress) < NUM_PORTS) ? PORT_W'(wr_parent_egress) : '0;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      valid_q <= '0;
      parent_q <= '0;
    end else if (clear_all_i) begin
      valid_q <= '0;
      parent_q <= '0;
    end else if (store_job_i) begin
      valid_q[wr_entry_i] <= wr_job_ok;
      parent_q[wr_entry_i] <= wr_parent_id_i[31];
    end else if (remove_job_i) begin
      valid_q[wr_entry_i] <= 1'b0;
      parent_q[wr_entry_i] <= 1'b0;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_all_i) stored_q <= '0;
    else if (store_worker_i) stored_q[32'(wr_entry_i) * MW + 32'(wr_rank_i)] <= 1'b1;
  end

  always_ff @(posedge clk_i) begin
    if (store_job_i) begin
      job_id_q[wr_entry_i] <= wr_job_id_i;
      workers_q[wr_entry_i] <= wr_job_ok ? NW'(wr_workers_i) : '0;
      slot_base_q[wr_entry_i] <= wr_slots_i[15:0];
      slot_count_q[wr_entry_i] <= wr_slots_i[31:16];
      elements_q[wr_entry_i] <= wr_elements_i;
      parent_id_q[wr_entry_i] <= wr_parent_id_i[15:0];
      parent_rank_q[wr_entry_i] <= wr_parent_rank_i;
      parent_base_q[wr_entry_i] <= wr_parent_base_i;
      parent_ip_q[wr_entry_i] <= wr_parent_ip_i;
      parent_udp_q[wr_entry_i] <= wr_parent_udp_i[15:0];
      parent_port_q[wr_entry_i] <= wr_parent_port;
      parent_mac_q[wr_entry_i] <= wr_parent_mac_i;
    end else if (remove_job_i) begin  // an emptied entry: removing it again clears nothing
      job_id_q[wr_entry_i] <= '0;
      workers_q[wr_entry_i] <= '0;
      slot_base_q[wr_entry_i] <= '0;
      slot_count_q[wr_entry_i] <= '0;
      elements_q[wr_entry_i] <= '0;
    end
    if (store_worker_i) begin
      ip_q[32'(wr_entry_i) * MW + 32'(wr_rank_i)] <= wr_ip_i;
      udp_q[32'(wr_entry_i) * MW + 32'(wr_rank_i)] <= wr_udp_i[15:0];
      port_q[32'(wr_entry_i) * MW + 32'(wr_rank_i)] <= wr_port;
      mac_q[32'(wr_entry_i) * MW + 32'(wr_rank_i)] <= wr_mac_i;
    end
  end

  assign ent_slot_base_o = slot_base_q[wr_entry_i];
  assign ent_slot_count_o = slot_count_q[wr_entry_i];
  assign ent_valid_o = valid_q[wr_entry_i];
  assign ent_job_id_o = job_id_q[wr_entry_i];
  assign ent_workers_o = workers_q[wr_entry_i];
  assign ent_elements_o = elements_q[wr_entry_i];
  assign ent_parent_o = parent_q[wr_entry_i];
  assign ent_parent_id_o = parent_id_q[wr_entry_i];

  // Head checks: the lowest valid entry with the job id, then the rank's record; for a result,
  // the lowest valid entry whose parent has the job id, the source address and UDP port.
  for (genvar p = 0; p < NUM_PORTS; p++) begin : gen_lookup
    logic found, found_c, found_r;
    logic [JOB_W-1:0] entry, entry_c, entry_r;
    logic [RW-1:0] rank;
    always_comb begin
      found_c = 1'b0;
      entry_c = '0;
      found_r = 1'b0;
      entry_r = '0;
      for (int e = MAX_JOBS - 1; e >= 0; e--) begin
        if (valid_q[e] && job_id_q[e] == lk_job_id_i[p*16+:16]) begin
          found_c = 1'b1;
          entry_c = JOB_W'(e);
        end
        if (valid_q[e] && parent_q[e] && parent_id_q[e] == lk_job_id_i[p*16+:16] &&
            parent_ip_q[e] == lk_src_ip_i[p*32+:32] && parent_udp_q[e] == lk_src_udp_i[p*16+:16]) begin
          found_r = 1'b1;
          entry_r = JOB_W'(e);
        end
      end
      found = lk_result_i[p] ? found_r : found_c;
      entry = lk_result_i[p] ? entry_r : entry_c;
    end
    assign rank = lk_rank_i[p*16+:RW];  // the head check compares the whole rank with workers
    assign lk_found_o[p] = found;
    assign lk_entry_o[p*JOB_W+:JOB_W] = entry;
    assign lk_id_o[p*16+:16] = job_id_q[entry];
    assign lk_parent_o[p] = parent_q[entry];
    assign lk_parent_rank_o[p*16+:16] = parent_rank_q[entry];
    assign lk_parent_base_o[p*16+:16] = parent_base_q[entry];
    assign lk_workers_o[p*NW+:NW] = workers_q[entry];
    assign lk_slot_base_o[p*16+:16] = slot_base_q[entry];
    assign lk_slot_count_o[p*16+:16] = slot_count_q[entry];
    assign lk_elements_o[p*16+:16] = elements_q[entry];
    logic stored;
    assign stored = stored_q[32'(entry) * MW + 32'(rank)];
    assign lk_ip_o[p*32+:32] = stored ? ip_q[32'(entry) * MW + 32'(rank)] : '0;
    assign lk_udp_o[p*16+:16] = stored ? udp_q[32'(entry) * MW + 32'(rank)] : '0;
  end

  // Replication: ranks per egress port, and each port's current rank's addresses.
  for (genvar p = 0; p < NUM_PORTS; p++) begin : gen_replicate
    logic [RW-1:0] rank;
    logic stored;
    for (genvar r = 0; r < MW; r++) begin : gen_rank
      logic [PORT_W-1:0] egress;
      assign egress = stored_q[32'(pm_entry_i) * MW + r] ? port_q[32'(pm_entry_i) * MW + r] : '0;
      assign pm_port_ranks_o[p*MW+r] = (NW'(r) < workers_q[pm_entry_i]) && egress == PORT_W'(p);
    end
    assign rank = rp_rank_i[p*RW+:RW];
    assign stored = stored_q[32'(rp_entry_i) * MW + 32'(rank)];
    assign rp_mac_o[p*48+:48] = stored ? mac_q[32'(rp_entry_i) * MW + 32'(rank)] : '0;
    assign rp_ip_o[p*32+:32] = stored ? ip_q[32'(rp_entry_i) * MW + 32'(rank)] : '0;
    assign rp_udp_o[p*16+:16] = stored ? udp_q[32'(rp_entry_i) * MW + 32'(rank)] : '0;
  end

  // Trees: the parent of the entries the replication stage sends for.
  assign pm_parent_port_o = parent_port_q[pm_entry_i];
  assign rp_parent_mac_o = parent_mac_q[rp_entry_i];
  assign rp_parent_ip_o = parent_ip_q[rp_entry_i];
  assign rp_parent_udp_o = parent_udp_q[rp_entry_i];
  assign rp_parent_id_o = parent_id_q[rp_entry_i];
  assign rp_parent_rank_o = parent_rank_q[rp_entry_i];
  assign rp_parent_delta_o = parent_base_q[rp_entry_i] - slot_base_q[rp_entry_i];

  // The head checks use only the low bits of the rank to index (after comparing it whole).
  logic unused;
  assign unused = ^{lk_rank_i, wr_udp_i[31:20], wr_parent_id_i[30:16], wr_parent_udp_i[31:20]};

endmodule

`default_nettype wire

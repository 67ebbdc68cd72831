// SPDX-License-Identifier: Apache-2.0
// The aggregator with its ports as flat vectors (port p at [p*W +: W]); netagg_aggregator
// gives it the Vitis HLS port names. The packet walk: netagg_ingress (store, frame checks) ->
// netagg_admit (UDP port, job table checks) -> netagg_round (group, round decision, slot state)
// -> netagg_accum (adder tree, accumulators in netagg_slot_mem) -> netagg_replicate (result
// frames per worker, egress FIFOs) -> netagg_notice (the notices of drops, between the result
// frames of their ingress ports). netagg_csr, netagg_control and netagg_counters around them.
`default_nettype none

module netagg_core #(
    parameter int unsigned NUM_PORTS = netagg_pkg::NUM_PORTS_DEFAULT,  // ports, 1..8
    parameter int unsigned SLOTS = netagg_pkg::SLOTS_DEFAULT,  // slots (two sets), a power of 2
    parameter int unsigned MAX_BEATS = netagg_pkg::MAX_BEATS_DEFAULT,  // beats a slot holds
    parameter int unsigned MAX_JOBS = netagg_pkg::MAX_JOBS_DEFAULT,    // job table entries
    parameter int unsigned STAGES = netagg_pkg::FP32_ADD_STAGES_DEFAULT,  // fp32 add latency
    parameter int unsigned IN_FRAMES = 3,   // frames each ingress buffer holds (full rate: 3)
    parameter int unsigned RQ_DEPTH = 16,   // results queued (full rate: >= adder pipeline)
    parameter int unsigned OUT_DEPTH = 4,   // egress FIFO beats per port
    parameter int unsigned NQ_DEPTH = 8,    // notices queued per port
    parameter bit EXACT = 1'b1              // exact fp32 (FEATURES bit 5; NUM_PORTS >= 2)
) (
    input  logic                                        clk_i,
    input  logic                                        rst_ni,
    input  logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0] rx_tdata_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::KEEP_W-1:0] rx_tkeep_i,
    input  logic [NUM_PORTS-1:0]                        rx_tlast_i,
    input  logic [NUM_PORTS-1:0]                        rx_tvalid_i,
    output logic [NUM_PORTS-1:0]                        rx_tready_o,
    output logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0] tx_tdata_o,
    output logic [NUM_PORTS*netagg_agg_pkg::KEEP_W-1:0] tx_tkeep_o,
    output logic [NUM_PORTS-1:0]                        tx_tlast_o,
    output logic [NUM_PORTS-1:0]                        tx_tvalid_o,
    input  logic [NUM_PORTS-1:0]                        tx_tready_i,
    input  netagg_agg_pkg::axil_req_t                   axil_i,
    output netagg_agg_pkg::axil_rsp_t                   axil_o
);
  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned KW = netagg_agg_pkg::KEEP_W;
  localparam int unsigned DESC_W = netagg_agg_pkg::DESC_W;
  localparam int unsigned ADDR_W = netagg_agg_pkg::ADDR_W;
  localparam int unsigned REASON_W = netagg_agg_pkg::REASON_W;
  localparam int unsigned NW = netagg_agg_pkg::NWORKERS_W;
  localparam int unsigned MW = netagg_agg_pkg::MAX_WORKERS;
  localparam int unsigned RW = netagg_agg_pkg::RANK_W;
  localparam int unsigned NC = netagg_csr_pkg::NUM_COUNTERS;
  localparam int unsigned JOB_W = (MAX_JOBS > 1) ? $clog2(MAX_JOBS) : 1;
  localparam int unsigned PORT_W = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 1;
  localparam int unsigned FI_W = (IN_FRAMES > 1) ? $clog2(IN_FRAMES) : 1;
  localparam int unsigned BI_W = (MAX_BEATS > 1) ? $clog2(MAX_BEATS) : 1;
  localparam int unsigned SLOT_W = $clog2(SLOTS);
  localparam int unsigned KEY_W = SLOT_W + 1;
  localparam int unsigned BEATS_W = $clog2(MAX_BEATS + 1);
  localparam int unsigned MEM_DEPTH = 2 * SLOTS * MAX_BEATS;
  localparam int unsigned MA_W = $clog2(MEM_DEPTH);
  localparam int unsigned HZ_N = STAGES + 1;
  localparam int unsigned LOCK_N = RQ_DEPTH + 1;
  localparam int unsigned INC_W = $clog2(NUM_PORTS + 1);
  localparam int unsigned MEM_W = EXACT ? 2 * W + 2 * netagg_agg_pkg::LANES : W;

  // netagg_agg_pkg repeats a few widths of the other packages (yosys reads no package's
  // parameters inside another package): they must agree.
  if (REASON_W != netagg_csr_pkg::COUNTER_INDEX_BITS ||
      netagg_agg_pkg::CSR_AW != netagg_csr_pkg::CSR_ADDR_BITS || W != netagg_pkg::BEAT_BITS ||
      KW != netagg_pkg::KEEP_BITS || netagg_agg_pkg::LANES != netagg_pkg::LANES ||
      MW != netagg_pkg::MAX_WORKERS_DEFAULT) begin : gen_bad_pkg
    $error("netagg_core: netagg_agg_pkg disagrees with netagg_pkg or netagg_csr_pkg");
  end
  if (MAX_BEATS * netagg_agg_pkg::LANES > netagg_pkg::MAX_COUNT) begin : gen_bad_beats
    $error("netagg_core: MAX_BEATS * LANES must not exceed 1024 (the wire's largest count)");
  end
  if (NUM_PORTS < 1 || NUM_PORTS > 8) begin : gen_bad_ports
    $error("netagg_core: NUM_PORTS must be in 1..8");
  end

  // ---- configuration and control -----------------------------------------------------------
  logic [47:0] agg_mac, worker_mac, parent_mac;
  logic [31:0] parent_id, parent_ip, parent_udp;
  logic [15:0] parent_rank, parent_slots;
  logic [31:0] agg_ip, job_index, job_id, job_workers, job_slots, job_elements;
  logic [31:0] worker_index, worker_ip, worker_udp;
  logic [15:0] agg_udp_port;
  logic commit, soft_reset, csr_clear_counters, busy;
  logic [1:0] commit_cmd;
  logic [netagg_csr_pkg::COUNTER_INDEX_BITS-1:0] counter_index;
  logic [63:0] counter_value;
  logic block, flush, store_job, store_worker, remove_job, clear_table;
  logic [JOB_W-1:0] wr_entry;
  logic [15:0] ent_base, ent_count, ent_job_id, ent_elements, ent_parent_id;
  logic [NW-1:0] ent_workers;
  logic ent_valid, ent_parent;
  logic clear_slots, clear_all, ctl_clear_counters;
  logic [15:0] clear_base, clear_count;
  logic accum_empty, round_empty, replicate_idle;  // round_empty: no group decided yet
  logic notice_idle;

  netagg_csr #(
      .NUM_PORTS(NUM_PORTS),
      .SLOTS    (SLOTS),
      .MAX_BEATS(MAX_BEATS),
      .MAX_JOBS (MAX_JOBS),
      .EXACT    (EXACT)
  ) u_csr (
      .clk_i           (clk_i),
      .rst_ni          (rst_ni),
      .axil_i          (axil_i),
      .axil_o          (axil_o),
      .agg_mac_o       (agg_mac),
      .agg_ip_o        (agg_ip),
      .agg_udp_port_o  (agg_udp_port),
      .job_index_o     (job_index),
      .job_id_o        (job_id),
      .job_workers_o   (job_workers),
      .job_slots_o     (job_slots),
      .job_elements_o  (job_elements),
      .worker_index_o  (worker_index),
      .worker_ip_o     (worker_ip),
      .worker_udp_o    (worker_udp),
      .worker_mac_o    (worker_mac),
      .parent_id_o     (parent_id),
      .parent_rank_o   (parent_rank),
      .parent_slots_o  (parent_slots),
      .parent_ip_o     (parent_ip),
      .parent_udp_o    (parent_udp),
      .parent_mac_o    (parent_mac),
      .commit_o        (commit),
      .commit_cmd_o    (commit_cmd),
      .soft_reset_o    (soft_reset),
      .clear_counters_o(csr_clear_counters),
      .busy_i          (busy),
      .entry_valid_i   (ent_valid),
      .entry_job_id_i  (ent_job_id),
      .entry_workers_i (ent_workers),
      .entry_slot_base_i(ent_base),
      .entry_slot_count_i(ent_count),
      .entry_elements_i(ent_elements),
      .entry_parent_i  (ent_parent),
      .entry_parent_id_i(ent_parent_id),
      .counter_index_o (counter_index),
      .counter_value_i (counter_value)
  );

  netagg_control #(
      .MAX_JOBS(MAX_JOBS)
  ) u_control (
      .clk_i           (clk_i),
      .rst_ni          (rst_ni),
      .commit_i        (commit),
      .commit_cmd_i    (commit_cmd),
      .soft_reset_i    (soft_reset),
      .job_index_i     (job_index),
      .job_slots_i     (job_slots),
      .worker_index_i  (worker_index),
      .busy_o          (busy),
      .accum_empty_i   (accum_empty && round_empty),
      .replicate_idle_i(replicate_idle && notice_idle),
      .block_o         (block),
      .flush_o         (flush),
      .store_job_o     (store_job),
      .store_worker_o  (store_worker),
      .remove_job_o    (remove_job),
      .clear_table_o   (clear_table),
      .entry_o         (wr_entry),
      .entry_base_i    (ent_base),
      .entry_count_i   (ent_count),
      .clear_slots_o   (clear_slots),
      .clear_all_o     (clear_all),
      .clear_base_o    (clear_base),
      .clear_count_o   (clear_count),
      .clear_counters_o(ctl_clear_counters)
  );

  // ---- ingress ------------------------------------------------------------------------------
  logic [NP-1:0] head_valid, pop, hold, frame_in, rd_en, free;
  logic [NP*DESC_W-1:0] head_desc;
  logic [NP*ADDR_W-1:0] head_addr;
  logic [NP*FI_W-1:0] head_frame, rd_frame, free_frame;
  logic [BI_W-1:0] rd_beat;
  logic [NP*W-1:0] rd_data;

  for (genvar p = 0; p < NP; p++) begin : gen_ingress
    netagg_ingress #(
        .MAX_BEATS(MAX_BEATS),
        .IN_FRAMES(IN_FRAMES),
        .EXACT    (EXACT)
    ) u_ingress (
        .clk_i       (clk_i),
        .rst_ni      (rst_ni),
        .s_tdata_i   (rx_tdata_i[p*W+:W]),
        .s_tkeep_i   (rx_tkeep_i[p*KW+:KW]),
        .s_tlast_i   (rx_tlast_i[p]),
        .s_tvalid_i  (rx_tvalid_i[p]),
        .s_tready_o  (rx_tready_o[p]),
        .frame_in_o  (frame_in[p]),
        .head_valid_o(head_valid[p]),
        .head_desc_o (head_desc[p*DESC_W+:DESC_W]),
        .head_frame_o(head_frame[p*FI_W+:FI_W]),
        .head_addr_o (head_addr[p*ADDR_W+:ADDR_W]),
        .head_pop_i  (pop[p]),
        .head_hold_i (hold[p]),
        .rd_en_i     (rd_en[p]),
        .rd_frame_i  (rd_frame[p*FI_W+:FI_W]),
        .rd_beat_i   (rd_beat),
        .rd_data_o   (rd_data[p*W+:W]),
        .free_i      (free[p]),
        .free_frame_i(free_frame[p*FI_W+:FI_W])
    );
  end

  // ---- job table and head checks ------------------------------------------------------------
  logic [NP*16-1:0] lk_job_id, lk_rank, lk_base, lk_count, lk_elements, lk_udp;
  logic [NP*16-1:0] lk_id, lk_parent_rank, lk_parent_base, lk_src_udp, adm_slot;
  logic [NP*32-1:0] lk_src_ip;
  logic [NP-1:0] lk_found, drop, eligible, lk_result, lk_parent;
  logic [NP*JOB_W-1:0] lk_entry;
  logic [NP*NW-1:0] lk_workers;
  logic [NP*32-1:0] lk_ip;
  logic [NP*REASON_W-1:0] reason;
  logic [JOB_W-1:0] pm_entry, rp_entry;
  logic [NP*MW-1:0] pm_port_ranks;
  logic [NP*RW-1:0] rp_rank;
  logic [NP*48-1:0] rp_mac;
  logic [NP*32-1:0] rp_ip;
  logic [NP*16-1:0] rp_udp;
  logic [PORT_W-1:0] pm_parent_port;
  logic [47:0] rp_parent_mac;
  logic [31:0] rp_parent_ip;
  logic [15:0] rp_parent_udp, rp_parent_id, rp_parent_rank, rp_parent_delta;

  /* verilator lint_off UNUSEDSIGNAL */
  netagg_agg_pkg::desc_t head_d;  // one head at a time (yosys: no structs in generate blocks)
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      head_d = head_desc[p*DESC_W+:DESC_W];
      lk_job_id[p*16+:16] = head_d.job_id;
      lk_rank[p*16+:16] = head_d.rank;
      lk_result[p] = !head_d.contribution;
      lk_src_ip[p*32+:32] = head_d.src_ip;
      lk_src_udp[p*16+:16] = head_d.src_port;
    end
  end

  netagg_job_table #(
      .NUM_PORTS(NUM_PORTS),
      .MAX_JOBS (MAX_JOBS)
  ) u_job_table (
      .clk_i           (clk_i),
      .rst_ni          (rst_ni),
      .store_job_i     (store_job),
      .store_worker_i  (store_worker),
      .remove_job_i    (remove_job),
      .clear_all_i     (clear_table),
      .wr_entry_i      (wr_entry),
      .wr_valid_i      (job_id[31]),
      .wr_job_id_i     (job_id[15:0]),
      .wr_workers_i    (job_workers),
      .wr_slots_i      (job_slots),
      .wr_elements_i   (job_elements[15:0]),
      .wr_rank_i       (worker_index[RW-1:0]),
      .wr_ip_i         (worker_ip),
      .wr_udp_i        (worker_udp),
      .wr_mac_i        (worker_mac),
      .wr_parent_id_i  (parent_id),
      .wr_parent_rank_i(parent_rank),
      .wr_parent_base_i(parent_slots),
      .wr_parent_ip_i  (parent_ip),
      .wr_parent_udp_i (parent_udp),
      .wr_parent_mac_i (parent_mac),
      .ent_slot_base_o (ent_base),
      .ent_slot_count_o(ent_count),
      .ent_valid_o     (ent_valid),
      .ent_job_id_o    (ent_job_id),
      .ent_workers_o   (ent_workers),
      .ent_elements_o  (ent_elements),
      .ent_parent_o    (ent_parent),
      .ent_parent_id_o (ent_parent_id),
      .lk_job_id_i     (lk_job_id),
      .lk_rank_i       (lk_rank),
      .lk_result_i     (lk_result),
      .lk_src_ip_i     (lk_src_ip),
      .lk_src_udp_i    (lk_src_udp),
      .lk_found_o      (lk_found),
      .lk_id_o         (lk_id),
      .lk_parent_o     (lk_parent),
      .lk_parent_rank_o(lk_parent_rank),
      .lk_parent_base_o(lk_parent_base),
      .lk_entry_o      (lk_entry),
      .lk_workers_o    (lk_workers),
      .lk_slot_base_o  (lk_base),
      .lk_slot_count_o (lk_count),
      .lk_elements_o   (lk_elements),
      .lk_ip_o         (lk_ip),
      .lk_udp_o        (lk_udp),
      .pm_entry_i      (pm_entry),
      .pm_port_ranks_o (pm_port_ranks),
      .rp_entry_i      (rp_entry),
      .rp_rank_i       (rp_rank),
      .rp_mac_o        (rp_mac),
      .rp_ip_o         (rp_ip),
      .rp_udp_o        (rp_udp),
      .pm_parent_port_o(pm_parent_port),
      .rp_parent_mac_o (rp_parent_mac),
      .rp_parent_ip_o  (rp_parent_ip),
      .rp_parent_udp_o (rp_parent_udp),
      .rp_parent_id_o  (rp_parent_id),
      .rp_parent_rank_o(rp_parent_rank),
      .rp_parent_delta_o(rp_parent_delta)
  );

  // netagg_round registers the head checks: a check made against a job table or AGG_UDP_PORT
  // that changes at this clock edge is stale (head_inval). The job table changes only through
  // its write commands; AGG_UDP_PORT reaches the checks a cycle after its CSR.
  logic [15:0] agg_udp_port_q;
  always_ff @(posedge clk_i) agg_udp_port_q <= agg_udp_port;
  assign head_inval = store_job || store_worker || remove_job || clear_table ||
                      agg_udp_port_q != agg_udp_port;

  for (genvar p = 0; p < NP; p++) begin : gen_admit
    netagg_admit #(
        .SLOTS    (SLOTS),
        .MAX_BEATS(MAX_BEATS)
    ) u_admit (
        .valid_i       (head_valid[p]),
        .desc_i        (head_desc[p*DESC_W+:DESC_W]),
        .agg_udp_port_i(agg_udp_port_q),
        .found_i       (lk_found[p]),
        .workers_i     (lk_workers[p*NW+:NW]),
        .slot_base_i   (lk_base[p*16+:16]),
        .slot_count_i  (lk_count[p*16+:16]),
        .elements_i    (lk_elements[p*16+:16]),
        .worker_ip_i   (lk_ip[p*32+:32]),
        .worker_udp_i  (lk_udp[p*16+:16]),
        .parent_rank_i (lk_parent_rank[p*16+:16]),
        .parent_base_i (lk_parent_base[p*16+:16]),
        .drop_o        (drop[p]),
        .reason_o      (reason[p*REASON_W+:REASON_W]),
        .eligible_o    (eligible[p]),
        .slot_o        (adm_slot[p*16+:16])
    );
  end

  // What the round decision sees of a head: a result from a job's parent (trees) as the job's
  // own, its slot and job id the child's (the replication stage sends its results to the
  // child's workers).
  logic [NP*DESC_W-1:0] round_desc;
  /* verilator lint_off UNUSEDSIGNAL */
  netagg_agg_pkg::desc_t round_d;
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      round_d = head_desc[p*DESC_W+:DESC_W];
      round_d.slot = adm_slot[p*16+:16];
      if (!round_d.contribution) round_d.job_id = lk_id[p*16+:16];
      round_desc[p*DESC_W+:DESC_W] = round_d;
    end
  end

  // ---- rounds -------------------------------------------------------------------------------
  logic accum_ready, tok_valid, tok_new, tok_result, head_inval;
  logic [BEATS_W-1:0] accum_busy;
  logic [HZ_N-1:0] hz_valid;
  logic [HZ_N*KEY_W-1:0] hz_key;
  logic [KEY_W-1:0] tok_key;
  logic [2:0] tok_dtype;
  logic [7:0] tok_scale;
  logic [15:0] tok_count;
  logic [BEATS_W-1:0] tok_beats;
  logic [NP-1:0] tok_members;
  logic [NP*FI_W-1:0] tok_frames;
  logic rq_space, rq_space2, rq_push, release_result;
  logic [LOCK_N-1:0] lock_valid;
  logic [LOCK_N*KEY_W-1:0] lock_key;
  logic [netagg_agg_pkg::RESULT_W-1:0] rq_data;
  logic [NC*INC_W-1:0] round_inc, inc;
  logic [NP-1:0] notice_room, ntc_drop;
  logic [NP*REASON_W-1:0] ntc_reason;
  logic [NP*32-1:0] ntc_waiting;

  netagg_round #(
      .NUM_PORTS(NUM_PORTS),
      .SLOTS    (SLOTS),
      .MAX_BEATS(MAX_BEATS),
      .JOB_W    (JOB_W),
      .FI_W     (FI_W),
      .HZ_N     (HZ_N),
      .LOCK_N   (LOCK_N),
      .INC_W    (INC_W)
  ) u_round (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .block_i      (block),
      .inval_i      (head_inval),
      .empty_o      (round_empty),
      .drop_i       (drop),
      .reason_i     (reason),
      .eligible_i   (eligible),
      .desc_i       (round_desc),
      .frame_i      (head_frame),
      .entry_i      (lk_entry),
      .workers_i    (lk_workers),
      .parent_i     (lk_parent),
      .pop_o        (pop),
      .hold_o       (hold),
      .accum_ready_i(accum_ready),
      .accum_busy_i (accum_busy),
      .hz_valid_i   (hz_valid),
      .hz_key_i     (hz_key),
      .tok_valid_o  (tok_valid),
      .tok_key_o    (tok_key),
      .tok_dtype_o  (tok_dtype),
      .tok_scale_o  (tok_scale),
      .tok_count_o  (tok_count),
      .tok_beats_o  (tok_beats),
      .tok_new_o    (tok_new),
      .tok_members_o(tok_members),
      .tok_frames_o (tok_frames),
      .tok_result_o (tok_result),
      .rq_space_i   (rq_space),
      .rq_space2_i  (rq_space2),
      .lock_valid_i (lock_valid),
      .lock_key_i   (lock_key),
      .rq_push_o    (rq_push),
      .rq_data_o    (rq_data),
      .clear_i      (clear_slots),
      .clear_all_i  (clear_all),
      .clear_base_i (clear_base),
      .clear_count_i(clear_count),
      .cnt_inc_o    (round_inc),
      .notice_room_i(notice_room),
      .ntc_drop_o   (ntc_drop),
      .ntc_reason_o (ntc_reason),
      .ntc_waiting_o(ntc_waiting)
  );

  // ---- accumulate ---------------------------------------------------------------------------
  logic mem_re_a, mem_re_b, mem_we, rnd_we;
  logic [MA_W-1:0] mem_raddr_a, mem_raddr_b, mem_waddr, rnd_waddr;
  logic [MEM_W-1:0] mem_rdata_a, mem_rdata_b, mem_wdata;
  logic [W-1:0] rnd_wdata, rnd_rdata;
  logic [6:0] oor_inc;

  netagg_accum #(
      .NUM_PORTS(NUM_PORTS),
      .SLOTS    (SLOTS),
      .MAX_BEATS(MAX_BEATS),
      .FI_W     (FI_W),
      .STAGES   (STAGES),
      .EXACT    (EXACT)
  ) u_accum (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .tok_valid_i  (tok_valid),
      .tok_key_i    (tok_key),
      .tok_dtype_i  (tok_dtype),
      .tok_scale_i  (tok_scale),
      .tok_count_i  (tok_count),
      .tok_beats_i  (tok_beats),
      .tok_new_i    (tok_new),
      .tok_members_i(tok_members),
      .tok_frames_i (tok_frames),
      .tok_result_i (tok_result),
      .ready_o      (accum_ready),
      .busy_o       (accum_busy),
      .hz_valid_o   (hz_valid),
      .hz_key_o     (hz_key),
      .rd_en_o      (rd_en),
      .rd_frame_o   (rd_frame),
      .rd_beat_o    (rd_beat),
      .rd_data_i    (rd_data),
      .free_o       (free),
      .free_frame_o (free_frame),
      .mem_re_o     (mem_re_a),
      .mem_raddr_o  (mem_raddr_a),
      .mem_rdata_i  (mem_rdata_a),
      .mem_we_o     (mem_we),
      .mem_waddr_o  (mem_waddr),
      .mem_wdata_o  (mem_wdata),
      .rnd_we_o     (rnd_we),
      .rnd_waddr_o  (rnd_waddr),
      .rnd_wdata_o  (rnd_wdata),
      .oor_inc_o    (oor_inc),
      .release_o    (release_result),
      .empty_o      (accum_empty)
  );

  netagg_slot_mem #(
      .DEPTH(MEM_DEPTH),
      .W    (MEM_W)
  ) u_slot_mem (
      .clk_i    (clk_i),
      .we_i     (mem_we),
      .waddr_i  (mem_waddr),
      .wdata_i  (mem_wdata),
      .re_a_i   (mem_re_a),
      .raddr_a_i(mem_raddr_a),
      .rdata_a_o(mem_rdata_a),
      .re_b_i   (mem_re_b),
      .raddr_b_i(mem_raddr_b),
      .rdata_b_o(mem_rdata_b)
  );

  // Exact fp32: the rounded bank, written by the adder pipeline, read by the results.
  if (EXACT) begin : gen_rnd_mem
    logic [W-1:0] rnd_rdata_a;  // (no second reader)
    netagg_slot_mem #(
        .DEPTH(MEM_DEPTH),
        .W    (W),
        .READS(1)
    ) u_rnd_mem (
        .clk_i    (clk_i),
        .we_i     (rnd_we),
        .waddr_i  (rnd_waddr),
        .wdata_i  (rnd_wdata),
        .re_a_i   (1'b0),
        .raddr_a_i('0),
        .rdata_a_o(rnd_rdata_a),
        .re_b_i   (mem_re_b),
        .raddr_b_i(mem_raddr_b),
        .rdata_b_o(rnd_rdata)
    );
    logic unused_rnd;
    assign unused_rnd = ^rnd_rdata_a;
  end else begin : gen_no_rnd_mem
    assign rnd_rdata = '0;
    logic unused_rnd;
    assign unused_rnd = ^{rnd_we, rnd_waddr, rnd_wdata};
  end

  // ---- replicate ----------------------------------------------------------------------------
  logic [NP-1:0] frame_out;
  logic [NP*W-1:0] rep_tdata;
  logic [NP*KW-1:0] rep_tkeep;
  logic [NP-1:0] rep_tlast, rep_tvalid, rep_tready;

  netagg_replicate #(
      .NUM_PORTS(NUM_PORTS),
      .SLOTS    (SLOTS),
      .MAX_BEATS(MAX_BEATS),
      .JOB_W    (JOB_W),
      .RQ_DEPTH (RQ_DEPTH),
      .OUT_DEPTH(OUT_DEPTH),
      .EXACT    (EXACT)
  ) u_replicate (
      .clk_i          (clk_i),
      .rst_ni         (rst_ni),
      .push_i         (rq_push),
      .push_data_i    (rq_data),
      .space_o        (rq_space),
      .space2_o       (rq_space2),
      .release_i      (release_result),
      .lock_valid_o   (lock_valid),
      .lock_key_o     (lock_key),
      .flush_i        (flush),
      .idle_o         (replicate_idle),
      .pm_entry_o     (pm_entry),
      .pm_port_ranks_i(pm_port_ranks),
      .rp_entry_o     (rp_entry),
      .rp_rank_o      (rp_rank),
      .rp_mac_i       (rp_mac),
      .rp_ip_i        (rp_ip),
      .rp_udp_i       (rp_udp),
      .pm_parent_port_i(pm_parent_port),
      .rp_parent_mac_i(rp_parent_mac),
      .rp_parent_ip_i (rp_parent_ip),
      .rp_parent_udp_i(rp_parent_udp),
      .rp_parent_id_i (rp_parent_id),
      .rp_parent_rank_i(rp_parent_rank),
      .rp_parent_delta_i(rp_parent_delta),
      .agg_mac_i      (agg_mac),
      .agg_ip_i       (agg_ip),
      .agg_udp_port_i (agg_udp_port),
      .mem_re_o       (mem_re_b),
      .mem_raddr_o    (mem_raddr_b),
      .mem_rdata_i    (mem_rdata_b),
      .rnd_rdata_i    (rnd_rdata),
      .m_tdata_o      (rep_tdata),
      .m_tkeep_o      (rep_tkeep),
      .m_tlast_o      (rep_tlast),
      .m_tvalid_o     (rep_tvalid),
      .m_tready_i     (rep_tready),
      .frame_out_o    (frame_out)
  );

  // ---- notices ------------------------------------------------------------------------------
  logic [INC_W-1:0] n_notices;

  netagg_notice #(
      .NUM_PORTS(NUM_PORTS),
      .DEPTH    (NQ_DEPTH),
      .INC_W    (INC_W)
  ) u_notice (
      .clk_i     (clk_i),
      .rst_ni    (rst_ni),
      .clear_i   (clear_table),
      .drop_i    (ntc_drop),
      .reason_i  (ntc_reason),
      .waiting_i (ntc_waiting),
      .desc_i    (head_desc),
      .addr_i    (head_addr),
      .room_o    (notice_room),
      .sent_o    (n_notices),
      .idle_o    (notice_idle),
      .s_tdata_i (rep_tdata),
      .s_tkeep_i (rep_tkeep),
      .s_tlast_i (rep_tlast),
      .s_tvalid_i(rep_tvalid),
      .s_tready_o(rep_tready),
      .m_tdata_o (tx_tdata_o),
      .m_tkeep_o (tx_tkeep_o),
      .m_tlast_o (tx_tlast_o),
      .m_tvalid_o(tx_tvalid_o),
      .m_tready_i(tx_tready_i)
  );

  // ---- counters -----------------------------------------------------------------------------
  logic [INC_W-1:0] n_in, n_out;
  always_comb begin
    n_in = '0;
    n_out = '0;
    for (int p = 0; p < NP; p++) begin  // (frames out: results and notices)
      n_in = n_in + INC_W'(frame_in[p]);
      n_out = n_out + INC_W'(tx_tvalid_o[p] && tx_tready_i[p] && tx_tlast_o[p]);
    end
    inc = round_inc;
    inc[netagg_csr_pkg::CNT_FRAMES_IN*INC_W+:INC_W] = n_in;
    inc[netagg_csr_pkg::CNT_FRAMES_OUT*INC_W+:INC_W] = n_out;
    inc[netagg_csr_pkg::CNT_NOTICES*INC_W+:INC_W] = n_notices;
  end

  netagg_counters #(
      .INC_W(INC_W)
  ) u_counters (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .clear_i(csr_clear_counters || ctl_clear_counters),
      .inc_i  (inc),
      .wide_inc_i(oor_inc),
      .index_i(counter_index),
      .value_o(counter_value)
  );

  logic unused;
  assign unused = ^{job_elements[31:16], worker_index[31:RW], job_id[30:16], round_inc, lk_id,
                    frame_out};

endmodule

`default_nettype wire

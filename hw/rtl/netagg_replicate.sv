// SPDX-License-Identifier: Apache-2.0
// The replication stage: a queue of results (pushed when a group completes a round or asks for
// resends, released when that group's token has left the adder pipeline) and the engine that
// turns each into result frames, one for every rank in its destination bitmap, on that rank's
// egress port (docs/fpga-aggregator.md, "Results").
//
// Frames leave in waves: in one wave every egress port sends one frame, to the lowest rank still
// due on that port, so workers on different ports get their copies in the same cycles and
// workers sharing a port get them one after the other in rank order. A wave is a header step
// (the Ethernet/IPv4/UDP/netagg headers, rebuilt per port with the IPv4 checksum) and the payload
// steps (one accumulator read each; bf16 takes two reads a wire beat, rounded to bf16). Each step
// pushes one beat into the egress FIFO of every port of the wave, so it waits until all of them
// have room: a port held by TREADY low stalls the others after its FIFO, nothing is lost or sent
// twice.
//
// A result is queued when its group is decided and may leave once the group's token has left
// the adder pipeline, so at full rate with the smallest packets (a group every cycle) the queue
// holds about one result per pipeline stage: RQ_DEPTH below that makes the rounds wait.
//
// A queued result keeps its (slot, set) locked (lock_*): netagg_round starts no new round there
// until the result's last accumulator read, so a result always carries the round it announces.
//
// Trees: a queued entry with `up` is a round's sum for the job's parent: one frame, on the
// egress port towards the parent, with the parent's addresses, a contribution header (the job's
// id and this aggregator's rank at the parent, the parent's slot, fresh if the round was) and
// the accumulators as the payload, as a result's.
// flush_i (soft reset) finishes the wave in progress, then drops the rest.
//
// Exact fp32 (EXACT): a result of an exact round is the rounded bank's beat (netagg_accum
// rounded every written beat); a round holding the parent's result (`rounded`) is the low
// halves as they are; a sum to the parent goes up unrounded as exact_lanes, each accumulator
// beat as two wire beats of 8 lanes (8 bytes big-endian, specials as reserved values).
`default_nettype none

module netagg_replicate #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned SLOTS = 64,
    parameter int unsigned MAX_BEATS = 16,
    parameter int unsigned JOB_W = 3,      // job table entry bits
    parameter int unsigned RQ_DEPTH = 16,  // results queued (full rate: >= adder pipeline)
    parameter int unsigned OUT_DEPTH = 4,  // egress FIFO beats per port (power of two)
    parameter bit EXACT = 1'b1,            // exact fp32 rounds (netagg_accum's banks)
    // derived, do not change
    parameter int unsigned SLOT_W = $clog2(SLOTS),
    parameter int unsigned KEY_W = SLOT_W + 1,
    parameter int unsigned MA_W = $clog2(2 * SLOTS * MAX_BEATS),
    parameter int unsigned LOCK_N = RQ_DEPTH + 1,
    parameter int unsigned PORT_W = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 1,
    parameter int unsigned MEM_W = EXACT ? 2 * netagg_agg_pkg::BEAT_W + 2 * netagg_agg_pkg::LANES
                                         : netagg_agg_pkg::BEAT_W
) (
    input  logic                                         clk_i,
    input  logic                                         rst_ni,
    // queue
    input  logic                                         push_i,
    input  logic [netagg_agg_pkg::RESULT_W-1:0]          push_data_i,
    output logic                                         space_o,
    output logic                                         space2_o,     // room for two
    input  logic                                         release_i,
    output logic [LOCK_N-1:0]                            lock_valid_o,
    output logic [LOCK_N*KEY_W-1:0]                      lock_key_o,
    input  logic                                         flush_i,
    output logic                                         idle_o,   // nothing queued or sending
    // job table
    output logic [JOB_W-1:0]                             pm_entry_o,
    input  logic [NUM_PORTS*netagg_agg_pkg::MAX_WORKERS-1:0] pm_port_ranks_i,
    output logic [JOB_W-1:0]                             rp_entry_o,
    output logic [NUM_PORTS*netagg_agg_pkg::RANK_W-1:0]  rp_rank_o,
    input  logic [NUM_PORTS*48-1:0]                      rp_mac_i,
    input  logic [NUM_PORTS*32-1:0]                      rp_ip_i,
    input  logic [NUM_PORTS*16-1:0]                      rp_udp_i,
    // job table: the parent of entry pm_entry_o (its port) and of rp_entry_o
    input  logic [PORT_W-1:0]                            pm_parent_port_i,
    input  logic [47:0]                                  rp_parent_mac_i,
    input  logic [31:0]                                  rp_parent_ip_i,
    input  logic [15:0]                                  rp_parent_udp_i,
    input  logic [15:0]                                  rp_parent_id_i,
    input  logic [15:0]                                  rp_parent_rank_i,
    input  logic [15:0]                                  rp_parent_delta_i,  // parent slot - slot
    // configuration
    input  logic [47:0]                                  agg_mac_i,
    input  logic [31:0]                                  agg_ip_i,
    input  logic [15:0]                                  agg_udp_port_i,
    // accumulators
    output logic                                         mem_re_o,
    output logic [MA_W-1:0]                              mem_raddr_o,
    input  logic [MEM_W-1:0]                             mem_rdata_i,
    input  logic [netagg_agg_pkg::BEAT_W-1:0]            rnd_rdata_i,  // the rounded bank
    // egress AXI4-Stream, port p at [p*W +: W]
    output logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0]  m_tdata_o,
    output logic [NUM_PORTS*netagg_agg_pkg::KEEP_W-1:0]  m_tkeep_o,
    output logic [NUM_PORTS-1:0]                         m_tlast_o,
    output logic [NUM_PORTS-1:0]                         m_tvalid_o,
    input  logic [NUM_PORTS-1:0]                         m_tready_i,
    output logic [NUM_PORTS-1:0]                         frame_out_o  // a last beat left
);
  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned KW = netagg_agg_pkg::KEEP_W;
  localparam int unsigned MW = netagg_agg_pkg::MAX_WORKERS;
  localparam int unsigned RW = netagg_agg_pkg::RANK_W;
  localparam int unsigned RES_W = netagg_agg_pkg::RESULT_W;
  localparam int unsigned Q_W = (RQ_DEPTH > 1) ? $clog2(RQ_DEPTH) : 1;
  localparam int unsigned FW = W + KW + 1;  // FIFO entry: TLAST, TKEEP, TDATA
  localparam int unsigned OC_W = $clog2(OUT_DEPTH) + 1;
  localparam int unsigned ST_W = $clog2(2 * MAX_BEATS + 2);
  localparam logic [2:0] DT_BF16 = 3'(netagg_pkg::DTYPE_BF16);
  localparam logic [2:0] DT_EXACT = 3'(netagg_pkg::DTYPE_FP32_EXACT);
  localparam logic [2:0] DT_LANES = 3'(netagg_pkg::DTYPE_EXACT_LANES);
  localparam int unsigned LANES = netagg_agg_pkg::LANES;

  if (OUT_DEPTH < 2) begin : gen_bad_out
    $error("netagg_replicate: OUT_DEPTH must be at least 2");
  end

  // ---- the queue -----------------------------------------------------------------------------
  logic [RES_W-1:0] q_data[RQ_DEPTH];
  logic [RQ_DEPTH-1:0] q_valid;
  logic [Q_W-1:0] q_head, q_tail;
  logic [Q_W:0] q_count, q_released;
  logic pop, load, clear_queue;

  function automatic logic [Q_W-1:0] q_next(input logic [Q_W-1:0] i);
    if (i == Q_W'(RQ_DEPTH - 1)) q_next = '0;
    else q_next = i + 1'b1;
  endfunction

  assign space_o = q_count < (Q_W + 1)'(RQ_DEPTH);
  assign space2_o = q_count + 1'b1 < (Q_W + 1)'(RQ_DEPTH);

  // ---- the engine ----------------------------------------------------------------------------
  logic busy_q;
  logic [RES_W-1:0] cur_q;
  logic [NP*MW-1:0] rem_q;     // ranks still due, per port
  logic [ST_W-1:0] st_q;       // step of the wave: 0 header, then one per accumulator beat
  logic [NP-1:0] act_q;        // ports of the wave in progress
  logic [NP*RW-1:0] rank_q;    // their ranks
  netagg_agg_pkg::result_t cur, head;
  logic is_bf16, is_up_lanes;
  logic [15:0] wire_beats, steps;
  logic [NP-1:0] act_now, has_room;
  logic [NP*RW-1:0] rank_now;
  logic [NP*MW-1:0] rem_after;
  logic step, last_step, wave_start, done_now;
  logic [OC_W-1:0] fifo_count[NP];
  logic [NP-1:0] pushing, popping;  // egress FIFO traffic this cycle

  assign cur = cur_q;
  assign head = q_data[q_head];
  assign is_bf16 = (cur.dtype == DT_BF16);
  assign is_up_lanes = EXACT && cur.dtype == DT_EXACT && cur.up;
  assign wire_beats = is_bf16     ? ((cur.count + 16'd31) >> 5)
                    : is_up_lanes ? ((cur.count + 16'd7) >> 3)
                                  : ((cur.count + 16'd15) >> 4);
  assign steps = 16'd1 + (is_bf16 ? {wire_beats[14:0], 1'b0} : wire_beats);
  assign wave_start = (st_q == '0);

  always_comb begin
    for (int p = 0; p < NP; p++) begin
      act_now[p] = wave_start ? (rem_q[p*MW+:MW] != '0) : act_q[p];
      rank_now[p*RW+:RW] = rank_q[p*RW+:RW];
      if (wave_start) begin
        for (int r = MW - 1; r >= 0; r--) if (rem_q[p*MW+r]) rank_now[p*RW+:RW] = RW'(r);
      end
      // room for this step's beat next cycle, after the beat being pushed and the one leaving
      // in this cycle
      has_room[p] = !act_now[p] ||
                    (32'(fifo_count[p]) + 32'(pushing[p]) - 32'(popping[p]) < OUT_DEPTH);
      rem_after[p*MW+:MW] = rem_q[p*MW+:MW] &
                            ~(act_now[p] ? (32'd1 << rank_now[p*RW+:RW]) : 32'd0);
    end
  end

  // A flush lets the wave in progress finish and starts no other.
  assign step = busy_q && (&has_room) && !(flush_i && wave_start);
  assign last_step = (16'(st_q) == steps - 16'd1);
  assign done_now = step && last_step && (rem_after == '0 || flush_i);
  assign load = !flush_i && (!busy_q || done_now) && q_count != '0 && q_released != '0;
  assign pop = load;
  assign clear_queue = flush_i && !busy_q;
  assign pm_entry_o = JOB_W'(head.entry);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      st_q <= '0;
    end else begin
      if (step) st_q <= last_step ? '0 : st_q + 1'b1;
      if (load) busy_q <= 1'b1;
      else if (done_now || (flush_i && wave_start)) busy_q <= 1'b0;
    end
  end

  always_ff @(posedge clk_i) begin
    if (load) begin
      cur_q <= head;
      // (to the parent: one frame, as "rank 0" of the port towards it)
      for (int p = 0; p < NP; p++)
        rem_q[p*MW+:MW] <= head.up ? MW'(PORT_W'(p) == pm_parent_port_i)
                                   : head.dest & pm_port_ranks_i[p*MW+:MW];
    end else if (step && last_step) begin
      rem_q <= rem_after;
    end
    if (step && wave_start) begin
      act_q <= act_now;
      rank_q <= rank_now;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      q_head <= '0;
      q_tail <= '0;
      q_count <= '0;
      q_released <= '0;
      q_valid <= '0;
    end else if (clear_queue) begin
      q_head <= '0;
      q_tail <= '0;
      q_count <= '0;
      q_released <= '0;
      q_valid <= '0;
    end else begin
      if (push_i) begin
        q_tail <= q_next(q_tail);
        q_valid[q_tail] <= 1'b1;
      end
      if (pop) begin
        q_head <= q_next(q_head);
        q_valid[q_head] <= 1'b0;
      end
      q_count <= q_count + (Q_W + 1)'(push_i) - (Q_W + 1)'(pop);
      q_released <= q_released + (Q_W + 1)'(release_i) - (Q_W + 1)'(pop);
    end
  end
  always_ff @(posedge clk_i) if (push_i) q_data[q_tail] <= push_data_i;

  // Locks: every queued result and the one being sent.
  netagg_agg_pkg::result_t lock_r;
  always_comb begin
    for (int i = 0; i < RQ_DEPTH; i++) begin
      lock_r = q_data[i];
      lock_valid_o[i] = q_valid[i];
      lock_key_o[i*KEY_W+:KEY_W] = {lock_r.slot[SLOT_W-1:0], lock_r.set_bit};
    end
    lock_valid_o[RQ_DEPTH] = busy_q;
    lock_key_o[RQ_DEPTH*KEY_W+:KEY_W] = {cur.slot[SLOT_W-1:0], cur.set_bit};
  end

  // Accumulator read of a payload step: beat st_q - 1 of the slot and set (exact_lanes up:
  // (st_q - 1) / 2, half a beat a step).
  logic [15:0] acc_beat, step_beat;
  assign step_beat = is_up_lanes ? ((16'(st_q) - 16'd1) >> 1) : 16'(st_q) - 16'd1;
  assign acc_beat = (step_beat >= 16'(MAX_BEATS)) ? 16'(MAX_BEATS - 1) : step_beat;
  assign mem_re_o = step && !wave_start;
  assign mem_raddr_o = MA_W'((32'(cur.slot[SLOT_W-1:0]) * 2 + 32'(cur.set_bit)) * MAX_BEATS +
                             32'(acc_beat));

  // ---- output stage (the cycle after a step: accumulator data is there) -----------------------
  logic o_valid_q, o_header_q, o_push_q, o_last_q, o_half_q;
  logic o_bf16_q, o_up_lanes_q, o_rounding_q;  // the payload's kind, decided in the step
  logic [NP-1:0] o_act_q;
  logic [NP*RW-1:0] o_rank_q;
  logic [RES_W-1:0] o_cur_q;
  logic [W-1:0] half_q;  // bf16: the even accumulator beat of the wire beat being built
  netagg_agg_pkg::result_t oc;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) o_valid_q <= 1'b0;
    else o_valid_q <= step;
  end
  always_ff @(posedge clk_i) begin
    if (step) begin
      o_header_q <= wave_start;
      o_push_q <= wave_start || !is_bf16 || !st_q[0];  // bf16: odd steps hold half a beat
      o_last_q <= last_step;
      o_half_q <= !st_q[0];  // exact_lanes up: steps 2, 4, ... send lanes 8..15
      o_bf16_q <= is_bf16;
      o_up_lanes_q <= is_up_lanes;
      o_rounding_q <= EXACT && cur.dtype == DT_EXACT && !cur.up && !cur.rounded;
      o_act_q <= act_now;
      o_rank_q <= rank_now;
      o_cur_q <= cur_q;
    end
    if (o_valid_q && !o_header_q && !o_push_q) half_q <= mem_rdata_i[0+:W];
  end

  assign oc = o_cur_q;

  // Looked up and computed in the step's cycle, registered for the output stage (so that the
  // job table read and the length arithmetic are not in series with the beat assembly): the
  // addresses of the step's ranks, the payload bytes of the step's wire beat.
  logic [NP*48-1:0] o_mac_q;
  logic [NP*32-1:0] o_ip_q;
  logic [NP*16-1:0] o_udp_q;
  logic [47:0] o_pt_mac_q;
  logic [31:0] o_pt_ip_q;
  logic [15:0] o_pt_udp_q, o_pt_id_q, o_pt_rank_q, o_pt_delta_q;
  logic [6:0] o_beat_bytes_q;
  logic [15:0] s_wire_beat, s_payload_bytes, s_bytes_before, s_rest;
  logic [6:0] s_beat_bytes;
  assign rp_entry_o = JOB_W'(cur.entry);
  assign rp_rank_o = rank_now;
  assign s_wire_beat = is_bf16 ? (16'(st_q) >> 1) : 16'(st_q);
  assign s_payload_bytes = is_bf16     ? {cur.count[14:0], 1'b0}
                         : is_up_lanes ? {cur.count[12:0], 3'b000}
                                       : {cur.count[13:0], 2'b00};
  assign s_bytes_before = (s_wire_beat - 16'd1) << 6;
  assign s_rest = s_payload_bytes - s_bytes_before;
  assign s_beat_bytes = (s_rest >= 16'd64) ? 7'd64 : s_rest[6:0];
  always_ff @(posedge clk_i) begin
    if (step) begin
      o_mac_q <= rp_mac_i;
      o_ip_q <= rp_ip_i;
      o_udp_q <= rp_udp_i;
      o_pt_mac_q <= rp_parent_mac_i;
      o_pt_ip_q <= rp_parent_ip_i;
      o_pt_udp_q <= rp_parent_udp_i;
      o_pt_id_q <= rp_parent_id_i;
      o_pt_rank_q <= rp_parent_rank_i;
      o_pt_delta_q <= rp_parent_delta_i;
      o_beat_bytes_q <= s_beat_bytes;
    end
  end

  // The payload beat: 32-bit lanes big-endian, or 32 bf16 elements from two accumulator beats;
  // bytes past the payload's end are zero and not in TKEEP.
  logic o_bf16, o_up_lanes, o_rounding;
  logic [15:0] payload_bytes;
  logic [KW-1:0] payload_keep;
  logic [W-1:0] payload, keep_mask, bf16_values;
  logic [15:0] bf16_lane[2*netagg_agg_pkg::LANES];

  assign o_bf16 = o_bf16_q;
  assign o_up_lanes = o_up_lanes_q;
  assign o_rounding = o_rounding_q;
  assign payload_bytes = o_bf16     ? {oc.count[14:0], 1'b0}
                       : o_up_lanes ? {oc.count[12:0], 3'b000}
                                    : {oc.count[13:0], 2'b00};

  // exact_lanes up: lanes 8 * half .. + 7 as 64-bit big-endian words, specials as the values
  // no sum reaches; as 32-bit lanes: the high half first.
  logic [W-1:0] up_lanes;
  always_comb begin
    logic [63:0] v;
    logic [1:0] sp;
    up_lanes = '0;
    if (EXACT) begin
      for (int j = 0; j < LANES / 2; j++) begin
        v = {mem_rdata_i[(MEM_W > W ? W : 0)+32*(8*32'(o_half_q)+j)+:32],
             mem_rdata_i[32*(8*32'(o_half_q)+j)+:32]};
        sp = mem_rdata_i[(MEM_W > W ? 2 * W : 0)+2*(8*32'(o_half_q)+j)+:2];
        if (sp == 2'd1) v = 64'h7FFF_FFFF_FFFF_FFFF;
        else if (sp == 2'd2) v = 64'h8000_0000_0000_0001;
        else if (sp == 2'd3) v = 64'h8000_0000_0000_0000;
        up_lanes[64*j+:64] = {v[31:0], v[63:32]};
      end
    end
  end

  for (genvar i = 0; i < netagg_agg_pkg::LANES; i++) begin : gen_bf16
    netagg_fp32_to_bf16 u_even (
        .fp32_i(half_q[32*i+:32]),
        .bf16_o(bf16_lane[i])
    );
    netagg_fp32_to_bf16 u_odd (
        .fp32_i(mem_rdata_i[32*i+:32]),  // (the low bank: bf16 rounds are 32-bit)
        .bf16_o(bf16_lane[netagg_agg_pkg::LANES+i])
    );
  end

  always_comb begin
    for (int k = 0; k < KW; k++) payload_keep[k] = (7'(k) < o_beat_bytes_q);
    for (int k = 0; k < KW; k++) keep_mask[8*k+:8] = {8{payload_keep[k]}};
    for (int k = 0; k < 2 * netagg_agg_pkg::LANES; k++) bf16_values[16*k+:16] = bf16_lane[k];
    payload = o_bf16       ? netagg_pkg::swap_lanes16(bf16_values)
            : o_up_lanes ? netagg_pkg::swap_lanes32(up_lanes)
            : o_rounding ? netagg_pkg::swap_lanes32(rnd_rdata_i)
                         : netagg_pkg::swap_lanes32(mem_rdata_i[0+:W]);
    payload = payload & keep_mask;
  end

  // The header beat of port p: wire::encode_frame's Ethernet/IPv4/UDP headers (DF, TTL 64, the
  // IPv4 checksum, UDP checksum 0) and the netagg result header, at netagg_pkg's offsets; or,
  // for the parent, the contribution header with the parent's addresses, job id, rank, slot.
  localparam int unsigned H = netagg_pkg::FRM_NETAGG;
  logic [15:0] ip_total, udp_total;
  assign ip_total = 16'(netagg_pkg::IPV4_HEADER_SIZE + netagg_pkg::UDP_HEADER_SIZE +
                        netagg_pkg::HEADER_SIZE) + payload_bytes;
  assign udp_total = 16'(netagg_pkg::UDP_HEADER_SIZE + netagg_pkg::HEADER_SIZE) + payload_bytes;

  // The header's fields are written in place at constant byte offsets of the beat (byte k of
  // TDATA in bits 8k+7:8k, fields big-endian). A function returning the whole beat for each
  // field had the simulator copy 512 bits per field every cycle; these assignments are the same
  // logic without the copies.
`define NETAGG_PUT8(B, O, V) B[(O)*8+:8] = V;
`define NETAGG_PUT16(B, O, V) begin put16 = V; B[(O)*8+:8] = put16[15:8]; B[((O)+1)*8+:8] = put16[7:0]; end
`define NETAGG_PUT32(B, O, V) begin put32 = V; `NETAGG_PUT16(B, O, put32[31:16]) `NETAGG_PUT16(B, (O)+2, put32[15:0]) end
  logic [NP*W-1:0] header;
  for (genvar p = 0; p < NP; p++) begin : gen_header
    logic [W-1:0] h;
    logic [15:0] put16;
    logic [31:0] put32;
    logic [19:0] sum;
    logic [47:0] dst_mac;
    logic [31:0] dst_ip;
    logic [15:0] dst_udp, job_id, rank, slot;
    logic [7:0] msg_type, flags;
    always_comb begin
      if (oc.up) begin
        dst_mac = o_pt_mac_q;
        dst_ip = o_pt_ip_q;
        dst_udp = o_pt_udp_q;
        msg_type = netagg_pkg::MSG_CONTRIBUTION;
        flags = {6'd0, oc.fresh, oc.set_bit};
        job_id = o_pt_id_q;
        rank = o_pt_rank_q;
        slot = oc.slot + o_pt_delta_q;
      end else begin
        dst_mac = o_mac_q[p*48+:48];
        dst_ip = o_ip_q[p*32+:32];
        dst_udp = o_udp_q[p*16+:16];
        msg_type = netagg_pkg::MSG_RESULT;
        flags = {7'd0, oc.set_bit};
        job_id = oc.job_id;
        rank = {11'd0, o_rank_q[p*RW+:RW]};
        slot = oc.slot;
      end
      h = '0;
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_DST_ADDR, dst_mac[47:32])
      `NETAGG_PUT32(h, netagg_pkg::FRM_ETH_DST_ADDR + 2, dst_mac[31:0])
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_SRC_ADDR, agg_mac_i[47:32])
      `NETAGG_PUT32(h, netagg_pkg::FRM_ETH_SRC_ADDR + 2, agg_mac_i[31:0])
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_ETHER_TYPE, netagg_pkg::ETHERTYPE_IPV4)
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_VERSION, netagg_pkg::IP_VERSION_IHL)
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_ECN, {6'd0, oc.ecn})
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_TOTAL_LEN, ip_total)
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_FLAGS, {netagg_pkg::IP_FLAGS_DF, 13'd0})
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_TTL, netagg_pkg::IP_TTL)
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_PROTOCOL, netagg_pkg::IP_PROTOCOL_UDP)
      `NETAGG_PUT32(h, netagg_pkg::FRM_IPV4_SRC_ADDR, agg_ip_i)
      `NETAGG_PUT32(h, netagg_pkg::FRM_IPV4_DST_ADDR, dst_ip)
      sum = '0;
      for (int w = 0; w < 10; w++)
        sum = sum + {4'd0, netagg_pkg::beat_be16(h, netagg_pkg::FRM_IPV4_VERSION + 2 * w)};
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_HDR_CHECKSUM, ~netagg_agg_pkg::fold16(sum))
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_SRC_PORT, agg_udp_port_i)
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_DST_PORT, dst_udp)
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_LENGTH, udp_total)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_VERSION, netagg_pkg::WIRE_VERSION)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_TYPE, msg_type)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_DTYPE, {5'd0, o_up_lanes ? DT_LANES : oc.dtype})
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_FLAGS, flags)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_JOB_ID, job_id)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_RANK, rank)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_SLOT, slot)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_COUNT, oc.count)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_EXPONENT, oc.exponent)
      `NETAGG_PUT32(h, H + netagg_pkg::OFF_SEQ, oc.seq)
      `NETAGG_PUT32(h, H + netagg_pkg::OFF_EPOCH, oc.epoch)
    end
    assign header[p*W+:W] = h;
  end
`undef NETAGG_PUT8
`undef NETAGG_PUT16
`undef NETAGG_PUT32

  // ---- egress FIFOs --------------------------------------------------------------------------
  for (genvar p = 0; p < NP; p++) begin : gen_out
    logic push;
    logic [FW-1:0] entry, head_entry;
    assign push = o_valid_q && o_push_q && o_act_q[p];
    assign pushing[p] = push;
    assign popping[p] = m_tvalid_o[p] && m_tready_i[p];
    assign entry = o_header_q ? {o_last_q, {KW{1'b1}}, header[p*W+:W]}
                              : {o_last_q, payload_keep, payload};
    netagg_axis_fifo #(
        .DEPTH(OUT_DEPTH),
        .DW   (FW)
    ) u_fifo (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .push_i (push),
        .data_i (entry),
        .data_o (head_entry),
        .valid_o(m_tvalid_o[p]),
        .ready_i(m_tready_i[p]),
        .count_o(fifo_count[p])
    );
    assign m_tdata_o[p*W+:W] = head_entry[W-1:0];
    assign m_tkeep_o[p*KW+:KW] = head_entry[W+:KW];
    assign m_tlast_o[p] = head_entry[W+KW];
    assign frame_out_o[p] = m_tvalid_o[p] && m_tready_i[p] && head_entry[W+KW];
  end

  assign idle_o = !busy_q && q_count == '0 && !o_valid_q;

  logic unused;
  assign unused = ^{cur, head, oc, lock_r, wire_beats};

endmodule

`default_nettype wire

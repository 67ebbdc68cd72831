// SPDX-License-Identifier: Apache-2.0
// Notices (docs/fpga-aggregator.md, "Notices"; docs/wire-format.md, "Notices"): a contribution
// dropped for a reason its sender can act on is answered with a notice, a frame of two beats back
// out of the port it came in on. Off the decision path: the drops reach this module a cycle after
// their pop (netagg_round), with the dropped frame's descriptor and addresses, which the ingress
// buffer still shows then.
//
//  E  the drops of the cycle: which are candidates for a notice (a contribution, no recovery
//     copy, a reason with a notice code). Their notices are registered (with everything a notice
//     needs) and go into their ports' queues in the next cycle (N), with their IPv4 checksums;
//     the candidates themselves enter one queue of rate decisions, in port order.
//  D  one rate decision a cycle, in the order of that queue (the drops' order, the reference
//     model's): a 4-bit count of drops per reason and rank (its low 5 bits); a candidate whose
//     count before it is a multiple of notice_interval (16) is due, so is every duplicate. The
//     decision joins its port's queue of decisions.
//  A port's head notice, once decided, leaves the queue: not due, at once; due, as a header
//     beat (the dropped frame's header with type notice, dtype int32, the set flag alone,
//     exponent_none and 1 or 2 words; MAC, IPv4 and UDP addresses swapped, ECN 0, DF, TTL 64)
//     and a payload beat (the reason code, and for a duplicate the ranks its round waits for),
//     between the replication stage's frames, which it holds back (their TREADY low) only
//     while it leaves; notices and result frames take turns when both wait.
//
// room_o: the queues have room for the notices of every drop still on its way (popped up to
// this cycle); netagg_round pops no drop of a port without it. Drops are counted (their
// counters) as before; only a due notice is counted (sent_o, the `notices` counter). idle_o:
// every drop is decided (netagg_control waits for it before a command: a soft reset clears the
// counts).
`default_nettype none

module netagg_notice #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned DEPTH = 8,  // notices queued per port (power of two, >= 8)
    parameter int unsigned INC_W = 3   // counter increment bits
) (
    input  logic                                         clk_i,
    input  logic                                         rst_ni,
    input  logic                                         clear_i,  // soft reset: the rate counts
    // drops popped in the previous cycle (netagg_round), port p at [p*W +: W]
    input  logic [NUM_PORTS-1:0]                         drop_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::REASON_W-1:0] reason_i,
    input  logic [NUM_PORTS*32-1:0]                      waiting_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::DESC_W-1:0]  desc_i,  // the ingress heads
    input  logic [NUM_PORTS*netagg_agg_pkg::ADDR_W-1:0]  addr_i,
    output logic [NUM_PORTS-1:0]                         room_o,
    output logic [INC_W-1:0]                             sent_o,  // notices made this cycle
    output logic                                         idle_o,  // no drop waits for its decision
    // the replication stage's egress
    input  logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0]  s_tdata_i,
    input  logic [NUM_PORTS*netagg_agg_pkg::KEEP_W-1:0]  s_tkeep_i,
    input  logic [NUM_PORTS-1:0]                         s_tlast_i,
    input  logic [NUM_PORTS-1:0]                         s_tvalid_i,
    output logic [NUM_PORTS-1:0]                         s_tready_o,
    // the ports' egress
    output logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0]  m_tdata_o,
    output logic [NUM_PORTS*netagg_agg_pkg::KEEP_W-1:0]  m_tkeep_o,
    output logic [NUM_PORTS-1:0]                         m_tlast_o,
    output logic [NUM_PORTS-1:0]                         m_tvalid_o,
    input  logic [NUM_PORTS-1:0]                         m_tready_i
);
  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned KW = netagg_agg_pkg::KEEP_W;
  localparam int unsigned RW = netagg_agg_pkg::REASON_W;
  localparam int unsigned DESC_W = netagg_agg_pkg::DESC_W;
  localparam int unsigned ADDR_W = netagg_agg_pkg::ADDR_W;
  localparam int unsigned NR = 11;  // reasons with a rate count (duplicate has none)
  localparam int unsigned RK = 32;  // rate counts per reason: by the rank's low 5 bits
  localparam int unsigned IDX_W = 9;  // {reason index (4 bits), rank (5 bits)}
  localparam int unsigned OC_W = $clog2(DEPTH) + 1;
  localparam int unsigned PI_W = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 1;

  if (DEPTH < 8 || (DEPTH & (DEPTH - 1)) != 0) begin : gen_bad_depth
    $error("netagg_notice: DEPTH must be a power of two of at least 8");
  end
  if (netagg_pkg::NOTICE_INTERVAL != 16) begin : gen_bad_interval
    $error("netagg_notice: the rate counts are 4 bits: NOTICE_INTERVAL must be 16");
  end

  // ---- E: the drops that may get a notice --------------------------------------------------
  // The notice code of each drop counter that has one, and its rate count's reason index.
  function automatic logic [7:0] notice_of(input logic [RW-1:0] counter);
    logic [3:0] code, index;
    code = '0;
    index = '0;
    unique case (32'(counter))
      netagg_csr_pkg::CNT_DROPPED_UNKNOWN_JOB: begin
        code = 4'(netagg_pkg::NOTICE_UNKNOWN_JOB);
        index = 4'd0;
      end
      netagg_csr_pkg::CNT_DROPPED_RANK_OUT_OF_RANGE: begin
        code = 4'(netagg_pkg::NOTICE_RANK_OUT_OF_RANGE);
        index = 4'd1;
      end
      netagg_csr_pkg::CNT_DROPPED_FOREIGN_SOURCE: begin
        code = 4'(netagg_pkg::NOTICE_FOREIGN_SOURCE);
        index = 4'd2;
      end
      netagg_csr_pkg::CNT_DROPPED_SLOT_OUT_OF_RANGE: begin
        code = 4'(netagg_pkg::NOTICE_SLOT_OUT_OF_RANGE);
        index = 4'd3;
      end
      netagg_csr_pkg::CNT_DROPPED_COUNT_TOO_LARGE_FOR_JOB: begin
        code = 4'(netagg_pkg::NOTICE_COUNT_TOO_LARGE_FOR_JOB);
        index = 4'd4;
      end
      netagg_csr_pkg::CNT_DROPPED_COUNT_MISMATCH: begin
        code = 4'(netagg_pkg::NOTICE_COUNT_MISMATCH);
        index = 4'd5;
      end
      netagg_csr_pkg::CNT_DROPPED_DTYPE_MISMATCH: begin
        code = 4'(netagg_pkg::NOTICE_DTYPE_MISMATCH);
        index = 4'd6;
      end
      netagg_csr_pkg::CNT_DROPPED_STALE: begin
        code = 4'(netagg_pkg::NOTICE_STALE);
        index = 4'd7;
      end
      netagg_csr_pkg::CNT_DROPPED_STALE_EPOCH: begin
        code = 4'(netagg_pkg::NOTICE_STALE_EPOCH);
        index = 4'd8;
      end
      netagg_csr_pkg::CNT_DROPPED_UNSUPPORTED_DTYPE: begin
        code = 4'(netagg_pkg::NOTICE_UNSUPPORTED_DTYPE);
        index = 4'd9;
      end
      netagg_csr_pkg::CNT_DROPPED_SCALE_MISMATCH: begin
        code = 4'(netagg_pkg::NOTICE_SCALE_MISMATCH);
        index = 4'd10;
      end
      netagg_csr_pkg::CNT_DROPPED_DUPLICATE: code = 4'(netagg_pkg::NOTICE_DUPLICATE);
      default: ;
    endcase
    notice_of = {code, index};
  endfunction

  // What a queued notice holds: the dropped frame's addresses (already swapped) and netagg
  // fields, the reason code, a duplicate's waiting ranks, the IPv4 checksum.
  typedef struct packed {
    logic [47:0] dst_mac;
    logic [47:0] src_mac;
    logic [31:0] dst_ip;
    logic [31:0] src_ip;
    logic [15:0] dst_port;
    logic [15:0] src_port;
    logic [15:0] job_id;
    logic [15:0] rank;
    logic [15:0] slot;
    logic        set_bit;
    logic [31:0] seq;
    logic [31:0] epoch;
    logic        dup;      // a duplicate's notice: two words
    logic [3:0]  code;
    logic [31:0] waiting;
    logic [15:0] csum;
  } entry_t;
  localparam int unsigned ENTRY_W = 358;  // $bits(entry_t), spelled out for yosys

  logic [NP-1:0] e_cand, e_rated;
  logic [NP*ENTRY_W-1:0] e_entry;
  logic [NP*IDX_W-1:0] e_idx;
  /* verilator lint_off UNUSEDSIGNAL */
  netagg_agg_pkg::desc_t ed;  // one port at a time (yosys: no structs in generate blocks)
  netagg_agg_pkg::addr_t ea;
  /* verilator lint_on UNUSEDSIGNAL */
  entry_t ee;
  logic [7:0] en;
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      ed = desc_i[p*DESC_W+:DESC_W];
      ea = addr_i[p*ADDR_W+:ADDR_W];
      en = notice_of(reason_i[p*RW+:RW]);
      ee = '0;
      ee.dst_mac = ea.src_mac;
      ee.src_mac = ea.dst_mac;
      ee.dst_ip = ed.src_ip;
      ee.src_ip = ea.dst_ip;
      ee.dst_port = ed.src_port;
      ee.src_port = ed.dst_port;
      ee.job_id = ed.job_id;
      ee.rank = ed.rank;
      ee.slot = ed.slot;
      ee.set_bit = ed.set_bit;
      ee.seq = ed.seq;
      ee.epoch = ed.epoch;
      ee.code = en[7:4];
      ee.dup = (en[7:4] == 4'(netagg_pkg::NOTICE_DUPLICATE));
      ee.waiting = ee.dup ? waiting_i[p*32+:32] : '0;
      e_entry[p*ENTRY_W+:ENTRY_W] = ee;
      // results, recovery copies and drops without a code get none
      e_cand[p] = drop_i[p] && en[7:4] != '0 && ed.contribution && !ed.recovery;
      e_rated[p] = !ee.dup;
      e_idx[p*IDX_W+:IDX_W] = {en[3:0], ed.rank[4:0]};
    end
  end

  // The candidates, registered: in the next cycle (N) their notices go into their ports' queues
  // and they into the queue of rate decisions.
  logic [NP-1:0] n_cand_q, n_rated_q;
  logic [NP*ENTRY_W-1:0] n_entry_q;
  logic [NP*IDX_W-1:0] n_idx_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) n_cand_q <= '0;
    else n_cand_q <= e_cand;
  end
  always_ff @(posedge clk_i) begin
    n_entry_q <= e_entry;
    n_rated_q <= e_rated;
    n_idx_q <= e_idx;
  end

  // ---- the rate decisions: one a cycle, in the order of the drops ----------------------------
  // Each port queues its candidates' count indices (ev_*); a queue of masks keeps the order
  // across ports: one mask a cycle with candidates, its ports taken in port order.
  localparam int unsigned EV_W = IDX_W + 1;  // {count index, rated}
  logic [NP*EV_W-1:0] ev_rdata;
  logic [NP-1:0] ev_pop;
  logic [NP-1:0] mq_rdata, served_q, d1_left, d1_sel;
  logic mq_valid, mq_pop, mq_room_q;
  logic [OC_W-1:0] mq_count;

  netagg_axis_fifo #(
      .DEPTH(DEPTH),
      .DW   (NP)
  ) u_masks (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .push_i (|n_cand_q),
      .data_i (n_cand_q),
      .data_o (mq_rdata),
      .valid_o(mq_valid),
      .ready_i(mq_pop),
      .count_o(mq_count)
  );

  // D1: the next candidate: the first port of the head mask not yet taken.
  logic [PI_W-1:0] d1_port;
  logic [EV_W-1:0] d1_ev;
  always_comb begin
    d1_left = mq_valid ? mq_rdata & ~served_q : '0;
    d1_sel = '0;
    d1_port = '0;
    d1_ev = '0;
    for (int p = NP - 1; p >= 0; p--) begin
      if (d1_left[p]) begin
        d1_sel = NP'(1) << p;
        d1_port = PI_W'(p);
        d1_ev = ev_rdata[p*EV_W+:EV_W];
      end
    end
  end
  assign ev_pop = d1_sel;
  assign mq_pop = mq_valid && (d1_left & ~d1_sel) == '0;

  logic d2_valid_q, d2_rated_q;
  logic [PI_W-1:0] d2_port_q;
  logic [IDX_W-1:0] d2_idx_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      served_q <= '0;
      d2_valid_q <= 1'b0;
      mq_room_q <= 1'b0;
    end else begin
      served_q <= mq_pop ? '0 : served_q | d1_sel;
      d2_valid_q <= d1_left != '0;
      // Room for the masks of the drops still on their way when this is used (a cycle later):
      // the one entering now, those popped in that cycle and the two before it.
      mq_room_q <= 32'(mq_count) + 4 <= DEPTH;
    end
  end
  always_ff @(posedge clk_i) begin
    d2_port_q <= d1_port;
    {d2_idx_q, d2_rated_q} <= d1_ev;
  end

  // D2: the counts in one packed vector, count k at [4k +: 4]: written by comparing each
  // constant index (one enable per count), read by index.
  logic [NR*RK*4-1:0] rate_q;
  logic [3:0] d2_count;
  logic d2_due;
  assign d2_count = (32'(d2_idx_q) < NR * RK) ? rate_q[4*d2_idx_q+:4] : '0;
  assign d2_due = !d2_rated_q || d2_count == '0;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) begin
      rate_q <= '0;
    end else if (d2_valid_q && d2_rated_q) begin
      for (int unsigned k = 0; k < NR * RK; k++)
        if (d2_idx_q == IDX_W'(k)) rate_q[4*k+:4] <= d2_count + 4'd1;
    end
  end
  assign sent_o = INC_W'(d2_valid_q && d2_due);
  // (a soft reset clears the counts only once every drop before it is decided)
  assign idle_o = !(|drop_i) && !(|n_cand_q) && !mq_valid && !d2_valid_q;

  // ---- the queues and the senders ------------------------------------------------------------
  localparam int unsigned H = netagg_pkg::FRM_NETAGG;
  localparam int unsigned BASE_LEN = netagg_pkg::IPV4_HEADER_SIZE + netagg_pkg::UDP_HEADER_SIZE +
                                     netagg_pkg::HEADER_SIZE + 4;  // IPv4 length with one word

  logic [NP*ENTRY_W-1:0] q_wdata, q_rdata;
  logic [NP-1:0] q_valid, q_pop, q_dup;
  logic [NP*OC_W-1:0] q_count;
  logic [NP*W-1:0] n_header, n_payload;

  // N: the IPv4 checksum of each notice, written into the queue with it. (One port at a time:
  // yosys takes no structs in generate blocks.)
  entry_t wr;
  logic [19:0] sum;
  logic [15:0] ip_total;
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      wr = n_entry_q[p*ENTRY_W+:ENTRY_W];
      ip_total = 16'(BASE_LEN) + (wr.dup ? 16'd4 : 16'd0);
      sum = 20'(16'h4500) + 20'(ip_total) + 20'(16'h4000) +
            20'({netagg_pkg::IP_TTL, netagg_pkg::IP_PROTOCOL_UDP}) + 20'(wr.src_ip[31:16]) +
            20'(wr.src_ip[15:0]) + 20'(wr.dst_ip[31:16]) + 20'(wr.dst_ip[15:0]);
      wr.csum = ~netagg_agg_pkg::fold16(sum);
      q_wdata[p*ENTRY_W+:ENTRY_W] = wr;
    end
  end

  // The notice at the head of each queue as its two beats, fields written in place at constant
  // byte offsets (as netagg_replicate writes a result's header).
`define NETAGG_PUT8(B, O, V) B[(O)*8+:8] = V;
`define NETAGG_PUT16(B, O, V) begin put16 = V; B[(O)*8+:8] = put16[15:8]; B[((O)+1)*8+:8] = put16[7:0]; end
`define NETAGG_PUT32(B, O, V) begin put32 = V; `NETAGG_PUT16(B, O, put32[31:16]) `NETAGG_PUT16(B, (O)+2, put32[15:0]) end
  entry_t hd;
  logic [W-1:0] h, d;
  logic [15:0] put16, total;
  logic [31:0] put32;
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      hd = q_rdata[p*ENTRY_W+:ENTRY_W];
      q_dup[p] = hd.dup;
      total = 16'(BASE_LEN) + (hd.dup ? 16'd4 : 16'd0);
      h = '0;
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_DST_ADDR, hd.dst_mac[47:32])
      `NETAGG_PUT32(h, netagg_pkg::FRM_ETH_DST_ADDR + 2, hd.dst_mac[31:0])
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_SRC_ADDR, hd.src_mac[47:32])
      `NETAGG_PUT32(h, netagg_pkg::FRM_ETH_SRC_ADDR + 2, hd.src_mac[31:0])
      `NETAGG_PUT16(h, netagg_pkg::FRM_ETH_ETHER_TYPE, netagg_pkg::ETHERTYPE_IPV4)
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_VERSION, netagg_pkg::IP_VERSION_IHL)
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_TOTAL_LEN, total)
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_FLAGS, {netagg_pkg::IP_FLAGS_DF, 13'd0})
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_TTL, netagg_pkg::IP_TTL)
      `NETAGG_PUT8(h, netagg_pkg::FRM_IPV4_PROTOCOL, netagg_pkg::IP_PROTOCOL_UDP)
      `NETAGG_PUT16(h, netagg_pkg::FRM_IPV4_HDR_CHECKSUM, hd.csum)
      `NETAGG_PUT32(h, netagg_pkg::FRM_IPV4_SRC_ADDR, hd.src_ip)
      `NETAGG_PUT32(h, netagg_pkg::FRM_IPV4_DST_ADDR, hd.dst_ip)
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_SRC_PORT, hd.src_port)
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_DST_PORT, hd.dst_port)
      `NETAGG_PUT16(h, netagg_pkg::FRM_UDP_LENGTH, total - 16'(netagg_pkg::IPV4_HEADER_SIZE))
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_VERSION, netagg_pkg::WIRE_VERSION)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_TYPE, netagg_pkg::MSG_NOTICE)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_DTYPE, netagg_pkg::DTYPE_INT32)
      `NETAGG_PUT8(h, H + netagg_pkg::OFF_FLAGS, {7'd0, hd.set_bit})
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_JOB_ID, hd.job_id)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_RANK, hd.rank)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_SLOT, hd.slot)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_COUNT, hd.dup ? 16'd2 : 16'd1)
      `NETAGG_PUT16(h, H + netagg_pkg::OFF_EXPONENT, netagg_pkg::EXPONENT_NONE)
      `NETAGG_PUT32(h, H + netagg_pkg::OFF_SEQ, hd.seq)
      `NETAGG_PUT32(h, H + netagg_pkg::OFF_EPOCH, hd.epoch)
      d = '0;
      `NETAGG_PUT32(d, 0, {28'd0, hd.code})
      `NETAGG_PUT32(d, 4, hd.waiting)
      n_header[p*W+:W] = h;
      n_payload[p*W+:W] = d;
    end
  end
`undef NETAGG_PUT8
`undef NETAGG_PUT16
`undef NETAGG_PUT32

  for (genvar p = 0; p < NP; p++) begin : gen_port
    // The notices of the port's candidates, and the decisions about them (in the same order).
    logic d_valid, d_data, d_push, room_q, ev_valid_unused;
    logic [OC_W-1:0] d_count_unused, ev_count_unused;
    netagg_axis_fifo #(
        .DEPTH(DEPTH),
        .DW   (ENTRY_W)
    ) u_queue (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .push_i (n_cand_q[p]),
        .data_i (q_wdata[p*ENTRY_W+:ENTRY_W]),
        .data_o (q_rdata[p*ENTRY_W+:ENTRY_W]),
        .valid_o(q_valid[p]),
        .ready_i(q_pop[p]),
        .count_o(q_count[p*OC_W+:OC_W])
    );
    netagg_axis_fifo #(
        .DEPTH(DEPTH),
        .DW   (EV_W)
    ) u_events (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .push_i (n_cand_q[p]),
        .data_i ({n_idx_q[p*IDX_W+:IDX_W], n_rated_q[p]}),
        .data_o (ev_rdata[p*EV_W+:EV_W]),
        .valid_o(ev_valid_unused),  // (a mask names only ports with an event)
        .ready_i(ev_pop[p]),
        .count_o(ev_count_unused)
    );
    assign d_push = d2_valid_q && d2_port_q == PI_W'(p);
    netagg_axis_fifo #(
        .DEPTH(DEPTH),
        .DW   (1)
    ) u_decisions (
        .clk_i  (clk_i),
        .rst_ni (rst_ni),
        .push_i (d_push),
        .data_i (d2_due),
        .data_o (d_data),
        .valid_o(d_valid),
        .ready_i(q_pop[p]),
        .count_o(d_count_unused)
    );

    // Room for the notices of the drops still on their way (popped in the last two cycles and
    // in this one), whatever this cycle's push.
    always_ff @(posedge clk_i) begin
      if (!rst_ni) room_q <= 1'b0;
      else room_q <= 32'(q_count[p*OC_W+:OC_W]) + 4 <= DEPTH;
    end
    assign room_o[p] = room_q && mq_room_q;

    // The port: a notice's beats (own_q; beat_q: the payload beat) or the replication stage's
    // frames. The source changes only between frames and never while a beat waits for TREADY:
    // a notice that is due takes the port when no result frame is half out and none is being
    // offered, or right after a result frame's last beat; a notice that is not due leaves the
    // queue at once.
    logic own_q, beat_q, mid_q;  // mid_q: a result frame is half out
    logic decided, r_hs, r_end, n_done, mid_next;
    assign decided = q_valid[p] && d_valid;
    assign r_hs = s_tvalid_i[p] && m_tready_i[p] && !own_q;
    assign r_end = r_hs && s_tlast_i[p];
    assign n_done = own_q && m_tready_i[p] && beat_q;
    assign q_pop[p] = n_done || (decided && !d_data);
    assign mid_next = mid_q ? !r_end : (r_hs && !s_tlast_i[p]);
    always_ff @(posedge clk_i) begin
      if (!rst_ni) begin
        own_q <= 1'b0;
        beat_q <= 1'b0;
        mid_q <= 1'b0;
      end else begin
        mid_q <= mid_next;
        if (own_q && m_tready_i[p]) beat_q <= !beat_q;
        if (own_q) own_q <= !n_done;
        else own_q <= decided && d_data && !mid_next && (!s_tvalid_i[p] || r_end);
      end
    end
    assign s_tready_o[p] = m_tready_i[p] && !own_q;
    assign m_tvalid_o[p] = own_q || s_tvalid_i[p];
    assign m_tdata_o[p*W+:W] = own_q ? (beat_q ? n_payload[p*W+:W] : n_header[p*W+:W])
                                     : s_tdata_i[p*W+:W];
    assign m_tkeep_o[p*KW+:KW] = own_q ? (beat_q ? (q_dup[p] ? KW'(8'hFF) : KW'(4'hF)) : '1)
                                       : s_tkeep_i[p*KW+:KW];
    assign m_tlast_o[p] = own_q ? beat_q : s_tlast_i[p];
    logic unused;
    assign unused = ^{d_count_unused, ev_count_unused, ev_valid_unused};
  end

endmodule

`default_nettype wire

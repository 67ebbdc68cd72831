// SPDX-License-Identifier: Apache-2.0
// Ingress buffer of one port: stores whole frames and checks them before anything else sees
// them (docs/fpga-aggregator.md, "Checks"). Beat 0 (all headers) is kept in registers, payload
// beats go to a buffer of IN_FRAMES frames of MAX_BEATS beats. The frame-level and packet-level
// checks of wire::decode_frame (except the UDP port, a CSR, which the head check adds) take two
// steps: the IPv4 header sum when beat 0 arrives and the frame length with the last beat, the
// rest in the cycle after the last beat, when the frame becomes the port's next stored frame in
// arrival order.
//
// The consumer pops the head once it has decided about it. A dropped frame is freed at once; a
// frame whose payload is added to a slot stays stored (hold) until the adder stage has read its
// last beat and frees it. TREADY is high while the frame being received has a free buffer
// entry; with IN_FRAMES = 3 a port takes frames back to back while an earlier one passes the
// decision pipeline (netagg_round) and is summed.
`default_nettype none

module netagg_ingress #(
    parameter int unsigned MAX_BEATS = 16,  // payload beats a frame may carry
    parameter int unsigned IN_FRAMES = 3,   // frames the buffer holds (>= 2)
    parameter bit EXACT = 1'b1,             // dtypes fp32_exact and exact_lanes are added
    // derived, do not change
    parameter int unsigned FI_W = (IN_FRAMES > 1) ? $clog2(IN_FRAMES) : 1,
    parameter int unsigned BI_W = (MAX_BEATS > 1) ? $clog2(MAX_BEATS) : 1
) (
    input  logic                                clk_i,
    input  logic                                rst_ni,
    // AXI4-Stream ingress
    input  logic [netagg_agg_pkg::BEAT_W-1:0]   s_tdata_i,
    input  logic [netagg_agg_pkg::KEEP_W-1:0]   s_tkeep_i,
    input  logic                                s_tlast_i,
    input  logic                                s_tvalid_i,
    output logic                                s_tready_o,
    output logic                                frame_in_o,    // a last beat was taken
    // the oldest stored frame
    output logic                                head_valid_o,
    output logic [netagg_agg_pkg::DESC_W-1:0]   head_desc_o,
    output logic [FI_W-1:0]                     head_frame_o,  // its buffer entry
    // its MAC addresses and IPv4 destination (a notice's), also in the cycle after its pop
    output logic [netagg_agg_pkg::ADDR_W-1:0]   head_addr_o,
    input  logic                                head_pop_i,    // decided: next frame is head
    input  logic                                head_hold_i,   // with pop: payload read later
    // payload reads (data one cycle after rd_en_i)
    input  logic                                rd_en_i,
    input  logic [FI_W-1:0]                     rd_frame_i,
    input  logic [BI_W-1:0]                     rd_beat_i,
    output logic [netagg_agg_pkg::BEAT_W-1:0]   rd_data_o,
    input  logic                                free_i,        // entry free_frame_i is read
    input  logic [FI_W-1:0]                     free_frame_i
);
  localparam int unsigned BEAT_W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned KEEP_W = netagg_agg_pkg::KEEP_W;
  localparam int unsigned DEPTH = IN_FRAMES * MAX_BEATS;
  localparam int unsigned BEATCNT_W = 11;  // beats of a frame, saturating (2047 * 64 bytes)

  if (IN_FRAMES < 2) begin : gen_bad_frames
    $error("netagg_ingress: IN_FRAMES must be at least 2");
  end
  if (MAX_BEATS < 1 || MAX_BEATS > 64) begin : gen_bad_beats
    $error("netagg_ingress: MAX_BEATS must be in 1..64");
  end

  logic [BEAT_W-1:0] mem_q[DEPTH];
  logic [BEAT_W-1:0] hdr_q;  // beat 0 of the frame being received
  logic [netagg_agg_pkg::DESC_W-1:0] desc_q[IN_FRAMES];
  logic [netagg_agg_pkg::ADDR_W-1:0] addr_q[IN_FRAMES];
  logic [IN_FRAMES-1:0] busy_q;   // entry holds a frame (received, not yet freed)
  logic [IN_FRAMES-1:0] ready_q;  // entry holds a frame not yet popped
  logic [FI_W-1:0] wr_q, rd_q;
  logic pop_q, hold_q;             // the head was popped in the previous cycle (and held)
  logic [BEATCNT_W-1:0] beats_q;  // beats of the current frame taken so far

  logic take, first_beat;
  logic [6:0] last_bytes;
  logic [16:0] frame_len;
  logic overlong;
  netagg_agg_pkg::desc_t desc_now;
  netagg_agg_pkg::addr_t addr_now;

  assign s_tready_o = !busy_q[wr_q];
  assign take = s_tvalid_i && s_tready_o;
  assign first_beat = (beats_q == '0);
  assign frame_in_o = take && s_tlast_i;

  function automatic logic [FI_W-1:0] next_frame(input logic [FI_W-1:0] f);
    if (f == FI_W'(IN_FRAMES - 1)) next_frame = '0;
    else next_frame = f + 1'b1;
  endfunction

  // TKEEP as a mask of the beat's bits, built a 32-bit word at a time.
  function automatic logic [BEAT_W-1:0] keep_mask(input logic [KEEP_W-1:0] keep);
    logic [BEAT_W-1:0] mask;
    logic [3:0] k;
    for (int w = 0; w < KEEP_W / 4; w++) begin
      k = keep[4*w+:4];
      mask[32*w+:32] = {{8{k[3]}}, {8{k[2]}}, {8{k[1]}}, {8{k[0]}}};
    end
    keep_mask = mask;
  endfunction

  // Bytes of the last beat (TKEEP contiguous from byte 0) and the frame length.
  always_comb begin
    last_bytes = 7'($countones(s_tkeep_i));
    frame_len = {beats_q, 6'd0} + {10'd0, last_bytes};
    if (beats_q == '1) frame_len = '1;  // saturated: longer than any IPv4 length allows
    overlong = beats_q > BEATCNT_W'(MAX_BEATS);  // beats_q = index of this last beat
  end

  // Step one: with beat 0 the sum of the IPv4 header's 16-bit words, with the last beat the
  // frame length; the frame's entry is remembered for step two in the next cycle (the header
  // stays in hdr_q during that cycle even if the next frame's beat 0 arrives in it).
  localparam int unsigned IP = netagg_pkg::FRM_IPV4_VERSION;  // the IPv4 header
  logic [19:0] ip_sum_q;
  logic fin_q, overlong_q;
  logic [16:0] frame_len_q;
  logic [FI_W-1:0] fin_frame_q;
  function automatic logic [19:0] ip_header_sum(input logic [BEAT_W-1:0] beat);
    ip_header_sum = '0;
    for (int w = 0; w < 10; w++)
      ip_header_sum = ip_header_sum + {4'd0, netagg_pkg::beat_be16(beat, IP + 2 * w)};
  endfunction
  always_ff @(posedge clk_i) begin
    if (take && first_beat) ip_sum_q <= ip_header_sum(s_tdata_i);
    if (take && s_tlast_i) begin
      frame_len_q <= frame_len;
      overlong_q <= overlong;
      fin_frame_q <= wr_q;
    end
  end

  // Counter indices of the drop reasons checked here.
  localparam int unsigned RW = netagg_agg_pkg::REASON_W;
  localparam logic [RW-1:0] R_TRUNCATED = RW'(netagg_csr_pkg::CNT_MALFORMED_TRUNCATED);
  localparam logic [RW-1:0] R_NOT_IPV4 = RW'(netagg_csr_pkg::CNT_MALFORMED_NOT_IPV4);
  localparam logic [RW-1:0] R_BAD_IP_HEADER = RW'(netagg_csr_pkg::CNT_MALFORMED_BAD_IP_HEADER);
  localparam logic [RW-1:0] R_NOT_UDP = RW'(netagg_csr_pkg::CNT_MALFORMED_NOT_UDP);
  localparam logic [RW-1:0] R_IP_LENGTH = RW'(netagg_csr_pkg::CNT_MALFORMED_IP_LENGTH_MISMATCH);
  localparam logic [RW-1:0] R_UDP_LENGTH = RW'(netagg_csr_pkg::CNT_MALFORMED_UDP_LENGTH_MISMATCH);
  localparam logic [RW-1:0] R_BAD_VERSION = RW'(netagg_csr_pkg::CNT_MALFORMED_BAD_VERSION);
  localparam logic [RW-1:0] R_BAD_TYPE = RW'(netagg_csr_pkg::CNT_MALFORMED_BAD_TYPE);
  localparam logic [RW-1:0] R_BAD_DTYPE = RW'(netagg_csr_pkg::CNT_MALFORMED_BAD_DTYPE);
  localparam logic [RW-1:0] R_BAD_FLAGS = RW'(netagg_csr_pkg::CNT_MALFORMED_BAD_FLAGS);
  localparam logic [RW-1:0] R_COUNT = RW'(netagg_csr_pkg::CNT_MALFORMED_COUNT_TOO_LARGE);
  localparam logic [RW-1:0] R_LENGTH = RW'(netagg_csr_pkg::CNT_MALFORMED_LENGTH_MISMATCH);
  localparam logic [RW-1:0] R_NOTICE = RW'(netagg_csr_pkg::CNT_DROPPED_NOT_CONTRIBUTION);
  localparam logic [RW-1:0] R_UNSUPPORTED = RW'(netagg_csr_pkg::CNT_DROPPED_UNSUPPORTED_DTYPE);

  logic [BEAT_W-1:0] hdr_now;
  logic [15:0] ethertype, ip_len, udp_len, count, packet_len, want_len, fragment;
  logic [7:0] ver_ihl, proto, version, msg_type, dtype, flags;
  logic ip_header_ok;

  // Field offsets and codes: netagg_pkg, the mirror of wire.hpp.
  localparam int unsigned H = netagg_pkg::FRM_NETAGG;  // the netagg header in the frame
  localparam logic [15:0] IP_UDP_BYTES = 16'(netagg_pkg::IPV4_HEADER_SIZE +
                                             netagg_pkg::UDP_HEADER_SIZE);
  localparam logic [16:0] ETH_BYTES = 17'(netagg_pkg::ETH_HEADER_SIZE);

  // Step two: the checks of wire::decode_frame and wire::decode, on the frame whose last beat
  // came in the previous cycle.
  assign hdr_now = hdr_q;
  always_comb begin
    ethertype = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_ETH_ETHER_TYPE);
    ver_ihl = netagg_pkg::beat_u8(hdr_now, netagg_pkg::FRM_IPV4_VERSION);
    ip_len = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_IPV4_TOTAL_LEN);
    proto = netagg_pkg::beat_u8(hdr_now, netagg_pkg::FRM_IPV4_PROTOCOL);
    udp_len = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_UDP_LENGTH);
    fragment = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_IPV4_FLAGS);
    ip_header_ok = (ver_ihl == netagg_pkg::IP_VERSION_IHL) && (fragment & 16'h3FFF) == 0 &&
                   (netagg_agg_pkg::fold16(ip_sum_q) == 16'hFFFF);  // (MF and offset 0; DF free)
    version = netagg_pkg::beat_u8(hdr_now, H + netagg_pkg::OFF_VERSION);
    msg_type = netagg_pkg::beat_u8(hdr_now, H + netagg_pkg::OFF_TYPE);
    dtype = netagg_pkg::beat_u8(hdr_now, H + netagg_pkg::OFF_DTYPE);
    flags = netagg_pkg::beat_u8(hdr_now, H + netagg_pkg::OFF_FLAGS);
    count = netagg_pkg::beat_be16(hdr_now, H + netagg_pkg::OFF_COUNT);
    packet_len = ip_len - IP_UDP_BYTES;  // UDP payload bytes (when ip_len >= 28)
    unique case (dtype)
      netagg_pkg::DTYPE_BF16: want_len = 16'(netagg_pkg::HEADER_SIZE) + {count[14:0], 1'b0};
      netagg_pkg::DTYPE_EXACT_LANES: want_len = 16'(netagg_pkg::HEADER_SIZE) + {count[12:0], 3'b000};
      default: want_len = 16'(netagg_pkg::HEADER_SIZE) + {count[13:0], 2'b00};
    endcase

    desc_now = '0;
    // frame level, up to the UDP length (in the order of wire::decode_frame)
    desc_now.pre_bad = 1'b1;
    if (frame_len_q < 17'(netagg_pkg::FRAME_OVERHEAD)) desc_now.pre_reason = R_TRUNCATED;
    else if (ethertype != netagg_pkg::ETHERTYPE_IPV4) desc_now.pre_reason = R_NOT_IPV4;
    else if (!ip_header_ok) desc_now.pre_reason = R_BAD_IP_HEADER;
    else if (proto != netagg_pkg::IP_PROTOCOL_UDP) desc_now.pre_reason = R_NOT_UDP;
    else if (ip_len < IP_UDP_BYTES || {1'b0, ip_len} + ETH_BYTES > frame_len_q)
      desc_now.pre_reason = R_IP_LENGTH;
    else if (udp_len != ip_len - 16'(netagg_pkg::IPV4_HEADER_SIZE))
      desc_now.pre_reason = R_UDP_LENGTH;
    else desc_now.pre_bad = 1'b0;
    // packet level (wire::decode on the UDP payload), then the buffer's own limit
    desc_now.post_bad = 1'b1;
    if (packet_len < 16'(netagg_pkg::HEADER_SIZE)) desc_now.post_reason = R_TRUNCATED;
    else if (version != netagg_pkg::WIRE_VERSION) desc_now.post_reason = R_BAD_VERSION;
    else if (msg_type != netagg_pkg::MSG_CONTRIBUTION && msg_type != netagg_pkg::MSG_RESULT &&
             msg_type != netagg_pkg::MSG_NOTICE)
      desc_now.post_reason = R_BAD_TYPE;
    else if (dtype > netagg_pkg::DTYPE_EXACT_LANES) desc_now.post_reason = R_BAD_DTYPE;
    else if ((flags & netagg_pkg::FLAGS_RESERVED_MASK) != 0) desc_now.post_reason = R_BAD_FLAGS;
    else if (count > 16'(netagg_pkg::MAX_COUNT)) desc_now.post_reason = R_COUNT;
    else if (packet_len != want_len) desc_now.post_reason = R_LENGTH;
    // padding past the beats a port stores (a longer packet fails count_too_large_for_job)
    else if (overlong_q && frame_len_q != {1'b0, ip_len} + ETH_BYTES)
      desc_now.post_reason = R_LENGTH;
    // a notice (a parent's, to a child in a tree) is well formed but no contribution: the first
    // job table check drops it
    else if (msg_type == netagg_pkg::MSG_NOTICE) desc_now.post_reason = R_NOTICE;
    // a design without exact fp32 (FEATURES bit 5 clear)
    else if (!EXACT &&
             (dtype == netagg_pkg::DTYPE_FP32_EXACT || dtype == netagg_pkg::DTYPE_EXACT_LANES))
      desc_now.post_reason = R_UNSUPPORTED;
    else desc_now.post_bad = 1'b0;

    desc_now.dst_port = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_UDP_DST_PORT);
    desc_now.src_ip = netagg_pkg::beat_be32(hdr_now, netagg_pkg::FRM_IPV4_SRC_ADDR);
    desc_now.src_port = netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_UDP_SRC_PORT);
    desc_now.ecn = hdr_now[8*netagg_pkg::FRM_IPV4_ECN+:2];  // IPV4_ECN_SHIFT 0: TOS bits 1:0
    desc_now.contribution = (msg_type == netagg_pkg::MSG_CONTRIBUTION);
    desc_now.dtype = dtype[2:0];
    desc_now.set_bit = (flags & netagg_pkg::FLAG_SET) != 0;
    desc_now.fresh = (flags & netagg_pkg::FLAG_FRESH) != 0;
    desc_now.recovery = (flags & netagg_pkg::FLAG_RECOVERY) != 0;
    desc_now.job_id = netagg_pkg::beat_be16(hdr_now, H + netagg_pkg::OFF_JOB_ID);
    desc_now.rank = netagg_pkg::beat_be16(hdr_now, H + netagg_pkg::OFF_RANK);
    desc_now.slot = netagg_pkg::beat_be16(hdr_now, H + netagg_pkg::OFF_SLOT);
    desc_now.count = count;
    desc_now.exponent = netagg_pkg::beat_be16(hdr_now, H + netagg_pkg::OFF_EXPONENT);
    desc_now.seq = netagg_pkg::beat_be32(hdr_now, H + netagg_pkg::OFF_SEQ);
    desc_now.epoch = netagg_pkg::beat_be32(hdr_now, H + netagg_pkg::OFF_EPOCH);

    addr_now.src_mac = {netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_ETH_SRC_ADDR),
                        netagg_pkg::beat_be32(hdr_now, netagg_pkg::FRM_ETH_SRC_ADDR + 2)};
    addr_now.dst_mac = {netagg_pkg::beat_be16(hdr_now, netagg_pkg::FRM_ETH_DST_ADDR),
                        netagg_pkg::beat_be32(hdr_now, netagg_pkg::FRM_ETH_DST_ADDR + 2)};
    addr_now.dst_ip = netagg_pkg::beat_be32(hdr_now, netagg_pkg::FRM_IPV4_DST_ADDR);
  end

  // Frame reception.
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      busy_q <= '0;
      ready_q <= '0;
      fin_q <= 1'b0;
      pop_q <= 1'b0;
      wr_q <= '0;
      rd_q <= '0;
      beats_q <= '0;
    end else begin
      fin_q <= take && s_tlast_i;
      if (fin_q) ready_q[fin_frame_q] <= 1'b1;  // checked: the consumer may decide it
      if (take) begin
        if (s_tlast_i) begin
          busy_q[wr_q] <= 1'b1;
          wr_q <= next_frame(wr_q);
          beats_q <= '0;
        end else if (beats_q != '1) begin
          beats_q <= beats_q + 1'b1;
        end
      end
      pop_q <= head_pop_i;
      hold_q <= head_hold_i;
      if (pop_q) begin
        ready_q[rd_q] <= 1'b0;
        if (!hold_q) busy_q[rd_q] <= 1'b0;
        rd_q <= next_frame(rd_q);
      end
      if (free_i) busy_q[free_frame_i] <= 1'b0;
    end
  end

  // Headers and descriptors: no reset needed (valid bits above).
  always_ff @(posedge clk_i) begin
    if (take && first_beat) hdr_q <= s_tdata_i;
    if (fin_q) desc_q[fin_frame_q] <= desc_now;
    if (fin_q) addr_q[fin_frame_q] <= addr_now;
  end

  // Payload buffer: beat b (1..MAX_BEATS) of entry f at f * MAX_BEATS + b - 1. Bytes past the
  // frame's end are stored as zero.
  logic [BEATCNT_W-1:0] wr_beat;
  assign wr_beat = beats_q - 1'b1;
  always_ff @(posedge clk_i) begin
    if (take && !first_beat && beats_q <= BEATCNT_W'(MAX_BEATS))
      mem_q[32'(wr_q) * MAX_BEATS + 32'(wr_beat)] <=
          s_tlast_i ? s_tdata_i & keep_mask(s_tkeep_i) : s_tdata_i;
    if (rd_en_i) rd_data_o <= mem_q[32'(rd_frame_i) * MAX_BEATS + 32'(rd_beat_i)];
  end

  // A pop takes effect a cycle later (the decision that pops is long; this register keeps it
  // off the buffer's bookkeeping); the head is not valid meanwhile, but its descriptor and
  // addresses are still there (a dropped frame's notice is made from them then).
  assign head_valid_o = ready_q[rd_q] && !pop_q;
  assign head_desc_o = desc_q[rd_q];
  assign head_addr_o = addr_q[rd_q];
  assign head_frame_o = rd_q;

endmodule

`default_nettype wire

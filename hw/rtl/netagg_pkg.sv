// SPDX-License-Identifier: Apache-2.0
// netagg_pkg: the constants and types of the FPGA aggregator's RTL.
//
// The wire part is generated from formats/wire.json (docs/wire-format.md explains every field);
// tests/hw/pkg_decode_test.cpp runs its functions on the golden frames in Verilator.
//
// Keep to the SystemVerilog subset yosys 0.23 reads (docs/fpga-aggregator.md, "RTL coding
// rules"): users write netagg_pkg::NAME (no import), functions assign their name (no return).
//
// Byte order on the 512-bit AXI4-Stream: frame byte k is TDATA[8k+7:8k]. Multi-byte fields are
// big-endian, so a field's first (most significant) byte has the lowest k.

`default_nettype none

package netagg_pkg;

  // A module uses some of these constants, never all of them.
  /* verilator lint_off UNUSEDPARAM */

  // BEGIN GENERATED [wire] from formats/wire.json by scripts/gen_formats.py; do not edit
  // ==== netagg header ========================================================================
  //
  //  offset  size  field
  //  0       1     version    wire format version
  //  1       1     type       contribution (worker to aggregator), result, notice (to a worker)
  //  2       1     dtype      data type of the payload elements
  //  3       1     flags      bit 0: set; bit 1: fresh; bit 2: recovery; bits 3..7 zero
  //  4       2     job_id     the job; aggregators keep a table of jobs
  //  6       2     rank       contribution: the sender's rank; result: the rank of the addressed wo
  //  8       2     slot       absolute slot index in the aggregator's pool, inside the job's range
  //  10      2     count      elements in the payload; 0 carries only an exponent
  //  12      2     exponent   int16 block exponent, max-reduced by the aggregator; -32768 (exponent
  //  14      4     seq        the worker's packet sequence number (its global packet index mod 2^32
  //  18      4     epoch      the run's token: the same for every worker of a run, drawn at random
  //  22      ...   payload    count elements, big-endian

  localparam logic [7:0]  WIRE_VERSION = 8'd1;
  localparam int unsigned HEADER_SIZE = 22;
  localparam logic [15:0] UDP_PORT = 16'd20033;  // well-known aggregator port
  localparam int unsigned MAX_COUNT = 1024;  // elements per packet, any dtype
  localparam int unsigned NOTICE_INTERVAL = 16;  // an aggregator sends a notice for the first drop of each notice_reason from each rank (its low 5 bits) and then for one in every notice_interval of them (a power of two); for every duplicate (each answers a retransmission, paced by its sender's timer)
  localparam logic [15:0] EXPONENT_NONE = 16'h8000;  // -32768: block exponent of a chunk of zeros: the identity of max
  localparam logic [15:0] EXPONENT_NON_FINITE = 16'h7FFF;  // 32767: block exponent of a chunk that held NaN or Inf
  localparam int unsigned EXACT_FRACTION_BITS = 54;  // fp32_exact: a lane at scale e holds x * 2^(exact_fraction_bits - e), rounded to nearest even (docs/numerics.md, "Exact fp32")
  localparam int unsigned EXACT_CODE_OFFSET = 98;  // fp32_exact: the exponent code of e in [-97, 128] is e + exact_code_offset (1..226); code 0 is none (a chunk of zeros)
  localparam int unsigned EXACT_MAX_CONTRIBUTIONS = 511;  // fp32_exact: workers of one job at most, over all its aggregators (no sum of that many lanes overflows 64 bits)

  // what a packet is
  typedef enum logic [7:0] {
    MSG_CONTRIBUTION = 8'd1,
    MSG_RESULT = 8'd2,
    MSG_NOTICE = 8'd3
  } msg_type_e;
  // word 0 of a notice's payload: the drop it reports (each name is a drop's); words 1.. of a `duplicate` notice hold the ranks its round waits for, rank r at bit r % 32 of word 1 + r / 32
  typedef enum logic [31:0] {
    NOTICE_UNKNOWN_JOB = 32'd1,
    NOTICE_RANK_OUT_OF_RANGE = 32'd2,
    NOTICE_FOREIGN_SOURCE = 32'd3,
    NOTICE_SLOT_OUT_OF_RANGE = 32'd4,
    NOTICE_UNSUPPORTED_DTYPE = 32'd5,
    NOTICE_COUNT_TOO_LARGE_FOR_JOB = 32'd6,
    NOTICE_COUNT_MISMATCH = 32'd7,
    NOTICE_DTYPE_MISMATCH = 32'd8,
    NOTICE_STALE = 32'd9,
    NOTICE_STALE_EPOCH = 32'd10,
    NOTICE_DUPLICATE = 32'd11,
    NOTICE_SCALE_MISMATCH = 32'd12
  } notice_reason_e;
  // type of the payload elements
  typedef enum logic [7:0] {
    DTYPE_INT32 = 8'd0,
    DTYPE_FP32 = 8'd1,
    DTYPE_BF16 = 8'd2,
    DTYPE_FP32_EXACT = 8'd3,
    DTYPE_EXACT_LANES = 8'd4
  } dtype_e;

  //  dtype        element size
  //  DTYPE_INT32  4 bytes
  //  DTYPE_FP32   4 bytes
  //  DTYPE_BF16   2 bytes
  //  DTYPE_FP32_EXACT 4 bytes
  //  DTYPE_EXACT_LANES 8 bytes
  localparam logic [7:0] FLAG_SET = 8'h01;  // which of the slot's two copies (the shadow copy)
  localparam logic [7:0] FLAG_FRESH = 8'h02;  // in a contribution, the sender's first use of this (slot, set) in its run, so it may take the set over from another epoch; kept in the packet's retransmissions and recovery copies; 0 in results, where workers ignore it
  localparam logic [7:0] FLAG_RECOVERY = 8'h04;  // in a contribution, a copy of a packet whose result the sender has, sent again for workers still waiting on its round; it never starts a round or takes a set over; 0 in results, where workers ignore it
  localparam logic [7:0] FLAGS_RESERVED_MASK = 8'hF8;

  localparam int unsigned MAX_ELEMENT_SIZE = 8;
  localparam int unsigned MAX_PAYLOAD_SIZE = MAX_COUNT * MAX_ELEMENT_SIZE;
  localparam int unsigned MAX_PACKET_SIZE  = HEADER_SIZE + MAX_PAYLOAD_SIZE;

  // Byte offsets of the fields inside the netagg header.
  localparam int unsigned OFF_VERSION = 0;
  localparam int unsigned OFF_TYPE = 1;
  localparam int unsigned OFF_DTYPE = 2;
  localparam int unsigned OFF_FLAGS = 3;
  localparam int unsigned OFF_JOB_ID = 4;
  localparam int unsigned OFF_RANK = 6;
  localparam int unsigned OFF_SLOT = 8;
  localparam int unsigned OFF_COUNT = 10;
  localparam int unsigned OFF_EXPONENT = 12;
  localparam int unsigned OFF_SEQ = 14;
  localparam int unsigned OFF_EPOCH = 18;
  localparam int unsigned OFF_PAYLOAD = 22;

  // Why a packet was rejected (wire::Error, same order and values).
  typedef enum logic [3:0] {
    ERR_OK = 4'd0,
    ERR_TRUNCATED = 4'd1,
    ERR_BAD_VERSION = 4'd2,
    ERR_BAD_TYPE = 4'd3,
    ERR_BAD_DTYPE = 4'd4,
    ERR_BAD_FLAGS = 4'd5,
    ERR_COUNT_TOO_LARGE = 4'd6,
    ERR_LENGTH_MISMATCH = 4'd7,
    ERR_NOT_IPV4 = 4'd8,
    ERR_BAD_IP_HEADER = 4'd9,
    ERR_NOT_UDP = 4'd10,
    ERR_WRONG_PORT = 4'd11,
    ERR_IP_LENGTH_MISMATCH = 4'd12,
    ERR_UDP_LENGTH_MISMATCH = 4'd13
  } wire_error_e;
  localparam int unsigned ERROR_COUNT = 14;

  // The header as a packed struct, fields in wire order and host (not byte-swapped) values.
  typedef struct packed {
    logic [7:0] version;
    logic [7:0] msg_type;  // msg_type_e when valid; kept raw so bad values stay visible
    logic [7:0] dtype;  // dtype_e when valid; kept raw so bad values stay visible
    logic [7:0] flags;
    logic [15:0] job_id;
    logic [15:0] rank;
    logic [15:0] slot;
    logic [15:0] count;
    logic [15:0] exponent;  // two's complement
    logic [31:0] seq;
    logic [31:0] epoch;
  } header_t;

  // ==== Ethernet / IPv4 / UDP framing =========================================================
  //
  //  frame byte  field
  //  0           ethernet.dst_addr (48 bits)
  //  6           ethernet.src_addr (48 bits)
  //  12          ethernet.ether_type (16 bits)
  //  14          ipv4.version (4 bits)
  //  14          ipv4.ihl (4 bits)
  //  15          ipv4.dscp (6 bits)
  //  15          ipv4.ecn (2 bits)
  //  16          ipv4.total_len (16 bits)
  //  18          ipv4.identification (16 bits)
  //  20          ipv4.flags (3 bits)
  //  20          ipv4.frag_offset (13 bits)
  //  22          ipv4.ttl (8 bits)
  //  23          ipv4.protocol (8 bits)
  //  24          ipv4.hdr_checksum (16 bits)
  //  26          ipv4.src_addr (32 bits)
  //  30          ipv4.dst_addr (32 bits)
  //  34          udp.src_port (16 bits)
  //  36          udp.dst_port (16 bits)
  //  38          udp.length (16 bits)
  //  40          udp.checksum (16 bits)
  //  42          netagg header (22 bytes)
  //  64          payload: beat 1 onwards

  localparam int unsigned ETH_HEADER_SIZE = 14;
  localparam int unsigned IPV4_HEADER_SIZE = 20;
  localparam int unsigned UDP_HEADER_SIZE = 8;
  localparam int unsigned FRAME_OVERHEAD = 42;
  localparam int unsigned FRAME_PAYLOAD_OFFSET = 64;

  // Frame byte offset of each header and field; a field that is not whole bytes also has
  // the width of the big-endian word holding it (_BYTES), its right shift and its width.
  localparam int unsigned FRM_ETH = 0;
  localparam int unsigned FRM_ETH_DST_ADDR = 0;
  localparam int unsigned FRM_ETH_SRC_ADDR = 6;
  localparam int unsigned FRM_ETH_ETHER_TYPE = 12;
  localparam int unsigned FRM_IPV4 = 14;
  localparam int unsigned FRM_IPV4_VERSION = 14, IPV4_VERSION_BYTES = 1, IPV4_VERSION_SHIFT = 4, IPV4_VERSION_BITS = 4;
  localparam int unsigned FRM_IPV4_IHL = 14, IPV4_IHL_BYTES = 1, IPV4_IHL_SHIFT = 0, IPV4_IHL_BITS = 4;
  localparam int unsigned FRM_IPV4_DSCP = 15, IPV4_DSCP_BYTES = 1, IPV4_DSCP_SHIFT = 2, IPV4_DSCP_BITS = 6;
  localparam int unsigned FRM_IPV4_ECN = 15, IPV4_ECN_BYTES = 1, IPV4_ECN_SHIFT = 0, IPV4_ECN_BITS = 2;
  localparam int unsigned FRM_IPV4_TOTAL_LEN = 16;
  localparam int unsigned FRM_IPV4_IDENTIFICATION = 18;
  localparam int unsigned FRM_IPV4_FLAGS = 20, IPV4_FLAGS_BYTES = 1, IPV4_FLAGS_SHIFT = 5, IPV4_FLAGS_BITS = 3;
  localparam int unsigned FRM_IPV4_FRAG_OFFSET = 20, IPV4_FRAG_OFFSET_BYTES = 2, IPV4_FRAG_OFFSET_SHIFT = 0, IPV4_FRAG_OFFSET_BITS = 13;
  localparam int unsigned FRM_IPV4_TTL = 22;
  localparam int unsigned FRM_IPV4_PROTOCOL = 23;
  localparam int unsigned FRM_IPV4_HDR_CHECKSUM = 24;
  localparam int unsigned FRM_IPV4_SRC_ADDR = 26;
  localparam int unsigned FRM_IPV4_DST_ADDR = 30;
  localparam int unsigned FRM_UDP = 34;
  localparam int unsigned FRM_UDP_SRC_PORT = 34;
  localparam int unsigned FRM_UDP_DST_PORT = 36;
  localparam int unsigned FRM_UDP_LENGTH = 38;
  localparam int unsigned FRM_UDP_CHECKSUM = 40;
  localparam int unsigned FRM_NETAGG = 42;

  localparam logic [15:0] ETHERTYPE_IPV4 = 16'h0800;
  localparam logic [15:0] ETHERTYPE_ARP = 16'h0806;
  localparam logic [7:0] IP_PROTOCOL_ICMP = 8'h01;
  localparam logic [7:0] IP_PROTOCOL_UDP = 8'h11;
  localparam logic [7:0] IP_VERSION_IHL = 8'h45;  // version 4, IHL 5: no options
  localparam logic [7:0] IP_TTL = 8'h40;  // TTL of the frames netagg sends
  localparam logic [2:0] IP_FLAGS_DF = 3'd2;  // the 3-bit flags field with DF set
  localparam logic [15:0] IP_FRAGMENT_MASK = 16'h3FFF;  // MF and fragment offset: zero in a netagg frame
  localparam logic [15:0] ARP_OPCODE_REQUEST = 16'h0001;
  localparam logic [15:0] ARP_OPCODE_REPLY = 16'h0002;
  localparam logic [7:0] ICMP_ECHO_REQUEST = 8'h08;
  localparam logic [7:0] ICMP_ECHO_REPLY = 8'h00;
  localparam logic [15:0] MIN_ETH_FRAME = 16'h003C;  // shorter frames are padded to this (without FCS)

  // ==== 512-bit beats =========================================================================
  localparam int unsigned BEAT_BYTES = 64;
  localparam int unsigned BEAT_BITS  = BEAT_BYTES * 8;
  localparam int unsigned KEEP_BITS  = BEAT_BYTES;

  // `offset` is the frame byte offset of the field's first byte; it must lie inside the beat.
  function automatic logic [7:0] beat_u8(input logic [BEAT_BITS-1:0] beat,
                                         input int unsigned offset);
    beat_u8 = beat[offset*8 +: 8];
  endfunction

  function automatic logic [15:0] beat_be16(input logic [BEAT_BITS-1:0] beat,
                                            input int unsigned offset);
    beat_be16 = {beat[offset*8 +: 8], beat[(offset+1)*8 +: 8]};
  endfunction

  function automatic logic [31:0] beat_be32(input logic [BEAT_BITS-1:0] beat,
                                            input int unsigned offset);
    beat_be32 = {beat[offset*8 +: 8], beat[(offset+1)*8 +: 8], beat[(offset+2)*8 +: 8],
                 beat[(offset+3)*8 +: 8]};
  endfunction

  // The netagg header of beat 0 of a frame, as a header_t (assign the result to a header_t
  // variable: yosys 0.23 cannot return structs).
  function automatic logic [HEADER_SIZE*8-1:0] header_from_beat(
      input logic [BEAT_BITS-1:0] beat);
    header_from_beat = {beat_u8(beat, FRM_NETAGG + OFF_VERSION),
                        beat_u8(beat, FRM_NETAGG + OFF_TYPE),
                        beat_u8(beat, FRM_NETAGG + OFF_DTYPE),
                        beat_u8(beat, FRM_NETAGG + OFF_FLAGS),
                        beat_be16(beat, FRM_NETAGG + OFF_JOB_ID),
                        beat_be16(beat, FRM_NETAGG + OFF_RANK),
                        beat_be16(beat, FRM_NETAGG + OFF_SLOT),
                        beat_be16(beat, FRM_NETAGG + OFF_COUNT),
                        beat_be16(beat, FRM_NETAGG + OFF_EXPONENT),
                        beat_be32(beat, FRM_NETAGG + OFF_SEQ),
                        beat_be32(beat, FRM_NETAGG + OFF_EPOCH)};
  endfunction

  // A header_t's HEADER_SIZE bytes in frame order (byte 0, the version, in bits 7:0): place
  // the result at beat bits [FRM_NETAGG*8 +: HEADER_SIZE*8].
  function automatic logic [HEADER_SIZE*8-1:0] header_bytes(
      input logic [HEADER_SIZE*8-1:0] header);
    logic [HEADER_SIZE*8-1:0] wire_order;
    // header_t lists the fields in wire order, most significant first: its bytes, last to
    // first, are the wire bytes first to last.
    for (int unsigned i = 0; i < HEADER_SIZE; i++) begin
      wire_order[i*8 +: 8] = header[(HEADER_SIZE-1-i)*8 +: 8];
    end
    header_bytes = wire_order;
  endfunction
  // END GENERATED [wire]

  // ==== 512-bit beats ========================================================================
  // Do not change: the beat is the 512-bit AXI4-Stream word of a 100G MAC.
  localparam int unsigned LANES         = 16;  // 32-bit lanes a beat (int32, fp32)
  localparam int unsigned BF16_LANES    = 32;  // 16-bit lanes a beat

  // ==== IEEE 754 constants ===================================================================
  //
  //  format    sign  exponent        fraction      quiet bit
  //  binary32  31    30:23 (bias 127)  22:0        22
  //  bfloat16  15    14:7  (bias 127)  6:0         6
  localparam logic [31:0] FP32_QUIET_BIT   = 32'h0040_0000;
  localparam logic [31:0] FP32_DEFAULT_NAN = 32'hFFC0_0000;  // x86 "real indefinite": inf - inf
  localparam logic [15:0] BF16_QUIET_BIT   = 16'h0040;

  // ==== Design parameters: defaults (docs/fpga-aggregator.md, "Parameters") ==================
  // BEGIN GENERATED [params] from formats/csr.json by scripts/gen_formats.py; do not edit
  localparam int unsigned NUM_PORTS_DEFAULT       = 4;   // ingress and egress ports
  localparam int unsigned SLOTS_DEFAULT           = 64;  // slots, two sets each
  localparam int unsigned MAX_BEATS_DEFAULT       = 16;  // payload beats a slot holds
  localparam int unsigned MAX_JOBS_DEFAULT        = 8;   // job table entries
  localparam int unsigned MAX_WORKERS_DEFAULT     = 32;  // workers per job (bitmap width)
  localparam int unsigned FP32_ADD_STAGES_DEFAULT = 3;   // netagg_fp32_add latency in cycles
  // END GENERATED [params]

  /* verilator lint_on UNUSEDPARAM */

  // Swaps the bytes of every 32-bit lane: big-endian wire lanes <-> host values (self-inverse).
  function automatic logic [BEAT_BITS-1:0] swap_lanes32(input logic [BEAT_BITS-1:0] beat);
    logic [BEAT_BITS-1:0] swapped;
    logic [31:0] w;
    for (int unsigned lane = 0; lane < LANES; lane++) begin
      w = beat[lane*32+:32];
      swapped[lane*32+:32] = {w[7:0], w[15:8], w[23:16], w[31:24]};
    end
    swap_lanes32 = swapped;
  endfunction

  // Swaps the bytes of every 16-bit lane (bf16 payloads).
  function automatic logic [BEAT_BITS-1:0] swap_lanes16(input logic [BEAT_BITS-1:0] beat);
    logic [BEAT_BITS-1:0] swapped;
    logic [31:0] w;
    for (int unsigned pair = 0; pair < BF16_LANES / 2; pair++) begin
      w = beat[pair*32+:32];
      swapped[pair*32+:32] = {w[23:16], w[31:24], w[7:0], w[15:8]};
    end
    swap_lanes16 = swapped;
  endfunction

endpackage

`default_nettype wire

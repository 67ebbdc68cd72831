// netagg_pkg: the constants and types of the FPGA aggregator's RTL.
//
// The wire part mirrors host/include/netagg/wire.hpp field for field (that header is the one
// definition; docs/wire-format.md explains every field). tests/hw/pkg_mirror_test.cpp parses this
// file and checks every value against the C++ constants and the golden vectors, and
// tests/hw/pkg_decode_test.cpp runs the functions below on the golden frames in Verilator.
//
// Keep to the SystemVerilog subset yosys 0.23 reads (docs/fpga-aggregator.md, "RTL coding
// rules"): users write netagg_pkg::NAME (no import), functions assign their name (no return).
//
// Byte order on the 512-bit AXI4-Stream: frame byte k is TDATA[8k+7:8k]. Multi-byte fields are
// big-endian, so a field's first (most significant) byte has the lowest k.

package netagg_pkg;

  // A module uses some of these constants, never all of them.
  /* verilator lint_off UNUSEDPARAM */

  // ==== netagg header (wire.hpp) ============================================================
  //
  //  offset  size  field      meaning
  //  0       1     version    WIRE_VERSION
  //  1       1     type       msg_type_e
  //  2       1     dtype      dtype_e of the payload elements
  //  3       1     flags      bit 0: set (which of the slot's two copies); bits 1..7 zero
  //  4       2     job_id     job the packet belongs to
  //  6       2     rank       contribution: sender's rank; result: the addressed worker's rank
  //  8       2     slot       absolute slot index in the aggregator's pool
  //  10      2     count      number of elements in the payload (0 allowed: exponent only)
  //  12      2     exponent   int16 block exponent, max-reduced by the aggregator
  //  14      4     seq        packet sequence number, echoed in the result
  //  18      4     reserved   zero; keeps the payload at frame offset 64 (one 512-bit beat)
  //  22      ...   payload    count elements, big-endian

  localparam logic [7:0]  WIRE_VERSION        = 8'd1;
  localparam int unsigned HEADER_SIZE         = 22;
  localparam int unsigned MAX_COUNT           = 1024;      // elements per packet, any dtype
  localparam logic [15:0] UDP_PORT            = 16'd20033;  // well-known aggregator port
  localparam logic [15:0] EXPONENT_NONE       = 16'h8000;   // INT16_MIN: chunk of zeros
  localparam logic [15:0] EXPONENT_NON_FINITE = 16'h7FFF;   // INT16_MAX: chunk held NaN/Inf

  typedef enum logic [7:0] {
    MSG_CONTRIBUTION = 8'd1,
    MSG_RESULT       = 8'd2
  } msg_type_e;

  //  dtype        value  element size  lanes a beat
  //  DTYPE_INT32  0      4 bytes       16
  //  DTYPE_FP32   1      4 bytes       16
  //  DTYPE_BF16   2      2 bytes       32
  typedef enum logic [7:0] {
    DTYPE_INT32 = 8'd0,
    DTYPE_FP32  = 8'd1,
    DTYPE_BF16  = 8'd2
  } dtype_e;

  localparam logic [7:0] FLAG_SET            = 8'h01;
  localparam logic [7:0] FLAGS_RESERVED_MASK = 8'hFE;

  localparam int unsigned MAX_ELEMENT_SIZE = 4;
  localparam int unsigned MAX_PAYLOAD_SIZE = MAX_COUNT * MAX_ELEMENT_SIZE;
  localparam int unsigned MAX_PACKET_SIZE  = HEADER_SIZE + MAX_PAYLOAD_SIZE;

  // Byte offsets of the header fields inside the netagg header (wire::offset).
  localparam int unsigned OFF_VERSION  = 0;
  localparam int unsigned OFF_TYPE     = 1;
  localparam int unsigned OFF_DTYPE    = 2;
  localparam int unsigned OFF_FLAGS    = 3;
  localparam int unsigned OFF_JOB_ID   = 4;
  localparam int unsigned OFF_RANK     = 6;
  localparam int unsigned OFF_SLOT     = 8;
  localparam int unsigned OFF_COUNT    = 10;
  localparam int unsigned OFF_EXPONENT = 12;
  localparam int unsigned OFF_SEQ      = 14;
  localparam int unsigned OFF_RESERVED = 18;
  localparam int unsigned OFF_PAYLOAD  = 22;

  // Why a packet was rejected (wire::Error, same order and values).
  typedef enum logic [3:0] {
    ERR_OK                  = 4'd0,
    ERR_TRUNCATED           = 4'd1,
    ERR_BAD_VERSION         = 4'd2,
    ERR_BAD_TYPE            = 4'd3,
    ERR_BAD_DTYPE           = 4'd4,
    ERR_BAD_FLAGS           = 4'd5,
    ERR_RESERVED_NONZERO    = 4'd6,
    ERR_COUNT_TOO_LARGE     = 4'd7,
    ERR_LENGTH_MISMATCH     = 4'd8,
    ERR_NOT_IPV4            = 4'd9,
    ERR_BAD_IP_HEADER       = 4'd10,
    ERR_NOT_UDP             = 4'd11,
    ERR_WRONG_PORT          = 4'd12,
    ERR_IP_LENGTH_MISMATCH  = 4'd13,
    ERR_UDP_LENGTH_MISMATCH = 4'd14
  } wire_error_e;
  localparam int unsigned ERROR_COUNT = 15;

  // The header as a packed struct, fields in wire order and host (not byte-swapped) values.
  typedef struct packed {
    logic [7:0]  version;
    logic [7:0]  msg_type;  // a msg_type_e when valid; kept raw so bad values stay visible
    logic [7:0]  dtype;     // a dtype_e when valid
    logic [7:0]  flags;
    logic [15:0] job_id;
    logic [15:0] rank;
    logic [15:0] slot;
    logic [15:0] count;
    logic [15:0] exponent;  // int16, two's complement
    logic [31:0] seq;
    logic [31:0] reserved;
  } header_t;

  // ==== Ethernet / IPv4 / UDP framing (wire.hpp, docs/wire-format.md) ========================
  //
  //  frame byte  size  field
  //  0           6     Ethernet destination MAC
  //  6           6     Ethernet source MAC
  //  12          2     EtherType (0x0800)
  //  14          1     IPv4 version 4, IHL 5 (0x45)
  //  15          1     TOS: DSCP (7:2), ECN (1:0)
  //  16          2     IPv4 total length
  //  18          2     identification
  //  20          2     flags (DF) and fragment offset
  //  22          1     TTL (64)
  //  23          1     protocol (17, UDP)
  //  24          2     header checksum
  //  26          4     source IPv4 address
  //  30          4     destination IPv4 address
  //  34          2     UDP source port
  //  36          2     UDP destination port (UDP_PORT)
  //  38          2     UDP length
  //  40          2     UDP checksum (0)
  //  42          22    netagg header
  //  64          ...   payload: beat 1 onwards

  localparam int unsigned ETH_HEADER_SIZE      = 14;
  localparam int unsigned IPV4_HEADER_SIZE     = 20;
  localparam int unsigned UDP_HEADER_SIZE      = 8;
  localparam int unsigned FRAME_OVERHEAD       = ETH_HEADER_SIZE + IPV4_HEADER_SIZE + UDP_HEADER_SIZE;
  localparam int unsigned FRAME_PAYLOAD_OFFSET = FRAME_OVERHEAD + HEADER_SIZE;
  localparam int unsigned MIN_ETH_FRAME        = 60;  // shorter frames are padded to this

  localparam int unsigned FRM_ETH_DST         = 0;
  localparam int unsigned FRM_ETH_SRC         = 6;
  localparam int unsigned FRM_ETHERTYPE       = 12;
  localparam int unsigned FRM_IP_VERSION_IHL  = 14;
  localparam int unsigned FRM_IP_TOS          = 15;
  localparam int unsigned FRM_IP_TOTAL_LENGTH = 16;
  localparam int unsigned FRM_IP_ID           = 18;
  localparam int unsigned FRM_IP_FLAGS_FRAG   = 20;
  localparam int unsigned FRM_IP_TTL          = 22;
  localparam int unsigned FRM_IP_PROTOCOL     = 23;
  localparam int unsigned FRM_IP_CHECKSUM     = 24;
  localparam int unsigned FRM_IP_SRC          = 26;
  localparam int unsigned FRM_IP_DST          = 30;
  localparam int unsigned FRM_UDP_SRC_PORT    = 34;
  localparam int unsigned FRM_UDP_DST_PORT    = 36;
  localparam int unsigned FRM_UDP_LENGTH      = 38;
  localparam int unsigned FRM_UDP_CHECKSUM    = 40;
  localparam int unsigned FRM_HEADER          = FRAME_OVERHEAD;  // the netagg header

  localparam logic [15:0] ETHERTYPE_IPV4  = 16'h0800;
  localparam logic [7:0]  IP_VERSION_IHL  = 8'h45;
  localparam logic [7:0]  IP_PROTOCOL_UDP = 8'd17;
  localparam logic [7:0]  IP_TTL          = 8'd64;
  localparam logic [15:0] IP_FLAGS_DF     = 16'h4000;  // the whole flags/fragment field
  localparam logic [7:0]  IP_ECN_MASK     = 8'h03;     // in the TOS byte

  // ==== 512-bit beats ========================================================================
  // Do not change: the beat is the 512-bit AXI4-Stream word of a 100G MAC.
  localparam int unsigned BEAT_BYTES    = 64;
  localparam int unsigned BEAT_BITS     = BEAT_BYTES * 8;
  localparam int unsigned LANES         = 16;  // 32-bit lanes a beat (int32, fp32)
  localparam int unsigned BF16_LANES    = 32;  // 16-bit lanes a beat
  localparam int unsigned KEEP_BITS     = BEAT_BYTES;

  // ==== IEEE 754 constants ===================================================================
  //
  //  format    sign  exponent        fraction      quiet bit
  //  binary32  31    30:23 (bias 127)  22:0        22
  //  bfloat16  15    14:7  (bias 127)  6:0         6
  localparam logic [31:0] FP32_QUIET_BIT   = 32'h0040_0000;
  localparam logic [31:0] FP32_DEFAULT_NAN = 32'hFFC0_0000;  // x86 "real indefinite": inf - inf
  localparam logic [15:0] BF16_QUIET_BIT   = 16'h0040;

  // ==== Design parameters: defaults (docs/fpga-aggregator.md, "Parameters") ==================
  localparam int unsigned NUM_PORTS_DEFAULT       = 4;   // ingress and egress ports
  localparam int unsigned SLOTS_DEFAULT           = 64;  // slots, two sets each
  localparam int unsigned MAX_BEATS_DEFAULT       = 16;  // payload beats a slot holds
  localparam int unsigned MAX_JOBS_DEFAULT        = 8;   // job table entries
  localparam int unsigned MAX_WORKERS_DEFAULT     = 32;  // workers per job (bitmap width)
  localparam int unsigned FP32_ADD_STAGES_DEFAULT = 3;   // netagg_fp32_add latency in cycles

  /* verilator lint_on UNUSEDPARAM */

  // ==== Field access on a beat ===============================================================
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

  // The netagg header of beat 0 of a frame (bytes FRM_HEADER .. FRM_HEADER + HEADER_SIZE - 1),
  // as a header_t (assign the result to a header_t variable: yosys 0.23 cannot return structs).
  function automatic logic [HEADER_SIZE*8-1:0] header_from_beat(
      input logic [BEAT_BITS-1:0] beat);
    header_from_beat = {beat_u8(beat, FRM_HEADER + OFF_VERSION),
                        beat_u8(beat, FRM_HEADER + OFF_TYPE),
                        beat_u8(beat, FRM_HEADER + OFF_DTYPE),
                        beat_u8(beat, FRM_HEADER + OFF_FLAGS),
                        beat_be16(beat, FRM_HEADER + OFF_JOB_ID),
                        beat_be16(beat, FRM_HEADER + OFF_RANK),
                        beat_be16(beat, FRM_HEADER + OFF_SLOT),
                        beat_be16(beat, FRM_HEADER + OFF_COUNT),
                        beat_be16(beat, FRM_HEADER + OFF_EXPONENT),
                        beat_be32(beat, FRM_HEADER + OFF_SEQ),
                        beat_be32(beat, FRM_HEADER + OFF_RESERVED)};
  endfunction

  // A header_t's HEADER_SIZE bytes in frame order (byte 0, the version, in bits 7:0): place the
  // result at beat bits [FRM_HEADER*8 +: HEADER_SIZE*8].
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

  // Swaps the bytes of every 32-bit lane: big-endian wire lanes <-> host values (self-inverse).
  function automatic logic [BEAT_BITS-1:0] swap_lanes32(input logic [BEAT_BITS-1:0] beat);
    logic [BEAT_BITS-1:0] swapped;
    for (int unsigned lane = 0; lane < LANES; lane++) begin
      for (int unsigned b = 0; b < 4; b++) begin
        swapped[lane*32 + b*8 +: 8] = beat[lane*32 + (3-b)*8 +: 8];
      end
    end
    swap_lanes32 = swapped;
  endfunction

  // Swaps the bytes of every 16-bit lane (bf16 payloads).
  function automatic logic [BEAT_BITS-1:0] swap_lanes16(input logic [BEAT_BITS-1:0] beat);
    logic [BEAT_BITS-1:0] swapped;
    for (int unsigned lane = 0; lane < BF16_LANES; lane++) begin
      swapped[lane*16 +: 8]     = beat[lane*16 + 8 +: 8];
      swapped[lane*16 + 8 +: 8] = beat[lane*16 +: 8];
    end
    swap_lanes16 = swapped;
  endfunction

endpackage

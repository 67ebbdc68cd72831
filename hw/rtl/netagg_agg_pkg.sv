// Types, constants and helper functions shared by the modules of the hand-written aggregator
// (docs/fpga-aggregator.md). The wire format mirror is netagg_pkg (helper A); the CSR offsets
// and counter indices are the generated netagg_csr_pkg. This package holds what only the
// aggregator's own modules exchange: the ingress descriptor and the 512-bit beat helpers.
//
// Frame bytes on the 512-bit AXI4-Stream: byte k of a beat is TDATA[8k+7:8k]. Beat 0 holds the
// Ethernet (0..13), IPv4 (14..33), UDP (34..41) and netagg (42..63) headers; the payload starts
// at beat 1, elements big-endian.
package netagg_agg_pkg;

  // A module uses some of these items, never all of them.
  /* verilator lint_off UNUSEDPARAM */

  // ---- fixed by the design (do not change) ---------------------------------------------------
  localparam int unsigned BEAT_W = 512;       // AXI4-Stream TDATA bits
  localparam int unsigned KEEP_W = 64;        // TKEEP bits (bytes a beat)
  localparam int unsigned LANES = 16;         // 32-bit lanes a beat
  localparam int unsigned MAX_WORKERS = 32;   // worker bitmap width
  localparam int unsigned RANK_W = 5;         // log2(MAX_WORKERS)
  localparam int unsigned NWORKERS_W = 6;     // 0..MAX_WORKERS
  // = netagg_csr_pkg::COUNTER_INDEX_BITS (checked in netagg_core; yosys cannot read another
  // package's parameter here)
  localparam int unsigned REASON_W = 5;

  // dtype codes of the netagg header
  localparam logic [1:0] DT_INT32 = 2'd0;
  localparam logic [1:0] DT_FP32 = 2'd1;
  localparam logic [1:0] DT_BF16 = 2'd2;

  // What the ingress buffer knows about a stored frame: the header fields the aggregator uses
  // and the result of the frame and packet checks that do not depend on configuration. The UDP
  // destination port check (AGG_UDP_PORT, a CSR) sits between the two groups of checks, so it
  // is made at the head of the port, together with the job table checks.
  typedef struct packed {
    logic                pre_bad;      // a frame check before wrong_port failed ...
    logic [REASON_W-1:0] pre_reason;   // ... this one (a counter index)
    logic                post_bad;     // a packet check after wrong_port failed ...
    logic [REASON_W-1:0] post_reason;  // ... this one
    logic [15:0]         dst_port;     // UDP destination port
    logic [31:0]         src_ip;
    logic [15:0]         src_port;
    logic [1:0]          ecn;          // IPv4 TOS bits 1:0
    logic                contribution; // type == contribution
    logic [1:0]          dtype;
    logic                set_bit;      // flags bit 0: which of the slot's two sets
    logic [15:0]         job_id;
    logic [15:0]         rank;
    logic [15:0]         slot;
    logic [15:0]         count;
    logic [15:0]         exponent;
    logic [31:0]         seq;
  } desc_t;
  // $bits(desc_t), spelled out for yosys; Verilator's WIDTH lint catches a mismatch.
  localparam int unsigned DESC_W = 2 * REASON_W + 184;

  // A result to send: everything the replication stage needs besides the job table's addresses
  // and the accumulators. Kept as a plain vector in queues (yosys takes no arrays of structs).
  typedef struct packed {
    logic [15:0] slot;
    logic        set_bit;
    logic [7:0]  entry;      // job table entry
    logic [15:0] job_id;
    logic [1:0]  dtype;
    logic [15:0] count;
    logic [15:0] exponent;
    logic [31:0] seq;
    logic [1:0]  ecn;
    logic [MAX_WORKERS-1:0] dest;  // ranks that get a copy
  } result_t;
  localparam int unsigned RESULT_W = 141;  // $bits(result_t), spelled out for yosys

  // Byte k of a beat.
  function automatic logic [7:0] beat_byte(input logic [BEAT_W-1:0] beat, input int unsigned k);
    beat_byte = beat[8*k+:8];
  endfunction

  // Big-endian 16/32-bit field starting at byte k.
  function automatic logic [15:0] be16(input logic [BEAT_W-1:0] beat, input int unsigned k);
    be16 = {beat[8*k+:8], beat[8*(k+1)+:8]};
  endfunction
  function automatic logic [31:0] be32(input logic [BEAT_W-1:0] beat, input int unsigned k);
    be32 = {beat[8*k+:8], beat[8*(k+1)+:8], beat[8*(k+2)+:8], beat[8*(k+3)+:8]};
  endfunction

  // Lane i of a beat of big-endian 32-bit elements, as a value (and back: the same swap).
  function automatic logic [31:0] bswap32(input logic [31:0] x);
    bswap32 = {x[7:0], x[15:8], x[23:16], x[31:24]};
  endfunction

  // One's complement sum of 16-bit words, folded, as the IPv4 header checksum uses it.
  function automatic logic [15:0] fold16(input logic [19:0] sum);
    logic [16:0] once;
    once = {1'b0, sum[15:0]} + {13'd0, sum[19:16]};
    fold16 = once[15:0] + {15'd0, once[16]};
  endfunction

  // Number of 16-lane beats `count` elements fill (accumulator beats, for every dtype).
  function automatic logic [15:0] acc_beats(input logic [15:0] count);
    acc_beats = (count + 16'd15) >> 4;
  endfunction

  /* verilator lint_on UNUSEDPARAM */

endpackage

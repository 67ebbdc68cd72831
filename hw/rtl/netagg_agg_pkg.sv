// SPDX-License-Identifier: Apache-2.0
// Types and constants the modules of the hand-written aggregator exchange
// (docs/fpga-aggregator.md): the ingress descriptor and addresses, and the queued result. The wire format (field offsets, codes, beat
// geometry) is netagg_pkg, the CSR offsets and counter indices the generated netagg_csr_pkg;
// yosys cannot read another package's parameters inside a package, so the few widths repeated
// here are checked against those packages in netagg_core.
`default_nettype none

package netagg_agg_pkg;

  // A module uses some of these items, never all of them.
  /* verilator lint_off UNUSEDPARAM */

  // ---- fixed by the design (do not change) ---------------------------------------------------
  localparam int unsigned BEAT_W = 512;       // = netagg_pkg::BEAT_BITS
  localparam int unsigned KEEP_W = 64;        // = netagg_pkg::KEEP_BITS
  localparam int unsigned LANES = 16;         // = netagg_pkg::LANES
  localparam int unsigned MAX_WORKERS = 32;   // worker bitmap width, = MAX_WORKERS_DEFAULT
  localparam int unsigned RANK_W = 5;         // log2(MAX_WORKERS)
  localparam int unsigned NWORKERS_W = 6;     // 0..MAX_WORKERS
  localparam int unsigned REASON_W = 6;       // = netagg_csr_pkg::COUNTER_INDEX_BITS
  localparam int unsigned CSR_AW = 12;        // = netagg_csr_pkg::CSR_ADDR_BITS

  // The AXI4-Lite control bus inside the design: what the manager drives, what the CSR block
  // answers. The top (netagg_aggregator) keeps the flat s_axi_control_* ports a Vitis kernel
  // has and packs them into these.
  typedef struct packed {
    logic [CSR_AW-1:0] awaddr;
    logic              awvalid;
    logic [31:0]       wdata;
    logic [3:0]        wstrb;
    logic              wvalid;
    logic              bready;
    logic [CSR_AW-1:0] araddr;
    logic              arvalid;
    logic              rready;
  } axil_req_t;
  typedef struct packed {
    logic        awready;
    logic        wready;
    logic [1:0]  bresp;
    logic        bvalid;
    logic        arready;
    logic [31:0] rdata;
    logic [1:0]  rresp;
    logic        rvalid;
  } axil_rsp_t;

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
    logic [2:0]          dtype;
    logic                set_bit;      // flags bit 0: which of the slot's two sets
    logic                fresh;        // flags bit 1: may take the set over from another epoch
    logic                recovery;     // flags bit 2: a copy that never starts a round
    logic [15:0]         job_id;
    logic [15:0]         rank;
    logic [15:0]         slot;
    logic [15:0]         count;
    logic [15:0]         exponent;
    logic [31:0]         seq;
    logic [31:0]         epoch;
  } desc_t;
  // $bits(desc_t), spelled out for yosys; Verilator's WIDTH lint catches a mismatch.
  localparam int unsigned DESC_W = 2 * REASON_W + 219;
  // The addresses of a stored frame that desc_t leaves out: what a notice needs to go back to
  // the frame's source (netagg_notice swaps them with the source IPv4 address and UDP ports).
  typedef struct packed {
    logic [47:0] src_mac;
    logic [47:0] dst_mac;
    logic [31:0] dst_ip;
  } addr_t;
  localparam int unsigned ADDR_W = 128;  // $bits(addr_t)

  // A result to send (or, trees, a round's sum to the parent): everything the replication stage
  // needs besides the job table's addresses and the accumulators. Kept as a plain vector in
  // queues (yosys takes no arrays of structs).
  typedef struct packed {
    logic [15:0] slot;
    logic        set_bit;
    logic [7:0]  entry;      // job table entry
    logic [15:0] job_id;
    logic [2:0]  dtype;
    logic [15:0] count;
    logic [15:0] exponent;
    logic [31:0] seq;
    logic [31:0] epoch;
    logic [1:0]  ecn;
    logic        up;     // trees: the round's sum to the job's parent (one frame), not results
    logic        fresh;  // up: the round's packets were fresh (the frame carries the flag)
    logic        rounded;  // an exact round holding the parent's fp32 result: sent as it is
    logic [MAX_WORKERS-1:0] dest;  // ranks that get a copy
  } result_t;
  localparam int unsigned RESULT_W = 177;  // $bits(result_t), spelled out for yosys

  // The exponent of an 8-bit exponent code (0 none, e + EXACT_CODE_OFFSET for e in -97..128),
  // as the int16 netagg_exact_to_lane takes; a code beyond 226 is taken as none (every nonzero
  // finite element becomes NaN and is counted out of range).
  function automatic logic [15:0] exact_exponent(input logic [7:0] code);
    if (code == 8'd0 || code > 8'd226) exact_exponent = 16'h8000;
    else exact_exponent = 16'({8'd0, code} - 16'd98);
  endfunction

  // One's complement sum of 16-bit words, folded, as the IPv4 header checksum uses it.
  function automatic logic [15:0] fold16(input logic [19:0] sum);
    logic [16:0] once;
    once = {1'b0, sum[15:0]} + {13'd0, sum[19:16]};
    fold16 = once[15:0] + {15'd0, once[16]};
  endfunction

  /* verilator lint_on UNUSEDPARAM */

endpackage

`default_nettype wire

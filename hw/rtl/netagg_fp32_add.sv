// SPDX-License-Identifier: Apache-2.0
// IEEE 754 binary32 adder: round to nearest even, subnormals kept (no flush to zero), fully
// pipelined (one addition a cycle, result STAGES cycles after its operands).
//
// Results are bit-exact against x86 SSE `addss a, b` in the default MXCSR (tests/hw/
// fp32_add_test.cpp), NaN rules included (docs/fpga-aggregator.md, "Arithmetic"):
//
//  operands                      sum_o
//  a NaN                         a quieted (quiet bit set, sign and payload kept)
//  a not NaN, b NaN              b quieted
//  +inf + -inf, -inf + +inf      FP32_DEFAULT_NAN (0xFFC00000)
//  one infinity, other finite    that infinity
//  x + (-x), finite              +0
//  -0 + -0                       -0
//  |exact sum| rounds past max   inf with the sum's sign
//
// The datapath has four phases; STAGES chooses where the registers go (an output register
// always; "|" marks a register):
//
//  STAGES  placement                                     registers between phases
//  1       align  add  normalize  round |                none
//  2       align  add | normalize  round |               after add
//  3       align | add | normalize  round |              after align, add
//  4       align | add | normalize | round |             after every phase
//  >4      as 4, plus STAGES-4 output registers (for register retiming by the tools)
//
//  align      classify, swap so |x| >= |y|, shift y's significand right with a sticky bit,
//             and a mask that keeps the normalize shift from going below the smallest exponent
//  add        x +/- aligned y (28 bits), leading zero count of the masked sum
//  normalize  shift left by that count (or right by one on a carry out), adjust the exponent
//  round      round to nearest even by adding into the packed exponent|fraction, specials
//
// Why three guard bits are enough: if the exponents differ by 2 or more the sum needs at most a
// one-bit left shift, so guard, round and sticky keep every bit rounding needs; if they differ
// by 0 or 1 nothing is shifted out at all and the sum is exact before rounding.

`default_nettype none

module netagg_fp32_add #(
  // latency, >= 1 cycles (public: tests read the default from the Verilated model)
  parameter int unsigned STAGES /*verilator public*/ = netagg_pkg::FP32_ADD_STAGES_DEFAULT
) (
  input  logic        clk_i,
  input  logic        rst_ni,   // synchronous, active low: empties the pipeline
  input  logic        valid_i,  // a_i and b_i hold operands this cycle
  input  logic [31:0] a_i,      // first operand (its NaN wins over b's)
  input  logic [31:0] b_i,
  output logic        valid_o,  // sum_o holds the sum of the operands of STAGES cycles ago
  output logic [31:0] sum_o
);

  if (STAGES < 1) begin : gen_bad_stages
    $error("netagg_fp32_add: STAGES must be at least 1");
  end

  // Do not change: derived from STAGES (see the table above).
  localparam bit          RegAfterAlign     = STAGES >= 3;
  localparam bit          RegAfterAdd       = STAGES >= 2;
  localparam bit          RegAfterNormalize = STAGES >= 4;
  localparam int unsigned ExtraStages       = STAGES > 4 ? STAGES - 4 : 0;

  // Significands with three guard bits: [26:3] the 24-bit significand (hidden bit first),
  // [2] guard, [1] round, [0] sticky.
  localparam int unsigned SigBits = 27;

  // A special result (a NaN or an infinity operand) is known after the align phase and only
  // travels with the rest; it has pipeline registers of its own so that every register below is
  // at most 64 bits wide (a simulator keeps those as machine words, wider ones as arrays).
  typedef struct packed {
    logic        special;        // the result is special_value
    logic [31:0] special_value;
  } special_t;

  special_t special_d, align_special_q, add_special_q, norm_special_q;
  // The side registers' valid bits equal the main ones' and are not used.
  logic     limit_valid_q, align_special_valid_q, add_special_valid_q, norm_special_valid_q;

  // ---------------------------------------------------------------------------------------
  // Phase 1: align
  // ---------------------------------------------------------------------------------------
  typedef struct packed {
    logic               sign;           // sign of the larger magnitude
    logic               zero_sign;      // sign of an exact zero sum: -0 only for -0 + -0
    logic               subtract;       // signs differ
    logic [7:0]         exponent;       // effective exponent of the larger (1 for subnormals)
    logic [23:0]        x_sig;          // larger significand
    logic [SigBits-1:0] y_aligned;      // smaller significand, aligned, with sticky
  } align_t;

  align_t             align_d, align_q;
  logic [SigBits-1:0] limit_d, limit_q;  // one bit at the largest allowed normalize shift
  logic               align_valid_q;

  // One bit at position 27 - exp of a 27-bit vector (exp in 1..27), none for a larger exp. A
  // constant shifted right by exp: each bit decodes exp alone (no subtraction, whose carry chain
  // would sit in series with the comparison), and a simulator shifts one word.
  function automatic logic [SigBits-1:0] norm_limit(input logic [7:0] exp);
    norm_limit = SigBits'((64'd1 << SigBits) >> exp);
  endfunction

  always_comb begin
    logic                a_nan, b_nan, a_inf, b_inf, swap, far, sticky;
    logic [7:0]          a_exp, b_exp, b_minus_a, distance;
    logic [8:0]          a_minus_b;  // bit 8: b_exp > a_exp
    logic [23:0]         a_sig, b_sig, y_sig;
    logic [4:0]          shift;
    logic [SigBits-1:0]  y_shifted, lost, limit_a, limit_b;

    a_nan = (&a_i[30:23]) && (|a_i[22:0]);
    b_nan = (&b_i[30:23]) && (|b_i[22:0]);
    a_inf = (&a_i[30:23]) && !(|a_i[22:0]);
    b_inf = (&b_i[30:23]) && !(|b_i[22:0]);

    special_d.special = a_nan || b_nan || a_inf || b_inf;
    if (a_nan) begin
      special_d.special_value = a_i | netagg_pkg::FP32_QUIET_BIT;
    end else if (b_nan) begin
      special_d.special_value = b_i | netagg_pkg::FP32_QUIET_BIT;
    end else if (a_inf && b_inf && (a_i[31] != b_i[31])) begin
      special_d.special_value = netagg_pkg::FP32_DEFAULT_NAN;
    end else if (a_inf) begin
      special_d.special_value = a_i;
    end else begin
      special_d.special_value = b_i;
    end

    // A subnormal has the exponent of the smallest normal and no hidden bit.
    a_exp = (a_i[30:23] == 8'd0) ? 8'd1 : a_i[30:23];
    b_exp = (b_i[30:23] == 8'd0) ? 8'd1 : b_i[30:23];
    a_sig = {a_i[30:23] != 8'd0, a_i[22:0]};
    b_sig = {b_i[30:23] != 8'd0, b_i[22:0]};

    // Larger magnitude first (x); on a tie a stays first (the sum is then 0 or 2a).
    swap = b_i[30:0] > a_i[30:0];
    align_d.sign      = swap ? b_i[31] : a_i[31];
    align_d.zero_sign = a_i[31] && b_i[31];
    align_d.subtract  = a_i[31] != b_i[31];
    align_d.exponent  = swap ? b_exp : a_exp;
    align_d.x_sig     = swap ? b_sig : a_sig;
    y_sig             = swap ? a_sig : b_sig;

    // The exponent distance does not wait for the comparison: computed both ways, the sign of
    // one difference picks the other (equal exponents give 0 whichever operand is larger).
    a_minus_b = {1'b0, a_exp} - {1'b0, b_exp};
    b_minus_a = b_exp - a_exp;
    distance  = a_minus_b[8] ? b_minus_a : a_minus_b[7:0];
    far       = |distance[7:5];  // 32 or more: all of y lies below the sticky bit
    shift     = distance[4:0];

    // The sticky bit is computed beside the shifter, not after it: the bits of {y, 000} that the
    // shift moves below bit 0 are those below position shift, a mask of ones shifted left by the
    // amount (each mask bit decodes the amount alone; no subtraction or carry chain in series).
    y_shifted = {y_sig, 3'b000} >> shift;
    lost      = ~({SigBits{1'b1}} << shift);
    sticky    = |({y_sig, 3'b000} & lost);
    align_d.y_aligned = far ? {{(SigBits-1){1'b0}}, |y_sig}
                            : {y_shifted[SigBits-1:1], y_shifted[0] | sticky};

    // The normalize shift may not take the exponent below 1: a shift of s leaves exponent
    // x_exp - s, so s <= x_exp - 1. A one at bit 26 - (x_exp - 1) = 27 - x_exp stops the leading
    // zero count there; for x_exp > 27 the count (at most 27) never reaches the limit. Decoded
    // for both operands beside the comparison, then picked like the exponent.
    limit_a = norm_limit(a_exp);
    limit_b = norm_limit(b_exp);
    limit_d = swap ? limit_b : limit_a;
  end

  netagg_stage #(.WIDTH($bits(align_d)), .ENABLE(RegAfterAlign)) u_align (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(valid_i), .data_i(align_d),
      .valid_o(align_valid_q), .data_o(align_q));
  netagg_stage #(.WIDTH(SigBits), .ENABLE(RegAfterAlign)) u_align_limit (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(valid_i), .data_i(limit_d),
      .valid_o(limit_valid_q), .data_o(limit_q));
  netagg_stage #(.WIDTH($bits(special_d)), .ENABLE(RegAfterAlign)) u_align_special (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(valid_i), .data_i(special_d),
      .valid_o(align_special_valid_q), .data_o(align_special_q));

  // ---------------------------------------------------------------------------------------
  // Phase 2: add
  // ---------------------------------------------------------------------------------------
  typedef struct packed {
    logic               sign;
    logic               zero_sign;
    logic [7:0]         exponent;
    logic [SigBits:0]   sum;         // bit 27: carry out of an addition
    logic [4:0]         norm_shift;  // leading zeros of sum[26:0], stopped at norm_limit
  } add_t;

  add_t add_d, add_q;
  logic add_valid_q;

  always_comb begin
    logic [SigBits:0] x_ext, y_ext;
    logic [31:0]      v, smear, msb;

    add_d.sign      = align_q.sign;
    add_d.zero_sign = align_q.zero_sign;
    add_d.exponent  = align_q.exponent;

    x_ext = {1'b0, align_q.x_sig, 3'b000};
    y_ext = {1'b0, align_q.y_aligned};
    // |x| >= |y|, so a subtraction never goes negative.
    add_d.sum = align_q.subtract ? x_ext - y_ext : x_ext + y_ext;

    // Leading zero count from bit 26, stopped at the limit; all zero gives 27. The 27 bits sit
    // at [31:5] of a word whose bit 4 is set (so the count ends at 27). Every bit below the
    // leading one is set (smear), which leaves the leading one alone in msb; the count is 31
    // minus its index (the index inverted), and the index's bits are ORs of msb over fixed
    // masks. Each count bit is then a wide OR, not a chain of decisions (as in a binary search),
    // and a simulator computes it in a few word operations without branches.
    v     = {add_d.sum[SigBits-1:0] | limit_q, 5'b10000};
    smear = v | (v >> 1);
    smear = smear | (smear >> 2);
    smear = smear | (smear >> 4);
    smear = smear | (smear >> 8);
    smear = smear | (smear >> 16);
    msb   = smear & ~(smear >> 1);
    add_d.norm_shift = ~{|(msb & 32'hFFFF0000), |(msb & 32'hFF00FF00), |(msb & 32'hF0F0F0F0),
                         |(msb & 32'hCCCCCCCC), |(msb & 32'hAAAAAAAA)};
  end

  netagg_stage #(.WIDTH($bits(add_d)), .ENABLE(RegAfterAdd)) u_add (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(align_valid_q), .data_i(add_d),
      .valid_o(add_valid_q), .data_o(add_q));
  netagg_stage #(.WIDTH($bits(special_d)), .ENABLE(RegAfterAdd)) u_add_special (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(align_valid_q), .data_i(align_special_q),
      .valid_o(add_special_valid_q), .data_o(add_special_q));

  // ---------------------------------------------------------------------------------------
  // Phase 3: normalize
  // ---------------------------------------------------------------------------------------
  typedef struct packed {
    logic               sign;          // the sign of the result if it is finite
    logic               overflow;      // a carry out of exponent 254: infinity
    logic [7:0]         exponent;      // valid when sig[26] is set; otherwise subnormal
    logic [SigBits-1:0] sig;           // [26] hidden bit, [25:3] fraction, [2:0] G R S
  } norm_t;

  norm_t norm_d, norm_q;
  logic  norm_valid_q;

  always_comb begin
    logic [8:0] exponent;

    // Only an exact zero sum can have every bit clear (the sticky bit is kept in bit 0).
    norm_d.sign = (add_q.sum == '0) ? add_q.zero_sign : add_q.sign;

    if (add_q.sum[SigBits]) begin
      // Carry out: one bit right, the dropped bit joins the sticky bit.
      norm_d.sig = {add_q.sum[SigBits:2], add_q.sum[1] | add_q.sum[0]};
      exponent   = {1'b0, add_q.exponent} + 9'd1;
    end else begin
      norm_d.sig = add_q.sum[SigBits-1:0] << add_q.norm_shift;
      exponent   = {1'b0, add_q.exponent} - {4'd0, add_q.norm_shift};
    end
    norm_d.overflow = exponent >= 9'd255;
    norm_d.exponent = exponent[7:0];
  end

  netagg_stage #(.WIDTH($bits(norm_d)), .ENABLE(RegAfterNormalize)) u_normalize (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(add_valid_q), .data_i(norm_d),
      .valid_o(norm_valid_q), .data_o(norm_q));
  netagg_stage #(.WIDTH($bits(special_d)), .ENABLE(RegAfterNormalize)) u_normalize_special (
      .clk_i(clk_i), .rst_ni(rst_ni), .valid_i(add_valid_q), .data_i(add_special_q),
      .valid_o(norm_special_valid_q), .data_o(norm_special_q));

  logic unused;
  assign unused = ^{limit_valid_q, align_special_valid_q, add_special_valid_q, norm_special_valid_q};

  // ---------------------------------------------------------------------------------------
  // Phase 4: round, and the output register
  // ---------------------------------------------------------------------------------------
  logic [31:0] round_d;

  always_comb begin
    logic [7:0]  exponent_field;
    logic        round_up;
    logic [30:0] magnitude;

    // Below the hidden bit the number is subnormal and the exponent field is 0.
    exponent_field = norm_q.sig[SigBits-1] ? norm_q.exponent : 8'd0;
    // Nearest even: up if above half, or exactly half and the last kept bit is odd.
    round_up  = norm_q.sig[2] && (norm_q.sig[1] || norm_q.sig[0] || norm_q.sig[3]);
    // A carry out of the fraction increments the exponent: 1.11..1 rounds to 10.0, the
    // largest subnormal to the smallest normal, the largest finite number to infinity.
    magnitude = {exponent_field, norm_q.sig[SigBits-2:3]} + {30'd0, round_up};

    if (norm_special_q.special) begin
      round_d = norm_special_q.special_value;
    end else if (norm_q.overflow) begin
      round_d = {norm_q.sign, 8'hFF, 23'd0};
    end else begin
      round_d = {norm_q.sign, magnitude};
    end
  end

  logic        out_valid_q;
  logic [31:0] out_sum_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else begin
      out_valid_q <= norm_valid_q;
    end
    if (norm_valid_q) begin
      out_sum_q <= round_d;
    end
  end

  if (ExtraStages == 0) begin : gen_no_extra
    assign valid_o = out_valid_q;
    assign sum_o   = out_sum_q;
  end else begin : gen_extra
    logic        extra_valid_q [ExtraStages];
    logic [31:0] extra_sum_q   [ExtraStages];

    for (genvar s = 0; s < ExtraStages; s++) begin : gen_stage
      logic        valid_in;
      logic [31:0] sum_in;
      if (s == 0) begin : gen_first
        assign valid_in = out_valid_q;
        assign sum_in   = out_sum_q;
      end else begin : gen_next
        assign valid_in = extra_valid_q[s-1];
        assign sum_in   = extra_sum_q[s-1];
      end
      always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
          extra_valid_q[s] <= 1'b0;
        end else begin
          extra_valid_q[s] <= valid_in;
        end
        if (valid_in) begin
          extra_sum_q[s] <= sum_in;
        end
      end
    end

    assign valid_o = extra_valid_q[ExtraStages-1];
    assign sum_o   = extra_sum_q[ExtraStages-1];
  end

endmodule

`default_nettype wire

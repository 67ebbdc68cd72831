// SPDX-License-Identifier: Apache-2.0
// The exact fp32 lanes of the ports of one group, summed lane by lane (docs/exact-fp32.md): a
// lane is a 64-bit two's-complement integer and a 2-bit special, the sum of two is the integer
// sum and the specials ORed (hls/include/netagg_hls/exact.hpp's exact_add). Integer adds are
// associative, so any tree shape gives the bits of the HLS model's port-order loop. A port
// without a beat adds nothing (its lanes are taken as 0, finite). One level a cycle, then
// delay registers: the sum leaves LATENCY cycles after its lanes came in, one group a cycle.
`default_nettype none

module netagg_exact_tree #(
    parameter int unsigned NUM_PORTS = 4,
    parameter int unsigned LATENCY = 5,  // >= LEVELS
    // derived, do not change
    parameter int unsigned LEVELS = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 0,
    parameter int unsigned LW = netagg_agg_pkg::LANES * 66  // a beat of lanes {special, lane}
) (
    input  logic                    clk_i,
    input  logic                    rst_ni,
    input  logic [NUM_PORTS*LW-1:0] lanes_i,  // port p at [p*LW +: LW], lane i at [i*66 +: 66]
    input  logic [NUM_PORTS-1:0]    valid_i,
    output logic [LW-1:0]           sum_o,
    output logic                    valid_o
);
  localparam int unsigned NP = NUM_PORTS;
  localparam int unsigned LANES = netagg_agg_pkg::LANES;

  if (LATENCY < LEVELS) begin : gen_bad_latency
    $error("netagg_exact_tree: LATENCY must be at least the tree's levels");
  end

  function automatic logic [LW-1:0] add_beats(input logic [LW-1:0] a, input logic [LW-1:0] b);
    logic [LW-1:0] s;
    for (int k = 0; k < LANES; k++) begin
      s[k*66+64+:2] = a[k*66+64+:2] | b[k*66+64+:2];
      s[k*66+:64] = a[k*66+:64] + b[k*66+:64];
    end
    add_beats = s;
  endfunction

  // Level l's node n at node[(l*NP + n)*LW +: LW], registered; level 0 the inputs (absent
  // ports as zeros).
  logic [(LEVELS+1)*NP*LW-1:0] node;
  logic [LEVELS:0] any;
  for (genvar n = 0; n < NP; n++) begin : gen_inputs
    assign node[n*LW+:LW] = valid_i[n] ? lanes_i[n*LW+:LW] : '0;
  end
  assign any[0] = |valid_i;
  for (genvar l = 1; l <= LEVELS; l++) begin : gen_level
    for (genvar n = 0; n < NP; n++) begin : gen_node
      if (n < ((NP + (1 << l) - 1) >> l)) begin : gen_used
        logic [LW-1:0] b;
        if (2 * n + 1 < ((NP + (1 << (l - 1)) - 1) >> (l - 1))) begin : gen_pair
          assign b = node[((l-1)*NP+2*n+1)*LW+:LW];
        end else begin : gen_alone
          assign b = '0;
        end
        logic [LW-1:0] sum_q;
        always_ff @(posedge clk_i) sum_q <= add_beats(node[((l-1)*NP+2*n)*LW+:LW], b);
        assign node[(l*NP+n)*LW+:LW] = sum_q;
      end else begin : gen_unused
        assign node[(l*NP+n)*LW+:LW] = '0;
      end
    end
    logic any_q;
    always_ff @(posedge clk_i) begin
      if (!rst_ni) any_q <= 1'b0;
      else any_q <= any[l-1];
    end
    assign any[l] = any_q;
  end

  // The rest of the latency.
  localparam int unsigned PAD = LATENCY - LEVELS;
  logic [(PAD+1)*LW-1:0] pad_q;
  logic [PAD:0] pad_valid;
  assign pad_q[0+:LW] = node[LEVELS*NP*LW+:LW];
  assign pad_valid[0] = any[LEVELS];
  for (genvar i = 1; i <= PAD; i++) begin : gen_pad
    logic [LW-1:0] q;
    logic v_q;
    always_ff @(posedge clk_i) q <= pad_q[(i-1)*LW+:LW];
    always_ff @(posedge clk_i) begin
      if (!rst_ni) v_q <= 1'b0;
      else v_q <= pad_valid[i-1];
    end
    assign pad_q[i*LW+:LW] = q;
    assign pad_valid[i] = v_q;
  end
  assign sum_o = pad_q[PAD*LW+:LW];
  assign valid_o = pad_valid[PAD];

  // Nodes past a level's width are constant; the inputs are read through level 1.
  logic unused;
  assign unused = ^node;

endmodule

`default_nettype wire

// SPDX-License-Identifier: Apache-2.0
// PANAMA's adder tree: the beats of the ports of one group, summed lane by lane in port order
// ((p0 + p1) + (p2 + p3)) for 4 ports, ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) for 8.
// A port without a beat is skipped: its partner passes through that level alone. Latency
// LEVELS * STAGES cycles (LEVELS = ceil(log2(NUM_PORTS)); 0 for one port), one group a cycle.
`default_nettype none

module netagg_adder_tree #(
    parameter int unsigned NUM_PORTS = 4,  // operands
    parameter int unsigned STAGES = 3,     // latency of one add
    // derived, do not change
    parameter int unsigned LEVELS = (NUM_PORTS > 1) ? $clog2(NUM_PORTS) : 0
) (
    input  logic                                        clk_i,
    input  logic                                        rst_ni,
    input  logic [NUM_PORTS*netagg_agg_pkg::BEAT_W-1:0] beats_i,  // port p at [p*512 +: 512]
    input  logic [NUM_PORTS-1:0]                        valid_i,
    input  logic                                        is_int_i,
    output logic [netagg_agg_pkg::BEAT_W-1:0]           sum_o,
    output logic                                        valid_o
);
  localparam int unsigned W = netagg_agg_pkg::BEAT_W;
  localparam int unsigned NP = NUM_PORTS;

  // Nodes of level l at [l*NP + n]; level 0 are the inputs.
  function automatic int unsigned nodes(input int unsigned level);
    nodes = (NP + (1 << level) - 1) >> level;
  endfunction

  logic [W-1:0] node[(LEVELS+1)*NP];
  logic [(LEVELS+1)*NP-1:0] node_valid;
  // is_int_at[l * STAGES]: level l's operands are int32
  logic [LEVELS*STAGES:0] is_int_at;

  for (genvar n = 0; n < NP; n++) begin : gen_inputs
    assign node[n] = beats_i[n*W+:W];
    assign node_valid[n] = valid_i[n];
  end

  assign is_int_at[0] = is_int_i;
  if (LEVELS > 0) begin : gen_int_delay
    logic [LEVELS*STAGES-1:0] is_int_q;
    always_ff @(posedge clk_i) is_int_q <= is_int_at[LEVELS*STAGES-1:0];
    assign is_int_at[LEVELS*STAGES:1] = is_int_q;
  end

  for (genvar l = 1; l <= LEVELS; l++) begin : gen_level
    for (genvar n = 0; n < NP; n++) begin : gen_node
      if (n < nodes(l)) begin : gen_used
        logic [W-1:0] b;
        logic b_valid;
        if (2 * n + 1 < nodes(l - 1)) begin : gen_pair
          assign b = node[(l-1)*NP+2*n+1];
          assign b_valid = node_valid[(l-1)*NP+2*n+1];
        end else begin : gen_alone
          assign b = '0;
          assign b_valid = 1'b0;
        end
        netagg_beat_add #(
            .STAGES(STAGES)
        ) u_add (
            .clk_i    (clk_i),
            .rst_ni   (rst_ni),
            .a_i      (node[(l-1)*NP+2*n]),
            .a_valid_i(node_valid[(l-1)*NP+2*n]),
            .b_i      (b),
            .b_valid_i(b_valid),
            .is_int_i (is_int_at[(l-1)*STAGES]),
            .sum_o    (node[l*NP+n]),
            .valid_o  (node_valid[l*NP+n])
        );
      end else begin : gen_unused
        assign node[l*NP+n] = '0;
        assign node_valid[l*NP+n] = 1'b0;
      end
    end
  end

  assign sum_o = node[LEVELS*NP];
  assign valid_o = node_valid[LEVELS*NP];

  // Nodes past a level's width are constant; the last level's is_int is not needed.
  logic unused;
  assign unused = ^{node_valid, is_int_at[LEVELS*STAGES]};

endmodule

`default_nettype wire

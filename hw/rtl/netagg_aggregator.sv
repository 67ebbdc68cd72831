// SPDX-License-Identifier: Apache-2.0
// Top level of the hand-written aggregator with the port names Vitis HLS generates for the HLS
// top (docs/fpga-aggregator.md, "Top-level ports"), so one Verilator harness drives this RTL and
// RTL exported from hls/. SystemVerilog cannot build port names from an index, so the four
// ports are spelled out here; NUM_PORTS (1..4) of them are used, the others are tied off (TREADY
// and TVALID low). More ports: netagg_core takes up to 8. TSTRB is ignored on ingress (TKEEP
// marks the bytes) and equals TKEEP on egress.
`default_nettype none

module netagg_aggregator #(
    parameter int unsigned NUM_PORTS = netagg_pkg::NUM_PORTS_DEFAULT,  // ports used, 1..4
    parameter int unsigned SLOTS = netagg_pkg::SLOTS_DEFAULT,  // slots (two sets), a power of 2
    parameter int unsigned MAX_BEATS = netagg_pkg::MAX_BEATS_DEFAULT,  // beats a slot holds
    parameter int unsigned MAX_JOBS = netagg_pkg::MAX_JOBS_DEFAULT,    // job table entries
    parameter int unsigned STAGES = netagg_pkg::FP32_ADD_STAGES_DEFAULT,  // fp32 add latency
    parameter int unsigned IN_FRAMES = 3,   // frames each ingress buffer holds (full rate: 3)
    parameter int unsigned RQ_DEPTH = 16,   // results queued (full rate: >= adder pipeline)
    parameter int unsigned OUT_DEPTH = 4,   // egress FIFO beats per port
    parameter bit EXACT = 1'b1,             // exact fp32 (FEATURES bit 5; NUM_PORTS >= 2)
    // derived, do not change
    parameter int unsigned AW = netagg_csr_pkg::CSR_ADDR_BITS
) (
    input  logic          ap_clk,
    input  logic          ap_rst_n,
    input  logic [511:0]  rx_0_TDATA,
    input  logic [63:0]   rx_0_TKEEP,
    input  logic [63:0]   rx_0_TSTRB,
    input  logic          rx_0_TLAST,
    input  logic          rx_0_TVALID,
    output logic          rx_0_TREADY,
    input  logic [511:0]  rx_1_TDATA,
    input  logic [63:0]   rx_1_TKEEP,
    input  logic [63:0]   rx_1_TSTRB,
    input  logic          rx_1_TLAST,
    input  logic          rx_1_TVALID,
    output logic          rx_1_TREADY,
    input  logic [511:0]  rx_2_TDATA,
    input  logic [63:0]   rx_2_TKEEP,
    input  logic [63:0]   rx_2_TSTRB,
    input  logic          rx_2_TLAST,
    input  logic          rx_2_TVALID,
    output logic          rx_2_TREADY,
    input  logic [511:0]  rx_3_TDATA,
    input  logic [63:0]   rx_3_TKEEP,
    input  logic [63:0]   rx_3_TSTRB,
    input  logic          rx_3_TLAST,
    input  logic          rx_3_TVALID,
    output logic          rx_3_TREADY,
    output logic [511:0]  tx_0_TDATA,
    output logic [63:0]   tx_0_TKEEP,
    output logic [63:0]   tx_0_TSTRB,
    output logic          tx_0_TLAST,
    output logic          tx_0_TVALID,
    input  logic          tx_0_TREADY,
    output logic [511:0]  tx_1_TDATA,
    output logic [63:0]   tx_1_TKEEP,
    output logic [63:0]   tx_1_TSTRB,
    output logic          tx_1_TLAST,
    output logic          tx_1_TVALID,
    input  logic          tx_1_TREADY,
    output logic [511:0]  tx_2_TDATA,
    output logic [63:0]   tx_2_TKEEP,
    output logic [63:0]   tx_2_TSTRB,
    output logic          tx_2_TLAST,
    output logic          tx_2_TVALID,
    input  logic          tx_2_TREADY,
    output logic [511:0]  tx_3_TDATA,
    output logic [63:0]   tx_3_TKEEP,
    output logic [63:0]   tx_3_TSTRB,
    output logic          tx_3_TLAST,
    output logic          tx_3_TVALID,
    input  logic          tx_3_TREADY,
    input  logic [AW-1:0] s_axi_control_AWADDR,
    input  logic          s_axi_control_AWVALID,
    output logic          s_axi_control_AWREADY,
    input  logic [31:0]   s_axi_control_WDATA,
    input  logic [3:0]    s_axi_control_WSTRB,
    input  logic          s_axi_control_WVALID,
    output logic          s_axi_control_WREADY,
    output logic [1:0]    s_axi_control_BRESP,
    output logic          s_axi_control_BVALID,
    input  logic          s_axi_control_BREADY,
    input  logic [AW-1:0] s_axi_control_ARADDR,
    input  logic          s_axi_control_ARVALID,
    output logic          s_axi_control_ARREADY,
    output logic [31:0]   s_axi_control_RDATA,
    output logic [1:0]    s_axi_control_RRESP,
    output logic          s_axi_control_RVALID,
    input  logic          s_axi_control_RREADY
);
  localparam int unsigned NP = NUM_PORTS;

  if (NUM_PORTS < 1 || NUM_PORTS > 4) begin : gen_bad_ports
    $error("netagg_aggregator: NUM_PORTS must be in 1..4 (netagg_core takes up to 8)");
  end

  // All four ports as flat vectors, port i at [i*W +: W]; the core gets the first NUM_PORTS.
  logic [4*512-1:0] rx_tdata, tx_tdata;
  logic [4*64-1:0] rx_tkeep, rx_tstrb, tx_tkeep;
  logic [3:0] rx_tlast, rx_tvalid, rx_tready, tx_tlast, tx_tvalid, tx_tready;
  assign rx_tdata = {rx_3_TDATA, rx_2_TDATA, rx_1_TDATA, rx_0_TDATA};
  assign rx_tkeep = {rx_3_TKEEP, rx_2_TKEEP, rx_1_TKEEP, rx_0_TKEEP};
  assign rx_tstrb = {rx_3_TSTRB, rx_2_TSTRB, rx_1_TSTRB, rx_0_TSTRB};
  assign rx_tlast = {rx_3_TLAST, rx_2_TLAST, rx_1_TLAST, rx_0_TLAST};
  assign rx_tvalid = {rx_3_TVALID, rx_2_TVALID, rx_1_TVALID, rx_0_TVALID};
  assign tx_tready = {tx_3_TREADY, tx_2_TREADY, tx_1_TREADY, tx_0_TREADY};
  assign {rx_3_TREADY, rx_2_TREADY, rx_1_TREADY, rx_0_TREADY} = rx_tready;
  assign {tx_3_TDATA, tx_2_TDATA, tx_1_TDATA, tx_0_TDATA} = tx_tdata;
  assign {tx_3_TKEEP, tx_2_TKEEP, tx_1_TKEEP, tx_0_TKEEP} = tx_tkeep;
  assign {tx_3_TSTRB, tx_2_TSTRB, tx_1_TSTRB, tx_0_TSTRB} = tx_tkeep;
  assign {tx_3_TLAST, tx_2_TLAST, tx_1_TLAST, tx_0_TLAST} = tx_tlast;
  assign {tx_3_TVALID, tx_2_TVALID, tx_1_TVALID, tx_0_TVALID} = tx_tvalid;

  if (NP < 4) begin : gen_tie_off
    assign rx_tready[3:NP] = '0;
    assign tx_tdata[4*512-1:NP*512] = '0;
    assign tx_tkeep[4*64-1:NP*64] = '0;
    assign tx_tlast[3:NP] = '0;
    assign tx_tvalid[3:NP] = '0;
  end

  // The control port as the core's request/response structs.
  netagg_agg_pkg::axil_req_t axil_req;
  netagg_agg_pkg::axil_rsp_t axil_rsp;
  // (concatenations in the structs' member order: yosys reads no assignment patterns)
  assign axil_req = {s_axi_control_AWADDR, s_axi_control_AWVALID, s_axi_control_WDATA,
                     s_axi_control_WSTRB, s_axi_control_WVALID, s_axi_control_BREADY,
                     s_axi_control_ARADDR, s_axi_control_ARVALID, s_axi_control_RREADY};
  assign {s_axi_control_AWREADY, s_axi_control_WREADY, s_axi_control_BRESP, s_axi_control_BVALID,
          s_axi_control_ARREADY, s_axi_control_RDATA, s_axi_control_RRESP,
          s_axi_control_RVALID} = axil_rsp;

  netagg_core #(
      .NUM_PORTS(NUM_PORTS),
      .SLOTS    (SLOTS),
      .MAX_BEATS(MAX_BEATS),
      .MAX_JOBS (MAX_JOBS),
      .STAGES   (STAGES),
      .IN_FRAMES(IN_FRAMES),
      .RQ_DEPTH (RQ_DEPTH),
      .OUT_DEPTH(OUT_DEPTH),
      .EXACT    (EXACT)
  ) u_core (
      .clk_i          (ap_clk),
      .rst_ni         (ap_rst_n),
      .rx_tdata_i     (rx_tdata[NP*512-1:0]),
      .rx_tkeep_i     (rx_tkeep[NP*64-1:0]),
      .rx_tlast_i     (rx_tlast[NP-1:0]),
      .rx_tvalid_i    (rx_tvalid[NP-1:0]),
      .rx_tready_o    (rx_tready[NP-1:0]),
      .tx_tdata_o     (tx_tdata[NP*512-1:0]),
      .tx_tkeep_o     (tx_tkeep[NP*64-1:0]),
      .tx_tlast_o     (tx_tlast[NP-1:0]),
      .tx_tvalid_o    (tx_tvalid[NP-1:0]),
      .tx_tready_i    (tx_tready[NP-1:0]),
      .axil_i         (axil_req),
      .axil_o         (axil_rsp)
  );

  // TSTRB of ingress carries nothing TKEEP does not; unused ports' inputs are ignored.
  logic unused;
  assign unused = ^{rx_tstrb, rx_tdata, rx_tkeep, rx_tlast, rx_tvalid, tx_tready};

endmodule

`default_nettype wire

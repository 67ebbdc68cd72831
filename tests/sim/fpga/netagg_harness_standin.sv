// SPDX-License-Identifier: Apache-2.0
// Test-only stand-in with the FPGA aggregator's top-level ports (docs/fpga-aggregator.md), for
// the Verilator harness's own tests (tests/sim/fpga/rtl_harness_test.cpp): every ingress beat leaves
// unchanged on the egress port of the same index, through a 4-deep FIFO per port (so egress
// backpressure reaches ingress TREADY), and the AXI4-Lite CSRs are a plain register file with
// byte strobes. It aggregates nothing. Generated ports are spelled out: Verilator keeps the
// Vitis HLS names (rx_<i>_TDATA, ...) only as top-level ports.
module netagg_harness_standin (
  input  logic         ap_clk,
  input  logic         ap_rst_n,
  input  logic [511:0] rx_0_TDATA,
  input  logic [63:0]  rx_0_TKEEP,
  input  logic [63:0]  rx_0_TSTRB,
  input  logic         rx_0_TLAST,
  input  logic         rx_0_TVALID,
  output logic         rx_0_TREADY,
  output logic [511:0] tx_0_TDATA,
  output logic [63:0]  tx_0_TKEEP,
  output logic [63:0]  tx_0_TSTRB,
  output logic         tx_0_TLAST,
  output logic         tx_0_TVALID,
  input  logic         tx_0_TREADY,
  input  logic [511:0] rx_1_TDATA,
  input  logic [63:0]  rx_1_TKEEP,
  input  logic [63:0]  rx_1_TSTRB,
  input  logic         rx_1_TLAST,
  input  logic         rx_1_TVALID,
  output logic         rx_1_TREADY,
  output logic [511:0] tx_1_TDATA,
  output logic [63:0]  tx_1_TKEEP,
  output logic [63:0]  tx_1_TSTRB,
  output logic         tx_1_TLAST,
  output logic         tx_1_TVALID,
  input  logic         tx_1_TREADY,
  input  logic [511:0] rx_2_TDATA,
  input  logic [63:0]  rx_2_TKEEP,
  input  logic [63:0]  rx_2_TSTRB,
  input  logic         rx_2_TLAST,
  input  logic         rx_2_TVALID,
  output logic         rx_2_TREADY,
  output logic [511:0] tx_2_TDATA,
  output logic [63:0]  tx_2_TKEEP,
  output logic [63:0]  tx_2_TSTRB,
  output logic         tx_2_TLAST,
  output logic         tx_2_TVALID,
  input  logic         tx_2_TREADY,
  input  logic [511:0] rx_3_TDATA,
  input  logic [63:0]  rx_3_TKEEP,
  input  logic [63:0]  rx_3_TSTRB,
  input  logic         rx_3_TLAST,
  input  logic         rx_3_TVALID,
  output logic         rx_3_TREADY,
  output logic [511:0] tx_3_TDATA,
  output logic [63:0]  tx_3_TKEEP,
  output logic [63:0]  tx_3_TSTRB,
  output logic         tx_3_TLAST,
  output logic         tx_3_TVALID,
  input  logic         tx_3_TREADY,
  input  logic [11:0]  s_axi_control_AWADDR,
  input  logic         s_axi_control_AWVALID,
  output logic         s_axi_control_AWREADY,
  input  logic [31:0]  s_axi_control_WDATA,
  input  logic [3:0]   s_axi_control_WSTRB,
  input  logic         s_axi_control_WVALID,
  output logic         s_axi_control_WREADY,
  output logic [1:0]   s_axi_control_BRESP,
  output logic         s_axi_control_BVALID,
  input  logic         s_axi_control_BREADY,
  input  logic [11:0]  s_axi_control_ARADDR,
  input  logic         s_axi_control_ARVALID,
  output logic         s_axi_control_ARREADY,
  output logic [31:0]  s_axi_control_RDATA,
  output logic [1:0]   s_axi_control_RRESP,
  output logic         s_axi_control_RVALID,
  input  logic         s_axi_control_RREADY
);
  localparam int unsigned NUM_PORTS = 4;
  localparam int unsigned DEPTH = 4;
  localparam int unsigned W = 512 + 64 + 1;  // TDATA, TKEEP, TLAST

  // The ports as vectors, port p at bit p (or element p).
  logic [W-1:0] in_beat [NUM_PORTS];
  logic [W-1:0] out_beat [NUM_PORTS];
  logic [NUM_PORTS-1:0] in_valid, in_ready, out_valid, out_ready;

  assign in_beat[0] = {rx_0_TLAST, rx_0_TKEEP, rx_0_TDATA};
  assign in_beat[1] = {rx_1_TLAST, rx_1_TKEEP, rx_1_TDATA};
  assign in_beat[2] = {rx_2_TLAST, rx_2_TKEEP, rx_2_TDATA};
  assign in_beat[3] = {rx_3_TLAST, rx_3_TKEEP, rx_3_TDATA};
  assign {tx_0_TLAST, tx_0_TKEEP, tx_0_TDATA} = out_beat[0];
  assign {tx_1_TLAST, tx_1_TKEEP, tx_1_TDATA} = out_beat[1];
  assign {tx_2_TLAST, tx_2_TKEEP, tx_2_TDATA} = out_beat[2];
  assign {tx_3_TLAST, tx_3_TKEEP, tx_3_TDATA} = out_beat[3];
  assign {tx_3_TSTRB, tx_2_TSTRB, tx_1_TSTRB, tx_0_TSTRB} =
      {tx_3_TKEEP, tx_2_TKEEP, tx_1_TKEEP, tx_0_TKEEP};
  assign in_valid = {rx_3_TVALID, rx_2_TVALID, rx_1_TVALID, rx_0_TVALID};
  assign {rx_3_TREADY, rx_2_TREADY, rx_1_TREADY, rx_0_TREADY} = in_ready;
  assign {tx_3_TVALID, tx_2_TVALID, tx_1_TVALID, tx_0_TVALID} = out_valid;
  assign out_ready = {tx_3_TREADY, tx_2_TREADY, tx_1_TREADY, tx_0_TREADY};

  // Unused: TSTRB equals TKEEP on ingress by the harness's contract.
  logic unused_strb;
  assign unused_strb = ^{rx_0_TSTRB, rx_1_TSTRB, rx_2_TSTRB, rx_3_TSTRB};

  for (genvar p = 0; p < NUM_PORTS; p++) begin : gen_fifo
    logic [W-1:0] mem [DEPTH];
    logic [2:0] head, tail;  // one bit more than the index: full when they differ by DEPTH
    logic [2:0] used;
    assign used = tail - head;
    assign in_ready[p] = used != 3'(DEPTH);
    assign out_valid[p] = used != 0;
    assign out_beat[p] = mem[head[1:0]];
    always_ff @(posedge ap_clk) begin
      if (!ap_rst_n) begin
        head <= '0;
        tail <= '0;
      end else begin
        if (in_valid[p] && in_ready[p]) begin
          mem[tail[1:0]] <= in_beat[p];
          tail <= tail + 1;
        end
        if (out_valid[p] && out_ready[p]) head <= head + 1;
      end
    end
  end

  // What the last beat accepted on rx_0 held, to check the byte order of TDATA and TKEEP:
  // 0xFF0 reads {byte 63, byte 1, byte 0} in bits 23:0, 0xFF4 TKEEP[31:0], 0xFF8 {TLAST,
  // TKEEP[63:32] != 0}.
  logic [23:0] seen_bytes;
  logic [63:0] seen_keep;
  logic        seen_last;
  always_ff @(posedge ap_clk)
    if (rx_0_TVALID && rx_0_TREADY) begin
      seen_bytes <= {rx_0_TDATA[511:504], rx_0_TDATA[15:8], rx_0_TDATA[7:0]};
      seen_keep <= rx_0_TKEEP;
      seen_last <= rx_0_TLAST;
    end

  // AXI4-Lite: 1024 registers; a write waits for both address and data, a read answers the
  // cycle after its address. Reading address 0xFFC answers SLVERR (to test error responses).
  logic [31:0] regs [1024];
  logic        aw_held, w_held;
  logic [11:0] aw_addr;
  logic [31:0] w_data;
  logic [3:0]  w_strb;
  assign s_axi_control_AWREADY = !aw_held && !s_axi_control_BVALID;
  assign s_axi_control_WREADY  = !w_held && !s_axi_control_BVALID;
  assign s_axi_control_BRESP   = 2'b00;
  assign s_axi_control_ARREADY = !s_axi_control_RVALID;

  always_ff @(posedge ap_clk) begin
    if (!ap_rst_n) begin
      aw_held <= 1'b0;
      w_held <= 1'b0;
      s_axi_control_BVALID <= 1'b0;
      s_axi_control_RVALID <= 1'b0;
      s_axi_control_RDATA <= '0;
      s_axi_control_RRESP <= 2'b00;
    end else begin
      if (s_axi_control_AWVALID && s_axi_control_AWREADY) begin
        aw_held <= 1'b1;
        aw_addr <= s_axi_control_AWADDR;
      end
      if (s_axi_control_WVALID && s_axi_control_WREADY) begin
        w_held <= 1'b1;
        w_data <= s_axi_control_WDATA;
        w_strb <= s_axi_control_WSTRB;
      end
      if (aw_held && w_held) begin
        for (int b = 0; b < 4; b++)
          if (w_strb[b]) regs[aw_addr[11:2]][b*8 +: 8] <= w_data[b*8 +: 8];
        aw_held <= 1'b0;
        w_held <= 1'b0;
        s_axi_control_BVALID <= 1'b1;
      end
      if (s_axi_control_BVALID && s_axi_control_BREADY) s_axi_control_BVALID <= 1'b0;
      if (s_axi_control_ARVALID && s_axi_control_ARREADY) begin
        s_axi_control_RVALID <= 1'b1;
        unique case (s_axi_control_ARADDR)
          12'hFF0: s_axi_control_RDATA <= {8'd0, seen_bytes};
          12'hFF4: s_axi_control_RDATA <= seen_keep[31:0];
          12'hFF8: s_axi_control_RDATA <= {30'd0, seen_last, seen_keep[63:32] != 0};
          default: s_axi_control_RDATA <= regs[s_axi_control_ARADDR[11:2]];
        endcase
        s_axi_control_RRESP <= s_axi_control_ARADDR == 12'hFFC ? 2'b10 : 2'b00;
      end else if (s_axi_control_RVALID && s_axi_control_RREADY) begin
        s_axi_control_RVALID <= 1'b0;
      end
    end
  end

  logic unused_addr;
  assign unused_addr = ^{aw_addr[1:0], s_axi_control_ARADDR[1:0]};
endmodule

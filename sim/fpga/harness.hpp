// SPDX-License-Identifier: Apache-2.0
// The FPGA aggregator as a clocked model the host can drive: frames onto ingress ports, cycles,
// frames off egress ports, and the AXI4-Lite CSRs. Three implementations behind one interface:
//
//   RtlHarness       the Verilated SystemVerilog top `netagg_aggregator` (hw/rtl/), driven beat
//                    by beat on its AXI4-Stream ports (TDATA/TKEEP/TLAST/TVALID/TREADY) and
//                    AXI4-Lite transactions on s_axi_control; optional FST trace.
//   HlsModelAdapter  the HLS C++ aggregator (hls/), the bit-exact reference model.
//   VpModel          the virtual platform (sim/vp, make_vp_model): the Verilated RTL inside a
//                    SystemC model of the card (Ethernet MACs, clock-domain crossings, the CSR
//                    path over TLM); one per process.
//
// The model is a fpga::CsrBus, so the control plane (driver/fpga) programs either one; CSR
// accesses take clock cycles (traffic keeps flowing meanwhile). Ports and ranks of the job table
// are the device's: see docs/fpga-aggregator.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "netagg/fpga/csr_bus.hpp"

namespace netagg::sim {

struct EgressFrame {
  unsigned port = 0;
  std::vector<std::byte> bytes;
  std::uint64_t first_beat_cycle = 0;  // cycle the first beat left
  std::uint64_t last_beat_cycle = 0;   // cycle the last beat left
};

class FpgaModel : public fpga::CsrBus {
 public:
  ~FpgaModel() override = default;

  virtual std::string name() const = 0;
  virtual unsigned num_ports() const = 0;

  // Reset (ap_rst_n low for a few cycles). Frames queued or half sent on ingress are dropped,
  // half received egress frames too; the egress ready settings stay.
  virtual void reset() = 0;

  // Queues a whole frame for ingress port `port` (beats leave the queue as the port takes them;
  // frames of one port go in order). Throws Error(kInvalidArgument) for a port out of range or
  // an empty frame.
  virtual void push_frame(unsigned port, std::span<const std::byte> frame) = 0;
  // Frames (or parts of one) still waiting to enter the port.
  virtual std::size_t ingress_pending(unsigned port) const = 0;

  // TREADY of egress port `port` (default true); false stalls the port (backpressure).
  virtual void set_egress_ready(unsigned port, bool ready) = 0;
  virtual bool egress_ready(unsigned port) const = 0;

  virtual void step(std::uint64_t cycles) = 0;
  virtual std::uint64_t cycles() const = 0;
  // Of cycles(), those the model counted without evaluating them, because the design was at a
  // fixed point of idle inputs (RtlHarness's idle fast path); 0 for a model without one.
  virtual std::uint64_t cycles_skipped() const { return 0; }

  // Egress frames completed so far (TLAST seen), in the order they completed, and forgets them.
  virtual std::vector<EgressFrame> pop_egress() = 0;

  // Runs until every ingress queue is empty, no egress frame is half sent and no egress beat
  // has appeared for `quiet_cycles` cycles; false if that did not happen within max_cycles.
  // Egress backpressure counts as not idle. quiet_cycles must cover the longest pipeline
  // latency from an accepted beat to the next result beat.
  virtual bool run_until_idle(std::uint64_t quiet_cycles, std::uint64_t max_cycles) = 0;

  // Counts AXI-Stream protocol violations seen on egress (a partial TKEEP on a beat that is not
  // the last, TKEEP not contiguous from byte 0, an empty last beat); a correct device leaves 0.
  virtual std::uint64_t egress_protocol_errors() const = 0;
  virtual std::string last_protocol_error() const = 0;

  // Quiet cycles that cover this model's latency (used by the daemon).
  virtual std::uint64_t default_quiet_cycles() const = 0;

  // fpga::CsrBus: AXI4-Lite transactions (read32/write32), each taking clock cycles.
};

// Whether this build has the Verilated RTL (NETAGG_HAVE_RTL).
bool rtl_model_available();
// The two Verilator builds of the RTL top (sim/fpga/CMakeLists.txt, docs/performance.md):
//   kFast    what netagg-fpgad and the benchmarks run: flattened, no tracing, --x-assign fast,
//            with the harness's idle fast path;
//   kTraced  FST tracing and --x-assign unique, every cycle evaluated: for --trace, the RTL
//            tests, and the baseline bench/fpga_bench compares kFast with.
enum class RtlBuild { kFast, kTraced };
// The RTL top; trace_fst: write an FST waveform there ("" = none; a waveform needs kTraced, which
// is then taken whatever `build` says). Throws Error(kUnsupported) when the build has no
// Verilator model.
std::unique_ptr<FpgaModel> make_rtl_model(const std::string& trace_fst = "",
                                          RtlBuild build = RtlBuild::kFast);
// The HLS C model.
std::unique_ptr<FpgaModel> make_hls_model();

// By name: "rtl" or "hls". Throws Error(kConfig) for another name.
std::unique_ptr<FpgaModel> make_fpga_model(const std::string& kind, const std::string& trace_fst);

}  // namespace netagg::sim

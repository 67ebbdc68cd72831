// SPDX-License-Identifier: Apache-2.0
#include "platform.hpp"

#include <fmt/format.h>

#include "Vnetagg_aggregator_sc.h"
#include "netagg/error.hpp"

namespace netagg::vp {

using sc_core::sc_signal;
using sc_core::sc_time;

void set_time_resolution() {
  static bool done = false;
  if (done) return;
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  done = true;
}

void check_config(const PlatformConfig& c) {
  if (!(c.kernel_mhz >= 1 && c.kernel_mhz <= 1000) || !(c.mac_mhz >= 1 && c.mac_mhz <= 1000))
    throw Error(Errc::kInvalidArgument,
                fmt::format("clocks must be 1..1000 MHz (kernel {} MHz, MAC {} MHz)", c.kernel_mhz,
                            c.mac_mhz));
  if (!(c.mac.line_gbps > 0 && c.mac.line_gbps <= 1000))
    throw Error(Errc::kInvalidArgument,
                fmt::format("line rate must be in (0, 1000] Gb/s, not {}", c.mac.line_gbps));
  if (c.mac.rx_fifo_beats < 2 * kMaxFrameBeats || c.mac.tx_fifo_beats < 2)
    throw Error(Errc::kInvalidArgument,
                fmt::format("the RX crossing needs at least {} beats (two of the largest frames), "
                            "the TX crossing 2",
                            2 * kMaxFrameBeats));
  if (c.reset_cycles < 1) throw Error(Errc::kInvalidArgument, "reset needs at least one cycle");
}

// Every pin of the aggregator as a signal.
struct Platform::Pins {
  struct Axis {
    sc_signal<sc_dt::sc_bv<512>> tdata;
    sc_signal<std::uint64_t> tkeep, tstrb;
    sc_signal<bool> tlast, tvalid, tready;
  };
  std::array<Axis, kPorts> rx, tx;
  sc_signal<std::uint32_t> awaddr, wdata, wstrb, bresp, araddr, rdata, rresp;
  sc_signal<bool> awvalid, awready, wvalid, wready, bvalid, bready, arvalid, arready, rvalid,
      rready;
};

namespace {
sc_time period_of(double mhz) { return sc_time(1e6 / mhz, sc_core::SC_PS); }
}  // namespace

Platform::Platform(sc_core::sc_module_name name, const PlatformConfig& config)
    : sc_module(name), config_(config) {
  check_config(config_);
  set_time_resolution();
  kernel_period_ = period_of(config_.kernel_mhz);
  mac_period_ = period_of(config_.mac_mhz);
  kernel_clk_ = std::make_unique<sc_core::sc_clock>("kernel_clk", kernel_period_);
  mac_clk_ = std::make_unique<sc_core::sc_clock>("mac_clk", mac_period_);
  pins_ = std::make_unique<Pins>();
  Pins& p = *pins_;

  Verilated::randReset(2);
  Verilated::randSeed(static_cast<int>(config_.seed & 0x7FFFFFFF));
  rtl_ = std::make_unique<Vnetagg_aggregator_sc>("netagg");
  Vnetagg_aggregator_sc& r = *rtl_;
  r.ap_clk(*kernel_clk_);
  r.ap_rst_n(rst_n_);
#define NETAGG_VP_BIND_AXIS(i)       \
  r.rx_##i##_TDATA(p.rx[i].tdata);   \
  r.rx_##i##_TKEEP(p.rx[i].tkeep);   \
  r.rx_##i##_TSTRB(p.rx[i].tstrb);   \
  r.rx_##i##_TLAST(p.rx[i].tlast);   \
  r.rx_##i##_TVALID(p.rx[i].tvalid); \
  r.rx_##i##_TREADY(p.rx[i].tready); \
  r.tx_##i##_TDATA(p.tx[i].tdata);   \
  r.tx_##i##_TKEEP(p.tx[i].tkeep);   \
  r.tx_##i##_TSTRB(p.tx[i].tstrb);   \
  r.tx_##i##_TLAST(p.tx[i].tlast);   \
  r.tx_##i##_TVALID(p.tx[i].tvalid); \
  r.tx_##i##_TREADY(p.tx[i].tready);
  NETAGG_VP_BIND_AXIS(0)
  NETAGG_VP_BIND_AXIS(1)
  NETAGG_VP_BIND_AXIS(2)
  NETAGG_VP_BIND_AXIS(3)
#undef NETAGG_VP_BIND_AXIS
  r.s_axi_control_AWADDR(p.awaddr);
  r.s_axi_control_AWVALID(p.awvalid);
  r.s_axi_control_AWREADY(p.awready);
  r.s_axi_control_WDATA(p.wdata);
  r.s_axi_control_WSTRB(p.wstrb);
  r.s_axi_control_WVALID(p.wvalid);
  r.s_axi_control_WREADY(p.wready);
  r.s_axi_control_BRESP(p.bresp);
  r.s_axi_control_BVALID(p.bvalid);
  r.s_axi_control_BREADY(p.bready);
  r.s_axi_control_ARADDR(p.araddr);
  r.s_axi_control_ARVALID(p.arvalid);
  r.s_axi_control_ARREADY(p.arready);
  r.s_axi_control_RDATA(p.rdata);
  r.s_axi_control_RRESP(p.rresp);
  r.s_axi_control_RVALID(p.rvalid);
  r.s_axi_control_RREADY(p.rready);

  for (unsigned i = 0; i < kPorts; ++i) {
    ports_[i] = std::make_unique<MacPort>(fmt::format("port{}", i).c_str(), i, config_.mac,
                                          kernel_period_, mac_period_);
    MacPort& m = *ports_[i];
    m.mac_clk(*mac_clk_);
    m.kernel_clk(*kernel_clk_);
    m.rst_n(rst_n_);
    m.rx_tdata(p.rx[i].tdata);
    m.rx_tkeep(p.rx[i].tkeep);
    m.rx_tstrb(p.rx[i].tstrb);
    m.rx_tlast(p.rx[i].tlast);
    m.rx_tvalid(p.rx[i].tvalid);
    m.rx_tready(p.rx[i].tready);
    m.tx_tdata(p.tx[i].tdata);
    m.tx_tkeep(p.tx[i].tkeep);
    m.tx_tstrb(p.tx[i].tstrb);
    m.tx_tlast(p.tx[i].tlast);
    m.tx_tvalid(p.tx[i].tvalid);
    m.tx_tready(p.tx[i].tready);
  }

  bridge_ = std::make_unique<AxiLiteBridge>("csr_bridge");
  AxiLiteBridge& b = *bridge_;
  b.clk(*kernel_clk_);
  b.awaddr(p.awaddr);
  b.awvalid(p.awvalid);
  b.awready(p.awready);
  b.wdata(p.wdata);
  b.wstrb(p.wstrb);
  b.wvalid(p.wvalid);
  b.wready(p.wready);
  b.bresp(p.bresp);
  b.bvalid(p.bvalid);
  b.bready(p.bready);
  b.araddr(p.araddr);
  b.arvalid(p.arvalid);
  b.arready(p.arready);
  b.rdata(p.rdata);
  b.rresp(p.rresp);
  b.rvalid(p.rvalid);
  b.rready(p.rready);
  csr_bus_ = std::make_unique<TlmCsrBus>("csr_bus");
  csr_bus_->socket.bind(bridge_->socket);

  SC_THREAD(reset_and_host);
  SC_METHOD(watch_ports);
  sensitive << kernel_clk_->posedge_event();
  dont_initialize();
}

Platform::~Platform() = default;

std::uint64_t Platform::kernel_cycles() const {
  return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / kernel_period_);
}

void Platform::wait_cycles(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) wait(kernel_clk_->posedge_event());
}

bool Platform::ports_idle() const {
  for (const auto& m : ports_)
    if (!m->idle()) return false;
  for (const Pins::Axis& a : pins_->tx)
    if (a.tvalid.read()) return false;
  return true;
}

void Platform::watch_ports() {
  if (!ports_idle()) last_busy_cycle_ = kernel_cycles();
}

bool Platform::wait_idle(std::uint64_t quiet, std::uint64_t max_cycles) {
  std::uint64_t idle_for = 0;
  for (std::uint64_t i = 0; i < max_cycles; ++i) {
    idle_for = ports_idle() ? idle_for + 1 : 0;
    if (idle_for >= quiet) return true;
    wait(kernel_clk_->posedge_event());
  }
  return false;
}

void Platform::reset() {
  rst_n_.write(false);
  for (const auto& m : ports_) m->clear();
  wait_cycles(config_.reset_cycles);
  for (const auto& m : ports_) m->clear();  // what arrived meanwhile
  wait(kernel_clk_->negedge_event());
  rst_n_.write(true);
  wait_cycles(2);
}

void Platform::finish() { rtl_->final(); }

void Platform::reset_and_host() {
  rst_n_.write(false);
  wait_cycles(config_.reset_cycles);
  wait(kernel_clk_->negedge_event());
  rst_n_.write(true);
  wait_cycles(2);
  try {
    if (host_) host_(*this);
  } catch (...) {
    error_ = std::current_exception();
  }
  sc_core::sc_stop();
}

void Platform::run(Host host) {
  host_ = std::move(host);
  // sc_stop() at the host's end is how a run ends, not news.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  sc_core::sc_start();
  finish();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace netagg::vp

// SPDX-License-Identifier: Apache-2.0
// The Alveo card as a SystemC virtual platform: the aggregator's RTL Verilated as a SystemC
// module (Vnetagg_aggregator_sc) on a kernel clock, four 100 GbE ports (mac.hpp) on the CMAC's
// user-side clock with clock-domain crossings to the kernel clock, and the AXI4-Lite control port
// behind a TLM-2.0 bridge (csr_tlm.hpp) that driver/fpga programs through TlmCsrBus.
//
// SystemC elaborates one design per process: a process builds one Platform, calls run() once.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

#include "csr_tlm.hpp"
#include "mac.hpp"

class Vnetagg_aggregator_sc;

namespace netagg::vp {

inline constexpr unsigned kPorts = 4;
inline constexpr double kMacMhz = 322.265625;  // the CMAC's user-side clock (100 GbE, 512 bits)

struct PlatformConfig {
  double kernel_mhz = 250.0;
  double mac_mhz = kMacMhz;
  MacConfig mac{};
  unsigned reset_cycles = 8;  // kernel cycles ap_rst_n is held low
  std::uint64_t seed = 1;     // Verilator's random initial state (--x-initial unique)
};

// Throws Error(kInvalidArgument) for clocks out of range (1..1000 MHz), a line rate out of
// range, crossings shallower than the largest frame.
void check_config(const PlatformConfig& config);

SC_MODULE(Platform) {
 public:
  // The host: runs in a SystemC thread once reset is over; the CSR bus works only there (and in
  // what it calls). When it returns (or throws) the simulation stops.
  using Host = std::function<void(Platform&)>;

  Platform(sc_core::sc_module_name name, const PlatformConfig& config);
  ~Platform() override;

  // Elaborates and runs until the host returns; rethrows what the host threw.
  void run(Host host);
  // The host without running it: for a caller that runs the simulation itself in slices
  // (sc_start, until the host calls sc_pause), as VpModel (vp_model.hpp) does.
  void set_host(Host host) { host_ = std::move(host); }
  // The Verilated model's final blocks, once the simulation is over (run() calls it).
  void finish();

  fpga::CsrBus& csr() { return *csr_bus_; }
  MacPort& port(unsigned i) { return *ports_.at(i); }
  const PlatformConfig& config() const { return config_; }
  sc_core::sc_time kernel_period() const { return kernel_period_; }
  // Kernel cycles since time zero.
  std::uint64_t kernel_cycles() const;
  // For the host thread: wait n kernel cycles; wait until every port is idle (nothing on a wire,
  // in a crossing or on the pins) for `quiet` kernel cycles, at most max_cycles; returns whether
  // it became idle.
  void wait_cycles(std::uint64_t n);
  bool wait_idle(std::uint64_t quiet, std::uint64_t max_cycles);
  // Every port idle now: nothing on a wire, in a crossing or on the pins (tx_<i>_TVALID low).
  bool ports_idle() const;
  // The last kernel cycle at which ports_idle() did not hold (sampled at every kernel clock
  // edge); 0 if it always held.
  std::uint64_t last_busy_cycle() const { return last_busy_cycle_; }
  // For the host thread: a reset of the card. ap_rst_n low for reset_cycles kernel cycles, every
  // frame on the ports dropped (MacPort::clear), then two cycles out of reset.
  void reset();
  std::uint64_t csr_transactions() const { return bridge_->transactions(); }

 private:
  SC_HAS_PROCESS(Platform);
  void reset_and_host();
  void watch_ports();

  PlatformConfig config_;
  sc_core::sc_time kernel_period_, mac_period_;
  std::unique_ptr<sc_core::sc_clock> kernel_clk_, mac_clk_;
  sc_core::sc_signal<bool> rst_n_{"rst_n"};
  struct Pins;
  std::unique_ptr<Pins> pins_;
  std::unique_ptr<Vnetagg_aggregator_sc> rtl_;
  std::array<std::unique_ptr<MacPort>, kPorts> ports_;
  std::unique_ptr<AxiLiteBridge> bridge_;
  std::unique_ptr<TlmCsrBus> csr_bus_;
  Host host_;
  std::exception_ptr error_;
  std::uint64_t last_busy_cycle_ = 0;
};

// Sets SystemC's time resolution to 1 ps, the Verilated model's time precision; must come before
// anything creates a time, so Platform's constructor does it first. Clock periods are whole
// picoseconds: 300 MHz runs at 300.03 MHz (3333 ps), the MAC clock at 322.27 MHz (3103 ps);
// wire times are rounded to 1 ps (under 0.02% of the shortest frame's).
void set_time_resolution();

}  // namespace netagg::vp

// SPDX-License-Identifier: Apache-2.0
// The virtual platform (platform.hpp) as a sim::FpgaModel, so that netagg-fpgad serves it
// (`--model vp`) as it serves the bare Verilated RTL and the HLS model:
//
//   push_frame      the frame goes to the link partner of that port: onto the Ethernet wire
//                   (preamble, FCS, inter-frame gap, line rate), through the MAC's user side and
//                   the RX clock-domain crossing to the aggregator's rx_<i>
//   step(n)         n kernel clock cycles of simulated time (the MAC clock runs alongside)
//   pop_egress      the frames the aggregator's tx_<i> sent that have left the wire, in the order
//                   their last byte left it (first/last_beat_cycle: their first and last byte on
//                   the wire, in kernel cycles)
//   set_egress_ready  false: the link partner pauses the port's transmitter (no frame starts on
//                   the wire), the TX crossing fills, tx_<i>_TREADY goes low
//   read32/write32  one b_transport each through TlmCsrBus and the AXI4-Lite bridge
//   run_until_idle  every ingress queue empty, every port idle (nothing on a wire, in a crossing,
//                   on the pins) for `quiet` kernel cycles
//   reset           ap_rst_n low for 8 kernel cycles; every frame queued or on a port dropped
//
// The simulation runs in slices: each call of the model hands a request to a SystemC thread of
// the platform (the host thread of Platform) and runs sc_start() until that thread has served it
// and paused the simulation (sc_pause). The thread is where the CSR bus may wait for the AXI
// handshakes; between calls simulated time stands still.
//
// SystemC elaborates one design per process and cannot restart a stopped simulation, so a
// process makes one VpModel at most (a second make_vp_model throws), and no other SystemC
// simulation (netagg-vp's run_once) may run in it. Calls must come from one thread.
#pragma once

#include <cstdint>
#include <memory>

#include "harness.hpp"

namespace netagg::vp {

struct VpModelOptions {
  double kernel_mhz = 250.0;  // the aggregator's clock (ap_clk)
  double line_gbps = 100.0;   // each port's Ethernet line rate
  std::uint64_t seed = 1;     // Verilator's random initial state
  // default_quiet_cycles(): the RTL's first result beat leaves some 20 kernel cycles plus the
  // frame's beats after the last beat of the contribution that completes a round (the platform's
  // slots hold 64 beats: with 1024-element frames, 65 beats, 80 quiet cycles ended a batch before
  // the result, 96 did not); frames on the MACs count as busy, so only this gap needs covering.
  std::uint64_t quiet_cycles = 128;
};

// The platform as an FpgaModel named "vp". Throws Error(kUnsupported) if this process has made
// one already, Error(kInvalidArgument) for options out of range (platform.hpp: check_config).
// Unless SYSTEMC_DISABLE_COPYRIGHT_MESSAGE is set, sets it to 1: a daemon's output is its
// protocol with its launcher, so SystemC's banner stays off it.
std::unique_ptr<sim::FpgaModel> make_vp_model(const VpModelOptions& options = {});

}  // namespace netagg::vp

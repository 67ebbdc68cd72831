// SPDX-License-Identifier: Apache-2.0
// Access to the FPGA aggregator's AXI4-Lite control registers (formats/csr.json). The control
// plane (control.hpp) programs jobs and reads counters through this interface only, so it works
// unchanged on the Verilator harness, the HLS C model (sim/fpga/) and, later, a card over XRT.
#pragma once

#include <cstdint>

namespace netagg::fpga {

class CsrBus {
 public:
  virtual ~CsrBus() = default;
  // 32-bit register at byte address `address` (a multiple of 4). Implementations throw
  // netagg::Error(kTransport) if the device does not answer.
  virtual std::uint32_t read32(std::uint32_t address) = 0;
  virtual void write32(std::uint32_t address, std::uint32_t value) = 0;
};

}  // namespace netagg::fpga

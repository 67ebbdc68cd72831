// SPDX-License-Identifier: Apache-2.0
// The aggregator's AXI4-Lite control port as a TLM-2.0 target, and driver/fpga's CsrBus over
// TLM-2.0, so that the driver's control plane (program_job, read_device_info, counters) runs
// unchanged against the Verilated RTL on the virtual platform.
//
// AxiLiteBridge: b_transport on a simple_target_socket. A 4-byte read or write at a 4-aligned
// address becomes one AXI4-Lite transaction on the s_axi_control_* pins, clocked by the kernel
// clock: the calling thread waits for the handshakes (the time it took is simulated time, not
// an annotated delay). Byte enables become WSTRB. RRESP/BRESP other than OKAY answer
// TLM_GENERIC_ERROR_RESPONSE; other lengths, unaligned addresses or addresses beyond the CSR
// space TLM_BURST_ERROR_RESPONSE / TLM_ADDRESS_ERROR_RESPONSE; no answer within
// kTimeoutCycles kernel cycles TLM_GENERIC_ERROR_RESPONSE.
//
// TlmCsrBus: a CsrBus whose read32/write32 issue b_transport on a simple_initiator_socket. It
// must be called from a SystemC thread (b_transport waits); errors throw netagg::Error
// (kTransport) as every CsrBus does.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <string>

#include "netagg/fpga/csr_bus.hpp"

namespace netagg::vp {

SC_MODULE(AxiLiteBridge) {
  static constexpr unsigned kAddressBits = 12;  // CSR_ADDR_BITS (formats/csr.json)
  static constexpr std::uint64_t kTimeoutCycles = 100000;

  tlm_utils::simple_target_socket<AxiLiteBridge> socket;
  sc_core::sc_in<bool> clk;
  sc_core::sc_out<std::uint32_t> awaddr;
  sc_core::sc_out<bool> awvalid;
  sc_core::sc_in<bool> awready;
  sc_core::sc_out<std::uint32_t> wdata;
  sc_core::sc_out<std::uint32_t> wstrb;
  sc_core::sc_out<bool> wvalid;
  sc_core::sc_in<bool> wready;
  sc_core::sc_in<std::uint32_t> bresp;
  sc_core::sc_in<bool> bvalid;
  sc_core::sc_out<bool> bready;
  sc_core::sc_out<std::uint32_t> araddr;
  sc_core::sc_out<bool> arvalid;
  sc_core::sc_in<bool> arready;
  sc_core::sc_in<std::uint32_t> rdata;
  sc_core::sc_in<std::uint32_t> rresp;
  sc_core::sc_in<bool> rvalid;
  sc_core::sc_out<bool> rready;

  explicit AxiLiteBridge(sc_core::sc_module_name name);

  std::uint64_t transactions() const { return transactions_; }

 private:
  void b_transport(tlm::tlm_generic_payload & trans, sc_core::sc_time & delay);
  tlm::tlm_response_status write(std::uint32_t address, std::uint32_t value, std::uint32_t strobe);
  tlm::tlm_response_status read(std::uint32_t address, std::uint32_t & value);
  void idle();
  std::uint64_t transactions_ = 0;
};

class TlmCsrBus final : public sc_core::sc_module, public fpga::CsrBus {
 public:
  tlm_utils::simple_initiator_socket<TlmCsrBus> socket;

  explicit TlmCsrBus(sc_core::sc_module_name name);
  std::uint32_t read32(std::uint32_t address) override;
  void write32(std::uint32_t address, std::uint32_t value) override;

 private:
  void transport(tlm::tlm_command command, std::uint32_t address, std::uint32_t& value);
};

}  // namespace netagg::vp

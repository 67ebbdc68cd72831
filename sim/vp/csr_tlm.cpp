// SPDX-License-Identifier: Apache-2.0
#include "csr_tlm.hpp"

#include <cstring>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::vp {

AxiLiteBridge::AxiLiteBridge(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_b_transport(this, &AxiLiteBridge::b_transport);
  // The pins start idle: the signals' initial values are false and 0.
}

void AxiLiteBridge::idle() {
  awvalid.write(false);
  wvalid.write(false);
  bready.write(false);
  arvalid.write(false);
  rready.write(false);
  wstrb.write(0);
  awaddr.write(0);
  araddr.write(0);
  wdata.write(0);
}

void AxiLiteBridge::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  (void)delay;  // the transaction's time passes in wait()s on the clock
  const std::uint64_t address = trans.get_address();
  if (trans.get_data_length() != 4 || trans.get_streaming_width() < 4) {
    trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  if (address % 4 != 0 || address >= (std::uint64_t{1} << kAddressBits)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  unsigned char* data = trans.get_data_ptr();
  ++transactions_;
  if (trans.is_write()) {
    std::uint32_t value = 0;
    std::memcpy(&value, data, 4);
    std::uint32_t strobe = 0xF;
    if (const unsigned char* be = trans.get_byte_enable_ptr()) {
      const unsigned n = trans.get_byte_enable_length();
      strobe = 0;
      for (unsigned b = 0; b < 4; ++b)
        if (n > 0 && be[b % n] == TLM_BYTE_ENABLED) strobe |= 1u << b;
    }
    trans.set_response_status(write(static_cast<std::uint32_t>(address), value, strobe));
  } else if (trans.is_read()) {
    std::uint32_t value = 0;
    trans.set_response_status(read(static_cast<std::uint32_t>(address), value));
    std::memcpy(data, &value, 4);
  } else {
    trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  }
}

// Signals written here take effect after the current delta; values read at a clock edge are
// those before the edge, as the RTL samples them.
tlm::tlm_response_status AxiLiteBridge::write(std::uint32_t address, std::uint32_t value,
                                              std::uint32_t strobe) {
  wait(clk.negedge_event());
  awaddr.write(address);
  awvalid.write(true);
  wdata.write(value);
  wstrb.write(strobe);
  wvalid.write(true);
  bready.write(true);
  bool aw_done = false, w_done = false;
  for (std::uint64_t i = 0; i < kTimeoutCycles; ++i) {
    wait(clk.posedge_event());
    const bool aw_fire = !aw_done && awready.read();
    const bool w_fire = !w_done && wready.read();
    const bool b_fire = aw_done && w_done && bvalid.read();
    if (aw_fire) {
      aw_done = true;
      awvalid.write(false);
    }
    if (w_fire) {
      w_done = true;
      wvalid.write(false);
    }
    if (b_fire) {
      const std::uint32_t resp = bresp.read();
      bready.write(false);
      return resp == 0 ? tlm::TLM_OK_RESPONSE : tlm::TLM_GENERIC_ERROR_RESPONSE;
    }
  }
  idle();
  return tlm::TLM_GENERIC_ERROR_RESPONSE;
}

tlm::tlm_response_status AxiLiteBridge::read(std::uint32_t address, std::uint32_t& value) {
  wait(clk.negedge_event());
  araddr.write(address);
  arvalid.write(true);
  rready.write(true);
  bool ar_done = false;
  for (std::uint64_t i = 0; i < kTimeoutCycles; ++i) {
    wait(clk.posedge_event());
    const bool ar_fire = !ar_done && arready.read();
    const bool r_fire = ar_done && rvalid.read();
    if (ar_fire) {
      ar_done = true;
      arvalid.write(false);
    }
    if (r_fire) {
      value = rdata.read();
      const std::uint32_t resp = rresp.read();
      rready.write(false);
      return resp == 0 ? tlm::TLM_OK_RESPONSE : tlm::TLM_GENERIC_ERROR_RESPONSE;
    }
  }
  idle();
  return tlm::TLM_GENERIC_ERROR_RESPONSE;
}

TlmCsrBus::TlmCsrBus(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}

std::uint32_t TlmCsrBus::read32(std::uint32_t address) {
  std::uint32_t value = 0;
  transport(tlm::TLM_READ_COMMAND, address, value);
  return value;
}

void TlmCsrBus::write32(std::uint32_t address, std::uint32_t value) {
  transport(tlm::TLM_WRITE_COMMAND, address, value);
}

void TlmCsrBus::transport(tlm::tlm_command command, std::uint32_t address, std::uint32_t& value) {
  if (address % 4 != 0)
    throw Error(Errc::kInvalidArgument,
                fmt::format("CSR address 0x{:x} is not 4-aligned", address));
  tlm::tlm_generic_payload trans;
  trans.set_command(command);
  trans.set_address(address);
  trans.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
  trans.set_data_length(4);
  trans.set_streaming_width(4);
  trans.set_byte_enable_ptr(nullptr);
  trans.set_dmi_allowed(false);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(trans, delay);
  if (delay != sc_core::SC_ZERO_TIME) wait(delay);
  if (trans.is_response_error())
    throw Error(Errc::kTransport, fmt::format("CSR {} of 0x{:03x} over TLM: {}",
                                              command == tlm::TLM_READ_COMMAND ? "read" : "write",
                                              address, trans.get_response_string()));
}

}  // namespace netagg::vp

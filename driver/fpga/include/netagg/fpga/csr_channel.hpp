// SPDX-License-Identifier: Apache-2.0
// The CSR control channel of netagg-fpgad: 32-bit register reads and writes of the simulated
// aggregator over UDP, so netagg-ctl programs the running RTL through the same Device interface
// as a card. One request datagram, one response datagram; all fields big-endian; 20 bytes each:
//
//   offset  size  request                          response
//   0       4     magic 0x4E435352 ("NCSR")        the same
//   4       4     tag (chosen by the client)       the request's tag (0 if it had none)
//   8       1     op: 1 read32, 2 write32          the request's op (0 if it had none)
//   9       1     0                                status (CsrStatus)
//   10      2     0                                0
//   12      4     register byte address            the request's address
//   16      4     write32: value; read32: 0        read32: the value; else 0
//
// The daemon answers every datagram it receives on the channel that is at least 8 bytes long
// and starts with the magic; a malformed request (wrong length, unknown op, non-zero reserved
// bytes) gets status kMalformed and is counted. The channel has no authentication: bind it to
// loopback.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace netagg::fpga::channel {

inline constexpr std::uint32_t kMagic = 0x4E435352;  // "NCSR"
inline constexpr std::size_t kMessageSize = 20;

enum class Op : std::uint8_t { kNone = 0, kRead32 = 1, kWrite32 = 2 };

enum class CsrStatus : std::uint8_t {
  kOk = 0,
  kMalformed = 1,    // the request broke the format above
  kBadAddress = 2,   // not 4-aligned or outside the CSR address space
  kDeviceError = 3,  // the model did not complete the AXI4-Lite transaction
};
std::string_view to_string(CsrStatus status);

struct Message {
  std::uint32_t tag = 0;
  Op op = Op::kNone;
  CsrStatus status = CsrStatus::kOk;  // responses only
  std::uint32_t address = 0;
  std::uint32_t value = 0;
};

using Bytes = std::array<std::byte, kMessageSize>;

Bytes encode_request(const Message& request);
Bytes encode_response(const Message& response);

// Server side. A request that is not one: std::nullopt if it is not even addressed to the
// channel (shorter than 8 bytes or without the magic: not answered), else a Message whose
// `status` says whether it is well formed (kOk) or not (kMalformed: answer it with that).
std::optional<Message> decode_request(std::span<const std::byte> datagram);

// Client side: nullopt unless it is a well-formed response (length, magic, reserved bytes).
std::optional<Message> decode_response(std::span<const std::byte> datagram);

}  // namespace netagg::fpga::channel

// Field tables of the frame netagg travels in: Ethernet, IPv4 (no options), UDP and the netagg
// header, each field with its bit offset inside its header and its width. The netagg table is
// derived from wire::offset (wire.hpp stays the one definition); the others describe what
// wire::encode_frame writes, and tests/p4/p4_mirror_test.cpp checks them against its output.
// Mirrors of the wire format (the P4 headers in p4/common/headers.p4) are checked against these
// tables field by field: name, order, width.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "netagg/wire.hpp"

namespace netagg::wire::fields {

struct Field {
  std::string_view name;
  std::size_t bit_offset;  // from the first bit of the header, most significant bit first
  std::size_t bits;
};

inline constexpr Field kEthernet[] = {
    {"dst_addr", 0, 48},
    {"src_addr", 48, 48},
    {"ether_type", 96, 16},
};

inline constexpr Field kIpv4[] = {
    {"version", 0, 4},        {"ihl", 4, 4},
    {"dscp", 8, 6},           {"ecn", 14, 2},
    {"total_len", 16, 16},    {"identification", 32, 16},
    {"flags", 48, 3},         {"frag_offset", 51, 13},
    {"ttl", 64, 8},           {"protocol", 72, 8},
    {"hdr_checksum", 80, 16}, {"src_addr", 96, 32},
    {"dst_addr", 128, 32},
};

inline constexpr Field kUdp[] = {
    {"src_port", 0, 16},
    {"dst_port", 16, 16},
    {"length", 32, 16},
    {"checksum", 48, 16},
};

// The netagg header: names as in wire.hpp's table, positions and widths from wire::offset.
inline constexpr Field kNetagg[] = {
    {"version", offset::kVersion * 8, (offset::kType - offset::kVersion) * 8},
    {"type", offset::kType * 8, (offset::kDtype - offset::kType) * 8},
    {"dtype", offset::kDtype * 8, (offset::kFlags - offset::kDtype) * 8},
    {"flags", offset::kFlags * 8, (offset::kJobId - offset::kFlags) * 8},
    {"job_id", offset::kJobId * 8, (offset::kRank - offset::kJobId) * 8},
    {"rank", offset::kRank * 8, (offset::kSlot - offset::kRank) * 8},
    {"slot", offset::kSlot * 8, (offset::kCount - offset::kSlot) * 8},
    {"count", offset::kCount * 8, (offset::kExponent - offset::kCount) * 8},
    {"exponent", offset::kExponent * 8, (offset::kSeq - offset::kExponent) * 8},
    {"seq", offset::kSeq * 8, (offset::kReserved - offset::kSeq) * 8},
    {"reserved", offset::kReserved * 8, (offset::kPayload - offset::kReserved) * 8},
};

// True if the fields follow each other without gap or overlap and fill exactly `bytes` bytes.
constexpr bool tiles(std::span<const Field> fields, std::size_t bytes) {
  std::size_t at = 0;
  for (const Field& f : fields) {
    if (f.bit_offset != at || f.bits == 0) return false;
    at += f.bits;
  }
  return at == bytes * 8;
}

static_assert(tiles(kEthernet, kEthHeaderSize));
static_assert(tiles(kIpv4, kIpv4HeaderSize));
static_assert(tiles(kUdp, kUdpHeaderSize));
static_assert(tiles(kNetagg, kHeaderSize));

}  // namespace netagg::wire::fields

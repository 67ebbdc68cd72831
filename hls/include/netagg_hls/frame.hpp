// The Ethernet/IPv4/UDP/netagg frame as the kernel sees it: byte offsets of every field inside
// beat 0 (docs/wire-format.md; mirrors host/include/netagg/wire.hpp, which the kernel cannot
// include: it is C++20. tests/hls/hls_wire_mirror_test.cpp checks this mirror against it) and
// byte access to a 512-bit beat (byte 0 in bits 7:0, as on the AXI4-Stream). Kernel code: C++14.
#ifndef NETAGG_HLS_FRAME_HPP
#define NETAGG_HLS_FRAME_HPP

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <stdint.h>

namespace netagg {
namespace fpga {

typedef ap_uint<512> BeatData;
typedef ap_axiu<512, 0, 0, 0> AxisBeat;

namespace layout {
constexpr int kBeatBytes = 64;
// Ethernet
constexpr int kEthDst = 0, kEthSrc = 6, kEthType = 12;
constexpr unsigned kEtherTypeIpv4 = 0x0800;
// IPv4 (no options)
constexpr int kIp = 14;
constexpr int kIpVersionIhl = kIp + 0, kIpTos = kIp + 1, kIpTotalLength = kIp + 2,
              kIpIdent = kIp + 4, kIpFragment = kIp + 6, kIpTtl = kIp + 8, kIpProtocol = kIp + 9,
              kIpChecksum = kIp + 10, kIpSrc = kIp + 12, kIpDst = kIp + 16;
constexpr int kIpHeaderSize = 20;
constexpr unsigned kIpVersionIhl45 = 0x45, kIpDontFragment = 0x4000, kIpTtlDefault = 64,
                   kIpProtoUdp = 17, kIpFragmentMask = 0x3FFF, kEcnMask = 0x3;
// UDP
constexpr int kUdp = kIp + kIpHeaderSize;
constexpr int kUdpSrc = kUdp + 0, kUdpDst = kUdp + 2, kUdpLength = kUdp + 4,
              kUdpChecksum = kUdp + 6;
constexpr int kUdpHeaderSize = 8;
// netagg header
constexpr int kNa = kUdp + kUdpHeaderSize;  // 42
constexpr int kNaVersion = kNa + 0, kNaType = kNa + 1, kNaDtype = kNa + 2, kNaFlags = kNa + 3,
              kNaJobId = kNa + 4, kNaRank = kNa + 6, kNaSlot = kNa + 8, kNaCount = kNa + 10,
              kNaExponent = kNa + 12, kNaSeq = kNa + 14, kNaReserved = kNa + 18;
constexpr int kNaHeaderSize = 22;
constexpr int kFrameOverhead = kNa;            // Ethernet + IPv4 + UDP
constexpr int kPayload = kNa + kNaHeaderSize;  // 64: the payload starts at beat 1
static_assert(kPayload == kBeatBytes, "the payload starts on a beat boundary");

constexpr unsigned kVersion = 1;
constexpr unsigned kTypeContribution = 1, kTypeResult = 2;
constexpr unsigned kDtypeInt32 = 0, kDtypeFp32 = 1, kDtypeBf16 = 2;
constexpr unsigned kFlagSet = 0x01, kFlagsReserved = 0xFE;
constexpr unsigned kMaxCount = 1024;
}  // namespace layout

inline unsigned element_size(unsigned dtype) { return dtype == layout::kDtypeBf16 ? 2u : 4u; }

inline unsigned get_byte(const BeatData& b, int i) {
#pragma HLS INLINE
  return static_cast<unsigned>(b.range(8 * i + 7, 8 * i).to_uint64());
}
inline void set_byte(BeatData& b, int i, unsigned v) {
#pragma HLS INLINE
  b.range(8 * i + 7, 8 * i) = static_cast<unsigned long long>(v & 0xFFu);
}
inline unsigned get_be16(const BeatData& b, int i) {
  return get_byte(b, i) << 8 | get_byte(b, i + 1);
}
inline uint32_t get_be32(const BeatData& b, int i) {
  return static_cast<uint32_t>(get_be16(b, i)) << 16 | get_be16(b, i + 2);
}
inline void set_be16(BeatData& b, int i, unsigned v) {
  set_byte(b, i, v >> 8);
  set_byte(b, i + 1, v);
}
inline void set_be32(BeatData& b, int i, uint32_t v) {
  set_be16(b, i, v >> 16);
  set_be16(b, i + 2, v & 0xFFFFu);
}

// Payload elements are big-endian: lane l of a beat (bytes 4l..4l+3) holds its most significant
// byte in bits 8*4l+7 : 8*4l.
inline uint32_t byte_swap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}
inline uint32_t get_lane32(const BeatData& b, int lane) {
#pragma HLS INLINE
  return byte_swap32(static_cast<uint32_t>(b.range(32 * lane + 31, 32 * lane).to_uint64()));
}
inline void set_lane32(BeatData& b, int lane, uint32_t v) {
#pragma HLS INLINE
  b.range(32 * lane + 31, 32 * lane) = static_cast<unsigned long long>(byte_swap32(v));
}
inline uint16_t get_lane16(const BeatData& b, int lane) {
#pragma HLS INLINE
  const unsigned raw = static_cast<unsigned>(b.range(16 * lane + 15, 16 * lane).to_uint64());
  return static_cast<uint16_t>((raw >> 8) | ((raw & 0xFFu) << 8));
}
inline void set_lane16(BeatData& b, int lane, uint16_t v) {
#pragma HLS INLINE
  b.range(16 * lane + 15, 16 * lane) =
      static_cast<unsigned long long>((v >> 8) | ((v & 0xFFu) << 8));
}

// The IPv4 header checksum field for the header in bytes kIp..kIp+19 of beat 0, computed with the
// checksum field taken as zero; a received header is valid when ipv4_sum() folds to 0xFFFF.
inline unsigned ipv4_sum(const BeatData& b) {
  uint32_t sum = 0;
  for (int i = 0; i < layout::kIpHeaderSize; i += 2) {
#pragma HLS UNROLL
    sum += get_be16(b, layout::kIp + i);
  }
  sum = (sum & 0xFFFFu) + (sum >> 16);
  sum = (sum & 0xFFFFu) + (sum >> 16);
  return sum;
}

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_FRAME_HPP

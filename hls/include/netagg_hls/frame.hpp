// SPDX-License-Identifier: Apache-2.0
// The Ethernet/IPv4/UDP/netagg frame as the kernel sees it: byte offsets of every field inside
// beat 0, generated from formats/wire.json (the kernel cannot include netagg/wire.hpp: it is
// C++20), and byte access to a 512-bit beat (byte 0 in bits 7:0, as on the AXI4-Stream).
// Kernel code: C++14.
#ifndef NETAGG_HLS_FRAME_HPP
#define NETAGG_HLS_FRAME_HPP

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <stdint.h>

namespace netagg {
namespace fpga {

typedef ap_uint<512> BeatData;
typedef ap_axiu<512, 0, 0, 0> AxisBeat;

// BEGIN GENERATED [layout] from formats/wire.json by scripts/gen_formats.py; do not edit
// clang-format off
namespace layout {
constexpr int kBeatBytes = 64;
// Frame byte offset of each header and field; a field that is not whole bytes also has the
// width of the big-endian word holding it (Bytes), its right shift in it and its mask.
constexpr int kEth = 0, kEthHeaderSize = 14;
constexpr int kEthDstAddr = 0;
constexpr int kEthSrcAddr = 6;
constexpr int kEthEtherType = 12;
constexpr int kIpv4 = 14, kIpv4HeaderSize = 20;
constexpr int kIpv4Version = 14;  constexpr int kIpv4VersionBytes = 1, kIpv4VersionShift = 4; constexpr unsigned kIpv4VersionMask = 0x0F;
constexpr int kIpv4Ihl = 14;  constexpr int kIpv4IhlBytes = 1, kIpv4IhlShift = 0; constexpr unsigned kIpv4IhlMask = 0x0F;
constexpr int kIpv4Dscp = 15;  constexpr int kIpv4DscpBytes = 1, kIpv4DscpShift = 2; constexpr unsigned kIpv4DscpMask = 0x3F;
constexpr int kIpv4Ecn = 15;  constexpr int kIpv4EcnBytes = 1, kIpv4EcnShift = 0; constexpr unsigned kIpv4EcnMask = 0x03;
constexpr int kIpv4TotalLen = 16;
constexpr int kIpv4Identification = 18;
constexpr int kIpv4Flags = 20;  constexpr int kIpv4FlagsBytes = 1, kIpv4FlagsShift = 5; constexpr unsigned kIpv4FlagsMask = 0x07;
constexpr int kIpv4FragOffset = 20;  constexpr int kIpv4FragOffsetBytes = 2, kIpv4FragOffsetShift = 0; constexpr unsigned kIpv4FragOffsetMask = 0x1FFF;
constexpr int kIpv4Ttl = 22;
constexpr int kIpv4Protocol = 23;
constexpr int kIpv4HdrChecksum = 24;
constexpr int kIpv4SrcAddr = 26;
constexpr int kIpv4DstAddr = 30;
constexpr int kUdp = 34, kUdpHeaderSize = 8;
constexpr int kUdpSrcPort = 34;
constexpr int kUdpDstPort = 36;
constexpr int kUdpLength = 38;
constexpr int kUdpChecksum = 40;
constexpr int kNetagg = 42, kNetaggHeaderSize = 22;
constexpr int kNetaggVersion = 42;
constexpr int kNetaggType = 43;
constexpr int kNetaggDtype = 44;
constexpr int kNetaggFlags = 45;
constexpr int kNetaggJobId = 46;
constexpr int kNetaggRank = 48;
constexpr int kNetaggSlot = 50;
constexpr int kNetaggCount = 52;
constexpr int kNetaggExponent = 54;
constexpr int kNetaggSeq = 56;
constexpr int kNetaggEpoch = 60;
constexpr int kFrameOverhead = 42;
constexpr int kPayload = 64;  // the payload starts at beat 1

constexpr unsigned kVersion = 1;
constexpr unsigned kUdpPort = 20033;
constexpr unsigned kMaxCount = 1024;  // elements per packet, any dtype
constexpr unsigned kNoticeInterval = 16;  // an aggregator sends a notice for the first drop of each notice_reason from each rank (its low 5 bits) and then for one in every notice_interval of them (a power of two); for every duplicate (each answers a retransmission, paced by its sender's timer)
constexpr int kExponentNone = -32768;  // block exponent of a chunk of zeros: the identity of max
constexpr int kExponentNonFinite = 32767;  // block exponent of a chunk that held NaN or Inf
constexpr unsigned kExactFractionBits = 54;  // fp32_exact: a lane at scale e holds x * 2^(exact_fraction_bits - e), rounded to nearest even (docs/numerics.md, "Exact fp32")
constexpr unsigned kExactCodeOffset = 98;  // fp32_exact: the exponent code of e in [-97, 128] is e + exact_code_offset (1..226); code 0 is none (a chunk of zeros)
constexpr unsigned kExactMaxContributions = 511;  // fp32_exact: workers of one job at most, over all its aggregators (no sum of that many lanes overflows 64 bits)
constexpr unsigned kMsgContribution = 1;
constexpr unsigned kMsgResult = 2;
constexpr unsigned kMsgNotice = 3;
constexpr unsigned kNoticeUnknownJob = 1;
constexpr unsigned kNoticeRankOutOfRange = 2;
constexpr unsigned kNoticeForeignSource = 3;
constexpr unsigned kNoticeSlotOutOfRange = 4;
constexpr unsigned kNoticeUnsupportedDtype = 5;
constexpr unsigned kNoticeCountTooLargeForJob = 6;
constexpr unsigned kNoticeCountMismatch = 7;
constexpr unsigned kNoticeDtypeMismatch = 8;
constexpr unsigned kNoticeStale = 9;
constexpr unsigned kNoticeStaleEpoch = 10;
constexpr unsigned kNoticeDuplicate = 11;
constexpr unsigned kNoticeScaleMismatch = 12;
constexpr unsigned kDtypeInt32 = 0;
constexpr unsigned kDtypeFp32 = 1;
constexpr unsigned kDtypeBf16 = 2;
constexpr unsigned kDtypeFp32Exact = 3;
constexpr unsigned kDtypeExactLanes = 4;
constexpr unsigned kFlagSet = 0x01;
constexpr unsigned kFlagFresh = 0x02;
constexpr unsigned kFlagRecovery = 0x04;
constexpr unsigned kFlagsReservedMask = 0xF8;
constexpr unsigned kEthertypeIpv4 = 0x0800;
constexpr unsigned kEthertypeArp = 0x0806;
constexpr unsigned kIpProtocolIcmp = 1;
constexpr unsigned kIpProtocolUdp = 17;
constexpr unsigned kIpVersionIhl = 0x45;
constexpr unsigned kIpTtl = 64;
constexpr unsigned kIpFlagsDf = 2;
constexpr unsigned kIpFragmentMask = 0x3FFF;
constexpr unsigned kArpOpcodeRequest = 1;
constexpr unsigned kArpOpcodeReply = 2;
constexpr unsigned kIcmpEchoRequest = 8;
constexpr unsigned kIcmpEchoReply = 0;
constexpr unsigned kMinEthFrame = 60;
}  // namespace layout

inline unsigned element_size(unsigned dtype) {
  switch (dtype) {
    case layout::kDtypeInt32: return 4u;
    case layout::kDtypeFp32: return 4u;
    case layout::kDtypeBf16: return 2u;
    case layout::kDtypeFp32Exact: return 4u;
    case layout::kDtypeExactLanes: return 8u;
  }
  return 0u;
}
// clang-format on
// END GENERATED [layout]

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

// The IPv4 header checksum field for the header in bytes kIpv4..kIpv4+19 of beat 0, computed with
// the checksum field taken as zero; a received header is valid when ipv4_sum() folds to 0xFFFF.
inline unsigned ipv4_sum(const BeatData& b) {
  uint32_t sum = 0;
  for (int i = 0; i < layout::kIpv4HeaderSize; i += 2) {
#pragma HLS UNROLL
    sum += get_be16(b, layout::kIpv4 + i);
  }
  sum = (sum & 0xFFFFu) + (sum >> 16);
  sum = (sum & 0xFFFFu) + (sum >> 16);
  return sum;
}

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_FRAME_HPP

// SPDX-License-Identifier: Apache-2.0
// Notices (docs/wire-format.md, "Notices"; docs/fpga-aggregator.md, "Notices"): a contribution
// dropped for a reason its sender can act on is answered with a notice, the dropped packet's
// header with type notice, dtype int32, only the set flag, exponent_none and one or two int32
// words (the notice_reason; for `duplicate` the ranks its round waits for), back out of the
// ingress port it came in on with the MAC, IPv4 and UDP addresses swapped (ECN 0). The rate:
// for each reason and each rank (its low 5 bits) the first drop and then one in every
// notice_interval; every duplicate. Recovery copies and results get none. Mirrors
// hw/rtl/netagg_notice.sv.
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_NOTICE_HPP
#define NETAGG_HLS_NOTICE_HPP

#include <stdint.h>

#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"

namespace netagg {
namespace fpga {
namespace pipeline {

constexpr int kNoticeRanks = 32;    // rate counters per reason: by the rank's low 5 bits
constexpr int kNoticeReasons = 13;  // notice_reason codes 1..12 (0: none)

// The notice_reason of a drop counter, or 0 if that drop gets no notice (malformed frames,
// not_contribution, no_round and the counters that are no drops).
inline unsigned notice_code(int counter) {
  using namespace layout;
  switch (counter) {
    case csr14::kDroppedUnknownJob:
      return kNoticeUnknownJob;
    case csr14::kDroppedRankOutOfRange:
      return kNoticeRankOutOfRange;
    case csr14::kDroppedForeignSource:
      return kNoticeForeignSource;
    case csr14::kDroppedSlotOutOfRange:
      return kNoticeSlotOutOfRange;
    case csr14::kDroppedUnsupportedDtype:
      return kNoticeUnsupportedDtype;
    case csr14::kDroppedCountTooLargeForJob:
      return kNoticeCountTooLargeForJob;
    case csr14::kDroppedCountMismatch:
      return kNoticeCountMismatch;
    case csr14::kDroppedDtypeMismatch:
      return kNoticeDtypeMismatch;
    case csr14::kDroppedStale:
      return kNoticeStale;
    case csr14::kDroppedStaleEpoch:
      return kNoticeStaleEpoch;
    case csr14::kDroppedDuplicate:
      return kNoticeDuplicate;
    case csr14::kDroppedScaleMismatch:
      return kNoticeScaleMismatch;
    default:
      return 0;
  }
}

// The rate limit: a 4-bit count of drops per reason and rank (the drops before one, modulo
// notice_interval, say whether it gets a notice).
class NoticeRate {
 public:
  static_assert(layout::kNoticeInterval == 16, "the rate counters are 4 bits");

  void clear() {
    for (int r = 0; r < kNoticeReasons; ++r)
      for (int k = 0; k < kNoticeRanks; ++k) drops_[r][k] = 0;
  }
  // Counts a drop of reason `code` (non-zero) from `rank`: whether it gets a notice.
  bool due(unsigned code, unsigned rank) {
    if (code == layout::kNoticeDuplicate) return true;  // each answers a retransmission
    uint8_t& n = drops_[code][rank % kNoticeRanks];
    const bool first = n == 0;
    n = static_cast<uint8_t>((n + 1) % layout::kNoticeInterval);
    return first;
  }

 private:
  uint8_t drops_[kNoticeReasons][kNoticeRanks];
};

// The notice answering the frame whose beat 0 is `dropped` (all of its headers), with reason
// `code` and, for a duplicate, the ranks `waiting`, on egress port `port`.
template <class Sink>
void emit_notice(const BeatData& dropped, unsigned code, uint32_t waiting, int port, Sink& sink) {
  using namespace layout;
  const unsigned words = code == kNoticeDuplicate ? 2u : 1u;
  const unsigned ip_length = kIpv4HeaderSize + kUdpHeaderSize + kNetaggHeaderSize + 4 * words;

  BeatData h = 0;
  for (int i = 0; i < 6; ++i) {  // the MAC addresses swapped
#pragma HLS UNROLL
    set_byte(h, kEthDstAddr + i, get_byte(dropped, kEthSrcAddr + i));
    set_byte(h, kEthSrcAddr + i, get_byte(dropped, kEthDstAddr + i));
  }
  set_be16(h, kEthEtherType, kEthertypeIpv4);
  set_byte(h, kIpv4Version, kIpVersionIhl);
  set_be16(h, kIpv4TotalLen, ip_length);
  set_be16(h, kIpv4Flags, (kIpFlagsDf << 13));
  set_byte(h, kIpv4Ttl, kIpTtl);
  set_byte(h, kIpv4Protocol, kIpProtocolUdp);
  set_be32(h, kIpv4SrcAddr, get_be32(dropped, kIpv4DstAddr));
  set_be32(h, kIpv4DstAddr, get_be32(dropped, kIpv4SrcAddr));
  set_be16(h, kIpv4HdrChecksum, ~ipv4_sum(h) & 0xFFFFu);
  set_be16(h, kUdpSrcPort, get_be16(dropped, kUdpDstPort));
  set_be16(h, kUdpDstPort, get_be16(dropped, kUdpSrcPort));
  set_be16(h, kUdpLength, ip_length - kIpv4HeaderSize);
  set_byte(h, kNetaggVersion, kVersion);
  set_byte(h, kNetaggType, kMsgNotice);
  set_byte(h, kNetaggDtype, kDtypeInt32);
  set_byte(h, kNetaggFlags, get_byte(dropped, kNetaggFlags) & kFlagSet);
  set_be16(h, kNetaggJobId, get_be16(dropped, kNetaggJobId));
  set_be16(h, kNetaggRank, get_be16(dropped, kNetaggRank));
  set_be16(h, kNetaggSlot, get_be16(dropped, kNetaggSlot));
  set_be16(h, kNetaggCount, words);
  set_be16(h, kNetaggExponent, static_cast<uint16_t>(kExponentNone));
  set_be32(h, kNetaggSeq, get_be32(dropped, kNetaggSeq));
  set_be32(h, kNetaggEpoch, get_be32(dropped, kNetaggEpoch));

  AxisBeat out;
  out.data = h;
  out.keep = ~0ULL;
  out.strb = ~0ULL;
  out.last = false;
  sink.write(port, out);
  BeatData d = 0;
  set_lane32(d, 0, code);
  if (words == 2) set_lane32(d, 1, waiting);
  out.data = d;
  out.keep = (1ULL << (4 * words)) - 1;
  out.strb = out.keep;
  out.last = true;
  sink.write(port, out);
}

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_NOTICE_HPP

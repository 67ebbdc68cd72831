// SPDX-License-Identifier: Apache-2.0
// Results out (docs/fpga-aggregator.md, "Results" and "Trees"): where a round's frame goes (a
// worker of the job, or the job's parent) and the frame itself, Ethernet/IPv4/UDP/netagg from
// the aggregator with the round's fields and its accumulators as the payload. Mirrors
// hw/rtl/netagg_replicate.sv (the result queue's frames, per worker on its egress port, and the
// sum to the parent) and the bf16 rounding on its way out (netagg_fp32_to_bf16.sv).
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_REPLICATE_HPP
#define NETAGG_HLS_REPLICATE_HPP

#include <hls_stream.h>
#include <stdint.h>

#include "netagg_hls/accumulate.hpp"
#include "netagg_hls/admit.hpp"
#include "netagg_hls/arith.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/round.hpp"

namespace netagg {
namespace fpga {
namespace pipeline {

// Where a frame of a round goes and the header fields that differ between a result and a
// contribution to the parent.
struct Destination {
  uint32_t mac_lo;  // MAC bytes 2..5
  uint16_t mac_hi;  // MAC bytes 0..1
  uint32_t ip;
  uint16_t udp_port;
  int port;  // egress port
  unsigned type, flags;
  uint16_t job_id, rank, slot;
};

// The aggregator's own address, every frame's source: the AGG_MAC_LO, AGG_MAC_HI, AGG_IP and
// AGG_UDP_PORT registers.
struct Origin {
  uint32_t mac_lo, mac_hi, ip, udp_port;
};

// The kernel's egress streams as a sink of beats.
struct StreamSink {
  hls::stream<AxisBeat>* tx;
  void write(int port, const AxisBeat& w) { tx[port].write(w); }
};

// The result of round `at` for rank `rank` of job table entry `job`, whose record is `w`, on
// that worker's egress port.
inline Destination to_worker(const JobEntry& job, const WorkerEntry& w, int rank, int at) {
  Destination d;
  d.mac_lo = w.mac_lo;
  d.mac_hi = w.mac_hi;
  d.ip = w.ip;
  d.udp_port = w.udp_port;
  d.port = w.egress_port;
  d.type = layout::kMsgResult;
  d.flags = static_cast<unsigned>(at & 1);
  d.job_id = job.id;
  d.rank = static_cast<uint16_t>(rank);
  d.slot = static_cast<uint16_t>(at >> 1);
  return d;
}

// Trees: the sum of round `at` to the parent of `job`, as one contribution (the parent's job
// id, this aggregator's rank and the parent's slot; fresh if the round was), on the egress port
// towards the parent.
inline Destination to_parent(const JobEntry& j, const RoundState& round, int at) {
  Destination d;
  d.mac_lo = j.parent_mac_lo;
  d.mac_hi = j.parent_mac_hi;
  d.ip = j.parent_ip;
  d.udp_port = j.parent_udp_port;
  d.port = j.parent_port;
  d.type = layout::kMsgContribution;
  d.flags = static_cast<unsigned>(at & 1) | (round.fresh ? layout::kFlagFresh : 0u);
  d.job_id = j.parent_id;
  d.rank = j.parent_rank;
  d.slot = static_cast<uint16_t>(j.parent_slot_base + ((at >> 1) - j.slot_base));
  return d;
}

// The frame of round `at` (state `round`, values in `acc`) to `dst`: Ethernet/IPv4/UDP from
// `from`, ECN = the round's OR, the round's dtype, count, exponent, seq and epoch, and its
// values as the payload (bf16: rounded to bf16; an exact round's lanes: to the parent as
// exact_lanes, to workers rounded once to fp32 at the round's scale).
template <class P, class Sink>
void emit_frame(const Destination& dst, const Origin& from, const RoundState& round,
                const Accumulators<P>& acc, int at, Sink& sink) {
  using namespace layout;
  constexpr int kLanes = P::kLanes;
  // An exact round goes up unrounded (exact_lanes) and out rounded once (fp32_exact).
  const bool exact = P::kExact && round.dtype == kDtypeFp32Exact;
  const bool lanes_out = exact && dst.type == kMsgContribution;
  const unsigned dtype = lanes_out ? kDtypeExactLanes : round.dtype;
  const int16_t scale = exact_scale((static_cast<uint16_t>(round.exponent) >> 8) & 0xFFu);
  const unsigned payload = round.count * element_size(dtype);
  const unsigned ip_length = kIpv4HeaderSize + kUdpHeaderSize + kNetaggHeaderSize + payload;

  BeatData h = 0;
  set_be16(h, kEthDstAddr, dst.mac_hi);
  set_be32(h, kEthDstAddr + 2, dst.mac_lo);
  set_be16(h, kEthSrcAddr, from.mac_hi & 0xFFFFu);
  set_be32(h, kEthSrcAddr + 2, from.mac_lo);
  set_be16(h, kEthEtherType, kEthertypeIpv4);
  set_byte(h, kIpv4Version, kIpVersionIhl);
  set_byte(h, kIpv4Ecn, round.ecn & kIpv4EcnMask);
  set_be16(h, kIpv4TotalLen, ip_length);
  set_be16(h, kIpv4Flags, (kIpFlagsDf << 13));
  set_byte(h, kIpv4Ttl, kIpTtl);
  set_byte(h, kIpv4Protocol, kIpProtocolUdp);
  set_be32(h, kIpv4SrcAddr, from.ip);
  set_be32(h, kIpv4DstAddr, dst.ip);
  set_be16(h, kIpv4HdrChecksum, ~ipv4_sum(h) & 0xFFFFu);
  set_be16(h, kUdpSrcPort, from.udp_port & 0xFFFFu);
  set_be16(h, kUdpDstPort, dst.udp_port);
  set_be16(h, kUdpLength, ip_length - kIpv4HeaderSize);
  set_byte(h, kNetaggVersion, kVersion);
  set_byte(h, kNetaggType, dst.type);
  set_byte(h, kNetaggDtype, dtype);
  set_byte(h, kNetaggFlags, dst.flags);
  set_be16(h, kNetaggJobId, dst.job_id);
  set_be16(h, kNetaggRank, dst.rank);
  set_be16(h, kNetaggSlot, dst.slot);
  set_be16(h, kNetaggCount, round.count);
  set_be16(h, kNetaggExponent, static_cast<uint16_t>(round.exponent));
  set_be32(h, kNetaggSeq, round.seq);
  set_be32(h, kNetaggEpoch, round.epoch);

  const int port = dst.port;
  const int beats = static_cast<int>((payload + kBeatBytes - 1) / kBeatBytes);
  AxisBeat out;
  out.data = h;
  out.keep = ~0ULL;
  out.strb = ~0ULL;
  out.last = beats == 0;
  sink.write(port, out);
  const bool bf16 = round.dtype == kDtypeBf16;
payload_beats:
  for (int k = 0; k < beats; ++k) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 16
    BeatData d = 0;
    if (lanes_out) {
      for (int e = 0; e < kLanes / 2; ++e) {
#pragma HLS UNROLL
        const int index = (kLanes / 2) * k + e;
        if (index < round.count) {
          const uint64_t v = exact_to_wire(acc.lane(at, index / kLanes, index % kLanes));
          set_lane32(d, 2 * e, static_cast<uint32_t>(v >> 32));
          set_lane32(d, 2 * e + 1, static_cast<uint32_t>(v));
        }
      }
    } else if (exact && !round.rounded) {
      for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
        if (kLanes * k + l < round.count)
          set_lane32(d, l, exact_to_fp32(acc.lane(at, k, l), scale));
      }
    } else if (bf16) {
      for (int e = 0; e < 2 * kLanes; ++e) {
#pragma HLS UNROLL
        const int index = 2 * kLanes * k + e;
        if (index < round.count)
          set_lane16(d, e, fp32_to_bf16(acc.word(at, index / kLanes, index % kLanes)));
      }
    } else {
      for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
        if (kLanes * k + l < round.count) set_lane32(d, l, acc.word(at, k, l));
      }
    }
    const unsigned left = payload - kBeatBytes * k;  // bytes from this beat on
    out.data = d;
    out.keep = left >= 64 ? ~0ULL : (1ULL << left) - 1;
    out.strb = out.keep;
    out.last = k == beats - 1;
    sink.write(port, out);
  }
}

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_REPLICATE_HPP

// SPDX-License-Identifier: Apache-2.0
// Aggregation trees in the FPGA aggregator's tests (tests/hls, tests/hw): a child job (a job with
// a parent), the frames its parent sends (results) and the frame the aggregator must send to the
// parent when a round completes, all built with the host's wire encoder, independent of the
// aggregator's frame code (docs/wire-format.md, "Aggregation trees").
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "fpga_test_util.hpp"

namespace netagg::fpga::testing {

// The parent of the child jobs below: 10.0.200.1:40000, MAC 02:00:00:c8:00:01, reached on
// port 3.
inline constexpr Endpoint kParentAddress{0x0A00C801u, 40000};
inline constexpr wire::Mac kParentMac{0x02, 0x00, 0x00, 0xC8, 0x00, 0x01};
inline constexpr std::uint16_t kParentPort = 3;

// make_job(id, n, slot_base, slot_count, elements) as a child in a tree: its sums go to the
// parent above as rank `parent_rank` of job `parent_job`, into the parent's slots from
// `parent_slot_base`.
inline JobSpec make_child_job(std::uint16_t id, unsigned n, std::uint16_t slot_base,
                              std::uint16_t slot_count, std::uint16_t elements,
                              std::uint16_t parent_job, std::uint16_t parent_rank,
                              std::uint16_t parent_slot_base) {
  JobSpec job = make_job(id, n, slot_base, slot_count, elements);
  ParentSpec p;
  p.address = kParentAddress;
  p.job_id = parent_job;
  p.rank = parent_rank;
  p.slot_base = parent_slot_base;
  p.mac = kParentMac;
  p.switch_port = kParentPort;
  job.parent = p;
  return job;
}

// A frame from `from` (address and MAC) to the aggregator holding `packet`.
inline Bytes frame_from_endpoint(const Endpoint& from, const wire::Mac& mac,
                                 std::span<const std::byte> packet, std::uint8_t ecn = 0) {
  wire::FrameAddress a;
  a.src_mac = mac;
  a.dst_mac = kAggMac;
  a.src_ip = from.ip;
  a.dst_ip = kAggIp;
  a.src_port = from.port;
  a.dst_port = wire::kUdpPort;
  a.ecn = ecn;
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("frame not encodable");
  return frame;
}

// The header of the child's round (its own job id, slot, set, seq, epoch, count, dtype, the
// round's exponent) as the parent sees it: job id, rank and slot at the parent.
inline wire::Header at_parent(const JobSpec& child, wire::Header h) {
  const ParentSpec& p = *child.parent;
  h.job_id = p.job_id;
  h.rank = p.rank;
  h.slot = static_cast<std::uint16_t>(p.slot_base + (h.slot - child.slot_base));
  return h;
}

// The parent's result for the child's round `round` (the child's own header fields), with
// `values` and `exponent`, from `from` (default: the parent's address).
inline Bytes parent_result_frame(const JobSpec& child, const wire::Header& round,
                                 std::span<const std::uint32_t> values, std::int16_t exponent,
                                 std::uint8_t ecn = 0, const Endpoint& from = kParentAddress) {
  wire::Header h = at_parent(child, round);
  h.type = wire::MsgType::kResult;
  h.fresh = h.recovery = 0;
  h.exponent = exponent;
  h.count = static_cast<std::uint16_t>(values.size());
  return frame_from_endpoint(from, kParentMac, encode_packet(h, values), ecn);
}

// The frame the child must send its parent for round `round` (the child's own header fields;
// `fresh` the round's, `exponent` its max), holding `values` (the partial sum), with `ecn`:
// from the aggregator's address to the parent's, on the port towards the parent.
inline TxFrame expected_to_parent(const JobSpec& child, const wire::Header& round,
                                  std::span<const std::uint32_t> values, std::uint8_t ecn = 0) {
  wire::Header h = at_parent(child, round);
  h.type = wire::MsgType::kContribution;
  h.recovery = 0;
  h.count = static_cast<std::uint16_t>(values.size());
  wire::FrameAddress a;
  a.src_mac = kAggMac;
  a.dst_mac = *child.parent->mac;
  a.src_ip = kAggIp;
  a.dst_ip = child.parent->address.ip;
  a.src_port = wire::kUdpPort;
  a.dst_port = child.parent->address.port;
  a.ecn = ecn;
  const Bytes packet = encode_packet(h, values);
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("frame to the parent not encodable");
  return {*child.parent->switch_port, frame};
}

}  // namespace netagg::fpga::testing

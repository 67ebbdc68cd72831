// SPDX-License-Identifier: Apache-2.0
// Aggregation trees in the hand-written RTL (docs/fpga-aggregator.md, "Trees"): a job with a
// parent sends a completed round's sum to the parent as one contribution, sends it again when a
// member retransmits, and completes the round with the parent's result. Every test replays the
// frames the RTL took, in the groups it took them, on the HLS reference model and compares
// egress frames and counters (frame for frame, bit for bit), on top of its own checks against
// frames built by the host's wire encoder (fpga_tree_util.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "../hls/fpga_tree_util.hpp"
#include "Vnetagg_aggregator.h"
#include "aggregator_rtl_fixture.hpp"
#include "aggregator_traffic.hpp"
#include "netagg/exact.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"

namespace netagg::rtltest {
namespace {

using fpga::TxFrame;

constexpr unsigned kPorts = 4;
constexpr std::uint32_t kEpoch = 0x7ee0000b;

class RtlTree : public RtlAgainstModel<Vnetagg_aggregator, kPorts, fpga::DefaultParams> {
 protected:
  RtlTree() : RtlAgainstModel(7) {}
  void SetUp() override {
    RtlAgainstModel::SetUp();
    install(0, plain_);
    install(1, child_);
  }

  // Runs until idle and compares with the model; the RTL's egress frames.
  std::vector<EgressFrame> settle() {
    EXPECT_TRUE(run_until_idle());
    auto egress = tb.pop_egress();
    expect_same_as_model(egress);
    return egress;
  }
  // frames_in = aggregated + results_resent + resent_to_parent + results_from_parent + drops.
  void expect_balanced() {
    std::uint64_t drops = 0;
    for (unsigned i = csr::index(C::kMalformedTruncated); i <= csr::index(C::kDroppedNoRound); ++i)
      drops += counter(i);
    EXPECT_EQ(count(C::kFramesIn), count(C::kAggregated) + count(C::kResultsResent) +
                                       count(C::kResentToParent) + count(C::kResultsFromParent) +
                                       drops);
  }

  static std::int16_t exponent(std::uint16_t rank, std::uint32_t packet) {
    return static_cast<std::int16_t>(10 - 4 * rank + static_cast<int>(packet % 5));
  }
  wire::Header header(std::uint16_t rank, std::uint32_t packet, std::uint16_t count,
                      wire::DataType dtype = wire::DataType::kInt32) const {
    wire::Header h = contribution_header(child_, rank, packet, count, dtype);
    h.epoch = kEpoch;
    h.fresh = packet < 2u * child_.slot_count ? 1 : 0;
    h.exponent = exponent(rank, packet);
    return h;
  }
  static std::vector<std::uint32_t> values(std::uint16_t rank, std::uint32_t packet,
                                           std::uint16_t count) {
    std::vector<std::uint32_t> v(count);
    for (std::uint32_t i = 0; i < count; ++i)
      v[i] = 0x01000193u * (rank + 3) * (packet + 1) + i * 0x9E3779B9u;
    return v;
  }
  static std::vector<std::uint32_t> partial(std::uint32_t packet, std::uint16_t count) {
    std::vector<std::uint32_t> sum(count, 0);
    for (std::uint16_t r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < count; ++i) sum[i] += values(r, packet, count)[i];
    return sum;
  }
  static std::vector<std::uint32_t> total(std::uint32_t packet, std::uint16_t count) {
    std::vector<std::uint32_t> sum = partial(packet, count);
    for (std::size_t i = 0; i < count; ++i) sum[i] += 0x10203040u + static_cast<std::uint32_t>(i);
    return sum;
  }
  // The round as the child holds it: the max exponent (rank 0's), its starter's fresh.
  wire::Header round_header(std::uint32_t packet, std::uint16_t count) const {
    return header(0, packet, count);
  }
  Bytes member_frame(std::uint16_t rank, std::uint32_t packet, std::uint16_t count,
                     std::uint8_t ecn = 0) const {
    return frame_from(child_.workers[rank],
                      encode_packet(header(rank, packet, count), values(rank, packet, count)), ecn);
  }
  // Ranks 0, 1, 2 on ports 0, 1, 2 in the same cycles (one group).
  std::vector<EgressFrame> complete(std::uint32_t packet, std::uint16_t count) {
    for (std::uint16_t r = 0; r < 3; ++r)
      tb.push_frame(r, member_frame(r, packet, count, static_cast<std::uint8_t>(r)));
    return settle();
  }
  TxFrame up(std::uint32_t packet, std::uint16_t count) const {
    return expected_to_parent(child_, round_header(packet, count), partial(packet, count), 3);
  }
  Bytes result(std::uint32_t packet, std::uint16_t count, std::uint8_t ecn = 0) const {
    return parent_result_frame(child_, round_header(packet, count), total(packet, count), -7, ecn);
  }
  std::vector<TxFrame> multicast(std::uint32_t packet, std::uint16_t count,
                                 std::uint8_t ecn) const {
    wire::Header h = round_header(packet, count);
    h.exponent = -7;
    return expected_multicast(child_, h, total(packet, count), ecn);
  }
  static std::vector<TxFrame> tx(const std::vector<EgressFrame>& frames) {
    std::vector<TxFrame> out;
    for (const auto& f : frames) out.push_back({f.port, f.bytes});
    return out;
  }
  static std::vector<TxFrame> by_rank(std::vector<TxFrame> frames) {
    std::stable_sort(frames.begin(), frames.end(), [](const TxFrame& a, const TxFrame& b) {
      return result_rank(a.bytes) < result_rank(b.bytes);
    });
    return frames;
  }

  // Entry 1: three workers, slots [4, 6); at the parent job 40, rank 2, slots from 20, port 3.
  JobSpec child_ = make_child_job(7, 3, 4, 2, 64, 40, 2, 20);
  JobSpec plain_ = make_job(8, 2, 10, 2, 64);
};

TEST_F(RtlTree, CsrsOfTheParentReadBack) {
  EXPECT_EQ(tb.read32(csr::kVersion), (1u << 16) | wire::kVersion);
  EXPECT_EQ(tb.read32(csr::kJobParentId), csr::kJobParentValid | 40u);
  EXPECT_EQ(tb.read32(csr::kJobParentRank), 2u);
  EXPECT_EQ(tb.read32(csr::kJobParentSlots), 20u);
  EXPECT_EQ(tb.read32(csr::kJobParentIp), kParentAddress.ip);
  EXPECT_EQ(tb.read32(csr::kJobParentUdpPort), 3u << 16 | kParentAddress.port);
  EXPECT_EQ(tb.read32(csr::kJobParentMacLo), 0x00C80001u);
  EXPECT_EQ(tb.read32(csr::kJobParentMacHi), 0x0200u);
  for (std::uint32_t reg :
       {csr::kJobParentId, csr::kJobParentRank, csr::kJobParentSlots, csr::kJobParentIp,
        csr::kJobParentUdpPort, csr::kJobParentMacLo, csr::kJobParentMacHi}) {
    tb.write32(reg, 0x5A5A0000u + reg);
    EXPECT_EQ(tb.read32(reg), 0x5A5A0000u + reg) << "register 0x" << std::hex << reg;
  }
}

TEST_F(RtlTree, TheSumGoesUpOnceAndTheParentsResultComesDown) {
  const auto out = complete(0, 40);
  ASSERT_EQ(out.size(), 1u) << "one frame, to the parent";
  EXPECT_EQ(tx(out)[0], up(0, 40));
  const Result r = decode_result(out[0]);
  EXPECT_EQ(r.port, kParentPort);
  EXPECT_EQ(r.header.type, wire::MsgType::kContribution);
  EXPECT_EQ(r.header.job_id, 40);
  EXPECT_EQ(r.header.rank, 2);
  EXPECT_EQ(r.header.slot, 20);
  EXPECT_TRUE(r.header.fresh);
  EXPECT_EQ(r.header.exponent, exponent(0, 0));
  EXPECT_EQ(r.address.ecn, 3);
  EXPECT_EQ(count(C::kSentToParent), 1u);
  EXPECT_EQ(count(C::kCompletions), 0u);

  // Two members retransmit in the same cycles: the sum goes up once for each.
  tb.push_frame(0, member_frame(0, 0, 40));
  tb.push_frame(1, member_frame(1, 0, 40));
  const auto again = settle();
  EXPECT_EQ(tx(again), (std::vector<TxFrame>{up(0, 40), up(0, 40)}));
  EXPECT_EQ(count(C::kResentToParent), 2u);

  // The parent's result: every member gets it, with the parent's values and exponent.
  tb.push_frame(kParentPort, result(0, 40, 1));
  EXPECT_EQ(by_rank(tx(settle())), multicast(0, 40, 3));
  EXPECT_EQ(count(C::kResultsFromParent), 1u);
  EXPECT_EQ(count(C::kCompletions), 1u);
  // Answered: a retransmission gets it by unicast, another copy of the result is a duplicate.
  tb.push_frame(2, member_frame(2, 0, 40));
  tb.push_frame(kParentPort, result(0, 40));
  const auto late = settle();
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(tx(late)[0], multicast(0, 40, 3)[2]);
  EXPECT_EQ(count(C::kDroppedDuplicate), 1u);
  // Next rounds, one of them on the same slot and set again (packet 4), a short one.
  complete(1, 40);
  tb.push_frame(kParentPort, result(1, 40));
  settle();
  complete(2, 40), complete(3, 40);
  EXPECT_EQ(tx(complete(4, 3)), std::vector{up(4, 3)});
  tb.push_frame(kParentPort, result(4, 3));
  EXPECT_EQ(by_rank(tx(settle())), multicast(4, 3, 3));
  expect_balanced();
}

TEST_F(RtlTree, ResultsThatMatchNoWaitingRoundAreDropped) {
  tb.push_frame(kParentPort, result(0, 16));  // no round
  settle();
  tb.push_frame(0, member_frame(0, 0, 16));
  settle();
  tb.push_frame(kParentPort, result(0, 16));  // a round in progress
  settle();
  EXPECT_EQ(count(C::kDroppedNoRound), 2u);
  tb.push_frame(1, member_frame(1, 0, 16, 1));
  tb.push_frame(2, member_frame(2, 0, 16, 2));
  settle();

  const wire::Header h = round_header(0, 16);
  const std::vector<std::uint32_t> v = total(0, 16);
  auto with = [&](auto change) {
    wire::Header x = h;
    change(x);
    return x;
  };
  JobSpec other_job = child_, other_rank = child_;
  other_job.parent->job_id = 41;
  other_rank.parent->rank = 1;
  const std::vector<std::pair<Bytes, C>> wrong = {
      {parent_result_frame(child_, h, v, 1, 0, Endpoint{0x0A00C802u, 40000}),
       C::kDroppedNotContribution},
      {parent_result_frame(child_, h, v, 1, 0, Endpoint{kParentAddress.ip, 40001}),
       C::kDroppedNotContribution},
      {parent_result_frame(child_, h, v, 1, 0, child_.workers[1].address),
       C::kDroppedNotContribution},
      {parent_result_frame(other_job, h, v, 1), C::kDroppedNotContribution},
      {parent_result_frame(other_rank, h, v, 1), C::kDroppedRankOutOfRange},
      {parent_result_frame(child_, with([](auto& x) { x.slot = 6; }), v, 1),
       C::kDroppedSlotOutOfRange},
      {parent_result_frame(child_, with([](auto& x) { x.slot = 3; }), v, 1),
       C::kDroppedSlotOutOfRange},
      {parent_result_frame(child_, h, std::vector<std::uint32_t>(65, 1), 1),
       C::kDroppedCountTooLargeForJob},
      {parent_result_frame(child_, with([](auto& x) { x.epoch = 1; }), v, 1),
       C::kDroppedStaleEpoch},
      {parent_result_frame(child_, with([](auto& x) { x.seq = 0xFFFFFFFFu; }), v, 1),
       C::kDroppedStale},
      {parent_result_frame(child_, with([](auto& x) { x.seq = 4; }), v, 1), C::kDroppedNoRound},
      {parent_result_frame(child_, h, std::vector<std::uint32_t>(15, 1), 1),
       C::kDroppedCountMismatch},
      {parent_result_frame(child_, with([](auto& x) { x.dtype = wire::DataType::kFp32; }), v, 1),
       C::kDroppedDtypeMismatch},
  };
  // One at a time, then four at a time (each its own group).
  for (const auto& [frame, reason] : wrong) {
    const std::uint64_t before = count(reason);
    tb.push_frame(kParentPort, frame);
    EXPECT_TRUE(settle().empty()) << csr::name(reason);
    EXPECT_EQ(count(reason), before + 1) << csr::name(reason);
  }
  for (std::size_t i = 0; i < wrong.size(); ++i)
    tb.push_frame(static_cast<unsigned>(i % kPorts), wrong[i].first);
  EXPECT_TRUE(settle().empty());
  EXPECT_EQ(count(C::kFramesOut), 1u) << "the sum to the parent, nothing else";
  tb.push_frame(kParentPort, result(0, 16, 2));
  EXPECT_EQ(by_rank(tx(settle())), multicast(0, 16, 3));
  expect_balanced();
}

// The parent's result in the same cycles as the members' retransmissions, on every port: each
// member ends up with the result (multicast, or unicast for a retransmission taken after it),
// and the RTL sends exactly what the model sends for the groups it formed.
TEST_F(RtlTree, AResultAmongRetransmissions) {
  for (std::uint32_t packet = 0; packet < 6; ++packet) {
    complete(packet, 20);
    for (std::uint16_t r = 0; r < 3; ++r) tb.push_frame(r, member_frame(r, packet, 20));
    tb.push_frame(kParentPort, result(packet, 20));
    const auto out = settle();
    std::vector<unsigned> got(3, 0);
    for (const auto& f : out) {
      const Result res = decode_result(f);
      if (res.header.type == wire::MsgType::kResult) {
        EXPECT_EQ(res.values, total(packet, 20));
        ++got[res.header.rank];
      }
    }
    for (std::uint16_t r = 0; r < 3; ++r) EXPECT_GE(got[r], 1u) << "packet " << packet;
  }
  expect_balanced();
}

TEST_F(RtlTree, Fp32AndBf16SumsGoUpAndComeDown) {
  // fp32: the three members in one group, summed by the adder tree.
  for (std::uint16_t r = 0; r < 3; ++r) {
    wire::Header h = contribution_header(child_, r, 0, 3, wire::DataType::kFp32);
    h.epoch = kEpoch;
    const std::vector<std::uint32_t> v = {bits(1.5f * (r + 1)), bits(r == 1 ? 1e30f : 0.25f),
                                          bits(r == 2 ? -1e30f : 1e-40f)};
    tb.push_frame(r, frame_from(child_.workers[r], encode_packet(h, v)));
  }
  const auto out = settle();
  ASSERT_EQ(out.size(), 1u);
  const Result r = decode_result(out[0]);
  EXPECT_EQ(r.header.dtype, wire::DataType::kFp32);
  EXPECT_EQ(r.port, kParentPort);
  wire::Header round = contribution_header(child_, 0, 0, 3, wire::DataType::kFp32);
  round.epoch = kEpoch;
  const std::vector<std::uint32_t> down = {bits(9.0f), 0x7FC00001u, bits(-0.0f)};
  tb.push_frame(kParentPort, parent_result_frame(child_, round, down, 3));
  round.exponent = 3;
  EXPECT_EQ(by_rank(tx(settle())), expected_multicast(child_, round, down));
  // bf16: 40 elements (two wire beats, three accumulator beats), rounded on the way up.
  for (std::uint16_t rank = 0; rank < 3; ++rank) {
    wire::Header h = contribution_header(child_, rank, 1, 40, wire::DataType::kBf16);
    h.epoch = kEpoch;
    std::vector<std::uint32_t> v(40);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<std::uint32_t>(0x3F80 + 7 * i + 13 * rank) & 0xFFFF;
    tb.push_frame(rank, frame_from(child_.workers[rank], encode_packet(h, v)));
  }
  const auto up16 = settle();
  ASSERT_EQ(up16.size(), 1u);
  EXPECT_EQ(decode_result(up16[0]).header.dtype, wire::DataType::kBf16);
  wire::Header round16 = contribution_header(child_, 0, 1, 40, wire::DataType::kBf16);
  round16.epoch = kEpoch;
  std::vector<std::uint32_t> down16(40);
  for (std::size_t i = 0; i < down16.size(); ++i)
    down16[i] = 0x4000 + static_cast<std::uint32_t>(i);
  tb.push_frame(kParentPort, parent_result_frame(child_, round16, down16, wire::kExponentNone));
  EXPECT_EQ(by_rank(tx(settle())), expected_multicast(child_, round16, down16));
}

// A parent that answers the sums it gets after a while, loses some, answers some twice; workers
// that follow the protocol over a network that loses and duplicates. Every worker gets every
// result (the parent's: the members' sum plus the parent's part), and the RTL sends exactly
// what the model sends for the groups it formed.
class ParentSim {
 public:
  ParentSim(const JobSpec& child, std::uint64_t seed, double loss, double duplicate)
      : child_(child), rng_(seed), loss_(loss), duplicate_(duplicate) {}

  static std::uint32_t offset(std::uint32_t seq, std::size_t i) {
    return 0x0BADF00Du * (seq + 1) + static_cast<std::uint32_t>(i);
  }

  void receive(const EgressFrame& f, std::uint64_t now) {
    const Result r = decode_result(f);
    EXPECT_EQ(f.port, kParentPort);
    EXPECT_EQ(r.header.type, wire::MsgType::kContribution);
    EXPECT_EQ(r.header.job_id, child_.parent->job_id);
    EXPECT_EQ(r.header.rank, child_.parent->rank);
    ++received;
    if (chance(loss_)) return;
    wire::Header h = r.header;  // the child's round, in its own terms
    h.job_id = child_.job_id;
    h.slot = static_cast<std::uint16_t>(child_.slot_base + (h.slot - child_.parent->slot_base));
    std::vector<std::uint32_t> v = r.values;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += offset(h.seq, i);
    const Bytes frame = parent_result_frame(child_, h, v, r.header.exponent);
    const int copies = chance(duplicate_) ? 2 : 1;
    for (int c = 0; c < copies; ++c) pending_.push_back({now + 50 + rng_() % 400, frame});
  }
  void transmit_due(sim::FpgaModel& tb) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->first <= tb.cycles()) {
        tb.push_frame(kParentPort, it->second);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  bool idle() const { return pending_.empty(); }
  std::uint64_t received = 0;

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  JobSpec child_;
  std::mt19937_64 rng_;
  double loss_, duplicate_;
  std::deque<std::pair<std::uint64_t, Bytes>> pending_;
};

TEST_F(RtlTree, ProtocolTrafficThroughAParentWithLoss) {
  for (DataType dtype : {DataType::kInt32, DataType::kFp32}) {
    SCOPED_TRACE(wire::to_string(dtype));
    const TrafficConfig cfg{.window = 2,
                            .packets = 48,
                            .dtype = dtype,
                            .max_count = 40,
                            .loss = 0.05,
                            .duplicate = 0.05,
                            .random_ports = true,
                            .ports = 3,
                            .timeout = 2500,
                            .seed = dtype == DataType::kInt32 ? 11u : 12u};
    install(1, child_);  // a new run on fresh slots
    Traffic t(tb, child_, cfg);
    ParentSim parent(child_, cfg.seed, 0.1, 0.1);
    std::vector<EgressFrame> all;
    const std::uint64_t end = tb.cycles() + 600000;
    while (!t.done() && tb.cycles() < end) {
      for (auto& f : tb.pop_egress()) {
        all.push_back(f);
        const Result r = decode_result(f);
        if (r.address.dst_ip == kParentAddress.ip)
          parent.receive(f, tb.cycles());
        else
          t.receive(f);
      }
      t.transmit_due();
      parent.transmit_due(tb);
      tb.step(1);
    }
    ASSERT_TRUE(t.done()) << "not every worker got every result";
    while (!parent.idle()) {
      parent.transmit_due(tb);
      tb.step(1);
    }
    ASSERT_TRUE(run_until_idle());
    for (auto& f : tb.pop_egress()) all.push_back(f);
    EXPECT_EQ(egress_difference(as_pairs(all), replay(model, tb.take_decisions())), "");
    expect_counters_match_model();
    EXPECT_EQ(tb.egress_protocol_errors(), 0u) << tb.last_protocol_error();
    expect_balanced();
    // Every worker has the parent's result: all the same, and for int32 the exact sum plus the
    // parent's part.
    for (std::uint32_t k = 0; k < cfg.packets; ++k) {
      for (std::size_t r = 1; r < child_.workers.size(); ++r)
        EXPECT_EQ(t.payload(r, k), t.payload(0, k)) << "packet " << k << " rank " << r;
      if (dtype == DataType::kInt32) {
        const auto sum = t.int32_sum(k);
        Bytes want(4 * sum.size());
        for (std::size_t i = 0; i < sum.size(); ++i)
          wire::store_be32(want.data() + 4 * i, sum[i] + ParentSim::offset(k, i));
        EXPECT_EQ(t.payload(0, k), want) << "packet " << k;
      }
    }
    EXPECT_GT(parent.received, cfg.packets);  // retransmissions sent sums up again
    EXPECT_GT(count(C::kResentToParent), 0u);
    EXPECT_EQ(count(C::kCompletions), count(C::kResultsFromParent));
  }
}

// ---- exact fp32 ------------------------------------------------------------------------------

// fp32 elements below 2^scale over 40 binades, a special now and then: rank r's of packet p.
std::vector<std::uint32_t> exact_values(std::uint16_t rank, std::uint32_t packet,
                                        std::uint16_t count, int scale) {
  std::vector<std::uint32_t> v(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t h = (0x01000193u * (rank + 3) * (packet + 1) + i * 0x9E3779B9u) ^ (i << 7);
    v[i] = bits(std::ldexp(float(std::int32_t(h % 2000001) - 1000000) / 1048576.0f,
                           scale - 1 - int(h >> 26) % 40));
  }
  if (count > 5 && rank == 1) v[5] = 0x7F800000u;  // +Inf
  return v;
}

// A child in a tree sums its workers' fp32_exact contributions as 64-bit lanes and sends them up
// unrounded (exact_lanes, two wire beats an accumulator beat); the parent's result, rounded once
// at the root, is stored and sent down as it is. Bit for bit the HLS model, frame by frame.
TEST_F(RtlTree, ExactSumsGoUpUnroundedAndTheParentsResultComesDown) {
  for (const std::uint16_t count : {std::uint16_t{64}, std::uint16_t{20}}) {
    SCOPED_TRACE(count);
    const std::uint32_t packet = count == 64 ? 0 : 1;
    const int scale = 3;
    wire::Header h[3];
    for (std::uint16_t r = 0; r < 3; ++r) {
      h[r] = header(r, packet, count, wire::DataType::kFp32Exact);
      h[r].exponent = exact::pack_exponents(scale, static_cast<std::int16_t>(-4 - r));
      tb.push_frame(r, frame_from(child_.workers[r],
                                  encode_packet(h[r], exact_values(r, packet, count, scale))));
    }
    const auto up = settle();
    ASSERT_EQ(up.size(), 1u);
    const wire::DecodedFrame d = wire::decode_frame(up[0].bytes, 0);
    ASSERT_TRUE(d);
    EXPECT_EQ(d.packet.header.dtype, wire::DataType::kExactLanes);
    EXPECT_EQ(d.packet.header.count, count);
    EXPECT_EQ(d.packet.header.exponent, exact::pack_exponents(scale, -4));
    for (std::size_t i = 0; i < count; ++i) {  // the reference's lanes, specials reserved
      exact::Lane want;
      for (std::uint16_t r = 0; r < 3; ++r)
        want = exact::add(want, exact::to_lane(from_bits(exact_values(r, packet, count, scale)[i]),
                                               static_cast<std::int16_t>(scale)));
      const std::byte* p = d.packet.payload.data() + 8 * i;
      EXPECT_EQ(static_cast<std::int64_t>(std::uint64_t{wire::load_be32(p)} << 32 |
                                          wire::load_be32(p + 4)),
                exact::to_wire(want))
          << "lane " << i;
    }
    // The parent's result: fp32 words as they are, one of them a NaN with a payload.
    wire::Header round = h[0];
    round.exponent = exact::pack_exponents(scale, -1);
    std::vector<std::uint32_t> words(count);
    for (std::uint32_t i = 0; i < count; ++i) words[i] = bits(float(i) * 0.25f - 3.0f);
    words[count - 1] = 0x7FC01234u;
    tb.push_frame(kParentPort, parent_result_frame(child_, round, words, round.exponent));
    const auto down = settle();
    ASSERT_EQ(down.size(), 3u);
    for (const auto& f : down) {
      const Result r = decode_result(f);
      EXPECT_EQ(r.header.dtype, wire::DataType::kFp32Exact);
      EXPECT_EQ(r.values, words);
    }
  }
  expect_balanced();
}

// As a parent: a child's exact_lanes (its unrounded sums) and a worker's fp32_exact join one
// round; an odd number of wire beats ends with a half beat. A contribution at another scale is
// dropped with a notice, and an element at or above the scale's power of two poisons its lane
// and is counted, as in the HLS model.
TEST_F(RtlTree, ExactLanesAndFp32ExactJoinOneRound) {
  const int scale = -2;
  for (const std::uint16_t count : {std::uint16_t{64}, std::uint16_t{20}}) {
    SCOPED_TRACE(count);
    const std::uint32_t packet = count == 64 ? 0 : 1;
    wire::Header lanes = contribution_header(plain_, 0, packet, count, wire::DataType::kExactLanes);
    lanes.exponent = exact::pack_exponents(scale, 3);
    Bytes payload(wire::kHeaderSize + 8 * count);
    ASSERT_TRUE(wire::encode_header(lanes, payload));
    for (std::uint32_t i = 0; i < count; ++i) {
      std::int64_t v = (std::int64_t{1} << 50) - std::int64_t{i} * 123456789;
      if (i == 3) v = INT64_MIN + 1;  // -Inf
      wire::store_be32(payload.data() + wire::kHeaderSize + 8 * i,
                       static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> 32));
      wire::store_be32(payload.data() + wire::kHeaderSize + 8 * i + 4,
                       static_cast<std::uint32_t>(v));
    }
    tb.push_frame(0, frame_from(plain_.workers[0], payload));
    EXPECT_TRUE(settle().empty());  // the child's lanes start the round
    wire::Header worker = contribution_header(plain_, 1, packet, count, wire::DataType::kFp32Exact);
    worker.exponent = exact::pack_exponents(scale, 5);
    auto values = exact_values(1, packet, count, scale);
    values[7] = bits(0.25f);  // = 2^scale: beyond the range
    // first at another scale: dropped, noticed
    wire::Header wrong = worker;
    wrong.exponent = exact::pack_exponents(scale + 1, 5);
    tb.push_frame(1, frame_from(plain_.workers[1], encode_packet(wrong, values)));
    const auto noticed = settle();  // the first drop of the reason from the rank: a notice
    ASSERT_EQ(noticed.size(), count == 64 ? 1u : 0u);
    for (const auto& f : noticed) {
      EXPECT_EQ(decode_result(f).header.type, wire::MsgType::kNotice);
      EXPECT_EQ(decode_result(f).header.rank, 1);
    }
    tb.push_frame(1, frame_from(plain_.workers[1], encode_packet(worker, values)));
    const auto results = settle();
    ASSERT_EQ(results.size(), 2u);
    const Result r = decode_result(results[0]);
    EXPECT_EQ(r.header.dtype, wire::DataType::kFp32Exact);
    EXPECT_EQ(r.header.exponent, exact::pack_exponents(scale, 5));
    EXPECT_EQ(r.values[3], 0xFF800000u);  // -Inf
    EXPECT_EQ(r.values[7], 0x7FC00000u);  // poisoned
  }
  EXPECT_EQ(count(C::kDroppedScaleMismatch), 2u);
  EXPECT_EQ(count(C::kExactOutOfRange), 2u);
  EXPECT_EQ(count(C::kNotices), 1u);
}

}  // namespace
}  // namespace netagg::rtltest

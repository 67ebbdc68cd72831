// SPDX-License-Identifier: Apache-2.0
// A worker's engines, one per tree (netagg/trees.hpp): results reach the engine of their job
// id, a datagram of no tree's job is counted unroutable and dropped (with one tree as with
// several), the pace is split by weight, and the deadline and progress are the running
// engines'.
#include "netagg/trees.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

EngineParams tree(std::uint16_t job, std::uint16_t slot_base) {
  EngineParams p;
  p.job_id = job;
  p.rank = 1;
  p.slot_base = slot_base;
  p.window = 2;
  p.epoch = 9;
  return p;
}

// Two packets of four int32 ones; results are copied out.
class Ones final : public PacketSource {
 public:
  std::uint64_t packet_count() const override { return 2; }
  void fill(std::uint64_t, wire::Header& h, std::span<std::byte> payload) override {
    h.dtype = wire::DataType::kInt32;
    h.count = 4;
    for (int i = 0; i < 4; ++i) wire::store_be32(payload.data() + 4 * i, 1);
  }
  void deliver(std::uint64_t p, const wire::Header&, std::span<const std::byte>) override {
    delivered.push_back(p);
  }
  std::vector<std::uint64_t> delivered;
};

// The result of the packet a contribution is, addressed back to its sender.
std::vector<std::byte> result_of(std::span<const std::byte> contribution) {
  const wire::Decoded d = wire::decode(contribution);
  wire::Header h = d.header;
  h.type = wire::MsgType::kResult;
  h.fresh = 0;
  std::vector<std::byte> out(h.packet_size());
  wire::encode_header(h, out);
  std::copy(d.payload.begin(), d.payload.end(), out.begin() + wire::kHeaderSize);
  return out;
}

TEST(TreeEngines, ResultsGoToTheEngineOfTheirJobAndOthersAreUnroutable) {
  for (const bool several : {false, true}) {
    std::vector<EngineParams> params{tree(7, 0)};
    if (several) params.push_back(tree(8, 2));
    TreeEngines trees(params, {}, 0);
    std::vector<Ones> sources(params.size());
    std::vector<PacketSource*> pointers;
    for (Ones& s : sources) pointers.push_back(&s);
    const TimePoint t0{};
    trees.start(pointers, t0);
    ASSERT_TRUE(trees.any_running());
    for (std::size_t k = 0; k < trees.size(); ++k) {
      ASSERT_EQ(trees[k].transmits().size(), 2u);
      std::vector<std::vector<std::byte>> results;
      for (const auto packet : trees[k].transmits()) results.push_back(result_of(packet));
      trees[k].clear_transmits();
      for (const auto& r : results) EXPECT_EQ(trees.on_packet(r, t0), k);
    }
    for (const Ones& s : sources) EXPECT_EQ(s.delivered, (std::vector<std::uint64_t>{0, 1}));
    EXPECT_FALSE(trees.any_running());
    EXPECT_FALSE(trees.next_deadline());
    // A result of another job, and a datagram too short to name one: nobody's.
    wire::Header h;
    h.type = wire::MsgType::kResult;
    h.job_id = 99;
    std::vector<std::byte> other(h.packet_size());
    wire::encode_header(h, other);
    EXPECT_FALSE(trees.on_packet(other, t0));
    EXPECT_FALSE(trees.on_packet(std::vector<std::byte>(3), t0));
    EXPECT_EQ(trees.unroutable(), 2u);
    EXPECT_EQ(trees.stats().unroutable, 2u);
    EXPECT_EQ(trees.stats().rejected, 0u) << "no engine saw them";
    EXPECT_EQ(trees.stats().results, 2 * params.size());
  }
}

TEST(TreeEngines, ThePaceIsSplitByWeightAndTheDeadlineIsTheEarliest) {
  TreeEngines trees({tree(7, 0), tree(8, 2)}, std::vector<std::uint32_t>{1, 3}, 8.0);
  EXPECT_DOUBLE_EQ(trees[0].params().pace_gbps, 2.0);
  EXPECT_DOUBLE_EQ(trees[1].params().pace_gbps, 6.0);
  Ones a, b;
  std::vector<PacketSource*> only_b{nullptr, &b};
  const TimePoint t0{};
  trees.start(only_b, t0);
  EXPECT_FALSE(trees.running(0));
  EXPECT_TRUE(trees.running(1));
  EXPECT_EQ(trees.next_deadline(), trees[1].next_deadline());
  EXPECT_EQ(trees.last_progress(), t0);
  EXPECT_THROW(TreeEngines({tree(7, 0), tree(7, 2)}, {}, 0), Error);  // one job, two trees
  EXPECT_THROW(TreeEngines({tree(7, 0)}, std::vector<std::uint32_t>{1, 2}, 0), Error);
}

}  // namespace
}  // namespace netagg

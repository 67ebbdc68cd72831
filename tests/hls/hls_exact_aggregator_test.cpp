// SPDX-License-Identifier: Apache-2.0
// Exact fp32 in the HLS aggregator (docs/exact-fp32.md): dtype fp32_exact converted to 64-bit
// lanes at the scale in the exponent's high byte, added as integers, rounded once on the way
// out; exact_lanes between aggregators of a tree. The sums are checked against the host's
// reference model (netagg/exact.hpp), which defines them, in every arrival order and grouping,
// and through a tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "fpga_test_util.hpp"
#include "fpga_tree_util.hpp"
#include "gradients.hpp"
#include "netagg/exact.hpp"

namespace netagg::fpga {
namespace {

using namespace netagg::fpga::testing;  // NOLINT
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Counter = csr::Counter;
using Model = ReferenceModel<>;

constexpr unsigned kWorkers = 6;
constexpr std::uint16_t kCount = 128;  // what a tree's exact_lanes upload holds

std::vector<std::uint32_t> to_bits(std::span<const float> x) {
  std::vector<std::uint32_t> out;
  for (float v : x) out.push_back(std::bit_cast<std::uint32_t>(v));
  return out;
}

// Every worker's elements (mixed scales, with zeros, an Inf and a NaN in some lanes) and what the
// aggregator must make of them: the reference's exact sum at the agreed scale.
struct Chunk {
  std::vector<std::vector<float>> x;
  std::int16_t scale;
  std::vector<std::uint32_t> sum;

  explicit Chunk(unsigned workers, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    x = netagg::testing::gradients(netagg::testing::Distribution::kMixedScales,
                                   static_cast<int>(workers), kCount, rng);
    for (auto& w : x) w[3] = 0.0f;  // a lane of zeros everywhere
    x[1][7] = -0.0f;
    x[0][9] = std::numeric_limits<float>::infinity();
    x[workers - 1][11] = std::numeric_limits<float>::quiet_NaN();
    scale = exact::kExponentNone;
    for (const auto& w : x) scale = std::max(scale, exact::block_exponent(w));
    std::vector<std::span<const float>> views(x.begin(), x.end());
    std::vector<float> s(kCount);
    exact::sum(views, s);
    sum = to_bits(s);
  }
};

// Rank r's contribution to packet `packet`: its elements at the chunk's scale, announcing
// `ahead` for the chunk a window ahead.
Bytes exact_frame(const JobSpec& job, std::uint16_t rank, std::uint32_t packet,
                  std::span<const float> x, std::int16_t scale, std::int16_t ahead,
                  std::uint16_t dst_port = wire::kUdpPort) {
  wire::Header h = contribution_header(job, rank, packet, static_cast<std::uint16_t>(x.size()),
                                       wire::DataType::kFp32Exact);
  h.exponent = exact::pack_exponents(scale, ahead);
  const auto bits = to_bits(x);
  return frame_from(job.workers.at(rank), encode_packet(h, bits), 0, dst_port);
}

std::int16_t ahead_of(std::uint16_t rank) { return static_cast<std::int16_t>(-30 + 4 * rank); }

class HlsExact : public ::testing::Test {
 protected:
  HlsExact() : job_(make_job(1, kWorkers, 0, 8, kCount)), fp32_job_(make_job(3, kWorkers, 16, 8)) {
    set_aggregator_address(bus_, kAggregator);
    program_job(bus_, job_, 0, kAggregator);
    program_job(bus_, fp32_job_, 2, kAggregator);
  }
  std::uint64_t count(Counter c) { return model_.counter(csr::index(c)); }

  // The chunk's frames taken in `order`, in groups of the given sizes (frames of one group
  // arrive in one cycle, on ports 0, 1, ...); returns the results.
  std::vector<Result> run(const Chunk& c, std::uint32_t packet, const std::vector<unsigned>& order,
                          const std::vector<unsigned>& groups) {
    std::vector<TxFrame> out;
    std::size_t next = 0;
    for (unsigned size : groups) {
      std::vector<RxFrame> group;
      for (unsigned port = 0; port < size && next < order.size(); ++port, ++next) {
        const auto r = static_cast<std::uint16_t>(order[next]);
        group.push_back({port, exact_frame(job_, r, packet, c.x[r], c.scale, ahead_of(r))});
      }
      const auto frames = model_.process_group(group);
      out.insert(out.end(), frames.begin(), frames.end());
    }
    return decode_all(out);
  }

  Model model_;
  ModelBus<Model> bus_{model_};
  JobSpec job_;
  JobSpec fp32_job_;  // the same workers through the fp32 adder trees
};

// Every order and grouping of the contributions gives the reference's bits, where fp32 adder
// trees give several (so the data is one on which order matters).
TEST_F(HlsExact, EveryArrivalOrderAndGroupingGivesTheReferenceBits) {
  const Chunk c(kWorkers, 11);
  std::mt19937_64 rng(5);
  std::vector<unsigned> order(kWorkers);
  for (unsigned i = 0; i < kWorkers; ++i) order[i] = i;
  const std::int16_t field = exact::pack_exponents(c.scale, ahead_of(kWorkers - 1));
  std::set<std::vector<std::uint32_t>> fp32_sums;
  for (std::uint32_t packet = 0; packet < 24; ++packet) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<unsigned> groups;
    for (unsigned left = kWorkers; left > 0;) {
      const unsigned g = std::min<unsigned>(left, 1 + static_cast<unsigned>(rng() % 4));
      groups.push_back(g);
      left -= g;
    }
    const auto results = run(c, packet, order, groups);
    ASSERT_EQ(results.size(), kWorkers) << "packet " << packet;
    for (const Result& r : results) {
      EXPECT_EQ(r.header.dtype, wire::DataType::kFp32Exact);
      EXPECT_EQ(r.header.exponent, field);
      EXPECT_EQ(r.values, c.sum) << "packet " << packet;
    }
    // The same order and grouping through the fp32 adder trees.
    std::vector<TxFrame> out;
    std::size_t next = 0;
    for (unsigned size : groups) {
      std::vector<RxFrame> group;
      for (unsigned port = 0; port < size; ++port, ++next) {
        const auto r = static_cast<std::uint16_t>(order[next]);
        group.push_back({port, contribution_frame(fp32_job_, r, packet, to_bits(c.x[r]),
                                                  wire::DataType::kFp32)});
      }
      const auto frames = model_.process_group(group);
      out.insert(out.end(), frames.begin(), frames.end());
    }
    fp32_sums.insert(decode_all(out).at(0).values);
  }
  EXPECT_GT(fp32_sums.size(), 1u) << "the fp32 adder trees gave one sum in every order";
  EXPECT_EQ(count(Counter::kExactOutOfRange), 0u);
}

// A contribution converted at another scale would add a wrong number: it is dropped, counted
// and answered with a notice; the round completes with the right one.
TEST_F(HlsExact, AContributionAtAnotherScaleIsDroppedAndNoticed) {
  const Chunk c(2, 12);
  job_ = make_job(2, 2, 8, 8, kCount);
  program_job(bus_, job_, 1, kAggregator);
  EXPECT_THAT(model_.process_frame(0, exact_frame(job_, 0, 0, c.x[0], c.scale, ahead_of(0))),
              IsEmpty());
  const Bytes wrong = exact_frame(job_, 1, 0, c.x[1], c.scale + 1, ahead_of(1));
  EXPECT_THAT(model_.process_frame(1, wrong),
              ElementsAre(expected_notice(1, wrong, wire::NoticeReason::kScaleMismatch)));
  EXPECT_EQ(count(Counter::kDroppedScaleMismatch), 1u);
  const auto results =
      decode_all(model_.process_frame(1, exact_frame(job_, 1, 0, c.x[1], c.scale, ahead_of(1))));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, c.sum);
}

// An element at or above the scale's power of two breaks the workers' agreement: its lane
// becomes NaN (never a wrong number) and it is counted; the other lanes are exact.
TEST_F(HlsExact, AnElementBeyondTheScalePoisonsItsLaneAndIsCounted) {
  job_ = make_job(2, 2, 8, 8, 4);
  program_job(bus_, job_, 1, kAggregator);
  const std::vector<float> a{1.0f, 4.0f, -3.5f, 0.25f};  // 4.0 = 2^2: beyond scale 2
  const std::vector<float> b{0.5f, 1.0f, 3.0f, -0.25f};
  model_.process_frame(0, exact_frame(job_, 0, 0, a, 2, exact::kExponentNone));
  const auto results =
      decode_all(model_.process_frame(1, exact_frame(job_, 1, 0, b, 2, exact::kExponentNone)));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values,
            (std::vector<std::uint32_t>{std::bit_cast<std::uint32_t>(1.5f), 0x7FC00000u,
                                        std::bit_cast<std::uint32_t>(-0.5f), 0u}));
  EXPECT_EQ(count(Counter::kExactOutOfRange), 1u);
}

// A design without exact fp32 drops both dtypes as unsupported, with a notice.
TEST(HlsExactUnsupported, WithoutTheFeatureBothDtypesAreDroppedWithANotice) {
  ReferenceModel<WithoutExactParams> model;
  ModelBus<ReferenceModel<WithoutExactParams>> bus(model);
  const JobSpec job = make_job(1, 2, 0, 8, kCount);
  program_job(bus, job, 0, kAggregator);
  EXPECT_EQ(model.csr_read(csr::kFeatures) & csr::kFeaturesExact, 0u);
  const std::vector<float> x{1.0f};
  const Bytes frame = exact_frame(job, 0, 0, x, 1, exact::kExponentNone);
  EXPECT_THAT(model.process_frame(0, frame),
              ElementsAre(expected_notice(0, frame, wire::NoticeReason::kUnsupportedDtype)));
  EXPECT_EQ(model.counter(csr::index(Counter::kDroppedUnsupportedDtype)), 1u);
  for (int set = 0; set < 2; ++set) EXPECT_FALSE(model.core().round_state(0, set).has_round);
}

// A two-level tree: a child aggregator with workers 0..2 sends its unrounded lanes up
// (exact_lanes) as rank 0 of the parent's job, whose ranks 1..3 are workers 3..5 sending
// fp32_exact; every worker gets the bits one aggregator gives all six.
TEST(HlsExactTree, ATreeGivesTheBitsOfOneAggregator) {
  constexpr std::uint16_t kParentJob = 2;
  const Chunk c(kWorkers, 13);
  const std::int16_t ahead = exact::kExponentNone;

  Model one;
  ModelBus<Model> one_bus(one);
  const JobSpec flat = make_job(1, kWorkers, 0, 8, kCount);
  program_job(one_bus, flat, 0, kAggregator);
  std::vector<Result> single;
  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    auto out =
        decode_all(one.process_frame(r % 4, exact_frame(flat, r, 0, c.x[r], c.scale, ahead)));
    single.insert(single.end(), out.begin(), out.end());
  }
  ASSERT_EQ(single.size(), kWorkers);
  EXPECT_EQ(single[0].values, c.sum);

  Model child, parent;
  ModelBus<Model> child_bus(child), parent_bus(parent);
  const JobSpec child_job = make_child_job(1, 3, 0, 8, kCount, kParentJob, 0, 0);
  program_job(child_bus, child_job, 0, kAggregator);
  JobSpec parent_job = make_job(kParentJob, 4, 0, 8, kCount);
  parent_job.workers[0].address = {kAggIp, wire::kUdpPort};
  parent_job.workers[0].mac = kAggMac;
  const AggregatorAddress parent_address{kParentMac, kParentAddress.ip, kParentAddress.port};
  program_job(parent_bus, parent_job, 0, parent_address);

  // Workers 0..2 to the child, whose sum goes up unrounded.
  std::vector<TxFrame> up;
  for (std::uint16_t r = 0; r < 3; ++r) {
    auto out = child.process_frame(r, exact_frame(child_job, r, 0, c.x[r], c.scale, ahead));
    up.insert(up.end(), out.begin(), out.end());
  }
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].port, kParentPort);
  const wire::DecodedFrame lanes = wire::decode_frame(up[0].bytes, 0);
  ASSERT_TRUE(lanes);
  EXPECT_EQ(lanes.packet.header.dtype, wire::DataType::kExactLanes);
  EXPECT_EQ(lanes.packet.header.count, kCount);
  EXPECT_EQ(exact::scale_code(lanes.packet.header.exponent), exact::to_code(c.scale));
  // The upload is the lanes the reference adds for workers 0..2, specials as reserved values.
  for (std::size_t i = 0; i < kCount; ++i) {
    exact::Lane want;
    for (std::uint16_t r = 0; r < 3; ++r)
      want = exact::add(want, exact::to_lane(c.x[r][i], c.scale));
    const std::byte* p = lanes.packet.payload.data() + 8 * i;
    const auto got =
        static_cast<std::int64_t>(std::uint64_t{wire::load_be32(p)} << 32 | wire::load_be32(p + 4));
    EXPECT_EQ(got, exact::to_wire(want)) << "lane " << i;
  }

  // The parent: the child's lanes first, then workers 3..5 (ranks 1..3 there).
  std::vector<TxFrame> down = parent.process_frame(0, up[0].bytes);
  EXPECT_THAT(down, IsEmpty());
  for (std::uint16_t r = 1; r < 4; ++r) {
    auto out = parent.process_frame(
        r, exact_frame(parent_job, r, 0, c.x[2 + r], c.scale, ahead, kParentAddress.port));
    down.insert(down.end(), out.begin(), out.end());
  }
  ASSERT_EQ(down.size(), 4u);
  std::vector<Result> tree;
  for (const TxFrame& f : down) {
    const Result r = decode_result(f);
    if (r.header.rank != 0) {  // workers 3..5
      tree.push_back(r);
      continue;
    }
    auto out = decode_all(child.process_frame(kParentPort, f.bytes));  // to workers 0..2
    tree.insert(tree.end(), out.begin(), out.end());
  }
  ASSERT_EQ(tree.size(), kWorkers);
  for (const Result& r : tree) {
    EXPECT_EQ(r.header.dtype, wire::DataType::kFp32Exact);
    EXPECT_EQ(r.header.exponent, single[0].header.exponent);
    EXPECT_EQ(r.values, single[0].values);
  }
}

}  // namespace
}  // namespace netagg::fpga

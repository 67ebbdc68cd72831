// SPDX-License-Identifier: Apache-2.0
// The RTL aggregator built with other parameters than the defaults -- three ports (an adder
// tree with an odd leaf), 16 slots of 4 beats, a 2-stage fp32 adder, three ingress frames per
// port, a result queue of 2 and egress FIFOs of 2 beats -- against the HLS reference model with
// the same parameters (Params<3, 16, 4, 4, 32>). The Verilated model is Vnetagg_aggregator_v
// (library netagg_rtl_variant, sim/fpga/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "../hls/fpga_tree_util.hpp"
#include "Vnetagg_aggregator_v.h"
#include "aggregator_rtl_fixture.hpp"
#include "aggregator_traffic.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"

namespace netagg::rtltest {
namespace {

constexpr unsigned kUsedPorts = 3;
constexpr unsigned kVariantElements = 16 * 4;
using VariantParams = fpga::Params<3, 16, 4, 4, 32>;

class Variant : public RtlAgainstModel<Vnetagg_aggregator_v, kUsedPorts, VariantParams> {
 protected:
  Variant() : RtlAgainstModel(21) {}

  void run_traffic(const JobSpec& job, const TrafficConfig& cfg) {
    Traffic t(tb, job, cfg);
    ASSERT_TRUE(t.run(600000)) << "not every worker got every result";
    ASSERT_TRUE(run_until_idle());
    for (auto& f : tb.pop_egress()) t.egress.push_back(f);
    expect_same_as_model(t.egress);
    expect_results_exact(t, job, cfg);
  }
};

TEST_F(Variant, FeaturesDescribeTheParameters) {
  EXPECT_EQ(tb.read32(csr::kFeatures), 3u | 0x10u | 0x20u | (4u << 8) | (4u << 16) | (4u << 24));
  EXPECT_EQ(tb.read32(csr::kFeatures), model.csr_read(csr::kFeatures));
  // the fourth port of the top is not used: it takes nothing
  EXPECT_FALSE(tb.ingress_ready(3));
  EXPECT_FALSE(tb.egress_valid(3));
}

// Every subset of the three ports as one group: ((p0 + p1) + p2), a missing port skipped.
TEST_F(Variant, OddTreeEverySubset) {
  const JobSpec job = make_job(1, 3, 0, 16, kVariantElements, kUsedPorts);
  install(0, job);
  const std::uint32_t vals[3] = {0x3F800000, 0x33800000, 0xB3800001};
  std::uint32_t seq = 0;
  for (unsigned mask = 1; mask < 8; ++mask, ++seq) {
    const auto slot = static_cast<std::uint16_t>(seq);
    for (unsigned p = 0; p < 3; ++p)
      if (mask >> p & 1)
        tb.push_frame(p, contribution_frame(job, {.job = 1,
                                                  .rank = std::uint16_t(p),
                                                  .slot = slot,
                                                  .seq = seq,
                                                  .dtype = DataType::kFp32,
                                                  .values = {vals[p], vals[2 - p]}}));
    ASSERT_TRUE(run_until_idle());
    for (unsigned p = 0; p < 3; ++p)
      if (!(mask >> p & 1)) {
        tb.push_frame(p, contribution_frame(job, {.job = 1,
                                                  .rank = std::uint16_t(p),
                                                  .slot = slot,
                                                  .seq = seq,
                                                  .dtype = DataType::kFp32,
                                                  .values = {vals[p], vals[2 - p]}}));
        ASSERT_TRUE(run_until_idle());
      }
    const auto egress = tb.pop_egress();
    ASSERT_EQ(egress.size(), 3u);
    if (mask == 7) {
      const Result r = decode_result(egress[0]);
      EXPECT_EQ(r.values[0], host_add(host_add(vals[0], vals[1]), vals[2]));
      EXPECT_EQ(r.values[1], host_add(host_add(vals[2], vals[1]), vals[0]));
    }
    expect_same_as_model(egress);
  }
}

TEST_F(Variant, Int32LossDuplicatesBackpressure) {
  const JobSpec job = make_job(1, 5, 2, 6, kVariantElements, kUsedPorts);
  install(0, job);
  tb.set_random_egress_ready(0.5);
  tb.set_ingress_gaps(0.2);
  run_traffic(job, {.window = 6,
                    .packets = 30,
                    .max_count = 64,
                    .loss = 0.04,
                    .duplicate = 0.05,
                    .random_ports = true,
                    .ports = kUsedPorts,
                    .timeout = 3000,
                    .seed = 31});
  EXPECT_EQ(count(C::kDroppedCountTooLargeForJob), 0u);
}

TEST_F(Variant, Fp32AndBf16WithLoss) {
  const JobSpec a = make_job(1, 3, 0, 4, kVariantElements, kUsedPorts);
  const JobSpec b = make_job(2, 4, 8, 8, kVariantElements, kUsedPorts);
  install(0, a);
  install(3, b);
  run_traffic(a, {.window = 4,
                  .packets = 24,
                  .dtype = DataType::kFp32,
                  .max_count = 64,
                  .loss = 0.04,
                  .duplicate = 0.04,
                  .ports = kUsedPorts,
                  .timeout = 3000,
                  .seed = 32});
  run_traffic(b, {.window = 8,
                  .packets = 24,
                  .dtype = DataType::kBf16,
                  .max_count = 64,
                  .loss = 0.04,
                  .duplicate = 0.04,
                  .ports = kUsedPorts,
                  .timeout = 3000,
                  .seed = 33});
}

TEST_F(Variant, SlotCapacityIsLanesTimesMaxBeats) {
  // The job allows more than a slot holds (the driver refuses it): the slot's capacity decides.
  const JobSpec job = make_job(1, 1, 0, 16, 1024, kUsedPorts);
  install_unchecked(0, job);
  for (DataType dtype : {DataType::kInt32, DataType::kBf16})
    for (unsigned n : {64u, 65u}) {
      const auto slot = static_cast<std::uint16_t>((dtype == DataType::kBf16 ? 8 : 0) + n - 64);
      tb.push_frame(0, contribution_frame(job, {.job = 1,
                                                .rank = 0,
                                                .slot = slot,
                                                .seq = n,
                                                .dtype = dtype,
                                                .values = std::vector<std::uint32_t>(n, 1)}));
      ASSERT_TRUE(run_until_idle());
    }
  expect_same_as_model(tb.pop_egress());
  EXPECT_EQ(count(C::kCompletions), 2u);
  EXPECT_EQ(count(C::kDroppedCountTooLargeForJob), 2u);
}

// Three ports of back-to-back 5-beat packets (64 fp32 elements, a full slot) to the same slots
// through a result queue of 2 and egress FIFOs of 2: the rounds wait for the queue (ingress
// stalls), nothing is lost or sent twice.
TEST_F(Variant, FullLoadWithSmallQueues) {
  const JobSpec job = make_job(1, 3, 0, 8, kVariantElements, kUsedPorts);
  install(0, job);
  constexpr std::uint32_t kPackets = 48;
  std::mt19937 rng(5);
  for (std::uint32_t p = 0; p < kPackets; ++p)
    for (std::uint16_t r = 0; r < 3; ++r) {
      Contribution c{.job = 1,
                     .rank = r,
                     .slot = std::uint16_t(p % 8),
                     .set = std::uint8_t((p / 8) % 2),
                     .seq = p,
                     .dtype = DataType::kFp32};
      for (unsigned i = 0; i < kVariantElements; ++i) c.values.push_back(bits(float(rng() % 512)));
      tb.push_frame(r, contribution_frame(job, c));
    }
  ASSERT_TRUE(run_until_idle());
  for (unsigned p = 0; p < kUsedPorts; ++p) EXPECT_EQ(tb.ingress_beats(p), kPackets * 5);
  const auto egress = tb.pop_egress();
  EXPECT_EQ(egress.size(), 3u * kPackets);
  expect_same_as_model(egress);
  EXPECT_EQ(count(C::kCompletions), kPackets);
}

// Trees with these parameters: a child job whose parent is reached on port 2 (a sum up, two
// retransmissions in one group, the parent's result down), then the same job stored with a port
// the design does not have (3: port 0).
TEST_F(Variant, AChildsSumGoesUpAndTheParentsResultComesDown) {
  JobSpec child = make_child_job(6, 3, 2, 2, kVariantElements, 60, 1, 8);
  child.parent->switch_port = 2;
  for (const std::uint16_t stored_port : {2, 3}) {
    child.parent->switch_port = stored_port;
    install_unchecked(1, child);
    const auto contribution = [&](std::uint16_t rank) {
      return Contribution{.job = 6,
                          .rank = rank,
                          .slot = 3,
                          .set = 1,
                          .seq = 3,
                          .values = {rank + 1u, 100u * rank, 0xFFFFFFFFu, 7u, 9u}};
    };
    for (std::uint16_t r = 0; r < 3; ++r)
      tb.push_frame(r, contribution_frame(child, contribution(r)));
    ASSERT_TRUE(run_until_idle());
    auto up = tb.pop_egress();
    expect_same_as_model(up);
    ASSERT_EQ(up.size(), 1u);
    const unsigned port = stored_port < kUsedPorts ? stored_port : 0;
    EXPECT_EQ(up[0].port, port);
    wire::Header round = contribution_header(child, 0, 3, 5);
    round.set = 1;
    round.slot = 3;
    const std::vector<std::uint32_t> sum = {6, 300, 0xFFFFFFFDu, 21, 27};
    EXPECT_EQ(up[0].bytes, expected_to_parent(child, round, sum).bytes);
    for (std::uint16_t r = 0; r < 2; ++r)
      tb.push_frame(r, contribution_frame(child, contribution(r)));
    ASSERT_TRUE(run_until_idle());
    const auto again = tb.pop_egress();
    expect_same_as_model(again);
    EXPECT_EQ(again.size(), 2u);
    const std::vector<std::uint32_t> total = {1, 2, 3, 4, 5};
    tb.push_frame(port, parent_result_frame(child, round, total, 9));
    ASSERT_TRUE(run_until_idle());
    const auto down = tb.pop_egress();
    expect_same_as_model(down);
    ASSERT_EQ(down.size(), 3u);
    for (const auto& f : down) EXPECT_EQ(decode_result(f).values, total);
  }
  EXPECT_EQ(count(C::kSentToParent), 2u);
  EXPECT_EQ(count(C::kResentToParent), 4u);
  EXPECT_EQ(count(C::kResultsFromParent), 2u);
}

}  // namespace
}  // namespace netagg::rtltest

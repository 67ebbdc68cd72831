// SPDX-License-Identifier: Apache-2.0
// The switch model on the shared golden vectors (tests/vectors/wire): every malformed packet is
// dropped and counted under the decoder's reason without touching a register, and every valid
// contribution is taken, by a job whose table matches the vector, into the slot and set it names.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "netagg/wire.hpp"
#include "switch_model.hpp"
#include "vectors.hpp"

namespace netagg::sim {
namespace {

using netagg::testing::load_vectors;
using netagg::testing::Vector;
using netagg::testing::vectors_dir;

std::vector<Vector> packet_vectors() {
  std::vector<Vector> out;
  for (auto& v : load_vectors(vectors_dir() / "wire"))
    if (v.at("layer") == "packet") out.push_back(v);
  return out;
}

// A job that accepts the vector's contribution: its job id, a slot range that holds its slot,
// enough workers that its rank exists and the round stays open after it.
JobSpec job_for(const Vector& v) {
  const auto rank = static_cast<std::uint16_t>(v.integer("rank"));
  const auto slot = static_cast<std::uint16_t>(v.integer("slot"));
  const std::uint16_t base = slot & ~std::uint16_t{7};
  const auto workers = static_cast<std::uint16_t>(std::max(rank + 1, 2));
  return make_local_job(static_cast<std::uint16_t>(v.integer("job_id")), workers, 42000, base, 8,
                        1024, Endpoint::parse("127.0.0.1:20033"));
}

class SwitchOnVector : public ::testing::TestWithParam<Vector> {};

TEST_P(SwitchOnVector, MalformedIsCountedValidIsAggregated) {
  const Vector& v = GetParam();
  CollectingSink sink;
  if (v.at("expect") != "ok") {
    SwitchModel model(8, 1024);
    model.add_job(make_local_job(1, 2, 42000, 0, 8, 1024, Endpoint::parse("127.0.0.1:20033")));
    const auto before = model.registers(0, 0);
    const auto outcome = model.process(Endpoint::parse("127.0.0.1:42000"), v.bytes, sink);
    EXPECT_EQ(outcome.action, Action::kDropped);
    EXPECT_EQ(wire::error_id(outcome.malformed), v.at("expect"));
    std::uint64_t malformed = 0;
    for (std::size_t e = 0; e < wire::kErrorCount; ++e)
      malformed += model.counters().malformed_by(wire::Error(e));
    EXPECT_EQ(malformed, 1u);
    EXPECT_TRUE(sink.packets.empty());
    EXPECT_EQ(model.registers(0, 0).has_round, before.has_round);
    return;
  }
  const JobSpec job = job_for(v);
  SwitchModel model(job.slot_base + job.slot_count, 1024);  // no larger than the vector needs
  model.add_job(job);
  const auto rank = static_cast<std::size_t>(v.integer("rank"));
  const auto slot = static_cast<std::size_t>(v.integer("slot"));
  const auto set = static_cast<unsigned>(v.integer("set"));
  const auto outcome = model.process(job.workers[rank].address, v.bytes, sink);
  const bool contribution = v.at("type") == "contribution";
  const bool int32 = v.at("dtype") == "int32";
  if (!contribution || !int32) {
    // Results are not for a switch to take; fp32/bf16 need the FPGA aggregator.
    EXPECT_EQ(outcome.action, Action::kDropped);
    EXPECT_EQ(outcome.reason,
              contribution ? DropReason::kUnsupportedDtype : DropReason::kNotContribution);
    EXPECT_FALSE(model.registers(slot, set).has_round);
    return;
  }
  if (v.integer("recovery") != 0) {  // a recovery copy never starts a round
    EXPECT_EQ(outcome.action, Action::kDropped);
    EXPECT_EQ(outcome.reason, DropReason::kNoRound);
    EXPECT_FALSE(model.registers(slot, set).has_round);
    return;
  }
  EXPECT_EQ(outcome.action, Action::kAggregated);
  const auto& regs = model.registers(slot, set);
  EXPECT_TRUE(regs.has_round);
  EXPECT_EQ(regs.seq, static_cast<std::uint32_t>(v.integer("seq")));
  EXPECT_EQ(regs.epoch, static_cast<std::uint32_t>(v.integer("epoch")));
  EXPECT_EQ(regs.count, v.integer("count"));
  EXPECT_EQ(regs.exponent, v.integer("exponent"));
  EXPECT_EQ(regs.bitmap, 1u << rank);
  // The values registers hold the payload as the vector lists it.
  std::istringstream values(v.get("values").value_or(""));
  const auto lanes = model.values(slot, set);
  std::int64_t want;
  for (std::size_t i = 0; values >> want; ++i)
    EXPECT_EQ(lanes[i], static_cast<std::int32_t>(want)) << i;
}

INSTANTIATE_TEST_SUITE_P(Vectors, SwitchOnVector, ::testing::ValuesIn(packet_vectors()),
                         [](const auto& info) { return info.param.at("name"); });

}  // namespace
}  // namespace netagg::sim

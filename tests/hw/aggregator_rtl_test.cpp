// SPDX-License-Identifier: Apache-2.0
// The hand-written SystemVerilog aggregator (hw/rtl/, top netagg_aggregator) in Verilator,
// against docs/fpga-aggregator.md and, bit for bit, against the HLS reference model (hls/): every
// test replays the frames the RTL took, in the groups it took them, on the model and compares
// egress frames and counters (settle_and_compare), on top of its own checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vnetagg_aggregator.h"
#include "aggregator_rtl_fixture.hpp"
#include "aggregator_traffic.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"
#include "vectors.hpp"

namespace netagg::rtltest {
namespace {

using wire::DataType;

// The default parameters (hw/rtl/netagg_pkg.sv, the spec's table).
constexpr unsigned kPorts = 4;
constexpr unsigned kSlots = 64;

// ---- independent arithmetic (neither the RTL's nor the model's code) ------------------------

std::uint32_t bf16_widen(std::uint32_t h) { return h << 16; }

std::vector<std::uint32_t> ints(std::initializer_list<std::int32_t> v) {
  std::vector<std::uint32_t> out;
  for (std::int32_t x : v) out.push_back(static_cast<std::uint32_t>(x));
  return out;
}

// ---- fixture -------------------------------------------------------------------------------

// A fresh RTL and reference model, both programmed the same way.
class Rtl : public RtlAgainstModel<Vnetagg_aggregator, kPorts, fpga::DefaultParams> {
 protected:
  Rtl() : RtlAgainstModel(1) {}

  // frames_in = aggregated + results_resent + every drop (once nothing is in flight).
  void expect_balanced() {
    std::uint64_t drops = 0;
    for (unsigned i = csr::index(C::kMalformedTruncated); i <= csr::index(C::kDroppedNoRound); ++i)
      drops += counter(i);
    EXPECT_EQ(count(C::kFramesIn), count(C::kAggregated) + count(C::kResultsResent) + drops);
  }
  // Runs until idle, replays the RTL's decisions on the model and compares egress frames and
  // counters. Returns the RTL's egress frames.
  std::vector<EgressFrame> settle_and_compare() {
    EXPECT_TRUE(run_until_idle());
    auto egress = tb.pop_egress();
    expect_same_as_model(egress);
    return egress;
  }
  // The result frames of settle_and_compare(); the notices among its frames go to notices_
  // (compared with the model's like every frame).
  std::vector<Result> settle() {
    std::vector<Result> results;
    notices_.clear();
    for (Result& r : decode_all(settle_and_compare()))
      (r.header.type == wire::MsgType::kNotice ? notices_ : results).push_back(std::move(r));
    return results;
  }
  // The reasons of the notices the last settle() saw, and for a duplicate its waiting ranks.
  std::vector<std::pair<wire::NoticeReason, std::uint32_t>> notices() const {
    std::vector<std::pair<wire::NoticeReason, std::uint32_t>> out;
    for (const Result& n : notices_)
      out.emplace_back(static_cast<wire::NoticeReason>(n.values.at(0)),
                       n.values.size() > 1 ? n.values[1] : 0u);
    return out;
  }
  // One contribution on its worker's port, alone; the results it caused.
  std::vector<Result> send(const JobSpec& job, const Contribution& c) {
    tb.push_frame(c.rank % kPorts, contribution_frame(job, c));
    return settle();
  }
  // Contributions on ports 0, 1, 2, ... in the same cycles (one group if they meet).
  std::vector<Result> send_together(const JobSpec& job, const std::vector<Contribution>& cs) {
    for (std::size_t i = 0; i < cs.size(); ++i)
      tb.push_frame(static_cast<unsigned>(i), contribution_frame(job, cs[i]));
    return settle();
  }

  std::vector<Result> notices_;
};

// ---- CSRs ----------------------------------------------------------------------------------

TEST_F(Rtl, CsrIdentityAndReadback) {
  EXPECT_EQ(tb.read32(csr::kVersion), (1u << 16) | wire::kVersion);
  EXPECT_EQ(tb.read32(csr::kFeatures), 4u | 0x10u | 0x20u | (8u << 8) | (6u << 16) | (16u << 24));
  EXPECT_EQ(tb.read32(csr::kFeatures), model.csr_read(csr::kFeatures));
  EXPECT_EQ(tb.read32(csr::kVersion), model.csr_read(csr::kVersion));
  EXPECT_EQ(tb.read32(csr::kAggUdpPort), wire::kUdpPort);
  tb.write32(csr::kJobSlots, 0x12345678);
  EXPECT_EQ(tb.read32(csr::kJobSlots), 0x12345678u);
  tb.write32(csr::kJobSlots, 0xAABBCCDD, 0b0101);  // byte strobes
  EXPECT_EQ(tb.read32(csr::kJobSlots), 0x12BB56DDu);
  tb.write32(csr::kVersion, 0);  // read-only: ignored
  EXPECT_EQ(tb.read32(csr::kVersion), (1u << 16) | wire::kVersion);
  EXPECT_EQ(tb.read32(0xFFC), 0u);  // unmapped
  EXPECT_EQ(tb.read32(csr::kStatus), 0u);
  for (std::uint32_t reg : {csr::kAggMacLo, csr::kAggMacHi, csr::kAggIp, csr::kJobIndex,
                            csr::kWorkerIp, csr::kWorkerUdpPort, csr::kCounterIndex}) {
    tb.write32(reg, 0x5A5A0000u + reg);
    EXPECT_EQ(tb.read32(reg), 0x5A5A0000u + reg) << "register 0x" << std::hex << reg;
  }
}

// JOB_ENTRY_* read the entry JOB_INDEX selects as stored, as the reference model does: every
// register of every entry (and beyond the table) after each change of the table, while traffic
// to another job runs through the datapath.
TEST_F(Rtl, JobTableReadsBack) {
  const std::uint32_t registers[] = {csr::kJobEntryId, csr::kJobEntryWorkers, csr::kJobEntrySlots,
                                     csr::kJobEntryElements, csr::kJobEntryParentId};
  std::vector<fpga::CsrBus*> both = {&tb, &model_bus};
  const auto expect_same_table = [&](const std::string& when) {
    for (std::uint32_t e : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 0x80000003u}) {
      tb.write32(csr::kJobIndex, e);
      model.csr_write(csr::kJobIndex, e);
      for (std::uint32_t r : registers)
        EXPECT_EQ(tb.read32(r), model.csr_read(r))
            << when << ": entry " << e << ", register 0x" << std::hex << r;
    }
  };
  EXPECT_EQ(read_device_info(tb).job_table_readback, true);
  expect_same_table("power-on");
  tb.write32(csr::kJobIndex, 2);
  EXPECT_EQ(tb.read32(csr::kJobEntryId), 0u);

  const JobSpec a = make_job(5, 2, 0, 4, 16);
  JobSpec child = make_job(7, 3, 8, 2, 64);
  child.parent = ParentSpec{{0x0A00C801, 40000}, 40, 2, 20, std::nullopt, std::nullopt};
  install(0, a);
  install(3, child);
  expect_same_table("two jobs");
  tb.write32(csr::kJobIndex, 3);
  EXPECT_EQ(tb.read32(csr::kJobEntryId), csr::kJobEntryValid | 7);
  EXPECT_EQ(tb.read32(csr::kJobEntryWorkers), 3u);
  EXPECT_EQ(tb.read32(csr::kJobEntrySlots), 2u << 16 | 8);
  EXPECT_EQ(tb.read32(csr::kJobEntryElements), 64u);
  EXPECT_EQ(tb.read32(csr::kJobEntryParentId), csr::kJobEntryHasParent | 40);
  // JOB_INDEX is read at once: the read right after its write shows the new entry.
  tb.write32(csr::kJobIndex, 0);
  EXPECT_EQ(tb.read32(csr::kJobEntryId), csr::kJobEntryValid | 5);
  EXPECT_EQ(tb.read32(csr::kJobEntryParentId), 0u);

  // A read between the frames of a round, and the staging registers rewritten: the entry is
  // what was stored.
  tb.push_frame(
      0, contribution_frame(a, {.job = 5, .rank = 0, .slot = 1, .seq = 1, .values = ints({4})}));
  tb.step(3);
  for (fpga::CsrBus* bus : both) {
    bus->write32(csr::kJobId, csr::kJobIdValid | 9);
    bus->write32(csr::kJobSlots, 1u << 16 | 60);
  }
  EXPECT_EQ(tb.read32(csr::kJobEntryId), csr::kJobEntryValid | 5);
  EXPECT_EQ(tb.read32(csr::kJobEntrySlots), 4u << 16);
  const auto results = send(a, {.job = 5, .rank = 1, .slot = 1, .seq = 1, .values = ints({6})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({10}));

  // Stored as not valid, removed, a soft reset.
  for (fpga::CsrBus* bus : both) {
    bus->write32(csr::kJobIndex, 0);
    bus->write32(csr::kJobId, csr::kJobIdValid | 5);
    bus->write32(csr::kJobWorkers, 33);
    commit(*bus, Command::kStoreJob);
  }
  expect_same_table("entry 0 stored as not valid");
  tb.write32(csr::kJobIndex, 0);
  EXPECT_EQ(tb.read32(csr::kJobEntryId), 0u);
  for (fpga::CsrBus* bus : both) remove_job(*bus, 3);
  expect_same_table("entry 3 removed");
  tb.write32(csr::kJobIndex, 3);
  EXPECT_EQ(tb.read32(csr::kJobEntrySlots), 0u);
  install(6, make_job(8, 2, 16, 2, 16));
  expect_same_table("entry 6 stored");
  for (fpga::CsrBus* bus : both) soft_reset(*bus);
  expect_same_table("soft reset");
  tb.write32(csr::kJobIndex, 6);
  EXPECT_EQ(tb.read32(csr::kJobEntryId), 0u);
}

TEST_F(Rtl, CountersLatchAndClear) {
  const JobSpec job = make_job(1, 2, 0, 4);
  install(0, job);
  send(job, {.job = 1, .rank = 0, .slot = 1, .seq = 1, .values = ints({1})});
  send(job, {.job = 9, .rank = 0, .slot = 1, .seq = 1, .values = ints({1})});  // unknown job
  tb.write32(csr::kCounterIndex, csr::index(C::kFramesIn));
  EXPECT_EQ(tb.read32(csr::kCounterLo), 2u);
  // Another frame; COUNTER_HI still shows the value latched with LO, a new LO read the new one.
  tb.push_frame(
      0, contribution_frame(job, {.job = 9, .rank = 0, .slot = 1, .seq = 1, .values = ints({1})}));
  ASSERT_TRUE(run_until_idle());
  EXPECT_EQ(tb.read32(csr::kCounterHi), 0u);
  EXPECT_EQ(tb.read32(csr::kCounterLo), 3u);
  tb.write32(csr::kCounterIndex, 200);  // no such counter
  EXPECT_EQ(tb.read32(csr::kCounterLo), 0u);
  EXPECT_EQ(count(C::kDroppedUnknownJob), 2u);
  replay(model, tb.take_decisions());
  clear_counters(tb);
  clear_counters(model_bus);
  for (unsigned i = 0; i < csr::kCounterCount; ++i) EXPECT_EQ(counter(i), 0u) << i;
  // The job survives a counter clear: rank 1 completes the round rank 0 started.
  const auto results = send(job, {.job = 1, .rank = 1, .slot = 1, .seq = 1, .values = ints({2})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({3}));
}

// ---- golden vectors ------------------------------------------------------------------------

// Every frame and packet of tests/vectors/wire/ on a fresh slot state: counted under the
// vector's reason (malformed ones) or taken as the job table says (valid ones, with a job made
// for them), and a malformed frame leaves the slot it names untouched: a round started
// afterwards sums exactly its own contributions.
TEST_F(Rtl, GoldenVectors) {
  // The frame vectors' sender: rank 2 of job 1 at 10.0.0.2:31002, slot 5.
  // Up to 1024 elements a packet, more than a slot holds: the device, not the driver, decides.
  auto vector_job = [](std::uint16_t id, unsigned rank) {
    JobSpec job = make_job(id, std::max(3u, rank + 1), 0, kSlots, 1024);
    job.workers[2].address = {0x0A000002, 31002};
    job.workers[2].mac = wire::Mac{0x02, 0, 0, 0, 0, 0x02};
    return job;
  };
  const auto vectors = netagg::testing::load_vectors(netagg::testing::vectors_dir() / "wire");
  ASSERT_GT(vectors.size(), 20u);
  unsigned malformed = 0, taken = 0;
  for (const auto& v : vectors) {
    SCOPED_TRACE(v.at("name"));
    const std::string expect = v.at("expect");
    const bool ok = expect == "ok";
    const unsigned rank = ok ? static_cast<unsigned>(v.integer("rank")) : 2;
    const JobSpec job = vector_job(ok ? static_cast<std::uint16_t>(v.integer("job_id")) : 1, rank);
    install_unchecked(0, job);  // clears the job's slots
    Bytes frame = v.bytes;
    if (v.at("layer") == "packet") frame = frame_from(job.workers[rank], v.bytes);
    std::vector<std::uint64_t> before(csr::kCounterCount);
    for (unsigned i = 0; i < csr::kCounterCount; ++i) before[i] = counter(i);
    tb.push_frame(0, frame);
    settle();
    std::map<std::string, std::uint64_t> delta;
    for (unsigned i = 0; i < csr::kCounterCount; ++i)
      if (counter(i) != before[i])
        delta[std::string(csr::kCounterNames[i])] = counter(i) - before[i];
    std::string reason;
    if (!ok) {
      reason = "malformed_" + expect;
      ++malformed;
    } else if (v.at("type") == "result") {
      reason = "dropped_not_contribution";
    } else if (v.integer("slot") >= kSlots) {
      reason = "dropped_slot_out_of_range";
    } else if (v.integer("count") > kSlotElements) {
      reason = "dropped_count_too_large_for_job";
    } else if (v.integer("recovery") != 0) {
      reason = "dropped_no_round";  // a recovery copy never starts a round
    } else {
      reason = "aggregated";
      ++taken;
    }
    std::map<std::string, std::uint64_t> want{{"frames_in", 1}, {reason, 1}};
    // A contribution dropped for a reason its sender can act on gets a notice (no recovery
    // copy does).
    const bool noticed =
        (reason == "dropped_slot_out_of_range" || reason == "dropped_count_too_large_for_job") &&
        v.integer("recovery") == 0;
    if (noticed) want["notices"] = want["frames_out"] = 1;
    EXPECT_EQ(delta, want);
    EXPECT_EQ(notices_.size(), noticed ? 1u : 0u);
    if (ok) continue;
    // Nothing touched: slot 5, both sets, take a fresh round of the three ranks.
    for (std::uint8_t set : {0, 1}) {
      std::vector<Contribution> round;
      for (std::uint16_t r = 0; r < 3; ++r)
        round.push_back({.job = 1,
                         .rank = r,
                         .slot = 5,
                         .set = set,
                         .seq = 7u + set,
                         .values = ints({10 * r + 1, -r})});
      const auto results = send_together(job, round);
      ASSERT_EQ(results.size(), 3u);
      for (const auto& res : results) EXPECT_EQ(res.values, ints({33, -3}));
    }
  }
  EXPECT_GE(malformed, 15u);
  EXPECT_GE(taken, 5u);
}

// ---- reduction -----------------------------------------------------------------------------

// Four workers on four ports, int32, in the same cycle (one group), with wrap-around.
TEST_F(Rtl, Int32RoundInOneGroup) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  std::vector<Contribution> round;
  std::vector<std::uint32_t> expected(40, 0);
  for (std::uint16_t r = 0; r < 4; ++r) {
    Contribution c{
        .job = 1, .rank = r, .slot = 2, .set = 1, .seq = 6, .exponent = std::int16_t(r - 2)};
    for (unsigned i = 0; i < 40; ++i) c.values.push_back(0x7FFFFFF0u + r * 1000 + i);
    for (unsigned i = 0; i < 40; ++i) expected[i] += c.values[i];
    round.push_back(c);
  }
  const auto results = send_together(job, round);
  ASSERT_EQ(results.size(), 4u);
  std::set<unsigned> ranks;
  for (const auto& r : results) {
    ranks.insert(r.header.rank);
    EXPECT_EQ(r.header.type, wire::MsgType::kResult);
    EXPECT_EQ(r.header.dtype, DataType::kInt32);
    EXPECT_EQ(r.port, r.header.rank % kPorts);
    EXPECT_EQ(r.address.dst_ip, job.workers[r.header.rank].address.ip);
    EXPECT_EQ(r.address.dst_port, job.workers[r.header.rank].address.port);
    EXPECT_EQ(r.address.dst_mac, *job.workers[r.header.rank].mac);
    EXPECT_EQ(r.address.src_ip, kAggIp);
    EXPECT_EQ(r.address.src_mac, kAggMac);
    EXPECT_EQ(r.address.src_port, wire::kUdpPort);
    EXPECT_EQ(r.header.job_id, 1);
    EXPECT_EQ(r.header.slot, 2);
    EXPECT_EQ(r.header.set, 1);
    EXPECT_EQ(r.header.seq, 6u);
    EXPECT_EQ(r.header.exponent, 1);
    EXPECT_EQ(r.values, expected);
  }
  EXPECT_EQ(ranks.size(), 4u);
  EXPECT_EQ(count(C::kAggregated), 4u);
  EXPECT_EQ(count(C::kCompletions), 1u);
  EXPECT_EQ(count(C::kFramesOut), 4u);
  expect_balanced();
}

// Contributions one at a time, in different orders, every packet size from 0 to a full slot.
TEST_F(Rtl, Int32EveryCountAndOrder) {
  const JobSpec job = make_job(1, 3, 10, 2);
  install(0, job);
  std::mt19937 rng(7);
  const std::vector<std::uint16_t> counts = {0, 1, 15, 16, 17, 31, 32, 33, 100, 255, 256};
  std::uint32_t seq = 0;
  for (std::uint16_t n : counts) {
    std::vector<std::uint16_t> order = {0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::uint32_t> sum(n, 0);
    std::vector<Result> results;
    for (std::uint16_t r : order) {
      Contribution c{.job = 1,
                     .rank = r,
                     .slot = std::uint16_t(10 + seq % 2),
                     .set = std::uint8_t((seq / 2) % 2),
                     .seq = seq};
      for (unsigned i = 0; i < n; ++i) c.values.push_back(rng());
      for (unsigned i = 0; i < n; ++i) sum[i] += c.values[i];
      results = send(job, c);
    }
    ASSERT_EQ(results.size(), 3u) << "count " << n;
    for (const auto& res : results) {
      EXPECT_EQ(res.header.count, n);
      EXPECT_EQ(res.values, sum) << "count " << n;
      EXPECT_EQ(res.bytes.size(), 64u + 4u * n);
    }
    ++seq;
  }
  expect_balanced();
}

// fp32: one group of four is summed ((p0 + p1) + (p2 + p3)); special values included.
TEST_F(Rtl, Fp32TreeOrderAndSpecialValues) {
  const JobSpec job = make_job(2, 4, 0, 8);
  install(0, job);
  const std::uint32_t specials[] = {0x00000000, 0x80000000, 0x00000001, 0x80000001,
                                    0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                                    0x7F800000, 0xFF800000, 0x7FC00001, 0xFF800123,
                                    0x3F800000, 0xBF800000, 0x33800000, 0x4B800000};
  std::mt19937 rng(11);
  std::vector<Contribution> round(4);
  for (std::uint16_t r = 0; r < 4; ++r) {
    round[r] = {.job = 2, .rank = r, .slot = 3, .set = 0, .seq = 3, .dtype = DataType::kFp32};
    for (unsigned i = 0; i < 200; ++i) {
      std::uint32_t v;
      if (i < 64)
        v = specials[(i + 5 * r) % 16];  // every pair of classes meets somewhere
      else
        v = bits(std::ldexp(float(int(rng() % 2000001) - 1000000), int(rng() % 40) - 20));
      round[r].values.push_back(v);
    }
  }
  const auto results = send_together(job, round);
  ASSERT_EQ(results.size(), 4u);
  std::vector<std::uint32_t> expected(200);
  for (unsigned i = 0; i < 200; ++i)
    expected[i] = host_add(host_add(round[0].values[i], round[1].values[i]),
                           host_add(round[2].values[i], round[3].values[i]));
  for (const auto& r : results) EXPECT_EQ(r.values, expected);
}

// fp32 one contribution at a time: the first is stored as is (no 0 + x: -0 stays -0), then
// added in arrival order, accumulator first.
TEST_F(Rtl, Fp32ArrivalOrder) {
  const JobSpec job = make_job(2, 3, 0, 8);
  install(0, job);
  std::vector<Contribution> cs(3);
  for (std::uint16_t r = 0; r < 3; ++r)
    cs[r] = {.job = 2, .rank = r, .slot = 1, .set = 0, .seq = 1, .dtype = DataType::kFp32};
  cs[0].values = {0x80000000, 0x3F800000, 0x7FC00005, 0x4B800000, 0x00000001};
  cs[1].values = {0x80000000, 0x33800000, 0x7FC00007, 0x3F800000, 0x80000001};
  cs[2].values = {0x80000000, 0x33800000, 0x3F800000, 0x3F800000, 0x00000001};
  send(job, cs[2]);
  send(job, cs[0]);
  const auto results = send(job, cs[1]);
  ASSERT_EQ(results.size(), 3u);
  std::vector<std::uint32_t> expected;
  for (unsigned i = 0; i < 5; ++i)
    expected.push_back(host_add(host_add(cs[2].values[i], cs[0].values[i]), cs[1].values[i]));
  EXPECT_EQ(expected[0], 0x80000000u);  // -0 + -0 + -0
  EXPECT_EQ(expected[2], 0x7FC00005u);  // the accumulator's NaN wins
  for (const auto& r : results) EXPECT_EQ(r.values, expected);
}

// bf16 on the wire, fp32 accumulation, rounded back: 32 elements a wire beat, two accumulator
// beats each; counts that end in either half of a beat.
TEST_F(Rtl, Bf16WidenedAccumulatedRounded) {
  const JobSpec job = make_job(3, 4, 0, 4);
  install(0, job);
  std::mt19937 rng(5);
  std::uint32_t seq = 0;
  for (std::uint16_t n : {1, 16, 17, 32, 33, 48, 100, 256}) {
    std::vector<Contribution> round(4);
    for (std::uint16_t r = 0; r < 4; ++r) {
      round[r] = {.job = 3,
                  .rank = r,
                  .slot = std::uint16_t(seq % 4),
                  .set = std::uint8_t((seq / 4) % 2),
                  .seq = seq,
                  .dtype = DataType::kBf16};
      for (unsigned i = 0; i < n; ++i) {
        std::uint32_t v = rng() & 0xFFFF;
        if (i % 37 == 5) v = 0x7F81 + r;  // signalling NaNs, quieted in the result
        if (i % 41 == 7) v = r % 2 ? 0xFF80 : 0x7F80;
        round[r].values.push_back(v);
      }
    }
    const auto results = send_together(job, round);
    ASSERT_EQ(results.size(), 4u) << "count " << n;
    std::vector<std::uint32_t> expected;
    for (unsigned i = 0; i < n; ++i) {
      const std::uint32_t a =
          host_add(bf16_widen(round[0].values[i]), bf16_widen(round[1].values[i]));
      const std::uint32_t b =
          host_add(bf16_widen(round[2].values[i]), bf16_widen(round[3].values[i]));
      expected.push_back(reference_bf16(host_add(a, b)));
    }
    for (const auto& r : results) {
      EXPECT_EQ(r.header.dtype, DataType::kBf16);
      EXPECT_EQ(r.values, expected) << "count " << n;
      EXPECT_EQ(r.bytes.size(), 64u + 2u * n);
    }
    ++seq;
  }
}

// Groups of any subset of ports: a missing port's partner passes through its tree level.
TEST_F(Rtl, TreeSkipsMissingPorts) {
  const JobSpec job = make_job(4, 4, 0, 16);
  install(0, job);
  std::uint32_t seq = 0;
  for (unsigned mask = 1; mask < 16; ++mask) {
    const std::uint16_t slot = static_cast<std::uint16_t>(seq % 16);
    std::vector<std::uint32_t> vals = {0x3F800000, 0x33800000, 0xB3800000, 0x4B800000};
    // ports in the mask together, the others afterwards one by one
    for (unsigned p = 0; p < 4; ++p)
      if (mask >> p & 1)
        tb.push_frame(p, contribution_frame(job, {.job = 4,
                                                  .rank = std::uint16_t(p),
                                                  .slot = slot,
                                                  .seq = seq,
                                                  .dtype = DataType::kFp32,
                                                  .values = {vals[p]}}));
    settle();
    std::vector<Result> results;
    for (unsigned p = 0; p < 4; ++p)
      if (!(mask >> p & 1))
        results = send(job, {.job = 4,
                             .rank = std::uint16_t(p),
                             .slot = slot,
                             .seq = seq,
                             .dtype = DataType::kFp32,
                             .values = {vals[p]}});
    if (mask == 15) results = {};
    ++seq;
  }
  EXPECT_EQ(count(C::kCompletions), 15u);
}

// One-beat packets to one (slot, set) taken one cycle after the other: each group reads the
// accumulators the previous one is still adding to (the read-modify-write hazard window).
TEST_F(Rtl, BackToBackGroupsOnOneSlot) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  for (std::uint32_t round = 0; round < 6; ++round) {
    const unsigned count = round % 2 ? 16 : 5;  // one beat; one beat partly filled
    std::vector<Contribution> cs;
    for (std::uint16_t r = 0; r < 4; ++r) {
      Contribution c{.job = 1,
                     .rank = r,
                     .slot = 3,
                     .set = std::uint8_t(round % 2),
                     .seq = round,
                     .dtype = round < 3 ? DataType::kFp32 : DataType::kInt32};
      for (unsigned i = 0; i < count; ++i)
        c.values.push_back(round < 3 ? bits(float(1 << r) + float(i) / 64 + round) : 1000 * r + i);
      cs.push_back(c);
    }
    for (std::uint16_t r = 0; r < 4; ++r) {  // staggered by a cycle: four groups in a row
      tb.push_frame(r, contribution_frame(job, cs[r]));
      tb.step(1);
    }
    const auto results = settle();
    ASSERT_EQ(results.size(), 4u);
    for (unsigned i = 0; i < count; ++i) {
      std::uint32_t want = cs[0].values[i];
      for (unsigned r = 1; r < 4; ++r)
        want = round < 3 ? host_add(want, cs[r].values[i]) : want + cs[r].values[i];
      EXPECT_EQ(results[0].values[i], want) << "round " << round << " element " << i;
    }
  }
}

// Eight workers on four ports: copies to different ports leave in the same cycles, the two
// workers of a port one after the other in rank order.
TEST_F(Rtl, ResultWavesAcrossPorts) {
  const JobSpec job = make_job(1, 8, 0, 4);
  install(0, job);
  for (std::uint16_t r = 0; r < 8; ++r)
    tb.push_frame(r % 4, contribution_frame(job, {.job = 1,
                                                  .rank = r,
                                                  .slot = 1,
                                                  .seq = 1,
                                                  .values = std::vector<std::uint32_t>(40, r)}));
  const auto egress = settle_and_compare();
  ASSERT_EQ(egress.size(), 8u);
  std::map<unsigned, std::vector<EgressFrame>> per_port;
  for (const auto& f : egress) per_port[f.port].push_back(f);
  for (unsigned p = 0; p < kPorts; ++p) {
    ASSERT_EQ(per_port[p].size(), 2u);
    EXPECT_EQ(decode_result(per_port[p][0]).header.rank, p);
    EXPECT_EQ(decode_result(per_port[p][1]).header.rank, p + 4);
    for (unsigned w = 0; w < 2; ++w)
      EXPECT_EQ(per_port[p][w].first_beat_cycle, per_port[0][w].first_beat_cycle) << "port " << p;
    EXPECT_EQ(per_port[p][1].first_beat_cycle, per_port[p][0].last_beat_cycle + 1);  // back to back
  }
}

// ---- loss recovery (the switch model's cases) ------------------------------------------------

TEST_F(Rtl, ResendAfterCompletion) {
  const JobSpec job = make_job(1, 3, 8, 4);
  install(0, job);
  Contribution c[3];
  for (std::uint16_t r = 0; r < 3; ++r)
    c[r] = {.job = 1,
            .rank = r,
            .slot = 10,
            .seq = 5,
            .exponent = std::int16_t(4 + r),
            .values = ints({r + 1, r + 1, r + 1})};
  send(job, c[0]);
  send(job, c[1]);
  const auto first = send(job, c[2]);
  ASSERT_EQ(first.size(), 3u);
  Bytes original;
  for (const auto& r : first)
    if (r.header.rank == 1) original = r.bytes;
  for (int again = 0; again < 2; ++again) {
    const auto resent = send(job, c[1]);
    ASSERT_EQ(resent.size(), 1u);
    EXPECT_EQ(resent[0].header.rank, 1);
    EXPECT_EQ(resent[0].port, 1u);
    EXPECT_EQ(resent[0].values, ints({6, 6, 6}));  // not added a second time
    EXPECT_EQ(resent[0].header.exponent, 6);
    EXPECT_EQ(resent[0].bytes, original);
  }
  EXPECT_EQ(count(C::kResultsResent), 2u);
  EXPECT_EQ(count(C::kCompletions), 1u);
  expect_balanced();
}

TEST_F(Rtl, RetransmissionFromThePreviousSet) {
  const JobSpec job = make_job(1, 3, 8, 4);
  install(0, job);
  for (std::uint16_t r = 0; r < 3; ++r)
    send(job, {.job = 1,
               .rank = r,
               .slot = 8,
               .set = 0,
               .seq = 40,
               .values = ints({2 * r + 1, 2 * r + 2})});
  // Ranks 0 and 1 move on to set 1 (seq + W); rank 2 lost its result and retransmits.
  send(job, {.job = 1, .rank = 0, .slot = 8, .set = 1, .seq = 44, .values = ints({10, 10})});
  send(job, {.job = 1, .rank = 1, .slot = 8, .set = 1, .seq = 44, .values = ints({20, 20})});
  const auto resent =
      send(job, {.job = 1, .rank = 2, .slot = 8, .set = 0, .seq = 40, .values = ints({5, 6})});
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].header.set, 0);
  EXPECT_EQ(resent[0].header.seq, 40u);
  EXPECT_EQ(resent[0].values, ints({9, 12}));
  const auto results =
      send(job, {.job = 1, .rank = 2, .slot = 8, .set = 1, .seq = 44, .values = ints({30, 30})});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_EQ(r.values, ints({60, 60}));
  expect_balanced();
}

// Runs told apart by their epoch: a second run's fresh packets take over the sets an earlier
// run left (finished or not) and get the second run's sums; a packet of the earlier run that is
// not fresh is dropped, counted stale_epoch. Frames of two epochs that meet on one (slot, set)
// are not one group (the model replays the groups the RTL took and must agree).
TEST_F(Rtl, RunsOfAJobNeverMix) {
  const JobSpec job = make_job(1, 3, 8, 4);
  install(0, job);
  constexpr std::uint32_t kA = 0xA0A0A0A0, kB = 0xB0B0B0B0, kC = 0xC0C0C0C0;
  auto c = [](std::uint16_t rank, std::uint16_t slot, std::uint32_t epoch, std::uint8_t fresh,
              std::int32_t v) {
    return Contribution{.job = 1,
                        .rank = rank,
                        .slot = slot,
                        .values = ints({v, v}),
                        .epoch = epoch,
                        .fresh = fresh};
  };
  // Run A completes slot 10 and leaves slot 11 unfinished.
  for (std::uint16_t r = 0; r < 3; ++r) send(job, c(r, 10, kA, 1, 1));
  send(job, c(0, 11, kA, 1, 100));
  // Run B numbers its packets from 0 again.
  EXPECT_TRUE(send(job, c(0, 10, kB, 1, 2)).empty());  // takes slot 10 over: no stored result
  EXPECT_EQ(count(C::kEpochTakeovers), 1u);
  EXPECT_TRUE(send(job, c(1, 10, kA, 0, 50)).empty());  // run A, not fresh: stale_epoch
  EXPECT_EQ(count(C::kDroppedStaleEpoch), 1u);
  send(job, c(1, 10, kB, 1, 2));
  auto results = send(job, c(2, 10, kB, 1, 2));
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.values, ints({6, 6}));
    EXPECT_EQ(r.header.epoch, kB);
    EXPECT_EQ(r.header.fresh, 0);
  }
  // A resend of B's round carries B's epoch; one of A's, not fresh, gets nothing.
  results = send(job, c(1, 10, kB, 1, 2));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].header.epoch, kB);
  EXPECT_TRUE(send(job, c(1, 10, kA, 0, 1)).empty());
  // Run B takes over A's unfinished round on slot 11 with all three ranks in one cycle, next to
  // a late packet of A: rank 0's bit of A's round is not B's, so no rank is a duplicate.
  results = send_together(
      job, {c(0, 11, kB, 1, 7), c(1, 11, kB, 1, 7), c(2, 11, kB, 1, 7), c(1, 11, kA, 0, 100)});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_EQ(r.values, ints({21, 21}));
  // Run C starts on slot 11 with two epochs in one cycle on the same (slot, set).
  Contribution late = c(0, 11, kB, 0, 9);
  late.seq = 0xFFFFFFF0;  // older than B's round: stale before C takes over, stale_epoch after
  results = send_together(job, {late, c(0, 11, kC, 1, 3), c(1, 11, kC, 1, 3), c(2, 11, kC, 1, 3)});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.values, ints({9, 9}));
    EXPECT_EQ(r.header.epoch, kC);
  }
  EXPECT_EQ(count(C::kDroppedDuplicate), 0u);
  // One takeover per set taken (slot 10 by B, slot 11 by B and by C), not per fresh packet.
  EXPECT_EQ(count(C::kEpochTakeovers), 3u);
  expect_balanced();
}

// Recovery copies (a worker's answered packet sent again for the workers still waiting on its
// round, after an aggregator restart) join or complete a round the set holds, or get its stored
// result, and never start one.
TEST_F(Rtl, RecoveryCopiesNeverStartARound) {
  const JobSpec job = make_job(1, 3, 8, 4);
  install(0, job);
  auto c = [](std::uint16_t rank, std::uint32_t seq, std::uint8_t recovery, std::int32_t v) {
    return Contribution{.job = 1,
                        .rank = rank,
                        .slot = 9,
                        .set = static_cast<std::uint8_t>((seq / 4) % 2),
                        .seq = seq,
                        .values = ints({v}),
                        .epoch = 7,
                        .recovery = recovery};
  };
  EXPECT_TRUE(send(job, c(0, 1, 1, 5)).empty());  // the set holds no round
  EXPECT_EQ(count(C::kDroppedNoRound), 1u);
  EXPECT_TRUE(send(job, c(1, 1, 0, 10)).empty());  // a retransmission starts it
  EXPECT_TRUE(send(job, c(0, 1, 1, 20)).empty());  // the copies join ...
  auto results = send(job, c(2, 1, 1, 30));        // ... and complete it
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.values, ints({60}));
    EXPECT_EQ(r.header.recovery, 0);
  }
  results = send(job, c(2, 1, 1, 30));  // to a complete round: its result, resent
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].values, ints({60}));
  EXPECT_TRUE(send(job, c(0, 9, 1, 1)).empty());   // newer than the complete round: no_round
  EXPECT_TRUE(send(job, c(1, 9, 0, 1)).empty());   // a new round ...
  EXPECT_TRUE(send(job, c(0, 17, 1, 1)).empty());  // ... and a copy newer still: no_round
  EXPECT_EQ(count(C::kDroppedNoRound), 3u);
  Contribution other = c(2, 9, 1, 1);
  other.epoch = 8;
  other.fresh = 1;
  EXPECT_TRUE(send(job, other).empty());  // never a takeover: stale_epoch
  EXPECT_EQ(count(C::kDroppedStaleEpoch), 1u);
  EXPECT_EQ(count(C::kEpochTakeovers), 0u);
  // In one cycle: a copy that would start the round next to the packet that does.
  results = send_together(job, {c(0, 13, 1, 100), c(1, 13, 0, 200), c(2, 13, 1, 300)});
  expect_balanced();
}

// Eight rounds through one slot alternating sets, a lost result retransmitted while the next
// round fills the other set.
TEST_F(Rtl, BothSetsInFlight) {
  const JobSpec job = make_job(1, 3, 20, 1);
  install(0, job);
  const std::vector<std::vector<std::uint16_t>> orders = {
      {0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {1, 2, 0}, {0, 1, 2}, {2, 1, 0}};
  auto value = [](std::uint32_t p, std::uint16_t r) { return std::int32_t(1000 * (p + 1) + r); };
  for (std::uint32_t p = 0; p < orders.size(); ++p) {
    const std::uint8_t set = p % 2;
    std::vector<Result> results;
    for (std::size_t i = 0; i < 3; ++i) {
      const std::uint16_t r = orders[p][i];
      results = send(job, {.job = 1,
                           .rank = r,
                           .slot = 20,
                           .set = set,
                           .seq = p,
                           .values = ints({value(p, r), -value(p, r)})});
      if (i == 0 && p > 0 && orders[p - 1].back() != r) {
        const std::uint16_t last = orders[p - 1].back();
        const auto resent = send(job, {.job = 1,
                                       .rank = last,
                                       .slot = 20,
                                       .set = std::uint8_t(set ^ 1),
                                       .seq = p - 1,
                                       .values = ints({value(p - 1, last), -value(p - 1, last)})});
        ASSERT_EQ(resent.size(), 1u);
        const std::int32_t previous = 3000 * std::int32_t(p) + 3;
        EXPECT_EQ(resent[0].values, ints({previous, -previous}));
      }
    }
    ASSERT_EQ(results.size(), 3u);
    const std::int32_t sum = 3000 * std::int32_t(p + 1) + 3;
    for (const auto& res : results) EXPECT_EQ(res.values, ints({sum, -sum}));
  }
  EXPECT_EQ(count(C::kCompletions), orders.size());
  expect_balanced();
}

// A set is reused every 2W packets: each new round overwrites the old sum and bitmap.
TEST_F(Rtl, SlotReuse) {
  const JobSpec job = make_job(1, 2, 30, 2);
  install(0, job);
  for (std::uint32_t p = 0; p < 12; ++p) {
    const auto slot = static_cast<std::uint16_t>(30 + p % 2);
    const auto set = static_cast<std::uint8_t>((p / 2) % 2);
    // both ranks in one group: a new round and a join together
    const auto results = send_together(job, {{.job = 1,
                                              .rank = 0,
                                              .slot = slot,
                                              .set = set,
                                              .seq = p,
                                              .values = ints({int(2 * p + 1)})},
                                             {.job = 1,
                                              .rank = 1,
                                              .slot = slot,
                                              .set = set,
                                              .seq = p,
                                              .values = ints({int(2 * p + 2)})}});
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].values, ints({int(4 * p + 3)})) << "packet " << p;
  }
}

// Duplicates are dropped and answered with a notice that names the ranks the round waits for.
TEST_F(Rtl, DuplicatesIgnored) {
  using Waiting = std::vector<std::pair<wire::NoticeReason, std::uint32_t>>;
  constexpr auto kDuplicate = wire::NoticeReason::kDuplicate;
  const JobSpec job = make_job(1, 3, 0, 16);
  install(0, job);
  const Contribution c0{.job = 1, .rank = 0, .slot = 9, .seq = 1, .values = ints({5, 5})};
  send(job, c0);
  EXPECT_TRUE(send(job, c0).empty());
  EXPECT_EQ(notices(), (Waiting{{kDuplicate, 0b110}}));
  EXPECT_EQ(notices_.at(0).port, 0u) << "out of the port it came in on";
  // a copy arriving on another port in the same cycle as the original: after rank 1's
  // contribution (port order), the round waits for rank 2 alone
  tb.push_frame(0, contribution_frame(
                       job, {.job = 1, .rank = 1, .slot = 9, .seq = 1, .values = ints({6, 6})}));
  tb.push_frame(3, contribution_frame(
                       job, {.job = 1, .rank = 1, .slot = 9, .seq = 1, .values = ints({6, 6})}));
  EXPECT_TRUE(settle().empty());
  EXPECT_EQ(notices(), (Waiting{{kDuplicate, 0b100}}));
  EXPECT_EQ(notices_.at(0).port, 3u);
  const auto results =
      send(job, {.job = 1, .rank = 2, .slot = 9, .seq = 1, .values = ints({7, 7})});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].values, ints({18, 18}));
  EXPECT_EQ(count(C::kDroppedDuplicate), 2u);
  EXPECT_EQ(count(C::kNotices), 2u);
  expect_balanced();
}

// ---- notices -------------------------------------------------------------------------------

// A notice is the dropped packet's header (type notice, dtype int32, set flag alone,
// exponent_none) and its reason, back out of its ingress port with the addresses swapped: the
// frame the host's encoder builds. From any source, a registered worker or not.
TEST_F(Rtl, NoticeFrames) {
  const JobSpec job = make_job(1, 3, 4, 4, 16);
  install(0, job);
  WorkerSpec stranger{0, {0x0A0000C8, 40000}, wire::Mac{0x02, 0, 0, 0, 0, 0x77}, std::nullopt};
  Contribution c{.job = 1,
                 .rank = 2,
                 .slot = 5,
                 .set = 1,
                 .seq = 0x12345678,
                 .exponent = 7,
                 .ecn = 3,
                 .values = ints({1, 2}),
                 .epoch = 0xE90C,
                 .fresh = 1};
  const Bytes foreign = frame_from(stranger, encode_packet(c), c.ecn);
  c.job = 2;
  const Bytes unknown = frame_from(stranger, encode_packet(c), 1);
  c.job = 1;
  c.slot = 9;
  const Bytes outside = contribution_frame(job, c);
  tb.push_frame(2, foreign);
  tb.push_frame(1, unknown);
  tb.push_frame(3, outside);
  EXPECT_TRUE(settle().empty());
  std::vector<fpga::TxFrame> got;
  for (const Result& n : notices_) got.push_back({n.port, n.bytes});
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.port < b.port; });
  EXPECT_EQ(got, (std::vector<fpga::TxFrame>{
                     expected_notice(1, unknown, wire::NoticeReason::kUnknownJob),
                     expected_notice(2, foreign, wire::NoticeReason::kForeignSource),
                     expected_notice(3, outside, wire::NoticeReason::kSlotOutOfRange)}));
  EXPECT_EQ(count(C::kNotices), 3u);
  EXPECT_EQ(count(C::kFramesOut), 3u);
}

// The rate: for each reason and rank the first drop and then one in every 16, counted in the
// order the aggregator takes the drops (several ports in one cycle: port order), as the model
// counts them; every duplicate; never a recovery copy, a result or a malformed frame.
TEST_F(Rtl, NoticesAreRateLimitedByReasonAndRank) {
  const JobSpec job = make_job(1, 2, 0, 4, 16);
  install(0, job);
  auto unknown = [&](std::uint16_t rank, std::uint8_t recovery = 0) {
    return frame_from(
        job.workers[rank],
        encode_packet({.job = 7, .rank = rank, .values = ints({1}), .recovery = recovery}));
  };
  // 10 cycles' worth: rank 0's unknown-job drops on all four ports together, rank 1's on port 0.
  for (int i = 0; i < 10; ++i)
    for (unsigned port = 0; port < kPorts; ++port) tb.push_frame(port, unknown(0));
  for (int i = 0; i < 20; ++i) tb.push_frame(0, unknown(1));
  settle();
  // rank 0: 40 drops, rank 1: 20: notices for rank 0's 1st, 17th and 33rd, rank 1's 1st and 17th
  EXPECT_EQ(notices_.size(), 5u);
  EXPECT_EQ(count(C::kDroppedUnknownJob), 60u);
  // recovery copies are neither answered nor counted: rank 0 has 40, 8 more make the next due
  for (int i = 0; i < 8; ++i) {
    tb.push_frame(1, unknown(0, 1));
    tb.push_frame(2, unknown(0));
  }
  settle();
  EXPECT_TRUE(notices_.empty());
  tb.push_frame(3, unknown(0));
  settle();
  EXPECT_EQ(notices_.size(), 1u);
  // a result from a worker (not_contribution) and a malformed frame: none
  Bytes result = unknown(0);
  result[wire::kFrameOverhead + wire::offset::kType] = std::byte(wire::MsgType::kResult);
  tb.push_frame(0, result);
  Bytes bad = unknown(1);
  bad[wire::kFrameOverhead + wire::offset::kVersion] = std::byte{9};
  tb.push_frame(1, bad);
  settle();
  EXPECT_TRUE(notices_.empty());
  // A soft reset starts the counts again.
  soft_reset(tb);
  soft_reset(model_bus);
  tb.push_frame(0, unknown(0));
  settle();
  EXPECT_EQ(notices_.size(), 1u);
}

// Notices wait for a held egress port without losing or reordering anything: the port's drops
// wait at its head once its notice queue is full, the other ports go on; the result frames and
// the notices of a port take turns.
TEST_F(Rtl, NoticesAndResultsShareAHeldPort) {
  const JobSpec job = make_job(1, 3, 0, 8, 16);
  install(0, job);
  tb.set_egress_ready(0, false);
  // Ranks 0 and 1 send each packet twice (the copy a duplicate while the round waits for rank
  // 2), rank 0 also what no job takes.
  for (std::uint32_t p = 0; p < 6; ++p) {
    for (std::uint16_t r = 0; r < 2; ++r) {
      const Contribution c{
          .job = 1, .rank = r, .slot = std::uint16_t(p), .seq = p, .values = ints({1, 2, 3})};
      tb.push_frame(r, contribution_frame(job, c));
      tb.push_frame(r, contribution_frame(job, c));
    }
    tb.push_frame(0, frame_from(job.workers[0], encode_packet({.job = 9, .seq = p})));
  }
  tb.step(3000);
  EXPECT_EQ(tb.ingress_pending(1), 0u);
  EXPECT_GT(tb.ingress_pending(0), 0u) << "port 0's drops wait for room for their notices";
  // Rank 2 completes the rounds: results for all three, port 0's waiting behind its notices.
  for (std::uint32_t p = 0; p < 6; ++p)
    tb.push_frame(
        2,
        contribution_frame(
            job,
            {.job = 1, .rank = 2, .slot = std::uint16_t(p), .seq = p, .values = ints({1, 2, 3})}));
  tb.step(3000);
  tb.set_egress_ready(0, true);
  settle();  // (compared with the model: every frame, every counter)
  EXPECT_GE(count(C::kDroppedDuplicate), 6u);
  EXPECT_EQ(count(C::kNotices), count(C::kDroppedDuplicate) + 1);
  EXPECT_EQ(count(C::kCompletions), 6u);
  EXPECT_EQ(tb.egress_protocol_errors(), 0u) << tb.last_protocol_error();
  expect_balanced();
}

// A new round on a (slot, set) whose result frames still wait for a held egress port (a worker
// group running ahead of the protocol): the round waits, the held results carry their own sum.
TEST_F(Rtl, NewRoundWaitsForQueuedResults) {
  const JobSpec job = make_job(1, 2, 0, 1);
  install(0, job);
  tb.set_egress_ready(0, false);
  for (std::uint32_t seq = 0; seq < 3; ++seq) {  // set 0, set 1, set 0 again
    for (std::uint16_t r = 0; r < 2; ++r)
      tb.push_frame(r,
                    contribution_frame(job, {.job = 1,
                                             .rank = r,
                                             .slot = 0,
                                             .set = std::uint8_t(seq % 2),
                                             .seq = seq,
                                             .values = std::vector<std::uint32_t>(200, seq + 1)}));
    tb.step(400);
  }
  tb.set_egress_ready(0, true);
  const auto results = settle();
  ASSERT_EQ(results.size(), 6u);
  for (const auto& r : results)
    EXPECT_EQ(r.values, std::vector<std::uint32_t>(200, 2 * (r.header.seq + 1)))
        << "seq " << r.header.seq;
}

// A late copy of packet 0 after its sender's packet 1 cleared its bit: a resend, not a round.
TEST_F(Rtl, RetransmissionOvertakenByTheSendersNextPacket) {
  const JobSpec job = make_job(1, 2, 8, 1);
  install(0, job);
  send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 0, .values = ints({1, 2})});
  send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 0, .values = ints({10, 20})});
  send(job, {.job = 1, .rank = 0, .slot = 8, .set = 1, .seq = 1, .values = ints({3, 4})});
  const auto resent =
      send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 0, .values = ints({1, 2})});
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].values, ints({11, 22}));
  auto results =
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 1, .seq = 1, .values = ints({30, 40})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({33, 44}));
  send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 2, .values = ints({5, 6})});
  results =
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 2, .values = ints({50, 60})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({55, 66}));
  for (unsigned i = csr::index(C::kMalformedTruncated); i < csr::kCounterCount; ++i)
    EXPECT_EQ(counter(i), 0u) << csr::kCounterNames[i];
}

TEST_F(Rtl, StaleAndMismatchesTouchNothingAndNewerEndsAnUnfinishedRound) {
  const JobSpec job = make_job(1, 2, 8, 1);
  install(0, job);
  for (std::uint32_t p = 0; p < 3; ++p)
    send_together(job, {{.job = 1,
                         .rank = 0,
                         .slot = 8,
                         .set = std::uint8_t(p % 2),
                         .seq = p,
                         .values = ints({1, 1})},
                        {.job = 1,
                         .rank = 1,
                         .slot = 8,
                         .set = std::uint8_t(p % 2),
                         .seq = p,
                         .values = ints({2, 2})}});
  EXPECT_TRUE(
      send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 0, .values = ints({7, 7})})
          .empty());
  send_together(job,
                {{.job = 1, .rank = 0, .slot = 8, .set = 1, .seq = 3, .values = ints({1, 1})},
                 {.job = 1, .rank = 1, .slot = 8, .set = 1, .seq = 3, .values = ints({2, 2})}});
  send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 4, .values = ints({4, 4})});
  for (std::uint32_t seq : {2u, 0u})  // stale, stale
    EXPECT_TRUE(
        send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = seq, .values = ints({9, 9})})
            .empty());
  // same round, other count / other dtype
  EXPECT_TRUE(
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 4, .values = ints({9, 9, 9})})
          .empty());
  EXPECT_TRUE(send(job, {.job = 1,
                         .rank = 1,
                         .slot = 8,
                         .set = 0,
                         .seq = 4,
                         .dtype = DataType::kFp32,
                         .values = ints({9, 9})})
                  .empty());
  const auto results =
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 4, .values = ints({40, 40})});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({44, 44}));
  EXPECT_EQ(count(C::kDroppedStale), 3u);
  EXPECT_EQ(count(C::kDroppedCountMismatch), 1u);
  EXPECT_EQ(count(C::kDroppedDtypeMismatch), 1u);
  // Round 6 left unfinished (as after a restart); round 8 (newer) replaces it and completes.
  EXPECT_TRUE(
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 6, .values = ints({5, 5})})
          .empty());
  EXPECT_TRUE(
      send(job, {.job = 1, .rank = 0, .slot = 8, .set = 0, .seq = 8, .values = ints({1, 2})})
          .empty());
  const auto newer =
      send(job, {.job = 1, .rank = 1, .slot = 8, .set = 0, .seq = 8, .values = ints({10, 20})});
  ASSERT_EQ(newer.size(), 2u);
  EXPECT_EQ(newer[0].values, ints({11, 22}));
  expect_balanced();
}

// A group where port 0 completes the round and port 1 starts the set's next round (a worker
// group breaking the protocol) or resends: the later frame waits for the next cycle.
TEST_F(Rtl, GroupsNeverMixRounds) {
  const JobSpec job = make_job(1, 1, 0, 4);  // one worker: every contribution completes its round
  install(0, job);
  tb.push_frame(
      0, contribution_frame(job, {.job = 1, .rank = 0, .slot = 2, .seq = 0, .values = ints({1})}));
  tb.push_frame(
      1, contribution_frame(job, {.job = 1, .rank = 0, .slot = 2, .seq = 2, .values = ints({5})}));
  tb.push_frame(
      2, contribution_frame(job, {.job = 1, .rank = 0, .slot = 2, .seq = 2, .values = ints({9})}));
  const auto results = settle();
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> got;
  for (const auto& r : results) got.emplace_back(r.header.seq, r.values);
  using Got = std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>>;
  EXPECT_EQ(got, (Got{{0, ints({1})}, {2, ints({5})}, {2, ints({5})}}));
  EXPECT_EQ(count(C::kResultsResent), 1u);
}

TEST_F(Rtl, ZeroCountCarriesOnlyTheExponent) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  std::vector<Contribution> round;
  for (std::uint16_t r = 0; r < 4; ++r)
    round.push_back({.job = 1,
                     .rank = r,
                     .slot = 1,
                     .seq = 1,
                     .dtype = DataType::kFp32,
                     .exponent = std::int16_t(r == 2 ? 127 : -5 * r)});
  const auto results = send_together(job, round);
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r.header.count, 0);
    EXPECT_EQ(r.header.exponent, 127);
    EXPECT_EQ(r.bytes.size(), 64u);
  }
}

// ---- ECN, jobs, checks -----------------------------------------------------------------------

TEST_F(Rtl, EcnBitsAreOred) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  for (std::uint32_t round = 0; round < 3; ++round) {
    const std::uint8_t ecns[3][4] = {{0, 1, 0, 0}, {0, 0, 0, 0}, {2, 0, 1, 0}};
    std::vector<Result> results;
    for (std::uint16_t r = 0; r < 4; ++r) {
      const Contribution c{.job = 1,
                           .rank = r,
                           .slot = std::uint16_t(round),
                           .seq = round,
                           .ecn = ecns[round][r],
                           .values = ints({1})};
      tb.push_frame(r, frame_from(job.workers[r], encode_packet(c), c.ecn));
      if (round == 2) results = settle();  // one by one in the last round
    }
    if (round < 2) results = settle();
    ASSERT_EQ(results.size(), 4u);
    const std::uint8_t want = round == 0 ? 1 : round == 1 ? 0 : 3;
    for (const auto& r : results) EXPECT_EQ(r.address.ecn, want) << "round " << round;
  }
}

TEST_F(Rtl, JobsAreIsolated) {
  const JobSpec a = make_job(1, 2, 0, 4, 8);
  const JobSpec b = make_job(2, 3, 4, 4, 64);
  install(0, a);
  install(5, b);
  // the same slot-relative traffic in both jobs, interleaved
  for (std::uint32_t p = 0; p < 4; ++p) {
    for (std::uint16_t r = 0; r < 3; ++r) {
      if (r < 2)
        tb.push_frame(r, contribution_frame(a, {.job = 1,
                                                .rank = r,
                                                .slot = std::uint16_t(p),
                                                .seq = p,
                                                .values = ints({int(r + 1)})}));
      tb.push_frame(r + 1, contribution_frame(b, {.job = 2,
                                                  .rank = r,
                                                  .slot = std::uint16_t(4 + p),
                                                  .seq = p,
                                                  .values = ints({int(100 * (r + 1))})}));
    }
  }
  auto results = settle();
  ASSERT_EQ(results.size(), 4u * 2 + 4u * 3);
  for (const auto& r : results) {
    if (r.header.job_id == 1) {
      EXPECT_EQ(r.values, ints({3}));
      EXPECT_EQ(r.address.dst_ip, a.workers.at(r.header.rank).address.ip);
    } else {
      EXPECT_EQ(r.values, ints({600}));
      EXPECT_EQ(r.address.dst_ip, b.workers.at(r.header.rank).address.ip);
    }
  }
  // job 1's worker into job 2's slots, job 2's ids from job 1's address
  EXPECT_TRUE(send(a, {.job = 1, .rank = 0, .slot = 5, .seq = 9, .values = ints({1})}).empty());
  tb.push_frame(
      0,
      frame_from(a.workers[0],
                 encode_packet({.job = 2, .rank = 0, .slot = 5, .seq = 9, .values = ints({1})})));
  EXPECT_TRUE(settle().empty());
  EXPECT_EQ(count(C::kDroppedSlotOutOfRange), 1u);
  EXPECT_EQ(count(C::kDroppedForeignSource), 1u);
  // removing job 1 leaves job 2 running
  remove_job(tb, 0);
  remove_job(model_bus, 0);
  EXPECT_TRUE(send(a, {.job = 1, .rank = 0, .slot = 0, .seq = 4, .values = ints({1})}).empty());
  EXPECT_EQ(count(C::kDroppedUnknownJob), 1u);
  for (std::uint16_t r = 0; r < 3; ++r)
    results = send(b, {.job = 2, .rank = r, .slot = 4, .set = 1, .seq = 4, .values = ints({r})});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].values, ints({3}));
  expect_balanced();
}

// Every job table check, and frame-level classes the golden vectors do not cover: each counted
// under its reason, and none touches the slot state (the round afterwards sums only its own).
TEST_F(Rtl, EveryCheckCountedNothingTouched) {
  JobSpec job = make_job(1, 2, 4, 4, 32);
  install(0, job);
  const Contribution good{.job = 1, .rank = 0, .slot = 5, .seq = 3, .values = ints({100, 200})};
  auto bad = [&](C reason, Bytes frame) {
    SCOPED_TRACE(std::string(csr::kCounterNames[csr::index(reason)]));
    const std::uint64_t before = count(reason);
    // An empty frame is one beat with TKEEP 0, which only push_empty_frame sends.
    if (frame.empty())
      tb.push_empty_frame(0);
    else
      tb.push_frame(0, frame);
    EXPECT_TRUE(settle().empty());
    EXPECT_EQ(count(reason), before + 1);
  };
  auto with = [&](auto change) {
    Contribution c = good;
    change(c);
    return contribution_frame(job, c);
  };
  bad(C::kDroppedNotContribution, with([](Contribution& c) { c.type = wire::MsgType::kResult; }));
  bad(C::kDroppedUnknownJob, with([](Contribution& c) { c.job = 7; }));
  bad(C::kDroppedRankOutOfRange,
      frame_from(
          job.workers[0],
          encode_packet({.job = 1, .rank = 2, .slot = 5, .seq = 3, .values = ints({1, 1})})));
  WorkerSpec stranger = job.workers[0];
  stranger.address.ip += 1;
  bad(C::kDroppedForeignSource, frame_from(stranger, encode_packet(good)));
  stranger = job.workers[0];
  stranger.address.port += 1;
  bad(C::kDroppedForeignSource, frame_from(stranger, encode_packet(good)));
  bad(C::kDroppedSlotOutOfRange, with([](Contribution& c) { c.slot = 3; }));
  bad(C::kDroppedSlotOutOfRange, with([](Contribution& c) { c.slot = 8; }));
  bad(C::kDroppedSlotOutOfRange, with([](Contribution& c) { c.slot = 1000; }));
  bad(C::kDroppedCountTooLargeForJob, with([](Contribution& c) { c.values.assign(33, 1); }));
  bad(C::kMalformedWrongPort, frame_from(job.workers[0], encode_packet(good), 0, 20034));
  Bytes truncated = contribution_frame(job, good);
  truncated.resize(60);
  bad(C::kMalformedIpLengthMismatch, truncated);
  truncated.resize(30);
  bad(C::kMalformedTruncated, truncated);
  bad(C::kMalformedTruncated, Bytes{});  // an empty frame: one beat, TKEEP 0
  Bytes padded = contribution_frame(job, good);
  padded.resize(64 * 18, std::byte{0});  // padding past the 17 beats a port stores
  bad(C::kMalformedLengthMismatch, padded);
  // unpadded, more than a slot holds (and more than the job allows)
  job.elements_per_packet = 1024;
  install_unchecked(0, job);
  bad(C::kDroppedCountTooLargeForJob, with([](Contribution& c) { c.values.assign(300, 1); }));
  bad(C::kDroppedCountTooLargeForJob, with([](Contribution& c) {
        c.dtype = DataType::kBf16;
        c.values.assign(257, 1);
      }));
  // after all that, a round on the slot and set they named sums exactly its own two frames
  tb.push_frame(0, contribution_frame(job, good));
  tb.push_frame(1, contribution_frame(
                       job, {.job = 1, .rank = 1, .slot = 5, .seq = 3, .values = ints({1, 2})}));
  const auto results = settle();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].values, ints({101, 202}));
  expect_balanced();
}

// Commands: worker egress ports past NUM_PORTS, a job with too many workers, indices past the
// table, and STATUS.busy while a commit waits for result frames held by backpressure.
TEST_F(Rtl, CommandEdgeCases) {
  JobSpec job = make_job(1, 2, 0, 2);
  job.workers[1].switch_port = 9;  // no such port: port 0
  install_unchecked(0, job);
  auto results =
      send_together(job, {{.job = 1, .rank = 0, .slot = 0, .seq = 0, .values = ints({1})},
                          {.job = 1, .rank = 1, .slot = 0, .seq = 0, .values = ints({2})}});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) EXPECT_EQ(r.port, 0u);
  // 33 workers: stored as not valid
  const JobSpec big = make_job(2, 2, 4, 2);
  install(1, big);
  for (fpga::CsrBus* bus : std::initializer_list<fpga::CsrBus*>{&tb, &model_bus}) {
    bus->write32(csr::kJobIndex, 1);
    bus->write32(csr::kJobWorkers, 33);
    commit(*bus, Command::kStoreJob);
  }
  EXPECT_TRUE(send(big, {.job = 2, .rank = 0, .slot = 4, .seq = 0, .values = ints({1})}).empty());
  EXPECT_EQ(count(C::kDroppedUnknownJob), 1u);
  // entry past the table: nothing happens
  for (fpga::CsrBus* bus : std::initializer_list<fpga::CsrBus*>{&tb, &model_bus}) {
    bus->write32(csr::kJobIndex, 8);
    commit(*bus, Command::kRemoveJob);
  }
  results = send_together(job, {{.job = 1, .rank = 0, .slot = 1, .seq = 1, .values = ints({1})},
                                {.job = 1, .rank = 1, .slot = 1, .seq = 1, .values = ints({2})}});
  EXPECT_EQ(results.size(), 2u);

  // A round completes while egress port 0 is held: its results (more beats than the egress
  // FIFO holds) wait, and so does a commit.
  tb.set_egress_ready(0, false);
  const std::vector<std::uint32_t> many(200, 1);
  tb.push_frame(0, contribution_frame(
                       job, {.job = 1, .rank = 0, .slot = 0, .set = 1, .seq = 2, .values = many}));
  tb.push_frame(1, contribution_frame(
                       job, {.job = 1, .rank = 1, .slot = 0, .set = 1, .seq = 2, .values = many}));
  tb.step(300);
  tb.write32(csr::kWorkerIndex, 0);
  const std::uint32_t seq = (tb.read32(csr::kCommit) >> 16) + 1;
  tb.write32(csr::kCommit, seq << 16 | 2);  // store worker 0 again (same values)
  tb.step(300);
  EXPECT_EQ(tb.read32(csr::kStatus) & 1, 1u);
  tb.set_egress_ready(0, true);
  wait_not_busy(tb);
  model.csr_write(csr::kWorkerIndex, 0);
  model.csr_write(csr::kCommit, seq << 16 | 2);
  results = settle();
  EXPECT_EQ(results.size(), 2u);
}

// A soft reset empties the whole job table, worker records included: a job stored afterwards
// without its workers knows none (their address reads 0.0.0.0:0, as in the reference model).
TEST_F(Rtl, SoftResetForgetsWorkers) {
  const JobSpec job = make_job(1, 2, 0, 4);
  install(0, job);
  soft_reset(tb);
  soft_reset(model_bus);
  for (fpga::CsrBus* bus : std::initializer_list<fpga::CsrBus*>{&tb, &model_bus}) {
    bus->write32(csr::kJobIndex, 0);
    bus->write32(csr::kJobId, 0x80000000u | job.job_id);
    bus->write32(csr::kJobWorkers, 2);
    bus->write32(csr::kJobSlots, std::uint32_t{job.slot_count} << 16 | job.slot_base);
    bus->write32(csr::kJobElements, job.elements_per_packet);
    commit(*bus, Command::kStoreJob);
  }
  EXPECT_TRUE(send(job, {.job = 1, .rank = 0, .slot = 0, .seq = 0, .values = ints({1})}).empty());
  EXPECT_EQ(count(C::kDroppedForeignSource), 1u);
  const WorkerSpec nobody{0, {}, wire::Mac{}, std::nullopt};  // 0.0.0.0:0
  tb.push_frame(
      0, frame_from(nobody, encode_packet(
                                {.job = 1, .rank = 0, .slot = 0, .seq = 0, .values = ints({1})})));
  tb.push_frame(
      1, frame_from(nobody, encode_packet(
                                {.job = 1, .rank = 1, .slot = 0, .seq = 0, .values = ints({2})})));
  const auto results = settle();
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.port, 0u);
    EXPECT_EQ(r.address.dst_ip, 0u);
    EXPECT_EQ(r.values, ints({3}));
  }
}

class RtlTraffic : public Rtl {
 protected:
  // Runs the traffic to completion and compares everything with the model.
  void run_and_compare(const JobSpec& job, const TrafficConfig& cfg,
                       std::uint64_t max_cycles = 400000) {
    Traffic t(tb, job, cfg);
    ASSERT_TRUE(t.run(max_cycles)) << "not every worker got every result";
    ASSERT_TRUE(run_until_idle());
    for (auto& f : tb.pop_egress()) t.egress.push_back(f);
    const auto expected = replay(model, tb.take_decisions());
    EXPECT_EQ(egress_difference(as_pairs(t.egress), expected), "");
    expect_counters_match_model();
    EXPECT_EQ(tb.egress_protocol_errors(), 0u) << tb.last_protocol_error();
    expect_results_exact(t, job, cfg);
    expect_balanced();
  }
};

TEST_F(RtlTraffic, Int32LossDuplicatesAnyPort) {
  const JobSpec job = make_job(1, 4, 8, 4);
  install(0, job);
  run_and_compare(job, {.window = 4,
                        .packets = 40,
                        .loss = 0.05,
                        .duplicate = 0.05,
                        .random_ports = true,
                        .timeout = 1500,
                        .seed = 3});
  EXPECT_GT(count(C::kResultsResent), 0u);
  EXPECT_GT(count(C::kDroppedDuplicate) + count(C::kDroppedStale), 0u);
}

TEST_F(RtlTraffic, Fp32LossAndDuplicates) {
  const JobSpec job = make_job(1, 4, 0, 8);
  install(0, job);
  run_and_compare(job, {.window = 8,
                        .packets = 48,
                        .dtype = DataType::kFp32,
                        .max_count = 64,
                        .loss = 0.04,
                        .duplicate = 0.05,
                        .timeout = 2000,
                        .seed = 4});
}

// Exact fp32 (fp32_exact): converted, added as 64-bit lanes and rounded once by the RTL, bit
// for bit the HLS model and the exact reference, with loss, duplicates and any port; whatever
// the grouping the RTL made, every worker gets the reference's bits.
TEST_F(RtlTraffic, Fp32ExactLossDuplicatesAnyPort) {
  const JobSpec job = make_job(1, 5, 0, 8);
  install(0, job);
  run_and_compare(job, {.window = 8,
                        .packets = 48,
                        .dtype = DataType::kFp32Exact,
                        .max_count = 256,
                        .loss = 0.04,
                        .duplicate = 0.05,
                        .random_ports = true,
                        .timeout = 2000,
                        .seed = 14});
  EXPECT_EQ(count(C::kExactOutOfRange), 0u);
}

TEST_F(RtlTraffic, Bf16LossAndDuplicates) {
  const JobSpec job = make_job(1, 3, 16, 4);
  install(0, job);
  run_and_compare(job, {.window = 4,
                        .packets = 40,
                        .dtype = DataType::kBf16,
                        .max_count = 80,
                        .loss = 0.04,
                        .duplicate = 0.05,
                        .timeout = 2000,
                        .seed = 5});
}

// Seq wrap: packets 2^32 - 20 .. 2^32 + 20.
TEST_F(RtlTraffic, SeqWrapsAround) {
  const JobSpec job = make_job(1, 2, 0, 4);
  install(0, job);
  run_and_compare(job, {.window = 4,
                        .packets = 40,
                        .first_packet = (1ull << 32) - 20,
                        .loss = 0.03,
                        .timeout = 1500,
                        .seed = 6});
}

// Eight workers, two per port (results on a shared port leave one after the other), random
// TREADY on every egress port and random ingress gaps: nothing lost, nothing sent twice.
TEST_F(RtlTraffic, EgressBackpressure) {
  const JobSpec job = make_job(1, 8, 0, 4);
  install(0, job);
  tb.set_random_egress_ready(0.3);
  tb.set_ingress_gaps(0.2);
  run_and_compare(job, {.window = 4,
                        .packets = 24,
                        .dtype = DataType::kFp32,
                        .max_count = 100,
                        .timeout = 1'000'000,
                        .seed = 7});
  // no loss in the network: exactly one result per worker and packet
  EXPECT_EQ(count(C::kFramesOut), 8u * 24);
  EXPECT_EQ(count(C::kResultsResent), 0u);
}

// One egress port held for a long time: the others stall behind it (after their FIFOs), the
// result queue and then the ingress fill up; released, everything arrives once.
TEST_F(RtlTraffic, EgressPortHeld) {
  const JobSpec job = make_job(1, 4, 0, 8);
  install(0, job);
  const TrafficConfig cfg{
      .window = 8, .packets = 32, .max_count = 256, .timeout = 1'000'000, .seed = 8};
  Traffic t(tb, job, cfg);
  tb.set_egress_ready(2, false);
  for (int i = 0; i < 5000; ++i) t.step();
  EXPECT_GT(tb.ingress_stalls(0) + tb.ingress_stalls(1) + tb.ingress_stalls(3),
            0u);  // backpressure reached ingress
  tb.set_egress_ready(2, true);
  ASSERT_TRUE(t.run(200000));
  ASSERT_TRUE(run_until_idle());
  for (auto& f : tb.pop_egress()) t.egress.push_back(f);
  EXPECT_EQ(egress_difference(as_pairs(t.egress), replay(model, tb.take_decisions())), "");
  expect_counters_match_model();
  expect_results_exact(t, job, cfg);
  EXPECT_EQ(count(C::kFramesOut), 4u * 32);
}

// int32 in any arrival order: the model takes the frames one by one in the order they arrived
// (not the RTL's groups) and gives the same result frames.
TEST_F(RtlTraffic, Int32AnyArrivalOrder) {
  const JobSpec job = make_job(1, 6, 0, 4);
  install(0, job);
  tb.set_ingress_gaps(0.3);
  const TrafficConfig cfg{.window = 4,
                          .packets = 30,
                          .max_count = 200,
                          .random_ports = true,
                          .timeout = 1'000'000,
                          .seed = 9};
  Traffic t(tb, job, cfg);
  ASSERT_TRUE(t.run(400000));
  ASSERT_TRUE(run_until_idle());
  for (auto& f : tb.pop_egress()) t.egress.push_back(f);
  std::vector<std::pair<unsigned, Bytes>> expected;
  for (const auto& [port, bytes] : tb.take_arrivals())
    for (auto& f : model.process_frame(port, bytes)) expected.emplace_back(f.port, f.bytes);
  auto rtl = canonical(as_pairs(t.egress));
  auto ref = canonical(expected);
  for (auto* m : {&rtl, &ref})
    for (auto& [port, list] : *m)
      std::sort(list.begin(), list.end(), [](const Bytes& a, const Bytes& b) {
        return result_key(a) != result_key(b) ? result_key(a) < result_key(b)
                                              : result_rank(a) < result_rank(b);
      });
  EXPECT_EQ(rtl, ref);
  expect_results_exact(t, job, cfg);
}

// A hard reset (ap_rst_n) in the middle of traffic: everything back to power-on values; after
// programming again the aggregator works as a fresh one.
TEST_F(RtlTraffic, HardResetMidTraffic) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  {
    Traffic t(tb, job, {.window = 4, .packets = 40, .max_count = 200, .seed = 10});
    for (int i = 0; i < 1500; ++i) t.step();
  }
  tb.set_egress_ready(1, false);
  tb.step(37);  // frames half in, results half out
  tb.reset();
  tb.set_egress_ready(1, true);
  tb.pop_egress();
  EXPECT_EQ(tb.read32(csr::kAggUdpPort), wire::kUdpPort);
  EXPECT_EQ(tb.read32(csr::kAggIp), 0u);
  for (unsigned i = 0; i < csr::kCounterCount; ++i) EXPECT_EQ(counter(i), 0u);
  set_aggregator_address(tb, kAggregator);
  tb.push_frame(
      0, contribution_frame(job, {.job = 1, .rank = 0, .slot = 0, .seq = 0, .values = ints({1})}));
  ASSERT_TRUE(run_until_idle());
  EXPECT_EQ(count(C::kDroppedUnknownJob), 1u);  // the job table is empty: a notice says so
  const auto notice = decode_all(tb.pop_egress());
  ASSERT_EQ(notice.size(), 1u);
  EXPECT_EQ(notice[0].header.type, wire::MsgType::kNotice);
  EXPECT_EQ(notice[0].values, ints({int(wire::NoticeReason::kUnknownJob)}));
  tb.take_decisions();
  clear_counters(tb);
  model.reset();
  set_aggregator_address(model_bus, kAggregator);
  install(0, job);
  run_and_compare(
      job,
      {.window = 4, .packets = 40, .max_count = 200, .loss = 0.03, .timeout = 1500, .seed = 11});
}

// A soft reset (CONTROL) in the middle of traffic with egress backpressure: no egress frame is
// cut, queued results are dropped, slots, job table and counters are cleared; programmed again,
// the aggregator works as a fresh one.
TEST_F(RtlTraffic, SoftResetMidTraffic) {
  const JobSpec job = make_job(1, 4, 0, 4);
  install(0, job);
  tb.set_random_egress_ready(0.2);
  {
    Traffic t(tb, job, {.window = 4, .packets = 40, .max_count = 200, .seed = 12});
    for (int i = 0; i < 3000; ++i) t.step();
  }
  soft_reset(tb);
  for (unsigned i = csr::index(C::kAggregated); i <= csr::index(C::kResultsResent); ++i)
    EXPECT_EQ(counter(i), 0u) << csr::kCounterNames[i];
  ASSERT_TRUE(run_until_idle());  // what was still queued on ingress: no job any more
  EXPECT_EQ(count(C::kAggregated), 0u);
  EXPECT_EQ(count(C::kFramesIn) > 0 ? count(C::kDroppedUnknownJob) > 0 : true, true);
  for (unsigned i = csr::index(C::kMalformedTruncated); i < csr::kCounterCount; ++i)
    if (i != csr::index(C::kDroppedUnknownJob)) {
      EXPECT_EQ(counter(i), 0u) << i;
    }
  for (const auto& f : tb.pop_egress()) EXPECT_NO_THROW(decode_result(f));  // none cut
  EXPECT_EQ(tb.egress_protocol_errors(), 0u) << tb.last_protocol_error();
  EXPECT_EQ(tb.read32(csr::kAggIp), kAggIp);  // the aggregator's address stays
  tb.set_random_egress_ready(-1);
  tb.take_decisions();
  clear_counters(tb);
  model.reset();
  set_aggregator_address(model_bus, kAggregator);
  install(0, job);
  run_and_compare(job, {.window = 4, .packets = 40, .max_count = 200, .seed = 13});
}

// Several jobs at once with different element types and windows, sharing ports, with loss.
TEST_F(RtlTraffic, ThreeJobsAtOnce) {
  const JobSpec a = make_job(1, 4, 0, 4);
  const JobSpec b = make_job(2, 3, 4, 8);
  const JobSpec c = make_job(3, 2, 12, 2);
  install(0, a);
  install(3, b);
  install(7, c);
  const TrafficConfig ca{.window = 4,
                         .packets = 24,
                         .dtype = DataType::kInt32,
                         .loss = 0.02,
                         .timeout = 2000,
                         .seed = 14};
  const TrafficConfig cb{.window = 8,
                         .packets = 24,
                         .dtype = DataType::kFp32,
                         .loss = 0.02,
                         .timeout = 2000,
                         .seed = 15};
  const TrafficConfig cc{.window = 2,
                         .packets = 24,
                         .dtype = DataType::kBf16,
                         .loss = 0.02,
                         .timeout = 2000,
                         .seed = 16};
  Traffic ta(tb, a, ca), tb2(tb, b, cb), tc(tb, c, cc);
  Traffic* by_job[] = {nullptr, &ta, &tb2, &tc};
  std::vector<EgressFrame> all;
  for (int i = 0; i < 400000 && !(ta.done() && tb2.done() && tc.done()); ++i) {
    for (auto& f : tb.pop_egress()) {
      all.push_back(f);
      by_job[decode_result(f).header.job_id]->receive(f);
    }
    for (Traffic* t : {&ta, &tb2, &tc}) t->transmit_due();
    tb.step(1);
  }
  ASSERT_TRUE(ta.done() && tb2.done() && tc.done());
  ASSERT_TRUE(run_until_idle());
  for (auto& f : tb.pop_egress()) all.push_back(f);
  EXPECT_EQ(egress_difference(as_pairs(all), replay(model, tb.take_decisions())), "");
  expect_counters_match_model();
  expect_results_exact(ta, a, ca);
  expect_results_exact(tb2, b, cb);
  expect_results_exact(tc, c, cc);
  expect_balanced();
}

// ---- throughput ------------------------------------------------------------------------------

// All four ports present back-to-back packets to the same slots (full 17-beat fp32 and int32
// packets of 256 elements, 5-beat packets of 64, 2-beat packets of 16, header-only packets).
// The round decision is a pipeline that decides a port's next frame once its previous one is
// popped: one frame per port every kDecisionCycles cycles (docs/fpga-aggregator.md). Frames of
// at least that many beats run at full rate (every port takes one beat every cycle without a
// single stall, and the results keep pace); shorter frames at one frame per kDecisionCycles.
TEST_F(Rtl, FullRateWithBackToBackPackets) {
  constexpr unsigned kDecisionCycles = 5;
  struct Case {
    DataType dtype;
    unsigned count;
  };
  for (const Case& k :
       {Case{DataType::kFp32, 256}, Case{DataType::kInt32, 256}, Case{DataType::kInt32, 64},
        Case{DataType::kInt32, 16}, Case{DataType::kFp32, 0}}) {
    SCOPED_TRACE(fmt::format("{} x {}", k.count, wire::to_string(k.dtype)));
    // (one VerilatedContext per test: a fresh start is a reset, not a second model)
    tb.reset();
    model.reset();
    set_aggregator_address(tb, kAggregator);
    set_aggregator_address(model_bus, kAggregator);
    const JobSpec job = make_job(1, 4, 0, 16);
    install(0, job);
    const unsigned beats = 1 + (4 * k.count + 63) / 64;
    const unsigned period = std::max(beats, kDecisionCycles);  // cycles per frame and port
    constexpr std::uint32_t kPackets = 64;
    std::mt19937 rng(3);
    for (std::uint32_t p = 0; p < kPackets; ++p)
      for (std::uint16_t r = 0; r < 4; ++r) {
        Contribution c{.job = 1,
                       .rank = r,
                       .slot = std::uint16_t(p % 16),
                       .set = std::uint8_t((p / 16) % 2),
                       .seq = p,
                       .dtype = k.dtype};
        for (unsigned i = 0; i < k.count; ++i)
          c.values.push_back(k.dtype == DataType::kFp32 ? bits(float(int(rng() % 1000)) / 8)
                                                        : rng());
        tb.push_frame(r, contribution_frame(job, c));
      }
    ASSERT_TRUE(run_until_idle());
    for (unsigned p = 0; p < kPorts; ++p) {
      EXPECT_EQ(tb.ingress_beats(p), kPackets * beats) << "ingress port " << p;
      if (beats >= kDecisionCycles) {
        EXPECT_EQ(tb.ingress_stalls(p), 0u) << "ingress port " << p << " stalled";
      }
    }
    const auto egress = tb.pop_egress();
    EXPECT_EQ(egress.size(), 4u * kPackets);
    EXPECT_EQ(egress_difference(as_pairs(egress), replay(model, tb.take_decisions())), "");
    // every round was one group of four and the results kept pace with the ingress
    EXPECT_EQ(counter(csr::index(C::kCompletions)), kPackets);
    const std::uint64_t span = egress.back().last_beat_cycle - egress.front().first_beat_cycle;
    EXPECT_LE(span, kPackets * period + period);
  }
}

// Back-to-back groups on one (slot, set): the round decision reads a (slot, set)'s state three
// cycles before it writes it, so it must not decide a group while an earlier one on the same slot
// is still in flight. One slot, short packets, all four ports with random gaps (groups of one to
// four members on the same (slot, set) in consecutive cycles), every packet sent twice (joins,
// duplicates, resends and ahead drops mixed), against the model fed the same groups.
TEST_F(Rtl, DecisionPipelineOnOneSlot) {
  const JobSpec job = make_job(1, 4, 5, 1);
  install(0, job);
  tb.set_ingress_gaps(0.4);
  std::mt19937 rng(11);
  constexpr std::uint32_t kRounds = 120;
  for (std::uint32_t p = 0; p < kRounds; ++p)
    for (std::uint16_t r = 0; r < 4; ++r) {
      Contribution c{.job = 1,
                     .rank = r,
                     .slot = 5,
                     .set = std::uint8_t(p % 2),
                     .seq = p,
                     .dtype = (p % 3 == 0) ? DataType::kInt32 : DataType::kFp32};
      const unsigned count = 1 + p % 20;  // 1 or 2 payload beats
      for (unsigned i = 0; i < count; ++i)
        c.values.push_back(c.dtype == DataType::kFp32 ? bits(float(int(rng() % 1000)) / 8) : rng());
      const Bytes frame = contribution_frame(job, c);
      tb.push_frame(r, frame);
      tb.push_frame(r, frame);  // a duplicate right behind it
    }
  ASSERT_TRUE(run_until_idle());
  const auto decisions = tb.take_decisions();
  // The traffic did what the test is about: groups of several sizes, and groups on the slot
  // decided within the decision pipeline's depth of each other.
  std::set<std::size_t> sizes;
  unsigned close = 0;
  std::uint64_t last_group = 0;
  for (const RoundDecision& t : decisions) {
    if (t.group.empty()) continue;
    sizes.insert(t.group.size());
    if (last_group != 0 && t.cycle - last_group <= 4) ++close;
    last_group = t.cycle;
  }
  EXPECT_GE(sizes.size(), 3u);
  EXPECT_GE(close, 50u);
  EXPECT_GE(counter(csr::index(C::kCompletions)), kRounds / 4);
  EXPECT_GT(counter(csr::index(C::kDroppedDuplicate)) + counter(csr::index(C::kResultsResent)), 0u);
  EXPECT_EQ(egress_difference(as_pairs(tb.pop_egress()), replay(model, decisions)), "");
  expect_balanced();
}

}  // namespace
}  // namespace netagg::rtltest

// SPDX-License-Identifier: Apache-2.0
// The HLS aggregator's function through its reference API (netagg_hls/reference.hpp): jobs
// programmed through its CSRs by driver/fpga, frames built and results checked with the host's wire
// code, sums computed here independently (int32 wrapping, fp32 with C++ float in the spec's
// order, bf16 through fp32 and an independent rounding).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fpga_test_util.hpp"
#include "netagg/error.hpp"
#include "netagg/reduce.hpp"

namespace netagg::fpga {
namespace {

using namespace netagg::fpga::testing;  // NOLINT
// csr::Counter, not fpga::Counter (a counter read back by name).
using Counter = csr::Counter;
using Model = ReferenceModel<>;

class HlsAggregator : public ::testing::Test {
 protected:
  HlsAggregator() { set_aggregator_address(bus_, kAggregator); }

  void install(unsigned entry, const JobSpec& job) { program_job(bus_, job, entry, kAggregator); }
  std::uint64_t count(Counter c) { return model_.counter(csr::index(c)); }
  // Every counter but the ones named is zero.
  void expect_only(std::initializer_list<std::pair<Counter, std::uint64_t>> nonzero) {
    for (std::size_t i = 0; i < csr::kCounterCount; ++i) {
      std::uint64_t want = 0;
      for (const auto& [c, v] : nonzero)
        if (csr::index(c) == i) want = v;
      EXPECT_EQ(model_.counter(static_cast<unsigned>(i)), want) << csr::kCounterNames[i];
    }
  }

  Model model_;
  ModelBus<Model> bus_{model_};
  std::mt19937 rng_{12345};
};

std::vector<std::uint32_t> random_words(std::mt19937& rng, std::size_t n) {
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = static_cast<std::uint32_t>(rng());
  return v;
}

std::vector<float> random_floats(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 30);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

std::vector<std::uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (float x : v) out.push_back(bits(x));
  return out;
}

// ---- CSRs ------------------------------------------------------------------------------------

TEST_F(HlsAggregator, IdentityRegistersAndResetValues) {
  Model fresh;
  EXPECT_EQ(fresh.csr_read(csr::kVersion), 0x00010001u);
  EXPECT_EQ(fresh.csr_read(csr::kFeatures), 4u | 0x10u | 0x20u | 8u << 8 | 6u << 16 | 16u << 24);
  EXPECT_EQ(fresh.csr_read(csr::kStatus), 0u);
  EXPECT_EQ(fresh.csr_read(csr::kAggUdpPort), csr::kAggUdpPortReset);
  for (const auto& r : csr::kRegisters) {
    if (r.access == csr::Access::kReadWrite) {
      EXPECT_EQ(fresh.csr_read(r.offset), r.reset) << r.name;
    }
  }
  ReferenceModel<Params<8, 1024, 4, 3, 32>> other;
  EXPECT_EQ(other.csr_read(csr::kFeatures), 8u | 0x10u | 0x20u | 3u << 8 | 10u << 16 | 4u << 24);
  ReferenceModel<Params<8, 1024, 4, 3, 32, false>> without_exact;  // FEATURES bit 5 clear
  EXPECT_EQ(without_exact.csr_read(csr::kFeatures), 8u | 0x10u | 3u << 8 | 10u << 16 | 4u << 24);
}

TEST_F(HlsAggregator, ReadWriteRegistersReadBackAndReadOnlyIgnoreWrites) {
  Model m;
  std::uint32_t value = 0x1234567;
  for (const auto& r : csr::kRegisters) {
    if (r.access != csr::Access::kReadWrite || r.offset == csr::kCommit ||
        r.offset == csr::kControl)
      continue;
    m.csr_write(r.offset, value);
    EXPECT_EQ(m.csr_read(r.offset), value) << r.name;
    value = value * 2654435761u + 1;
  }
  m.csr_write(csr::kVersion, 0);
  m.csr_write(csr::kFeatures, 0);
  m.csr_write(csr::kStatus, 1);
  EXPECT_EQ(m.csr_read(csr::kVersion), 0x00010001u);
  EXPECT_EQ(m.csr_read(csr::kStatus), 0u);
  m.csr_write(0x04C, 5);  // unmapped
  EXPECT_EQ(m.csr_read(0x04C), 0u);
  EXPECT_EQ(m.csr_read(0x800), 0u);
  // Addresses wrap at CSR_ADDR_BITS and are aligned down.
  m.csr_write(csr::kAggIp + 0x1000 + 2, 0xCAFE);
  EXPECT_EQ(m.csr_read(csr::kAggIp), 0xCAFEu);
}

TEST_F(HlsAggregator, CommitActsOncePerSequenceChange) {
  const JobSpec job = make_job(5, 2, 0, 2, 16);
  install(0, job);
  // Rewrite the entry's fields to another id and commit with the SAME COMMIT value as before:
  // nothing happens, job 5 stays.
  const std::uint32_t last_commit = model_.csr_read(csr::kCommit);
  model_.csr_write(csr::kJobId, 0x80000000u | 6);
  model_.csr_write(csr::kCommit, last_commit);
  const std::vector<std::uint32_t> v{1, 2};
  model_.process_frame(0, contribution_frame(job, 0, 0, v));
  EXPECT_EQ(count(Counter::kAggregated), 1u);
  // A new sequence with the same command stores job 6 into the entry (and clears its slots).
  model_.csr_write(csr::kCommit, ((last_commit >> 16) + 1) << 16 | 1);
  model_.process_frame(0, contribution_frame(job, 0, 2, v));
  EXPECT_EQ(count(Counter::kDroppedUnknownJob), 1u);
  JobSpec six = job;
  six.job_id = 6;
  model_.process_frame(0, contribution_frame(six, 0, 0, v));
  EXPECT_EQ(count(Counter::kAggregated), 2u);  // slot 0 was cleared: a new round, not stale
  // Command 0 with a new sequence does nothing.
  model_.csr_write(csr::kCommit, ((last_commit >> 16) + 2) << 16 | 0);
  model_.process_frame(0, contribution_frame(six, 1, 0, v));
  EXPECT_EQ(count(Counter::kCompletions), 1u);
}

TEST_F(HlsAggregator, CountersReadThroughIndexLoHiWithLatching) {
  model_.core().debug_set_counter(csr::index(Counter::kDroppedStale), 0x0000000500000007ull);
  model_.csr_write(csr::kCounterIndex, csr::index(Counter::kDroppedStale));
  EXPECT_EQ(model_.csr_read(csr::kCounterLo), 7u);
  model_.core().debug_set_counter(csr::index(Counter::kDroppedStale), 0x0000000900000008ull);
  EXPECT_EQ(model_.csr_read(csr::kCounterHi), 5u);  // latched by the LO read
  EXPECT_EQ(read_counter(bus_, csr::index(Counter::kDroppedStale)), 0x0000000900000008ull);
  model_.csr_write(csr::kCounterIndex, 999);
  EXPECT_EQ(model_.csr_read(csr::kCounterLo), 0u);
  EXPECT_EQ(model_.csr_read(csr::kCounterHi), 0u);
  // CONTROL bit 1 clears the counters, once per sequence.
  clear_counters(bus_);
  EXPECT_EQ(read_counter(bus_, csr::index(Counter::kDroppedStale)), 0u);
}

TEST_F(HlsAggregator, SoftResetClearsJobsSlotsAndCountersButNotTheAddress) {
  const JobSpec job = make_job(3, 2, 4, 2, 16);
  install(2, job);
  const std::vector<std::uint32_t> v{1, 2, 3};
  model_.process_frame(0, contribution_frame(job, 0, 7, v));
  EXPECT_TRUE(model_.core().round_state(5, 1).has_round);
  soft_reset(bus_);
  expect_only({});
  EXPECT_FALSE(model_.core().round_state(5, 1).has_round);
  EXPECT_EQ(model_.csr_read(csr::kAggIp), kAggIp);
  const auto gone = contribution_frame(job, 0, 7, v);
  EXPECT_EQ(model_.process_frame(0, gone),
            std::vector{expected_notice(0, gone, wire::NoticeReason::kUnknownJob)});
  expect_only({{Counter::kFramesIn, 1},
               {Counter::kDroppedUnknownJob, 1},
               {Counter::kNotices, 1},
               {Counter::kFramesOut, 1}});
  // Re-installed, packet 1 (older than the 7 before the reset) starts a round: no stale state.
  install(2, job);
  model_.process_frame(0, contribution_frame(job, 0, 1, v));
  const auto results = model_.process_frame(1, contribution_frame(job, 1, 1, v));
  const std::vector<std::uint32_t> sum{2, 4, 6};
  EXPECT_EQ(results, expected_multicast(job, contribution_header(job, 0, 1, 3), sum));
}

TEST_F(HlsAggregator, HardResetRestoresPowerOnValues) {
  install(0, make_job(1, 2, 0, 4, 16));
  model_.csr_write(csr::kAggUdpPort, 9999);
  model_.reset();
  EXPECT_EQ(model_.csr_read(csr::kAggUdpPort), 20033u);
  EXPECT_EQ(model_.csr_read(csr::kAggIp), 0u);
  EXPECT_EQ(model_.csr_read(csr::kCommit), 0u);
  const std::vector<std::uint32_t> v{1};
  model_.process_frame(0, contribution_frame(make_job(1, 2, 0, 4, 16), 0, 0, v));
  EXPECT_EQ(count(Counter::kDroppedUnknownJob), 1u);
}

TEST_F(HlsAggregator, InvalidJobEntriesAreNotInstalled) {
  JobSpec job = make_job(4, 2, 0, 4, 16);
  install(0, job);
  model_.csr_write(csr::kJobWorkers, 33);  // more than MAX_WORKERS
  commit(bus_, Command::kStoreJob);
  const std::vector<std::uint32_t> v{1};
  model_.process_frame(0, contribution_frame(job, 0, 0, v));
  model_.csr_write(csr::kJobWorkers, 2);
  model_.csr_write(csr::kJobId, 4);  // valid bit clear
  commit(bus_, Command::kStoreJob);
  model_.process_frame(0, contribution_frame(job, 0, 0, v));
  model_.csr_write(csr::kJobIndex, 8);  // beyond MAX_JOBS: ignored
  model_.csr_write(csr::kJobId, 0x80000000u | 4);
  commit(bus_, Command::kStoreJob);
  model_.process_frame(0, contribution_frame(job, 0, 0, v));
  EXPECT_EQ(count(Counter::kDroppedUnknownJob), 3u);
}

// JOB_ENTRY_* read back the entry JOB_INDEX selects as the table holds it (not the staging
// registers), and read 0 for an entry that holds no valid job or is beyond the table; the
// synthesized top's output registers show the same.
TEST_F(HlsAggregator, JobTableReadsBackEntryByEntry) {
  const auto entry_registers = [&](std::uint32_t index) {
    model_.csr_write(csr::kJobIndex, index);
    return std::vector<std::uint32_t>{
        model_.csr_read(csr::kJobEntryId), model_.csr_read(csr::kJobEntryWorkers),
        model_.csr_read(csr::kJobEntrySlots), model_.csr_read(csr::kJobEntryElements),
        model_.csr_read(csr::kJobEntryParentId)};
  };
  const std::vector<std::uint32_t> empty(5, 0);
  EXPECT_TRUE(read_device_info(bus_).job_table_readback);
  for (std::uint32_t e = 0; e < 8; ++e) EXPECT_EQ(entry_registers(e), empty) << "entry " << e;

  install(0, make_job(5, 2, 0, 4, 16));
  JobSpec child = make_job(7, 3, 8, 2, 64);
  child.parent = ParentSpec{{0x0A00C801, 40000}, 40, 2, 20, std::nullopt, std::nullopt};
  install(3, child);
  EXPECT_EQ(entry_registers(3),
            (std::vector<std::uint32_t>{csr::kJobEntryValid | 7, 3, 2u << 16 | 8, 64,
                                        csr::kJobEntryHasParent | 40}));
  EXPECT_EQ(entry_registers(0),
            (std::vector<std::uint32_t>{csr::kJobEntryValid | 5, 2, 4u << 16, 16, 0}));
  // The staging registers are not the entry.
  model_.csr_write(csr::kJobId, csr::kJobIdValid | 9);
  model_.csr_write(csr::kJobWorkers, 1);
  model_.csr_write(csr::kJobSlots, 1u << 16 | 60);
  EXPECT_EQ(entry_registers(0)[0], csr::kJobEntryValid | 5);
  EXPECT_EQ(entry_registers(0)[2], 4u << 16);
  // The top's output registers follow JOB_INDEX too.
  CsrOutputs out{};
  model_.csr_write(csr::kJobIndex, 3);
  model_.core().csr_outputs(out);
  EXPECT_EQ(out.job_entry_id, csr::kJobEntryValid | 7);
  EXPECT_EQ(out.job_entry_workers, 3u);
  EXPECT_EQ(out.job_entry_slots, 2u << 16 | 8);
  EXPECT_EQ(out.job_entry_elements, 64u);
  EXPECT_EQ(out.job_entry_parent_id, csr::kJobEntryHasParent | 40);
  for (std::uint32_t e : {1u, 2u, 7u, 8u, 0xFFFFFFFFu})
    EXPECT_EQ(entry_registers(e), empty) << "entry " << e;

  const JobTableEntry read = read_job_entry(bus_, 3);
  EXPECT_EQ(read.entry, 3u);
  EXPECT_TRUE(read.valid);
  EXPECT_EQ(read.job_id, 7u);
  EXPECT_EQ(read.workers, 3u);
  EXPECT_EQ(read.slot_base, 8u);
  EXPECT_EQ(read.slot_count, 2u);
  EXPECT_EQ(read.elements_per_packet, 64u);
  EXPECT_EQ(read.parent_job_id, std::optional<std::uint16_t>(40));
  EXPECT_FALSE(read_job_entry(bus_, 0).parent_job_id);

  // Stored as not valid (more workers than the bitmap), removed, soft reset: empty.
  model_.csr_write(csr::kJobIndex, 0);
  model_.csr_write(csr::kJobId, csr::kJobIdValid | 5);
  model_.csr_write(csr::kJobWorkers, 33);
  commit(bus_, Command::kStoreJob);
  EXPECT_EQ(entry_registers(0), empty);
  remove_job(bus_, 3);
  EXPECT_EQ(entry_registers(3), empty);
  install(6, make_job(8, 2, 16, 2, 16));
  EXPECT_EQ(entry_registers(6)[0], csr::kJobEntryValid | 8);
  soft_reset(bus_);
  EXPECT_EQ(entry_registers(6), empty);
}

// ---- Reduction -------------------------------------------------------------------------------

TEST_F(HlsAggregator, Int32SumWrapsAndEveryWorkerGetsItsFrame) {
  const JobSpec job = make_job(1, 4, 0, 4, 256);
  install(0, job);
  std::uint32_t packet = 0;  // packets in order, as the engine sends them
  for (std::uint16_t count : {std::uint16_t{1}, std::uint16_t{16}, std::uint16_t{17},
                              std::uint16_t{100}, std::uint16_t{256}, std::uint16_t{0}}) {
    ++packet;
    std::vector<std::vector<std::uint32_t>> v;
    std::vector<std::uint32_t> sum(count, 0);
    std::vector<TxFrame> results;
    for (std::uint16_t r = 0; r < 4; ++r) {
      v.push_back(random_words(rng_, count));
      for (std::size_t i = 0; i < count; ++i) sum[i] += v[r][i];  // wraps
      const auto exponent = static_cast<std::int16_t>(r * 3 - 5);
      results = model_.process_frame(
          r, contribution_frame(job, r, packet, v[r], wire::DataType::kInt32, exponent));
      if (r < 3) {
        EXPECT_TRUE(results.empty());
      }
    }
    wire::Header h = contribution_header(job, 0, packet, count);
    h.exponent = 4;  // max of -5, -2, 1, 4
    EXPECT_EQ(results, expected_multicast(job, h, sum)) << "count " << count;
  }
  EXPECT_EQ(count(Counter::kCompletions), 6u);
  EXPECT_EQ(count(Counter::kFramesOut), 24u);
}

TEST_F(HlsAggregator, Fp32ArrivalOrderIsTheSummationOrder) {
  const JobSpec job = make_job(1, 4, 0, 4, 64);
  install(0, job);
  // Two arrival orders of the same contributions give each its own, different, sum.
  std::vector<std::vector<float>> x;
  for (int r = 0; r < 4; ++r) x.push_back(random_floats(rng_, 64));
  const int orders[2][4] = {{0, 1, 2, 3}, {3, 1, 0, 2}};
  std::vector<std::uint32_t> got[2];
  for (int o = 0; o < 2; ++o) {
    std::vector<float> expected = x[orders[o][0]];
    for (int k = 1; k < 4; ++k)
      for (std::size_t i = 0; i < 64; ++i) expected[i] = expected[i] + x[orders[o][k]][i];
    std::vector<TxFrame> results;
    for (int k = 0; k < 4; ++k) {
      const auto r = static_cast<std::uint16_t>(orders[o][k]);
      results = model_.process_frame(
          r, contribution_frame(job, r, o, float_bits(x[r]), wire::DataType::kFp32));
    }
    EXPECT_EQ(results,
              expected_multicast(job, contribution_header(job, 0, o, 64, wire::DataType::kFp32),
                                 float_bits(expected)));
    got[o] = decode_result(results.at(0)).values;
  }
  EXPECT_NE(got[0], got[1]) << "the data should make the order visible";
}

TEST_F(HlsAggregator, Fp32GroupsFollowTheAdderTree) {
  const JobSpec job = make_job(1, 4, 0, 4, 32);
  install(0, job);
  std::vector<std::vector<float>> x;
  for (int r = 0; r < 4; ++r) x.push_back(random_floats(rng_, 32));
  auto frame = [&](std::uint16_t r, std::uint32_t packet) {
    return RxFrame{r, contribution_frame(job, r, packet, float_bits(x[r]), wire::DataType::kFp32)};
  };
  auto check = [&](const std::vector<TxFrame>& results, std::uint32_t packet, auto order) {
    std::vector<float> e(32);
    for (std::size_t i = 0; i < 32; ++i) e[i] = order(x[0][i], x[1][i], x[2][i], x[3][i]);
    EXPECT_EQ(results, expected_multicast(
                           job, contribution_header(job, 0, packet, 32, wire::DataType::kFp32),
                           float_bits(e)));
  };
  // All four in one cycle.
  check(model_.process_group(std::vector{frame(0, 0), frame(1, 0), frame(2, 0), frame(3, 0)}), 0,
        [](float a, float b, float c, float d) { return (a + b) + (c + d); });
  // Port 0 alone starts the round (stored as is), then three ports together.
  EXPECT_TRUE(model_.process_group(std::vector{frame(0, 1)}).empty());
  check(model_.process_group(std::vector{frame(3, 1), frame(1, 1), frame(2, 1)}), 1,
        [](float a, float b, float c, float d) { return a + (b + (c + d)); });
  // Ports 1 and 3, then 0 and 2: the accumulator is the first operand.
  EXPECT_TRUE(model_.process_group(std::vector{frame(1, 2), frame(3, 2)}).empty());
  check(model_.process_group(std::vector{frame(2, 2), frame(0, 2)}), 2,
        [](float a, float b, float c, float d) { return (b + d) + (a + c); });
  // And one at a time, for contrast: arrival order.
  for (std::uint16_t r = 0; r < 3; ++r) model_.process_group(std::vector{frame(r, 3)});
  check(model_.process_group(std::vector{frame(3, 3)}), 3,
        [](float a, float b, float c, float d) { return ((a + b) + c) + d; });
}

// NaN payloads tell the operand order apart (plain values only show the grouping): with x86's
// rules the first operand's NaN wins, so each lane shows which port was the left operand.
TEST_F(HlsAggregator, NanPayloadsShowTheTreesOperandOrder) {
  const JobSpec job = make_job(1, 5, 0, 4, 16);
  install(0, job);
  // Lane l of port p: a NaN with payload p+1 where bit l of mask[p] is set, else 1.0.
  const unsigned mask[5] = {0b00001, 0b10110, 0b01100, 0b11010, 0b10000};
  std::vector<std::vector<std::uint32_t>> v(5, std::vector<std::uint32_t>(5));
  for (int p = 0; p < 5; ++p)
    for (int l = 0; l < 5; ++l)
      v[p][l] = (mask[p] >> l) & 1 ? 0x7F800000u | static_cast<std::uint32_t>(p + 1) : bits(1.0f);
  auto frame = [&](std::uint16_t r) {
    return RxFrame{static_cast<unsigned>(r % 4),
                   contribution_frame(job, r, 0, v[r], wire::DataType::kFp32)};
  };
  // Rank 4 first, alone (stored as is); then ranks 0..3 on ports 0..3 in one cycle.
  EXPECT_TRUE(model_.process_group(std::vector{frame(4)}).empty());
  const auto results = model_.process_group(std::vector{frame(0), frame(1), frame(2), frame(3)});
  std::vector<std::uint32_t> expected(5);
  for (int l = 0; l < 5; ++l)
    expected[l] =
        host_add(v[4][l], host_add(host_add(v[0][l], v[1][l]), host_add(v[2][l], v[3][l])));
  EXPECT_EQ(results, expected_multicast(
                         job, contribution_header(job, 0, 0, 5, wire::DataType::kFp32), expected));
  // Each lane with two NaNs meeting shows the left operand: lane 1 p1 (not p3), lane 2 p1 (not
  // p2), lane 3 p2 (not p3), lane 4 the accumulator, rank 4 (not the tree's p1).
  const std::uint32_t left_payload[5] = {1, 2, 2, 3, 5};
  for (int l = 0; l < 5; ++l) EXPECT_EQ(expected[l], 0x7FC00000u | left_payload[l]) << "lane " << l;
}

TEST_F(HlsAggregator, Bf16AccumulatesInFp32AndRoundsTheResult) {
  const JobSpec job = make_job(1, 3, 0, 4, 256);
  install(0, job);
  for (std::uint16_t count : {std::uint16_t{37}, std::uint16_t{256}}) {
    std::vector<std::vector<std::uint32_t>> h(3);  // bf16 in the low 16 bits
    std::vector<float> acc(count);
    for (int r = 0; r < 3; ++r) {
      for (float f : random_floats(rng_, count))
        h[r].push_back(bits(f) >> 16);  // truncated to a bf16
      for (std::size_t i = 0; i < count; ++i) {
        const float widened = from_bits(h[r][i] << 16);
        acc[i] = r == 0 ? widened : acc[i] + widened;  // fp32, arrival order
      }
    }
    std::vector<std::uint32_t> expected;
    for (float f : acc) expected.push_back(reference_bf16(bits(f)));
    std::vector<TxFrame> results;
    for (std::uint16_t r = 0; r < 3; ++r)
      results =
          model_.process_frame(r, contribution_frame(job, r, count, h[r], wire::DataType::kBf16));
    EXPECT_EQ(results,
              expected_multicast(
                  job, contribution_header(job, 0, count, count, wire::DataType::kBf16), expected));
  }
}

TEST_F(HlsAggregator, SpecialFloatValuesFollowTheNanRules) {
  const JobSpec job = make_job(1, 2, 0, 4, 16);
  install(0, job);
  const std::vector<std::uint32_t> a{0x7F800000u, 0x7F800000u, 0x7FA00001u, 0x3F800000u,
                                     0x80000000u, 0x00000001u, 0x7F7FFFFFu};
  const std::vector<std::uint32_t> b{0xFF800000u, 0x3F800000u, 0xFFB00002u, 0xFFA00003u,
                                     0x80000000u, 0x80000001u, 0x7F7FFFFFu};
  const std::vector<std::uint32_t> sum{0xFFC00000u, 0x7F800000u, 0x7FE00001u, 0xFFE00003u,
                                       0x80000000u, 0x00000000u, 0x7F800000u};
  model_.process_frame(0, contribution_frame(job, 0, 0, a, wire::DataType::kFp32));
  const auto results =
      model_.process_frame(1, contribution_frame(job, 1, 0, b, wire::DataType::kFp32));
  EXPECT_EQ(results,
            expected_multicast(job, contribution_header(job, 0, 0, 7, wire::DataType::kFp32), sum));
}

// The host fallback's reduce_round (host/src/reduce.cpp) is this aggregator taking a round's
// contributions in rank order, bit for bit: int32 with its exponent max, fp32 with specials in
// both operand positions, bf16 through fp32.
TEST_F(HlsAggregator, HostReduceIsTheAggregatorInRankOrder) {
  const JobSpec job = make_job(1, 3, 0, 4, 64);
  install(0, job);
  const std::vector<std::uint32_t> specials{0x7F800000u, 0xFF800000u, 0x7FA00001u, 0xFFB00002u,
                                            0x80000000u, 0x00000001u, 0x7F7FFFFFu, 0x3F800000u};
  std::uint32_t packet = 0;
  for (const wire::DataType dtype :
       {wire::DataType::kInt32, wire::DataType::kFp32, wire::DataType::kBf16}) {
    for (int trial = 0; trial < 3; ++trial, ++packet) {
      std::vector<Bytes> packets;
      std::vector<TxFrame> results;
      for (std::uint16_t r = 0; r < 3; ++r) {
        std::vector<std::uint32_t> v = dtype == wire::DataType::kInt32
                                           ? random_words(rng_, 64)
                                           : float_bits(random_floats(rng_, 64));
        // Specials in every operand position over the ranks and trials.
        for (std::size_t i = 0; i < specials.size(); ++i)
          if ((i + r + static_cast<std::size_t>(trial)) % 3 == 0) v[i] = specials[i];
        if (dtype == wire::DataType::kBf16)
          for (auto& x : v) x >>= 16;
        const auto exponent =
            static_cast<std::int16_t>(dtype == wire::DataType::kInt32 ? 3 * r - 2 : -32768);
        wire::Header h = contribution_header(job, r, packet, 64, dtype);
        h.exponent = exponent;
        packets.push_back(encode_packet(h, v));
        results = model_.process_frame(r, contribution_frame(job, r, packet, v, dtype, exponent));
      }
      ASSERT_FALSE(results.empty());
      const Result got = decode_result(results.at(0));
      std::vector<wire::Decoded> contributions;
      for (const Bytes& p : packets) contributions.push_back(wire::decode(p));
      wire::Header reduced;
      Bytes payload(64 * 4);
      reduce_round(contributions, reduced, payload);
      EXPECT_EQ(reduced.exponent, got.header.exponent);
      EXPECT_EQ(reduced.count, got.header.count);
      const Bytes want(got.bytes.end() - static_cast<std::ptrdiff_t>(reduced.payload_size()),
                       got.bytes.end());
      EXPECT_EQ(Bytes(payload.begin(),
                      payload.begin() + static_cast<std::ptrdiff_t>(reduced.payload_size())),
                want)
          << "dtype " << static_cast<int>(dtype) << " trial " << trial;
    }
  }
  // Contributions of different shapes are no round: refused, naming the rank.
  std::vector<Bytes> odd{encode_packet(contribution_header(job, 0, 0, 4), random_words(rng_, 4)),
                         encode_packet(contribution_header(job, 1, 0, 5), random_words(rng_, 5))};
  const std::vector<wire::Decoded> mixed{wire::decode(odd[0]), wire::decode(odd[1])};
  wire::Header h;
  Bytes out(64);
  EXPECT_THROW(reduce_round(mixed, h, out), Error);
}

TEST_F(HlsAggregator, ExponentIsTheMaxAndEcnTheOr) {
  const JobSpec job = make_job(1, 4, 0, 4, 16);
  install(0, job);
  const std::vector<std::uint32_t> v{1};
  const std::int16_t exps[4] = {wire::kExponentNone, -7, 12, 3};
  const std::uint8_t ecn[4] = {0, 1, 0, 2};
  std::vector<TxFrame> results;
  for (std::uint16_t r = 0; r < 4; ++r)
    results = model_.process_frame(
        r, contribution_frame(job, r, 0, v, wire::DataType::kInt32, exps[r], ecn[r]));
  wire::Header h = contribution_header(job, 0, 0, 1);
  h.exponent = 12;
  const std::vector<std::uint32_t> sum{4};
  EXPECT_EQ(results, expected_multicast(job, h, sum, 3));
  for (const Result& r : decode_all(results)) EXPECT_EQ(r.address.ecn, 3);  // checksum valid too
  // A resend carries the round's OR, not the retransmission's own bits.
  const auto resend =
      model_.process_frame(0, contribution_frame(job, 0, 0, v, wire::DataType::kInt32, 0, 0));
  ASSERT_EQ(resend.size(), 1u);
  EXPECT_EQ(resend[0], expected_result(job, 0, h, sum, 3));
  // A round without marks has ECN 0.
  for (std::uint16_t r = 0; r < 4; ++r)
    results = model_.process_frame(r, contribution_frame(job, r, 1, v));
  for (const Result& r : decode_all(results)) EXPECT_EQ(r.address.ecn, 0);
}

// ---- Egress ----------------------------------------------------------------------------------

TEST_F(HlsAggregator, ResultsLeaveOnEachWorkersEgressPort) {
  JobSpec job = make_job(2, 5, 8, 2, 16);
  const unsigned egress[5] = {2, 2, 0, 3, 2};
  for (int r = 0; r < 5; ++r) job.workers[r].switch_port = static_cast<std::uint16_t>(egress[r]);
  install(1, job);
  const std::vector<std::uint32_t> v{5, 6};
  std::vector<TxFrame> results;
  for (std::uint16_t r = 0; r < 5; ++r)
    results = model_.process_frame(r % 4, contribution_frame(job, r, 0, v));
  ASSERT_EQ(results.size(), 5u);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(results[r].port, egress[r]);
    EXPECT_EQ(decode_result(results[r]).header.rank, r);
    EXPECT_EQ(decode_result(results[r]).address.dst_ip, job.workers[r].address.ip);
  }
  // A resend leaves on the requester's egress port, whatever port its retransmission came in on.
  const auto resend = model_.process_frame(1, contribution_frame(job, 3, 0, v));
  ASSERT_EQ(resend.size(), 1u);
  EXPECT_EQ(resend[0].port, 3u);
  // An egress port beyond NUM_PORTS is stored as port 0.
  model_.csr_write(csr::kJobIndex, 1);
  model_.csr_write(csr::kWorkerIndex, 4);
  model_.csr_write(csr::kWorkerIp, job.workers[4].address.ip);
  model_.csr_write(csr::kWorkerUdpPort, 9u << 16 | job.workers[4].address.port);
  commit(bus_, Command::kStoreWorker);
  const auto again = model_.process_frame(0, contribution_frame(job, 4, 0, v));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].port, 0u);
}

// ---- Rounds: the switch model's loss-recovery cases -----------------------------------------

class HlsRounds : public HlsAggregator {
 protected:
  // Two workers, W = 2 slots at [10, 12).
  HlsRounds() { install(0, job_); }
  std::vector<TxFrame> send(std::uint16_t rank, std::uint32_t packet) {
    return model_.process_frame(rank, frame(rank, packet));
  }
  Bytes frame(std::uint16_t rank, std::uint32_t packet) const {
    return contribution_frame(job_, rank, packet, values(rank, packet));
  }
  // The notice that answers rank's packet, sent on port `rank`, dropped for `reason`.
  std::vector<TxFrame> notice(std::uint16_t rank, std::uint32_t packet, wire::NoticeReason reason,
                              std::optional<std::uint32_t> waiting = std::nullopt) const {
    if (waiting) return {expected_notice(rank, frame(rank, packet), reason, *waiting)};
    return {expected_notice(rank, frame(rank, packet), reason)};
  }
  static std::vector<std::uint32_t> values(std::uint16_t rank, std::uint32_t packet) {
    return {packet * 100 + rank, packet + 1000u * rank};
  }
  static std::vector<std::uint32_t> sum(std::uint32_t packet) {
    return {2 * packet * 100 + 1, 2 * packet + 1000};
  }
  std::vector<TxFrame> results(std::uint32_t packet) const {
    return expected_multicast(job_, contribution_header(job_, 0, packet, 2), sum(packet));
  }
  TxFrame result_for(std::uint16_t rank, std::uint32_t packet) const {
    return expected_result(job_, rank, contribution_header(job_, 0, packet, 2), sum(packet));
  }
  JobSpec job_ = make_job(9, 2, 10, 2, 16);
};

TEST_F(HlsRounds, RetransmissionAfterCompletionGetsTheResultByUnicast) {
  EXPECT_TRUE(send(0, 0).empty());
  EXPECT_EQ(send(1, 0), results(0));
  EXPECT_EQ(send(1, 0), std::vector{result_for(1, 0)});
  EXPECT_EQ(send(0, 0), std::vector{result_for(0, 0)});
  expect_only({{Counter::kFramesIn, 4},
               {Counter::kAggregated, 2},
               {Counter::kCompletions, 1},
               {Counter::kFramesOut, 4},
               {Counter::kResultsResent, 2}});
}

// Each duplicate is answered with a notice that names the ranks the round waits for.
TEST_F(HlsRounds, DuplicateOfAContributionInProgressIsDropped) {
  EXPECT_TRUE(send(0, 0).empty());
  EXPECT_EQ(send(0, 0), notice(0, 0, wire::NoticeReason::kDuplicate, 0b10));
  EXPECT_EQ(send(0, 0), notice(0, 0, wire::NoticeReason::kDuplicate, 0b10));
  EXPECT_EQ(count(Counter::kDroppedDuplicate), 2u);
  EXPECT_EQ(count(Counter::kNotices), 2u);
  EXPECT_EQ(send(1, 0), results(0));  // the duplicate did not count twice
}

TEST_F(HlsRounds, ShadowCopyInTheOtherSetAnswersALateWorker) {
  // Packets 0 and 1 complete (slots 10 and 11, set 0); packet 2 (slot 10, set 1) starts.
  send(0, 0), send(1, 0), send(0, 1), send(1, 1);
  EXPECT_TRUE(send(0, 2).empty());
  // Rank 1 lost packet 0's result: its retransmission finds set 0 complete (its bit still set).
  EXPECT_EQ(send(1, 0), std::vector{result_for(1, 0)});
  // Rank 0's packet 2 cleared its bit in set 0: the stored result still answers it.
  EXPECT_EQ(send(0, 0), std::vector{result_for(0, 0)});
  EXPECT_EQ(send(1, 2), results(2));
}

TEST_F(HlsRounds, BothSetsInFlight) {
  send(0, 0), send(1, 0), send(0, 1), send(1, 1);
  send(0, 2);  // set 1 of slot 10 in progress, set 0 holds packet 0's result
  EXPECT_EQ(send(1, 0), std::vector{result_for(1, 0)});                       // set 0: resend
  EXPECT_EQ(send(0, 2), notice(0, 2, wire::NoticeReason::kDuplicate, 0b10));  // set 1
  EXPECT_EQ(send(1, 2), results(2));                                          // set 1: completes
  EXPECT_EQ(send(0, 2), std::vector{result_for(0, 2)});
  EXPECT_EQ(count(Counter::kDroppedDuplicate), 1u);
  EXPECT_EQ(count(Counter::kResultsResent), 2u);
}

TEST_F(HlsRounds, SlotsAreReusedRoundAfterRound) {
  for (std::uint32_t p = 0; p < 40; ++p) {
    EXPECT_TRUE(send(p % 2, p).empty());
    EXPECT_EQ(send(1 - p % 2, p), results(p)) << "packet " << p;
  }
  expect_only({{Counter::kFramesIn, 80},
               {Counter::kAggregated, 80},
               {Counter::kCompletions, 40},
               {Counter::kFramesOut, 80}});
}

TEST_F(HlsRounds, StaleAndPreviousSet) {
  send(0, 0), send(1, 0), send(0, 1), send(1, 1), send(0, 2), send(1, 2);
  // Slot 10 set 0 held packet 0, now... packet 4 (slot 10, set 0) starts there.
  EXPECT_TRUE(send(0, 4).empty());
  // A copy of packet 0: older than set 0's round: stale (the first of rank 1's: a notice).
  EXPECT_EQ(send(1, 0), notice(1, 0, wire::NoticeReason::kStale));
  EXPECT_EQ(count(Counter::kDroppedStale), 1u);
  EXPECT_EQ(send(1, 4), results(4));
  // Previous set: packet 2 (set 1) is complete; a copy still gets its result, packet 0 is stale
  // (rank 0's first: a notice too, whatever rank 1's drops).
  EXPECT_EQ(send(0, 2), std::vector{result_for(0, 2)});
  EXPECT_EQ(send(0, 0), notice(0, 0, wire::NoticeReason::kStale));
  EXPECT_EQ(count(Counter::kDroppedStale), 2u);
}

// Another run (epoch) takes a set over with its first fresh packet, whatever round of the
// earlier run the set holds: counted once in epoch_takeovers (and in aggregated). The run's
// other fresh packets join its round; a packet of it that is not fresh is stale_epoch.
TEST_F(HlsRounds, AnotherRunTakesASetOverOnce) {
  EXPECT_TRUE(send(0, 0).empty());  // the earlier run (epoch 0) leaves packet 0's round open
  auto next_run = [&](std::uint16_t rank, std::uint8_t fresh) {
    return model_.process_frame(rank, contribution_frame(job_, Contribution{.job = job_.job_id,
                                                                            .rank = rank,
                                                                            .slot = 10,
                                                                            .values = {5, 6},
                                                                            .epoch = 2,
                                                                            .fresh = fresh}));
  };
  EXPECT_EQ(next_run(1, 0).size(), 1u);  // not fresh: stale_epoch, a notice
  EXPECT_EQ(count(Counter::kEpochTakeovers), 0u);
  EXPECT_TRUE(next_run(0, 1).empty());  // takes the set over
  EXPECT_EQ(count(Counter::kEpochTakeovers), 1u);
  EXPECT_EQ(next_run(1, 1).size(), 2u);  // joins and completes the new run's round
  expect_only({{Counter::kFramesIn, 4},
               {Counter::kAggregated, 3},
               {Counter::kDroppedStaleEpoch, 1},
               {Counter::kEpochTakeovers, 1},
               {Counter::kCompletions, 1},
               {Counter::kNotices, 1},
               {Counter::kFramesOut, 3}});
}

TEST_F(HlsRounds, SeqComparisonWrapsAround) {
  JobSpec job = make_job(3, 2, 0, 1, 4);
  install(1, job);
  const std::vector<std::uint32_t> v{1};
  for (std::uint32_t p : {0xFFFFFFFEu, 0xFFFFFFFFu, 0u, 1u}) {
    model_.process_frame(0, contribution_frame(job, 0, p, v));
    EXPECT_EQ(model_.process_frame(1, contribution_frame(job, 1, p, v)).size(), 2u) << p;
  }
  model_.process_frame(0, contribution_frame(job, 0, 0xFFFFFFFFu, v));
  EXPECT_EQ(count(Counter::kDroppedStale), 1u);
}

TEST_F(HlsRounds, CountAndDtypeMustMatchTheRound) {
  send(0, 0);
  const std::vector<std::uint32_t> three{1, 2, 3}, two{1, 2};
  model_.process_frame(1, contribution_frame(job_, 1, 0, three));
  EXPECT_EQ(count(Counter::kDroppedCountMismatch), 1u);
  model_.process_frame(1, contribution_frame(job_, 1, 0, two, wire::DataType::kFp32));
  EXPECT_EQ(count(Counter::kDroppedDtypeMismatch), 1u);
  EXPECT_EQ(send(1, 0), results(0));
  // After completion the seq decides: a new packet may change count and dtype.
  const auto r =
      model_.process_frame(0, contribution_frame(job_, 0, 2, three, wire::DataType::kFp32));
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(model_.core().round_state(10, 1).dtype, unsigned(wire::DataType::kFp32));
}

TEST_F(HlsRounds, GroupDecidesInPortOrder) {
  // One cycle: rank 0 twice is impossible (one frame per port), but a duplicate on two ports
  // is not: the first joins, the second is a duplicate (its notice, on its port, says the round
  // waits for rank 1 alone: rank 0 joined before it).
  std::vector<RxFrame> g{{0, frame(0, 0)}, {1, frame(0, 0)}};
  EXPECT_EQ(model_.process_group(g),
            std::vector{expected_notice(1, frame(0, 0), wire::NoticeReason::kDuplicate, 0b10)});
  EXPECT_EQ(count(Counter::kDroppedDuplicate), 1u);
  // The completing contribution and a retransmission behind it in port order: the round
  // completes, then the retransmission gets the result.
  std::vector<RxFrame> h{{2, contribution_frame(job_, 1, 0, values(1, 0))},
                         {3, contribution_frame(job_, 0, 0, values(0, 0))}};
  auto out = results(0);
  out.push_back(result_for(0, 0));
  EXPECT_EQ(model_.process_group(h), out);
}

// Notices are rate-limited by reason and rank: the first drop of each and then one in every
// notice_interval (16). Recovery copies get none and do not count.
TEST_F(HlsRounds, NoticesAreRateLimitedByReasonAndRank) {
  static_assert(wire::kNoticeInterval == 16);
  auto unknown = [&](std::uint16_t rank, bool recovery = false) {
    Contribution c{.job = 77, .rank = rank, .slot = 10, .values = {1, 2}};
    c.recovery = recovery ? 1 : 0;
    Bytes f = encode_packet(c);
    f = frame_from(job_.workers[rank], f);
    return std::pair{f, model_.process_frame(rank, f)};
  };
  std::vector<int> answered;  // which of rank 0's drops got a notice
  for (int i = 0; i < 40; ++i) {
    const auto [f, out] = unknown(0);
    if (!out.empty()) {
      answered.push_back(i);
      EXPECT_EQ(out, std::vector{expected_notice(0, f, wire::NoticeReason::kUnknownJob)});
    }
    if (i < 3) {
      EXPECT_EQ(unknown(1).second.size(), i == 0 ? 1u : 0u) << "rank 1 counts apart";
    }
  }
  EXPECT_EQ(answered, (std::vector<int>{0, 16, 32}));
  // Another reason of the same rank has a count of its own.
  EXPECT_EQ(send(0, 5).size(), 0u);  // (starts a round of slot 11)
  const auto far = contribution_frame(
      job_, Contribution{.job = job_.job_id, .rank = 0, .slot = 12, .values = {1, 2}});
  EXPECT_EQ(model_.process_frame(0, far),
            std::vector{expected_notice(0, far, wire::NoticeReason::kSlotOutOfRange)});
  // Rank 0 has 40 unknown-job drops: 8 more make 48, whose next is answered. Recovery copies
  // between them are neither answered nor counted.
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(unknown(0, /*recovery=*/true).second.empty());
    EXPECT_TRUE(unknown(0).second.empty());
  }
  EXPECT_EQ(unknown(0).second.size(), 1u);
  EXPECT_EQ(count(Counter::kDroppedUnknownJob), 40u + 3u + 16u + 1u);
  EXPECT_EQ(count(Counter::kNotices), 3u + 1u + 1u + 1u);
  // A soft reset starts the counts again.
  soft_reset(bus_);
  EXPECT_EQ(unknown(0).second.size(), 1u);
}

TEST_F(HlsAggregator, OneGroupCanCompleteARoundAndStartTheNext) {
  const JobSpec job = make_job(4, 1, 0, 1, 8);  // one worker: every contribution completes
  install(0, job);
  const std::vector<std::uint32_t> a{1, 2}, b{30, 40};
  std::vector<RxFrame> g{{0, contribution_frame(job, 0, 0, a)},
                         {2, contribution_frame(job, 0, 2, b)}};
  auto expected = expected_multicast(job, contribution_header(job, 0, 0, 2), a);
  const auto next = expected_multicast(job, contribution_header(job, 0, 2, 2), b);
  expected.insert(expected.end(), next.begin(), next.end());
  EXPECT_EQ(model_.process_group(g), expected);
}

TEST_F(HlsAggregator, GroupArgumentsAreChecked) {
  std::vector<RxFrame> twice{{1, {}}, {1, {}}};
  EXPECT_THROW(model_.process_group(twice), std::invalid_argument);
  std::vector<RxFrame> beyond{{4, {}}};
  EXPECT_THROW(model_.process_group(beyond), std::invalid_argument);
}

// ---- Several jobs ----------------------------------------------------------------------------

TEST_F(HlsAggregator, JobsAreIsolated) {
  const JobSpec a = make_job(11, 3, 0, 4, 64), b = make_job(12, 2, 4, 4, 64);
  install(0, a);
  install(5, b);
  std::vector<std::vector<std::uint32_t>> va, vb;
  for (int r = 0; r < 3; ++r) va.push_back(random_words(rng_, 20));
  for (int r = 0; r < 2; ++r) vb.push_back(random_words(rng_, 20));
  // Interleaved: a0 b0 a1 b1 a2.
  EXPECT_TRUE(model_.process_frame(0, contribution_frame(a, 0, 0, va[0])).empty());
  EXPECT_TRUE(model_.process_frame(1, contribution_frame(b, 0, 0, vb[0])).empty());
  EXPECT_TRUE(model_.process_frame(2, contribution_frame(a, 1, 0, va[1])).empty());
  const auto rb = model_.process_frame(3, contribution_frame(b, 1, 0, vb[1]));
  const auto ra = model_.process_frame(0, contribution_frame(a, 2, 0, va[2]));
  std::vector<std::uint32_t> sa(20), sb(20);
  for (std::size_t i = 0; i < 20; ++i) {
    sa[i] = va[0][i] + va[1][i] + va[2][i];
    sb[i] = vb[0][i] + vb[1][i];
  }
  EXPECT_EQ(ra, expected_multicast(a, contribution_header(a, 0, 0, 20), sa));
  EXPECT_EQ(rb, expected_multicast(b, contribution_header(b, 0, 0, 20), sb));
  // Job a's worker into job b's slots, and into job b under its own address: both dropped.
  wire::Header h = contribution_header(a, 0, 1, 1);
  h.slot = 5;
  const std::vector<std::uint32_t> one{1};
  model_.process_frame(0, frame_from(a.workers[0], encode_packet(h, one)));
  EXPECT_EQ(count(Counter::kDroppedSlotOutOfRange), 1u);
  h = contribution_header(b, 0, 1, 1);
  model_.process_frame(0, frame_from(a.workers[0], encode_packet(h, one)));
  EXPECT_EQ(count(Counter::kDroppedForeignSource), 1u);
  EXPECT_FALSE(model_.core().round_state(5, 0).has_round);
  // Removing job b leaves job a working.
  remove_job(bus_, 5);
  model_.process_frame(1, contribution_frame(b, 0, 1, one));
  EXPECT_EQ(count(Counter::kDroppedUnknownJob), 1u);
  for (std::uint16_t r = 0; r < 3; ++r) model_.process_frame(r, contribution_frame(a, r, 1, one));
  EXPECT_EQ(count(Counter::kCompletions), 3u);
}

// ---- The kernel's stream interface against the reference API ---------------------------------

TEST_F(HlsAggregator, StreamStepMatchesProcessGroup) {
  const JobSpec job = make_job(1, 4, 0, 4, 256);
  install(0, job);
  Model twin;
  ModelBus<Model> twin_bus(twin);
  program_job(twin_bus, job, 0, kAggregator);
  hls::stream<AxisBeat> rx[4], tx[4];
  // Feeds one group through the kernel's streams and through process_group; the frames must be
  // the same per port, in the same order.
  auto both = [&](const std::vector<RxFrame>& group) {
    for (const RxFrame& f : group)
      for (const AxisBeat& b : to_beats(f.bytes)) rx[f.port].write(b);
    const auto expected = twin.process_group(group);
    model_.core().step(rx, tx);
    for (unsigned port = 0; port < 4; ++port) {
      std::vector<TxFrame> e, got;
      for (const auto& f : expected)
        if (f.port == port) e.push_back(f);
      std::vector<AxisBeat> beats;
      while (!tx[port].empty()) {
        beats.push_back(tx[port].read());
        if (beats.back().last) {
          got.push_back({port, from_beats(beats)});
          beats.clear();
        }
      }
      EXPECT_TRUE(beats.empty());
      EXPECT_EQ(got, e) << "port " << port;
    }
  };
  const wire::DataType dtypes[3] = {wire::DataType::kInt32, wire::DataType::kFp32,
                                    wire::DataType::kBf16};
  for (std::uint32_t p = 0; p < 9; ++p) {
    // Each packet in two cycles: a varying subset of the ports, then the rest.
    const unsigned first = 1 + p % 14;
    std::vector<RxFrame> groups[2];
    const wire::DataType dtype = dtypes[p % 3];
    const std::uint16_t count = dtype == wire::DataType::kBf16 ? 256 : 200;
    for (std::uint16_t r = 0; r < 4; ++r) {
      std::vector<std::uint32_t> v = random_words(rng_, count);
      if (dtype == wire::DataType::kBf16)
        for (auto& x : v) x &= 0xFFFF;
      groups[(first >> r) & 1 ? 0 : 1].push_back({r, contribution_frame(job, r, p, v, dtype)});
    }
    both(groups[0]);
    both(groups[1]);
    // An overlong frame on a port of its own: stored only up to 17 beats, dropped.
    std::vector<std::byte> overlong = contribution_frame(job, 0, 100, random_words(rng_, 8));
    overlong.resize(64 * 20, std::byte{0});
    both({RxFrame{3, overlong}});
  }
  for (std::size_t i = 0; i < csr::kCounterCount; ++i)
    EXPECT_EQ(model_.counter(static_cast<unsigned>(i)), twin.counter(static_cast<unsigned>(i)))
        << csr::kCounterNames[i];
  EXPECT_EQ(count(Counter::kMalformedLengthMismatch), 9u);
  EXPECT_EQ(count(Counter::kCompletions), 9u);
  EXPECT_EQ(count(Counter::kFramesOut), 36u);
}

// ---- Other parameters ------------------------------------------------------------------------

template <class P>
void run_tree_case(unsigned ports) {
  ReferenceModel<P> m;
  ModelBus<ReferenceModel<P>> bus(m);
  const JobSpec job = make_job(1, ports, 0, 2, 16, ports);
  program_job(bus, job, 0, kAggregator);
  std::mt19937 rng(ports);
  std::vector<std::vector<float>> x;
  std::vector<RxFrame> group;
  for (std::uint16_t r = 0; r < ports; ++r) {
    x.push_back(random_floats(rng, 16));
    group.push_back({r, contribution_frame(job, r, 0, float_bits(x[r]), wire::DataType::kFp32)});
  }
  // The spec's tree over the ports padded to a power of two, written out for 3 and 8 ports.
  std::vector<float> e(16);
  for (std::size_t i = 0; i < 16; ++i) {
    auto v = [&](int p) { return x[p][i]; };
    e[i] = ports == 3 ? (v(0) + v(1)) + v(2)
                      : ((v(0) + v(1)) + (v(2) + v(3))) + ((v(4) + v(5)) + (v(6) + v(7)));
  }
  EXPECT_EQ(m.process_group(group),
            expected_multicast(job, contribution_header(job, 0, 0, 16, wire::DataType::kFp32),
                               float_bits(e)));
}

TEST(HlsAggregatorParams, ThreeAndEightPortTrees) {
  run_tree_case<Params<3, 16, 2, 2, 8>>(3);
  run_tree_case<Params<8, 16, 2, 2, 8>>(8);
}

TEST(HlsAggregatorParams, SmallSlotMemoryLimitsTheCount) {
  using Small = Params<1, 4, 2, 1, 4>;  // 32 elements a slot
  ReferenceModel<Small> m;
  ModelBus<ReferenceModel<Small>> bus(m);
  set_aggregator_address(bus, kAggregator);
  // The job allows more than a slot holds: the driver refuses it, the device must cope.
  const JobSpec job = make_job(1, 1, 0, 4, 1024, 1);
  store_job(bus, job, 0, 1);
  std::mt19937 rng(3);
  const auto v32 = random_words(rng, 32), v33 = random_words(rng, 33);
  EXPECT_EQ(m.process_frame(0, contribution_frame(job, 0, 0, v32)).size(), 1u);
  // (The first drop is answered with a notice, the next of the reason and rank is not.)
  const auto too_many = contribution_frame(job, 0, 1, v33);
  EXPECT_EQ(m.process_frame(0, too_many),
            std::vector{expected_notice(0, too_many, wire::NoticeReason::kCountTooLargeForJob)});
  EXPECT_EQ(m.counter(csr::index(Counter::kDroppedCountTooLargeForJob)), 1u);
  // bf16 has the same limit: the accumulators are fp32.
  std::vector<std::uint32_t> h33(33, 0x3F80);
  EXPECT_TRUE(
      m.process_frame(0, contribution_frame(job, 0, 1, h33, wire::DataType::kBf16)).empty());
  EXPECT_EQ(m.counter(csr::index(Counter::kDroppedCountTooLargeForJob)), 2u);
  // Slots of the job beyond the pool (4 slots) are out of range.
  const JobSpec wide = make_job(2, 1, 2, 8, 16, 1);
  ReferenceModel<Small> m2;
  ModelBus<ReferenceModel<Small>> bus2(m2);
  set_aggregator_address(bus2, kAggregator);
  store_job(bus2, wide, 0, 1);
  const std::vector<std::uint32_t> one{1};
  EXPECT_EQ(m2.process_frame(0, contribution_frame(wide, 0, 1, one)).size(), 1u);  // slot 3
  EXPECT_EQ(m2.process_frame(0, contribution_frame(wide, 0, 2, one)).size(), 1u);  // slot 4: notice
  EXPECT_EQ(m2.counter(csr::index(Counter::kDroppedSlotOutOfRange)), 1u);
}

}  // namespace
}  // namespace netagg::fpga

// SPDX-License-Identifier: Apache-2.0
// The two Verilator builds of the RTL (sim/fpga/harness.hpp, RtlBuild): the fast one, which skips
// the cycles in which the design sits at a fixed point of idle inputs, and the traced one, which
// evaluates every cycle. Driven with the same traffic (rounds, idle stretches, a stalled egress
// port, a retransmission, CSR accesses in the middle), both must give the same egress frames,
// left in the same cycles, and the same counters: the fast path may save work, never change
// what happens.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <vector>

#include "daemon.hpp"
#include "fpga_test_util.hpp"
#include "harness.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"

namespace netagg::sim {
namespace {

const fpga::AggregatorAddress kAgg{{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01}, 0x0A0000FE, 20033};
constexpr std::uint64_t kMaxCycles = 200000;  // a guard against a hung model, not a measure

std::vector<std::byte> frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                             std::uint16_t count) {
  std::vector<std::int32_t> values(count);
  for (std::uint16_t i = 0; i < count; ++i) values[i] = (rank + 1) * 1000 + 7 * i - int(seq);
  return testing::contribution_frame(job, rank, seq, values, fpga::worker_mac(job.workers[rank]),
                                     kAgg.mac, Endpoint{kAgg.ip, kAgg.udp_port});
}

// What a run did, step by step: every egress frame with its cycles, and the cycle count after
// each step.
struct Trace {
  std::vector<EgressFrame> egress;
  std::vector<std::uint64_t> cycles;
  std::map<std::string, std::uint64_t> counters;
  std::uint64_t skipped = 0;
};

Trace drive(FpgaModel& m) {
  Trace t;
  const auto note = [&] {
    for (EgressFrame& f : m.pop_egress()) t.egress.push_back(std::move(f));
    t.cycles.push_back(m.cycles());
  };
  const auto idle = [&] {
    EXPECT_TRUE(m.run_until_idle(m.default_quiet_cycles(), kMaxCycles));
    note();
  };
  const JobSpec job = fpga::testing::make_job(5, 4, 0, 8, 200);
  fpga::program_job(m, job, 0, kAgg);
  note();
  // Rounds back to back, then a long idle stretch.
  for (std::uint32_t seq = 0; seq < 6; ++seq)
    for (std::uint16_t r = 0; r < 4; ++r) m.push_frame(r, frame(job, r, seq, 200));
  idle();
  m.step(5000);
  note();
  // A round whose port 2 cannot send: the result waits in the egress FIFO while the clock runs.
  m.set_egress_ready(2, false);
  for (std::uint16_t r = 0; r < 4; ++r) m.push_frame(r, frame(job, r, 6, 200));
  m.step(3000);
  note();
  m.set_egress_ready(2, true);
  idle();
  // A CSR read while idle, then contributions arriving one port after the other, with idle
  // cycles between them, and a retransmission of a completed round (answered from the slot).
  EXPECT_EQ(m.read32(fpga::csr::kAggUdpPort), kAgg.udp_port);
  for (std::uint16_t r = 0; r < 4; ++r) {
    m.push_frame(r, frame(job, r, 7, 120));
    m.step(700);
    note();
  }
  idle();
  m.push_frame(1, frame(job, 1, 7, 120));
  idle();
  m.step(100000);
  note();
  for (const auto& c : fpga::read_counters(m)) t.counters[std::string(c.name)] = c.value;
  t.cycles.push_back(m.cycles());
  t.skipped = m.cycles_skipped();
  return t;
}

TEST(RtlBuildsTest, FastAndTracedBuildsAgreeCycleForCycle) {
  if (!rtl_model_available()) GTEST_SKIP() << "this build has no RTL model";
  auto fast = make_rtl_model("", RtlBuild::kFast);
  auto traced = make_rtl_model("", RtlBuild::kTraced);
  const Trace a = drive(*fast);
  const Trace b = drive(*traced);
  EXPECT_EQ(a.cycles, b.cycles);
  ASSERT_EQ(a.egress.size(), b.egress.size());
  // 6 + 1 + 1 rounds of 4 results, and the resent result.
  EXPECT_EQ(a.egress.size(), 33u);
  for (std::size_t i = 0; i < a.egress.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "egress frame " << i);
    EXPECT_EQ(a.egress[i].port, b.egress[i].port);
    EXPECT_EQ(a.egress[i].bytes, b.egress[i].bytes);
    EXPECT_EQ(a.egress[i].first_beat_cycle, b.egress[i].first_beat_cycle);
    EXPECT_EQ(a.egress[i].last_beat_cycle, b.egress[i].last_beat_cycle);
  }
  EXPECT_EQ(a.counters, b.counters);
  EXPECT_EQ(a.counters.at("completions"), 8u);
  EXPECT_EQ(a.counters.at("results_resent"), 1u);
  EXPECT_EQ(fast->egress_protocol_errors(), 0u);
  EXPECT_EQ(traced->egress_protocol_errors(), 0u);
  // The idle stretches were skipped in the fast build (most of the 108,000 idle cycles), never
  // in the traced one.
  EXPECT_GT(a.skipped, 100000u);
  EXPECT_LT(a.skipped, a.cycles.back());
  EXPECT_EQ(b.skipped, 0u);
}

// A stalled egress beat is activity: with TREADY low under TVALID nothing is skipped, however
// long the stall (the harness counts it as busy, and so must the skipped cycles).
TEST(RtlBuildsTest, AStalledEgressPortIsNeverSkipped) {
  if (!rtl_model_available()) GTEST_SKIP() << "this build has no RTL model";
  auto m = make_rtl_model("", RtlBuild::kFast);
  const JobSpec job = fpga::testing::make_job(2, 4, 0, 4, 64);
  fpga::program_job(*m, job, 0, kAgg);
  m->set_egress_ready(3, false);
  for (std::uint16_t r = 0; r < 4; ++r) m->push_frame(r, frame(job, r, 0, 64));
  EXPECT_FALSE(m->run_until_idle(m->default_quiet_cycles(), 4000));
  const std::uint64_t skipped = m->cycles_skipped();
  m->step(2000);
  EXPECT_EQ(m->cycles_skipped(), skipped) << "cycles with a beat waiting on egress were skipped";
  // The four copies of a result leave their ports in the same cycles: none while port 3 stalls.
  EXPECT_EQ(m->pop_egress().size(), 0u);
  m->set_egress_ready(3, true);
  EXPECT_TRUE(m->run_until_idle(m->default_quiet_cycles(), kMaxCycles));
  EXPECT_EQ(m->pop_egress().size(), 4u);
}

}  // namespace
}  // namespace netagg::sim

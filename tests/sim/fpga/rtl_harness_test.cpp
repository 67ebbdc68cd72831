// SPDX-License-Identifier: Apache-2.0
// The Verilator harness on its own, against a stand-in top with the aggregator's ports
// (netagg_harness_standin.sv: every ingress beat comes back on the same egress port through a
// 4-deep FIFO; the CSRs are a register file). Checks what the aggregator's tests take for
// granted: byte order within TDATA, TKEEP/TLAST framing, frame order, backpressure, AXI4-Lite
// transactions (with byte strobes) and error responses, reset, run_until_idle, the FST trace,
// and what the RTL tests drive with: random ingress gaps and egress TREADY, beat and stall
// counts, the empty frame, unused ports, repeatable seeds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <vector>

#include "Vnetagg_harness_standin.h"
#include "netagg/error.hpp"
#include "rtl_harness.hpp"

namespace netagg::sim {
namespace {

namespace fs = std::filesystem;
using Harness = RtlHarness<Vnetagg_harness_standin, 4>;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = std::byte(rng());
  return v;
}

TEST(RtlHarness, FramesOfEveryLengthComeBackByteForByteInOrder) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  EXPECT_EQ(h.num_ports(), 4u);
  // Lengths around the beat boundaries, on every port at once.
  const std::vector<std::size_t> lengths = {1, 2, 63, 64, 65, 127, 128, 129, 86, 1088, 1089};
  std::vector<std::vector<std::byte>> sent[4];
  unsigned seed = 1;
  for (unsigned p = 0; p < 4; ++p)
    for (std::size_t n : lengths) {
      sent[p].push_back(pattern(n + p, seed++));
      h.push_frame(p, sent[p].back());
    }
  EXPECT_GT(h.ingress_pending(2), 0u);
  ASSERT_TRUE(h.run_until_idle(16, 100000));
  EXPECT_EQ(h.ingress_pending(2), 0u);
  std::vector<std::vector<std::byte>> got[4];
  std::uint64_t previous_last = 0;
  for (const EgressFrame& f : h.pop_egress()) {
    ASSERT_LT(f.port, 4u);
    EXPECT_LE(f.first_beat_cycle, f.last_beat_cycle);
    EXPECT_GE(f.last_beat_cycle, previous_last);  // in completion order
    previous_last = f.last_beat_cycle;
    got[f.port].push_back(f.bytes);
  }
  for (unsigned p = 0; p < 4; ++p) EXPECT_EQ(got[p], sent[p]) << "port " << p;
  EXPECT_TRUE(h.pop_egress().empty());
  EXPECT_EQ(h.egress_protocol_errors(), 0u) << h.last_protocol_error();
  // Beats: each port carries sum(ceil(n / 64)) beats back to back, one per cycle.
  std::uint64_t beats = 0;
  for (std::size_t n : lengths) beats += (n + 3 + 63) / 64;
  EXPECT_GE(h.cycles(), beats);
}

// docs/fpga-aggregator.md: frame byte 0 in TDATA bits 7:0; TKEEP covers the valid bytes of the
// last beat only.
TEST(RtlHarness, ByteZeroIsInTheLowBitsAndTkeepCoversTheLastBeat) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  std::vector<std::byte> frame(64 + 5);
  for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = std::byte(i + 1);
  h.set_egress_ready(0, false);  // the stand-in's FIFO holds both beats
  h.push_frame(0, {frame.data(), 64});
  ASSERT_TRUE(h.run_until_idle(4, 100) || h.ingress_pending(0) == 0);
  EXPECT_EQ(h.read32(0xFF0), 0x400201u);  // byte 63 = 64, byte 1 = 2, byte 0 = 1
  EXPECT_EQ(h.read32(0xFF4), 0xFFFFFFFFu);
  EXPECT_EQ(h.read32(0xFF8), 0b11u);  // TLAST (a one-beat frame), TKEEP[63:32] set
  h.push_frame(0, frame);
  h.step(10);
  EXPECT_EQ(h.read32(0xFF0) & 0xFFFF, 0x4241u);  // last beat: bytes 64, 65 of the frame
  EXPECT_EQ(h.read32(0xFF4), 0x1Fu);             // 5 valid bytes
  EXPECT_EQ(h.read32(0xFF8), 0b10u);
}

TEST(RtlHarness, BackpressureHoldsTheFramesBackUntilReady) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  h.set_egress_ready(1, false);
  EXPECT_FALSE(h.egress_ready(1));
  const auto a = pattern(300, 7), b = pattern(70, 8);
  h.push_frame(1, a);
  h.push_frame(1, b);
  h.push_frame(0, b);
  h.step(200);
  // Port 0 flows; port 1's FIFO (4 beats) filled and its ingress stalled.
  auto out = h.pop_egress();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 0u);
  EXPECT_EQ(h.ingress_pending(1), 2u);
  EXPECT_FALSE(h.run_until_idle(16, 100)) << "a stalled port is not idle";
  h.set_egress_ready(1, true);
  ASSERT_TRUE(h.run_until_idle(16, 10000));
  out = h.pop_egress();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].bytes, a);
  EXPECT_EQ(out[1].bytes, b);
  EXPECT_EQ(h.egress_protocol_errors(), 0u);
}

TEST(RtlHarness, CsrReadsAndWritesAreAxiLiteTransactions) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  const std::uint64_t before = h.cycles();
  h.write32(0x010, 0xDEADBEEF);
  h.write32(0x014, 0x12345678);
  EXPECT_EQ(h.read32(0x010), 0xDEADBEEFu);
  EXPECT_EQ(h.read32(0x014), 0x12345678u);
  EXPECT_GT(h.cycles(), before + 4) << "each access takes clock cycles";
  // The stand-in answers SLVERR at 0xFFC.
  try {
    h.read32(0xFFC);
    ADD_FAILURE() << "an error response must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTransport);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RRESP 2"));
  }
  EXPECT_THROW(h.read32(0x011), Error);
  // Traffic keeps flowing during CSR accesses.
  h.push_frame(3, pattern(200, 3));
  for (int i = 0; i < 10; ++i) h.write32(0x100 + 4 * i, i);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(h.read32(0x100 + 4 * i), std::uint32_t(i));
  EXPECT_EQ(h.pop_egress().size(), 1u);
}

TEST(RtlHarness, ResetDropsQueuedFramesAndPortsAreChecked) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  h.set_egress_ready(2, false);
  h.push_frame(2, pattern(500, 1));
  h.push_frame(2, pattern(500, 2));
  h.step(20);
  h.reset();
  EXPECT_EQ(h.ingress_pending(2), 0u);
  h.set_egress_ready(2, true);
  ASSERT_TRUE(h.run_until_idle(16, 1000));
  EXPECT_TRUE(h.pop_egress().empty()) << "the stand-in's FIFO was reset too";
  const auto f = pattern(100, 3);
  h.push_frame(2, f);
  ASSERT_TRUE(h.run_until_idle(16, 1000));
  const auto out = h.pop_egress();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, f);
  EXPECT_THROW(h.push_frame(4, f), Error);
  EXPECT_THROW(h.push_frame(0, {}), Error);
  EXPECT_THROW(h.set_egress_ready(9, true), Error);
}

TEST(RtlHarness, RandomGapsAndReadyKeepEveryByteAndAreCounted) {
  Harness h({.name = "standin", .quiet_cycles = 16, .seed = 3});
  h.set_ingress_gaps(0.4);
  h.set_random_egress_ready(0.3);
  std::vector<std::vector<std::byte>> sent[4];
  std::uint64_t beats[4] = {};
  for (unsigned p = 0; p < 4; ++p)
    for (unsigned i = 0; i < 6; ++i) {
      sent[p].push_back(pattern(60 + 97 * i + p, 10 * p + i));
      beats[p] += (sent[p].back().size() + 63) / 64;
      h.push_frame(p, sent[p].back());
    }
  ASSERT_TRUE(h.run_until_idle(16, 100000));
  std::vector<std::vector<std::byte>> got[4];
  for (const EgressFrame& f : h.pop_egress()) got[f.port].push_back(f.bytes);
  for (unsigned p = 0; p < 4; ++p) {
    EXPECT_EQ(got[p], sent[p]) << "port " << p;
    EXPECT_EQ(h.ingress_beats(p), beats[p]) << "port " << p;
    // TREADY high three cycles in ten: the FIFO fills and holds ingress back.
    EXPECT_GT(h.ingress_stalls(p), 0u) << "port " << p;
  }
  // Gaps and stalls made it slower than back to back.
  EXPECT_GT(h.cycles(), 2 * beats[0]);
  EXPECT_EQ(h.egress_protocol_errors(), 0u) << h.last_protocol_error();
  h.reset();
  EXPECT_EQ(h.ingress_beats(0), 0u);
  EXPECT_EQ(h.ingress_stalls(0), 0u);
}

// The same seed repeats a run with random gaps cycle for cycle; another seed does not.
TEST(RtlHarness, TheSeedRepeatsARun) {
  auto run = [](std::uint64_t seed) {
    Harness h({.name = "standin", .quiet_cycles = 16, .seed = seed});
    h.set_ingress_gaps(0.5);
    for (unsigned i = 0; i < 8; ++i) h.push_frame(i % 4, pattern(200, i));
    EXPECT_TRUE(h.run_until_idle(16, 100000));
    std::vector<std::uint64_t> cycles;
    for (const EgressFrame& f : h.pop_egress()) cycles.push_back(f.last_beat_cycle);
    return cycles;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(RtlHarness, StrobedWritesAndRunUntil) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  h.write32(0x020, 0x12345678);
  h.write32(0x020, 0xAABBCCDD, 0b0101);
  EXPECT_EQ(h.read32(0x020), 0x12BB56DDu);
  h.push_frame(1, pattern(300, 1));
  const std::uint64_t start = h.cycles();
  EXPECT_TRUE(h.run_until([&] { return h.ingress_pending(1) == 0; }, 1000));
  EXPECT_EQ(h.cycles() - start, 5u) << "five beats, back to back";
  EXPECT_FALSE(h.run_until([] { return false; }, 10));
  EXPECT_EQ(h.cycles() - start, 15u);
}

// The empty frame is one beat with TLAST and no TKEEP bit: the stand-in sends it back as it
// is, which the egress protocol check reports.
TEST(RtlHarness, AnEmptyFrameIsOneBeatWithoutBytes) {
  Harness h({.name = "standin", .quiet_cycles = 16});
  h.push_empty_frame(0);
  EXPECT_EQ(h.ingress_pending(0), 1u);
  ASSERT_TRUE(h.run_until_idle(16, 1000));
  EXPECT_EQ(h.ingress_beats(0), 1u);
  const auto out = h.pop_egress();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].bytes.empty());
  EXPECT_EQ(h.egress_protocol_errors(), 1u);
  EXPECT_THAT(h.last_protocol_error(), ::testing::HasSubstr("empty TKEEP"));
}

// Ports beyond those in use are held idle (TVALID low, TREADY high) and can still be observed.
TEST(RtlHarness, UnusedPortsAreIdle) {
  RtlHarness<Vnetagg_harness_standin, 2> h({.name = "standin2", .quiet_cycles = 16});
  EXPECT_EQ(h.num_ports(), 2u);
  EXPECT_THROW(h.push_frame(2, pattern(10, 1)), Error);
  EXPECT_THROW(h.push_empty_frame(3), Error);
  h.push_frame(1, pattern(100, 2));
  ASSERT_TRUE(h.run_until_idle(16, 1000));
  EXPECT_EQ(h.pop_egress().size(), 1u);
  EXPECT_TRUE(h.ingress_ready(3)) << "the stand-in's empty FIFO";
  EXPECT_FALSE(h.egress_valid(3));
  EXPECT_FALSE(h.egress_valid(1));
  EXPECT_THROW(h.ingress_ready(4), std::out_of_range);
}

TEST(RtlHarness, ObservingRoundsNeedsTheAggregatorsRoundStage) {
  try {
    Harness h({.name = "standin", .observe_rounds = true});
    ADD_FAILURE() << "the stand-in has no round stage";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kUnsupported);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("dbg_group_pop"));
  }
}

TEST(RtlHarness, WritesAnFstTrace) {
  const fs::path file = fs::path(::testing::TempDir()) / "rtl_harness_test.fst";
  fs::remove(file);
  {
    Harness h({.name = "standin", .trace_fst = file.string(), .quiet_cycles = 16});
    h.push_frame(0, pattern(130, 1));
    ASSERT_TRUE(h.run_until_idle(16, 1000));
  }
  ASSERT_TRUE(fs::exists(file));
  EXPECT_GT(fs::file_size(file), 100u);
  fs::remove(file);
  EXPECT_THROW(Harness({.trace_fst = "/nonexistent-dir/x.fst"}), Error);
}

}  // namespace
}  // namespace netagg::sim

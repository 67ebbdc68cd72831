// SPDX-License-Identifier: Apache-2.0
// VpModel (sim/vp/vp_model.hpp): the virtual platform behind the FpgaModel interface, driven as
// netagg-fpgad drives it, in this process's one SystemC simulation (each test resets the card
// first): jobs programmed through driver/fpga over TLM, frames through the MAC models, every
// result compared with the frame the host's encoder builds from an independently computed sum,
// backpressure, reset, the CSR errors, a second platform refused. Cycle counts are simulated
// time, the same on every run (no wall-clock timing).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "fpga_test_util.hpp"
#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"
#include "vp_model.hpp"

namespace {

using netagg::Errc;
using netagg::Error;
using netagg::sim::EgressFrame;
using netagg::sim::FpgaModel;
namespace fpga = netagg::fpga;
namespace ft = netagg::fpga::testing;
namespace wire = netagg::wire;

constexpr std::uint64_t kMaxCycles = 200000;  // a guard against a hung platform, not a measure

// The one platform of this process (SystemC: one simulation per process).
FpgaModel& platform() {
  static const std::unique_ptr<FpgaModel> model = netagg::vp::make_vp_model();
  return *model;
}

class VpModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (unsigned p = 0; p < m().num_ports(); ++p) m().set_egress_ready(p, true);
    m().reset();
    m().pop_egress();  // an earlier test's results, if it left any
  }
  static FpgaModel& m() { return platform(); }
  static void run() { ASSERT_TRUE(m().run_until_idle(m().default_quiet_cycles(), kMaxCycles)); }
  static std::map<std::string, std::uint64_t> counters() {
    std::map<std::string, std::uint64_t> c;
    for (const auto& k : fpga::read_counters(m())) c[std::string(k.name)] = k.value;
    return c;
  }
  // Rank r's values for packet p: small enough that fp32 sums are exact.
  static std::vector<std::uint32_t> values(wire::DataType dtype, unsigned r, std::uint32_t p,
                                           std::size_t n) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) {
      const int x = static_cast<int>(r * 1000 + p * 37 + i) % 2000 - 900;
      v[i] = dtype == wire::DataType::kFp32 ? ft::bits(0.5f * static_cast<float>(x))
                                            : static_cast<std::uint32_t>(x * 65537);
    }
    return v;
  }
  static std::vector<std::uint32_t> sum(wire::DataType dtype, unsigned workers, std::uint32_t p,
                                        std::size_t n) {
    std::vector<std::uint32_t> s(n, dtype == wire::DataType::kFp32 ? ft::bits(0.0f) : 0u);
    for (unsigned r = 0; r < workers; ++r) {
      const std::vector<std::uint32_t> v = values(dtype, r, p, n);
      for (std::size_t i = 0; i < n; ++i)
        s[i] = dtype == wire::DataType::kFp32 ? ft::bits(ft::from_bits(s[i]) + ft::from_bits(v[i]))
                                              : s[i] + v[i];
    }
    return s;
  }
};

TEST_F(VpModelTest, IsTheCardsDesignBehindTheDriver) {
  EXPECT_EQ(m().name(), "vp");
  EXPECT_EQ(m().num_ports(), 4u);
  const fpga::DeviceInfo info = fpga::read_device_info(m());
  EXPECT_EQ(info.num_ports, 4u);
  EXPECT_EQ(info.slots, 64u);
  EXPECT_EQ(info.max_beats, 64u) << "the platform's aggregator holds 1024 elements a slot";
  EXPECT_EQ(info.max_elements(), 1024u);
  EXPECT_EQ(m().read32(fpga::csr::kAggUdpPort), wire::kUdpPort) << "reset value";
  m().write32(fpga::csr::kAggIp, 0x0A0B0C0D);
  EXPECT_EQ(m().read32(fpga::csr::kAggIp), 0x0A0B0C0Du);
}

// Four workers on the four ports, fp32 and int32 jobs at once, several rounds: every result is
// the host encoder's frame of the sum, on the worker's port, and nothing is left pending.
TEST_F(VpModelTest, AllReducesThroughTheMacs) {
  const netagg::JobSpec a = ft::make_job(1, 4, 0, 8, 256);
  const netagg::JobSpec b = ft::make_job(2, 3, 8, 8, 100);
  fpga::program_job(m(), a, 0, ft::kAggregator);
  fpga::program_job(m(), b, 1, ft::kAggregator);
  constexpr std::uint32_t kPackets = 12;
  std::vector<fpga::TxFrame> expected;
  std::vector<EgressFrame> got;
  for (std::uint32_t p = 0; p < kPackets; ++p) {
    for (unsigned r = 0; r < 4; ++r) {
      const auto v = values(wire::DataType::kFp32, r, p, 256);
      m().push_frame(ft::egress_port(a, r), ft::contribution_frame(a, static_cast<std::uint16_t>(r),
                                                                   p, v, wire::DataType::kFp32));
    }
    for (unsigned r = 0; r < 3; ++r) {
      const auto v = values(wire::DataType::kInt32, r, p, 100);
      m().push_frame(ft::egress_port(b, r),
                     ft::contribution_frame(b, static_cast<std::uint16_t>(r), p, v));
    }
    const auto ea =
        ft::expected_multicast(a, ft::contribution_header(a, 0, p, 256, wire::DataType::kFp32),
                               sum(wire::DataType::kFp32, 4, p, 256));
    const auto eb = ft::expected_multicast(b, ft::contribution_header(b, 0, p, 100),
                                           sum(wire::DataType::kInt32, 3, p, 100));
    expected.insert(expected.end(), ea.begin(), ea.end());
    expected.insert(expected.end(), eb.begin(), eb.end());
    // A window of packets in flight: run only every fourth packet.
    if (p % 4 == 3) {
      run();
      for (EgressFrame& f : m().pop_egress()) got.push_back(std::move(f));
    }
  }
  for (unsigned port = 0; port < 4; ++port) EXPECT_EQ(m().ingress_pending(port), 0u) << port;
  ASSERT_EQ(got.size(), expected.size());
  // Per port in order; across ports any interleaving.
  std::map<unsigned, std::vector<std::vector<std::byte>>> want, have;
  for (const auto& f : expected) want[f.port].push_back(f.bytes);
  for (const auto& f : got) {
    have[f.port].push_back(f.bytes);
    EXPECT_LE(f.first_beat_cycle, f.last_beat_cycle);
    EXPECT_LE(f.last_beat_cycle, m().cycles());
  }
  for (auto& [port, frames] : want) {
    ASSERT_EQ(have[port].size(), frames.size()) << "port " << port;
    // The two jobs' results of one port interleave by completion; each job's stay in order.
    std::sort(frames.begin(), frames.end());
    std::sort(have[port].begin(), have[port].end());
    EXPECT_EQ(have[port], frames) << "port " << port;
  }
  const auto c = counters();
  EXPECT_EQ(c.at("frames_in"), kPackets * 7);
  EXPECT_EQ(c.at("completions"), kPackets * 2);
  EXPECT_EQ(c.at("frames_out"), kPackets * 7);
  EXPECT_EQ(m().egress_protocol_errors(), 0u) << m().last_protocol_error();
}

// A port whose link partner pauses it holds its results back (run_until_idle says it is not
// idle); resumed, they all come, in order.
TEST_F(VpModelTest, APausedPortHoldsResultsWithoutLosingThem) {
  const netagg::JobSpec job = ft::make_job(1, 2, 0, 64, 1024);
  fpga::program_job(m(), job, 0, ft::kAggregator);
  m().set_egress_ready(1, false);
  EXPECT_FALSE(m().egress_ready(1));
  // 40 results of 4 KiB: more than the TX crossing holds, so tx_1 is stalled too.
  constexpr std::uint32_t kPackets = 40;
  for (std::uint32_t p = 0; p < kPackets; ++p)
    for (unsigned r = 0; r < 2; ++r)
      m().push_frame(r, ft::contribution_frame(job, static_cast<std::uint16_t>(r), p,
                                               values(wire::DataType::kInt32, r, p, 1024)));
  EXPECT_FALSE(m().run_until_idle(m().default_quiet_cycles(), 20000)) << "port 1 is paused";
  std::vector<EgressFrame> frames = m().pop_egress();
  const std::size_t early = frames.size();
  EXPECT_GT(early, 0u);
  EXPECT_LT(early, kPackets * 2);
  for (const EgressFrame& f : frames) EXPECT_EQ(f.port, 0u) << "nothing leaves the paused port";
  m().set_egress_ready(1, true);
  run();
  for (EgressFrame& f : m().pop_egress()) frames.push_back(std::move(f));
  std::map<unsigned, std::vector<std::uint32_t>> seqs;
  for (const EgressFrame& f : frames) {
    const ft::Result r = ft::decode_result(f);
    EXPECT_EQ(r.values, sum(wire::DataType::kInt32, 2, r.header.seq, 1024));
    seqs[f.port].push_back(r.header.seq);
  }
  for (unsigned port = 0; port < 2; ++port) {
    ASSERT_EQ(seqs[port].size(), kPackets) << "port " << port;
    for (std::uint32_t p = 0; p < kPackets; ++p) EXPECT_EQ(seqs[port][p], p) << "port " << port;
  }
}

// A reset drops the frames still queued or on the ports and empties the job table; the card
// works again once programmed.
TEST_F(VpModelTest, ResetDropsFramesAndJobs) {
  const netagg::JobSpec job = ft::make_job(1, 2, 0, 64, 1024);
  fpga::program_job(m(), job, 0, ft::kAggregator);
  for (std::uint32_t p = 0; p < 20; ++p)
    for (unsigned r = 0; r < 2; ++r)
      m().push_frame(r, ft::contribution_frame(job, static_cast<std::uint16_t>(r), p,
                                               values(wire::DataType::kInt32, r, p, 1024)));
  m().step(300);  // some on the wire and in the crossings, most still queued
  EXPECT_GT(m().ingress_pending(0), 0u);
  m().reset();
  for (unsigned port = 0; port < 4; ++port) EXPECT_EQ(m().ingress_pending(port), 0u);
  m().pop_egress();
  run();
  EXPECT_TRUE(m().pop_egress().empty());
  for (const auto& [name, value] : counters()) EXPECT_EQ(value, 0u) << name;
  // The job table is empty: a contribution is an unknown job's (its sender gets a notice).
  fpga::set_aggregator_address(m(), ft::kAggregator);
  m().push_frame(0, ft::contribution_frame(job, 0, 0, values(wire::DataType::kInt32, 0, 0, 16)));
  run();
  const auto notice = ft::decode_all(m().pop_egress());
  ASSERT_EQ(notice.size(), 1u);
  EXPECT_EQ(notice[0].header.type, wire::MsgType::kNotice);
  EXPECT_EQ(notice[0].values,
            std::vector<std::uint32_t>{unsigned(wire::NoticeReason::kUnknownJob)});
  EXPECT_EQ(counters().at("dropped_unknown_job"), 1u);
  fpga::program_job(m(), job, 0, ft::kAggregator);
  for (unsigned r = 0; r < 2; ++r)
    m().push_frame(r, ft::contribution_frame(job, static_cast<std::uint16_t>(r), 0,
                                             values(wire::DataType::kInt32, r, 0, 1024)));
  run();
  EXPECT_EQ(m().pop_egress().size(), 2u) << "the default quiet cycles cover a 65-beat frame";
}

// step(n) is n kernel cycles; run_until_idle on an idle platform costs none.
TEST_F(VpModelTest, StepsAndIdleAreKernelCycles) {
  run();
  const std::uint64_t before = m().cycles();
  m().step(1000);
  EXPECT_EQ(m().cycles(), before + 1000);
  EXPECT_TRUE(m().run_until_idle(m().default_quiet_cycles(), 10));
  EXPECT_EQ(m().cycles(), before + 1000);
}

TEST_F(VpModelTest, BadInputAndCsrErrors) {
  EXPECT_THROW(m().push_frame(4, std::vector<std::byte>(64)), Error);
  EXPECT_THROW(m().push_frame(0, {}), Error);
  EXPECT_THROW(m().ingress_pending(7), Error);
  try {
    m().read32(0x1000);  // beyond the 12-bit CSR space: the bridge answers an error over TLM
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTransport) << e.what();
  }
  try {
    m().write32(0x2, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument) << e.what();
  }
  // The platform still answers after the errors.
  EXPECT_EQ(fpga::read_device_info(m()).num_ports, 4u);
}

TEST_F(VpModelTest, ASecondPlatformInTheProcessIsRefused) {
  try {
    netagg::vp::make_vp_model();
    ADD_FAILURE() << "a second platform was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kUnsupported) << e.what();
  }
  netagg::vp::VpModelOptions bad;
  bad.kernel_mhz = 0;
  EXPECT_THROW(netagg::vp::make_vp_model(bad), Error);
}

}  // namespace

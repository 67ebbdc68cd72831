// SPDX-License-Identifier: Apache-2.0
// The FpgaModel implementations (the Verilated RTL, the HLS C model, the virtual platform) driven
// as netagg-fpgad drives them: jobs programmed through driver/fpga over the model's CSRs, frames
// on the ports, results off them, counters read back. Each test runs once per model; a model the
// build does not have is skipped.
//
// The virtual platform (sim/vp) is the same RTL behind MAC models, clock-domain crossings and a
// TLM CSR bus: frames cross an Ethernet wire at line rate, so results come later, but the
// contract is the same. SystemC elaborates one design per process, so its tests share one
// platform, reset before each test (as netagg-fpgad would reset a card); the other models are
// made anew for each test. Its aggregator holds larger frames (NETAGG_VP_MAX_BEATS).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "daemon.hpp"
#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"
#if NETAGG_HAVE_VP
#include "vp_model.hpp"
#endif

namespace netagg::sim {
namespace {

using ::testing::ElementsAreArray;
using Counters = std::map<std::string, std::uint64_t>;

constexpr std::uint64_t kMaxCycles = 200000;  // a guard against a hung model, not a measure

const fpga::AggregatorAddress kAgg{{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01}, 0x0A0000FE, 20033};

JobSpec make_job(std::uint16_t id, std::uint16_t base, std::uint16_t window, std::uint16_t workers,
                 std::uint16_t elements) {
  JobSpec job;
  job.job_id = id;
  job.slot_base = base;
  job.slot_count = window;
  job.elements_per_packet = elements;
  for (std::uint16_t r = 0; r < workers; ++r)
    job.workers.push_back({r,
                           Endpoint{0x0A000001u + 16u * id + r, std::uint16_t(31000 + 16 * id + r)},
                           std::nullopt, std::nullopt});
  return job;
}

std::vector<std::byte> frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                             const std::vector<std::int32_t>& values) {
  return testing::contribution_frame(job, rank, seq, values, fpga::worker_mac(job.workers[rank]),
                                     kAgg.mac, Endpoint{kAgg.ip, kAgg.udp_port});
}

struct Result {
  unsigned port;
  wire::FrameAddress address;
  wire::Header header;
  std::vector<std::int32_t> values;
};

std::vector<Result> decode_all(const std::vector<EgressFrame>& frames) {
  std::vector<Result> out;
  for (const EgressFrame& f : frames) {
    const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
    EXPECT_TRUE(d) << "egress frame on port " << f.port << ": " << wire::to_string(d.error);
    if (!d) continue;
    Result r{f.port, d.address, d.packet.header, {}};
    for (std::size_t i = 0; i < d.packet.header.count; ++i)
      r.values.push_back(std::int32_t(wire::load_be32(d.packet.payload.data() + 4 * i)));
    out.push_back(r);
  }
  return out;
}

Counters counters(FpgaModel& m) {
  Counters c;
  for (const auto& k : fpga::read_counters(m)) c[std::string(k.name)] = k.value;
  return c;
}

// The virtual platform of this process, made by the first test that needs it.
FpgaModel* virtual_platform() {
#if NETAGG_HAVE_VP
  static const std::unique_ptr<FpgaModel> platform = vp::make_vp_model();
  return platform.get();
#else
  return nullptr;
#endif
}

class FpgaModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "rtl" && !rtl_model_available())
      GTEST_SKIP() << "this build has no RTL model";
    if (GetParam() == "vp") {
      if (!NETAGG_HAVE_VP) GTEST_SKIP() << "this build has no virtual platform (NETAGG_VP)";
      model_ = virtual_platform();
      for (unsigned p = 0; p < m().num_ports(); ++p) m().set_egress_ready(p, true);
      m().reset();
      m().pop_egress();  // an earlier test's results, if it left any
      return;
    }
    owned_ = make_fpga_model(GetParam(), "");
    model_ = owned_.get();
  }
  FpgaModel& m() { return *model_; }
  void run() { ASSERT_TRUE(m().run_until_idle(m().default_quiet_cycles(), kMaxCycles)); }

  std::unique_ptr<FpgaModel> owned_;
  FpgaModel* model_ = nullptr;
};

TEST_P(FpgaModelTest, ReportsTheSpecsParameters) {
  const fpga::DeviceInfo info = fpga::read_device_info(m());
  EXPECT_EQ(info.design_version, 1u);
  EXPECT_EQ(info.num_ports, 4u);
  EXPECT_EQ(m().num_ports(), 4u);
  EXPECT_EQ(info.slots, 64u);
  EXPECT_EQ(info.max_beats, GetParam() == "vp" ? NETAGG_VP_MAX_BEATS : 16u)
      << "the card's build holds 16 beats a slot, the platform's NETAGG_VP_MAX_BEATS";
  EXPECT_EQ(info.max_jobs, 8u);
  EXPECT_EQ(m().read32(fpga::csr::kAggUdpPort), wire::kUdpPort) << "reset value";
}

// Four workers on four ports contribute to one round together; each gets the sum on its port,
// addressed to it.
TEST_P(FpgaModelTest, ReducesInt32FromFourPorts) {
  const JobSpec job = make_job(3, 8, 4, 4, 40);
  fpga::program_job(m(), job, 2, kAgg);
  std::vector<std::int32_t> sum(40, 0);
  for (std::uint16_t r = 0; r < 4; ++r) {
    std::vector<std::int32_t> v(40);
    for (int i = 0; i < 40; ++i)
      v[i] = (r + 1) * 1000 + i * (r % 2 ? -7 : 13) + (i == 5 ? INT32_MAX : 0);
    for (int i = 0; i < 40; ++i)
      sum[i] = std::int32_t(std::uint32_t(sum[i]) + std::uint32_t(v[i]));  // wraps, as the device
    m().push_frame(r, frame(job, r, 0, v));
  }
  run();
  const std::vector<Result> results = decode_all(m().pop_egress());
  ASSERT_EQ(results.size(), 4u);
  std::set<unsigned> ports;
  for (const Result& res : results) {
    const std::uint16_t r = res.header.rank;
    ASSERT_LT(r, 4);
    ports.insert(res.port);
    EXPECT_EQ(res.port, r) << "rank r's results leave on port r mod 4";
    EXPECT_EQ(res.header.type, wire::MsgType::kResult);
    EXPECT_EQ(res.header.job_id, 3);
    EXPECT_EQ(res.header.slot, 8);
    EXPECT_EQ(res.header.seq, 0u);
    EXPECT_EQ(res.address.dst_ip, job.workers[r].address.ip);
    EXPECT_EQ(res.address.dst_port, job.workers[r].address.port);
    EXPECT_EQ(res.address.dst_mac, fpga::worker_mac(job.workers[r]));
    EXPECT_EQ(res.address.src_ip, kAgg.ip);
    EXPECT_EQ(res.address.src_port, kAgg.udp_port);
    EXPECT_EQ(res.address.src_mac, kAgg.mac);
    EXPECT_THAT(res.values, ElementsAreArray(sum));
  }
  EXPECT_EQ(ports.size(), 4u);
  const Counters c = counters(m());
  EXPECT_EQ(c.at("frames_in"), 4u);
  EXPECT_EQ(c.at("aggregated"), 4u);
  EXPECT_EQ(c.at("completions"), 1u);
  EXPECT_EQ(c.at("frames_out"), 4u);
  EXPECT_EQ(m().egress_protocol_errors(), 0u) << m().last_protocol_error();
}

// Workers that share a port (switch_port) get their results one after the other, in rank
// order; packets arriving at different times are summed in the slot memory.
TEST_P(FpgaModelTest, WorkersSharingAPortAndRoundsOverTime) {
  JobSpec job = make_job(1, 0, 2, 3, 16);
  for (auto& w : job.workers) w.switch_port = 2;
  fpga::program_job(m(), job, 0, kAgg);
  for (std::uint32_t p = 0; p < 6; ++p) {
    for (std::uint16_t r = 0; r < 3; ++r) {
      m().push_frame(2, frame(job, r, p, std::vector<std::int32_t>(16, std::int32_t(p * 10 + r))));
      run();  // one at a time: the later ones join the round in slot memory
    }
    const std::vector<Result> results = decode_all(m().pop_egress());
    ASSERT_EQ(results.size(), 3u) << "packet " << p;
    for (std::uint16_t r = 0; r < 3; ++r) {
      EXPECT_EQ(results[r].port, 2u);
      EXPECT_EQ(results[r].header.rank, r) << "rank order";
      EXPECT_EQ(results[r].header.seq, p);
      EXPECT_THAT(results[r].values, ::testing::Each(std::int32_t(30 * p + 3)));
    }
  }
  EXPECT_EQ(counters(m()).at("completions"), 6u);
}

// Egress backpressure holds results back without losing them.
TEST_P(FpgaModelTest, BackpressureHoldsResults) {
  const JobSpec job = make_job(1, 0, 4, 2, 32);
  fpga::program_job(m(), job, 0, kAgg);
  m().set_egress_ready(1, false);
  for (std::uint32_t p = 0; p < 3; ++p)
    for (std::uint16_t r = 0; r < 2; ++r)
      m().push_frame(r, frame(job, r, p, std::vector<std::int32_t>(32, std::int32_t(p + 1))));
  EXPECT_FALSE(m().run_until_idle(m().default_quiet_cycles(), 5000)) << "port 1 is stalled";
  std::vector<Result> early = decode_all(m().pop_egress());
  for (const Result& r : early) EXPECT_EQ(r.port, 0u);
  m().set_egress_ready(1, true);
  run();
  std::vector<Result> late = decode_all(m().pop_egress());
  early.insert(early.end(), late.begin(), late.end());
  std::map<unsigned, std::vector<std::uint32_t>> seqs;
  for (const Result& r : early) {
    seqs[r.port].push_back(r.header.seq);
    EXPECT_THAT(r.values, ::testing::Each(std::int32_t(2 * (r.header.seq + 1))));
  }
  EXPECT_THAT(seqs[0], ::testing::ElementsAre(0u, 1u, 2u));
  EXPECT_THAT(seqs[1], ::testing::ElementsAre(0u, 1u, 2u));
}

// A removed job's packets are dropped as unknown; a soft reset clears jobs and counters; a
// hardware reset in the middle of traffic leaves a model that works after re-programming.
TEST_P(FpgaModelTest, RemoveSoftResetAndResetMidTraffic) {
  const JobSpec job = make_job(4, 0, 1, 2, 16);
  fpga::program_job(m(), job, 1, kAgg);
  fpga::remove_job(m(), 1);
  m().push_frame(0, frame(job, 0, 0, std::vector<std::int32_t>(16, 1)));
  run();
  const std::vector<Result> notice = decode_all(m().pop_egress());
  ASSERT_EQ(notice.size(), 1u);
  EXPECT_THAT(notice[0].values, ElementsAreArray({int(wire::NoticeReason::kUnknownJob)}));
  Counters c = counters(m());
  EXPECT_EQ(c.at("dropped_unknown_job"), 1u);
  fpga::soft_reset(m());
  c = counters(m());
  for (const auto& [name, value] : c) EXPECT_EQ(value, 0u) << name << " after a soft reset";

  fpga::program_job(m(), job, 1, kAgg);
  for (int i = 0; i < 4; ++i) m().push_frame(0, frame(job, 0, 0, std::vector<std::int32_t>(16, 1)));
  m().step(10);
  m().reset();
  m().pop_egress();  // what left before the reset (the C model: the copies' notices)
  fpga::program_job(m(), job, 1, kAgg);
  m().push_frame(0, frame(job, 0, 0, std::vector<std::int32_t>(16, 5)));
  m().push_frame(1, frame(job, 1, 0, std::vector<std::int32_t>(16, 6)));
  run();
  const std::vector<Result> results = decode_all(m().pop_egress());
  ASSERT_EQ(results.size(), 2u);
  for (const Result& r : results) EXPECT_THAT(r.values, ::testing::Each(11));
  EXPECT_EQ(counters(m()).at("frames_in"), 2u) << "the reset cleared the counters";
}

// The job table reads back through JOB_INDEX / JOB_ENTRY_*: what the driver stored, entry by
// entry, emptied by a remove and by a soft reset.
TEST_P(FpgaModelTest, JobTableReadsBack) {
  EXPECT_TRUE(fpga::read_device_info(m()).job_table_readback);
  JobSpec child = make_job(6, 8, 2, 3, 32);
  child.parent = ParentSpec{{0x0A00C801, 40000}, 40, 1, 20, std::nullopt, std::nullopt};
  fpga::program_job(m(), make_job(5, 0, 4, 2, 16), 1, kAgg);
  fpga::program_job(m(), child, 4, kAgg);
  for (unsigned e = 0; e < 8; ++e) {
    const fpga::JobTableEntry entry = fpga::read_job_entry(m(), e);
    EXPECT_EQ(entry.entry, e);
    EXPECT_EQ(entry.valid, e == 1 || e == 4) << "entry " << e;
  }
  fpga::JobTableEntry entry = fpga::read_job_entry(m(), 4);
  EXPECT_EQ(entry.job_id, 6u);
  EXPECT_EQ(entry.workers, 3u);
  EXPECT_EQ(entry.slot_base, 8u);
  EXPECT_EQ(entry.slot_count, 2u);
  EXPECT_EQ(entry.elements_per_packet, 32u);
  EXPECT_EQ(entry.parent_job_id, std::optional<std::uint16_t>(40));
  entry = fpga::read_job_entry(m(), 1);
  EXPECT_EQ(entry.job_id, 5u);
  EXPECT_EQ(entry.slot_count, 4u);
  EXPECT_FALSE(entry.parent_job_id);
  fpga::remove_job(m(), 4);
  EXPECT_FALSE(fpga::read_job_entry(m(), 4).valid);
  EXPECT_TRUE(fpga::read_job_entry(m(), 1).valid);
  fpga::soft_reset(m());
  EXPECT_FALSE(fpga::read_job_entry(m(), 1).valid);
}

// A contribution dropped for a reason its sender can act on is answered with a notice out of
// the port it came in on, to the packet's source (a registered worker or not), from the address
// it was sent to: a stranger's packet (foreign source), a duplicate (with the ranks its round
// waits for), a count that differs from its round's. A recovery copy gets none.
TEST_P(FpgaModelTest, DropsAWorkerCanActOnAreAnsweredWithANotice) {
  const JobSpec job = make_job(2, 4, 2, 3, 16);
  fpga::program_job(m(), job, 0, kAgg);
  JobSpec stranger = job;  // rank 1's packet from an address the job does not have
  stranger.workers[1].address = Endpoint{0x0A0000C8, 40000};
  const wire::Mac stranger_mac{0x02, 0, 0, 0, 0, 0x77};
  m().push_frame(3, testing::contribution_frame(stranger, 1, 0, {5}, stranger_mac, kAgg.mac,
                                                Endpoint{kAgg.ip, kAgg.udp_port}));
  run();
  std::vector<Result> out = decode_all(m().pop_egress());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 3u);
  EXPECT_EQ(out[0].header.type, wire::MsgType::kNotice);
  EXPECT_EQ(out[0].header.dtype, wire::DataType::kInt32);
  EXPECT_EQ(out[0].header.job_id, 2);
  EXPECT_EQ(out[0].header.rank, 1);
  EXPECT_EQ(out[0].header.slot, 4);
  EXPECT_EQ(out[0].header.exponent, wire::kExponentNone);
  EXPECT_EQ(out[0].address.dst_ip, 0x0A0000C8u);
  EXPECT_EQ(out[0].address.dst_port, 40000);
  EXPECT_EQ(out[0].address.dst_mac, stranger_mac);
  EXPECT_EQ(out[0].address.src_ip, kAgg.ip);
  EXPECT_EQ(out[0].address.src_port, kAgg.udp_port);
  EXPECT_EQ(out[0].address.src_mac, kAgg.mac);
  EXPECT_EQ(out[0].address.ecn, 0);
  EXPECT_THAT(out[0].values, ElementsAreArray({int(wire::NoticeReason::kForeignSource)}));

  // Rank 0 starts packet 0's round, then sends it again; rank 1 sends a count the round has not.
  m().push_frame(0, frame(job, 0, 0, {1}));
  run();
  m().push_frame(0, frame(job, 0, 0, {1}));
  run();
  m().push_frame(1, frame(job, 1, 0, {1, 2}));
  run();
  out = decode_all(m().pop_egress());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].port, 0u);
  EXPECT_EQ(out[0].address.dst_port, job.workers[0].address.port);
  EXPECT_THAT(out[0].values, ElementsAreArray({int(wire::NoticeReason::kDuplicate), 0b110}));
  EXPECT_EQ(out[1].port, 1u);
  EXPECT_EQ(out[1].address.dst_port, job.workers[1].address.port);
  EXPECT_THAT(out[1].values, ElementsAreArray({int(wire::NoticeReason::kCountMismatch)}));
  // A recovery copy of rank 0's packet: dropped as a duplicate, not answered.
  std::vector<std::byte> copy = frame(job, 0, 0, {1});
  copy[wire::kFrameOverhead + wire::offset::kFlags] |= std::byte{wire::kFlagRecovery};
  m().push_frame(0, copy);
  run();
  EXPECT_TRUE(m().pop_egress().empty());
  const Counters c = counters(m());
  EXPECT_EQ(c.at("dropped_duplicate"), 2u);
  EXPECT_EQ(c.at("notices"), 3u);
  EXPECT_EQ(c.at("frames_out"), 3u);
  EXPECT_EQ(m().egress_protocol_errors(), 0u) << m().last_protocol_error();
}

INSTANTIATE_TEST_SUITE_P(Models, FpgaModelTest, ::testing::Values("rtl", "hls", "vp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace netagg::sim

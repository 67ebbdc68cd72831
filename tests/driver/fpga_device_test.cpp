// SPDX-License-Identifier: Apache-2.0
// fpga::Device (driver/fpga/device.hpp) on the Verilated RTL's AXI4-Lite port, in process: the
// same calls netagg-ctl makes on a card. Identify, jobs into chosen entries with traffic through
// them, remove (frames then dropped as unknown job), counters, clear, soft reset, the checks;
// a device that is not our design (a wrong xclbin) through a scripted bus; the control channel's
// codec and the client's error when nothing listens.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "daemon.hpp"
#include "expect_error.hpp"
#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/csr_channel.hpp"
#include "netagg/fpga/device.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"

namespace netagg::fpga {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Counters = std::map<std::string, std::uint64_t>;

constexpr std::uint64_t kMaxCycles = 200000;  // a guard against a hung model, not a measure
const AggregatorAddress kAgg{{0x02, 0x6e, 0x61, 0x67, 0x00, 0x07}, 0x0A0000FE, 20033};

JobSpec make_job(std::uint16_t id, std::uint16_t base, std::uint16_t window,
                 std::uint16_t workers) {
  JobSpec job;
  job.job_id = id;
  job.slot_base = base;
  job.slot_count = window;
  job.elements_per_packet = 16;
  for (std::uint16_t r = 0; r < workers; ++r)
    job.workers.push_back(
        {r, Endpoint{0x0A000001u + r, std::uint16_t(31000 + r)}, std::nullopt, std::nullopt});
  return job;
}

std::vector<std::byte> frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                             const std::vector<std::int32_t>& values) {
  return testing::contribution_frame(job, rank, seq, values, worker_mac(job.workers[rank]),
                                     kAgg.mac, Endpoint{kAgg.ip, kAgg.udp_port});
}

Counters counters(Device& d) {
  Counters c;
  for (const auto& k : d.counters()) c[std::string(k.name)] = k.value;
  return c;
}

using testing::error_of;

// How many of `frames` are notices of `reason`; a frame that is not one fails the test.
std::size_t notices_of(const std::vector<sim::EgressFrame>& frames, wire::NoticeReason reason) {
  std::size_t n = 0;
  for (const auto& f : frames) {
    const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
    const auto notice = d ? wire::read_notice(d.packet) : std::nullopt;
    EXPECT_TRUE(notice && notice->reason == reason) << "a frame that is no such notice";
    n += notice && notice->reason == reason;
  }
  return n;
}

class RtlDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sim::rtl_model_available()) GTEST_SKIP() << "this build has no RTL model";
    model_ = sim::make_rtl_model();
    device_ = std::make_unique<Device>(*model_, "the Verilated RTL");
  }
  // Both workers of `job` contribute {base + rank, ...} for packet `seq`; returns the results.
  std::vector<sim::EgressFrame> round(const JobSpec& job, std::uint32_t seq, std::int32_t base) {
    for (std::uint16_t r = 0; r < job.workers.size(); ++r)
      model_->push_frame(r, frame(job, r, seq, {base + r, 2 * base + r}));
    EXPECT_TRUE(model_->run_until_idle(model_->default_quiet_cycles(), kMaxCycles));
    return model_->pop_egress();
  }

  std::unique_ptr<sim::FpgaModel> model_;
  std::unique_ptr<Device> device_;
};

TEST_F(RtlDeviceTest, IdentifiesTheDesign) {
  const DeviceInfo info = device_->identify();
  EXPECT_EQ(info.design_version, kDesignVersion);
  EXPECT_EQ(info.wire_version, wire::kVersion);
  EXPECT_EQ(info.num_ports, 4u);
  EXPECT_EQ(info.max_jobs, 8u);
  EXPECT_EQ(info.slots, 64u);
  EXPECT_EQ(device_->aggregator_address().udp_port, wire::kUdpPort) << "reset value";
}

TEST_F(RtlDeviceTest, JobsInChosenEntriesAggregateAndRemovedOnesDrop) {
  const std::vector<JobSpec> jobs = {make_job(21, 0, 4, 2), make_job(22, 4, 4, 2)};
  device_->add_jobs(jobs, {.first_entry = 5}, kAgg);  // entries 5 and 6
  const AggregatorAddress a = device_->aggregator_address();
  EXPECT_EQ(a.ip, kAgg.ip);
  EXPECT_EQ(a.udp_port, kAgg.udp_port);
  EXPECT_EQ(a.mac, kAgg.mac);

  for (const JobSpec& job : jobs) {
    const auto results = round(job, 0, 100 * job.job_id);
    ASSERT_EQ(results.size(), 2u) << "job " << job.job_id;
    for (const auto& f : results) {
      const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
      ASSERT_TRUE(d);
      EXPECT_EQ(d.packet.header.job_id, job.job_id);
      EXPECT_EQ(std::int32_t(wire::load_be32(d.packet.payload.data())), 200 * job.job_id + 1);
    }
  }
  Counters c = counters(*device_);
  EXPECT_EQ(c["completions"], 2u);
  EXPECT_EQ(c["frames_in"], 4u);

  device_->remove_job(5);
  // Its workers are told (the first drop of each rank for the reason is answered).
  EXPECT_EQ(notices_of(round(jobs[0], 1, 7), wire::NoticeReason::kUnknownJob), 2u);
  EXPECT_EQ(round(jobs[1], 1, 7).size(), 2u) << "entry 6 is untouched";
  c = counters(*device_);
  EXPECT_EQ(c["dropped_unknown_job"], 2u);
  EXPECT_EQ(c["completions"], 3u);

  device_->clear_counters();
  c = counters(*device_);
  EXPECT_EQ(c["frames_in"], 0u);
  EXPECT_EQ(c["completions"], 0u);

  // Soft reset: the job table empties (so job 22 drops now; the notices' rate starts again), the
  // address registers stay.
  device_->reset();
  EXPECT_EQ(notices_of(round(jobs[1], 2, 3), wire::NoticeReason::kUnknownJob), 2u);
  EXPECT_EQ(counters(*device_)["dropped_unknown_job"], 2u);
  EXPECT_EQ(device_->aggregator_address().ip, kAgg.ip);
}

TEST_F(RtlDeviceTest, ChecksJobsAgainstTheDeviceBeforeWriting) {
  const std::vector<JobSpec> two = {make_job(1, 0, 4, 2), make_job(2, 4, 4, 2)};
  EXPECT_THAT(error_of([&] { device_->add_jobs(two, {.first_entry = 7}, kAgg); }, Errc::kConfig),
              HasSubstr("entry 8 does not exist"));
  const std::vector<JobSpec> overlap = {make_job(1, 0, 4, 2), make_job(2, 3, 4, 2)};
  EXPECT_THAT(error_of([&] { device_->add_jobs(overlap, {}, kAgg); }, Errc::kConfig),
              HasSubstr("overlap"));
  const std::vector<JobSpec> big = {make_job(1, 60, 8, 2)};
  EXPECT_THAT(error_of([&] { device_->add_jobs(big, {}, kAgg); }, Errc::kConfig),
              HasSubstr("64 slots"));
  EXPECT_THAT(error_of([&] { device_->remove_job(8); }, Errc::kConfig),
              AllOf(HasSubstr("the Verilated RTL"), HasSubstr("entry 8 does not exist")));
  // Nothing was written: no job is there, so a contribution is an unknown job's.
  EXPECT_EQ(notices_of(round(two[0], 0, 1), wire::NoticeReason::kUnknownJob), 2u);
  EXPECT_EQ(counters(*device_)["dropped_unknown_job"], 2u);
}

// The job table read back through the Device, and add_jobs placing jobs against it: free entries,
// nothing written when a job is refused, --replace's in-place replacement.
TEST_F(RtlDeviceTest, JobTableReadsBackAndAddJobsPlacesAgainstIt) {
  const std::vector<JobSpec> jobs = {make_job(21, 0, 4, 2), make_job(22, 4, 4, 2)};
  std::vector<PlacedJob> placed = device_->add_jobs(jobs, {}, kAgg);
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].entry, 0u);
  EXPECT_EQ(placed[1].entry, 1u);
  std::vector<JobTableEntry> table = device_->job_table();
  ASSERT_EQ(table.size(), 8u);
  EXPECT_TRUE(table[1].valid);
  EXPECT_EQ(table[1].job_id, 22u);
  EXPECT_EQ(table[1].workers, 2u);
  EXPECT_EQ(table[1].slot_base, 4u);
  EXPECT_EQ(table[1].slot_count, 4u);
  EXPECT_EQ(table[1].elements_per_packet, 16u);
  EXPECT_FALSE(table[1].parent_job_id);
  for (unsigned e = 2; e < 8; ++e) EXPECT_FALSE(table[e].valid) << e;

  // Refused: nothing is written (no COMMIT), and both jobs still aggregate.
  const std::uint32_t commits = model_->read32(csr::kCommit) >> 16;
  const std::vector<JobSpec> again = {make_job(23, 8, 4, 2), make_job(22, 4, 4, 2)};
  EXPECT_THAT(error_of([&] { device_->add_jobs(again, {}, kAgg); }, Errc::kConfig),
              HasSubstr("job 22 already in entry 1"));
  EXPECT_EQ(model_->read32(csr::kCommit) >> 16, commits);
  for (const JobSpec& job : jobs) EXPECT_EQ(round(job, 0, 5).size(), 2u) << job.job_id;

  placed = device_->add_jobs(again, {.first_entry = std::nullopt, .replace = true}, kAgg);
  EXPECT_EQ(placed[0].entry, 2u);
  EXPECT_FALSE(placed[0].replaces);
  EXPECT_EQ(placed[1].entry, 1u);
  EXPECT_EQ(placed[1].replaces, std::optional<std::uint16_t>(22));
  table = device_->job_table();
  EXPECT_EQ(table[2].job_id, 23u);
  EXPECT_EQ(table[1].job_id, 22u);
  EXPECT_EQ(round(again[0], 0, 3).size(), 2u);
  device_->remove_job(0);
  EXPECT_FALSE(device_->job_table()[0].valid);
}

// A bus that answers VERSION/FEATURES as scripted: another design behind the registers.
class ScriptedBus final : public CsrBus {
 public:
  std::uint32_t version = 0, features = 0;
  std::uint32_t read32(std::uint32_t address) override {
    if (address == csr::kVersion) return version;
    if (address == csr::kFeatures) return features;
    return 0;
  }
  void write32(std::uint32_t, std::uint32_t) override { ++writes; }
  int writes = 0;
};

TEST(Device, AnotherDesignIsRefusedBeforeAnyWrite) {
  ScriptedBus bus;
  Device device(bus, "Alveo device 0 (other.xclbin)");
  bus.features = 0x10060804;
  bus.version = (2u << 16) | wire::kVersion;  // a later design
  EXPECT_THAT(error_of([&] { device.identify(); }, Errc::kUnsupported),
              AllOf(HasSubstr("Alveo device 0 (other.xclbin)"), HasSubstr("design 2"),
                    HasSubstr("different kernel")));
  bus.version = 0x4;  // an HLS kernel's ap_ctrl register at 0x000 (ap_idle)
  EXPECT_THAT(error_of([&] { device.identify(); }, Errc::kUnsupported),
              HasSubstr("VERSION reads 0x00000004"));
  const std::vector<JobSpec> jobs = {make_job(1, 0, 4, 2)};
  EXPECT_THROW(device.add_jobs(jobs, {}, kAgg), Error);
  EXPECT_THROW(device.remove_job(0), Error);
  EXPECT_EQ(bus.writes, 0);
  bus.version = (1u << 16) | wire::kVersion;
  // A design without the job table's readback (FEATURES bit 4 clear): no list, no free entry.
  EXPECT_THAT(error_of([&] { device.job_table(); }, Errc::kUnsupported),
              AllOf(HasSubstr("Alveo device 0"), HasSubstr("cannot read its job table back")));
  EXPECT_THAT(error_of([&] { device.add_jobs(jobs, {}, kAgg); }, Errc::kUnsupported),
              HasSubstr("--entry E and --replace"));
  EXPECT_EQ(bus.writes, 0);
  bus.features = 0;  // nothing there
  EXPECT_THAT(error_of([&] { device.identify(); }, Errc::kTransport), HasSubstr("Alveo device 0"));
}

TEST(CsrChannel, RequestsAndResponsesRoundTrip) {
  using namespace channel;
  const Message write{0xA1B2C3D4, Op::kWrite32, CsrStatus::kOk, csr::kJobId, 0x80000007};
  const Bytes b = encode_request(write);
  EXPECT_EQ(b[0], std::byte{'N'});
  EXPECT_EQ(b[3], std::byte{'R'});
  const auto d = decode_request(b);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, CsrStatus::kOk);
  EXPECT_EQ(d->tag, write.tag);
  EXPECT_EQ(d->op, Op::kWrite32);
  EXPECT_EQ(d->address, csr::kJobId);
  EXPECT_EQ(d->value, 0x80000007u);

  Message response = *d;
  response.status = CsrStatus::kBadAddress;
  const auto r = decode_response(encode_response(response));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, CsrStatus::kBadAddress);
  EXPECT_EQ(r->tag, write.tag);
  // A response is no request and the other way round only by its status byte: a request with
  // a non-zero status byte is malformed.
  EXPECT_EQ(decode_request(encode_response(response))->status, CsrStatus::kMalformed);
}

TEST(CsrChannel, MalformedRequestsAreAnsweredAsSuchAndStrangersIgnored) {
  using namespace channel;
  const Bytes good = encode_request({7, Op::kRead32, CsrStatus::kOk, 0, 0});
  EXPECT_FALSE(decode_request(std::span(good).first(7))) << "too short to carry the magic+tag";
  Bytes other = good;
  other[0] = std::byte{'X'};
  EXPECT_FALSE(decode_request(other)) << "not for the channel";

  const auto short_one = decode_request(std::span(good).first(12));
  ASSERT_TRUE(short_one);
  EXPECT_EQ(short_one->status, CsrStatus::kMalformed);
  EXPECT_EQ(short_one->tag, 7u);
  Bytes bad_op = good;
  bad_op[8] = std::byte{9};
  EXPECT_EQ(decode_request(bad_op)->status, CsrStatus::kMalformed);
  Bytes reserved = good;
  reserved[11] = std::byte{1};
  EXPECT_EQ(decode_request(reserved)->status, CsrStatus::kMalformed);
  Bytes read_with_value = good;
  read_with_value[19] = std::byte{1};
  EXPECT_EQ(decode_request(read_with_value)->status, CsrStatus::kMalformed);
  EXPECT_FALSE(decode_response(std::span(good).first(19)));
}

TEST(CsrChannel, NothingListeningIsNamed) {
  // A port nobody listens on: bind one, note it, close it.
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  EXPECT_THAT(error_of([&] { open_sim_device(address); }, Errc::kTransport),
              AllOf(HasSubstr(address), HasSubstr("--control")));
  EXPECT_THAT(error_of([&] { open_sim_device("localhost"); }, Errc::kConfig), HasSubstr("--sim"));
}

}  // namespace
}  // namespace netagg::fpga

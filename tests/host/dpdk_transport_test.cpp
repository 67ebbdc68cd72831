// SPDX-License-Identifier: Apache-2.0
// The DPDK transport in one process, without root or network: net_ring0 is a loopback port
// (what it sends comes back to it), so a transport whose aggregator is its own address receives
// its own frames (ARP included) and one aimed elsewhere sees them as foreign. Also: one EAL per
// process, port ownership, the MTU check, and the EAL's start-up error as a user sees it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "netagg/dpdk.hpp"
#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

DpdkConfig loopback_config() {
  DpdkConfig c;
  c.lcores = "0";
  c.no_huge = true;
  c.no_pci = true;
  c.vdevs = {"net_ring0"};
  c.mbufs = 1023;
  c.arp_timeout = std::chrono::milliseconds(300);
  c.verify_udp_checksum = true;
  return c;
}

Endpoint endpoint(const char* text) { return Endpoint::parse(text); }

// Packets of up to 256 elements: 1046 bytes, within any Ethernet MTU.
constexpr std::size_t kMaxPacket = wire::kHeaderSize + 256 * 4;

std::unique_ptr<Transport> make(const DpdkConfig& c, const Endpoint& local,
                                const Endpoint& aggregator) {
  return dpdk::make_transport(c, local, std::nullopt, aggregator, kMaxPacket);
}

std::vector<std::byte> contribution(std::uint32_t seq, std::uint16_t count) {
  wire::Header h;
  h.job_id = 7;
  h.rank = 1;
  h.slot = static_cast<std::uint16_t>(seq % 4);
  h.count = count;
  h.seq = seq;
  h.exponent = 3;
  std::vector<std::byte> p(h.packet_size());
  EXPECT_TRUE(wire::encode_header(h, p));
  for (std::size_t i = wire::kHeaderSize; i < p.size(); ++i) p[i] = std::byte(i * 7 + seq);
  return p;
}

// Receives until `want` packets came or nothing arrives for a while.
std::vector<std::vector<std::byte>> receive_all(Transport& t, std::size_t want) {
  std::vector<std::vector<std::byte>> got;
  for (int idle = 0; got.size() < want && idle < 20;) {
    const auto n = t.receive(std::chrono::milliseconds(20), [&](std::span<const std::byte> p) {
      got.emplace_back(p.begin(), p.end());
    });
    idle = n == 0 ? idle + 1 : 0;
  }
  return got;
}

using testing::error_of;

TEST(DpdkTransport, FramesGoOutAndComeBackThroughTheLoopbackPort) {
  // Aggregator = ourselves: ARP for it is answered by the transport itself (its own request
  // comes back), and its contributions come back as packets "from the aggregator".
  const Endpoint self = endpoint("10.1.0.1:20033");
  auto t = make(loopback_config(), self, self);
  EXPECT_THAT(t->name(), AllOf(HasSubstr("dpdk port 0 (net_ring0)"), HasSubstr("10.1.0.1:20033")));
  std::vector<std::vector<std::byte>> sent;
  for (std::uint32_t s = 0; s < 40; ++s) sent.push_back(contribution(s, s % 3 == 0 ? 0 : 256));
  std::vector<std::span<const std::byte>> views(sent.begin(), sent.end());
  t->send(views);
  const auto got = receive_all(*t, sent.size());
  EXPECT_EQ(got, sent);  // byte for byte, in order; UDP checksums verified on the way in
  const auto c = t->counters();
  EXPECT_EQ(c.sent, 40u);
  EXPECT_EQ(c.received, 40u);
  EXPECT_EQ(c.dropped_foreign, 0u);
  EXPECT_EQ(c.dropped_malformed, 0u);
}

TEST(DpdkTransport, FramesForAnotherPortOrMacAreForeign) {
  // From 10.1.0.1:20100 to the "aggregator" 10.1.0.1:20033: back on the loopback they are
  // addressed to port 20033, which is not ours.
  auto t = make(loopback_config(), endpoint("10.1.0.1:20100"), endpoint("10.1.0.1:20033"));
  const auto p = contribution(1, 16);
  std::vector<std::span<const std::byte>> views(5, std::span<const std::byte>(p));
  t->send(views);
  EXPECT_TRUE(receive_all(*t, 5).empty());
  EXPECT_EQ(t->counters().dropped_foreign, 5u);
  EXPECT_EQ(t->counters().received, 0u);
  t.reset();

  // A configured aggregator MAC that is not ours: the frames come back to a MAC not ours.
  DpdkConfig c = loopback_config();
  c.aggregator_mac = wire::Mac{0x02, 0, 0, 0, 0, 0x99};
  const Endpoint self = endpoint("10.1.0.1:20033");
  t = make(c, self, self);
  t->send(views);
  EXPECT_TRUE(receive_all(*t, 5).empty());
  EXPECT_EQ(t->counters().dropped_foreign, 5u);
}

TEST(DpdkTransport, UnansweredArpSaysWhatToSet) {
  const std::string what = error_of(
      [] { make(loopback_config(), endpoint("10.1.0.1:20100"), endpoint("10.1.0.9:20033")); },
      Errc::kTransport);
  EXPECT_THAT(what, AllOf(HasSubstr("no ARP reply from 10.1.0.9 (the aggregator) on port 0"),
                          HasSubstr("within 300 ms"), HasSubstr("dpdk.aggregator_mac"),
                          HasSubstr("NETAGG_DPDK_AGGREGATOR_MAC")));
  // The port was given back: the next transport gets it.
  const Endpoint self = endpoint("10.1.0.1:20033");
  EXPECT_NO_THROW(make(loopback_config(), self, self));
}

TEST(DpdkTransport, APortServesOneTransportAtATime) {
  const Endpoint self = endpoint("10.1.0.1:20033");
  auto first = make(loopback_config(), self, self);
  EXPECT_THAT(error_of([&] { make(loopback_config(), self, self); }, Errc::kConfig),
              HasSubstr("dpdk.port: port 0 (net_ring0) is in use by another transport"));
  DpdkConfig other = loopback_config();
  other.port = 5;
  EXPECT_THAT(error_of([&] { make(other, self, self); }, Errc::kConfig),
              HasSubstr("dpdk.port: there is no DPDK port 5; the EAL has 0 (net_ring0)"));
}

TEST(DpdkTransport, PacketsLargerThanTheMtuAreRefusedUpFront) {
  const Endpoint self = endpoint("10.1.0.1:20033");
  // 1024 elements: 4118-byte packets, 4146-byte datagrams; net_ring0 has Ethernet's 1500.
  const std::size_t big = wire::kHeaderSize + 1024 * 4;
  EXPECT_THAT(
      error_of([&] { dpdk::make_transport(loopback_config(), self, std::nullopt, self, big); },
               Errc::kConfig),
      AllOf(HasSubstr("job: elements_per_packet makes IP datagrams of up to 4146 bytes"),
            HasSubstr("has MTU 1500: at most 362 elements per packet")));
}

TEST(DpdkTransport, OneEalPerProcess) {
  dpdk::init_eal(loopback_config());
  dpdk::init_eal(loopback_config());  // the same options again: fine
  DpdkConfig other = loopback_config();
  other.vdevs.clear();
  EXPECT_THAT(error_of([&] { dpdk::init_eal(other); }, Errc::kConfig),
              AllOf(HasSubstr("can be initialised once per process"), HasSubstr("--vdev net_ring0"),
                    HasSubstr("same dpdk.lcores, vdevs")));
  // Another port of the same EAL would be fine; other EAL options are not, even for a transport.
  const Endpoint self = endpoint("10.1.0.1:20033");
  EXPECT_THAT(error_of([&] { make(other, self, self); }, Errc::kConfig),
              HasSubstr("once per process"));
}

TEST(DpdkTransport, EalArgumentsFollowTheConfig) {
  DpdkConfig c;
  EXPECT_EQ(dpdk::eal_arguments(c), (std::vector<std::string>{"netagg", "-l", "0", "--no-shconf"}));
  c = loopback_config();
  c.file_prefix = "w3";
  c.eal_args = {"--log-level", "8"};
  EXPECT_EQ(
      dpdk::eal_arguments(c),
      (std::vector<std::string>{"netagg", "-l", "0", "--no-huge", "--no-pci", "-m", "256",
                                "--file-prefix", "w3", "--vdev", "net_ring0", "--log-level", "8"}));
}

// The EAL cannot start without hugepages unless told --no-huge: the tool, configured by the
// environment as a launcher would, exits with a usage error that says what to do. --huge-dir
// points at a folder that is no hugetlbfs, so this fails the same way on a machine with
// hugepages reserved.
TEST(DpdkTransport, EalStartFailureSaysWhatToDo) {
  const std::string dir = ::testing::TempDir() + "netagg-dpdk-eal-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string job = dir + "/job.json";
  FILE* f = std::fopen(job.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"job_id": 1, "slots": {"base": 0, "count": 4}, "elements_per_packet": 64,
    "aggregator": "10.1.0.254:20033", "workers": [{"rank": 0, "address": "10.1.0.1:20100"}]})",
             f);
  std::fclose(f);
  const std::string cmd = "env NETAGG_JOB_FILE=" + job +
                          " NETAGG_RANK=0 NETAGG_EPOCH=1 NETAGG_TRANSPORT=dpdk "
                          "NETAGG_DPDK_NO_PCI=1 NETAGG_DPDK_VDEVS=net_ring0"
                          " NETAGG_DPDK_EAL_ARGS='--huge-dir " +
                          dir + "/no-hugetlbfs' " + std::string(NETAGG_BINARY_DIR) +
                          "/host/tools/netagg-allreduce --count 8 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;)
    out.append(buf.data(), n);
  const int status = ::pclose(p);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;  // a configuration problem
  EXPECT_THAT(out, AllOf(HasSubstr("dpdk: the EAL could not start"),
                         HasSubstr("no usable hugepages"), HasSubstr("nr_hugepages"),
                         HasSubstr("NETAGG_DPDK_NO_HUGE=1"), HasSubstr("EAL arguments: netagg")))
      << out;
}

}  // namespace
}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The DPDK transport over a real (virtual) network: each worker in a network namespace of its
// own, running netagg-allreduce --transport dpdk over a veth (no IP address in the kernel: DPDK
// owns it) through a packet socket (net_af_packet) or an XDP socket (net_af_xdp: an XDP program
// on the veth steers its frames to the socket), the aggregator netagg-switchd on kernel UDP in
// another namespace, all joined by a bridge in a third (scripts/netns/dpdk-netns.sh draws it). The
// workers ARP for the aggregator, the switch's kernel ARPs for them, and every worker checks its
// result: int32 exactly, fp32 within the block floating point bound. Loss: an nftables rule in the
// aggregator's namespace drops a share of the netagg UDP both ways.
//
// Needs root (namespaces, af_packet) and ip, nft, ethtool; af_xdp also the kernel's XDP sockets
// and DPDK's net_af_xdp driver. Skips with the reason otherwise.
// Namespaces are named after this process and test, and removed in TearDown, pass or fail.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "child_process.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kScript = std::string(NETAGG_SOURCE_DIR) + "/scripts/netns/dpdk-netns.sh";
const std::string kTool = std::string(NETAGG_BINARY_DIR) + "/host/tools/netagg-allreduce";
const std::string kSwitchd = std::string(NETAGG_BINARY_DIR) + "/sim/switch/netagg-switchd";
constexpr int kWorkers = 3;
constexpr int kWindow = 32;
constexpr int kElementsPerPacket = 256;  // 1046-byte packets: the veths' MTU is 1500

using sim::ChildProcess;

// stdout and stderr together, as a person at a terminal would read them.
ChildProcess start(const std::vector<std::string>& argv) {
  sim::ChildOptions o;
  o.stderr_to = sim::ChildStderr::kStdout;
  return ChildProcess(argv, o);
}

void finish(ChildProcess& p, std::chrono::seconds limit) {
  if (!p.wait_exit(ChildProcess::Clock::now() + limit)) {
    ADD_FAILURE() << "still running after " << limit.count() << " s; killed:\n" << p.output();
    p.signal(SIGKILL);
    p.wait_exit();
  }
}

// A shell command; its output, and failure if it exits non-zero.
std::string sh(const std::string& cmd) {
  ChildProcess p = start({"sh", "-c", cmd});
  finish(p, std::chrono::seconds(30));
  EXPECT_TRUE(p.succeeded()) << cmd << "\n" << p.describe_exit() << "\n" << p.output();
  return p.output();
}

bool have(const char* tool) {
  return std::system(fmt::format("command -v {} > /dev/null 2>&1", tool).c_str()) == 0;
}

// Whether this kernel has XDP sockets and this DPDK the net_af_xdp driver.
bool af_xdp_available(std::string& why) {
  if (std::system("grep -q ' xsk_bind$' /proc/kallsyms 2>/dev/null") != 0) {
    why = "this kernel has no XDP sockets (CONFIG_XDP_SOCKETS)";
    return false;
  }
  if (std::system("ldconfig -p 2>/dev/null | grep -q librte_net_af_xdp") != 0) {
    why = "DPDK's net_af_xdp driver (librte_net_af_xdp) is not installed";
    return false;
  }
  return true;
}

// How a run goes beyond its tensor: the worker ports' pools, the switch on kernel UDP or on an
// XDP socket (netagg-switchd --dpdk), extra netagg-allreduce arguments.
struct RunShape {
  int iterations = 1;
  int mbufs = 8191;
  bool switch_on_xdp = false;
  bool steering = false;  // the XDP ports (workers', the switch's) load netagg's steering program
  std::vector<std::string> worker_args;
};

// The parameter: the DPDK driver of the workers' port, af_packet or af_xdp.
class DpdkNetns : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: network namespaces, veths and af_packet sockets";
    if (std::string why; GetParam() == "af_xdp" && !af_xdp_available(why)) GTEST_SKIP() << why;
    for (const char* tool : {"ip", "nft", "ethtool"})
      if (!have(tool))
        GTEST_SKIP() << tool << " is not installed (scripts/install-deps.sh: iproute2, nftables, "
                     << "ethtool)";
    static int counter = 0;
    // Root is not enough everywhere (a chroot, a container without CAP_SYS_ADMIN on the
    // namespace mounts): try one namespace first and skip with the reason if it cannot be made.
    const std::string probe = fmt::format("nadprobe{}x{}", ::getpid(), counter++);
    const bool namespaces_work = std::system(fmt::format("ip netns add {0} > /dev/null 2>&1 && "
                                                         "ip netns exec {0} true > /dev/null 2>&1",
                                                         probe)
                                                 .c_str()) == 0;
    [[maybe_unused]] const int deleted =
        std::system(fmt::format("ip netns del {} > /dev/null 2>&1", probe).c_str());
    if (!namespaces_work)
      GTEST_SKIP() << "cannot create and enter a network namespace here (`ip netns add` / "
                   << "`ip netns exec` failed, e.g. in a chroot)";
    name_ = fmt::format("nad{}x{}", ::getpid(), counter++);
    dir_ = fs::temp_directory_path() / name_;
    fs::create_directories(dir_);
    up_ = true;
    sh(fmt::format("bash {} up {} {}", kScript, name_, kWorkers));
    job_ = (dir_ / "job.json").string();
    sh(fmt::format("bash {} job {} {} {} > {}", kScript, kWorkers, kElementsPerPacket, kWindow,
                   job_));
  }

  void TearDown() override {
    if (up_) {
      ChildProcess p = start({"bash", kScript, "down", name_});
      finish(p, std::chrono::seconds(30));
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `run.iterations` all-reduces of `count` elements on a fresh switch; each worker's JSON.
  std::vector<json> allreduce(const std::string& dtype, int count, int seed,
                              const RunShape& run = {}) {
    const int iterations = run.iterations, mbufs = run.mbufs;
    std::vector<std::string> sw_argv = {"ip", "netns", "exec", name_ + "-agg"};
    if (run.switch_on_xdp) {
      // The kernel of the switch's namespace must not answer for its address (ICMP, ARP): the
      // XDP socket takes every frame of eth0 anyway, the address goes for the run.
      sh(fmt::format("ip -n {}-agg addr flush dev eth0", name_));
      sw_argv.insert(sw_argv.end(),
                     {"env",
                      "NETAGG_DPDK_VDEVS=net_af_xdp0,iface=eth0" +
                          (run.steering ? steering_argument() : std::string()),
                      "NETAGG_DPDK_NO_HUGE=1", "NETAGG_DPDK_NO_PCI=1", kSwitchd, "--dpdk"});
    } else {
      sw_argv.push_back(kSwitchd);
    }
    sw_argv.insert(sw_argv.end(),
                   {"--listen", "10.77.0.254:20033", "--job", job_, "--slots",
                    std::to_string(kWindow), "--counters-json", (dir_ / "switch.json").string()});
    ChildProcess sw = start(sw_argv);
    sw.wait_line("listening on", ChildProcess::Clock::now() + std::chrono::seconds(10));
    EXPECT_THAT(sw.output(), ::testing::HasSubstr("listening on 10.77.0.254:20033"));
    std::vector<ChildProcess> workers;
    const std::string epoch = std::to_string(std::random_device{}());  // one for this run
    for (int r = 0; r < kWorkers; ++r) {
      std::vector<std::string> argv = {
          "ip",
          "netns",
          "exec",
          fmt::format("{}-w{}", name_, r),
          "env",
          fmt::format("NETAGG_DPDK_VDEVS=net_{}0,iface=dp0{}", GetParam(),
                      run.steering ? steering_argument() : ""),
          "NETAGG_DPDK_NO_HUGE=1",
          "NETAGG_DPDK_NO_PCI=1",
          "NETAGG_DPDK_VERIFY_UDP_CHECKSUM=1",
          fmt::format("NETAGG_DPDK_MBUFS={}", mbufs),
          kTool,
          "--rank",
          std::to_string(r),
          "--job",
          job_,
          "--transport",
          "dpdk",
          "--epoch",
          epoch,
          "--dtype",
          dtype,
          "--count",
          std::to_string(count),
          "--seed",
          std::to_string(seed),
          "--iterations",
          std::to_string(iterations),
          "--timeout",
          "10",
          "--json"};
      argv.insert(argv.end(), run.worker_args.begin(), run.worker_args.end());
      workers.push_back(start(argv));
    }
    std::vector<json> results;
    for (auto& w : workers) {
      finish(w, std::chrono::seconds(40));
      // The JSON is the last line that starts with '{': EAL, PMD and libxdp messages (on stderr,
      // which this output shares) come before it and, as the port closes at exit, after it.
      const std::string& text = w.output();
      json j;
      for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        if (text[at] == '{') j = json::parse(text.substr(at, end - at), nullptr, false);
        at = end + 1;
      }
      EXPECT_TRUE(j.is_object()) << text;
      EXPECT_TRUE(w.succeeded()) << w.describe_exit() << "\n" << text;
      results.push_back(j.is_object() ? j : json::object());
    }
    sw.signal(SIGTERM);
    finish(sw, std::chrono::seconds(10));
    EXPECT_TRUE(sw.succeeded()) << sw.describe_exit() << "\n" << sw.output();
    if (run.switch_on_xdp) sh(fmt::format("ip -n {}-agg addr add 10.77.0.254/24 dev eth0", name_));
    std::ifstream in(dir_ / "switch.json");
    switch_counters_ = json::parse(in, nullptr, false);
    return results;
  }

  // The vdev argument that loads netagg's XDP steering program.
  static std::string steering_argument() {
    return fmt::format(",xdp_prog={}", NETAGG_XDP_STEER_OBJECT);
  }

  // Packets the nftables rules dropped so far (both directions).
  std::uint64_t nft_drops() {
    const std::string out =
        sh(fmt::format("ip netns exec {}-agg nft -j list table inet netagg_loss", name_));
    std::uint64_t packets = 0;
    const json j = json::parse(out);
    for (const auto& item : j["nftables"])
      if (item.contains("rule"))
        for (const auto& e : item["rule"]["expr"])
          if (e.contains("counter")) packets += e["counter"]["packets"].get<std::uint64_t>();
    return packets;
  }

  std::string name_;
  fs::path dir_;
  std::string job_;
  bool up_ = false;
  json switch_counters_;
};

void expect_all_verified(const std::vector<json>& results, int count) {
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kWorkers));
  for (const auto& r : results) {
    EXPECT_EQ(r.value("verification", ""), "ok") << r.dump();
    EXPECT_EQ(r.value("count", 0), count);
    EXPECT_EQ(r.value("workers", 0), kWorkers);
    EXPECT_EQ(r.value("rejected", 1), 0) << r.dump();
  }
}

TEST_P(DpdkNetns, Int32AllReduceIsExact) {
  const auto results = allreduce("int32", 50003, 5);
  expect_all_verified(results, 50003);
  // Every contribution went through the switch: 196 chunks + the barrier, per worker.
  ASSERT_TRUE(switch_counters_.is_object());
  EXPECT_GE(switch_counters_.value("packets_in", 0ull), 3u * 197u) << switch_counters_.dump();
}

TEST_P(DpdkNetns, Fp32AllReduceIsWithinTheCodecBound) {
  expect_all_verified(allreduce("fp32", 40000, 6), 40000);
}

TEST_P(DpdkNetns, Int32AndFp32SurviveTenPercentLoss) {
  sh(fmt::format("bash {} loss {} 10", kScript, name_));
  auto results = allreduce("int32", 20000, 7);
  expect_all_verified(results, 20000);
  std::uint64_t retransmissions = 0;
  for (const auto& r : results) retransmissions += r.value("retransmissions", 0ull);
  const std::uint64_t dropped = nft_drops();
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(retransmissions, 0u);
  results = allreduce("fp32", 20000, 8);
  expect_all_verified(results, 20000);
  EXPECT_GT(nft_drops(), dropped);
}

// Every mbuf of the port's pool carries packets out and in, twice over: a pool the driver cannot
// use whole (net_af_xdp registers it as its umem) stalls once the transport reaches the mbufs it
// cannot use.
TEST_P(DpdkNetns, EveryMbufOfThePoolCarriesPackets) {
  constexpr int kMbufs = 4095, kCount = 256 * 200, kIterations = 45;  // 9 000 packets each way
  static_assert(kCount / kElementsPerPacket * kIterations > 2 * kMbufs);
  RunShape run;
  run.iterations = kIterations;
  run.mbufs = kMbufs;
  const auto results = allreduce("int32", kCount, 9, run);
  expect_all_verified(results, kCount);
  for (const auto& r : results)
    EXPECT_GE(r.value("packets_sent", 0ull),
              static_cast<std::uint64_t>(kCount / 256 * kIterations));
}

// netagg-switchd on an XDP socket of its own (--dpdk): it answers the workers' ARP, learns their
// MACs and aggregates; 1 % loss injected in the workers' transports both ways.
TEST_P(DpdkNetns, TheSwitchOnAnXdpSocketAggregatesWithLoss) {
  if (std::string why; !af_xdp_available(why)) GTEST_SKIP() << "the switch's port: " << why;
  RunShape run;
  run.iterations = 3;
  run.switch_on_xdp = true;
  run.worker_args = {"--loss", "0.01"};
  auto results = allreduce("int32", 50003, 11, run);
  expect_all_verified(results, 50003);
  std::uint64_t retransmissions = 0;
  for (const auto& r : results) retransmissions += r.value("retransmissions", 0ull);
  EXPECT_GT(retransmissions, 0u);
  ASSERT_TRUE(switch_counters_.is_object());
  EXPECT_GE(switch_counters_.value("packets_in", 0ull), 3u * 3u * 196u) << switch_counters_.dump();
  expect_all_verified(allreduce("fp32", 40000, 12, run), 40000);
}

// With netagg's XDP steering program the XDP socket gets only netagg's frames and ARP for the
// worker's address: the kernel keeps the rest of the interface, here an address of its own on
// dp0 (10.77.0.100 + rank), which answers a TCP connection attempt while a worker holds the port.
// (With the driver's default program every frame goes to the socket and the attempt times out.)
TEST_P(DpdkNetns, WithTheSteeringProgramTheKernelKeepsTheRestOfTheInterface) {
  if (GetParam() != "af_xdp") GTEST_SKIP() << "the steering program is an XDP socket's";
  if (std::string(NETAGG_XDP_STEER_OBJECT).empty() || !fs::exists(NETAGG_XDP_STEER_OBJECT))
    GTEST_SKIP() << "the XDP steering program is not built (needs clang, libxdp and libbpf)";
  for (int r = 0; r < kWorkers; ++r)
    sh(fmt::format("ip -n {}-w{} addr add 10.77.0.{}/24 dev dp0", name_, r, 100 + r));
  RunShape run;
  run.steering = true;
  expect_all_verified(allreduce("int32", 50003, 13, run), 50003);
  run.switch_on_xdp = true;  // the switch's port steered too
  expect_all_verified(allreduce("int32", 50003, 14, run), 50003);

  // One worker alone holds its port (it waits for the aggregator's ARP reply, none comes: no
  // switch runs now) while the aggregator's namespace connects to the kernel's address.
  ChildProcess worker = start({"ip",
                               "netns",
                               "exec",
                               name_ + "-w0",
                               "env",
                               "NETAGG_DPDK_VDEVS=net_af_xdp0,iface=dp0" + steering_argument(),
                               "NETAGG_DPDK_NO_HUGE=1",
                               "NETAGG_DPDK_NO_PCI=1",
                               "NETAGG_DPDK_ARP_TIMEOUT_MS=30000",
                               kTool,
                               "--rank",
                               "0",
                               "--job",
                               job_,
                               "--transport",
                               "dpdk",
                               "--epoch",
                               "1",
                               "--count",
                               "1000",
                               "--json"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string link;
  while (link.find("netagg_steer") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    link = sh(fmt::format("ip -n {}-w0 link show dp0", name_));
    if (link.find("netagg_steer") == std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_THAT(link, ::testing::HasSubstr("netagg_steer")) << worker.output();
  ChildProcess connect = start({"ip", "netns", "exec", name_ + "-agg", "timeout", "10", "bash",
                                "-c", "echo > /dev/tcp/10.77.0.100/9"});
  finish(connect, std::chrono::seconds(20));
  EXPECT_THAT(connect.output(), ::testing::HasSubstr("Connection refused"));
  worker.signal(SIGKILL);
  finish(worker, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(Drivers, DpdkNetns, ::testing::Values("af_packet", "af_xdp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace netagg

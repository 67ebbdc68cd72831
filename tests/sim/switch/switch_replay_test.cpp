// SPDX-License-Identifier: Apache-2.0
// netagg-replay as a process: against the model (every vector passes; a wrong vector fails with
// a message; usage errors exit 2), and, as root, over real interfaces: netagg-frame-switchd on
// one end of veth pairs in a network namespace, netagg-replay on the other ends in another,
// every vector through AF_PACKET both ways.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon.hpp"
#include "switch_vectors.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using testing::DaemonProcess;
using ::testing::HasSubstr;

constexpr auto kGuard = std::chrono::seconds(120);  // the veth replay of every vector

const fs::path kReplay = fs::path(NETAGG_BINARY_DIR) / "sim" / "switch" / "netagg-replay";
const fs::path kFrameSwitch =
    fs::path(NETAGG_BINARY_DIR) / "sim" / "switch" / "netagg-frame-switchd";
const fs::path kVectors = fs::path(NETAGG_VECTORS_DIR) / "switch";

struct ToolRun {
  int status;
  std::string out, err;
};

ToolRun run(const std::vector<std::string>& argv) {
  const fs::path dir = testing::make_temp_dir("switch_replay_test");
  DaemonProcess p(fs::path(argv[0]).filename().string(), argv, dir, kGuard);
  ToolRun r;
  r.status = p.wait_exit();
  r.out = p.stdout_text();
  r.err = p.stderr_text();
  fs::remove_all(dir);
  return r;
}

TEST(ReplayTool, EveryVectorPassesOnTheModel) {
  const auto vectors = sim::load_switch_vectors(kVectors);
  const ToolRun r = run({kReplay.string(), "--vectors", kVectors.string(), "--model", "--verbose"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(fmt::format("{0} of {0} vectors passed (model)", vectors.size())));
  for (const auto& v : vectors) EXPECT_THAT(r.out, HasSubstr("PASS " + v.name + " ("));
}

TEST(ReplayTool, AWrongVectorFailsWithWhereAndWhy) {
  const fs::path dir = testing::make_temp_dir("switch_replay_test");
  std::ifstream in(kVectors / "basic_reduction.vec");
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  // The sum in the result to rank 2 (the last output line): 0x1bc (444) becomes 0x1bd.
  const auto at = s.rfind("000001bc");
  ASSERT_NE(at, std::string::npos);
  s.replace(at, 8, "000001bd");
  std::ofstream(dir / "basic_reduction.vec") << s;
  const ToolRun r =
      run({kReplay.string(), "--vectors", (dir / "basic_reduction.vec").string(), "--model"});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("FAIL basic_reduction"));
  EXPECT_THAT(r.out, HasSubstr("step 3 (line"));
  EXPECT_THAT(r.out, HasSubstr("expected frame out of port 3 did not come"));
  EXPECT_THAT(r.out, HasSubstr("first difference at byte 79 (expected bd, got bc)"));
  EXPECT_THAT(r.out, HasSubstr("0 of 1 vectors passed"));
  fs::remove_all(dir);
}

TEST(ReplayTool, UsageErrorsExit2WithAMessage) {
  ToolRun r = run({kReplay.string(), "--vectors", kVectors.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("give --model or --iface PORT=IFNAME"));
  r = run({kReplay.string(), "--vectors", kVectors.string(), "--iface", "veth1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--iface 'veth1': expected PORT=IFNAME"));
  r = run({kReplay.string(), "--vectors", kVectors.string(), "--iface", "1=netagg-nonesuch"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("netagg-nonesuch"));
  r = run({kReplay.string(), "--vectors", "/nonexistent/x.vec", "--model"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/x.vec: cannot open"));
}

// ---- the control plane's lines (netagg-ctl p4 bmv2) configure the model --------------------

const fs::path kCtl = fs::path(NETAGG_BINARY_DIR) / "driver" / "tools" / "netagg-ctl";

// The model configured not by the vector's own bmv2 lines but by what netagg-ctl prints for the
// vector's jobs: the replay then checks the control plane's output frame by frame.
class CtlModelTarget : public sim::ModelTarget {
 public:
  explicit CtlModelTarget(fs::path dir) : dir_(std::move(dir)) {}
  void start(const sim::SwitchVector& v) override {
    const fs::path jobs = dir_ / (v.name + ".json");
    std::ofstream(jobs) << "{\"jobs\": [" << fmt::format("{}", fmt::join(v.jobs_json, ", "))
                        << "]}";
    const auto mac = v.bmv2.substr(0, v.bmv2.find('\n'));  // the identity line names the MAC
    const auto words = split(mac);
    const ToolRun r = run({kCtl.string(), "p4", "bmv2", "--job", jobs.string(), "--switch-mac",
                           words.at(words.size() - 2)});
    if (r.status != 0) throw std::runtime_error("netagg-ctl failed: " + r.err);
    sim::SwitchVector configured = v;
    configured.bmv2 = r.out;
    lines_ = r.out;
    ModelTarget::start(configured);
  }
  const std::string& lines() const { return lines_; }

 private:
  static std::vector<std::string> split(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  }
  fs::path dir_;
  std::string lines_;
};

TEST(ControlPlaneLines, NetaggCtlOutputPassesEveryVector) {
  if (!fs::exists(kCtl)) GTEST_SKIP() << kCtl << " is not built";
  const fs::path dir = testing::make_temp_dir("switch_replay_test");
  for (const auto& v : sim::load_switch_vectors(kVectors)) {
    CtlModelTarget target(dir);
    const auto r = sim::replay(v, target);
    for (const auto& f : r.failures)
      ADD_FAILURE() << v.name << " configured by netagg-ctl:\n" << target.lines() << f;
  }
  fs::remove_all(dir);
}

// ---- over veths ---------------------------------------------------------------------------

std::string ip_tool() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
    if (fs::exists(p)) return p;
  return "";
}

int shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str());
}

// Two namespaces joined by one veth pair per switch port: "s<PORT>" on the switch's side,
// "h<PORT>" on the hosts' side. IPv6 is off so that the kernel's own chatter stays away.
class VethBench {
 public:
  VethBench(const std::string& ip, const std::set<std::uint16_t>& ports) : ip_(ip) {
    const auto id = getpid();
    sw_ = fmt::format("netagg-sw-{}", id);
    host_ = fmt::format("netagg-host-{}", id);
    ok_ = shell(fmt::format("{} netns add {}", ip, sw_)) == 0 &&
          shell(fmt::format("{} netns add {}", ip, host_)) == 0;
    for (const char* ns : {sw_.c_str(), host_.c_str()})
      for (const char* scope : {"all", "default"})
        shell(fmt::format("{} netns exec {} sysctl -w net.ipv6.conf.{}.disable_ipv6=1", ip, ns,
                          scope));
    for (const auto port : ports) {
      if (!ok_) break;
      ok_ = shell(fmt::format("{} link add s{} netns {} type veth peer name h{} netns {}", ip, port,
                              sw_, port, host_)) == 0 &&
            shell(fmt::format("{} -n {} link set s{} up", ip, sw_, port)) == 0 &&
            shell(fmt::format("{} -n {} link set h{} up", ip, host_, port)) == 0;
      if (ok_) ports_.push_back(port);
    }
  }
  ~VethBench() {
    shell(fmt::format("{} netns del {}", ip_, sw_));
    shell(fmt::format("{} netns del {}", ip_, host_));
  }
  bool ok() const { return ok_; }

  std::vector<std::string> in_switch(std::vector<std::string> argv) const {
    return in(sw_, "s", std::move(argv));
  }
  std::vector<std::string> in_hosts(std::vector<std::string> argv) const {
    return in(host_, "h", std::move(argv));
  }

 private:
  std::vector<std::string> in(const std::string& ns, const std::string& prefix,
                              std::vector<std::string> argv) const {
    std::vector<std::string> out = {ip_, "netns", "exec", ns};
    out.insert(out.end(), argv.begin(), argv.end());
    for (const auto port : ports_) {
      out.push_back("--iface");
      out.push_back(fmt::format("{}={}{}", port, prefix, port));
    }
    return out;
  }

  std::string ip_, sw_, host_;
  std::vector<std::uint16_t> ports_;
  bool ok_ = false;
};

TEST(ReplayOverInterfaces, EveryVectorThroughAFrameSwitchOnVeths) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, veths, AF_PACKET)";
  const std::string ip = ip_tool();
  if (ip.empty()) GTEST_SKIP() << "needs iproute2's ip";
  const auto vectors = sim::load_switch_vectors(kVectors);
  std::set<std::uint16_t> ports;
  for (const auto& v : vectors)
    for (const auto p : v.ports()) ports.insert(p);
  VethBench bench(ip, ports);
  if (!bench.ok()) GTEST_SKIP() << "cannot create network namespaces and veths here";

  const fs::path dir = testing::make_temp_dir("switch_replay_test");
  for (const auto& v : vectors) {
    SCOPED_TRACE(v.name);
    // A fresh switch per vector, configured by the vector's simple_switch_CLI lines.
    const fs::path lines = dir / (v.name + ".bmv2");
    std::ofstream(lines) << v.bmv2;
    DaemonProcess sw("netagg-frame-switchd",
                     bench.in_switch({kFrameSwitch.string(), "--bmv2", lines.string()}), dir,
                     kGuard);
    sw.wait_line("netagg-frame-switchd: listening on ");
    const ToolRun r = run(bench.in_hosts({kReplay.string(), "--vectors", v.file.string(),
                                          "--timeout-ms", "5000", "--quiet-ms", "30"}));
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("1 of 1 vectors passed (interfaces)"));
    EXPECT_EQ(sw.stop(SIGTERM), 0) << sw.stderr_text();
    // The switch saw exactly the vector's frames (nothing of the hosts' own).
    const auto counters = sw.last_counters();
    EXPECT_EQ(counters.at("frames_in"), v.steps.size());
    std::size_t out = 0;
    for (const auto& s : v.steps) out += s.out.size();
    EXPECT_EQ(counters.at("frames_out"), out);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace netagg

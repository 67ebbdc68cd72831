// SPDX-License-Identifier: Apache-2.0
// netagg-ctl as a process: exit status, what goes to stdout, stderr and -o FILE.
#include <signal.h>
#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

const fs::path kCtl = fs::path(NETAGG_BINARY_DIR) / "driver" / "tools" / "netagg-ctl";
const fs::path kDriverTests = fs::path(NETAGG_SOURCE_DIR) / "tests" / "driver";
const fs::path kJobs = kDriverTests / "jobs";
const fs::path kGolden = kDriverTests / "golden";
constexpr auto kGuard = std::chrono::seconds(30);  // against a hung tool; never a measure

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CtlRun {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out, err;
};

class NetaggCtl : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "netagg_ctl_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  CtlRun run(std::vector<std::string> args) {
    args.insert(args.begin(), kCtl.string());
    sim::ChildOptions options;
    options.stderr_to = sim::ChildStderr::kFile;
    options.stderr_file = dir_ / "stderr";
    sim::ChildProcess ctl(args, options);
    if (!ctl.wait_exit(sim::ChildProcess::Clock::now() + kGuard)) {
      ADD_FAILURE() << "netagg-ctl still running after " << kGuard.count() << " s; killed";
      ctl.signal(SIGKILL);
      ctl.wait_exit();
    }
    return {ctl.exit_code().value_or(-1), ctl.output(), ctl.stderr_text()};
  }

  std::string job(const char* name) { return (kJobs / name).string(); }
  fs::path dir_;
};

TEST_F(NetaggCtl, Bmv2PrintsTheGoldenCommands) {
  const CtlRun r = run({"p4", "bmv2", "--job", job("two_jobs.json")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, read_text(kGolden / "two_jobs.bmv2.txt"));
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(NetaggCtl, TofinoWithTwoFilesAndIdentityPrintsTheGoldenScript) {
  const CtlRun r =
      run({"p4", "tofino", "--job", job("upper_slots.json"), "--job", job("middle_slots.json"),
           "--switch-mac", "02:aa:bb:cc:dd:ee", "--switch-ip", "192.168.7.254"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, read_text(kGolden / "two_files.tofino.py"));
}

TEST_F(NetaggCtl, OutputFile) {
  const fs::path file = dir_ / "cmds.txt";
  const CtlRun r = run({"p4", "bmv2", "--job", job("one_job.json"), "-o", file.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_EQ(read_text(file), read_text(kGolden / "one_job.bmv2.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "cmds.txt.tmp"));
}

TEST_F(NetaggCtl, BadJobExits2NamingTheFieldAndLeavesTheOutputFileAlone) {
  // The job of one_job.json without worker 1's switch_port.
  const fs::path bad = dir_ / "no_port.json";
  std::ofstream(bad) << R"({"job_id": 7, "slots": {"base": 0, "count": 64},
    "elements_per_packet": 256, "aggregator": "10.0.0.254:20033", "workers": [
    {"rank": 0, "address": "10.0.0.1:31000", "mac": "02:00:00:00:00:01", "switch_port": 4},
    {"rank": 1, "address": "10.0.0.2:31001", "mac": "02:00:00:00:00:02"}]})";
  const fs::path file = dir_ / "cmds.txt";
  std::ofstream(file) << "previous content\n";
  const CtlRun r = run({"p4", "bmv2", "--job", bad.string(), "-o", file.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(StartsWith("netagg-ctl: "), HasSubstr("no_port.json: job 7"),
                           HasSubstr("rank 1"), HasSubstr("switch_port: missing")));
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_EQ(read_text(file), "previous content\n");
}

TEST_F(NetaggCtl, ParserErrorsExit2) {
  const fs::path bad = dir_ / "bad_mac.json";
  std::ofstream(bad) << R"({"job_id": 1, "slots": {"base": 0, "count": 4},
    "elements_per_packet": 4, "workers": [{"rank": 0, "address": "1.2.3.4:5", "mac": "zz"}]})";
  const CtlRun r = run({"p4", "tofino", "--job", bad.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("workers[0].mac: 'zz' is not a MAC"));
  const CtlRun missing = run({"p4", "tofino", "--job", (dir_ / "nope.json").string()});
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.err, HasSubstr("nope.json: cannot open"));
}

TEST_F(NetaggCtl, JobsAcrossFilesMustNotClash) {
  // one_job.json (job 7, slots [0, 64)) and two_jobs.json (slots [0, 48)) overlap.
  const CtlRun r = run({"p4", "bmv2", "--job", job("one_job.json"), "--job", job("two_jobs.json")});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("jobs[0]: job 1"), HasSubstr("slots: [0, 32) overlap")));
  const CtlRun twice =
      run({"p4", "bmv2", "--job", job("one_job.json"), "--job", job("one_job.json")});
  EXPECT_EQ(twice.status, 2);
  EXPECT_THAT(twice.err, HasSubstr("job_id: 7 is also the id"));
}

TEST_F(NetaggCtl, SwitchIpNeededWithoutAggregator) {
  const CtlRun r = run({"p4", "bmv2", "--job", job("middle_slots.json")});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("job 0"), HasSubstr("aggregator: missing")));
  const CtlRun ok =
      run({"p4", "bmv2", "--job", job("middle_slots.json"), "--switch-ip", "10.9.8.7"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out, StartsWith("table_set_default NetaggIngress.switch_identity "
                                 "set_switch_identity 02:6e:61:67:73:77 10.9.8.7\n"));
}

// Workers on loopback behind a switch on the network: refused, the worker's address named.
TEST_F(NetaggCtl, LoopbackWorkersBehindASwitchOnTheNetworkExit2) {
  const fs::path local = dir_ / "local.json";
  std::ofstream(local) << R"({"job_id": 3, "slots": {"base": 0, "count": 8},
    "elements_per_packet": 16, "aggregator": "10.0.1.254:20033", "workers": [
    {"rank": 0, "address": "127.0.0.1:31000", "mac": "02:00:00:00:00:01", "switch_port": 4},
    {"rank": 1, "address": "127.0.0.1:31001", "mac": "02:00:00:00:00:02", "switch_port": 5}]})";
  const CtlRun r = run({"p4", "bmv2", "--job", local.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(StartsWith("netagg-ctl: "),
                           HasSubstr("local.json: job 3: workers (rank 0).address: 127.0.0.1 is a "
                                     "loopback address, but the switch's IP (--switch-ip, else "
                                     "the jobs' \"aggregator\") is 10.0.1.254"),
                           HasSubstr("cabled to switch_port 4")));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST_F(NetaggCtl, LimitsDependOnTheTarget) {
  // 256 elements per packet: 8 passes of 32 lanes on BMv2, beyond Tofino's 2.
  const fs::path file = dir_ / "wide.json";
  std::ofstream(file) << R"({"job_id": 4, "slots": {"base": 0, "count": 8},
    "elements_per_packet": 256, "aggregator": "10.0.0.254:20033", "workers": [
    {"rank": 0, "address": "10.0.0.1:31000", "mac": "02:00:00:00:00:01", "switch_port": 4}]})";
  EXPECT_EQ(run({"p4", "bmv2", "--job", file.string()}).status, 0);
  const CtlRun r = run({"p4", "tofino", "--job", file.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("job 4: elements_per_packet: 256 is out of range [1, 64]")));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST_F(NetaggCtl, BadOptionsExit2) {
  EXPECT_EQ(run({"p4", "bmv2"}).status, 2) << "--job is required";
  EXPECT_EQ(run({"p4", "sdn", "--job", job("one_job.json")}).status, 2);
  EXPECT_EQ(run({"p4"}).status, 2);
  EXPECT_EQ(run({}).status, 2);
  EXPECT_EQ(run({"frobnicate"}).status, 2);
  const CtlRun mac = run({"p4", "bmv2", "--job", job("one_job.json"), "--switch-mac", "02:00"});
  EXPECT_EQ(mac.status, 2);
  EXPECT_THAT(mac.err, HasSubstr("--switch-mac: '02:00' is not a MAC"));
  const CtlRun ip = run({"p4", "bmv2", "--job", job("one_job.json"), "--switch-ip", "10.0.0.300"});
  EXPECT_EQ(ip.status, 2);
  EXPECT_THAT(ip.err, HasSubstr("--switch-ip: '10.0.0.300' is not an IPv4 address"));
  // one_job.json's aggregator is 10.0.0.254: another --switch-ip contradicts it.
  const CtlRun clash = run({"p4", "bmv2", "--job", job("one_job.json"), "--switch-ip", "10.0.0.1"});
  EXPECT_EQ(clash.status, 2);
  EXPECT_THAT(clash.err, AllOf(HasSubstr("job 7: aggregator: 10.0.0.254 differs from "
                                         "--switch-ip 10.0.0.1")));
}

TEST_F(NetaggCtl, TreePartByNameOrAddressWithPeers) {
  // golden/tree_jobs.json: leaf2 is in both trees; the spines are given by --peer.
  const std::string tree = (kGolden / "tree_jobs.json").string();
  const std::vector<std::string> peers = {"--peer", "10.0.0.1=02:00:00:00:00:01,30", "--peer",
                                          "10.0.0.2=02:00:00:00:00:02,31"};
  std::vector<std::string> by_name = {"p4", "bmv2", "--job", tree, "--as", "leaf2"};
  by_name.insert(by_name.end(), peers.begin(), peers.end());
  const CtlRun r = run(by_name);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, read_text(kGolden / "tree_leaf2.bmv2.txt"));
  std::vector<std::string> by_address = {"p4", "bmv2", "--job", tree, "--switch-ip", "10.0.2.254"};
  by_address.insert(by_address.end(), peers.begin(), peers.end());
  EXPECT_EQ(run(by_address).out, r.out);
  // Without --peer the parent's MAC is missing; without --as or --switch-ip the part is unnamed.
  const CtlRun no_peer = run({"p4", "bmv2", "--job", tree, "--as", "leaf2"});
  EXPECT_EQ(no_peer.status, 2);
  EXPECT_THAT(no_peer.err,
              AllOf(HasSubstr("tree 0 (leaf2): job 7: parent.mac: missing"), HasSubstr("--peer")));
  const CtlRun unnamed = run({"p4", "bmv2", "--job", tree});
  EXPECT_EQ(unnamed.status, 2);
  EXPECT_THAT(unnamed.err, HasSubstr("--as NAME"));
  const CtlRun bad_peer = run({"p4", "bmv2", "--job", tree, "--as", "leaf2", "--peer", "10.0.0.1"});
  EXPECT_EQ(bad_peer.status, 2);
  EXPECT_THAT(bad_peer.err, HasSubstr("--peer: '10.0.0.1' is not IP=MAC,PORT"));
  // A child job written by hand: the parent's MAC and port in the job.
  const CtlRun child = run({"p4", "bmv2", "--job", (kGolden / "child_job.json").string()});
  EXPECT_EQ(child.status, 0) << child.err;
  EXPECT_EQ(child.out, read_text(kGolden / "child_job.bmv2.txt"));
}

TEST_F(NetaggCtl, HelpExits0) {
  const CtlRun r = run({"p4", "bmv2", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, AllOf(HasSubstr("--job"), HasSubstr("--switch-mac"), HasSubstr("--switch-ip"),
                           HasSubstr("--as"), HasSubstr("--peer")));
}

}  // namespace
}  // namespace netagg

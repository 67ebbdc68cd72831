// SPDX-License-Identifier: Apache-2.0
// netagg-fpgad --model vp: the card's SystemC virtual platform behind the daemon. netagg-ctl
// (`fpga --sim`, the CSR control channel) programs the jobs over TLM into an empty job table,
// netagg-allreduce processes (the host's engine over kernel UDP) all-reduce through it, each
// checking every element against a locally computed sum; the device's counters read back through
// netagg-ctl match the datagrams the workers sent and the daemon's own counts. Also netagg-local
// --fpga-model vp, and the options refused. The time guards bound hung processes; nothing
// measures speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "daemon.hpp"
#include "netagg/job.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = netagg::sim;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr auto kGuard = std::chrono::seconds(120);  // against a hung process; never a measure
const fs::path kDaemon = NETAGG_VP_TEST_FPGAD;
const fs::path kCtl = NETAGG_VP_TEST_CTL;
const fs::path kWorker = NETAGG_VP_TEST_WORKER;
const fs::path kLocal = NETAGG_VP_TEST_LOCAL;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Exit {
  int code = -1;
  std::string out, err;
};

// Runs `argv` to its end (killed after the guard time, which fails the test).
Exit run(const fs::path& dir, const std::vector<std::string>& argv, const std::string& tag) {
  sim::ChildOptions options;
  options.stderr_to = sim::ChildStderr::kFile;
  options.stderr_file = dir / (tag + ".err");
  sim::ChildProcess p(argv, options);
  if (!p.wait_exit(sim::ChildProcess::Clock::now() + kGuard)) {
    ADD_FAILURE() << tag << " still running after " << kGuard.count() << " s; killed";
    p.signal(SIGKILL);
    p.wait_exit();
  }
  return {p.exit_code().value_or(-1), p.output(), p.stderr_text()};
}

class VpFpgadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const fs::path& p : {kDaemon, kCtl, kWorker, kLocal})
      ASSERT_TRUE(fs::exists(p)) << p << " is not built";
    dir_ = netagg::testing::make_temp_dir("vp_fpgad_test");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  Exit ctl(const std::string& control, std::vector<std::string> args) {
    args.insert(args.begin(), {kCtl.string(), "fpga", "--sim", control});
    return run(dir_, args, "ctl");
  }

  // The workers of `job` (one process each, all at once) all-reduce `count` elements of `dtype`;
  // their JSON reports, each checked for exit 0 and a verified result.
  std::vector<json> all_reduce(const fs::path& job_file, unsigned workers, const std::string& dtype,
                               std::size_t count, unsigned epoch) {
    std::vector<std::unique_ptr<sim::ChildProcess>> procs;
    for (unsigned r = 0; r < workers; ++r) {
      sim::ChildOptions options;
      options.stderr_to = sim::ChildStderr::kFile;
      options.stderr_file = dir_ / fmt::format("worker{}.err", r);
      procs.push_back(std::make_unique<sim::ChildProcess>(
          std::vector<std::string>{kWorker.string(), "--rank", std::to_string(r), "--job",
                                   job_file.string(), "--target", "fpga-sim", "--epoch",
                                   std::to_string(epoch), "--dtype", dtype, "--count",
                                   std::to_string(count), "--json"},
          options));
    }
    std::vector<json> reports;
    for (unsigned r = 0; r < workers; ++r) {
      sim::ChildProcess& p = *procs[r];
      if (!p.wait_exit(sim::ChildProcess::Clock::now() + kGuard)) {
        ADD_FAILURE() << "worker " << r << " still running after " << kGuard.count() << " s";
        p.signal(SIGKILL);
        p.wait_exit();
      }
      EXPECT_EQ(p.exit_code(), 0) << "rank " << r << ": " << p.output() << p.stderr_text();
      json report;
      try {
        report = json::parse(p.output());
      } catch (const json::exception& e) {
        ADD_FAILURE() << "rank " << r << " printed no JSON (" << e.what() << "): " << p.output();
      }
      EXPECT_EQ(report.value("verification", ""), "ok") << report.dump();
      reports.push_back(report);
    }
    return reports;
  }

  fs::path dir_;
};

// Datagrams a worker sent: first transmissions, retransmissions, resends for others.
std::uint64_t datagrams_sent(const json& report) {
  return report.value("packets_sent", 0ull) + report.value("retransmissions", 0ull) +
         report.value("recovery_resends", 0ull);
}

TEST_F(VpFpgadTest, CtlProgramsJobsOverTlmAndWorkersAllReduceThroughThePlatform) {
  netagg::testing::DaemonProcess daemon(
      "netagg-fpgad",
      {kDaemon.string(), "--model", "vp", "--vp-clock-mhz", "300", "--listen", "127.0.0.1:0",
       "--control", "127.0.0.1:0", "--counters-json", (dir_ / "counters.json").string()},
      dir_, kGuard);
  const netagg::Endpoint data = daemon.wait_listening();
  const std::string control = daemon.wait_line("netagg-fpgad: control on ");
  ASSERT_FALSE(control.empty());
  EXPECT_THAT(daemon.stderr_text(),
              HasSubstr("vp model, 4 ports, 64 slots, 8 jobs, 1024 elements"));

  Exit r = ctl(control, {"load"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("64 slots"));

  // Job 1: four workers, fp32, 256 elements a packet, slots [0, 16). Job 2: two workers,
  // int32, 1024 elements a packet (a 4 KiB payload: the platform's slots hold it), slots
  // [16, 24).
  const std::vector<std::uint16_t> ports = sim::free_loopback_ports(6);
  netagg::JobSpec fp = netagg::make_local_job(1, 4, ports[0], 0, 16, 256, data);
  netagg::JobSpec in = netagg::make_local_job(2, 2, ports[4], 16, 8, 1024, data);
  for (unsigned i = 0; i < 4; ++i) fp.workers[i].address.port = ports[i];
  for (unsigned i = 0; i < 2; ++i) in.workers[i].address.port = ports[4 + i];
  const fs::path fp_file = dir_ / "fp32.json", in_file = dir_ / "int32.json";
  std::ofstream(fp_file) << netagg::to_json(fp);
  std::ofstream(in_file) << netagg::to_json(in);
  r = ctl(control, {"job", "add", fp_file.string(), "--entry", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job 1 -> entry 0: 4 workers, slots [0, 16)"));
  r = ctl(control, {"job", "add", in_file.string(), "--entry", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job 2 -> entry 1: 2 workers, slots [16, 24)"));

  constexpr std::size_t kFloats = 5000, kInts = 6000;
  const std::vector<json> fp_reports = all_reduce(fp_file, 4, "fp32", kFloats, 21);
  const std::vector<json> in_reports = all_reduce(in_file, 2, "int32", kInts, 22);
  if (HasFailure()) return;

  // What the device counted, read through netagg-ctl over the control channel (the daemon
  // serves the datagrams queued before a control request first).
  r = ctl(control, {"stats", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json stats = json::parse(r.out);
  std::uint64_t sent = 0;
  for (const json& w : fp_reports) sent += datagrams_sent(w);
  for (const json& w : in_reports) sent += datagrams_sent(w);
  // Every worker sends each of its job's packets once at first: the barrier's and the tensor's
  // (fp32 summed exactly, fp32-exact: the chunks' exponents a window of 16 ahead, 16 more).
  const std::uint64_t packets =
      fp_reports[0].value("packets_sent", 0ull) + in_reports[0].value("packets_sent", 0ull);
  constexpr std::size_t kChunks = (kFloats + 255) / 256;
  EXPECT_EQ(fp_reports[0].value("float_wire", ""), "fp32-exact");
  EXPECT_EQ(packets,
            (1 + kChunks + std::min<std::size_t>(kChunks, 16)) + (1 + (kInts + 1023) / 1024));
  EXPECT_EQ(stats.value("frames_in", 0ull), sent) << stats.dump();
  EXPECT_EQ(stats.value("completions", 0ull), packets) << stats.dump();
  EXPECT_GT(stats.value("aggregated", 0ull), 0u) << stats.dump();
  for (const auto& [name, value] : stats.items()) {
    if (name.starts_with("malformed_") || name == "dropped_unknown_job" ||
        name == "dropped_foreign_source" || name == "dropped_rank_out_of_range") {
      EXPECT_EQ(value, 0) << name;
    }
  }

  // The daemon's own counts at exit: each datagram became a frame into the platform, each frame
  // the platform's MACs sent became a datagram, and none broke the AXI4-Stream rules.
  EXPECT_EQ(daemon.stop(SIGTERM), 0) << daemon.stderr_text();
  const json at_exit = json::parse(slurp(dir_ / "counters.json"));
  EXPECT_EQ(at_exit.value("datagrams_in", 0ull), sent) << at_exit.dump();
  EXPECT_EQ(at_exit.value("frames_in", 0ull), sent);
  EXPECT_EQ(at_exit.value("egress_frames", 0ull), stats.value("frames_out", 0ull));
  EXPECT_EQ(at_exit.value("datagrams_sent", 0ull), stats.value("frames_out", 0ull));
  EXPECT_EQ(at_exit.value("egress_undecodable", 1ull), 0u);
  EXPECT_EQ(at_exit.value("egress_protocol_errors", 1ull), 0u);
  EXPECT_EQ(at_exit.value("control_device_errors", 1ull), 0u);
  EXPECT_GT(at_exit.value("control_requests", 0ull), 50u) << "the jobs went over TLM";
  EXPECT_GT(at_exit.value("model_cycles", 0ull), 0u);
}

// netagg-local starts netagg-fpgad --model vp with a job file and its workers.
TEST_F(VpFpgadTest, NetaggLocalRunsWorkersOnThePlatform) {
  const Exit r = run(dir_,
                     {kLocal.string(), "--workers", "3", "--target", "fpga-sim", "--fpga-model",
                      "vp", "--dtype", "int32", "--count", "4000", "--json"},
                     "local");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary.value("verification", ""), "ok") << r.out;
  const json& c = summary.at("fpga_counters");
  EXPECT_EQ(c.value("completions", 0ull), 1 + (4000 + 255) / 256) << c.dump();
  EXPECT_EQ(c.value("frames_in", 0ull), c.value("datagrams_in", 1ull)) << c.dump();
  EXPECT_EQ(c.value("frames_out", 0ull), c.value("egress_frames", 1ull)) << c.dump();
}

TEST_F(VpFpgadTest, OptionsItDoesNotTakeExit2) {
  const fs::path job = dir_ / "job.json";
  std::ofstream(job) << netagg::to_json(
      netagg::make_local_job(1, 2, 40000, 0, 8, 256, netagg::Endpoint::parse("127.0.0.1:20033")));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--model", "rtl", "--vp-clock-mhz", "300"}, "--vp-clock-mhz: only with --model vp"},
      {{"--model", "vp", "--trace", (dir_ / "x.fst").string()}, "--trace"},
      {{"--model", "vp", "--vp-clock-mhz", "0"}, "--vp-clock-mhz"},
      {{"--model", "systemc"}, "--model"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kDaemon.string(), "--job", job.string(), "--listen",
                                     "127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const Exit r = run(dir_, argv, "fpgad");
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(c.args) << r.out << r.err;
    EXPECT_THAT(r.out + r.err, HasSubstr(c.message)) << ::testing::PrintToString(c.args);
  }
}

}  // namespace

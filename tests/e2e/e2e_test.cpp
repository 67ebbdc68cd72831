// SPDX-License-Identifier: Apache-2.0
// End to end over UDP on loopback: `netagg-local --workers 4` starts netagg-switchd (or
// netagg-fpgad) and four netagg-allreduce processes, which all-reduce through the daemon and
// verify their results. The tests read the launcher's --json summary; one runs a worker alone.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "daemon.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using netagg::sim::ChildProcess;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kLauncher = std::string(NETAGG_BINARY_DIR) + "/sim/launcher/netagg-local";
const std::string kWorker = std::string(NETAGG_BINARY_DIR) + "/host/tools/netagg-allreduce";

struct ToolRun {
  int exit_code = -1;  // -1: did not exit normally
  std::string out, err;
  json summary() const {
    auto j = json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON:\n" << out << "\nstderr:\n" << err;
    return j;
  }
};

// Runs `program` (the launcher unless said otherwise); if it is still running after `limit` it
// is killed and the test fails (the launcher promises not to hang, this makes a broken promise
// a failure instead of a stuck CI).
ToolRun run_tool(std::vector<std::string> args,
                 std::chrono::seconds limit = std::chrono::seconds(45),
                 const std::string& program = kLauncher) {
  static int runs = 0;
  args.insert(args.begin(), program);
  netagg::sim::ChildOptions options;
  options.stderr_to = netagg::sim::ChildStderr::kFile;
  options.stderr_file = fs::path(::testing::TempDir()) /
                        ("e2e-stderr-" + std::to_string(::getpid()) + "-" + std::to_string(runs++));
  ChildProcess p(args, options);
  if (!p.wait_exit(ChildProcess::Clock::now() + limit)) {
    ADD_FAILURE() << program << " still running after " << limit.count() << " s; killed";
    p.signal(SIGKILL);
    p.wait_exit();
  }
  ToolRun run;
  run.exit_code = p.exit_code().value_or(-1);
  run.out = p.output();
  run.err = p.stderr_text();
  fs::remove(options.stderr_file);
  return run;
}

std::vector<std::string> local4(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--workers", "4",         "--target", "switch-sim",
                                "--json",    "--timeout", "5"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// netagg-switchd from three threads, slots split between them, under loss: the sums are right,
// and each thread received datagrams (the workers' UDP GSO runs are steered whole by their first
// datagram, so some reach a thread that does not own their slot and are counted cross_thread).
TEST(EndToEnd, AThreadedSwitchdGetsTheSums) {
  const ToolRun run =
      run_tool(local4({"--switchd-threads", "3", "--dtype", "fp32", "--count", "200000", "--loss",
                       "0.02", "--seed", "5", "--window", "32"}));
  const json s = run.summary();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(s["verification"], "ok");
  const json& c = s["switch_counters"];
  for (int t = 0; t < 3; ++t)
    EXPECT_GT(c[fmt::format("datagrams_in_thread_{}", t)].get<std::uint64_t>(), 0u) << t;
  EXPECT_GT(c["completions"].get<std::uint64_t>(), 0u);
}

// A two-level tree of netagg-switchd processes (three leaves under a root, two workers each),
// with loss between the workers and the leaves: int32 exact, fp32 within the bound (the workers
// verify), every leaf's rounds answered by the root.
TEST(EndToEnd, ATwoLevelTreeOfDaemonsGetsTheSums) {
  for (const char* dtype : {"int32", "fp32"}) {
    const ToolRun run = run_tool(
        {"--workers", "6",      "--leaves", "3",        "--target", "switch-sim",   "--json",
         "--timeout", "5",      "--dtype",  dtype,      "--count",  "60000",        "--loss",
         "0.03",      "--seed", "8",        "--window", "32",       "--iterations", "2"});
    const json s = run.summary();
    ASSERT_EQ(run.exit_code, 0) << dtype << "\n" << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << dtype;
    EXPECT_GT(s["retransmissions"].get<std::uint64_t>(), 0u) << dtype;
    const json& tree = s["tree_counters"];
    ASSERT_TRUE(tree.contains("root")) << s.dump(2);
    EXPECT_GT(tree["root"]["completions"].get<std::uint64_t>(), 0u);
    for (const char* leaf : {"leaf0", "leaf1", "leaf2"}) {
      const json& c = tree[leaf];
      EXPECT_GT(c["sent_to_parent"].get<std::uint64_t>(), 0u) << leaf;
      EXPECT_EQ(c["results_from_parent"], c["sent_to_parent"]) << leaf;
      EXPECT_EQ(c["completions"], c["results_from_parent"]) << leaf;
    }
  }
}

// PANAMA's several trees per job through real daemons: three leaves in two trees, each tree with
// a root of its own; the chunks alternate between the trees.
TEST(EndToEnd, AJobOnTwoTreesOfDaemonsGetsTheSums) {
  const ToolRun run =
      run_tool({"--workers",    "6",      "--leaves",  "3",      "--trees", "2",        "--target",
                "switch-sim",   "--json", "--timeout", "5",      "--dtype", "fp32",     "--count",
                "60000",        "--loss", "0.03",      "--seed", "9",       "--window", "32",
                "--iterations", "2"});
  const json s = run.summary();
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(s["verification"], "ok");
  const json& tree = s["tree_counters"];
  const auto root0 = tree["root0"]["completions"].get<std::uint64_t>();
  const auto root1 = tree["root1"]["completions"].get<std::uint64_t>();
  EXPECT_GT(root0, 0u);
  EXPECT_GT(root1, 0u);
  // Equal weights: 59 chunks of 1024 elements, 30 on tree 0 and 29 on tree 1, each fewer than
  // the window, so block floating point takes two rounds a chunk (exponents, then values); and
  // the tool's one-element barrier before each all-reduce goes to tree 0.
  EXPECT_EQ(root0, 2u * (2 * 30 + 1));
  EXPECT_EQ(root1, 2u * (2 * 29));
  for (const char* leaf : {"leaf0", "leaf1", "leaf2"})
    EXPECT_EQ(tree[leaf]["completions"].get<std::uint64_t>(), root0 + root1) << leaf;
}

bool fpga_model_built(const std::string& model);  // (below)

// A two-level tree of netagg-fpgad processes: two leaves under a root, two workers each, with
// loss between the workers and the leaves; the workers verify the sums. fp32 on the wire (the
// FPGA aggregator adds floats: each leaf its workers', the root the leaves' sums) and int32, the
// HLS model for speed and a run through the RTL; and netagg-fpgad leaves under a netagg-switchd
// root (int32, and fp32 as block floating point, which both add as int32). Every round a leaf
// sent up was answered by the root.
TEST(EndToEnd, ATwoLevelTreeOfFpgaDaemonsGetsTheSums) {
  struct Case {
    std::string model, root, dtype, count, iterations;
  };
  const std::vector<Case> cases = {
      {"hls", "fpga-sim", "fp32", "30000", "2"},   {"hls", "fpga-sim", "int32", "30000", "1"},
      {"rtl", "fpga-sim", "fp32", "20000", "2"},   {"hls", "switch-sim", "int32", "30000", "1"},
      {"rtl", "switch-sim", "fp32", "20000", "1"},
  };
  for (const Case& c : cases) {
    const std::string what = c.model + " leaves, " + c.root + " root, " + c.dtype;
    if (!fpga_model_built(c.model)) {
      std::printf("netagg-fpgad has no %s model: %s skipped\n", c.model.c_str(), what.c_str());
      continue;
    }
    const ToolRun run = run_tool({"--workers",
                                  "4",
                                  "--leaves",
                                  "2",
                                  "--target",
                                  "fpga-sim",
                                  "--root-target",
                                  c.root,
                                  "--fpga-model",
                                  c.model,
                                  "--json",
                                  "--timeout",
                                  "20",
                                  "--dtype",
                                  c.dtype,
                                  "--count",
                                  c.count,
                                  "--loss",
                                  "0.03",
                                  "--seed",
                                  "8",
                                  "--iterations",
                                  c.iterations},
                                 std::chrono::seconds(120));
    const json s = run.summary();
    ASSERT_EQ(run.exit_code, 0) << what << "\n" << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << what;
    EXPECT_EQ(s["root_target"], c.root) << what;
    if (c.dtype == "fp32") {
      EXPECT_EQ(s["float_wire"], c.root != "fpga-sim" ? "int32-bfp" : "fp32-exact") << what;
    }
    EXPECT_GT(s["retransmissions"].get<std::uint64_t>(), 0u) << what;
    const json& tree = s["tree_counters"];
    ASSERT_TRUE(tree.contains("root")) << s.dump(2);
    const auto root = tree["root"]["completions"].get<std::uint64_t>();
    EXPECT_GT(root, 0u) << what;
    for (const char* leaf : {"leaf0", "leaf1"}) {
      const json& l = tree[leaf];
      EXPECT_GT(l["sent_to_parent"].get<std::uint64_t>(), 0u) << what << " " << leaf;
      EXPECT_EQ(l["results_from_parent"], l["sent_to_parent"]) << what << " " << leaf;
      EXPECT_EQ(l["completions"], l["results_from_parent"]) << what << " " << leaf;
      EXPECT_EQ(l["completions"].get<std::uint64_t>(), root) << what << " " << leaf;
    }
  }
}

// Exact fp32 through the FPGA's models: runs that change the arrival order (no loss, loss with
// other seeds, a two-level tree of aggregators instead of one, the RTL instead of the HLS model)
// end with the same bits on every rank, the exact reference's (each rank checks its result bit
// for bit), where fp32 adder trees give other bits under loss.
TEST(EndToEnd, ExactFp32IsTheSameBitsWhateverTheArrivalOrder) {
  if (!fpga_model_built("hls")) GTEST_SKIP() << "netagg-fpgad was built without the hls model";
  struct Case {
    std::string what;
    std::vector<std::string> args;
  };
  const std::vector<std::string> base = {
      "--workers", "4",    "--target", "fpga-sim", "--json", "--timeout", "20",
      "--dtype",   "fp32", "--count",  "20000",    "--seed", "6",         "--elements-per-packet",
      "128"};
  std::vector<Case> cases = {
      {"no loss", {"--fpga-model", "hls"}},
      {"5% loss, seed 1", {"--fpga-model", "hls", "--loss", "0.05", "--loss-seed", "1"}},
      {"5% loss, seed 2", {"--fpga-model", "hls", "--loss", "0.05", "--loss-seed", "2"}},
      {"a two-level tree, 3% loss",
       {"--fpga-model", "hls", "--leaves", "2", "--loss", "0.03", "--loss-seed", "3"}},
      {"staggered workers (rank r 30 r ms late)", {"--fpga-model", "hls", "--stagger-ms", "30"}},
  };
  if (fpga_model_built("rtl")) {  // the RTL: loss, staggered workers, a tree of RTL aggregators
    cases.push_back(
        {"the RTL, 5% loss", {"--fpga-model", "rtl", "--loss", "0.05", "--loss-seed", "4"}});
    cases.push_back({"the RTL, staggered workers", {"--fpga-model", "rtl", "--stagger-ms", "30"}});
    cases.push_back(
        {"a two-level tree of RTL aggregators, 3% loss",
         {"--fpga-model", "rtl", "--leaves", "2", "--loss", "0.03", "--loss-seed", "5"}});
  }
  std::set<std::string> digests;
  for (const Case& c : cases) {
    std::vector<std::string> a = base;
    a.insert(a.end(), c.args.begin(), c.args.end());
    const ToolRun run = run_tool(a, std::chrono::seconds(120));
    const json s = run.summary();
    ASSERT_EQ(run.exit_code, 0) << c.what << "\n" << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << c.what;
    EXPECT_EQ(s["float_wire"], "fp32-exact") << c.what;
    for (const auto& r : s["ranks"]) {
      ASSERT_TRUE(r.contains("result_digest")) << r.dump();
      digests.insert(r["result_digest"].get<std::string>());
    }
  }
  EXPECT_EQ(digests.size(), 1u) << "the runs ended with different bits";
  // The same runs through the fp32 adder trees: loss changes the order, and so the bits.
  std::set<std::string> fp32;
  for (const Case& c : {cases[0], cases[1], cases[2]}) {
    std::vector<std::string> a = base;  // (the HLS model)
    a.insert(a.end(), c.args.begin(), c.args.end());
    a.insert(a.end(), {"--float-wire", "fp32"});
    const ToolRun run = run_tool(a, std::chrono::seconds(120));
    ASSERT_EQ(run.exit_code, 0) << c.what << "\n" << run.out << run.err;
    fp32.insert(run.summary()["ranks"][0]["result_digest"].get<std::string>());
  }
  EXPECT_GT(fp32.size(), 1u) << "the fp32 adder trees gave the same bits under every loss pattern";
}

TEST(EndToEnd, KilledWorkerMakesTheOthersTimeOut) {
  // Rank 2 SIGKILLs itself after 100 packets, in the middle of the first all-reduce.
  const ToolRun run =
      run_tool({"--workers", "4", "--json", "--dtype", "int32", "--count", "200000", "--timeout",
                "1", "--kill-rank", "2", "--kill-after-packets", "100"});
  const json s = run.summary();
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_EQ(s["verification"], "error");
  ASSERT_EQ(s["ranks"].size(), 4u);
  EXPECT_THAT(s["ranks"][2]["status"].get<std::string>(), HasSubstr("killed by signal 9"));
  for (int r : {0, 1, 3}) {
    const json& rank = s["ranks"][r];
    EXPECT_EQ(rank["status"], "exited with status 3") << rank.dump();
    EXPECT_EQ(rank["error_kind"], "timeout") << rank.dump();
    // The host fallback cannot finish an all-reduce a worker is missing from, and says so.
    EXPECT_THAT(rank["error"].get<std::string>(),
                AllOf(HasSubstr("timed out"), HasSubstr("slot"), HasSubstr("a worker is gone")));
  }
  ASSERT_EQ(s["problems"].size(), 5u) << s.dump(2);
  EXPECT_THAT(s["problems"][0].get<std::string>(),
              HasSubstr("rank 0 exited with status 3: timeout error: all-reduce timed out"));
  EXPECT_THAT(s["problems"][2].get<std::string>(), HasSubstr("rank 2 killed by signal 9"));
  // Only the aggregator knows whom the rounds wait for: the dead rank.
  EXPECT_THAT(s["problems"][4].get<std::string>(),
              AllOf(HasSubstr("netagg-switchd still waited for rank 2 in "),
                    HasSubstr("open rounds (first: job 1 slot ")));
  EXPECT_EQ(s["waiting_for_ranks"], json::array({2}));
}

TEST(EndToEnd, AWrongResultIsCaught) {
  // Rank 1 all-reduces another tensor than the one every worker's reference assumes.
  for (const std::string dtype : {"int32", "fp32"}) {
    const ToolRun run =
        run_tool(local4({"--dtype", dtype, "--count", "3000", "--wrong-input-rank", "1"}));
    const json s = run.summary();
    EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
    EXPECT_EQ(s["verification"], "mismatch");
    ASSERT_TRUE(s.contains("mismatch")) << s.dump(2);
    EXPECT_NE(s["mismatch"]["got"], s["mismatch"]["want"]);
    // The report names the first element that fails: rank 1's input differs from the
    // reference's in every element (another seed), so the sums already differ in element 0.
    EXPECT_EQ(s["mismatch"]["index"].get<std::uint64_t>(), 0u) << s.dump(2);
    for (const auto& r : s["ranks"]) EXPECT_EQ(r["verification"], "mismatch") << r.dump();
  }
  const ToolRun text =
      run_tool({"--workers", "2", "--dtype", "int32", "--count", "10", "--wrong-input-rank", "0"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_THAT(text.out, AllOf(HasSubstr("verification: FAILED at index 0: got "),
                              HasSubstr(", want "), HasSubstr("verification: FAILED")));
}

// A worker whose aggregator's port has nothing behind it says so within 2 s, naming the address,
// instead of waiting for the job timeout (10 s here).
TEST(EndToEnd, NothingListeningAtTheAggregatorEndsTheRunAtOnce) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("e2e-refused-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The worker's port: one the kernel gave a socket a moment ago (closed again before use).
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  std::ofstream(dir / "job.json") << R"({"job_id": 1, "slots": {"base": 0, "count": 8},
      "elements_per_packet": 64, "aggregator": "127.0.0.1:9",
      "workers": [{"rank": 0, "address": "127.0.0.1:)"
                                  << ntohs(a.sin_port) << R"("}]})";
  const auto start = std::chrono::steady_clock::now();
  const ToolRun run =
      run_tool({"--rank", "0", "--job", (dir / "job.json").string(), "--epoch", "7", "--fallback",
                "off", "--count", "100", "--dtype", "int32", "--timeout", "10"},
               std::chrono::seconds(30), kWorker);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, AllOf(HasSubstr("nothing listens at aggregator 127.0.0.1:9"),
                             HasSubstr("ICMP port unreachable")))
      << run.err;
  EXPECT_LT(seconds, 2.0);
  fs::remove_all(dir);
}

// Options out of range are usage errors (exit 2, the option named), for the launcher and for a
// worker alike; nothing is started.
TEST(EndToEnd, OutOfRangeOptionsAreUsageErrors) {
  for (const std::string& program : {kLauncher, kWorker}) {
    for (const auto& [option, value] :
         std::vector<std::pair<std::string, std::string>>{{"--count", "0"},
                                                          {"--loss", "1"},
                                                          {"--iterations", "0"},
                                                          {"--timeout", "1e10"},
                                                          {"--timeout", "0"}}) {
      const ToolRun run = run_tool({option, value}, std::chrono::seconds(45), program);
      EXPECT_EQ(run.exit_code, 2) << program << " " << option << " " << value << "\n" << run.err;
      EXPECT_THAT(run.err, HasSubstr(option)) << program;
    }
  }
  const ToolRun help = run_tool({"--help"}, std::chrono::seconds(45), kWorker);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--timeout"));
}

// A run that fails without a wrong sum (here: no aggregator answers) says so, not "FAILED".
TEST(EndToEnd, AFailedWorkerIsNotAWrongSum) {
  const ToolRun run = run_tool({"--workers", "2", "--dtype", "int32", "--count", "10000",
                                "--timeout", "1", "--kill-rank", "1", "--kill-after-packets", "5"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("verification: not done (a worker failed)"));
  EXPECT_THAT(run.out, ::testing::Not(HasSubstr("FAILED")));
}

TEST(EndToEnd, TextOutputNamesTheFigures) {
  const ToolRun run = run_tool({"--workers", "2", "--dtype", "fp32", "--count", "5000"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, AllOf(HasSubstr("verification: ok"), HasSubstr("time: "),
                             HasSubstr("goodput: "), HasSubstr("ATE/s: ")));
}

// ---- one set of runs through every aggregator: the switch model, netagg-fpgad per model -------

// "rtl,hls": the models sim/fpga/CMakeLists.txt built into netagg-fpgad.
bool fpga_model_built(const std::string& model) {
  const std::string built = NETAGG_FPGA_MODELS;
  return ("," + built + ",").find("," + model + ",") != std::string::npos;
}

// An aggregator the launcher can start, and what its runs look like.
struct Target {
  std::string label;                 // test name suffix
  std::vector<std::string> args;     // the launcher's options that choose it
  std::uint64_t count, lossy_count;  // elements of the plain and of the lossy runs
  std::string float_wire;            // how fp32 travels to it
  std::string fpga_model;            // "" for the switch model
  friend void PrintTo(const Target& t, std::ostream* os) { *os << t.label; }
};

std::vector<Target> targets() {
  return {{"switch", {"--target", "switch-sim", "--timeout", "5"}, 100003, 40000, "int32-bfp", ""},
          {"rtl",
           {"--target", "fpga-sim", "--fpga-model", "rtl", "--timeout", "10"},
           20011,
           12000,
           "fp32-exact",
           "rtl"},
          {"hls",
           {"--target", "fpga-sim", "--fpga-model", "hls", "--timeout", "10"},
           20011,
           12000,
           "fp32-exact",
           "hls"}};
}

class Aggregators : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (fpga() && !fpga_model_built(GetParam().fpga_model))
      GTEST_SKIP() << "netagg-fpgad was built without the " << GetParam().fpga_model << " model";
  }
  bool fpga() const { return !GetParam().fpga_model.empty(); }
  // Four workers through this target, --json, and `extra`.
  ToolRun run4(const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {"--workers", "4", "--json"};
    a.insert(a.end(), GetParam().args.begin(), GetParam().args.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return run_tool(a);
  }

  // Every rank verified its sums, and the summary's figures agree with each other. On the FPGA,
  // also: every packet of every worker was aggregated exactly once by the device and every round
  // completed; nothing malformed or foreign reached it.
  void expect_success(const ToolRun& run, const json& s, const std::string& dtype,
                      std::uint64_t count) const {
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << run.out << run.err;
    EXPECT_EQ(s["target"], fpga() ? "fpga-sim" : "switch-sim");
    EXPECT_EQ(s["dtype"], dtype);
    EXPECT_EQ(s["workers"], 4);
    EXPECT_EQ(s["count"], count);
    EXPECT_EQ(s["bytes"], count * 4);
    EXPECT_GT(s["seconds"].get<double>(), 0.0);
    EXPECT_NEAR(s["goodput_gbps"].get<double>(), count * 4 * 8 / s["seconds"].get<double>() / 1e9,
                1e-9);
    EXPECT_NEAR(s["ate_per_second"].get<double>() * s["seconds"].get<double>(), double(count),
                1e-3 * count);
    ASSERT_EQ(s["ranks"].size(), 4u);
    for (const auto& r : s["ranks"]) EXPECT_EQ(r["verification"], "ok") << r.dump();
    if (!fpga()) {
      EXPECT_TRUE(s["switch_counters"].is_object()) << s.dump(2);
      return;
    }
    const json& c = s["fpga_counters"];
    ASSERT_TRUE(c.is_object()) << s.dump(2);
    const std::uint64_t per_packet = s["elements_per_packet"].get<std::uint64_t>();
    const std::uint64_t chunks = (count + per_packet - 1) / per_packet;
    // Exact fp32 sends the exponents a window ahead: W more packets, or two phases.
    const std::uint64_t window = s["window"].get<std::uint64_t>();
    const std::uint64_t packets = dtype == "fp32" && s["float_wire"] == "fp32-exact"
                                      ? chunks + std::min(chunks, window)
                                      : chunks;
    const std::uint64_t rounds =  // per iteration: the packets and the barrier's one
        s["iterations"].get<std::uint64_t>() * (packets + 1);
    EXPECT_EQ(c["completions"], rounds) << c.dump(2);
    EXPECT_EQ(c["aggregated"], 4 * rounds) << c.dump(2);
    // (notices: retransmissions that found their round still waiting, each answered)
    EXPECT_EQ(
        c["frames_out"].get<std::uint64_t>(),
        4 * rounds + c["results_resent"].get<std::uint64_t>() + c["notices"].get<std::uint64_t>());
    EXPECT_EQ(c["egress_undecodable"], 0);
    EXPECT_EQ(c["egress_protocol_errors"], 0);
    for (const auto& [name, value] : c.items()) {
      if (name.rfind("malformed_", 0) == 0 || name == "dropped_foreign_source" ||
          name == "dropped_unknown_job" || name == "dropped_count_mismatch" ||
          name == "dropped_dtype_mismatch") {
        EXPECT_EQ(value, 0) << name;
      }
    }
  }
};

TEST_P(Aggregators, Int32FourWorkers) {
  const std::uint64_t count = GetParam().count;
  const ToolRun run =
      run4({"--dtype", "int32", "--count", std::to_string(count), "--iterations", "2"});
  const json s = run.summary();
  expect_success(run, s, "int32", count);
  EXPECT_EQ(s["seconds_all"].size(), 2u);
  EXPECT_EQ(s["injected_drops"], 0);
  EXPECT_EQ(s["float_wire"], "int32");
  if (fpga()) {
    EXPECT_EQ(s["elements_per_packet"], 256);  // the FPGA's defaults
    EXPECT_EQ(s["window"], 16);
  }
}

TEST_P(Aggregators, Fp32FourWorkers) {
  const std::uint64_t count = GetParam().count;
  const ToolRun run = run4({"--dtype", "fp32", "--count", std::to_string(count), "--seed", "9"});
  const json s = run.summary();
  expect_success(run, s, "fp32", count);
  EXPECT_EQ(s["float_wire"], GetParam().float_wire)
      << "the FPGA adds floats (no block floating point), the switch integers";
}

TEST_P(Aggregators, Int32WithLoss) {
  const std::uint64_t count = GetParam().lossy_count;
  const ToolRun run = run4({"--dtype", "int32", "--count", std::to_string(count), "--loss", "0.05",
                            "--seed", "3", "--window", "16"});
  const json s = run.summary();
  expect_success(run, s, "int32", count);
  EXPECT_GT(s["injected_drops"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["retransmissions"].get<std::uint64_t>(), 0u);
}

TEST_P(Aggregators, Fp32WithLoss) {
  const std::uint64_t count = GetParam().lossy_count;
  const ToolRun run = run4({"--dtype", "fp32", "--count", std::to_string(count), "--loss", "0.05",
                            "--seed", "4", "--elements-per-packet", "100"});
  const json s = run.summary();
  expect_success(run, s, "fp32", count);
  EXPECT_GT(s["retransmissions"].get<std::uint64_t>(), 0u);
  // A lost result is answered from the slot's stored copy.
  if (fpga()) {
    EXPECT_GT(s["fpga_counters"]["results_resent"].get<std::uint64_t>(), 0u);
  }
}

// A daemon of this target and a two- or four-worker job for it, in a scratch folder; the
// workers are started by hand (not by netagg-local) so that a test can restart the daemon, or
// run the job twice, under them.
class DaemonJob {
 public:
  DaemonJob(const Target& target, int workers) : target_(target) {
    dir_ = netagg::testing::make_temp_dir("netagg-e2e-daemon");
    std::vector<netagg::Endpoint> addresses;
    {
      std::vector<std::unique_ptr<netagg::testing::LoopbackUdpSocket>> sockets;
      for (int r = 0; r < workers; ++r)  // free ports, given back before the workers bind them
        sockets.push_back(std::make_unique<netagg::testing::LoopbackUdpSocket>());
      for (const auto& s : sockets) addresses.push_back(s->local());
    }
    job_ = dir_ / "job.json";
    std::ofstream out(job_);
    out << R"({"job_id": 5, "slots": {"base": 0, "count": 4}, "elements_per_packet": 64, )"
        << R"("workers": [)";
    for (int r = 0; r < workers; ++r)
      out << (r ? ", " : "")
          << netagg::testing::worker_json(static_cast<std::uint16_t>(r), addresses[r], r % 4);
    out << "]}";
  }
  ~DaemonJob() { fs::remove_all(dir_); }
  bool fpga() const { return !target_.fpga_model.empty(); }

  // Starts the daemon on `listen` ("127.0.0.1:0": any port) and returns the address it serves.
  std::string start_daemon(const std::string& listen = "127.0.0.1:0") {
    std::vector<std::string> args{"--listen", listen, "--job", job_.string()};
    if (fpga()) args.insert(args.end(), {"--model", target_.fpga_model});
    const std::string name = fpga() ? "netagg-fpgad" : "netagg-switchd";
    const fs::path program =
        fs::path(NETAGG_BINARY_DIR) / "sim" / (fpga() ? "fpga" : "switch") / name;
    daemon_ = std::make_unique<netagg::testing::DaemonProcess>(
        name, netagg::testing::command(program, args), dir_, std::chrono::seconds(60));
    return daemon_->wait_listening().to_string();
  }
  netagg::testing::DaemonProcess& daemon() { return *daemon_; }

  // One worker process per rank: int32, `count` elements, `extra` options.
  std::vector<std::unique_ptr<ChildProcess>> start_workers(
      int workers, const std::string& target, const std::vector<std::string>& extra) const {
    std::vector<std::unique_ptr<ChildProcess>> out;
    for (int r = 0; r < workers; ++r) {
      std::vector<std::string> argv{kWorker,    "--rank", std::to_string(r), "--job", job_.string(),
                                    "--target", target,   "--dtype",         "int32", "--json"};
      argv.insert(argv.end(), extra.begin(), extra.end());
      out.push_back(std::make_unique<ChildProcess>(argv));
    }
    return out;
  }
  // Waits for every worker; each must exit 0 having verified its sums.
  static void expect_verified(const std::vector<std::unique_ptr<ChildProcess>>& workers,
                              const std::string& what) {
    for (std::size_t r = 0; r < workers.size(); ++r) {
      ASSERT_TRUE(workers[r]->wait_exit(ChildProcess::Clock::now() + std::chrono::seconds(60)))
          << what << " rank " << r;
      EXPECT_EQ(workers[r]->exit_code(), 0)
          << what << " rank " << r << ": " << workers[r]->output();
      const json report = json::parse(workers[r]->output(), nullptr, false);
      EXPECT_EQ(report.value("verification", ""), "ok") << what << ": " << workers[r]->output();
    }
  }

 private:
  Target target_;
  fs::path dir_, job_;
  std::unique_ptr<netagg::testing::DaemonProcess> daemon_;
};

// A job run twice against one running daemon, as a user re-runs a training script: the second
// run numbers its packets from 0 again on the slots the first left full, and must get its own
// sums (each worker verifies every element). The epochs differ, as netagg-local draws them.
TEST_P(Aggregators, ARerunAgainstARunningDaemonGetsItsOwnSums) {
  DaemonJob job(GetParam(), 2);
  const std::string target = job.start_daemon();
  for (const auto& [epoch, seed] : {std::pair{"17", "1"}, {"0x2a", "2"}, {"99", "3"}}) {
    DaemonJob::expect_verified(
        job.start_workers(2, target,
                          {"--epoch", epoch, "--count", "3001", "--seed", seed, "--timeout", "10"}),
        std::string("epoch ") + epoch);
  }
  EXPECT_EQ(job.daemon().stop(SIGTERM), 0) << job.daemon().stderr_text();
  // Each run uses both sets of the job's 4 slots (47 packets), and each rerun takes every one of
  // those 8 sets over from the run before, once.
  EXPECT_EQ(job.daemon().last_counters().at("epoch_takeovers"), 2u * 8u);
}

// The aggregator of a four-worker run under 1 % loss kills itself (SIGKILL: every round it held is
// gone) when a chosen datagram arrives: a fraction of what the run sends (64 elements a packet,
// each worker's packets and its barrier's), so the moment is the same on every run. `restart`:
// netagg-local starts it again on its port at once. Returns the launcher's run.
ToolRun run_with_aggregator_failure(const Target& target, const std::string& dtype,
                                    std::uint64_t count, double fraction, bool restart,
                                    int iterations = 1) {
  const std::uint64_t packets =
      4 * static_cast<std::uint64_t>(iterations) * ((count + 63) / 64 + 1);
  const auto at = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(fraction * packets));
  std::vector<std::string> extra = {"--dtype",
                                    dtype,
                                    "--count",
                                    std::to_string(count),
                                    "--elements-per-packet",
                                    "64",
                                    "--window",
                                    "16",
                                    "--loss",
                                    "0.01",
                                    "--seed",
                                    "8",
                                    "--iterations",
                                    std::to_string(iterations),
                                    "--kill-aggregator-at",
                                    std::to_string(at)};
  if (restart) extra.push_back("--restart-aggregator");
  std::vector<std::string> a = {"--workers", "4", "--json"};
  a.insert(a.end(), target.args.begin(), target.args.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return run_tool(a, std::chrono::seconds(90));
}

// Killed and started again late in the run, where a restart used to lose the last window of
// results: the workers retransmit into the empty aggregator, those that had a lost result's round
// send their copies again (recovery copies), the host fallback hands on what a worker still
// lacks, and every worker verifies its sums.
TEST_P(Aggregators, AnAggregatorKilledAndRestartedMidRunLosesNoSum) {
  const std::uint64_t count = GetParam().count * (fpga() ? 1 : 4) / 10;
  for (const double fraction : {0.5, 0.95}) {
    const ToolRun run = run_with_aggregator_failure(GetParam(), "int32", count, fraction,
                                                    /*restart=*/true);
    const json s = run.summary();
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << fraction << ": " << run.out << run.err;
    EXPECT_THAT(s["aggregator_killed"].get<std::string>(), HasSubstr("started again"))
        << "the aggregator was not killed: " << run.out;
  }
}

// Killed for good in the middle of the run: the workers notice within a second, finish the
// all-reduce among themselves over Gloo, every one verifies its sums (fp32 in the aggregator's
// numerics, int32 exactly), and the report says so; no timeout error.
TEST_P(Aggregators, AnAggregatorKilledForGoodIsFinishedByTheWorkers) {
  const std::uint64_t count = GetParam().count * (fpga() ? 1 : 4) / 10;
  for (const std::string dtype : {"int32", "fp32"}) {
    const ToolRun run = run_with_aggregator_failure(GetParam(), dtype, count, 0.5,
                                                    /*restart=*/false, /*iterations=*/2);
    const json s = run.summary();
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << dtype << ": " << run.out << run.err;
    EXPECT_THAT(s["aggregator_killed"].get<std::string>(), HasSubstr("killed by signal 9"));
    EXPECT_GT(s["fallback_chunks"].get<std::uint64_t>(), 0u) << run.out;
    EXPECT_THAT(run.err, HasSubstr("finishing the all-reduce with the other workers"));
    EXPECT_THAT(run.err, HasSubstr("run on the hosts"));
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, Aggregators, ::testing::ValuesIn(targets()),
                         [](const auto& info) { return info.param.label; });

// Trees (two-level, two trees of a job, 1 % loss): a dead leaf, a dead root, one dead tree of
// two. Every worker verifies; the trees whose aggregators died go to the hosts, the others stay
// in the network (a dead root of one tree leaves the other tree's all-reduces in the network).
TEST(EndToEnd, AnAggregatorOfATreeKilledForGoodIsFinishedByTheWorkers) {
  for (const auto& [who, trees_to_hosts] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"leaf0", 2}, {"root0", 1}, {"root1", 1}}) {
    const ToolRun run = run_tool({"--workers", "4",
                                  "--leaves",  "2",
                                  "--trees",   "2",
                                  "--json",    "--dtype",
                                  "int32",     "--count",
                                  "100000",    "--iterations",
                                  "3",         "--loss",
                                  "0.01",      "--timeout",
                                  "10",        "--kill-aggregator",
                                  who,         "--kill-aggregator-at",
                                  "100"},
                                 std::chrono::seconds(90));
    const json s = run.summary();
    EXPECT_EQ(run.exit_code, 0) << who << ": " << run.out << run.err;
    EXPECT_EQ(s["verification"], "ok") << who;
    EXPECT_THAT(s["aggregator_killed"].get<std::string>(), HasSubstr(who + " killed by signal 9"));
    for (const json& rank : s["ranks"]) {
      // A dead leaf takes both trees of its own workers to the hosts, and so of every worker:
      // the others' rounds wait for them.
      EXPECT_EQ(rank.value("fallback_to_hosts", 0ull), trees_to_hosts)
          << who << ": " << rank.dump();
      EXPECT_GT(rank.value("fallback_chunks", 0ull), 0u) << who;
    }
  }
}

TEST(EndToEnd, FpgaSimRefusesWhatItsSlotsCannotHold) {
  for (const auto& [option, value, message] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--elements-per-packet", "257", "slots hold at most 256 elements"},
           {"--window", "65", "the FPGA aggregator has 64 slots"}}) {
    const ToolRun run = run_tool({"--workers", "4", "--target", "fpga-sim", option, value});
    EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
    EXPECT_THAT(run.err, HasSubstr(message));
  }
  // Trees: a leaf's slots hold every tree's window; a switch root adds int32 only.
  for (const auto& [extra, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--trees", "5"}, "5 trees of window 16 need 80 slots at a leaf"},
           {{"--root-target", "switch-sim", "--dtype", "fp32", "--float-wire", "fp32"},
            "the switch adds int32 only"}}) {
    std::vector<std::string> args = {"--workers", "4", "--target", "fpga-sim", "--leaves", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const ToolRun run = run_tool(args);
    EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
    EXPECT_THAT(run.err, HasSubstr(message));
  }
  const ToolRun alone = run_tool({"--workers", "4", "--root-target", "fpga-sim"});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_THAT(alone.err, HasSubstr("--root-target: needs --leaves"));
}

TEST(EndToEnd, TheLauncherNamesAProgramItCannotFind) {
  for (const auto& [target, option, name] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"switch-sim", "--worker", "netagg-allreduce"},
           {"switch-sim", "--switchd", "netagg-switchd"},
           {"fpga-sim", "--fpgad", "netagg-fpgad"}}) {
    const std::string path = "/nonexistent/" + name;
    const ToolRun run = run_tool({"--workers", "2", "--target", target, option, path});
    EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
    EXPECT_THAT(run.err,
                HasSubstr(name + " not found at " + path + " (build it, or pass " + option));
  }
}

TEST(EndToEnd, VerboseShowsTheDaemonsOutput) {
  const ToolRun run =
      run_tool({"--workers", "1", "--dtype", "int32", "--count", "1000", "--verbose"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("netagg-switchd: listening on 127.0.0.1:"));
  EXPECT_THAT(run.out, HasSubstr("verification: ok"));
}

TEST(EndToEnd, AWorkerWithABadRankOrNoEpochSaysSo) {
  const auto dir = std::filesystem::path(::testing::TempDir());
  const auto job = dir / ("e2e-job-" + std::to_string(::getpid()) + ".json");
  {
    FILE* f = std::fopen(job.c_str(), "w");
    std::fputs(R"({"job_id": 1, "slots": {"base": 0, "count": 4}, "elements_per_packet": 16,
      "aggregator": "127.0.0.1:20033",
      "workers": [{"rank": 0, "address": "127.0.0.1:41000"},
                  {"rank": 1, "address": "127.0.0.1:41001"}]})",
               f);
    std::fclose(f);
  }
  const ToolRun run =
      run_tool({"--rank", "5", "--job", job.string()}, std::chrono::seconds(45), kWorker);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("rank 5 is outside the job's 2 workers"));
  // A worker started by hand without an epoch (and no launcher's run id) does not start: it
  // could take an earlier run's sums. The environment of the test may hold a launcher's id.
  const ToolRun no_epoch = run_tool(
      {"-u", "NETAGG_EPOCH", "-u", "TORCHELASTIC_RUN_ID", "-u", "OMPI_MCA_ess_base_jobid", "-u",
       "PMIX_NAMESPACE", "-u", "SLURM_JOB_ID", kWorker, "--rank", "0", "--job", job.string()},
      std::chrono::seconds(45), "/usr/bin/env");
  EXPECT_EQ(no_epoch.exit_code, 2) << no_epoch.err;
  EXPECT_THAT(no_epoch.err, HasSubstr("epoch: not set"));
  const ToolRun bad_epoch = run_tool({"--rank", "0", "--job", job.string(), "--epoch", "-1"},
                                     std::chrono::seconds(45), kWorker);
  EXPECT_EQ(bad_epoch.exit_code, 2);
  EXPECT_THAT(bad_epoch.err, HasSubstr("--epoch: '-1' is not a decimal or 0x-hexadecimal"));
  std::filesystem::remove(job);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// netagg-fpgad as a process, with each model it serves (the Verilated RTL, the HLS C model):
// started on loopback with a job file, driven from UDP sockets bound to the workers' addresses,
// stopped with signals. The counters come from the device's CSRs. Every port is picked by the
// kernel, so tests running in parallel do not collide.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregator_scenarios.hpp"
#include "daemon.hpp"
#include "harness.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
// The helpers of the daemon tests: tests/common/daemon.hpp,
// tests/sim/common/aggregator_scenarios.hpp.
using namespace netagg::testing;  // NOLINT(google-build-using-namespace)

const fs::path kDaemon = fs::path(NETAGG_BINARY_DIR) / "sim" / "fpga" / "netagg-fpgad";

// The daemon as a child process, with what only netagg-fpgad does.
class Daemon : public AggregatorDaemon {
 public:
  Daemon(const fs::path& dir, std::vector<std::string> args)
      : AggregatorDaemon(kDaemon, dir, std::move(args)) {}

  // Requests counters until datagrams_in reaches `n`: then the daemon has processed (and
  // answered) every datagram sent to it.
  Counters wait_for_datagrams(std::uint64_t n) { return wait_for_counter("datagrams_in", n); }
};

class FpgadTest : public testing::ScratchTest, public ::testing::WithParamInterface<std::string> {
 protected:
  FpgadTest() : ScratchTest(kDaemon, "fpgad_test") {}
  void SetUp() override {
    if (model() == "rtl" && !sim::rtl_model_available())
      GTEST_SKIP() << "this build has no RTL model (configured without Verilator)";
    ScratchTest::SetUp();
  }
  const std::string& model() const { return GetParam(); }
  std::vector<std::string> args(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--model", model()});
    return extra;
  }
};

TEST_P(FpgadTest, ReducesAnswersAndCountsEverything) {
  using J = TwoJobs;
  J jobs;
  // Rank 2 on port 3 by its switch_port.
  const fs::path job_file = write("jobs.json", jobs.job_file(3));
  const fs::path json = dir_ / "counters.json";
  Daemon d(dir_, args({"--listen", "127.0.0.1:0", "--job", job_file.string(), "--counters-json",
                       json.string()}));
  const Endpoint agg = d.wait_listening();
  EXPECT_EQ(agg.ip, 0x7F000001u);
  EXPECT_NE(agg.port, 0);
  EXPECT_THAT(d.stderr_text(), HasSubstr("job 5: 3 workers, slots [16, 18), 3 elements per "
                                         "packet, ports by rank 0 1 3"));

  jobs.reduce_and_retransmit(agg);
  constexpr std::uint32_t kPackets = J::kPackets;
  const std::uint64_t result_rounds = J::kRoundDatagrams;
  const std::uint64_t junk = J::kJunk, round = 4;
  const std::uint64_t sent = result_rounds + junk + round;

  // Junk, each kind once; the device counts each by its reason. Only the drops a worker can act
  // on are answered: the first of each reason and rank (one in every wire::kNoticeInterval is),
  // with a notice to its sender.
  jobs.send_junk(agg);
  // A round with a duplicate, a count and a dtype mismatch, left incomplete: slot kBase, set 0
  // (P = 8). Rank 0's packet starts the round before the others arrive: the device takes the
  // ports in parallel, so packets sent together on several ports reach the round in any order.
  auto& workers = jobs.workers;
  d.wait_for_datagrams(result_rounds + junk);
  workers[0].send_to(agg, contribution(J::kJob, 0, J::kBase, 0, 8, {1, 2, 3}));
  d.wait_for_datagrams(result_rounds + junk + 1);
  workers[0].send_to(agg, contribution(J::kJob, 0, J::kBase, 0, 8, {1, 2, 3}));  // duplicate
  workers[1].send_to(agg, contribution(J::kJob, 1, J::kBase, 0, 8, {1, 2}));     // count mismatch
  workers[2].send_to(agg, contribution(J::kJob, 2, J::kBase, 0, 8, {1, 2, 3}, wire::kExponentNone,
                                       wire::DataType::kFp32));  // dtype mismatch

  const Counters mid = d.wait_for_datagrams(sent);
  EXPECT_EQ(mid.at("results_resent"), 1u);
  // Foreign source (the stranger's, the first of two: a notice goes to the packet's source, a
  // registered worker or not), unknown job, rank, slot (the first of two), count too large,
  // duplicate (the round waits for ranks 1 and 2), count mismatch (rank 1's), dtype mismatch
  // (rank 2's).
  EXPECT_EQ(notices_received(jobs.stranger, 1, agg), (Notices{{"foreign_source", 0}}));
  EXPECT_EQ(notices_received(workers[0], 5, agg), (Notices{{"count_too_large_for_job", 0},
                                                           {"duplicate", 0b110},
                                                           {"rank_out_of_range", 0},
                                                           {"slot_out_of_range", 0},
                                                           {"unknown_job", 0}}));
  EXPECT_EQ(notices_received(workers[1], 1, agg), (Notices{{"count_mismatch", 0}}));
  EXPECT_EQ(notices_received(workers[2], 1, agg), (Notices{{"dtype_mismatch", 0}}));
  const std::uint64_t notices = 8;
  jobs.expect_nothing_pending();

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
  EXPECT_THAT(d.stdout_text(), HasSubstr("netagg-fpgad: counters (exit):"));
  const Counters exit_text = d.last_counters();
  Counters exit_json = read_json_counters(json);
  EXPECT_EQ(exit_text, exit_json);
  EXPECT_GT(exit_json["model_cycles"], 0u);
  // Idle cycles the RTL's fast build skipped (sim/fpga/rtl_harness.hpp): some of model_cycles.
  EXPECT_LE(exit_json["model_cycles_skipped"], exit_json["model_cycles"]);
  exit_json.erase("model_cycles");
  exit_json.erase("model_cycles_skipped");

  const Counters expected = {
      {"frames_in", sent},
      {"frames_out", 3 * kPackets + 1 + notices},
      {"aggregated", 3 * kPackets + 1},
      {"completions", kPackets},
      {"results_resent", 1},
      {"malformed_truncated", 2},
      {"malformed_not_ipv4", 0},
      {"malformed_bad_ip_header", 0},
      {"malformed_not_udp", 0},
      {"malformed_wrong_port", 0},
      {"malformed_ip_length_mismatch", 0},
      {"malformed_udp_length_mismatch", 0},
      {"malformed_bad_version", 1},
      {"malformed_bad_type", 1},
      {"malformed_bad_dtype", 1},
      {"malformed_bad_flags", 2},
      {"malformed_count_too_large", 1},
      {"malformed_length_mismatch", 2},
      {"dropped_not_contribution", 1},
      {"dropped_unknown_job", 1},
      {"dropped_rank_out_of_range", 1},
      {"dropped_foreign_source", 2},
      {"dropped_slot_out_of_range", 2},
      {"dropped_count_too_large_for_job", 1},
      {"dropped_count_mismatch", 1},
      {"dropped_dtype_mismatch", 1},
      {"dropped_duplicate", 1},
      {"dropped_stale", 0},
      {"dropped_stale_epoch", 0},
      {"dropped_no_round", 0},
      {"sent_to_parent", 0},
      {"resent_to_parent", 0},
      {"results_from_parent", 0},
      {"epoch_takeovers", 0},
      {"notices", notices},
      {"dropped_unsupported_dtype", 0},
      {"dropped_scale_mismatch", 0},
      {"exact_out_of_range", 0},
      {"datagrams_in", sent},
      {"egress_frames", 3 * kPackets + 1 + notices},
      {"egress_undecodable", 0},
      {"egress_protocol_errors", 0},
      {"datagrams_sent", 3 * kPackets + 1 + notices},
      {"send_errors", 0},
  };
  for (const auto& [name, value] : expected) EXPECT_EQ(exit_json[name], value) << name;
  EXPECT_EQ(exit_json.size(), expected.size()) << "counters not expected here";
}

TEST_P(FpgadTest, SigintStopsCleanlyAndQuietPrintsNoCounters) {
  UdpSocket w;
  const fs::path job = write("job.json", one_slot_job(w.local()));
  Daemon d(dir_, args({"--listen", "127.0.0.1:0", "--job", job.string(), "--quiet"}));
  expect_answer_then_quiet_stop_on_sigint(d, w);
}

// Jobs on several files, isolated from each other; workers spread over the ports; fp32 adds.
TEST_P(FpgadTest, SeveralJobsAndFloatingPoint) {
  UdpSocket a0, a1, b0;
  const fs::path ja =
      write("a.json", fmt::format(R"({{"job_id": 1, "slots": {{"base": 0,
      "count": 4}}, "elements_per_packet": 40, "workers": [{}, {}]}})",
                                  worker_json(0, a0.local()), worker_json(1, a1.local())));
  const fs::path jb = write("b.json", fmt::format(R"({{"job_id": 2, "slots": {{"base": 4,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}]}})",
                                                  worker_json(0, b0.local(), 1)));
  Daemon d(dir_, args({"--listen", "127.0.0.1:0", "--job", ja.string(), "--job", jb.string()}));
  const Endpoint agg = d.wait_listening();
  b0.send_to(agg, contribution(2, 0, 5, 1, 9, {7, 8}));
  // 40 fp32 elements (three beats, the last one partial): i + 0.5 and 2^-30 * i; their sums are
  // exact in fp32.
  std::vector<std::int32_t> x(40), y(40);
  for (int i = 0; i < 40; ++i) {
    const float fx = float(i) + 0.5f, fy = std::ldexp(float(i), -30);
    std::memcpy(&x[i], &fx, 4);
    std::memcpy(&y[i], &fy, 4);
  }
  a0.send_to(agg, contribution(1, 0, 3, 0, 3, x, wire::kExponentNone, wire::DataType::kFp32));
  a1.send_to(agg, contribution(1, 1, 3, 0, 3, y, wire::kExponentNone, wire::DataType::kFp32));
  auto rb = b0.receive();
  ASSERT_TRUE(rb);
  EXPECT_THAT(parse_result(*rb).values, ElementsAre(7, 8));
  for (UdpSocket* s : {&a0, &a1}) {
    auto r = s->receive();
    ASSERT_TRUE(r);
    const Result res = parse_result(*r);
    EXPECT_EQ(res.header.job_id, 1);
    EXPECT_EQ(res.header.dtype, wire::DataType::kFp32);
    ASSERT_EQ(res.values.size(), 40u);
    for (int i = 0; i < 40; ++i) {
      float got;
      std::memcpy(&got, &res.values[i], 4);
      EXPECT_EQ(got, (float(i) + 0.5f) + std::ldexp(float(i), -30)) << i;
    }
  }
  EXPECT_EQ(d.stop(SIGTERM), 0);
  const Counters c = d.last_counters();
  EXPECT_EQ(c.at("completions"), 2u);
  EXPECT_EQ(c.at("datagrams_sent"), 3u);
  EXPECT_THAT(d.stderr_text(), HasSubstr("job 1: 2 workers, slots [0, 4), 40 elements per packet, "
                                         "ports by rank 0 1"));
  EXPECT_THAT(d.stderr_text(), HasSubstr("job 2: 1 workers, slots [4, 8), 2 elements per packet, "
                                         "ports by rank 1"));
}

// Trees: with --as, a job file with trees becomes this aggregator's part: leaf0 of a tree whose
// root is a socket of the test. A completed round goes up to the root as one contribution (a
// retransmission meanwhile sends it again), the root's result comes down to the leaf's workers.
TEST_P(FpgadTest, AsALeafOfATreeItSendsSumsUpAndTakesTheRootsResult) {
  UdpSocket w0, w1, w2, root;
  const fs::path job =
      write("tree.json", fmt::format(R"({{"job_id": 5, "elements_per_packet": 4,
      "workers": [{}, {}, {}], "trees": [{{"window": 2, "aggregators": [
        {{"name": "root", "address": "{}"}},
        {{"name": "leaf0", "address": "127.0.0.1:9", "parent": "root", "workers": [0, 1],
          "slot_base": 3}},
        {{"name": "leaf1", "address": "127.0.0.1:10", "parent": "root", "workers": [2]}}]}}]}})",
                                     worker_json(0, w0.local()), worker_json(1, w1.local()),
                                     worker_json(2, w2.local()), root.local().to_string()));
  Daemon d(dir_, args({"--listen", "127.0.0.1:0", "--job", job.string(), "--as", "leaf0"}));
  const Endpoint agg = d.wait_listening();
  // leaf0's view: ranks 0 and 1 (the job's 0 and 1), slots [3, 5); at the root rank 0, slots
  // from 0.
  w0.send_to(agg, contribution(5, 0, 3, 0, 0, {1, 2, 3, 4}));
  w1.send_to(agg, contribution(5, 1, 3, 0, 0, {10, 20, 30, 40}));
  Endpoint from;
  auto up = root.receive(&from);
  ASSERT_TRUE(up);
  EXPECT_EQ(from, agg) << "from the address the leaf listens on";
  wire::Decoded sum = wire::decode(*up);
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum.header.type, wire::MsgType::kContribution);
  EXPECT_EQ(sum.header.job_id, 5);
  EXPECT_EQ(sum.header.rank, 0);
  EXPECT_EQ(sum.header.slot, 0);
  EXPECT_EQ(sum.header.seq, 0u);
  EXPECT_THAT(parse_result(*up).values, ElementsAre(11, 22, 33, 44));
  // A retransmission while the round waits: the sum again.
  w0.send_to(agg, contribution(5, 0, 3, 0, 0, {1, 2, 3, 4}));
  auto again = root.receive();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *up);
  // The root's result (the whole tree's sum) to both workers of the leaf.
  std::vector<std::byte> result = contribution(5, 0, 0, 0, 0, {100, 200, 300, 400});
  result[wire::offset::kType] = std::byte{2};
  root.send_to(agg, result);
  for (UdpSocket* w : {&w0, &w1}) {
    auto r = w->receive();
    ASSERT_TRUE(r);
    const Result res = parse_result(*r);
    EXPECT_EQ(res.header.type, wire::MsgType::kResult);
    EXPECT_EQ(res.header.job_id, 5);
    EXPECT_EQ(res.header.slot, 3);
    EXPECT_EQ(res.header.rank, w == &w0 ? 0 : 1);
    EXPECT_THAT(res.values, ElementsAre(100, 200, 300, 400));
  }
  EXPECT_EQ(d.stop(SIGTERM), 0);
  const Counters c = d.last_counters();
  EXPECT_EQ(c.at("sent_to_parent"), 1u);
  EXPECT_EQ(c.at("resent_to_parent"), 1u);
  EXPECT_EQ(c.at("results_from_parent"), 1u);
  EXPECT_EQ(c.at("completions"), 1u);
  EXPECT_EQ(c.at("datagrams_sent"), 4u);
  EXPECT_THAT(d.stderr_text(),
              HasSubstr(fmt::format("job 5: 2 workers, slots [3, 5), 4 elements per packet, ports "
                                    "by rank 0 1, child of {} as rank 0 of job 5 (its slots from "
                                    "0, port 0)",
                                    root.local().to_string())));
  EXPECT_FALSE(w2.has_pending());
}

// A job whose "aggregator" is not the address the daemon listens on is refused: its workers would
// send there and get no answer. Exit 2, both addresses and the fixes named.
TEST_P(FpgadTest, AJobWhoseAggregatorIsNotTheListenAddressIsRefused) {
  UdpSocket w;
  const fs::path file = write("job.json", job_of_another_aggregator(w.local()));
  Daemon d(dir_, args({"--listen", "127.0.0.1:0", "--job", file.string()}));
  expect_job_of_another_aggregator_refused(d, file.string());
}

// Bad configuration: exit code 2 and a message naming the problem, before any "listening" line.
TEST_P(FpgadTest, BadConfigurationExitsWithTwo) {
  UdpSocket w, busy;
  const auto job_with = [&](int id, int base, int count, int elements, const std::string& workers) {
    return fmt::format(R"({{"job_id": {}, "slots": {{"base": {}, "count": {}}},
        "elements_per_packet": {}, "workers": [{}]}})",
                       id, base, count, elements, workers);
  };
  const std::string one = worker_json(0, w.local());
  std::string workers33;
  for (int r = 0; r < 33; ++r)
    workers33 += fmt::format("{}{}", r ? ", " : "",
                             worker_json(r, Endpoint{0x7F000001, std::uint16_t(45000 + r)}));
  std::string nine_jobs;
  for (int j = 0; j < 9; ++j)
    nine_jobs += fmt::format(
        "{}{}", j ? ", " : "",
        job_with(j, j, 1, 2, worker_json(0, Endpoint{0x7F000001, std::uint16_t(46000 + j)})));
  const fs::path good = write("good.json", job_with(1, 0, 4, 2, one));
  const fs::path too_many = write("33.json", job_with(3, 0, 4, 2, workers33));
  const fs::path overlap = write("overlap.json", job_with(2, 3, 4, 2, one));
  const fs::path big = write("big.json", job_with(4, 0, 4, 600, one));
  const fs::path slots = write("slots.json", job_with(5, 60, 8, 2, one));
  const fs::path port = write("port.json", job_with(6, 0, 4, 2, worker_json(0, w.local(), 4)));
  const fs::path nine = write("nine.json", fmt::format(R"({{"jobs": [{}]}})", nine_jobs));
  const fs::path broken = write("broken.json", R"({"job_id": 1, "slots": )");
  const std::string busy_addr = busy.local().to_string();
  const fs::path tree = write("tree.json", fmt::format(R"({{"job_id": 7, "elements_per_packet": 2,
      "workers": [{}], "trees": [{{"window": 2, "aggregators": [
        {{"name": "root", "address": "127.0.0.1:11"}},
        {{"name": "leaf", "address": "127.0.0.1:12", "parent": "root", "workers": [0]}}]}}]}})",
                                                       one));
  const fs::path far_parent = write("far.json", fmt::format(R"({{"job_id": 8, "slots": {{"base": 0,
      "count": 2}}, "elements_per_packet": 2, "workers": [{}], "parent": {{"address":
      "127.0.0.1:11", "rank": 0, "slot_base": 0, "switch_port": 4}}}})",
                                                            one));

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--job", (dir_ / "missing.json").string()},
       (dir_ / "missing.json").string() + ": cannot open"},
      {{"--job", broken.string()}, "not valid JSON"},
      {{"--job", too_many.string()}, "33 workers; the worker bitmap allows 1 to 32"},
      {{"--job", good.string(), "--job", overlap.string()}, "overlap slots [0, 4) of job 1"},
      {{"--job", big.string()}, "elements_per_packet 600 is out of range [1, 256]"},
      {{"--job", slots.string()}, "uses slots [60, 68) but the FPGA aggregator has 64 slots"},
      {{"--job", port.string()}, "switch_port 4 but the FPGA aggregator has ports 0..3"},
      {{"--job", nine.string()}, "9 jobs; the FPGA aggregator's job table holds 8"},
      {{"--job", tree.string(), "--as", "nobody"},
       "job 7: no tree of it has an aggregator named 'nobody'"},
      {{"--job", tree.string()}, "job 7: no tree of it has an aggregator at 127.0.0.1:0"},
      {{"--job", far_parent.string()},
       "parent: switch_port 4 but the FPGA aggregator has ports 0..3"},
      {{"--job", good.string(), "--listen", busy_addr}, "cannot listen on " + busy_addr},
      {{"--job", good.string(), "--listen", "localhost:1"}, "is not an IPv4 address"},
      {{"--job", good.string(), "--listen", "127.0.0.1:70000"}, "is not a port"},
      {{"--listen", "127.0.0.1:0"}, "--job is required"},
      {{"--job", good.string(), "--bogus"}, "bogus"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> a = args(c.args);
    if (std::find(a.begin(), a.end(), "--listen") == a.end())
      a.insert(a.end(), {"--listen", "127.0.0.1:0"});
    Daemon d(dir_, a);
    EXPECT_EQ(d.wait_exit(), 2) << fmt::format("{}", fmt::join(a, " "));
    EXPECT_THAT(d.stderr_text() + d.stdout_text(), HasSubstr(c.message))
        << fmt::format("{}", fmt::join(a, " "));
    EXPECT_THAT(d.stdout_text(), ::testing::Not(HasSubstr("listening")));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FpgadTest, ::testing::Values("rtl", "hls"),
                         [](const auto& info) { return info.param; });

// Options that do not depend on a model.
TEST(Fpgad, ModelOptionsAreChecked) {
  if (!fs::exists(kDaemon)) GTEST_SKIP() << kDaemon << " is not built";
  const fs::path dir = testing::make_temp_dir("fpgad_test");
  UdpSocket w;
  const fs::path job = dir / "job.json";
  std::ofstream(job) << fmt::format(R"({{"job_id": 1, "slots": {{"base": 0, "count": 1}},
      "elements_per_packet": 1, "workers": [{}]}})",
                                    worker_json(0, w.local()));
  {
    Daemon d(dir, {"--job", job.string(), "--listen", "127.0.0.1:0", "--model", "gpu"});
    EXPECT_EQ(d.wait_exit(), 2);
    EXPECT_THAT(d.stderr_text(), HasSubstr("--model"));
  }
  {
    Daemon d(dir, {"--job", job.string(), "--listen", "127.0.0.1:0", "--model", "hls", "--trace",
                   (dir / "t.fst").string()});
    EXPECT_EQ(d.wait_exit(), 2);
    EXPECT_THAT(d.stderr_text(), HasSubstr("the HLS C model has no waveform"));
  }
  if (!sim::rtl_model_available()) {
    Daemon d(dir, {"--job", job.string(), "--listen", "127.0.0.1:0", "--model", "rtl"});
    EXPECT_EQ(d.wait_exit(), 2);
    EXPECT_THAT(d.stderr_text(), HasSubstr("this build has no RTL model"));
  }
  fs::remove_all(dir);
}

// The RTL's waveform: --trace writes an FST file that grows with the traffic.
TEST(Fpgad, RtlTraceIsWritten) {
  if (!fs::exists(kDaemon)) GTEST_SKIP() << kDaemon << " is not built";
  if (!sim::rtl_model_available()) GTEST_SKIP() << "this build has no RTL model";
  const fs::path dir = testing::make_temp_dir("fpgad_test");
  UdpSocket w;
  const fs::path job = dir / "job.json";
  std::ofstream(job) << fmt::format(R"({{"job_id": 1, "slots": {{"base": 0, "count": 1}},
      "elements_per_packet": 16, "workers": [{}]}})",
                                    worker_json(0, w.local()));
  const fs::path trace = dir / "trace.fst";
  Daemon d(dir, {"--job", job.string(), "--listen", "127.0.0.1:0", "--model", "rtl", "--trace",
                 trace.string(), "--quiet"});
  const Endpoint agg = d.wait_listening();
  w.send_to(agg, contribution(1, 0, 0, 0, 0, std::vector<std::int32_t>(16, 3)));
  const auto bytes = w.receive();
  ASSERT_TRUE(bytes);
  EXPECT_THAT(parse_result(*bytes).values, ::testing::Each(3));
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
  ASSERT_TRUE(fs::exists(trace));
  EXPECT_GT(fs::file_size(trace), 1000u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// netagg-switchd as a process: started on loopback with a job file, driven from UDP sockets bound
// to the workers' addresses, stopped with signals. Every port is picked by the kernel, so tests
// running in parallel do not collide.
#include <signal.h>
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregator_scenarios.hpp"
#include "daemon.hpp"
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

const fs::path kDaemon = fs::path(NETAGG_BINARY_DIR) / "sim" / "switch" / "netagg-switchd";

// The daemon as a child process, with what only netagg-switchd does.
class Daemon : public AggregatorDaemon {
 public:
  Daemon(const fs::path& dir, std::vector<std::string> args)
      : AggregatorDaemon(kDaemon, dir, std::move(args)) {}

  // Requests counters until packets_in reaches `packets`: then the daemon has processed every
  // datagram sent to it.
  Counters wait_for_packets_in(std::uint64_t packets) {
    return wait_for_counter("packets_in", packets);
  }

  // Sends SIGHUP and returns the daemon's report, up to its "done" or "failed" line.
  std::string reload() {
    const std::size_t reports = count_reload_reports(stdout_text());
    const std::size_t from = stdout_text().size();
    signal(SIGHUP);
    EXPECT_TRUE(read_until([&](const std::string& s) { return count_reload_reports(s) > reports; }))
        << "no SIGHUP report; stdout: " << stdout_text();
    return stdout_text().substr(from);
  }
  static std::size_t count_reload_reports(const std::string& s) {
    std::size_t n = 0;
    for (const char* last_line : {"netagg-switchd: SIGHUP: done", "netagg-switchd: SIGHUP: failed"})
      for (auto at = s.find(last_line); at != std::string::npos; at = s.find(last_line, at + 1))
        if (s.find('\n', at) != std::string::npos) ++n;
    return n;
  }
};

class SwitchdTest : public testing::ScratchTest {
 protected:
  SwitchdTest() : ScratchTest(kDaemon, "switchd_test") {}
};

// With `threads` > 1 the daemon serves from that many threads, slots split between them: every
// answer and counter must be the same as with one, and every datagram must reach the thread
// that owns its slot.
void reduces_answers_and_counts_everything(
    const fs::path& dir_, unsigned threads,
    const std::function<fs::path(const std::string&, const std::string&)>& write) {
  using J = TwoJobs;
  J jobs;
  const fs::path job_file = write("jobs.json", jobs.job_file());
  const fs::path json = dir_ / "counters.json";
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", job_file.string(), "--slots", "32",
                  "--counters-json", json.string(), "--threads", std::to_string(threads)});
  const Endpoint sw = d.wait_listening();
  EXPECT_EQ(sw.ip, 0x7F000001u);
  EXPECT_NE(sw.port, 0);

  jobs.reduce_and_retransmit(sw);
  // Junk, each kind once, and an fp32 contribution, which the switch does not add. Only the drops
  // a worker can act on are answered: with a notice to the sender.
  jobs.send_junk(sw);
  auto fp32 = contribution(J::kJob, 0, J::kBase, 0, 100, {1, 2, 3});
  fp32[wire::offset::kDtype] = std::byte(wire::DataType::kFp32);
  jobs.workers[0].send_to(sw, fp32);  // unsupported dtype
  // A round with a duplicate and a count mismatch, left incomplete: slot kBase, set 0 (P = 8).
  auto& workers = jobs.workers;
  workers[0].send_to(sw, contribution(J::kJob, 0, J::kBase, 0, 8, {1, 2, 3}));
  workers[0].send_to(sw, contribution(J::kJob, 0, J::kBase, 0, 8, {1, 2, 3}));  // duplicate
  workers[1].send_to(sw, contribution(J::kJob, 1, J::kBase, 0, 8, {1, 2}));     // count mismatch

  constexpr std::uint32_t kPackets = J::kPackets;
  const std::uint64_t results_packets = J::kRoundDatagrams;
  const std::uint64_t junk = J::kJunk + 1, round = 3;
  const std::uint64_t sent = results_packets + junk + round;
  const Counters mid = d.wait_for_packets_in(sent);
  EXPECT_EQ(mid.at("results_resent"), 1u);
  // Foreign source (the stranger's, the first of two), unknown job, rank, slot (the first of
  // two), count too large, dtype, duplicate (the round waits for ranks 1 and 2), count mismatch
  // (rank 1's).
  EXPECT_EQ(notices_received(jobs.stranger, 1, sw), (Notices{{"foreign_source", 0}}));
  // threads > 1: in the threads' order, so sorted
  EXPECT_EQ(notices_received(workers[0], 6, sw), (Notices{{"count_too_large_for_job", 0},
                                                          {"duplicate", 0b110},
                                                          {"rank_out_of_range", 0},
                                                          {"slot_out_of_range", 0},
                                                          {"unknown_job", 0},
                                                          {"unsupported_dtype", 0}}));
  EXPECT_EQ(notices_received(workers[1], 1, sw), (Notices{{"count_mismatch", 0}}));
  const std::uint64_t notices = 8;
  jobs.expect_nothing_pending();

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
  const Counters exit_text = d.last_counters();
  EXPECT_THAT(d.stdout_text(), HasSubstr("netagg-switchd: counters (exit):"));
  const Counters exit_json = read_json_counters(json);
  EXPECT_EQ(exit_text, exit_json);

  const Counters expected = {
      {"packets_in", sent},
      {"aggregated", 3 * kPackets + 1},
      {"epoch_takeovers", 0},
      {"completions", kPackets},
      {"results_multicast", 3 * kPackets},
      {"results_resent", 1},
      {"sent_to_parent", 0},
      {"resent_to_parent", 0},
      {"results_from_parent", 0},
      {"notices", notices},
      {"dropped_total", junk + 2},
      {"dropped_malformed", 10},
      {"dropped_not_contribution", 1},
      {"dropped_unknown_job", 1},
      {"dropped_rank_out_of_range", 1},
      {"dropped_foreign_source", 2},
      {"dropped_slot_out_of_range", 2},
      {"dropped_unsupported_dtype", 1},
      {"dropped_count_too_large_for_job", 1},
      {"dropped_count_mismatch", 1},
      {"dropped_duplicate", 1},
      {"dropped_stale", 0},
      {"dropped_stale_epoch", 0},
      {"dropped_no_round", 0},
      {"malformed_truncated", 2},
      {"malformed_bad_version", 1},
      {"malformed_bad_type", 1},
      {"malformed_bad_dtype", 1},
      {"malformed_bad_flags", 2},
      {"malformed_count_too_large", 1},
      {"malformed_length_mismatch", 2},
      {"datagrams_sent", 3 * kPackets + 1 + notices},
      {"cross_thread", 0},
      {"send_errors", 0},
  };
  if (threads == 1) {
    EXPECT_EQ(exit_json, expected);
    return;
  }
  // Slot s is thread s mod 3's. The results phase alternates slots 16 and 17 (threads 1 and 2;
  // the retransmission is slot 17's); the junk names slot 16 but for the empty datagram (too
  // short: thread 0) and the two of slots 18 and 0 (thread 0); the open round is slot 16's.
  ASSERT_EQ(threads, 3u);
  Counters split = expected;
  split["datagrams_in_thread_0"] = 3;
  split["datagrams_in_thread_1"] = 3 * kPackets / 2 + (junk - 3) + round;
  split["datagrams_in_thread_2"] = 3 * kPackets / 2 + 1;
  EXPECT_EQ(exit_json, split);
}

TEST_F(SwitchdTest, ReducesAnswersAndCountsEverything) {
  reduces_answers_and_counts_everything(
      dir_, 1, [&](const std::string& n, const std::string& t) { return write(n, t); });
}

TEST_F(SwitchdTest, ThreadsSplitTheSlotsAndAnswerTheSame) {
  reduces_answers_and_counts_everything(
      dir_, 3, [&](const std::string& n, const std::string& t) { return write(n, t); });
}

TEST_F(SwitchdTest, SigintStopsCleanlyAndQuietPrintsNoCounters) {
  UdpSocket w;
  const fs::path job = write("job.json", one_slot_job(w.local()));
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", job.string(), "--quiet"});
  expect_answer_then_quiet_stop_on_sigint(d, w);
}

TEST_F(SwitchdTest, SeveralJobFiles) {
  UdpSocket a0, a1, b0;
  const fs::path ja =
      write("a.json", fmt::format(R"({{"job_id": 1, "slots": {{"base": 0,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}, {}]}})",
                                  worker_json(0, a0.local()), worker_json(1, a1.local())));
  const fs::path jb = write("b.json", fmt::format(R"({{"job_id": 2, "slots": {{"base": 4,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}]}})",
                                                  worker_json(0, b0.local())));
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", ja.string(), "--job", jb.string()});
  const Endpoint sw = d.wait_listening();
  b0.send_to(sw, contribution(2, 0, 5, 1, 9, {7, 8}));
  a0.send_to(sw, contribution(1, 0, 3, 0, 3, {1, 2}));
  a1.send_to(sw, contribution(1, 1, 3, 0, 3, {10, 20}));
  auto rb = b0.receive();
  ASSERT_TRUE(rb);
  EXPECT_THAT(parse_result(*rb).values, ElementsAre(7, 8));
  for (UdpSocket* s : {&a0, &a1}) {
    auto r = s->receive();
    ASSERT_TRUE(r);
    EXPECT_EQ(parse_result(*r).header.job_id, 1);
    EXPECT_THAT(parse_result(*r).values, ElementsAre(11, 22));
  }
  EXPECT_EQ(d.stop(SIGTERM), 0);
  const Counters c = d.last_counters();
  EXPECT_EQ(c.at("completions"), 2u);
  EXPECT_EQ(c.at("datagrams_sent"), 3u);
  EXPECT_THAT(d.stderr_text(), HasSubstr("job 1: 2 workers, slots [0, 4)"));
  EXPECT_THAT(d.stderr_text(), HasSubstr("job 2: 1 workers, slots [4, 8)"));
}

// A job started again from packet 0 finds the slots of its previous run: its packets are stale
// and go unanswered. SIGHUP installs the jobs of the job files afresh and the restart works; a
// reload that fails leaves every job and its slot state alone.
TEST_F(SwitchdTest, SighupReinstallsTheJobsOfTheJobFiles) {
  UdpSocket w0, w1, other;
  const std::string job1 = fmt::format(R"({{"job_id": 1, "slots": {{"base": 0, "count": 1}},
      "elements_per_packet": 2, "workers": [{}, {}]}})",
                                       worker_json(0, w0.local()), worker_json(1, w1.local()));
  const std::string job2 = fmt::format(R"({{"job_id": 2, "slots": {{"base": 1, "count": 1}},
      "elements_per_packet": 1, "workers": [{}]}})",
                                       worker_json(0, other.local()));
  const fs::path file = write("jobs.json", job1);
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", file.string(), "--slots", "4", "--quiet"});
  const Endpoint sw = d.wait_listening();
  std::uint64_t sent = 0;

  // W = 1: packet P to slot 0, set P % 2, seq P. Rank r sends {P, r}.
  auto round = [&](std::uint32_t p) {
    const auto set = static_cast<std::uint8_t>(p % 2);
    w0.send_to(sw, contribution(1, 0, 0, set, p, {std::int32_t(p), 0}));
    w1.send_to(sw, contribution(1, 1, 0, set, p, {std::int32_t(p), 1}));
    sent += 2;
    for (UdpSocket* w : {&w0, &w1}) {
      const auto bytes = w->receive();
      ASSERT_TRUE(bytes) << "no result for packet " << p;
      const Result res = parse_result(*bytes);
      EXPECT_EQ(res.header.seq, p);
      EXPECT_THAT(res.values, ElementsAre(2 * std::int32_t(p), 1));
    }
  };
  for (std::uint32_t p = 0; p < 3; ++p) round(p);

  // The restarted job's packet 0: older than round 2 on set 0, dropped, unanswered.
  w0.send_to(sw, contribution(1, 0, 0, 0, 0, {0, 0}));
  w1.send_to(sw, contribution(1, 1, 0, 0, 0, {0, 1}));
  sent += 2;
  Counters c = d.wait_for_packets_in(sent);
  EXPECT_EQ(c["dropped_stale"], 2u);
  for (UdpSocket* w : {&w0, &w1}) {  // each is told: the set holds a newer round of this epoch
    const auto bytes = w->receive();
    ASSERT_TRUE(bytes);
    const Result res = parse_result(*bytes);
    EXPECT_EQ(res.header.type, wire::MsgType::kNotice);
    EXPECT_THAT(res.values, ElementsAre(int(wire::NoticeReason::kStale)));
  }
  EXPECT_FALSE(w0.has_pending());
  EXPECT_FALSE(w1.has_pending());

  std::string report = d.reload();
  EXPECT_THAT(report, HasSubstr("netagg-switchd: SIGHUP: job 1: 2 workers, slots [0, 1), 2 "
                                "elements per packet (re-installed, slots cleared)"));
  EXPECT_THAT(report, HasSubstr("netagg-switchd: SIGHUP: done, 1 jobs installed from 1 files, "
                                "0 removed"));
  for (std::uint32_t p = 0; p < 2; ++p) round(p);  // the restart works

  // A reload that fails: packet 2's round, half done, survives it.
  w0.send_to(sw, contribution(1, 0, 0, 0, 2, {2, 0}));
  ++sent;
  d.wait_for_packets_in(sent);
  write("jobs.json", R"({"job_id": 1, "slots": )");
  report = d.reload();
  EXPECT_THAT(report, HasSubstr("netagg-switchd: SIGHUP: failed, jobs unchanged: "));
  EXPECT_THAT(report, HasSubstr("not valid JSON"));
  EXPECT_THAT(d.stderr_text(), HasSubstr("SIGHUP: failed, jobs unchanged"));
  write("jobs.json", fmt::format(R"({{"jobs": [{}, {{"job_id": 2, "slots": {{"base": 8,
      "count": 1}}, "elements_per_packet": 1, "workers": [{}]}}]}})",
                                 job1, worker_json(0, other.local())));
  report = d.reload();
  EXPECT_THAT(report, HasSubstr("failed, jobs unchanged: job 2 uses slots [8, 9) but the switch "
                                "pool has 4 slots"));
  w1.send_to(sw, contribution(1, 1, 0, 0, 2, {2, 1}));
  ++sent;
  for (UdpSocket* w : {&w0, &w1}) {
    const auto bytes = w->receive();
    ASSERT_TRUE(bytes);
    EXPECT_THAT(parse_result(*bytes).values, ElementsAre(4, 1));
  }

  // The file now holds job 2 only: job 1 is removed, job 2 serves.
  write("jobs.json", job2);
  report = d.reload();
  EXPECT_THAT(report, HasSubstr("job 2: 1 workers, slots [1, 2), 1 elements per packet (new, "
                                "slots cleared)"));
  EXPECT_THAT(report, HasSubstr("job 1: removed, slots [0, 1) cleared"));
  EXPECT_THAT(report, HasSubstr("done, 1 jobs installed from 1 files, 1 removed"));
  w0.send_to(sw, contribution(1, 0, 0, 1, 3, {3, 0}));
  other.send_to(sw, contribution(2, 0, 1, 0, 0, {42}));
  sent += 2;
  const auto bytes = other.receive();
  ASSERT_TRUE(bytes);
  EXPECT_THAT(parse_result(*bytes).values, ElementsAre(42));
  c = d.wait_for_packets_in(sent);
  EXPECT_EQ(c["dropped_unknown_job"], 1u);
  {  // job 1's worker is told: the switch has no job 1 any more
    const auto notice = w0.receive();
    ASSERT_TRUE(notice);
    EXPECT_EQ(parse_result(*notice).header.type, wire::MsgType::kNotice);
    EXPECT_THAT(parse_result(*notice).values, ElementsAre(int(wire::NoticeReason::kUnknownJob)));
  }
  EXPECT_FALSE(w0.has_pending());

  // A job whose description changed is reported as such.
  write("jobs.json", fmt::format(R"({{"job_id": 2, "slots": {{"base": 1, "count": 2}},
      "elements_per_packet": 1, "workers": [{}]}})",
                                 worker_json(0, other.local())));
  EXPECT_THAT(d.reload(), HasSubstr("job 2: 1 workers, slots [1, 3), 1 elements per packet "
                                    "(changed, slots cleared)"));

  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
}

// --max-gbps: contributions are processed at most at the rate, counted without any timed
// assertion: by the time t after the first send, at most 1 + (t + slack) / (size * 8 / rate) of
// them can have been processed, whatever the machine's load; that bound is an upper bound on a
// count, so a slow machine only makes it weaker, never false. All of them are answered in the end.
TEST_F(SwitchdTest, MaxGbpsLimitsHowFastContributionsAreProcessed) {
  constexpr std::uint16_t kJob = 3, kWindow = 16, kElements = 256;
  constexpr double kGbps = 1e-4;  // 100 kbit/s: a 1046-byte contribution every 83.68 ms
  UdpSocket worker;
  const fs::path job =
      write("job.json", fmt::format(R"({{"job_id": {}, "slots": {{"base": 0,
      "count": {}}}, "elements_per_packet": {}, "workers": [{}]}})",
                                    kJob, kWindow, kElements, worker_json(0, worker.local())));
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", job.string(), "--max-gbps",
                  fmt::format("{}", kGbps)});
  const Endpoint sw = d.wait_listening();
  const std::size_t bytes = wire::kHeaderSize + 4 * kElements;
  const auto per_packet = std::chrono::nanoseconds(std::llround(bytes * 8 / kGbps));
  constexpr auto kSlack = std::chrono::microseconds(500);  // the daemon's RateLimiter::kSlack

  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t p = 0; p < kWindow; ++p)
    worker.send_to(sw, contribution(kJob, 0, static_cast<std::uint16_t>(p), 0, p,
                                    std::vector<std::int32_t>(kElements, std::int32_t(p))));
  std::this_thread::sleep_for(3 * per_packet);  // lets some be processed; not a measurement
  const Counters mid = d.request_counters();
  const auto t1 = std::chrono::steady_clock::now();
  const std::uint64_t bound = 1 + static_cast<std::uint64_t>((t1 - t0 + kSlack) / per_packet);
  EXPECT_LE(mid.at("packets_in"), bound)
      << "processed faster than " << kGbps << " Gbit/s within " << (t1 - t0).count() << " ns";
  EXPECT_EQ(mid.at("rate_limit_drops"), 0u);

  // Every contribution completes its round (one worker) and is answered.
  for (std::uint32_t p = 0; p < kWindow; ++p) {
    const auto got = worker.receive();
    ASSERT_TRUE(got) << "no result for packet " << p;
    const Result r = parse_result(*got);
    EXPECT_EQ(r.header.seq, p);
    EXPECT_EQ(r.values, std::vector<std::int32_t>(kElements, std::int32_t(p)));
  }
  const Counters end = d.wait_for_packets_in(kWindow);
  EXPECT_EQ(end.at("completions"), kWindow);
  EXPECT_EQ(end.at("rate_limit_drops"), 0u);
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
}

// --rate-queue bounds the contributions waiting for the rate (the rest are dropped and counted),
// and a result from the parent passes them at once: at a rate that serves one contribution per
// 2.4 s, the parent's result is multicast to the worker while four contributions still wait.
TEST_F(SwitchdTest, RateQueueDropsAndResultsFromTheParentPassAtOnce) {
  constexpr std::uint16_t kWindow = 16;
  constexpr std::uint64_t kQueue = 4, kBacklog = 10;
  UdpSocket worker, parent;
  const fs::path job = write("tree.json", fmt::format(R"({{"job_id": 9, "elements_per_packet": 2,
      "workers": [{}], "trees": [{{"window": {}, "aggregators": [
        {{"name": "root", "address": "{}"}},
        {{"name": "leaf", "address": "127.0.0.1:1", "parent": "root", "workers": [0]}}]}}]}})",
                                                      worker_json(0, worker.local()), kWindow,
                                                      parent.local().to_string()));
  // 100 bit/s: a 30-byte contribution every 2.4 s.
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", job.string(), "--as", "leaf", "--max-gbps",
                  "1e-7", "--rate-queue", std::to_string(kQueue)});
  const Endpoint sw = d.wait_listening();
  // The first contribution is served at once and completes the leaf's round: it goes up.
  worker.send_to(sw, contribution(9, 0, 0, 0, 0, {1, 2}));
  Endpoint from;
  const auto up = parent.receive(&from);
  ASSERT_TRUE(up) << "the leaf sent nothing to its parent";
  EXPECT_EQ(from, sw);
  // A backlog: kQueue of it waits, the rest is dropped.
  for (std::uint32_t p = 1; p <= kBacklog; ++p)
    worker.send_to(sw, contribution(9, 0, static_cast<std::uint16_t>(p), 0, p, {1, 2}));
  // The parent answers round 0: its result passes the queue.
  std::vector<std::byte> result = *up;
  result[wire::offset::kType] = std::byte(wire::MsgType::kResult);
  parent.send_to(sw, result);
  const auto down = worker.receive();
  ASSERT_TRUE(down) << "the parent's result did not reach the worker";
  const Result r = parse_result(*down);
  EXPECT_EQ(r.header.seq, 0u);
  EXPECT_EQ(r.values, (std::vector<std::int32_t>{1, 2}));

  const Counters c = d.wait_for_counter("results_from_parent", 1);
  // One contribution may have been served while the others waited (a stall of 2.4 s here), and
  // then one more fits in the queue: drops are kBacklog - kQueue, or one fewer.
  EXPECT_GE(c.at("rate_limit_drops"), kBacklog - kQueue - 1);
  EXPECT_LE(c.at("rate_limit_drops"), kBacklog - kQueue);
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();
}

// A job whose "aggregator" the daemon's socket does not receive (another port; another IP unless
// the daemon listens on 0.0.0.0) is refused: its workers would send there and get no answer. At
// start the daemon exits 2 with both addresses and the fixes; on SIGHUP the jobs stay as they were.
TEST_F(SwitchdTest, AJobWhoseAggregatorIsNotTheListenAddressIsRefused) {
  UdpSocket w;
  const fs::path file = write("job.json", job_of_another_aggregator(w.local()));
  {
    Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", file.string()});
    expect_job_of_another_aggregator_refused(d, file.string());
  }

  // Reloads: the daemon's own address is accepted, another IP on its port is not.
  write("job.json", one_slot_job(w.local()));
  Daemon d(dir_, {"--listen", "127.0.0.1:0", "--job", file.string()});
  const Endpoint sw = d.wait_listening();
  write("job.json", one_slot_job(w.local(), sw));
  EXPECT_THAT(d.reload(), HasSubstr("netagg-switchd: SIGHUP: done, 1 jobs installed"));
  const Endpoint other_ip{0x7F000002, sw.port};
  write("job.json", one_slot_job(w.local(), other_ip));
  EXPECT_THAT(d.reload(),
              HasSubstr(fmt::format("netagg-switchd: SIGHUP: failed, jobs unchanged: {}: job 1: "
                                    "its workers send to {} (the job's \"aggregator\"), but this "
                                    "daemon listens on {} (a port the kernel chose",
                                    file.string(), other_ip.to_string(), sw.to_string())));
  EXPECT_EQ(d.stop(SIGTERM), 0) << d.stderr_text();

  // On the wildcard address every IP of the port is the daemon's.
  write("job.json", one_slot_job(w.local()));
  Daemon any(dir_, {"--listen", "0.0.0.0:0", "--job", file.string()});
  const Endpoint bound = any.wait_listening();
  EXPECT_EQ(bound.ip, 0u);
  write("job.json", one_slot_job(w.local(), Endpoint{0x7F000001, bound.port}));
  EXPECT_THAT(any.reload(), HasSubstr("netagg-switchd: SIGHUP: done, 1 jobs installed"));
  write("job.json", job_of_another_aggregator(w.local()));
  EXPECT_THAT(any.reload(), HasSubstr("SIGHUP: failed, jobs unchanged"));
  EXPECT_EQ(any.stop(SIGTERM), 0) << any.stderr_text();
}

// Bad configuration: exit code 2 and a message naming the problem, before any "listening" line.
TEST_F(SwitchdTest, BadConfigurationExitsWithTwo) {
  UdpSocket w, busy;
  const std::string workers33 = [&] {
    std::string s;
    for (int r = 0; r < 33; ++r)
      s += fmt::format("{}{}", r ? ", " : "",
                       worker_json(r, Endpoint{0x7F000001, std::uint16_t(45000 + r)}));
    return s;
  }();
  const fs::path good = write("good.json", fmt::format(R"({{"job_id": 1, "slots": {{"base": 0,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}]}})",
                                                       worker_json(0, w.local())));
  const fs::path too_many = write("33.json", fmt::format(R"({{"job_id": 3, "slots": {{"base": 0,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}]}})",
                                                         workers33));
  const fs::path overlap = write("overlap.json", fmt::format(R"({{"job_id": 2, "slots": {{"base": 3,
      "count": 4}}, "elements_per_packet": 2, "workers": [{}]}})",
                                                             worker_json(0, w.local())));
  const fs::path big = write("big.json", fmt::format(R"({{"job_id": 4, "slots": {{"base": 0,
      "count": 4}}, "elements_per_packet": 64, "workers": [{}]}})",
                                                     worker_json(0, w.local())));
  const fs::path broken = write("broken.json", R"({"job_id": 1, "slots": )");
  const std::string busy_addr = busy.local().to_string();

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--listen", "127.0.0.1:0", "--job", (dir_ / "missing.json").string()},
       (dir_ / "missing.json").string() + ": cannot open"},
      {{"--listen", "127.0.0.1:0", "--job", broken.string()}, "not valid JSON"},
      {{"--listen", "127.0.0.1:0", "--job", too_many.string()}, "worker bitmap allows at most 32"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--job", overlap.string()},
       "overlap slots [0, 4) of job 1"},
      {{"--listen", "127.0.0.1:0", "--job", big.string(), "--max-elements", "32"},
       "elements_per_packet 64 is out of range [1, 32]"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--slots", "2"},
       "uses slots [0, 4) but the switch pool has 2 slots"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--slots", "0"}, "pool size 0"},
      {{"--listen", busy_addr, "--job", good.string()}, "cannot listen on " + busy_addr},
      {{"--listen", "localhost:1", "--job", good.string()}, "is not an IPv4 address"},
      {{"--listen", "127.0.0.1:70000", "--job", good.string()}, "is not a port"},
      {{"--listen", "127.0.0.1:0"}, "--job is required"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--bogus"}, "bogus"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--max-gbps", "-1"}, "--max-gbps"},
      {{"--listen", "127.0.0.1:0", "--job", good.string(), "--max-gbps", "1", "--rate-queue", "0"},
       "--rate-queue"},
  };
  for (const Case& c : cases) {
    Daemon d(dir_, c.args);
    EXPECT_EQ(d.wait_exit(), 2) << fmt::format("{}", fmt::join(c.args, " "));
    EXPECT_THAT(d.stderr_text() + d.stdout_text(), HasSubstr(c.message))
        << fmt::format("{}", fmt::join(c.args, " "));
    EXPECT_THAT(d.stdout_text(), ::testing::Not(HasSubstr("listening")));
  }
}

}  // namespace
}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The mistakes a user makes when launching workers by hand against netagg-switchd, each named
// within 2 s by the workers themselves: a rank that never starts, a run token used again, a job
// the aggregator does not know, a world size that is not the job's. (Nothing listening at the
// aggregator's address: e2e_test.cpp, NothingListeningAtTheAggregatorEndsTheRunAtOnce.) The 2 s
// bound is the promise tested, not a speed: the workers' job timeout is 10 s, so a mistake that
// were not named would take five times as long.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "child_process.hpp"
#include "daemon.hpp"

namespace {

namespace fs = std::filesystem;
using netagg::sim::ChildOptions;
using netagg::sim::ChildProcess;
using netagg::sim::ChildStderr;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

const std::string kWorker = std::string(NETAGG_BINARY_DIR) + "/host/tools/netagg-allreduce";
const std::string kSwitchd = std::string(NETAGG_BINARY_DIR) + "/sim/switch/netagg-switchd";
constexpr auto kNamedWithin = std::chrono::seconds(2);
constexpr auto kGuard = std::chrono::seconds(30);

// A loopback UDP port the kernel gave a socket a moment ago (closed again before use).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

class Mistakes : public ::testing::Test {
 protected:
  Mistakes() : dir_(netagg::testing::make_temp_dir("mistakes")), aggregator_(free_port()) {
    for (auto& p : ports_) p = free_port();
    write_job("job.json", 1);
    daemon_.emplace(
        "netagg-switchd",
        netagg::testing::command(kSwitchd, {"--listen", fmt::format("127.0.0.1:{}", aggregator_),
                                            "--job", (dir_ / "job.json").string(), "--quiet"}),
        dir_, kGuard);
    daemon_->wait_listening();
  }
  ~Mistakes() override {
    workers_.clear();
    if (daemon_) daemon_->stop(SIGTERM);
    fs::remove_all(dir_);
  }

  // A job of three workers at ports_ (the daemon's: job 1), through the daemon.
  fs::path write_job(const std::string& name, int job_id) {
    const fs::path file = dir_ / name;
    std::ofstream(file) << fmt::format(
        R"({{"job_id": {}, "aggregator": "127.0.0.1:{}", "slots": {{"base": 0, "count": 8}},
  "elements_per_packet": 64, "workers": [
  {{"rank": 0, "address": "127.0.0.1:{}"}}, {{"rank": 1, "address": "127.0.0.1:{}"}},
  {{"rank": 2, "address": "127.0.0.1:{}"}}]}})",
        job_id, aggregator_, ports_[0], ports_[1], ports_[2]);
    return file;
  }

  // Starts netagg-allreduce as `rank` of the job in `job`, with run token `epoch`.
  ChildProcess& start(int rank, const fs::path& job, const std::string& epoch,
                      std::vector<std::string> env = {}) {
    ChildOptions options;
    options.stderr_to = ChildStderr::kFile;
    options.stderr_file = dir_ / fmt::format("worker-{}-{}.err", rank, workers_.size());
    options.set_env = std::move(env);
    options.set_env.push_back("NETAGG_FALLBACK=off");
    options.unset_env = {"NETAGG_EPOCH", "NETAGG_WORLD_SIZE", "NETAGG_RANK"};
    workers_.emplace_back(std::vector<std::string>{kWorker, "--rank", std::to_string(rank), "--job",
                                                   job.string(), "--epoch", epoch, "--count",
                                                   "2000", "--dtype", "int32", "--timeout", "10"},
                          options);
    return workers_.back();
  }

  // Waits (up to the guard) until the worker has exited; its exit code.
  static int wait_exit(ChildProcess& w) {
    if (!w.wait_exit(Clock::now() + kGuard)) {
      ADD_FAILURE() << "a worker still runs after " << kGuard.count() << " s; killed";
      w.signal(SIGKILL);
      w.wait_exit();
    }
    return w.exit_code().value_or(-1);
  }

  // Polls the worker's stderr until it holds `text` or `limit` has passed; whether it does.
  static bool stderr_says(const ChildProcess& w, const std::string& text, Clock::duration limit) {
    const auto until = Clock::now() + limit;
    while (w.stderr_text().find(text) == std::string::npos) {
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  fs::path dir_;
  std::uint16_t aggregator_;
  std::uint16_t ports_[3]{};
  std::optional<netagg::testing::DaemonProcess> daemon_;
  std::deque<ChildProcess> workers_;
};

// Two of three ranks start: each is told, by the aggregator's answer to its retransmissions,
// whom the round waits for, and says so while it keeps waiting (a rank may start late).
TEST_F(Mistakes, ARankThatNeverStartsIsNamedWithin2s) {
  const fs::path job = dir_ / "job.json";
  const auto start_time = Clock::now();
  ChildProcess& r0 = start(0, job, "101");
  ChildProcess& r1 = start(1, job, "101");
  for (ChildProcess* w : {&r0, &r1})
    EXPECT_TRUE(stderr_says(*w, "rank 2 has not contributed to any round of this all-reduce",
                            kNamedWithin - (Clock::now() - start_time)))
        << w->stderr_text();
  EXPECT_THAT(r0.stderr_text(), HasSubstr("is it running, with this job and epoch?"));
  // Rank 2 starts after all: the all-reduce completes.
  ChildProcess& r2 = start(2, job, "101");
  for (ChildProcess* w : {&r0, &r1, &r2}) EXPECT_EQ(wait_exit(*w), 0) << w->stderr_text();
}

// A run started again with the token of a finished run: the aggregator holds that run's later
// rounds and drops the new packets as stale; each worker ends with an error that says to set a
// new NETAGG_EPOCH.
TEST_F(Mistakes, AReusedRunTokenEndsTheRunWithin2s) {
  const fs::path job = dir_ / "job.json";
  for (int r = 0; r < 3; ++r) start(r, job, "202");
  for (auto& w : workers_) ASSERT_EQ(wait_exit(w), 0) << w.stderr_text();
  workers_.clear();
  const auto start_time = Clock::now();
  for (int r = 0; r < 3; ++r) start(r, job, "202");
  for (auto& w : workers_) {
    EXPECT_EQ(wait_exit(w), 3) << w.stderr_text();
    EXPECT_THAT(w.stderr_text(), AllOf(HasSubstr("error (rejected)"), HasSubstr("as another run's"),
                                       HasSubstr("new NETAGG_EPOCH")));
  }
  EXPECT_LT(Clock::now() - start_time, kNamedWithin);
}

// The worker's job file names a job the aggregator does not have (a job removed, replaced, or
// never installed there).
TEST_F(Mistakes, AJobTheAggregatorDoesNotKnowEndsTheRunWithin2s) {
  const fs::path job = write_job("other.json", 9);
  const auto start_time = Clock::now();
  ChildProcess& w = start(0, job, "303");
  EXPECT_EQ(wait_exit(w), 3) << w.stderr_text();
  EXPECT_LT(Clock::now() - start_time, kNamedWithin);
  EXPECT_THAT(w.stderr_text(), AllOf(HasSubstr("error (rejected)"), HasSubstr("it has no job 9")));
}

// NETAGG_WORLD_SIZE (what a launcher says) is not the job's worker count.
TEST_F(Mistakes, AWorldSizeThatIsNotTheJobsEndsTheRunAtOnce) {
  const auto start_time = Clock::now();
  ChildProcess& w = start(0, dir_ / "job.json", "404", {"NETAGG_WORLD_SIZE=2"});
  EXPECT_EQ(wait_exit(w), 2) << w.stderr_text();
  EXPECT_LT(Clock::now() - start_time, kNamedWithin);
  EXPECT_THAT(w.stderr_text(), HasSubstr("NETAGG_WORLD_SIZE=2 but the job has 3 workers"));
}

}  // namespace

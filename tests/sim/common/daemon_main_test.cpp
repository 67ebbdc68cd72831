// SPDX-License-Identifier: Apache-2.0
// What the aggregator daemons share around their serving loop (sim/common/daemon_main.hpp): the
// check of the jobs' "aggregator" against the address the daemon listens on.
#include "daemon_main.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr std::uint32_t kLoopback = 0x7F000001;

class JobAggregatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           fmt::format("daemon_main_test-{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A job file of job 1 with `aggregator` ("": none) and one worker.
  std::vector<std::string> job_file(const std::string& aggregator) const {
    const fs::path file = dir_ / "job.json";
    std::ofstream(file) << fmt::format(
        R"({{"job_id": 1, "slots": {{"base": 0, "count": 2}}, "elements_per_packet": 4,
            {}"workers": [{{"rank": 0, "address": "127.0.0.1:40000"}}]}})",
        aggregator.empty() ? "" : fmt::format(R"("aggregator": "{}", )", aggregator));
    return {file.string()};
  }

  // The message check_job_aggregators refuses with; "" if it accepts.
  static std::string refusal(const std::vector<std::string>& files, const Endpoint& requested,
                             const Endpoint& bound) {
    try {
      check_job_aggregators(files, requested, bound);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig);
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(JobAggregatorTest, TheListenAddressOrNoAggregatorIsAccepted) {
  const Endpoint at{kLoopback, 20033};
  EXPECT_EQ(refusal(job_file("127.0.0.1:20033"), at, at), "");
  EXPECT_EQ(refusal(job_file(""), at, at), "");
  // Port 0 asked for, the bound port named in the job (a launcher that wrote it afterwards).
  EXPECT_EQ(refusal(job_file("127.0.0.1:20033"), Endpoint{kLoopback, 0}, at), "");
  // The wildcard address receives on every IP of its port.
  const Endpoint any{0, 20033};
  EXPECT_EQ(refusal(job_file("10.0.0.254:20033"), any, any), "");
  EXPECT_EQ(refusal(job_file("127.0.0.1:20033"), any, any), "");
}

TEST_F(JobAggregatorTest, AnotherPortOrAnotherIpIsRefusedNamingBothAndTheFixes) {
  const auto files = job_file("127.0.0.1:20033");
  const Endpoint other_port{kLoopback, 20034};
  EXPECT_EQ(refusal(files, other_port, other_port),
            fmt::format("{}: job 1: its workers send to 127.0.0.1:20033 (the job's "
                        "\"aggregator\"), but this daemon listens on 127.0.0.1:20034: they would "
                        "get no answer. Start it with --listen 127.0.0.1:20033, or set the job's "
                        "\"aggregator\" to 127.0.0.1:20034, or leave the job's \"aggregator\" out "
                        "and give the workers the address (NETAGG_AGGREGATOR, netagg-allreduce "
                        "--target)",
                        files[0]));
  const Endpoint other_ip{0x7F000002, 20033};
  EXPECT_THAT(refusal(files, other_ip, other_ip),
              HasSubstr("send to 127.0.0.1:20033 (the job's \"aggregator\"), but this daemon "
                        "listens on 127.0.0.2:20033: they would get no answer"));
  // The wildcard address on another port receives nothing sent to the job's.
  EXPECT_THAT(refusal(files, Endpoint{0, 20034}, Endpoint{0, 20034}),
              HasSubstr("but this daemon listens on 0.0.0.0:20034"));
  // A port the kernel chose is not suggested for the job.
  EXPECT_EQ(refusal(files, Endpoint{kLoopback, 0}, Endpoint{kLoopback, 45678}),
            fmt::format("{}: job 1: its workers send to 127.0.0.1:20033 (the job's "
                        "\"aggregator\"), but this daemon listens on 127.0.0.1:45678 (a port the "
                        "kernel chose for --listen 127.0.0.1:0): they would get no answer. Start "
                        "it with --listen 127.0.0.1:20033, or leave the job's \"aggregator\" out "
                        "and give the workers the address (NETAGG_AGGREGATOR, netagg-allreduce "
                        "--target)",
                        files[0]));
}

// A job with trees: each aggregator's part has the address its tree gives it (found by --as or
// by the daemon's address), so the job's own "aggregator" is not the daemon's to check.
TEST_F(JobAggregatorTest, AJobWithTreesIsLeftToItsTrees) {
  const fs::path file = dir_ / "tree.json";
  std::ofstream(file) << R"({"job_id": 7, "elements_per_packet": 2,
      "workers": [{"rank": 0, "address": "127.0.0.1:40000"}],
      "trees": [{"window": 2, "aggregators": [
        {"name": "root", "address": "127.0.0.1:11"},
        {"name": "leaf", "address": "127.0.0.1:12", "parent": "root", "workers": [0]}]}]})";
  const Endpoint at{kLoopback, 20033};
  EXPECT_EQ(refusal({file.string()}, at, at), "");
}

}  // namespace
}  // namespace netagg::sim

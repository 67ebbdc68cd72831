// SPDX-License-Identifier: Apache-2.0
#include "netagg/job.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "netagg/error.hpp"

namespace netagg {
namespace {

using ::testing::HasSubstr;

constexpr const char* kGood = R"({
  "job_id": 7,
  "slots": {"base": 128, "count": 64},
  "elements_per_packet": 256,
  "aggregator": "10.0.0.254:20033",
  "workers": [
    {"rank": 1, "address": "10.0.0.2:31001", "mac": "02:00:00:00:00:02", "switch_port": 5},
    {"rank": 0, "address": "10.0.0.1:31000"}
  ]
})";

std::string config_error_of(const std::string& text) {
  try {
    parse_job(text, "test.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    return e.what();
  }
  return "no error";
}

TEST(Job, ParsesEveryField) {
  const JobSpec job = parse_job(kGood);
  EXPECT_EQ(job.job_id, 7);
  EXPECT_EQ(job.slot_base, 128);
  EXPECT_EQ(job.slot_count, 64);
  EXPECT_EQ(job.elements_per_packet, 256);
  ASSERT_TRUE(job.aggregator);
  EXPECT_EQ(job.aggregator->to_string(), "10.0.0.254:20033");
  ASSERT_EQ(job.world_size(), 2u);
  EXPECT_EQ(job.workers[0].address.to_string(), "10.0.0.1:31000");  // sorted by rank
  EXPECT_EQ(job.workers[1].rank, 1);
  ASSERT_TRUE(job.workers[1].mac);
  EXPECT_EQ((*job.workers[1].mac)[5], 2);
  EXPECT_EQ(job.workers[1].switch_port, 5);
  EXPECT_FALSE(job.workers[0].mac);
  EXPECT_EQ(job.find_worker(Endpoint::parse("10.0.0.2:31001")), &job.workers[1]);
  EXPECT_EQ(job.find_worker(Endpoint::parse("10.0.0.2:31000")), nullptr);
}

TEST(Job, JsonRoundTrip) {
  const JobSpec job = parse_job(kGood);
  const JobSpec again = parse_job(to_json(job));
  EXPECT_EQ(to_json(again), to_json(job));
  EXPECT_EQ(again.workers[1].mac, job.workers[1].mac);
}

TEST(Job, ErrorsNameTheField) {
  EXPECT_THAT(config_error_of("{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(
      config_error_of(R"({"slots":{"base":0,"count":1},"elements_per_packet":1,"workers":[]})"),
      HasSubstr("test.json: job_id: missing"));
  EXPECT_THAT(config_error_of(R"({"job_id":-1})"),
              HasSubstr("job_id: must be a non-negative integer"));
  EXPECT_THAT(config_error_of(R"({"job_id":70000})"), HasSubstr("job_id: 70000 is out of range"));
  EXPECT_THAT(config_error_of(R"({"job_id":1,"slots":{"base":0,"count":0}})"),
              HasSubstr("slots.count: 0 is out of range"));
  EXPECT_THAT(
      config_error_of(R"({"job_id":1,"slots":{"base":65535,"count":2},"elements_per_packet":4})"),
      HasSubstr("slots: base + count exceeds"));
  EXPECT_THAT(
      config_error_of(R"({"job_id":1,"slots":{"base":0,"count":2},"elements_per_packet":2000})"),
      HasSubstr("elements_per_packet: 2000 is out of range [1, 1024]"));
  const std::string head = R"({"job_id":1,"slots":{"base":0,"count":2},"elements_per_packet":4,)";
  EXPECT_THAT(config_error_of(head + R"("workers":[]})"),
              HasSubstr("workers: must be a non-empty array"));
  EXPECT_THAT(config_error_of(head + R"("workers":[{"rank":1,"address":"1.2.3.4:5"}]})"),
              HasSubstr("workers[0].rank: 1 is out of range [0, 0]"));
  EXPECT_THAT(config_error_of(head + R"("workers":[{"rank":0,"address":"1.2.3:5"}]})"),
              HasSubstr("workers[0].address: '1.2.3' is not an IPv4 address"));
  EXPECT_THAT(config_error_of(head + R"("workers":[{"rank":0,"address":"1.2.3.4:0"}]})"),
              HasSubstr("workers[0].address: '0' is not a port"));
  for (const char* address : {"0.0.0.0:5", "255.255.255.255:5", "224.0.0.1:5", "240.1.2.3:5"}) {
    EXPECT_THAT(config_error_of(head + R"("workers":[{"rank":0,"address":")" + address + R"("}]})"),
                HasSubstr("workers[0].address: " +
                          std::string(address).substr(0, std::string(address).find(':')) +
                          " is not a host address"));
  }
  EXPECT_THAT(config_error_of(head + R"("aggregator":"0.0.0.0:9","workers":[{"rank":0,)"
                                     R"("address":"1.2.3.4:5"}]})"),
              HasSubstr("aggregator: 0.0.0.0 is not a host address"));
  EXPECT_THAT(config_error_of(head + R"("workers":[{"rank":0,"address":"1.2.3.4:5","mac":"zz"}]})"),
              HasSubstr("workers[0].mac: 'zz' is not a MAC"));
  EXPECT_THAT(
      config_error_of(
          head +
          R"("workers":[{"rank":0,"address":"1.2.3.4:5"},{"rank":0,"address":"1.2.3.4:6"}]})"),
      HasSubstr("workers[1].rank: rank 0 twice"));
  EXPECT_THAT(
      config_error_of(
          head +
          R"("workers":[{"rank":0,"address":"1.2.3.4:5"},{"rank":1,"address":"1.2.3.4:5"}]})"),
      HasSubstr("ranks 0 and 1 share address 1.2.3.4:5"));
}

// The example of docs/job-format.md, "Trees", with a tree given as `trees`.
std::string tree_job_text(const std::string& aggregators, const std::string& extra = "") {
  return R"({"job_id": 7, "elements_per_packet": 256, )" + extra + R"("workers": [
    {"rank": 0, "address": "10.0.1.1:31000"}, {"rank": 1, "address": "10.0.1.2:31000"},
    {"rank": 2, "address": "10.0.2.1:31000"}, {"rank": 3, "address": "10.0.2.2:31000"}],
    "trees": [{"job_id": 7, "window": 64, "aggregators": [)" +
         aggregators + "]}]}";
}

constexpr const char* kSpine = R"({"name": "spine", "address": "10.0.0.1:20033"})";
constexpr const char* kLeaf1 =
    R"({"name": "leaf1", "address": "10.0.1.254:20033", "parent": "spine", "workers": [0, 1]})";
constexpr const char* kLeaf2 =
    R"({"name": "leaf2", "address": "10.0.2.254:20033", "parent": "spine", "workers": [2, 3],)"
    R"( "slot_base": 128})";

TEST(Job, ATreeParsesRoundTripsAndGivesEachPartItsJob) {
  const JobSpec job =
      parse_job(tree_job_text(std::string(kSpine) + "," + kLeaf1 + "," + kLeaf2), "test.json");
  ASSERT_EQ(job.trees.size(), 1u);
  const TreeSpec& t = job.trees[0];
  EXPECT_EQ(t.window, 64);
  EXPECT_EQ(t.weight, 1u);
  ASSERT_EQ(t.aggregators.size(), 3u);
  EXPECT_FALSE(t.aggregators[0].parent);
  EXPECT_EQ(t.aggregators[2].parent, 0u);
  EXPECT_EQ(to_json(parse_job(to_json(job))), to_json(job));

  const JobSpec spine = aggregator_view(job, 0, "spine");
  EXPECT_EQ(spine.job_id, 7);
  EXPECT_EQ(spine.slot_base, 0);
  EXPECT_EQ(spine.slot_count, 64);
  ASSERT_EQ(spine.workers.size(), 2u);
  EXPECT_EQ(spine.workers[1].address.to_string(), "10.0.2.254:20033");
  EXPECT_EQ(spine.workers[1].covers, 2);
  EXPECT_FALSE(spine.parent);
  const JobSpec leaf2 = aggregator_view(job, 0, "leaf2");
  EXPECT_EQ(leaf2.slot_base, 128);
  ASSERT_EQ(leaf2.workers.size(), 2u);
  EXPECT_EQ(leaf2.workers[0].address.to_string(), "10.0.2.1:31000");
  ASSERT_TRUE(leaf2.parent);
  EXPECT_EQ(leaf2.parent->rank, 1);
  EXPECT_EQ(leaf2.parent->slot_base, 0);
  // A part written out is an ordinary job file, parent and covers included.
  EXPECT_EQ(parse_job(to_json(leaf2)).parent, leaf2.parent);
  EXPECT_EQ(parse_job(to_json(spine)).workers[1].covers, 2);

  const WorkerView w = worker_view(job, 0, 3);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.job.aggregator->to_string(), "10.0.2.254:20033");
  EXPECT_EQ(jobs_at_aggregator(job, "", Endpoint::parse("10.0.1.254:20033"))[0].slot_base, 0);
  EXPECT_EQ(jobs_at_aggregator(job, "leaf2", std::nullopt)[0].slot_base, 128);
  EXPECT_THROW(jobs_at_aggregator(job, "nobody", std::nullopt), Error);
  EXPECT_THROW(aggregator_view(job, 1, "spine"), Error);
}

TEST(Job, TreeErrorsNameTheField) {
  const std::string spine = kSpine, leaf1 = kLeaf1, leaf2 = kLeaf2;
  EXPECT_THAT(config_error_of(tree_job_text(spine + "," + leaf1 + "," + leaf1)),
              HasSubstr("trees[0].aggregators[2].name: 'leaf1' twice"));
  EXPECT_THAT(
      config_error_of(tree_job_text(
          spine + "," + leaf1 +
          R"(,{"name": "x", "address": "10.0.0.9:1", "parent": "spin", "workers": [2, 3]})")),
      HasSubstr("trees[0].aggregators[2].parent: no aggregator 'spin'"));
  EXPECT_THAT(
      config_error_of(tree_job_text(
          spine + "," + leaf1 + R"(,{"name": "x", "address": "10.0.0.9:1", "workers": [2, 3]})")),
      HasSubstr("a tree has one root (an aggregator without a parent), found 2"));
  EXPECT_THAT(config_error_of(tree_job_text(
                  R"({"name": "a", "address": "10.0.0.1:1", "parent": "b", "workers": [0, 1]},)"
                  R"({"name": "b", "address": "10.0.0.2:1", "parent": "a", "workers": [2, 3]},)"
                  R"({"name": "r", "address": "10.0.0.3:1", "workers": []})")),
              HasSubstr("the parents form a cycle"));
  EXPECT_THAT(
      config_error_of(tree_job_text(
          spine + "," + leaf1 +
          R"(,{"name": "x", "address": "10.0.0.9:1", "parent": "spine", "workers": [1, 2]})")),
      HasSubstr("trees[0].aggregators[2].workers[0]: rank 1 is aggregator 'leaf1''s already"));
  EXPECT_THAT(config_error_of(tree_job_text(spine + "," + leaf1)),
              HasSubstr("rank 2 sends to no aggregator of the tree"));
  EXPECT_THAT(config_error_of(tree_job_text(
                  spine + "," + leaf1 + "," + leaf2 +
                  R"(,{"name": "idle", "address": "10.0.0.9:1", "parent": "spine"})")),
              HasSubstr("trees[0].aggregators[3]: has neither workers nor child aggregators"));
  EXPECT_THAT(
      config_error_of(tree_job_text(
          spine + "," + leaf1 +
          R"(,{"name": "x", "address": "10.0.1.1:31000", "parent": "spine", "workers": [2, 3]})")),
      HasSubstr("aggregators[2].address: 10.0.1.1:31000 is a worker's address"));
  // Without slots a tree needs its window.
  EXPECT_THAT(
      config_error_of(R"({"job_id": 7, "elements_per_packet": 4, "workers": [)"
                      R"({"rank": 0, "address": "10.0.1.1:1"}], "trees": [{"aggregators": [)"
                      R"({"name": "r", "address": "10.0.0.1:1", "workers": [0]}]}]})"),
      HasSubstr("trees[0].window: missing"));
  EXPECT_THAT(config_error_of(R"({"job_id": 7, "elements_per_packet": 4, "workers": [)"
                              R"({"rank": 0, "address": "10.0.1.1:1"}]})"),
              HasSubstr("slots: missing"));
}

TEST(Job, FileWithSeveralJobsChecksOverlapAndIds) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("netagg_job_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "jobs.json";
  const std::string w = R"("workers":[{"rank":0,"address":"127.0.0.1:5000"}])";
  {
    std::ofstream(file)
        << R"({"jobs":[{"job_id":1,"slots":{"base":0,"count":8},"elements_per_packet":4,)" << w
        << R"(},{"job_id":2,"slots":{"base":8,"count":8},"elements_per_packet":4,)" << w << "}]}";
  }
  EXPECT_EQ(load_jobs(file).size(), 2u);
  EXPECT_THROW(load_job(file), Error);
  {
    std::ofstream(file)
        << R"({"jobs":[{"job_id":1,"slots":{"base":0,"count":8},"elements_per_packet":4,)" << w
        << R"(},{"job_id":2,"slots":{"base":7,"count":8},"elements_per_packet":4,)" << w << "}]}";
  }
  try {
    load_jobs(file);
    ADD_FAILURE() << "overlap not detected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("slot ranges of jobs 1 and 2 overlap"));
  }
  EXPECT_THROW(load_jobs(dir / "missing.json"), Error);
  std::filesystem::remove_all(dir);
}

TEST(Job, LocalJob) {
  const JobSpec job = make_local_job(3, 4, 31000, 0, 32, 256, Endpoint::parse("127.0.0.1:20033"));
  ASSERT_EQ(job.world_size(), 4u);
  EXPECT_EQ(job.workers[3].address.to_string(), "127.0.0.1:31003");
  EXPECT_EQ(parse_job(to_json(job)).workers[2].address.port, 31002);
}

}  // namespace
}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The ns-3 fabric end to end, in this process: 8 workers on 2 leaves all-reduce 1 MiB through
// one aggregator and through a two-level tree of switch models, and by ring over TCP; the
// results are checked element by element by the workers, and the timings against what the links
// allow.
#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fabric.hpp"

namespace {

using nlohmann::json;

std::string scenario_text(const std::string& name) {
  std::ifstream in(std::string(NETAGG_FABRIC_SCENARIOS) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw std::runtime_error("no scenario " + name);
  return s.str();
}

json run(const std::string& text, bool* ok = nullptr) {
  const netagg::fabric::RunOutput out =
      netagg::fabric::run_scenario(text, /*quiet=*/true, NETAGG_FABRIC_SCENARIOS);
  if (ok) *ok = out.ok;
  return json::parse(out.result_json);
}

constexpr std::uint64_t kWorkers = 8;
constexpr std::uint64_t kElements = (1u << 20) / 4;

// What any verified in-network run must show.
void expect_verified(const json& m) {
  EXPECT_TRUE(m["completed"].get<bool>());
  EXPECT_TRUE(m["verified"].get<bool>());
  EXPECT_EQ(m["mismatches"].get<std::uint64_t>(), 0u);
  // Every worker checked every element of the tensor.
  EXPECT_EQ(m["elements_checked"].get<std::uint64_t>(), kWorkers * kElements);
  EXPECT_TRUE(m["failures"].empty());
  EXPECT_EQ(m["open_rounds"].get<std::uint64_t>(), 0u);
  // 256 elements a packet: 1024 packets per worker, each answered once.
  EXPECT_EQ(m["packets_sent"].get<std::uint64_t>(), kWorkers * 1024);
}

TEST(Fabric, SingleAggregatorOnTheSpineVerifies) {
  bool ok = false;
  const json r = run(scenario_text("single.json"), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  expect_verified(m);
  EXPECT_EQ(m["aggregators"], json::array({"spine0"}));
  // One switch aggregates all 8 workers: 1024 rounds, each answered to every worker.
  EXPECT_EQ(m["switch"]["completions"].get<std::uint64_t>(), 1024u);
  EXPECT_EQ(m["switch"]["results_multicast"].get<std::uint64_t>(), kWorkers * 1024);
  EXPECT_EQ(m["switch"]["sent_to_parent"].get<std::uint64_t>(), 0u);
  // 4 hosts of a leaf share its one 100 Gbit/s uplink to the aggregator: the all-reduce cannot
  // take less than 4 tensors' time on it, and the uplink's queue must have marked.
  const double uplink_bound = 4.0 * r["ideal"]["innetwork_s"].get<double>();
  EXPECT_GE(m["completion_s"].get<double>(), uplink_bound);
  EXPECT_LT(m["completion_s"].get<double>(), 2 * uplink_bound);
  EXPECT_GT(m["queues"]["ecn_marks"].get<std::uint64_t>(), 0u);
  EXPECT_GT(m["ce_results"].get<std::uint64_t>(), 0u);
}

TEST(Fabric, TreeVerifiesAndBeatsTheRing) {
  bool ok = false;
  const json r = run(scenario_text("tree.json"), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  expect_verified(m);
  // Each leaf aggregates its 4 workers and sends one partial sum per round to the root spine,
  // which answers each leaf once per round.
  EXPECT_EQ(m["aggregators"], json::array({"spine0", "leaf0", "leaf1"}));
  EXPECT_EQ(m["switch"]["sent_to_parent"].get<std::uint64_t>(), 2u * 1024);
  EXPECT_EQ(m["switch"]["results_from_parent"].get<std::uint64_t>(), 2u * 1024);
  EXPECT_EQ(m["switch"]["completions"].get<std::uint64_t>(), 3u * 1024);

  const json& ring = r["ring"];
  EXPECT_TRUE(ring["completed"].get<bool>());
  // Ring all-reduce: 2(N-1) steps of S/N bytes from each worker.
  EXPECT_EQ(ring["steps"].get<unsigned>(), 2 * (kWorkers - 1));
  EXPECT_EQ(ring["bytes_sent_per_worker"].get<std::uint64_t>(),
            2 * (kWorkers - 1) * (1u << 20) / kWorkers);

  // Nothing beats the host link: the in-network time is at least the tensor's time on it, the
  // ring's at least 2(N-1)/N times that.
  const double tree_s = m["completion_s"].get<double>();
  const double ring_s = ring["completion_s"].get<double>();
  EXPECT_GE(tree_s, r["ideal"]["innetwork_s"].get<double>());
  EXPECT_GE(ring_s, r["ideal"]["ring_s"].get<double>());
  EXPECT_DOUBLE_EQ(r["bound"].get<double>(), 2.0 * (kWorkers - 1) / kWorkers);
  // The tree's all-reduce is faster than the ring's.
  EXPECT_LT(tree_s, ring_s);
  EXPECT_NEAR(r["ring_over_innetwork"].get<double>(), ring_s / tree_s, 1e-9);
  EXPECT_GT(m["simulated_packets"].get<std::uint64_t>(), 0u);
  EXPECT_GT(ring["simulated_packets"].get<std::uint64_t>(), 0u);
}

TEST(Fabric, TwoTreesRootedOnTwoSpinesVerify) {
  json s = json::parse(scenario_text("tree.json"));
  s["job"]["trees"] = 2;
  s["modes"] = json::array({"innetwork"});
  bool ok = false;
  const json r = run(s.dump(), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  expect_verified(m);
  EXPECT_EQ(m["aggregators"], json::array({"spine0", "leaf0", "leaf1", "spine1"}));
  // Chunk c goes to tree c mod 2: each leaf sends each of its 1024 rounds up one of the trees.
  EXPECT_EQ(m["switch"]["sent_to_parent"].get<std::uint64_t>(), 2u * 1024);
  EXPECT_EQ(m["job"]["trees"].size(), 2u);
}

TEST(Fabric, TheAggregatorsRateLimitHolds) {
  // The spine aggregates all 8192 contributions at 10 million packets a second: the all-reduce
  // cannot take less than 819.2 us, far above the 335 us its links alone need.
  json s = json::parse(scenario_text("single.json"));
  s["aggregator"] = {{"rate_mpps", 10}};
  bool ok = false;
  const json r = run(s.dump(), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  expect_verified(m);
  EXPECT_GE(m["completion_s"].get<double>(), 8192 / 10e6);
  EXPECT_LT(m["completion_s"].get<double>(), 1.5 * 8192 / 10e6);
  EXPECT_GT(m["aggregator_rate_limit"]["max_backlog"].get<std::uint64_t>(), 1u);
}

TEST(Fabric, BackgroundTrafficSharesTheFabric) {
  json s = json::parse(scenario_text("tree.json"));
  s["background"] = {{"load", 0.3}, {"flow_bytes", 65536}};
  bool ok = false;
  const json r = run(s.dump(), &ok);
  EXPECT_TRUE(ok);
  expect_verified(r["innetwork"]);
  EXPECT_TRUE(r["ring"]["completed"].get<bool>());
  for (const char* mode : {"innetwork", "ring"}) {
    EXPECT_GT(r[mode]["background"]["flows_started"].get<std::uint64_t>(), 0u) << mode;
    EXPECT_GT(r[mode]["background"]["bytes_received"].get<std::uint64_t>(), 0u) << mode;
  }
}

TEST(Fabric, AFatTreeAggregatesAtEveryTier) {
  bool ok = false;
  const json r = run(scenario_text("fattree.json"), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  EXPECT_EQ(r["workers"].get<unsigned>(), 16u);
  EXPECT_TRUE(m["verified"].get<bool>());
  EXPECT_EQ(m["elements_checked"].get<std::uint64_t>(), 16 * kElements);
  EXPECT_EQ(m["open_rounds"].get<std::uint64_t>(), 0u);
  // Tree 0 is rooted at core0, which links to aggregation switch 0 of every pod: 8 edge switches
  // aggregate their 2 hosts each and send up to their pod's agg*_0, the 4 of which send up to
  // core0. 13 aggregators, each completing every one of the 1024 rounds; 12 of them children.
  const json& aggs = m["aggregators"];
  EXPECT_EQ(aggs.size(), 13u);
  EXPECT_EQ(aggs[0], "core0");
  for (const char* name : {"edge0_0", "edge3_1", "agg0_0", "agg3_0"})
    EXPECT_NE(std::find(aggs.begin(), aggs.end(), name), aggs.end()) << name;
  EXPECT_EQ(m["switch"]["completions"].get<std::uint64_t>(), 13u * 1024);
  EXPECT_EQ(m["switch"]["sent_to_parent"].get<std::uint64_t>(), 12u * 1024);
  EXPECT_EQ(m["switch"]["results_from_parent"].get<std::uint64_t>(), 12u * 1024);
  // At the line rate of the hosts' links, as on the leaf-spine.
  EXPECT_GE(m["completion_s"].get<double>(), r["ideal"]["innetwork_s"].get<double>());
  EXPECT_LT(m["completion_s"].get<double>(), 1.2 * r["ideal"]["innetwork_s"].get<double>());
  // The job in netagg's format: three levels.
  std::size_t with_parent_of_parent = 0;
  const json& nodes = m["job"]["trees"][0]["aggregators"];
  for (const json& n : nodes)
    if (n.contains("parent"))
      for (const json& p : nodes)
        if (p["name"] == n["parent"] && p.contains("parent")) ++with_parent_of_parent;
  EXPECT_EQ(with_parent_of_parent, 8u);  // every edge switch is a grandchild of core0
}

// Long TCP flows between hosts on different leaves; which spines carry them depends on ECMP.
json long_flows_run(const std::string& ecmp) {
  json s = json::parse(scenario_text("tree.json"));
  s["topology"]["spines"] = 4;
  s["topology"]["ecmp"] = ecmp;
  s["background"] = {{"long_flows", 8}, {"seed", 3}};
  s["job"]["tensor_bytes"] = 262144;
  s["start_us"] = 200;
  s["modes"] = json::array({"innetwork"});
  bool ok = false;
  json r = run(s.dump(), &ok);
  EXPECT_TRUE(ok) << ecmp;
  return r;
}

TEST(Fabric, LongFlowsAreMeasuredAndEcmpSpreadsThem) {
  for (const char* ecmp : {"none", "per-flow"}) {
    const json r = long_flows_run(ecmp);
    const json& m = r["innetwork"];
    EXPECT_TRUE(m["verified"].get<bool>()) << ecmp;
    const json& lf = m["background"]["long_flows"];
    ASSERT_EQ(lf["flows"].size(), 8u) << ecmp;
    for (const json& f : lf["flows"]) {
      // Each crosses the fabric: source and destination on different leaves (4 hosts each).
      EXPECT_NE(f["source"].get<unsigned>() / 4, f["destination"].get<unsigned>() / 4);
      EXPECT_GT(f["gbps_before"].get<double>(), 0.0);
      EXPECT_GT(f["gbps_during"].get<double>(), 0.0);
      EXPECT_LT(f["gbps_during"].get<double>(), 100.0);  // no flow beats its host's link
    }
    for (const char* window : {"before", "during"}) {
      const double j = lf[window]["jain"].get<double>();
      EXPECT_GT(j, 1.0 / 8 - 1e-9) << ecmp << " " << window;
      EXPECT_LE(j, 1.0 + 1e-9) << ecmp << " " << window;
    }
    unsigned spines_used = 0;
    for (const char* spine : {"spine0", "spine1", "spine2", "spine3"})
      if (m["forwarded"][spine].get<std::uint64_t>() > 0) ++spines_used;
    if (std::string(ecmp) == "none")
      EXPECT_EQ(spines_used, 1u) << "the first of equal-cost paths is always spine0";
    else
      EXPECT_GE(spines_used, 2u) << "8 flows hashed onto 4 spines";
  }
}

TEST(Fabric, MarksCutTheWindowOnlyWithCongestionControl) {
  // single.json's leaf uplinks mark: 4 workers' contributions share each.
  auto variant = [](bool cc, std::optional<bool> ect) {
    json s = json::parse(scenario_text("single.json"));
    s["job"]["congestion_control"] = cc;
    if (ect) s["job"]["ecn_capable"] = *ect;
    return run(s.dump())["innetwork"];
  };
  const json on = variant(true, std::nullopt);
  const json ignores = variant(false, true);      // ECN-capable, marked, does not react
  const json off = variant(false, std::nullopt);  // not ECN-capable: RED drops at K instead
  for (const json* m : {&on, &ignores, &off}) EXPECT_TRUE((*m)["verified"].get<bool>());
  EXPECT_GT(on["window_cuts"].get<std::uint64_t>(), 0u);
  EXPECT_GT(ignores["queues"]["ecn_marks"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(ignores["window_cuts"].get<std::uint64_t>(), 0u);
  // The cuts keep the uplinks' queues shorter on average (the run is a few round trips long,
  // so not by much).
  EXPECT_GT(ignores["queues"]["busiest_mean_packets"].get<double>(),
            on["queues"]["busiest_mean_packets"].get<double>());
  EXPECT_EQ(off["queues"]["ecn_marks"].get<std::uint64_t>(), 0u);
  EXPECT_GT(off["queues"]["drops"].get<std::uint64_t>(), 0u);
  EXPECT_GT(off["retransmissions"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(on["queues"]["drops"].get<std::uint64_t>(), 0u);
}

// Graph topologies are netagg-plan's format, read by its parser (built when GLPK is found).
#ifdef NETAGG_FABRIC_PLAN
#define NEEDS_PLAN() (void)0
#else
#define NEEDS_PLAN() GTEST_SKIP() << "netagg-plan (GLPK) not built: no graph topologies"
#endif

TEST(Fabric, APlanRunsOnItsRoutesAndAtItsRate) {
  NEEDS_PLAN();
  // GRID's example topology (plan/topologies/grid-example.json), every worker's stream to the
  // parameter server PS, W4's pinned around link L1 (S1-S3) through S2 as Scheme 1 routes it.
  bool ok = false;
  const json r = run(scenario_text("grid_scheme1.json"), &ok);
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  EXPECT_TRUE(m["verified"].get<bool>());
  EXPECT_EQ(m["aggregators"], json::array({"PS"}));
  EXPECT_EQ(m["aggregator_rate_limit"]["gbps"]["PS"].get<double>(), 9.0);
  // 512 packets of 1024 elements each way per worker: S1 carries W1-W4, S2 W4-W6 (W4 because
  // of its pinned route; by shortest path it would take L1), S3 all eight.
  EXPECT_EQ(m["forwarded"]["S1"].get<std::uint64_t>(), 2u * 4 * 512);
  EXPECT_EQ(m["forwarded"]["S2"].get<std::uint64_t>(), 2u * 3 * 512);
  EXPECT_EQ(m["forwarded"]["S3"].get<std::uint64_t>(), 2u * 8 * 512);
  // L1 and L3 each carry three streams in 3 Gbit/s: 1 Gbit/s of gradient per worker at most,
  // less the headers (52 bytes per 4096) and the start.
  const double gbps = m["algorithm_gbps"].get<double>();
  EXPECT_LE(gbps, 1.0);
  EXPECT_GE(gbps, 0.9);

  // Without the pin W4 takes the shortest path, over L1: four streams there, a slower job.
  json s = json::parse(scenario_text("grid_scheme1.json"));
  json& w4 = s["job"]["plan"]["trees"][0]["streams"][3];
  ASSERT_EQ(w4["from"], "W4");
  w4["path"] = json::array({"W4", "S1", "S3", "PS"});
  const json shortest = run(s.dump())["innetwork"];
  EXPECT_TRUE(shortest["verified"].get<bool>());
  EXPECT_EQ(shortest["forwarded"]["S2"].get<std::uint64_t>(), 2u * 2 * 512);
  EXPECT_LT(shortest["algorithm_gbps"].get<double>(), 0.8);
}

TEST(Fabric, BadPlansAreRefused) {
  NEEDS_PLAN();
  json s = json::parse(scenario_text("grid_scheme1.json"));
  auto refused = [&](const std::function<void(json&)>& change, const std::string& says) {
    json bad = s;
    change(bad);
    try {
      run(bad.dump());
      ADD_FAILURE() << "accepted: " << says;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](json& b) { b["job"]["plan"]["trees"][0]["streams"][0]["to"] = "S9"; }, "no node 'S9'");
  refused(
      [](json& b) {
        b["job"]["plan"]["trees"][0]["streams"][0]["path"] = {"W1", "S3", "PS"};
      },
      "which no link joins");
  refused(
      [](json& b) {
        b["job"]["plan"]["trees"][0]["streams"][0]["path"] = {"W2", "S1", "S3", "PS"};
      },
      "must go from W1 to PS");
  refused([](json& b) { b["job"]["trees"] = 2; }, "a plan has its own trees");
  refused(
      [](json& b) {
        b["topology"] = {{"kind", "leaf-spine"}, {"mtu", 9000}};
      },
      "a plan needs a graph");
  refused([](json& b) { b["topology"]["leaves"] = 2; }, "not a field of a graph");
}

TEST(Fabric, TheFpgaAggregatorsModelAggregatesAtEverySwitchOfTheTree) {
  // The FPGA aggregator's HLS model as each switch's accelerator (PANAMA): the same tree, frames
  // in and out as netagg-fpgad feeds them, the jobs programmed through driver/fpga.
  json s = json::parse(scenario_text("tree.json"));
  s["aggregator"] = {{"model", "fpga-hls"}};
  s["job"]["window"] = 64;  // the model's 64 slots
  s["modes"] = json::array({"innetwork"});
  json r;
  bool ok = false;
  try {
    r = run(s.dump(), &ok);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("not built") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_TRUE(ok);
  const json& m = r["innetwork"];
  expect_verified(m);
  EXPECT_EQ(m["aggregator_model"], "fpga-hls");
  EXPECT_EQ(m["aggregators"], json::array({"spine0", "leaf0", "leaf1"}));
  // The device's own counters: 8192 worker frames and 2048 partial sums in, 3 x 1024 rounds.
  EXPECT_EQ(m["switch"]["completions"].get<std::uint64_t>(), 3u * 1024);
  EXPECT_EQ(m["switch"]["sent_to_parent"].get<std::uint64_t>(), 2u * 1024);
  EXPECT_EQ(m["switch"]["results_from_parent"].get<std::uint64_t>(), 2u * 1024);
  EXPECT_EQ(m["switch"]["frames_in"].get<std::uint64_t>(), 8192u + 2048 + 2048);
  EXPECT_GT(m["fpga_cycles"].get<std::uint64_t>(), 0u);
  // A window the model cannot hold is refused by the driver's check, by name.
  s["job"]["window"] = 128;
  try {
    run(s.dump());
    ADD_FAILURE() << "a 128-slot window was accepted by a 64-slot device";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("64 slots"), std::string::npos) << e.what();
  }
}

TEST(Fabric, AWrongContributionIsCaughtByEveryWorker) {
  bool ok = true;
  const json r = run(scenario_text("corrupt.json"), &ok);
  EXPECT_FALSE(ok);
  const json& m = r["innetwork"];
  EXPECT_TRUE(m["completed"].get<bool>());
  EXPECT_FALSE(m["verified"].get<bool>());
  // Element 0 of every worker's result is off by one; nothing else is.
  EXPECT_EQ(m["mismatches"].get<std::uint64_t>(), kWorkers);
  for (const json& w : m["per_worker"]) EXPECT_EQ(w["mismatches"].get<std::uint64_t>(), 1u);
}

TEST(Fabric, AnUnfinishedRunIsAFailure) {
  json s = json::parse(scenario_text("tree.json"));
  s["time_limit_s"] = 110e-6;  // 10 us after the start: too soon for either mode to finish
  bool ok = true;
  const json r = run(s.dump(), &ok);
  EXPECT_FALSE(ok);
  EXPECT_FALSE(r["innetwork"]["completed"].get<bool>());
  EXPECT_FALSE(r["innetwork"]["verified"].get<bool>());
  EXPECT_EQ(r["innetwork"]["failures"].size(), kWorkers);
  EXPECT_FALSE(r["ring"]["completed"].get<bool>());
}

// An aggregator killed for good, at a moment of the run: the workers stall, finish the
// all-reduce among themselves (the host fallback's sessions, run by netagg's own code) and verify
// every element.
struct KillCase {
  const char* aggregator;
  unsigned trees;
  double fraction;  // of the healthy run's completion time
};

void PrintTo(const KillCase& c, std::ostream* os) {
  *os << c.aggregator << " of " << c.trees << " tree(s) at " << c.fraction * 100 << " %";
}

class FabricKill : public ::testing::TestWithParam<KillCase> {};

TEST_P(FabricKill, TheWorkersFinishTheAllReduce) {
  const KillCase c = GetParam();
  json s = json::parse(scenario_text("kill.json"));
  s["job"]["trees"] = c.trees;
  json healthy = s;
  healthy.erase("kill");
  const json h = run(healthy.dump())["innetwork"];
  expect_verified(h);
  EXPECT_TRUE(h["fallback"]["sessions"].empty()) << "a healthy run stalled";
  const double t = h["completion_s"].get<double>();
  const double start_us = 100;  // the scenarios' default start
  s["kill"] = {{"aggregator", c.aggregator}, {"at_us", start_us + c.fraction * t * 1e6}};
  bool ok = false;
  const json r = run(s.dump(), &ok);
  const json& m = r["innetwork"];
  EXPECT_TRUE(ok) << m["failures"].dump() << m["fallback"].dump();
  EXPECT_TRUE(m["completed"].get<bool>());
  EXPECT_TRUE(m["verified"].get<bool>());
  EXPECT_EQ(m["mismatches"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(m["elements_checked"].get<std::uint64_t>(), kWorkers * kElements);
  EXPECT_TRUE(m["killed"]["dead"].get<bool>());
  // Every case kills it while contributions are on their way to it (later than 97 % of the
  // run, nothing reaches it any more): the workers stall, and one session with every worker in
  // it finishes the all-reduce, fallback_after (5 ms) after the last result.
  EXPECT_GT(m["killed"]["dropped"].get<std::uint64_t>(), 0u);
  const json& sessions = m["fallback"]["sessions"];
  ASSERT_EQ(sessions.size(), 1u) << m["fallback"].dump();
  EXPECT_EQ(sessions[0]["stalled_workers"].get<std::uint64_t>(), kWorkers);
  EXPECT_EQ(sessions[0]["error"], "");
  EXPECT_GT(m["fallback"]["host_packets"].get<std::uint64_t>() +
                m["fallback"]["shared_results"].get<std::uint64_t>(),
            0u);
  EXPECT_GE(m["completion_s"].get<double>(), 5e-3);
  EXPECT_LT(m["completion_s"].get<double>(), t + 5e-3 + 1e-3);
}

INSTANTIATE_TEST_SUITE_P(RootLeafOrOneTreeOfTwo, FabricKill,
                         ::testing::Values(KillCase{"spine0", 1, 0.5}, KillCase{"spine0", 1, 0.8},
                                           KillCase{"spine0", 1, 0.95}, KillCase{"spine0", 1, 0.97},
                                           KillCase{"leaf1", 1, 0.5}, KillCase{"leaf1", 1, 0.95},
                                           KillCase{"spine0", 2, 0.5}, KillCase{"spine1", 2, 0.8}),
                         [](const ::testing::TestParamInfo<KillCase>& i) {
                           return std::string(i.param.aggregator) + "_of_" +
                                  std::to_string(i.param.trees) + "_trees_at_" +
                                  std::to_string(static_cast<int>(i.param.fraction * 100)) +
                                  "_percent";
                         });

TEST(Fabric, AKilledAggregatorWithoutTheFallbackFailsTheRun) {
  json s = json::parse(scenario_text("kill.json"));
  s["job"].erase("fallback_after_ms");
  s["job"]["job_timeout_ms"] = 20;
  bool ok = true;
  const json r = run(s.dump(), &ok);
  const json& m = r["innetwork"];
  EXPECT_FALSE(ok);
  EXPECT_FALSE(m["completed"].get<bool>());
  EXPECT_FALSE(m["fallback"]["enabled"].get<bool>());
  ASSERT_EQ(m["failures"].size(), kWorkers);
  for (const json& f : m["failures"]) {
    EXPECT_EQ(f["state"], "failed");
    EXPECT_NE(f["failure"].get<std::string>().find("timed out"), std::string::npos) << f.dump();
  }
}

TEST(Fabric, BadScenariosAreRefused) {
  EXPECT_THROW(run(R"({"job": {"no_such_field": 1}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"queues": {"kind": "codel"}})"), std::runtime_error);
  EXPECT_THROW(run("not json"), std::runtime_error);
  EXPECT_THROW(run(R"({"topology": {"kind": "fat-tree", "k": 5}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"topology": {"kind": "fat-tree", "leaves": 2}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"topology": {"k": 4}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"topology": {"ecmp": "per-byte"}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"background": {"long_flows": 1001}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"aggregator": {"model": "asic"}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"job": {"fallback_after_ms": 1000, "job_timeout_ms": 1000}})"),
               std::runtime_error);
  EXPECT_THROW(run(R"({"kill": {"at_us": 10}})"), std::runtime_error);
  EXPECT_THROW(run(R"({"kill": {"aggregator": "spine0", "when": 10}})"), std::runtime_error);
  try {
    run(R"({"kill": {"aggregator": "spine7"}, "modes": ["innetwork"]})");
    FAIL() << "a kill of no aggregator was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("spine7"), std::string::npos) << e.what();
  }
  // One switch-model job holds at most 32 workers: 40 on one aggregator is refused by name.
  try {
    run(R"({"topology": {"leaves": 2, "hosts_per_leaf": 20}, "job": {"aggregation": "single"},
            "modes": ["innetwork"]})");
    FAIL() << "40 workers on one aggregator were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("spine0"), std::string::npos) << e.what();
  }
}

}  // namespace

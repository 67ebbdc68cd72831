// SPDX-License-Identifier: Apache-2.0
// netagg-plan: the GRID paper's example (Scheme 1 = 1, Scheme 2 = 2.4375, GRID = 3 Gbit/s),
// small networks whose optima are derived by hand in the comments (one where the results coming
// back down the reverse routes lower the rate), a fat tree, bad topologies, and the job
// descriptions the plans are written as.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/error.hpp"
#include "netagg/job.hpp"
#include "netagg/plan/output.hpp"
#include "netagg/plan/policies.hpp"
#include "netagg/plan/topology.hpp"

namespace netagg::plan {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr double kTol = 1e-6;

Topology example() { return load_topology(fs::path(NETAGG_PLAN_TOPOLOGIES) / "grid-example.json"); }

// The directed link `from` -> `to`.
int link(const Topology& t, std::string_view from, std::string_view to) {
  for (std::size_t l = 0; l < t.links.size(); ++l)
    if (t.nodes[t.links[l].from].name == from && t.nodes[t.links[l].to].name == to)
      return static_cast<int>(l);
  ADD_FAILURE() << "no link " << from << "->" << to;
  return -1;
}

double link_load(const PlanResult& p, const Topology& t, std::string_view from,
                 std::string_view to) {
  return p.usage.link[link(t, from, to)] * p.rate_gbps;
}

double agg_load(const PlanResult& p, const Topology& t, std::string_view node) {
  return p.usage.agg[t.find(node)] * p.rate_gbps;
}

// Every plan is a set of valid trees with shares summing to 1, and its rate fits every capacity.
void expect_valid(const Problem& problem, const PlanResult& plan) {
  SCOPED_TRACE(plan.policy);
  const Topology& t = problem.topo();
  double shares = 0;
  for (const WeightedTree& wt : plan.trees) {
    EXPECT_EQ(check_tree(problem, wt.tree), "");
    shares += wt.share;
  }
  EXPECT_NEAR(shares, 1, 1e-12);
  ASSERT_EQ(plan.weights.size(), plan.trees.size());
  for (std::size_t l = 0; l < t.links.size(); ++l)
    EXPECT_LE(plan.usage.link[l] * plan.rate_gbps, t.links[l].gbps * (1 + 1e-9)) << t.links[l].name;
  for (std::size_t n = 0; n < t.nodes.size(); ++n)
    EXPECT_LE(plan.usage.agg[n] * plan.rate_gbps, t.nodes[n].aggregation_gbps * (1 + 1e-9))
        << t.nodes[n].name;
  EXPECT_LE(plan.usage.root * plan.rate_gbps, t.nodes[problem.root].ingress_gbps * (1 + 1e-9));
}

struct Solved {
  PlanResult scheme1, scheme2, grid, lp;
};

Solved solve_all(const Problem& problem, SolverOptions options = {}) {
  const PathSet paths = make_paths(problem, options);
  Solved s;
  s.scheme1 = scheme1(problem, paths, options);
  s.scheme2 = scheme2(problem);
  GridResult g = grid(problem, paths, options);
  s.grid = std::move(g.grid);
  s.lp = std::move(g.lp);
  return s;
}

// ---- The example ------------------------------------------------------------------------------

TEST(Example, SchemeOneIsOneGbitPerSecondWithL1AndL3AtCapacity) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const PlanResult s1 = scheme1(problem, make_paths(problem, {}), {});
  expect_valid(problem, s1);
  EXPECT_NEAR(s1.rate_gbps, 1.0, kTol);
  EXPECT_NEAR(link_load(s1, t, "S1", "S3"), 3, kTol);  // L1: three workers
  EXPECT_NEAR(link_load(s1, t, "S2", "S3"), 3, kTol);  // L3: the fourth, W5 and W6
  EXPECT_NEAR(link_load(s1, t, "S1", "S2"), 1, kTol);  // L2: the one spared from L1
  EXPECT_NEAR(s1.usage.root * s1.rate_gbps, 8, kTol);  // no aggregation: 8 streams
  EXPECT_NEAR(s1.details["splittable_gbps"].get<double>(), 1.0, kTol);
}

TEST(Example, SchemeTwoIs2point4375) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const PlanResult s2 = scheme2(problem);
  expect_valid(problem, s2);
  // 9/4 = 2.25 aggregated at S1, and 0.75/4 = 0.1875 more over L1's remaining 0.75 to S3.
  EXPECT_NEAR(s2.rate_gbps, 2.4375, kTol);
  EXPECT_NEAR(agg_load(s2, t, "S1"), 9, kTol);
  EXPECT_NEAR(link_load(s2, t, "S1", "S3"), 3, kTol);
  ASSERT_EQ(s2.trees.size(), 2u);
  EXPECT_EQ(std::set<std::uint32_t>(s2.weights.begin(), s2.weights.end()),
            (std::set<std::uint32_t>{12, 1}));  // 2.25 : 0.1875
}

TEST(Example, GridReachesThreeGbitPerSecondTheBound) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  expect_valid(problem, s.grid);
  // Every worker's own link is 3 Gbit/s, so 3 is an upper bound. S1 aggregates three workers
  // (9/9), and L1 and L2 carry its stream and the fourth worker's, which S2 or S3 aggregates
  // (one plan: the fourth to S2 with W5 and W6, 9/9; S1, S2 and S3 each send one stream of 3
  // to the server, 9/9; docs/routing.md).
  EXPECT_NEAR(s.grid.rate_gbps, 3.0, kTol);
  EXPECT_NEAR(s.lp.rate_gbps, 3.0, kTol);
  EXPECT_GE(s.lp.rate_gbps, s.grid.rate_gbps - kTol);
  EXPECT_GT(s.grid.rate_gbps, s.scheme2.rate_gbps);
  EXPECT_GT(s.scheme2.rate_gbps, s.scheme1.rate_gbps);
  EXPECT_NEAR(agg_load(s.grid, t, "S1"), 9, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "S1", "S2"), 3, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "S1", "S3"), 3, kTol);
  // The results come back on the reverse directions, which nothing else uses: mirror loads.
  EXPECT_NEAR(link_load(s.grid, t, "S2", "S1"), 3, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "S3", "S1"), 3, kTol);
}

// The streams of `plan` towards the root alone, per link direction.
std::vector<double> upward_loads(const Topology& t, const PlanResult& plan) {
  const Problem upward = make_problem(t, {}, Traffic::kUpwardOnly);
  return usage_of(upward, plan.trees).link;
}

TEST(Example, NoStreamsCrossSoTheResultsChangeNoValue) {
  // On the example no plan uses a link in both directions: the other direction of every link a
  // stream uses carries that stream's results only, a mirror of the direction towards PS. So
  // counting the results changes no value: the same rates with and without (--upward-only).
  const Topology t = example();
  for (const Traffic traffic : {Traffic::kAllReduce, Traffic::kUpwardOnly}) {
    SCOPED_TRACE(std::string(to_string(traffic)));
    const Problem problem = make_problem(t, {}, traffic);
    const Solved s = solve_all(problem);
    EXPECT_NEAR(s.scheme1.rate_gbps, 1.0, kTol);
    EXPECT_NEAR(s.scheme2.rate_gbps, 2.4375, kTol);
    EXPECT_NEAR(s.grid.rate_gbps, 3.0, kTol);
    EXPECT_NEAR(s.lp.rate_gbps, 3.0, kTol);
    for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid}) {
      expect_valid(problem, *p);
      const std::vector<double> up = upward_loads(t, *p);
      for (std::size_t l = 0; l < t.links.size(); ++l) {
        const int twin = t.links[l].twin;
        EXPECT_TRUE(up[l] == 0 || up[twin] == 0) << p->policy << " crosses on " << t.links[l].name;
        // A direction carries its streams, and the results of the streams on the other one.
        EXPECT_NEAR(p->usage.link[l], traffic == Traffic::kAllReduce ? up[l] + up[twin] : up[l],
                    1e-12)
            << p->policy << " " << t.links[l].name;
      }
    }
  }
}

TEST(Example, LpBoundsEveryPolicy) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid})
    EXPECT_LE(p->rate_gbps, s.lp.rate_gbps + kTol) << p->policy;
}

TEST(Example, W4HasTheDetourAmongItsCandidateRoutes) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const PathSet paths = make_paths(problem, {});
  const std::vector<int> detour = {link(t, "W4", "S1"), link(t, "S1", "S2"), link(t, "S2", "S3"),
                                   link(t, "S3", "PS")};
  const auto& w4 = paths.of[t.find("W4")];
  EXPECT_NE(std::find(w4.begin(), w4.end(), detour), w4.end());
  EXPECT_EQ(w4.front().size(), 3u);  // the shortest-path tree's route first
}

// ---- Small networks, optima by hand ------------------------------------------------------------

// Four workers on switch S (aggregates 9), every link 3, S-R 3.
Topology star() {
  return parse_topology(R"({"nodes": [
      {"name": "R", "kind": "root"}, {"name": "S", "kind": "switch", "aggregation_gbps": 9},
      {"name": "W1", "kind": "worker"}, {"name": "W2", "kind": "worker"},
      {"name": "W3", "kind": "worker"}, {"name": "W4", "kind": "worker"}],
    "links": [{"ends": ["S", "R"], "gbps": 3},
      {"ends": ["W1", "S"], "gbps": 3}, {"ends": ["W2", "S"], "gbps": 3},
      {"ends": ["W3", "S"], "gbps": 3}, {"ends": ["W4", "S"], "gbps": 3}]})",
                        "star");
}

TEST(Star, OptimaByHand) {
  const Topology t = star();
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  // No aggregation: four streams on S-R: 3/4.
  EXPECT_NEAR(s.scheme1.rate_gbps, 0.75, kTol);
  // A share a of the gradient aggregated at S (4a <= 9), the rest b raw (a + 4b <= 3):
  // a = 2.25, b = 0.1875, x = 39/16. The relaxation: a fraction f aggregated, S-R carries
  // f + 4(1 - f) streams: 9/(4f) = 3/(4 - 3f) at f = 12/13, x = 39/16 again.
  EXPECT_NEAR(s.scheme2.rate_gbps, 39.0 / 16, kTol);
  EXPECT_NEAR(s.lp.rate_gbps, 39.0 / 16, kTol);
  EXPECT_NEAR(s.grid.rate_gbps, 39.0 / 16, kTol);
  EXPECT_EQ(s.grid.trees.size(), 2u);
  expect_valid(problem, s.grid);
  expect_valid(problem, s.scheme2);
  // One tree only: all four at S gives 9/4; three at S and one raw puts two streams on S-R.
  SolverOptions one;
  one.max_trees = 1;
  const PlanResult single = grid(problem, make_paths(problem, one), one).grid;
  EXPECT_NEAR(single.rate_gbps, 2.25, kTol);
  EXPECT_NEAR(single.details["single_tree_gbps"].get<double>(), 2.25, kTol);
}

// W1 - S1 - S2 - R and W2 on S2; links 10; S1 does not aggregate, S2 aggregates 10.
Topology line() {
  return parse_topology(R"({"nodes": [
      {"name": "R", "kind": "root"}, {"name": "S1", "kind": "switch"},
      {"name": "S2", "kind": "switch", "aggregation_gbps": 10},
      {"name": "W1", "kind": "worker"}, {"name": "W2", "kind": "worker"}],
    "links": [{"ends": ["W1", "S1"], "gbps": 10}, {"ends": ["S1", "S2"], "gbps": 10},
      {"ends": ["W2", "S2"], "gbps": 10}, {"ends": ["S2", "R"], "gbps": 10}]})",
                        "line");
}

TEST(Line, OptimaByHand) {
  const Topology t = line();
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  EXPECT_NEAR(s.scheme1.rate_gbps, 5, kTol);  // two streams on S2-R
  // a aggregated at S2 (2a <= 10), b raw (a + 2b <= 10): a = 5, b = 2.5.
  EXPECT_NEAR(s.scheme2.rate_gbps, 7.5, kTol);
  EXPECT_NEAR(s.lp.rate_gbps, 7.5, kTol);
  EXPECT_NEAR(s.grid.rate_gbps, 7.5, kTol);
  EXPECT_EQ(agg_load(s.grid, t, "S1"), 0);  // S1 is not programmable
  for (const WeightedTree& wt : s.grid.trees)
    for (const Stream& st : wt.tree.streams) EXPECT_NE(st.to, t.find("S1"));
}

TEST(RootIngress, BoundsTheStreamsIntoTheRoot) {
  // Two workers straight on the root's switch, which does not aggregate; the root takes 4.
  const Topology t = parse_topology(R"({"nodes": [
      {"name": "R", "kind": "root", "ingress_gbps": 4}, {"name": "S", "kind": "switch"},
      {"name": "W1", "kind": "worker"}, {"name": "W2", "kind": "worker"}],
    "links": [{"ends": ["W1", "S"], "gbps": 10}, {"ends": ["W2", "S"], "gbps": 10},
      {"ends": ["S", "R"], "gbps": 10}]})");
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid, &s.lp})
    EXPECT_NEAR(p->rate_gbps, 2, kTol) << p->policy;
}

// An aggregator box A on the workers' switch S1, with a thin link of its own to the root's switch
// S0. A's stream can go back through S1 (against the workers' streams) or over the thin link.
// S0 and S1 only forward; A aggregates 6; links 3, S1-A 6, A-S0 1.
Topology box() {
  return parse_topology(R"({"nodes": [
      {"name": "R", "kind": "root"}, {"name": "S0", "kind": "switch"},
      {"name": "S1", "kind": "switch"}, {"name": "A", "kind": "switch", "aggregation_gbps": 6},
      {"name": "W1", "kind": "worker"}, {"name": "W2", "kind": "worker"}],
    "links": [{"ends": ["S0", "R"], "gbps": 3}, {"ends": ["S1", "S0"], "gbps": 3},
      {"ends": ["S1", "A"], "gbps": 6}, {"ends": ["A", "S0"], "gbps": 1},
      {"ends": ["W1", "S1"], "gbps": 3}, {"ends": ["W2", "S1"], "gbps": 3}]})",
                        "box");
}

// W1 and W2 to A over S1, and A's sum to the root back over S1: the tree whose streams cross.
Tree box_tree(const Topology& t) {
  return {
      {{t.find("W1"), t.find("A"), {link(t, "W1", "S1"), link(t, "S1", "A")}},
       {t.find("W2"), t.find("A"), {link(t, "W2", "S1"), link(t, "S1", "A")}},
       {t.find("A"), t.find("R"), {link(t, "A", "S1"), link(t, "S1", "S0"), link(t, "S0", "R")}}}};
}

TEST(Results, UsageCountsEachStreamsResultsOnTheReverseOfItsRoute) {
  const Topology t = box();
  const Problem problem = make_problem(t);
  const WeightedTree wt{box_tree(t), 1.0};
  ASSERT_EQ(check_tree(problem, wt.tree), "");
  const Usage u = usage_of(problem, std::span<const WeightedTree>(&wt, 1));
  auto on = [&](std::string_view from, std::string_view to) { return u.link[link(t, from, to)]; };
  EXPECT_EQ(on("W1", "S1"), 1);  // W1's stream
  EXPECT_EQ(on("S1", "W1"), 1);  // its results
  EXPECT_EQ(on("S1", "A"), 3);   // W1's and W2's streams, A's results
  EXPECT_EQ(on("A", "S1"), 3);   // A's stream, W1's and W2's results
  EXPECT_EQ(on("S1", "S0"), 1);
  EXPECT_EQ(on("S0", "S1"), 1);
  EXPECT_EQ(on("S0", "R"), 1);
  EXPECT_EQ(on("R", "S0"), 1);
  EXPECT_EQ(on("A", "S0"), 0);
  EXPECT_EQ(on("S0", "A"), 0);
  EXPECT_EQ(u.agg[t.find("A")], 2);  // aggregation counts the streams in; results pass through
  EXPECT_EQ(u.root, 1);              // the root's ingress: what enters it
  EXPECT_NEAR(rate_of(problem, u), 2, 1e-12);  // S1-A: 6 / 3 each way

  const Problem upward = make_problem(t, {}, Traffic::kUpwardOnly);
  const Usage v = usage_of(upward, std::span<const WeightedTree>(&wt, 1));
  EXPECT_EQ(v.link[link(t, "S1", "A")], 2);
  EXPECT_EQ(v.link[link(t, "A", "S1")], 1);
  EXPECT_EQ(v.link[link(t, "S1", "W1")], 0);
  EXPECT_EQ(v.agg, u.agg);
  EXPECT_EQ(v.root, u.root);
  EXPECT_NEAR(rate_of(upward, v), 3, 1e-12);  // the access links, S0-R and A's aggregation
}

TEST(Results, TheBoxByHand) {
  const Topology t = box();
  // Upward only: the crossing tree above reaches 3, the access links' bound.
  const Problem upward = make_problem(t, {}, Traffic::kUpwardOnly);
  const Solved u = solve_all(upward);
  EXPECT_NEAR(u.lp.rate_gbps, 3, kTol);
  EXPECT_NEAR(u.grid.rate_gbps, 3, kTol);

  // With the results (docs/routing.md, "Smaller cases"): the crossing tree reaches 2, the raw
  // tree (both workers to R over S1-S0) 1.5, the tree with A's stream over A-S0 1. Per worker a
  // share a aggregated at A, of which t goes on over A-S0 and a - t back over S1; the rest raw.
  // S0->R: 2(1 - a) + a <= 3/x; S1->A: 2a + (a - t) <= 6/x; A->S0: t <= 1/x. All three bind at
  // a = 7/8, t = 3/8: x = 8/3 (trees of rates 4/3, 1 and 1/3).
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid}) expect_valid(problem, *p);
  EXPECT_NEAR(s.lp.rate_gbps, 8.0 / 3, kTol);
  EXPECT_NEAR(s.grid.rate_gbps, 8.0 / 3, kTol);
  EXPECT_EQ(s.grid.trees.size(), 3u);
  EXPECT_EQ(std::multiset<std::uint32_t>(s.grid.weights.begin(), s.grid.weights.end()),
            (std::multiset<std::uint32_t>{4, 3, 1}));
  EXPECT_NEAR(link_load(s.grid, t, "S1", "A"), 6, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "A", "S1"), 6, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "A", "S0"), 1, kTol);
  EXPECT_NEAR(link_load(s.grid, t, "S0", "R"), 3, kTol);
  // Neither scheme aggregates (S1 and S0 only forward; A is on no shortest path): two streams on
  // S0->R, 1.5 either way.
  for (const Solved* v : {&s, &u}) {
    EXPECT_NEAR(v->scheme1.rate_gbps, 1.5, kTol);
    EXPECT_NEAR(v->scheme2.rate_gbps, 1.5, kTol);
  }
}

TEST(Results, OneWayLinksCarryNoStreamOfAnAllReduce) {
  // The only route to the root is one-way: refused for an all-reduce, planned upward only.
  const Topology t = load_topology(fs::path(NETAGG_PLAN_TEST_DATA) / "one-way.json");
  try {
    make_problem(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_STREQ(e.what(),
                 "worker 'W1' reaches the root 'PS' only over one-way links: an all-reduce's "
                 "results come back on the reverse route, so its streams use full-duplex links "
                 "only (--upward-only plans the streams towards the root alone)");
  }
  const Problem upward = make_problem(t, {}, Traffic::kUpwardOnly);
  EXPECT_NEAR(solve_all(upward).grid.rate_gbps, 3, kTol);

  // A one-way shortcut besides a full-duplex route: no candidate uses it, no tree may.
  const Topology s = parse_topology(R"({"nodes": [
      {"name": "R", "kind": "root"}, {"name": "S1", "kind": "switch", "aggregation_gbps": 20},
      {"name": "S2", "kind": "switch"}, {"name": "W1", "kind": "worker"},
      {"name": "W2", "kind": "worker"}],
    "links": [{"ends": ["W1", "S1"], "gbps": 10}, {"ends": ["W2", "S1"], "gbps": 10},
      {"ends": ["S1", "S2"], "gbps": 10}, {"ends": ["S2", "R"], "gbps": 10},
      {"name": "shortcut", "ends": ["S1", "R"], "gbps": 10, "directed": true}]})");
  const Problem problem = make_problem(s);
  const int shortcut = link(s, "S1", "R");
  EXPECT_EQ(problem.distance[s.find("S1")], 2);
  const PathSet paths = make_paths(problem, {});
  for (int n : {s.find("W1"), s.find("W2"), s.find("S1")})
    for (const auto& path : paths.of[n])
      EXPECT_EQ(std::find(path.begin(), path.end(), shortcut), path.end());
  const Tree over_shortcut{{{s.find("W1"), s.find("S1"), {link(s, "W1", "S1")}},
                            {s.find("W2"), s.find("S1"), {link(s, "W2", "S1")}},
                            {s.find("S1"), s.find("R"), {shortcut}}}};
  EXPECT_EQ(check_tree(problem, over_shortcut),
            "the route of 'S1' uses the one-way link 'shortcut': the results have no way back");
  EXPECT_EQ(check_tree(make_problem(s, {}, Traffic::kUpwardOnly), over_shortcut), "");
  const WeightedTree wt{over_shortcut, 1.0};
  EXPECT_THROW(usage_of(problem, std::span<const WeightedTree>(&wt, 1)), Error);
  // S1 aggregates both workers and sends one stream on over S2: 10.
  EXPECT_NEAR(solve_all(problem).grid.rate_gbps, 10, kTol);
}

// ---- A fat tree --------------------------------------------------------------------------------

TEST(FatTree, GridBeatsBothSchemesAndStaysUnderTheBound) {
  FatTreeOptions f;
  f.k = 4;  // 16 hosts: the root and 15 workers; links 10, switches aggregate 30
  const Topology t = fat_tree(f);
  EXPECT_EQ(t.nodes_of(NodeKind::kWorker).size(), 15u);
  EXPECT_EQ(t.nodes_of(NodeKind::kSwitch).size(), 20u);
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid}) expect_valid(problem, *p);
  EXPECT_GE(s.grid.rate_gbps, s.scheme1.rate_gbps);
  EXPECT_GE(s.grid.rate_gbps, s.scheme2.rate_gbps);
  EXPECT_LE(s.grid.rate_gbps, s.lp.rate_gbps + kTol);
  // No aggregation: the root's link carries 15 streams.
  EXPECT_NEAR(s.scheme1.rate_gbps, 10.0 / 15, kTol);
  // Every edge switch aggregates its hosts (h1 alone at the root's) and sends one stream to the
  // root, not aggregated again: 8 streams on the root's link.
  EXPECT_NEAR(s.scheme2.rate_gbps, 10.0 / 8, kTol);
  // The root's link carries at least one stream: 10 is the bound, and one tree reaches it (edge
  // switches aggregate 2 hosts, aggregation switches 2 edges, one core 3 pods, the root's
  // aggregation switch the core and its other edge, the root's edge switch that and h1). Its
  // routes are single links forming a tree of the network, so each link carries one stream one
  // way and its results the other: the results cost nothing there. Trees whose streams cross
  // (a stream down into the root's pod against another's results) do not reach 10 any more.
  EXPECT_NEAR(s.lp.rate_gbps, 10, kTol);
  EXPECT_NEAR(s.grid.rate_gbps, 10, kTol);
  const std::vector<double> up = upward_loads(t, s.grid);
  for (std::size_t l = 0; l < t.links.size(); ++l)
    EXPECT_TRUE(up[l] == 0 || up[t.links[l].twin] == 0) << "crosses on " << t.links[l].name;
  // Upward only the same values (the model without results, GRID's original one).
  const Problem upward = make_problem(t, {}, Traffic::kUpwardOnly);
  const Solved u = solve_all(upward);
  EXPECT_NEAR(u.grid.rate_gbps, 10, kTol);
  EXPECT_NEAR(u.scheme2.rate_gbps, 10.0 / 8, kTol);
}

TEST(FatTree, TopologyRoundTripsThroughJson) {
  FatTreeOptions f;
  f.k = 4;
  f.workers = 6;
  f.programmable = {"edge"};
  const Topology t = fat_tree(f);
  EXPECT_EQ(t.nodes_of(NodeKind::kWorker).size(), 6u);
  const Topology again = parse_topology(to_json(t).dump(), "again");
  ASSERT_EQ(again.nodes.size(), t.nodes.size());
  ASSERT_EQ(again.links.size(), t.links.size());
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    EXPECT_EQ(again.nodes[n].name, t.nodes[n].name);
    EXPECT_EQ(again.nodes[n].aggregation_gbps, t.nodes[n].aggregation_gbps);
  }
  EXPECT_EQ(t.nodes[t.find("c0")].aggregation_gbps, 0);
  EXPECT_EQ(t.nodes[t.find("p0e0")].aggregation_gbps, 30);
}

// ---- Bad topologies ----------------------------------------------------------------------------

std::string error_of(std::string_view text) {
  try {
    const Topology t = parse_topology(text, "t.json");
    make_problem(t);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    return e.what();
  }
  return "no error";
}

TEST(Topology, ErrorsNameTheField) {
  const std::string nodes = R"("nodes": [{"name": "R", "kind": "root"},
      {"name": "S", "kind": "switch", "aggregation_gbps": 5}, {"name": "W", "kind": "worker"}])";
  const std::string links = R"("links": [{"ends": ["W", "S"], "gbps": 1},
      {"ends": ["S", "R"], "gbps": 1}])";
  EXPECT_EQ(error_of("{" + nodes + "," + links + "}"), "no error");
  EXPECT_EQ(error_of("{" + nodes + "," + links + R"(, "nmae": 1})"), "t.json: nmae: unknown field");
  EXPECT_EQ(error_of(R"({"nodes": [{"name": "R", "kind": "root", "colour": 1}], )" + links + "}"),
            "t.json: nodes[0].colour: unknown field");
  EXPECT_EQ(error_of("{" + nodes + R"(, "links": [{"ends": ["W", "S"], "gbps": -3}]})"),
            "t.json: links[0].gbps: -3 is negative");
  EXPECT_EQ(error_of("{" + nodes + R"(, "links": [{"ends": ["W", "S9"], "gbps": 3}]})"),
            "t.json: links[0].ends[1]: no node 'S9'");
  EXPECT_EQ(error_of("{" + nodes + R"(, "links": [{"ends": ["W", "S"], "gbps": 3, "speed": 1}]})"),
            "t.json: links[0].speed: unknown field");
  EXPECT_EQ(error_of(R"({"nodes": [{"name": "W", "kind": "worker", "aggregation_gbps": 3}], )" +
                     links + "}"),
            "t.json: nodes[0].aggregation_gbps: only a switch aggregates ('W' is a worker)");
  EXPECT_EQ(error_of(R"({"nodes": [{"name": "W", "kind": "wroker"}], )" + links + "}"),
            "t.json: nodes[0].kind: 'wroker' is not a node kind (worker, switch or root)");
  EXPECT_EQ(error_of(R"({"nodes": [{"name": "W", "kind": "worker"}, {"name": "W", "kind": "root"}],
      )" + links + "}"),
            "t.json: nodes[1].name: 'W' twice");
  EXPECT_EQ(error_of("{" + nodes + R"(, "links": [{"ends": ["W", "S"], "gbps": 1},
      {"ends": ["S", "W"], "gbps": 1}]})"),
            "t.json: links[1]: a second link from 'S' to 'W' (links[0] has one; give one link "
            "the sum of the capacities)");
  EXPECT_EQ(error_of("{" + nodes + R"(, "links": [{"ends": ["W", "S"], "gbps": 1}]})"),
            "worker 'W' has no path to the root 'R' (paths run through switches only)");
  EXPECT_EQ(error_of(R"({"nodes": [{"name": "W", "kind": "worker"}], "links": [}]})").substr(0, 22),
            "t.json: not valid JSON");
}

TEST(Topology, TheExampleFileIsRejectedWhenAWorkerIsCutOff) {
  try {
    const Topology t = load_topology(fs::path(NETAGG_PLAN_TEST_DATA) / "disconnected.json");
    make_problem(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "worker 'W2' has no path to the root 'PS' (paths run through switches only)");
  }
}

// ---- Jobs --------------------------------------------------------------------------------------

// Each tree of the job has every rank at exactly one aggregator, and its root is the problem's.
void expect_covers(const Problem& problem, const JobSpec& job, const PlanResult& plan) {
  SCOPED_TRACE(plan.policy);
  ASSERT_EQ(job.trees.size(), plan.trees.size());
  ASSERT_EQ(job.world_size(), problem.workers.size());
  for (std::size_t k = 0; k < job.trees.size(); ++k) {
    const TreeSpec& tree = job.trees[k];
    EXPECT_EQ(tree.weight, plan.weights[k]);
    std::multiset<std::uint16_t> ranks;
    int roots = 0;
    for (const TreeNode& a : tree.aggregators) {
      ranks.insert(a.workers.begin(), a.workers.end());
      if (!a.parent) {
        ++roots;
        EXPECT_EQ(a.name, problem.topo().nodes[problem.root].name);
      }
    }
    EXPECT_EQ(roots, 1);
    ASSERT_EQ(ranks.size(), problem.workers.size());
    for (std::uint16_t r = 0; r < problem.workers.size(); ++r) EXPECT_EQ(ranks.count(r), 1u);
    // Every worker's view of the tree resolves (its aggregator and its rank there).
    for (std::uint16_t r = 0; r < problem.workers.size(); ++r)
      EXPECT_NO_THROW(worker_view(job, k, r));
  }
}

TEST(Job, EveryPlanIsAJobTheRuntimeParses) {
  const Topology t = example();
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid}) {
    const JobSpec job = make_job(problem, *p, {});
    const JobSpec again = parse_job(to_json(job), "again");
    expect_covers(problem, again, *p);
    // Slots of one aggregator's trees do not overlap: tree k starts at k * window.
    for (std::size_t k = 0; k < again.trees.size(); ++k)
      for (const TreeNode& a : again.trees[k].aggregators) EXPECT_EQ(a.slot_base, k * 64);
  }
  // Scheme 2's tree of weight 1: S3 aggregates W1-W4 (what S1 could not) with W7 and W8.
  const JobSpec job = make_job(problem, s.scheme2, {});
  bool found = false;
  for (const TreeSpec& tree : job.trees)
    for (const TreeNode& a : tree.aggregators)
      if (a.name == "S3" && tree.weight == 1) {
        EXPECT_EQ(a.workers, (std::vector<std::uint16_t>{0, 1, 2, 3, 6, 7}));
        found = true;
      }
  EXPECT_TRUE(found);
  EXPECT_THROW(make_job(problem, s.lp, {}), Error);  // the bound is no plan
  const JobSpec grid_job = make_job(problem, s.grid, {});
  ASSERT_EQ(grid_job.trees.size(), 1u);
  for (const TreeNode& a : grid_job.trees[0].aggregators) {
    if (a.name == "S1") {
      EXPECT_EQ(a.workers.size(), 3u);
    }
    if (a.name != "PS") {
      EXPECT_TRUE(a.parent) << a.name;
    }
  }
  EXPECT_EQ(node_address(t, t.find("W1")).to_string(), "10.0.4.1:31000");
  EXPECT_EQ(node_address(t, t.find("S1")).to_string(), "10.0.1.1:20033");
}

TEST(Job, FatTreeJobsParse) {
  FatTreeOptions f;
  f.k = 4;
  f.aggregation_gbps = 15;  // scarcer: plans of several trees
  const Topology t = fat_tree(f);
  const Problem problem = make_problem(t);
  const Solved s = solve_all(problem);
  for (const PlanResult* p : {&s.scheme1, &s.scheme2, &s.grid})
    expect_covers(problem, make_job(problem, *p, {}), *p);
}

TEST(Job, CliWritesJobFilesTheRuntimeLoads) {
  const fs::path dir = fs::path(NETAGG_BINARY_DIR) / "tests" / "plan" / "cli-jobs";
  fs::remove_all(dir);
  const std::string command =
      fmt::format("{} {} --quiet --jobs {} --json {}", NETAGG_PLAN_EXE,
                  (fs::path(NETAGG_PLAN_TOPOLOGIES) / "grid-example.json").string(), dir.string(),
                  (dir / "report.json").string());
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  for (const char* policy : {"scheme1", "scheme2", "grid"}) {
    const JobSpec job = load_job(dir / fmt::format("{}.job.json", policy));
    EXPECT_EQ(job.world_size(), 8u);
    EXPECT_FALSE(job.trees.empty());
  }
  EXPECT_FALSE(fs::exists(dir / "lp.job.json"));
  std::ifstream in(dir / "report.json");
  const json report = json::parse(in);
  EXPECT_NEAR(report["policies"]["grid"]["rate_gbps"].get<double>(), 3, kTol);
  EXPECT_EQ(report["policies"]["grid"]["workers"].size(), 8u);
  EXPECT_FALSE(report["policies"]["lp"].contains("job"));
  // The report's job is the job file.
  EXPECT_EQ(report["policies"]["scheme2"]["job"],
            json::parse(to_json(load_job(dir / "scheme2.job.json"))));
}

// ---- Weights -----------------------------------------------------------------------------------

TEST(Weights, SmallRatiosExactlyElseFine) {
  EXPECT_EQ(integer_weights(std::vector<double>{12.0 / 13, 1.0 / 13}),
            (std::vector<std::uint32_t>{12, 1}));
  EXPECT_EQ(integer_weights(std::vector<double>{0.5, 0.5}), (std::vector<std::uint32_t>{1, 1}));
  const std::vector<double> odd = {1 / std::sqrt(2.0), 1 - 1 / std::sqrt(2.0)};
  const auto w = integer_weights(odd);
  EXPECT_EQ(w[0], 1u << 20);
  EXPECT_NEAR(double(w[1]) / (w[0] + w[1]), odd[1], 1e-6);
}

}  // namespace
}  // namespace netagg::plan

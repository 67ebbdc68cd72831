// SPDX-License-Identifier: Apache-2.0
// The planning model (docs/routing.md, "Model"): a job's workers send their gradients to one
// root through aggregation trees. In a tree every worker and every aggregating switch sends one
// stream to its parent (an aggregating switch or the root) along a route of links; a switch that
// receives k streams of a tree aggregates them (k times the tree's rate of its capacity) and
// sends one. A plan is a set of trees, each carrying a share of every worker's gradient; the
// workers' common rate x is split over the trees by share. In an all-reduce the results come
// back down every stream's route reversed, at the stream's rate.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "netagg/plan/topology.hpp"

namespace netagg::plan {

// What the capacities carry. kAllReduce: every stream towards the root, and the results coming
// back from each aggregator to each of its members (workers and child aggregators) on the
// member's stream's route reversed, at that stream's rate: on the other direction (the twin) of
// each of its links. A stream can then only use full-duplex links. kUpwardOnly: the streams
// towards the root alone (a parameter server whose downlink is not the job's to plan).
enum class Traffic { kAllReduce, kUpwardOnly };
std::string_view to_string(Traffic traffic);

// A job on a topology: its workers (rank order = the topology's order) and its root.
struct Problem {
  const Topology* topology = nullptr;
  Traffic traffic = Traffic::kAllReduce;
  int root = -1;
  std::vector<int> workers;  // node indices, rank r = workers[r]
  std::vector<int> rank;     // per node: its rank, or -1
  // Shortest paths (hops) to the root through switches only (hosts do not forward): per node its
  // hop count (-1: no path) and its next link on a shortest-path tree (-1 at the root).
  std::vector<int> distance;
  std::vector<int> next_link;

  const Topology& topo() const { return *topology; }
  // The links from `node` to the root on the shortest-path tree.
  std::vector<int> shortest_path(int node) const;
  // Whether a stream may use `link`: under kAllReduce only a full-duplex one (the results need
  // the way back).
  bool usable(int link) const;
  // What a stream over `route` loads per unit of its rate: the route's links, and under
  // kAllReduce their twins (the results).
  std::vector<int> loaded_links(const std::vector<int>& route) const;
};

// Checks the graph for a job: the root (by name, or the only root), every worker connected to it
// through switches (and, under kAllReduce, over full-duplex links). Errors are Error(kConfig)
// naming the node.
Problem make_problem(const Topology& topology, std::string_view root_name = {},
                     Traffic traffic = Traffic::kAllReduce);
// The problem points to the topology, which must outlive it.
Problem make_problem(const Topology&& topology, std::string_view root_name = {},
                     Traffic traffic = Traffic::kAllReduce) = delete;

// Up to `count` shortest simple paths (hop count) from `from` to `to` through switches only and
// over the links the problem's streams may use, by Yen's algorithm; equal-length paths are
// ordered by a pseudo-random perturbation drawn from `seed` and `from`, so that different sources
// prefer different ones of many equal paths (a fat tree's). Each path is a list of link indices.
std::vector<std::vector<int>> shortest_paths(const Problem& problem, int from, int to, int count,
                                             std::uint64_t seed);

// One stream of a tree: from a worker or an aggregating switch to its parent.
struct Stream {
  int from = -1;
  int to = -1;             // an aggregating switch, or the root
  std::vector<int> links;  // its route, from `from` to `to`
  friend bool operator==(const Stream&, const Stream&) = default;
};

struct Tree {
  std::vector<Stream> streams;  // one per worker and per switch with streams coming in
};

struct WeightedTree {
  Tree tree;
  double share = 0;  // fraction of every worker's gradient that this tree carries
};

// What a plan puts on each resource per Gbit/s of the workers' rate: on each link, the streams
// (weighted by their tree's share) it carries, and under kAllReduce the results of the streams
// on its twin; on each switch, the streams it aggregates (results pass through); at the root,
// the streams that enter it.
struct Usage {
  std::vector<double> link;  // per link
  std::vector<double> agg;   // per node (switches)
  double root = 0;
};

// Throws Error(kConfig) if a stream of an all-reduce uses a one-way link.
Usage usage_of(const Problem& problem, std::span<const WeightedTree> trees);
// The largest rate x with x * usage within every capacity.
double rate_of(const Problem& problem, const Usage& usage);
// "" if `tree` is a valid aggregation tree of the problem, else what is wrong.
std::string check_tree(const Problem& problem, const Tree& tree);

// A policy's result.
struct PlanResult {
  std::string policy;
  bool executable = true;              // false for the LP bound (fractional, no trees)
  std::vector<WeightedTree> trees;     // shares sum to 1
  std::vector<std::uint32_t> weights;  // the trees' integer weights in the job description
  double rate_gbps = 0;                // every worker's rate
  Usage usage;                         // per Gbit/s of rate
  std::string status;                  // "optimal", "heuristic", "best found (...)", ...
  double seconds = 0;                  // wall time of the policy
  nlohmann::json details = nlohmann::json::object();  // solver sizes, other values
};

// Integer weights (1..2^20) for the shares: exact when the shares are ratios of small integers,
// else within about 1e-6. Trees whose share rounds to 0 get weight 0 (left out of the job).
std::vector<std::uint32_t> integer_weights(std::span<const double> shares);
// Turns shares into the job's integer weights, drops trees of weight 0, recomputes usage and
// rate from the weights (what the job runs). Keeps `rate_gbps` if `keep_rate`.
void finish_plan(const Problem& problem, PlanResult& plan, bool keep_rate = false);

}  // namespace netagg::plan

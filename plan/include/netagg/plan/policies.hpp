// SPDX-License-Identifier: Apache-2.0
// The planner's policies (docs/routing.md): Scheme 1 (no in-network aggregation, the best
// single route per worker), Scheme 2 (aggregation at each worker's nearest programmable switch,
// the rest to the root, on shortest paths), GRID (the LP relaxation of the aggregation-tree
// program, randomized rounding) and the LP relaxation's value, an upper bound.
#pragma once

#include <cstdint>
#include <vector>

#include "netagg/plan/model.hpp"

namespace netagg::plan {

struct SolverOptions {
  int paths = 4;    // Yen's shortest paths per node to the root, besides the shortest-path tree's
  int rounds = 64;  // randomized roundings, and as many threshold roundings
  std::uint64_t seed = 1;
  int max_trees = 4;       // trees in GRID's plan (1: the best single tree)
  double time_limit = 20;  // seconds for Scheme 1's branch and bound
  bool verbose = false;    // GLPK's messages
};

// Each worker's and each programmable switch's candidate routes to the root: the route on the
// shortest-path tree, then up to `paths` shortest simple paths (shortest_paths()).
struct PathSet {
  std::vector<std::vector<std::vector<int>>> of;  // per node (empty for the others)
  double seconds = 0;
  std::size_t count() const;
};
PathSet make_paths(const Problem& problem, const SolverOptions& options);

// No aggregation: every worker sends its whole gradient to the root on one of its candidate
// routes (unsplittable), the routes chosen to maximize the common rate: a mixed-integer program
// solved by GLPK's branch and bound (with a time limit; the status says whether it finished),
// seeded with the best randomized rounding of its LP relaxation. The relaxation's value (routes
// split) is in details["splittable_gbps"].
PlanResult scheme1(const Problem& problem, const PathSet& paths, const SolverOptions& options);

// Each worker's stream follows the shortest-path tree to the root; the first programmable switch
// on the way aggregates as much of every stream that reaches it as its capacity allows at rate x
// (the same leading part of every worker's gradient), the rest goes on to the next one; the
// aggregated streams go to the root without further aggregation. The rate is the largest x at
// which every capacity holds (bisection).
PlanResult scheme2(const Problem& problem);

// GRID: the LP relaxation of choosing, for every worker and every aggregating switch, a parent
// and a route to it (parents of a switch closer to the root, so the choices form trees); then
// randomized rounding (`rounds` independent ones and `rounds` with one threshold for all nodes),
// the best tree, and the best mix of up to `max_trees` of the rounded trees (an LP over their
// shares). `lp` is the relaxation's value and loads: an upper bound on every plan built from the
// same candidate routes (GRID's, Scheme 1's and Scheme 2's).
struct GridResult {
  PlanResult grid;
  PlanResult lp;
};
GridResult grid(const Problem& problem, const PathSet& paths, const SolverOptions& options);

}  // namespace netagg::plan

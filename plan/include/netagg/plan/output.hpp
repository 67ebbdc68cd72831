// SPDX-License-Identifier: Apache-2.0
// What the planner writes: the job descriptions that run a plan (docs/job-format.md, "Trees"
// and "Several trees"), a JSON report, a table for people and a Graphviz drawing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "netagg/job.hpp"
#include "netagg/plan/model.hpp"

namespace netagg::plan {

struct JobOptions {
  std::uint16_t job_id = 1;  // tree t gets job_id + t
  std::uint16_t window = 64;
  std::uint16_t elements_per_packet = 256;
};

// Where a node listens (a switch's or the root's aggregator) or sends from (a worker): its
// `address` in the topology, else 10.<i / 256>.<i % 256>.1 for the i-th node of the file, port
// 20033 for an aggregator and 31000 for a worker.
Endpoint node_address(const Topology& topology, int node);

// The job that runs `plan`: one tree per plan tree, its weight the tree's integer weight, the
// root aggregator the problem's root, each aggregating switch an aggregator whose parent is the
// node its stream goes to; tree t's slots at every aggregator start at t * window. The job is
// written out and parsed back with netagg::parse_job (so it is what the runtime accepts).
// Throws Error(kConfig) for a plan that is not executable or that the format cannot hold.
JobSpec make_job(const Problem& problem, const PlanResult& plan, const JobOptions& options);

// Per-worker rates and routes, the trees, per-link and per-switch loads with the binding
// constraints; `job` (if given) as netagg's JSON.
nlohmann::json report(const Problem& problem, const PlanResult& plan, const JobSpec* job);

// The summary table of several policies' results, then each executable plan's trees and binding
// constraints (trees listed in full when `details`).
std::string table(const Problem& problem, const std::vector<PlanResult>& plans, bool details);

// A Graphviz drawing of the topology with the plan's loads: links and switches at capacity in
// red, the others' load over capacity on each used link (with the results counted, a full-duplex
// link once, in its streams' direction: both directions carry the same load).
std::string dot(const Problem& problem, const PlanResult& plan);

}  // namespace netagg::plan

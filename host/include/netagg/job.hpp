// SPDX-License-Identifier: Apache-2.0
// The job description: one format, read by the host runtime, the aggregator daemons and the
// device control planes (docs/job-format.md). A job is a set of workers that all-reduce
// together through a range of the aggregator's slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "netagg/wire.hpp"

namespace netagg {

struct Endpoint {
  std::uint32_t ip = 0;  // host order
  std::uint16_t port = 0;

  // "a.b.c.d:port"; throws Error(kConfig) naming `what` on bad input.
  static Endpoint parse(std::string_view text, std::string_view what = "address");
  std::string to_string() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// Throws Error(kConfig) naming `what` unless e's address can be one host's: not 0.0.0.0/8
// ("this network"), 224.0.0.0/4 (multicast), 240.0.0.0/4 (reserved) or 255.255.255.255.
// Packets of a worker or an aggregator always come from a host address, so any other would
// only make them look foreign.
void check_host_address(const Endpoint& e, std::string_view what);

// A member of a job at an aggregator: a worker, or a child aggregator of a tree that sends the
// partial sums of its own members as one contribution.
struct WorkerSpec {
  std::uint16_t rank = 0;
  Endpoint address;              // the worker's UDP source address
  std::optional<wire::Mac> mac;  // for the switch/FPGA control planes
  std::optional<std::uint16_t> switch_port;
  std::uint16_t covers = 1;  // workers this member stands for (a child aggregator: its subtree's)
};

// An aggregator that is a child in a tree: where a completed round's partial sum goes, as one
// contribution, and where the round's result comes from (docs/job-format.md, "Trees").
struct ParentSpec {
  Endpoint address;             // the parent aggregator
  std::uint16_t job_id = 0;     // the job's id at the parent
  std::uint16_t rank = 0;       // this aggregator's rank among the parent's members
  std::uint16_t slot_base = 0;  // the job's first slot at the parent (same slot count)
  // For the FPGA aggregator's frames to the parent: the parent's MAC (else one derived from its
  // address) and the FPGA port towards it (else port 0).
  std::optional<wire::Mac> mac;
  std::optional<std::uint16_t> switch_port;
  friend bool operator==(const ParentSpec&, const ParentSpec&) = default;
};

// One aggregator of a tree, in a whole-job description.
struct TreeNode {
  std::string name;
  Endpoint address;
  std::uint16_t slot_base = 0;         // the tree's first slot in this aggregator's pool
  std::optional<std::size_t> parent;   // index into TreeSpec::aggregators; none: the root
  std::vector<std::uint16_t> workers;  // the job's ranks that send to this aggregator
};

// An aggregation tree of a job: its aggregators, each a child of the one above it but the root;
// every worker of the job sends to exactly one of them.
struct TreeSpec {
  std::uint16_t job_id = 0;  // the packets' job_id in this tree, at every aggregator of it
  std::uint32_t weight = 1;  // share of the job's packets (several trees)
  std::uint16_t window = 0;  // slots of the tree at each of its aggregators: the workers' window
  std::vector<TreeNode> aggregators;
};

struct JobSpec {
  std::uint16_t job_id = 0;
  std::uint16_t slot_base = 0;            // first slot of the job's range in the aggregator
  std::uint16_t slot_count = 0;           // slots in the range = the workers' window
  std::uint16_t elements_per_packet = 0;  // payload elements of a full packet
  std::vector<WorkerSpec> workers;        // index == rank; ranks are 0..n-1
  std::optional<Endpoint> aggregator;     // where workers send (optional in the file)
  // At an aggregator: set when it is a child in a tree (its members' sums go to the parent).
  std::optional<ParentSpec> parent;
  // A whole job that runs on aggregation trees (then slot_base and slot_count are unused: each
  // tree has its window and each aggregator its slot base). Views: aggregator_view, worker_view.
  std::vector<TreeSpec> trees;

  std::size_t world_size() const { return workers.size(); }
  const WorkerSpec* find_worker(const Endpoint& source) const;
  // Workers the job's members stand for (the sum of their `covers`).
  std::size_t covered() const;
};

// The job as aggregator `name` of tree `tree` holds it: job_id the tree's, its slot range, its
// members (its workers of the job, ranks 0.. in the tree's order, then its child aggregators,
// each covering its subtree's workers) and, unless it is the root, its parent. Throws
// Error(kConfig) if the job has no such tree or aggregator.
JobSpec aggregator_view(const JobSpec& job, std::size_t tree, std::string_view name);
// What worker `rank` of the job sends to in tree `tree`: its aggregator's view of the job (with
// that aggregator's address as `aggregator`) and its rank there.
struct WorkerView {
  JobSpec job;
  std::uint16_t rank = 0;
};
WorkerView worker_view(const JobSpec& job, std::size_t tree, std::uint16_t rank);
// What an aggregator holds of `job`: the job itself if it has no trees, else its view of each
// tree it is part of, found by `name` (if not empty) or else by `address`. Throws Error(kConfig)
// if the job has trees and the aggregator is in none of them.
std::vector<JobSpec> jobs_at_aggregator(const JobSpec& job, std::string_view name,
                                        const std::optional<Endpoint>& address);
// The jobs of a job file as an aggregator holds them: jobs_at_aggregator for each of its jobs,
// errors (Error(kConfig)) prefixed with the file's name.
std::vector<JobSpec> load_aggregator_jobs(const std::filesystem::path& file, std::string_view name,
                                          const std::optional<Endpoint>& address);
// The index of the tree aggregator named `name`, or of the one at `address`; nullopt if none.
std::optional<std::size_t> find_tree_node(const TreeSpec& tree, std::string_view name);
std::optional<std::size_t> find_tree_node(const TreeSpec& tree, const Endpoint& address);

// Parses one job (a JSON object). Every error is Error(kConfig) naming `source` and the field.
JobSpec parse_job(std::string_view json_text, std::string_view source = "job");
// A file holding either one job object or {"jobs": [ ... ]}.
std::vector<JobSpec> load_jobs(const std::filesystem::path& file);
JobSpec load_job(const std::filesystem::path& file);  // exactly one job
std::string to_json(const JobSpec& job);

// A job on loopback: ranks 0..n-1 at 127.0.0.1:(first_port + rank).
JobSpec make_local_job(std::uint16_t job_id, std::uint16_t workers, std::uint16_t first_port,
                       std::uint16_t slot_base, std::uint16_t slot_count,
                       std::uint16_t elements_per_packet, Endpoint aggregator);

}  // namespace netagg

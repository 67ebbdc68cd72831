// SPDX-License-Identifier: Apache-2.0
// A fabric scenario: the topology, its queues, the job, the aggregators, the ring baseline and
// the background traffic (docs/fabric.md, "Scenario"). Parsed from JSON with every default
// filled in, so the result can echo exactly what ran.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge.hpp"

namespace netagg::fabric {

struct Topology {
  std::string kind = "leaf-spine";  // or "fat-tree", "graph"
  unsigned k = 4;                   // fat-tree: k pods, k^3/4 hosts
  unsigned leaves = 2;
  unsigned spines = 1;
  unsigned hosts_per_leaf = 4;
  double host_gbps = 100;
  // Each leaf-spine link (fat-tree: every link between switches). Derived when
  // `oversubscription` is given: hosts_per_leaf * host_gbps / (spines * oversubscription), and for
  // a fat tree host_gbps / oversubscription.
  double spine_gbps = 100;
  double oversubscription = 0;  // 0: not given
  double delay_us = 1;          // every link's propagation delay
  unsigned mtu = 1500;
  // "graph": netagg-plan's topology format, inline (`graph`) or from a file (`file`, relative to
  // the scenario's folder); workers in the file's order are the ranks.
  nlohmann::json graph_json;
  std::string file;
  GraphSpec graph;
  // Among equal-cost next hops: "none" the first, "per-flow" one by a hash of the 5-tuple (a
  // switch's ECMP), "per-packet" a random one per packet.
  std::string ecmp = "none";
};

struct Queues {
  std::string kind = "red-ecn";            // "red-ecn" or "drop-tail", on every switch egress port
  unsigned ecn_threshold_packets = 65;     // K: RED with MinTh = MaxTh = K, instantaneous
  unsigned capacity_packets = 1000;        // the queue's limit (both kinds)
  unsigned host_capacity_packets = 10000;  // hosts' NIC queue (drop-tail, never marks)
};

struct Job {
  unsigned workers = 0;  // 0: every host; else the first `workers` hosts in leaf order
  std::uint64_t tensor_bytes = 1 << 20;  // int32 elements = tensor_bytes / 4
  unsigned elements_per_packet = 256;
  unsigned window = 128;
  std::string aggregation = "tree";  // "single" (one aggregator on a spine), "tree" or "plan"
  // "plan": the trees, their weights and every stream's route (docs/fabric.md, "Plans"), inline
  // (`plan`) or from a file (`plan_file`, relative to the scenario's folder).
  nlohmann::json plan;
  std::string plan_file;
  std::string policy;  // when the plan is netagg-plan's report: which policy's plan
  // Each worker sends at most this many Gbit/s of UDP payload, split over the trees by weight
  // (the rates a plan assumes are paced rates); 0: as fast as the window allows. "plan" in the
  // scenario: the plan's predicted rate.
  double pace_gbps = 0;
  unsigned trees = 1;  // K: roots on spines 0..K-1 (mod spines), chunks round-robin
  bool congestion_control = true;
  // Contributions leave ECT(0); unset: as congestion_control. ECN-capable without congestion
  // control is a sender that is marked and does not react (RED then marks it instead of dropping).
  std::optional<bool> ecn_capable;
  std::uint32_t epoch = 1;
  double retransmit_timeout_us = 1000;  // before the first round trip is measured
  double min_retransmit_timeout_us = 100;
  double max_retransmit_timeout_us = 50000;
  double job_timeout_ms = 1000;
  int corrupt_rank = -1;  // fault injection for the tests (bridge.hpp, WorkerOptions)
  // The host fallback (docs/fallback.md): a worker with no result for this long stalls, and the
  // workers finish the all-reduce among themselves once all have stalled or finished; 0: none.
  // Below job_timeout_ms.
  double fallback_after_ms = 0;
  // Its exchange is modeled (bridge.hpp, FallbackCost): each collective call takes this long plus
  // its bytes at the host link rate.
  double fallback_step_us = 10;
};

// An aggregator that dies for good at a moment of the run (fault injection).
struct Kill {
  std::string aggregator;  // its name in the job (a switch of the topology)
  double at_us = 0;        // simulated time from the start of the simulation
};

struct Aggregator {
  // "switch": netagg's switch model; "fpga-hls": the FPGA aggregator's HLS C++ model, an
  // accelerator on the switch (PANAMA), fed frames as netagg-fpgad feeds it.
  std::string model = "switch";
  // Processing-rate limit: a FIFO served at this rate (0: unlimited, no queueing). At most one
  // of the two may be set.
  double rate_gbps = 0;        // of UDP payload
  double rate_mpps = 0;        // million packets per second
  unsigned queue_packets = 0;  // the FIFO's limit, 0: unlimited
};

struct Ring {
  // ns-3 TCP congestion control: "TcpDctcp", "TcpNewReno", "TcpCubic", ...; "auto": TcpDctcp
  // (with ECN) when the queues mark, else TcpNewReno.
  std::string tcp = "auto";
  unsigned segment_bytes = 1448;
  std::uint64_t buffer_bytes = 4 << 20;  // send and receive buffers
  double min_rto_us = 1000;
};

struct Background {
  double load = 0;  // offered load as a fraction of a host link, per host (0: none)
  std::uint64_t flow_bytes = 1 << 20;
  unsigned long_flows = 0;  // TCP flows that never end, across the fabric, from time 0
  std::uint64_t seed = 1;
};

struct Scenario {
  std::string name = "fabric";
  Topology topology;
  Queues queues;
  Job job;
  Aggregator aggregator;
  Ring ring;
  Background background;
  std::optional<Kill> kill;  // none: every aggregator lives
  std::vector<std::string> modes = {"innetwork", "ring"};
  double start_us = 100;     // the all-reduce starts here (TCP connections are set up before)
  double time_limit_s = 10;  // of simulated time, per mode

  // Hosts that can be workers: a graph's worker nodes.
  unsigned hosts() const {
    if (topology.kind == "graph") {
      unsigned n = 0;
      for (const auto& v : topology.graph.vertices) n += v.kind == GraphSpec::Kind::kWorker;
      return n;
    }
    return topology.kind == "fat-tree" ? topology.k * topology.k * topology.k / 4
                                       : topology.leaves * topology.hosts_per_leaf;
  }
  unsigned workers() const { return job.workers == 0 ? hosts() : job.workers; }
  std::uint64_t elements() const { return job.tensor_bytes / 4; }
  bool marks() const { return queues.kind == "red-ecn"; }
  bool ect() const { return job.ecn_capable.value_or(job.congestion_control); }
  std::string tcp_flavour() const;
};

// Throws std::runtime_error naming the field on bad input (unknown keys included). Files the
// scenario names are read relative to `base_dir` (the scenario file's folder; "" for the current
// one).
Scenario parse_scenario(const nlohmann::json& j, const std::string& base_dir = "");
nlohmann::json to_json(const Scenario& s);

}  // namespace netagg::fabric

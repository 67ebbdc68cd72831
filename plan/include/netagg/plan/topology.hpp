// SPDX-License-Identifier: Apache-2.0
// A network for the planner: workers, one or more roots (parameter servers / root aggregators),
// switches with an aggregation capacity, and links with a capacity per direction. The JSON format
// is in docs/routing.md, "Topology files".
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "netagg/job.hpp"

namespace netagg::plan {

inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

enum class NodeKind { kWorker, kSwitch, kRoot };
std::string_view to_string(NodeKind kind);

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kSwitch;
  // A switch: the incoming rate (Gbit/s) it can aggregate; 0: not programmable, it only forwards.
  double aggregation_gbps = 0;
  // A root: the total rate (Gbit/s) it can take in, on all its links together.
  double ingress_gbps = kUnlimited;
  // A worker's UDP source, or where a switch's or a root's aggregator listens (job descriptions).
  std::optional<Endpoint> address;
  // Fat trees: "edge", "aggregation", "core" or "host"; informational.
  std::string layer;

  bool programmable() const { return kind == NodeKind::kSwitch && aggregation_gbps > 0; }
};

// One direction of a link. A full-duplex link of the file is two of these with the same name.
struct Link {
  std::string name;
  int from = -1;
  int to = -1;
  double gbps = 0;
  int twin = -1;  // the other direction of a full-duplex link; -1 for a one-way link
};

struct Topology {
  std::string name;
  std::string description;
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<std::vector<int>> out_links;  // per node: the links leaving it
  std::vector<std::vector<int>> in_links;   // per node: the links entering it

  int find(std::string_view name) const;  // -1 if no node has that name
  std::vector<int> nodes_of(NodeKind kind) const;
  // Recomputes out_links and in_links from links.
  void index();
};

// Parses a topology file's text. Every error is Error(kConfig) naming `source`, the field (its
// path in the file) and the problem; unknown fields are errors.
Topology parse_topology(std::string_view json_text, std::string_view source = "topology");
Topology load_topology(const std::filesystem::path& file);
// The file format again (full-duplex pairs as one entry).
nlohmann::json to_json(const Topology& topology);

// A k-ary fat tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation
// switches, (k/2)^2 core switches, k/2 hosts per edge switch (k^3/4 hosts). Host 0 is the root;
// `workers` hosts spread evenly over the others are the workers (default: all of them).
struct FatTreeOptions {
  int k = 4;
  int workers = -1;              // -1: every host but the root
  double link_gbps = 10;         // every link, each direction
  double aggregation_gbps = 30;  // every programmable switch
  double root_ingress_gbps = kUnlimited;
  // Layers whose switches are programmable: any of "edge", "aggregation", "core".
  std::vector<std::string> programmable = {"edge", "aggregation", "core"};
};
Topology fat_tree(const FatTreeOptions& options);

}  // namespace netagg::plan

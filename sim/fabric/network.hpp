// SPDX-License-Identifier: Apache-2.0
// The fabric's network in ns-3: a leaf-spine or k-ary fat-tree topology of point-to-point links,
// IPv4 with the fabric's shortest-path routing (routing.hpp), a queue discipline on every switch
// egress port (RED marking ECN at a DCTCP-style threshold, or drop-tail), and the statistics the
// result reports: queue occupancy, marks and drops of the switch queues, packets sent on links.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ns3/ipv4-address.h"
#include "ns3/node-container.h"
#include "ns3/queue-disc.h"

#include "routing.hpp"
#include "scenario.hpp"

namespace netagg::fabric {

// One switch egress queue's occupancy over time (packets), integrated between trace callbacks.
struct QueueTrace {
  std::uint32_t now = 0;
  std::uint32_t max = 0;
  double area = 0;  // packet-nanoseconds since `since_ns`
  std::int64_t last_ns = 0;
  std::int64_t since_ns = 0;
};

// The topology as a graph. Vertices 0..hosts-1 are the hosts in rank order, the switches follow.
struct Graph {
  struct Link {
    unsigned a = 0, b = 0;
    double gbps = 0;
  };
  std::vector<std::string> names;   // per vertex: host3, leaf0, spine1, edge2_0, agg2_1, core5
  unsigned hosts = 0;               // vertices [0, hosts) are hosts
  std::vector<Link> links;          // in the order their interfaces are made
  std::vector<unsigned> host_edge;  // per host: the switch it is attached to
  std::vector<unsigned> tops;       // the top tier (spines, cores): where trees are rooted
};
Graph make_graph(const Topology& t);

struct Network {
  Graph graph;
  std::vector<ns3::Ptr<ns3::Node>> node;  // per vertex
  std::vector<ns3::Ipv4Address> ip;       // per vertex: its first link's address
  ns3::NodeContainer hosts;               // the host vertices, in rank order
  std::vector<ns3::Ipv4Address> host_ip;  // per host
  std::shared_ptr<FabricRoutes> routes;
  std::vector<ns3::Ptr<FabricRouting>> routing;  // per vertex

  std::vector<ns3::Ptr<ns3::QueueDisc>> switch_queues;    // every switch egress port
  std::vector<std::unique_ptr<QueueTrace>> queue_traces;  // one per switch queue
  std::vector<ns3::Ptr<ns3::QueueDisc>> all_queues;       // the switches' and the hosts'

  // Packets handed to a link by any device since the simulation began (one per hop), from the
  // queue discs' counters (a trace per packet would cost more than the count is worth).
  std::uint64_t link_packets() const;

  unsigned vertex(const std::string& name) const;  // throws std::out_of_range
};

// Builds the topology of `s` into the (fresh) ns-3 simulation and populates the routing tables.
// Call once per simulation.
std::unique_ptr<Network> build_network(const Scenario& s);

// Starts the queue statistics' window now (called at the all-reduce's start).
void restart_queue_stats(Network& net);

struct QueueSummary {
  std::uint32_t max_packets = 0;    // the largest occupancy any switch queue reached
  double mean_packets = 0;          // time-average, over every switch queue
  double busiest_mean_packets = 0;  // the largest time-average of one queue
  std::uint64_t ecn_marks = 0;      // packets marked CE by the switch queues
  std::uint64_t drops = 0;          // packets the switch queues dropped
  std::uint64_t enqueued = 0;       // packets the switch queues received
  unsigned queues = 0;
};
QueueSummary summarize_queues(Network& net);

}  // namespace netagg::fabric

// SPDX-License-Identifier: Apache-2.0
// The fabric's network in ns-3: a leaf-spine topology of point-to-point links, IPv4 with ns-3's
// global routing, a queue discipline on every switch egress port (RED marking ECN at a DCTCP-style
// threshold, or drop-tail), and the statistics the result reports: queue occupancy, marks and
// drops of the switch queues, packets sent on links.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ns3/ipv4-address.h"
#include "ns3/node-container.h"
#include "ns3/queue-disc.h"

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

struct Network {
  ns3::NodeContainer hosts, leaves, spines;
  std::vector<ns3::Ipv4Address> host_ip;   // per host, in leaf order
  std::vector<ns3::Ipv4Address> leaf_ip;   // a leaf's address: its port towards its first host
  std::vector<ns3::Ipv4Address> spine_ip;  // a spine's address: its port towards leaf 0
  std::vector<unsigned> host_leaf;         // the leaf of each host

  std::vector<ns3::Ptr<ns3::QueueDisc>> switch_queues;    // every switch egress port
  std::vector<std::unique_ptr<QueueTrace>> queue_traces;  // one per switch queue
  std::uint64_t link_packets = 0;  // packets put on a link by any device (one per hop)
};

// Builds the topology of `s` into the (fresh) ns-3 simulation and populates the routing tables.
// Sets the ns-3 defaults the topology needs (ECMP); call once per simulation.
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

// SPDX-License-Identifier: Apache-2.0
#include "network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ns3/boolean.h"
#include "ns3/callback.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-interface-container.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/ipv4.h"
#include "ns3/net-device-container.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/queue-disc-container.h"
#include "ns3/queue-size.h"
#include "ns3/simulator.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

namespace netagg::fabric {

namespace {

using namespace ns3;

DataRate gbps(double g) { return DataRate(static_cast<std::uint64_t>(std::llround(g * 1e9))); }

PointToPointHelper link(double rate_gbps, double delay_us, unsigned mtu) {
  PointToPointHelper h;
  h.SetDeviceAttribute("DataRate", DataRateValue(gbps(rate_gbps)));
  h.SetDeviceAttribute("Mtu", UintegerValue(mtu));
  h.SetChannelAttribute("Delay", TimeValue(NanoSeconds(std::llround(delay_us * 1e3))));
  // The device's own queue holds one packet: packets wait in the queue disc above it (which
  // marks or drops), and the device's flow control stops the disc while the link is busy.
  h.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
  return h;
}

TrafficControlHelper switch_queue(const Queues& q, double rate_gbps, double delay_us) {
  TrafficControlHelper tch;
  const QueueSizeValue size(QueueSize(QueueSizeUnit::PACKETS, q.capacity_packets));
  if (q.kind == "red-ecn") {
    // DCTCP's marking: CE on every ECN-capable packet that arrives to a queue of K packets or
    // more (instantaneous queue: QW = 1; a step at K: MinTh = MaxTh = K, not gentle); a packet
    // that is not ECN-capable is dropped there instead; above the capacity every packet is.
    tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", size, "UseEcn", BooleanValue(true),
                         "UseHardDrop", BooleanValue(false), "Gentle", BooleanValue(false), "QW",
                         DoubleValue(1.0), "MinTh", DoubleValue(q.ecn_threshold_packets), "MaxTh",
                         DoubleValue(q.ecn_threshold_packets), "MeanPktSize", UintegerValue(1500),
                         "LinkBandwidth", DataRateValue(gbps(rate_gbps)), "LinkDelay",
                         TimeValue(NanoSeconds(std::llround(delay_us * 1e3))));
  } else {
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", size);
  }
  return tch;
}

TrafficControlHelper host_queue(const Queues& q) {
  TrafficControlHelper tch;
  tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                       QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, q.host_capacity_packets)));
  return tch;
}

void on_queue_length(QueueTrace* t, std::uint32_t, std::uint32_t now) {
  const std::int64_t ns = Simulator::Now().GetNanoSeconds();
  t->area += static_cast<double>(t->now) * static_cast<double>(ns - t->last_ns);
  t->last_ns = ns;
  t->now = now;
  t->max = std::max(t->max, now);
}

}  // namespace

Graph make_graph(const Topology& t) {
  Graph g;
  auto add = [&g](std::string name) {
    g.names.push_back(std::move(name));
    return static_cast<unsigned>(g.names.size() - 1);
  };
  if (t.kind == "graph") {
    // Workers first (ranks in the file's order), then roots: the hosts; then the switches.
    const GraphSpec& spec = t.graph;
    std::vector<unsigned> vertex_of(spec.vertices.size());
    for (const auto kind :
         {GraphSpec::Kind::kWorker, GraphSpec::Kind::kRoot, GraphSpec::Kind::kSwitch})
      for (std::size_t i = 0; i < spec.vertices.size(); ++i)
        if (spec.vertices[i].kind == kind) {
          vertex_of[i] = add(spec.vertices[i].name);
          if (kind == GraphSpec::Kind::kRoot) g.tops.push_back(vertex_of[i]);
          if (kind != GraphSpec::Kind::kSwitch) ++g.hosts;
        }
    for (const GraphSpec::Edge& e : spec.edges)
      g.links.push_back({vertex_of[e.a], vertex_of[e.b], e.gbps});
    g.host_edge.assign(g.hosts, 0);
    std::vector<bool> seen(g.hosts, false);
    for (const Graph::Link& l : g.links)
      for (const auto& [h, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}})
        if (h < g.hosts && !seen[h]) {
          g.host_edge[h] = other;
          seen[h] = true;
        }
    for (unsigned h = 0; h < g.hosts; ++h)
      if (!seen[h]) throw std::runtime_error("fabric: " + g.names[h] + " has no link");
    if (g.tops.empty())  // no root: trees are rooted at switches
      for (unsigned v = g.hosts; v < g.names.size(); ++v) g.tops.push_back(v);
    return g;
  }
  if (t.kind == "fat-tree") {
    // k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores; edge switch i of pod p has
    // k/2 hosts; aggregation switch j of every pod links to cores j*k/2 .. j*k/2 + k/2 - 1.
    const unsigned h = t.k / 2;
    g.hosts = t.k * h * h;
    for (unsigned i = 0; i < g.hosts; ++i) add(fmt::format("host{}", i));
    std::vector<unsigned> edge(t.k * h), agg(t.k * h), core(h * h);
    for (unsigned p = 0; p < t.k; ++p) {
      for (unsigned i = 0; i < h; ++i) edge[p * h + i] = add(fmt::format("edge{}_{}", p, i));
      for (unsigned j = 0; j < h; ++j) agg[p * h + j] = add(fmt::format("agg{}_{}", p, j));
    }
    for (unsigned c = 0; c < h * h; ++c) core[c] = add(fmt::format("core{}", c));
    for (unsigned e = 0; e < t.k * h; ++e)
      for (unsigned i = 0; i < h; ++i) {
        g.links.push_back({e * h + i, edge[e], t.host_gbps});
        g.host_edge.push_back(edge[e]);
      }
    for (unsigned p = 0; p < t.k; ++p)
      for (unsigned i = 0; i < h; ++i)
        for (unsigned j = 0; j < h; ++j)
          g.links.push_back({edge[p * h + i], agg[p * h + j], t.spine_gbps});
    for (unsigned c = 0; c < h * h; ++c)
      for (unsigned p = 0; p < t.k; ++p)
        g.links.push_back({agg[p * h + c / h], core[c], t.spine_gbps});
    g.tops = core;
    return g;
  }
  g.hosts = t.leaves * t.hosts_per_leaf;
  for (unsigned i = 0; i < g.hosts; ++i) add(fmt::format("host{}", i));
  std::vector<unsigned> leaf(t.leaves), spine(t.spines);
  for (unsigned l = 0; l < t.leaves; ++l) leaf[l] = add(fmt::format("leaf{}", l));
  for (unsigned sp = 0; sp < t.spines; ++sp) spine[sp] = add(fmt::format("spine{}", sp));
  for (unsigned l = 0; l < t.leaves; ++l)
    for (unsigned i = 0; i < t.hosts_per_leaf; ++i) {
      g.links.push_back({l * t.hosts_per_leaf + i, leaf[l], t.host_gbps});
      g.host_edge.push_back(leaf[l]);
    }
  for (unsigned l = 0; l < t.leaves; ++l)
    for (unsigned sp = 0; sp < t.spines; ++sp)
      g.links.push_back({leaf[l], spine[sp], t.spine_gbps});
  g.tops = spine;
  return g;
}

unsigned Network::vertex(const std::string& name) const {
  const auto it = std::find(graph.names.begin(), graph.names.end(), name);
  if (it == graph.names.end()) throw std::out_of_range("fabric: no vertex " + name);
  return static_cast<unsigned>(it - graph.names.begin());
}

std::unique_ptr<Network> build_network(const Scenario& s) {
  const Topology& t = s.topology;
  auto net = std::make_unique<Network>();
  net->graph = make_graph(t);
  const Graph& g = net->graph;
  const std::size_t n = g.names.size();

  // The stack with static routing (which routes nothing here), replaced below by the fabric's.
  InternetStackHelper stack;
  Ipv4StaticRoutingHelper static_routing;
  stack.SetRoutingHelper(static_routing);
  for (std::size_t v = 0; v < n; ++v) {
    net->node.push_back(CreateObject<Node>());
    stack.Install(net->node.back());
    if (v < g.hosts) net->hosts.Add(net->node.back());
  }

  TrafficControlHelper host_tc = host_queue(s.queues);
  // Every link its own /30 from 10.0.0.0/8. Queue discs go on before the addresses (the address
  // helper installs a default disc on a device that has none).
  Ipv4AddressHelper addresses;
  addresses.SetBase("10.0.0.0", "255.255.255.252");
  net->ip.assign(n, Ipv4Address());
  std::vector<bool> has_ip(n, false);
  std::vector<std::vector<FabricRoutes::Port>> ports(n);
  struct Side {
    unsigned v, peer;
    std::uint32_t interface;
    Ipv4Address local, remote;
    Ptr<NetDevice> device;
  };
  std::vector<Side> sides;
  for (const Graph::Link& l : g.links) {
    PointToPointHelper helper = link(l.gbps, t.delay_us, t.mtu);
    NetDeviceContainer d = helper.Install(net->node[l.a], net->node[l.b]);
    const unsigned ends[2] = {l.a, l.b};
    for (unsigned e = 0; e < 2; ++e) {
      if (ends[e] < g.hosts) {
        const QueueDiscContainer qs = host_tc.Install(d.Get(e));
        for (auto it = qs.Begin(); it != qs.End(); ++it) net->all_queues.push_back(*it);
      } else {
        TrafficControlHelper tc = switch_queue(s.queues, l.gbps, t.delay_us);
        const QueueDiscContainer qs = tc.Install(d.Get(e));
        for (auto it = qs.Begin(); it != qs.End(); ++it) {
          net->switch_queues.push_back(*it);
          net->all_queues.push_back(*it);
        }
      }
    }
    const Ipv4InterfaceContainer ifc = addresses.Assign(d);
    addresses.NewNetwork();
    for (unsigned e = 0; e < 2; ++e) {
      const unsigned v = ends[e];
      const std::uint32_t interface = ifc.Get(e).second;
      if (!has_ip[v]) {
        net->ip[v] = ifc.GetAddress(e);
        has_ip[v] = true;
      }
      ports[v].push_back({ends[1 - e], interface});
      sides.push_back(
          {v, ends[1 - e], interface, ifc.GetAddress(e), ifc.GetAddress(1 - e), d.Get(e)});
    }
  }
  for (unsigned h = 0; h < g.hosts; ++h) net->host_ip.push_back(net->ip[h]);

  const Ecmp ecmp = t.ecmp == "per-flow"     ? Ecmp::kPerFlow
                    : t.ecmp == "per-packet" ? Ecmp::kPerPacket
                                             : Ecmp::kFirst;
  std::vector<bool> transit(n);
  for (std::size_t v = 0; v < n; ++v) transit[v] = v >= g.hosts;
  net->routes =
      std::make_shared<FabricRoutes>(std::move(ports), std::move(transit), ecmp, s.background.seed);
  for (const Side& side : sides) {
    net->routes->add_address(side.local, side.v);
    Ptr<Ipv4Route> r = Create<Ipv4Route>();
    r->SetSource(side.local);
    r->SetGateway(side.remote);
    r->SetOutputDevice(side.device);
    net->routes->set_route(side.v, side.interface, r);
  }
  for (std::size_t v = 0; v < n; ++v) {
    Ptr<FabricRouting> routing = CreateObject<FabricRouting>();
    routing->Setup(net->routes, static_cast<unsigned>(v));
    net->node[v]->GetObject<Ipv4>()->SetRoutingProtocol(routing);
    net->routing.push_back(routing);
  }

  for (const auto& q : net->switch_queues) {
    net->queue_traces.push_back(std::make_unique<QueueTrace>());
    q->TraceConnectWithoutContext(
        "PacketsInQueue", MakeBoundCallback(&on_queue_length, net->queue_traces.back().get()));
  }
  return net;
}

std::uint64_t Network::link_packets() const {
  std::uint64_t sent = 0;
  for (const auto& q : all_queues) sent += q->GetStats().nTotalSentPackets;
  return sent;
}

void restart_queue_stats(Network& net) {
  const std::int64_t ns = Simulator::Now().GetNanoSeconds();
  for (auto& t : net.queue_traces) {
    t->area = 0;
    t->last_ns = ns;
    t->since_ns = ns;
    t->max = t->now;
  }
}

QueueSummary summarize_queues(Network& net) {
  QueueSummary out;
  const std::int64_t ns = Simulator::Now().GetNanoSeconds();
  double sum = 0;
  for (std::size_t i = 0; i < net.switch_queues.size(); ++i) {
    QueueTrace& t = *net.queue_traces[i];
    t.area += static_cast<double>(t.now) * static_cast<double>(ns - t.last_ns);
    t.last_ns = ns;
    const double span = static_cast<double>(ns - t.since_ns);
    const double mean = span > 0 ? t.area / span : 0;
    sum += mean;
    out.busiest_mean_packets = std::max(out.busiest_mean_packets, mean);
    out.max_packets = std::max(out.max_packets, t.max);
    const QueueDisc::Stats& st = net.switch_queues[i]->GetStats();
    out.ecn_marks += st.nTotalMarkedPackets;
    out.drops += st.nTotalDroppedPackets;
    out.enqueued += st.nTotalReceivedPackets;
  }
  out.queues = static_cast<unsigned>(net.switch_queues.size());
  out.mean_packets = out.queues ? sum / out.queues : 0;
  return out;
}

}  // namespace netagg::fabric

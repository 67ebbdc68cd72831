// SPDX-License-Identifier: Apache-2.0
#include "network.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "ns3/boolean.h"
#include "ns3/callback.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-interface-container.h"
#include "ns3/net-device-container.h"
#include "ns3/net-device.h"
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

void on_link_packet(std::uint64_t* count, Ptr<const Packet>) { ++*count; }

}  // namespace

std::unique_ptr<Network> build_network(const Scenario& s) {
  const Topology& t = s.topology;
  auto net = std::make_unique<Network>();
  Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting",
                     BooleanValue(t.ecmp == "per-packet"));

  net->hosts.Create(s.hosts());
  net->leaves.Create(t.leaves);
  net->spines.Create(t.spines);
  InternetStackHelper stack;
  stack.Install(net->hosts);
  stack.Install(net->leaves);
  stack.Install(net->spines);

  PointToPointHelper host_link = link(t.host_gbps, t.delay_us, t.mtu);
  PointToPointHelper spine_link = link(t.spine_gbps, t.delay_us, t.mtu);
  TrafficControlHelper host_tc = host_queue(s.queues);
  TrafficControlHelper leaf_down_tc = switch_queue(s.queues, t.host_gbps, t.delay_us);
  TrafficControlHelper fabric_tc = switch_queue(s.queues, t.spine_gbps, t.delay_us);

  // Every link its own /30 from 10.0.0.0/8. Queue discs go on before the addresses (the address
  // helper installs a default disc on a device that has none).
  Ipv4AddressHelper addresses;
  addresses.SetBase("10.0.0.0", "255.255.255.252");
  NetDeviceContainer all;
  auto add_switch_queues = [&](const QueueDiscContainer& qs) {
    for (auto it = qs.Begin(); it != qs.End(); ++it) net->switch_queues.push_back(*it);
  };

  net->host_ip.resize(s.hosts());
  net->host_leaf.resize(s.hosts());
  net->leaf_ip.resize(t.leaves);
  net->spine_ip.resize(t.spines);
  for (unsigned l = 0; l < t.leaves; ++l)
    for (unsigned i = 0; i < t.hosts_per_leaf; ++i) {
      const unsigned h = l * t.hosts_per_leaf + i;
      NetDeviceContainer d = host_link.Install(net->hosts.Get(h), net->leaves.Get(l));
      host_tc.Install(d.Get(0));
      add_switch_queues(leaf_down_tc.Install(d.Get(1)));
      const Ipv4InterfaceContainer ifc = addresses.Assign(d);
      addresses.NewNetwork();
      net->host_ip[h] = ifc.GetAddress(0);
      net->host_leaf[h] = l;
      if (i == 0) net->leaf_ip[l] = ifc.GetAddress(1);
      all.Add(d);
    }
  for (unsigned l = 0; l < t.leaves; ++l)
    for (unsigned sp = 0; sp < t.spines; ++sp) {
      NetDeviceContainer d = spine_link.Install(net->leaves.Get(l), net->spines.Get(sp));
      add_switch_queues(fabric_tc.Install(d));
      const Ipv4InterfaceContainer ifc = addresses.Assign(d);
      addresses.NewNetwork();
      if (l == 0) net->spine_ip[sp] = ifc.GetAddress(1);
      all.Add(d);
    }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  for (const auto& q : net->switch_queues) {
    net->queue_traces.push_back(std::make_unique<QueueTrace>());
    q->TraceConnectWithoutContext(
        "PacketsInQueue", MakeBoundCallback(&on_queue_length, net->queue_traces.back().get()));
  }
  for (auto it = all.Begin(); it != all.End(); ++it)
    (*it)->TraceConnectWithoutContext("PhyTxEnd",
                                      MakeBoundCallback(&on_link_packet, &net->link_packets));
  return net;
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

// SPDX-License-Identifier: Apache-2.0
// The fabric's IPv4 routing: shortest paths over the topology's graph, computed once, looked up
// in constant time per packet, with a choice among equal-cost next hops (the first, a hash of the
// flow's 5-tuple as switches' ECMP does, or a random one per packet).
//
// ns-3's global routing computes the same shortest paths but keeps one route per link in a list
// that every packet walks (and a list of interfaces per lookup): with a thousand hosts that was
// most of the simulator's time. Here a packet's next hop is two array lookups.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4.h"

namespace netagg::fabric {

enum class Ecmp { kFirst, kPerFlow, kPerPacket };

// Routes of every node of one simulation, shared by their FabricRouting instances.
class FabricRoutes {
 public:
  // The graph: `neighbours[v]` lists (neighbour vertex, ns-3 interface index on v) per link of v,
  // `transit[v]` whether v forwards packets it did not originate (switches; hosts do not).
  struct Port {
    unsigned peer;
    std::uint32_t interface;
  };
  FabricRoutes(std::vector<std::vector<Port>> neighbours, std::vector<bool> transit, Ecmp ecmp,
               std::uint64_t seed);

  // Every address of vertex v (all its interfaces') must be registered before the first packet.
  void add_address(ns3::Ipv4Address a, unsigned v) { vertex_of_[a.Get()] = v; }
  // The route object used to send out of `interface` of v (source: that interface's address,
  // gateway: the peer's address on the link).
  void set_route(unsigned v, std::uint32_t interface, ns3::Ptr<ns3::Ipv4Route> r);

  // The vertex that owns `a`, or -1.
  long vertex_of(ns3::Ipv4Address a) const {
    const auto it = vertex_of_.find(a.Get());
    return it == vertex_of_.end() ? -1 : static_cast<long>(it->second);
  }
  // Equal-cost next-hop interfaces from v towards destination vertex d (empty: unreachable or
  // v == d).
  const std::uint32_t* next_begin(unsigned v, unsigned d) const {
    return &choices_[v][offsets_[v][d]];
  }
  std::size_t next_count(unsigned v, unsigned d) const {
    return offsets_[v][d + 1] - offsets_[v][d];
  }
  ns3::Ptr<ns3::Ipv4Route> route(unsigned v, std::uint32_t interface) const {
    return interface < routes_[v].size() ? routes_[v][interface] : nullptr;
  }
  // Pins the netagg datagrams of job `job` between the ends of `path` (vertices) to it, both
  // ways: at each vertex on the way, a datagram from one end to the other with that job id in
  // its netagg header leaves towards the next vertex of the path, whatever the shortest paths
  // are (a plan's routes; docs/fabric.md, "Plans"). Throws std::runtime_error if a vertex pair of
  // the path is not a link or the pin contradicts an earlier one.
  void pin(std::uint16_t job, const std::vector<unsigned>& path);
  bool has_pins() const { return pins_ > 0; }
  // The pinned interface at v for job's datagrams from src to dst, if any.
  bool pinned(unsigned v, std::uint16_t job, unsigned src, unsigned dst,
              std::uint32_t& interface) const;

  Ecmp ecmp() const { return ecmp_; }
  std::uint64_t seed() const { return seed_; }
  // Vertices on one shortest path from `from` to `to`, both included, taking the first of
  // equal-cost next hops (the lowest interface index); empty when unreachable.
  std::vector<unsigned> first_path(unsigned from, unsigned to) const;
  // Interface of `from` on its link towards neighbour `to`, or -1.
  long interface_to(unsigned from, unsigned to) const;

 private:
  std::vector<std::vector<Port>> neighbours_;
  std::unordered_map<std::uint32_t, unsigned> vertex_of_;
  std::vector<std::vector<std::uint32_t>> offsets_;  // [v][d]..[v][d+1] in choices_[v]
  std::vector<std::vector<std::uint32_t>> choices_;
  std::vector<std::vector<ns3::Ptr<ns3::Ipv4Route>>> routes_;  // [v][interface]
  // Per vertex: (job, source vertex, destination vertex) -> interface.
  std::vector<std::unordered_map<std::uint64_t, std::uint32_t>> pinned_;
  std::size_t pins_ = 0;
  Ecmp ecmp_;
  std::uint64_t seed_;
};

// One node's routing protocol over the shared FabricRoutes.
class FabricRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId();
  void Setup(std::shared_ptr<const FabricRoutes> routes, unsigned vertex);

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice> oif,
                                       ns3::Socket::SocketErrno& sockerr) override;
  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header,
                  ns3::Ptr<const ns3::NetDevice> idev, UnicastForwardCallback ucb,
                  MulticastForwardCallback mcb, LocalDeliverCallback lcb,
                  ErrorCallback ecb) override;
  void NotifyInterfaceUp(std::uint32_t) override {}
  void NotifyInterfaceDown(std::uint32_t) override {}
  void NotifyAddAddress(std::uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(std::uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream,
                         ns3::Time::Unit unit) const override;

  std::uint64_t forwarded() const { return forwarded_; }

 private:
  void DoDispose() override;
  // The next-hop interface towards d for a packet of this flow; false if there is none.
  bool choose(unsigned d, std::uint64_t flow, std::uint32_t& interface);
  // A pinned route for a UDP datagram whose netagg header starts at `offset` of p.
  bool pinned(const ns3::Ptr<const ns3::Packet>& p, std::size_t offset, unsigned src, unsigned d,
              std::uint32_t& interface) const;

  std::shared_ptr<const FabricRoutes> routes_;
  unsigned vertex_ = 0;
  ns3::Ptr<ns3::Ipv4> ipv4_;
  std::mt19937_64 rng_;
  std::uint64_t forwarded_ = 0;
};

}  // namespace netagg::fabric

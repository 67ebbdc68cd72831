// SPDX-License-Identifier: Apache-2.0
#include "routing.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>

#include "ns3/ipv4-header.h"
#include "ns3/log.h"
#include "ns3/output-stream-wrapper.h"
#include "ns3/packet.h"

#include "bridge.hpp"

namespace netagg::fabric {

using namespace ns3;

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

FabricRoutes::FabricRoutes(std::vector<std::vector<Port>> neighbours, std::vector<bool> transit,
                           Ecmp ecmp, std::uint64_t seed)
    : neighbours_(std::move(neighbours)), ecmp_(ecmp), seed_(seed) {
  const std::size_t n = neighbours_.size();
  for (auto& ports : neighbours_)
    std::sort(ports.begin(), ports.end(),
              [](const Port& a, const Port& b) { return a.interface < b.interface; });
  offsets_.assign(n, std::vector<std::uint32_t>(n + 1, 0));
  choices_.assign(n, {});
  routes_.assign(n, {});
  constexpr unsigned kFar = std::numeric_limits<unsigned>::max();
  std::vector<unsigned> dist(n);
  std::deque<unsigned> queue;
  // Per destination d: hop counts towards d over paths whose inner vertices forward (a host is
  // only ever a path's end), then every vertex's neighbours one hop closer are its next hops.
  // Destinations in increasing order, so each vertex's choices are laid out by destination.
  for (unsigned d = 0; d < n; ++d) {
    std::fill(dist.begin(), dist.end(), kFar);
    dist[d] = 0;
    queue.assign(1, d);
    while (!queue.empty()) {
      const unsigned u = queue.front();
      queue.pop_front();
      if (u != d && !transit[u]) continue;  // reached, but forwards nothing
      for (const Port& p : neighbours_[u])
        if (dist[p.peer] == kFar) {
          dist[p.peer] = dist[u] + 1;
          queue.push_back(p.peer);
        }
    }
    for (unsigned v = 0; v < n; ++v) {
      offsets_[v][d] = static_cast<std::uint32_t>(choices_[v].size());
      if (v == d || dist[v] == kFar) continue;
      for (const Port& p : neighbours_[v])
        if (dist[p.peer] + 1 == dist[v] && (p.peer == d || transit[p.peer]))
          choices_[v].push_back(p.interface);
    }
  }
  for (unsigned v = 0; v < n; ++v) offsets_[v][n] = static_cast<std::uint32_t>(choices_[v].size());
}

namespace {
std::uint64_t pin_key(std::uint16_t job, unsigned src, unsigned dst) {
  return (std::uint64_t{job} << 48) | (std::uint64_t{src} << 24) | dst;
}
}  // namespace

void FabricRoutes::pin(std::uint16_t job, const std::vector<unsigned>& path) {
  if (path.size() < 2) throw std::runtime_error("fabric: a pinned route needs two vertices");
  if (pinned_.empty()) pinned_.resize(neighbours_.size());
  auto put = [&](unsigned at, unsigned next, unsigned src, unsigned dst) {
    const long interface = interface_to(at, next);
    if (interface < 0)
      throw std::runtime_error("fabric: a pinned route steps between vertices " +
                               std::to_string(at) + " and " + std::to_string(next) +
                               ", which no link joins");
    const auto [it, fresh] =
        pinned_[at].emplace(pin_key(job, src, dst), static_cast<std::uint32_t>(interface));
    if (!fresh && it->second != static_cast<std::uint32_t>(interface))
      throw std::runtime_error("fabric: two routes pinned for one stream of job " +
                               std::to_string(job));
    pins_ += fresh ? 1 : 0;
  };
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    put(path[i], path[i + 1], path.front(), path.back());
    put(path[path.size() - 1 - i], path[path.size() - 2 - i], path.back(), path.front());
  }
}

bool FabricRoutes::pinned(unsigned v, std::uint16_t job, unsigned src, unsigned dst,
                          std::uint32_t& interface) const {
  if (pins_ == 0 || pinned_[v].empty()) return false;
  const auto it = pinned_[v].find(pin_key(job, src, dst));
  if (it == pinned_[v].end()) return false;
  interface = it->second;
  return true;
}

void FabricRoutes::set_route(unsigned v, std::uint32_t interface, Ptr<Ipv4Route> r) {
  if (routes_[v].size() <= interface) routes_[v].resize(interface + 1);
  routes_[v][interface] = r;
}

long FabricRoutes::interface_to(unsigned from, unsigned to) const {
  for (const Port& p : neighbours_[from])
    if (p.peer == to) return static_cast<long>(p.interface);
  return -1;
}

std::vector<unsigned> FabricRoutes::first_path(unsigned from, unsigned to) const {
  std::vector<unsigned> path{from};
  unsigned v = from;
  while (v != to) {
    if (next_count(v, to) == 0 || path.size() > neighbours_.size()) return {};
    const std::uint32_t interface = *next_begin(v, to);
    unsigned peer = v;
    for (const Port& p : neighbours_[v])
      if (p.interface == interface) peer = p.peer;
    v = peer;
    path.push_back(v);
  }
  return path;
}

// ---- FabricRouting ------------------------------------------------------------------------------

TypeId FabricRouting::GetTypeId() {
  static TypeId tid = TypeId("netagg::fabric::FabricRouting")
                          .SetParent<Ipv4RoutingProtocol>()
                          .SetGroupName("Internet")
                          .AddConstructor<FabricRouting>();
  return tid;
}

void FabricRouting::Setup(std::shared_ptr<const FabricRoutes> routes, unsigned vertex) {
  routes_ = std::move(routes);
  vertex_ = vertex;
  rng_.seed(mix(routes_->seed() ^ (std::uint64_t{vertex} << 32)));
}

void FabricRouting::DoDispose() {
  ipv4_ = nullptr;
  routes_.reset();
  Ipv4RoutingProtocol::DoDispose();
}

bool FabricRouting::choose(unsigned d, std::uint64_t flow, std::uint32_t& interface) {
  const std::size_t count = routes_->next_count(vertex_, d);
  if (count == 0) return false;
  const std::uint32_t* first = routes_->next_begin(vertex_, d);
  std::size_t pick = 0;
  if (count > 1) {
    switch (routes_->ecmp()) {
      case Ecmp::kFirst:
        break;
      case Ecmp::kPerFlow:
        // A switch hashes the 5-tuple with its own seed, so neighbouring switches do not
        // make the same choice for every flow (no polarization).
        pick = mix(flow ^ mix(routes_->seed() + vertex_)) % count;
        break;
      case Ecmp::kPerPacket:
        pick = rng_() % count;
        break;
    }
  }
  interface = first[pick];
  return true;
}

bool FabricRouting::pinned(const Ptr<const Packet>& p, std::size_t offset, unsigned src, unsigned d,
                           std::uint32_t& interface) const {
  std::uint8_t bytes[64];
  const std::size_t need = offset + kJobIdOffset + 2;
  if (need > sizeof bytes || p->GetSize() < need) return false;
  p->CopyData(bytes, need);
  const auto job = static_cast<std::uint16_t>(bytes[offset + kJobIdOffset] << 8 |
                                              bytes[offset + kJobIdOffset + 1]);
  return routes_->pinned(vertex_, job, src, d, interface);
}

Ptr<Ipv4Route> FabricRouting::RouteOutput(Ptr<Packet> p, const Ipv4Header& header, Ptr<NetDevice>,
                                          Socket::SocketErrno& sockerr) {
  const long d = routes_ ? routes_->vertex_of(header.GetDestination()) : -1;
  std::uint32_t interface = 0;
  // The sender is this node. ns-3 asks for a route before it puts the UDP header on (a socket
  // bound to any address) or after (one bound to an address, as the aggregators' are): the UDP
  // header is there when its length field is the packet's size (bytes 4 and 5 of a netagg
  // header are its job id, never as large as the datagram in the fabric's jobs).
  std::size_t offset = 0;
  if (p && p->GetSize() >= 8) {
    std::uint8_t udp[8];
    p->CopyData(udp, 8);
    if ((std::uint32_t{udp[4]} << 8 | udp[5]) == p->GetSize()) offset = 8;
  }
  if (d >= 0 && routes_->has_pins() && header.GetProtocol() == 17 && p &&
      pinned(p, offset, vertex_, static_cast<unsigned>(d), interface)) {
    sockerr = Socket::ERROR_NOTERROR;
    return routes_->route(vertex_, interface);
  }
  // The L4 header is not on the packet yet: a host's flow hash uses the addresses and protocol
  // (hosts have one link, so it rarely matters).
  const std::uint64_t flow = (std::uint64_t{header.GetSource().Get()} << 32) ^
                             header.GetDestination().Get() ^
                             (std::uint64_t{header.GetProtocol()} << 56);
  if (d < 0 || static_cast<unsigned>(d) == vertex_ ||
      !choose(static_cast<unsigned>(d), flow, interface)) {
    sockerr = Socket::ERROR_NOROUTETOHOST;
    return nullptr;
  }
  sockerr = Socket::ERROR_NOTERROR;
  return routes_->route(vertex_, interface);
}

bool FabricRouting::RouteInput(Ptr<const Packet> p, const Ipv4Header& header,
                               Ptr<const NetDevice> idev, UnicastForwardCallback ucb,
                               MulticastForwardCallback, LocalDeliverCallback lcb, ErrorCallback) {
  const long d = routes_->vertex_of(header.GetDestination());
  if (d < 0) return false;  // not an address of this fabric: dropped as "no route"
  if (static_cast<unsigned>(d) == vertex_) {
    lcb(p, header, static_cast<std::uint32_t>(ipv4_->GetInterfaceForDevice(idev)));
    return true;
  }
  std::uint32_t interface = 0;
  if (routes_->has_pins() && header.GetProtocol() == 17) {  // after the 8-byte UDP header
    const long src = routes_->vertex_of(header.GetSource());
    if (src >= 0 && pinned(p, 8, static_cast<unsigned>(src), static_cast<unsigned>(d), interface)) {
      ++forwarded_;
      ucb(routes_->route(vertex_, interface), p, header);
      return true;
    }
  }
  // The IP header is off the packet: its first four bytes are the UDP or TCP ports.
  std::uint64_t flow = (std::uint64_t{header.GetSource().Get()} << 32) ^
                       header.GetDestination().Get() ^ (std::uint64_t{header.GetProtocol()} << 56);
  if (routes_->ecmp() == Ecmp::kPerFlow && p->GetSize() >= 4) {
    std::uint8_t ports[4];
    p->CopyData(ports, 4);
    flow = mix(flow) ^ (std::uint64_t{ports[0]} << 24 | std::uint64_t{ports[1]} << 16 |
                        std::uint64_t{ports[2]} << 8 | ports[3]);
  }
  if (!choose(static_cast<unsigned>(d), flow, interface)) return false;
  ++forwarded_;
  ucb(routes_->route(vertex_, interface), p, header);
  return true;
}

void FabricRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const {
  *stream->GetStream() << "fabric routing, vertex " << vertex_ << "\n";
}

}  // namespace netagg::fabric

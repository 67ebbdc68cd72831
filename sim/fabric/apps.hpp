// SPDX-License-Identifier: Apache-2.0
// The fabric's ns-3 applications:
//   WorkerApp      a worker host: netagg's protocol engines (WorkerCore) over an ns-3 UDP socket
//   AggregatorApp  a switch's aggregator: the switch model (AggregatorCore) on UDP port 20033 of
//                  the switch's address, behind an optional processing-rate limit
//   RingApp        a worker host of the baseline: ring all-reduce over ns-3 TCP, bytes only
//   BackgroundTraffic  TCP bulk flows between random host pairs, Poisson arrivals
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/node-container.h"
#include "ns3/nstime.h"
#include "ns3/socket.h"

#include "bridge.hpp"

namespace netagg::fabric {

class WorkerApp : public ns3::Application {
 public:
  using DoneFn = std::function<void()>;
  // `core` outlives the simulation. The engine's packets leave from (local, port), ECT(0) when
  // `ect`; the all-reduce starts at `start` (absolute simulated time). `on_done` is called when
  // the worker finishes or fails, `on_stall` each time it stalls (WorkerCore::State::kStalled).
  void Setup(WorkerCore* core, ns3::Ipv4Address local, std::uint16_t port, ns3::Time start,
             bool ect, DoneFn on_done, DoneFn on_stall = {});
  ns3::Time finished_at() const { return finished_at_; }
  bool finished() const { return finished_; }
  // The job's fallback session has ended for this worker (WorkerCore::finish_fallback).
  void FinishFallback();

 private:
  void StartApplication() override;
  void StopApplication() override;
  void Begin();
  void HandleRead(ns3::Ptr<ns3::Socket> socket);
  void OnTimer();
  void Arm();
  void Check();
  void Send(const Outgoing& o);

  WorkerCore* core_ = nullptr;
  ns3::Ipv4Address local_;
  std::uint16_t port_ = 0;
  ns3::Time start_;
  bool ect_ = false;
  DoneFn on_done_, on_stall_;
  bool stalled_ = false;
  ns3::Ptr<ns3::Socket> socket_;
  ns3::EventId begin_event_, timer_;
  std::int64_t timer_at_ = -1;
  bool finished_ = false;
  ns3::Time finished_at_;
  SendFn send_;
  std::vector<std::uint8_t> buffer_;
};

class AggregatorApp : public ns3::Application {
 public:
  // Processing: a FIFO served one packet at a time, `per_packet` plus `per_byte` * payload
  // bytes each (both zero: no limit, every packet at once). `queue_limit` 0: unlimited.
  void Setup(AggregatorCore* core, ns3::Ipv4Address local, std::uint16_t port, ns3::Time per_packet,
             double per_byte_ns, std::uint32_t queue_limit);
  std::uint64_t rate_limit_drops() const { return rate_drops_; }
  std::uint64_t max_backlog() const { return max_backlog_; }
  // From `at` (absolute simulated time) on, the aggregator is dead: what it holds is lost, and
  // every datagram that reaches it is dropped (counted) unanswered. It does not come back.
  void KillAt(ns3::Time at);
  bool dead() const { return dead_; }
  std::uint64_t dead_drops() const { return dead_drops_; }

 private:
  struct Pending {
    std::uint32_t ip;
    std::uint16_t port;
    std::uint8_t ecn;
    std::vector<std::uint8_t> bytes;
  };
  void StartApplication() override;
  void StopApplication() override;
  void HandleRead(ns3::Ptr<ns3::Socket> socket);
  void Serve();
  void Process(const Pending& p);
  void Send(const Outgoing& o);
  ns3::Time ServiceTime(std::size_t bytes) const;

  AggregatorCore* core_ = nullptr;
  ns3::Ipv4Address local_;
  std::uint16_t port_ = 0;
  ns3::Time per_packet_;
  double per_byte_ns_ = 0;
  std::uint32_t queue_limit_ = 0;
  ns3::Ptr<ns3::Socket> socket_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  bool dead_ = false;
  std::uint64_t rate_drops_ = 0, max_backlog_ = 0, dead_drops_ = 0;
  SendFn send_;
};

class RingApp : public ns3::Application {
 public:
  using DoneFn = std::function<void()>;
  // Rank `rank` of `n`: connects to its successor at (next, port) when the application starts,
  // listens on `port` for its predecessor; the all-reduce (2(n-1) steps, step s sending chunk
  // sizes[...] as the ring algorithm picks it) starts at `start`.
  void Setup(unsigned rank, unsigned n, ns3::Ipv4Address next, std::uint16_t port,
             std::vector<std::uint64_t> chunk_bytes, ns3::Time start, DoneFn on_done);
  ns3::Time finished_at() const { return finished_at_; }
  bool finished() const { return finished_; }
  std::uint64_t bytes_sent() const { return sent_; }
  std::uint64_t bytes_received() const { return received_; }

 private:
  void StartApplication() override;
  void StopApplication() override;
  void Connected(ns3::Ptr<ns3::Socket> s);
  void ConnectFailed(ns3::Ptr<ns3::Socket> s);
  void Accept(ns3::Ptr<ns3::Socket> s, const ns3::Address& from);
  void HandleRead(ns3::Ptr<ns3::Socket> s);
  void SendSpace(ns3::Ptr<ns3::Socket> s, std::uint32_t available);
  void Begin();
  void SendStep(unsigned step);
  void Pump();
  std::uint64_t chunk_of(unsigned sender, unsigned step) const;

  unsigned rank_ = 0, n_ = 0;
  ns3::Ipv4Address next_;
  std::uint16_t port_ = 0;
  std::vector<std::uint64_t> chunk_bytes_;
  std::vector<std::uint64_t> receive_until_;  // cumulative bytes from the predecessor per step
  ns3::Time start_;
  DoneFn on_done_;
  ns3::Ptr<ns3::Socket> out_, listener_, in_;
  bool connected_ = false, begun_ = false, finished_ = false;
  unsigned steps_ = 0, received_steps_ = 0, next_send_step_ = 0;
  std::uint64_t pending_ = 0, sent_ = 0, received_ = 0;
  ns3::Time finished_at_;
};

// Background TCP traffic:
// - short flows of `flow_bytes` between random distinct host pairs, arriving as a Poisson process
//   at `load` times each host's link rate in total (load * hosts * host_bps / (8 * flow_bytes)
//   flows per second), from `start` until the simulation stops; each flow's completion time is
//   recorded;
// - `long_flows` flows that never end, each between a random pair of hosts on different edge
//   switches (so it crosses the fabric), all started at time 0, so they have reached their
//   share of the network when the all-reduce starts; each has its own receiver, so its bytes
//   can be read at any time.
struct BackgroundOptions {
  double load = 0;
  double host_bps = 0;
  std::uint64_t flow_bytes = 0;
  unsigned long_flows = 0;
  std::uint64_t seed = 1;
};

class BackgroundTraffic {
 public:
  BackgroundTraffic(const ns3::NodeContainer& hosts, const std::vector<ns3::Ipv4Address>& ips,
                    const std::vector<unsigned>& host_edge, const BackgroundOptions& o,
                    ns3::Time start);
  std::uint64_t flows_started() const { return started_; }
  std::uint64_t bytes_received() const;  // by every background receiver, since time 0

  // Short flows: completion times (seconds) of those that completed, and how many did not.
  const std::vector<double>& completion_times() const { return fct_; }
  std::uint64_t flows_unfinished() const;

  // Long flows: bytes each one's receiver has received so far; its (source, destination) hosts.
  std::vector<std::uint64_t> long_flow_bytes() const;
  const std::vector<std::pair<unsigned, unsigned>>& long_flow_pairs() const { return pairs_; }

 private:
  void Arrival();
  void Received(std::size_t flow, ns3::Ptr<const ns3::Packet> p, const ns3::Address& from);

  ns3::NodeContainer hosts_;
  std::vector<ns3::Ipv4Address> ips_;
  BackgroundOptions o_;
  double rate_per_s_ = 0;
  std::mt19937_64 rng_;
  std::uint64_t started_ = 0;
  std::vector<ns3::Ptr<ns3::Application>> sinks_;  // the short flows' (one per host)
  // Short flows, each to its own port of its destination so its receiver counts it alone.
  struct ShortFlow {
    ns3::Time began;
    std::uint64_t received = 0;
    bool done = false;
  };
  std::vector<ShortFlow> short_;
  std::vector<double> fct_;
  std::vector<ns3::Ptr<ns3::Application>> long_sinks_;
  std::vector<std::pair<unsigned, unsigned>> pairs_;
};

}  // namespace netagg::fabric

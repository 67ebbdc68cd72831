// SPDX-License-Identifier: Apache-2.0
// Transports move netagg packets between one worker and its aggregator. The protocol engine
// knows none of them; the communicator drives a Transport with the engine's output.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "netagg/job.hpp"
#include "netagg/stats.hpp"

namespace netagg {

struct Config;

struct TransportCounters {
  std::uint64_t sent = 0, received = 0, dropped_foreign = 0;  // foreign: not from the aggregator
  std::uint64_t dropped_malformed = 0;                        // truncated or oversized datagrams
  std::uint64_t injected_drops = 0;  // dropped on purpose by with_loss(), both directions
  // ICMP "port unreachable" for a packet to an aggregator: nothing listens at its address.
  std::uint64_t refused = 0;
};

class Transport {
 public:
  using PacketHandler = std::function<void(std::span<const std::byte>)>;
  virtual ~Transport() = default;
  // Sends each packet to the aggregator (batched where the transport can).
  virtual void send(std::span<const std::span<const std::byte>> packets) = 0;
  // A job on several trees talks to several aggregators: sends to aggregator `peer` (0 the
  // first, as given when the transport was made). A transport made for one aggregator refuses
  // any other with Error(kUnsupported). Results come back through receive() from any of them.
  virtual void send_to(std::size_t peer, std::span<const std::span<const std::byte>> packets);
  // Waits up to `timeout` for packets from the aggregator and hands each to on_packet (the view
  // is valid during the call). Returns how many were handed over. Throws Error(kTransport).
  virtual std::size_t receive(Duration timeout, const PacketHandler& on_packet) = 0;
  virtual std::string name() const = 0;
  // The IPv4 ECN bits (TOS & 3; 3 = CE) of the packet being handed to on_packet right now; 0
  // when the transport cannot tell.
  virtual std::uint8_t last_ecn() const { return 0; }
  // What the transport saw; decorators add their own counts to the inner transport's.
  virtual TransportCounters counters() const { return {}; }
  // The aggregator address that last refused a packet (counters().refused), if any.
  virtual std::optional<Endpoint> last_refused() const { return std::nullopt; }
};

// Kernel UDP with sendmmsg/recvmmsg, bound to `local`, talking to `aggregator`. With `offload`,
// runs of equal-sized packets leave as UDP GSO messages and results arrive GRO-coalesced (where
// the kernel does neither, it falls back by itself); the datagrams on the wire are the same.
// With `ecn_capable`, packets leave marked ECT(0) and the ECN bits of received ones are read
// (last_ecn()).
std::unique_ptr<Transport> make_udp_transport(const Endpoint& local, const Endpoint& aggregator,
                                              bool offload = true, bool ecn_capable = false);
// The same for several aggregators (peers 0.., a job on several trees): datagrams from any of
// them are taken, from anyone else counted foreign.
std::unique_ptr<Transport> make_udp_transport(const Endpoint& local,
                                              std::span<const Endpoint> aggregators,
                                              bool offload = true, bool ecn_capable = false);

// The transport cfg.transport names for cfg.rank: "udp" (make_udp_transport) or "dpdk"
// (netagg/dpdk.hpp; Error(kUnsupported) if this libnetagg was built without DPDK).
// Loss injection (cfg.loss) is not applied here: the Communicator adds it.
std::unique_ptr<Transport> make_transport(const Config& cfg);

// Seeded loss injection around any transport: drops each sent and each received packet with
// probability `loss` (0..1), deterministically for a given seed.
std::unique_ptr<Transport> with_loss(std::unique_ptr<Transport> inner, double loss,
                                     std::uint64_t seed);

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// An in-process network for tests: workers' Transports and an aggregator callback in one
// process, with seeded loss, duplication and reordering in both directions.
//
//   InprocNetwork net([&](const Endpoint& from, auto packet, const InprocNetwork::SendFn& send) {
//     ... aggregate, then send(worker_endpoint, result_bytes) ...
//   }, {.loss = 0.01, .seed = 7});
//   auto transport = net.attach(worker_endpoint);   // one per worker, used by its own thread
//
// Every packet a worker sends goes to the one callback, also what it sends to another aggregator
// (Transport::send_to: a job on several trees); the callback tells them apart by their contents.
// The aggregator runs under the network's lock, so single-threaded aggregator code (the switch
// model) needs no locking of its own; it must not call back into the network except through
// `send`. Packets for a worker wait in its queue until its receive().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "netagg/job.hpp"
#include "netagg/transport.hpp"

namespace netagg {

struct InprocOptions {
  double loss = 0.0;       // probability that a packet is dropped
  double duplicate = 0.0;  // probability that a (surviving) packet is delivered twice
  // Probability that a packet is held back and delivered right after the next packet to the
  // same destination (or, if none comes, when the destination would otherwise wait for one).
  double reorder = 0.0;
  std::uint64_t seed = 1;  // same seed and same sequence of sends: same decisions
};

struct InprocCounters {
  std::uint64_t to_aggregator = 0;  // packets handed to the aggregator callback
  std::uint64_t to_workers = 0;     // packets queued for workers
  std::uint64_t dropped = 0;        // by injected loss
  std::uint64_t duplicated = 0;     // extra copies made
  std::uint64_t reordered = 0;      // packets held back behind a later one
  std::uint64_t undeliverable = 0;  // addressed to an endpoint nobody attached
};

class InprocNetwork {
 public:
  using SendFn = std::function<void(const Endpoint& dest, std::span<const std::byte> packet)>;
  using Aggregator = std::function<void(const Endpoint& source, std::span<const std::byte> packet,
                                        const SendFn& send)>;

  // Throws Error(kInvalidArgument) if a probability is outside 0..1.
  explicit InprocNetwork(Aggregator aggregator, InprocOptions options = {});
  ~InprocNetwork();
  InprocNetwork(const InprocNetwork&) = delete;
  InprocNetwork& operator=(const InprocNetwork&) = delete;

  // A worker's transport at `local` (its packets reach the aggregator with this source).
  // Throws Error(kInvalidArgument) if `local` is attached already. The transport may outlive
  // the network object (its packets then go nowhere); it detaches when destroyed.
  std::unique_ptr<Transport> attach(const Endpoint& local);

  InprocCounters counters() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace netagg

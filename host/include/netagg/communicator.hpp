// SPDX-License-Identifier: Apache-2.0
// The public API of libnetagg: a communicator per worker (no singleton: several can live in one
// process), blocking and asynchronous sum all-reduce of fp32 and int32 tensors.
//
//   netagg::Communicator comm(netagg::Config::from_env());
//   comm.allreduce(std::span<float>(grad));            // in place, sum over all workers
//   auto h = comm.allreduce_async(std::span<float>(g2));
//   h.wait();                                           // rethrows a netagg::Error
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "netagg/config.hpp"
#include "netagg/error.hpp"
#include "netagg/transport.hpp"

namespace netagg {

class Handle {
 public:
  struct State;
  Handle() = default;
  explicit Handle(std::shared_ptr<State> s) : state_(std::move(s)) {}
  // Blocks until the operation finished; throws its netagg::Error if it failed.
  void wait();
  bool ready() const;
  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<State> state_;
};

class Communicator {
 public:
  // Validates cfg and builds the transport it names. Throws Error(kConfig / kUnsupported).
  explicit Communicator(Config cfg);
  // With a transport made by the caller (tests: in-process network).
  Communicator(Config cfg, std::unique_ptr<Transport> transport);
  ~Communicator();  // finishes queued operations first
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  const Config& config() const;

  // In-place sum over all workers. Every worker must call with the same sizes in the same order.
  // Throws Error(kTimeout) naming the missing slots when the aggregator or a worker stops
  // answering. After a failed operation the workers' packet numbering has diverged, so every
  // later operation on this communicator fails at once with the first failure's code.
  void allreduce(std::span<float> data);
  void allreduce(std::span<std::int32_t> data);
  // Queued and run in call order on the communicator's worker thread; data must stay alive and
  // untouched until wait() returns.
  Handle allreduce_async(std::span<float> data);
  Handle allreduce_async(std::span<std::int32_t> data);

  // Snapshots taken after each operation.
  // Packet counters of the engine, as of the last finished call; `operations` counts the
  // all-reduce calls that succeeded (a small fp32 call takes two engine operations).
  EngineStats stats() const;
  TransportCounters transport_counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The public API of libnetagg: a communicator per worker (no singleton: several can live in one
// process), blocking and asynchronous sum all-reduce of fp32, int32 and bf16 tensors.
//
//   netagg::Communicator comm(netagg::Config::from_env());
//   comm.allreduce(std::span<float>(grad));            // in place, sum over all workers
//   auto h = comm.allreduce_async(std::span<float>(g2));
//   h.wait();                                           // rethrows a netagg::Error
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <span>

#include "netagg/config.hpp"
#include "netagg/error.hpp"
#include "netagg/peers.hpp"
#include "netagg/stats.hpp"
#include "netagg/transport.hpp"

namespace netagg {

// A bfloat16 element: the upper half of an IEEE binary32 (sign, 8 exponent bits, 7 fraction
// bits), the layout of torch.bfloat16 and of the wire's bf16.
struct Bf16 {
  std::uint16_t bits = 0;

  // Exact: every bf16 is a float.
  constexpr float to_float() const {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  // Rounded to nearest even, as the FPGA aggregator rounds its sums; NaN stays NaN (quieted).
  static constexpr Bf16 from_float(float f) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
    return {static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
  }
  friend bool operator==(Bf16, Bf16) = default;
};
static_assert(sizeof(Bf16) == 2);

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
  // And the peer group of the host fallback made by the caller (the torch backend's store, an
  // in-process group in tests); null: none, whatever cfg.store says.
  Communicator(Config cfg, std::unique_ptr<Transport> transport, std::shared_ptr<Peers> peers);
  ~Communicator();  // finishes queued operations first
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  const Config& config() const;

  // In-place sum over all workers. Every worker must call with the same sizes in the same order.
  // When the aggregator stops answering and the host fallback is on (Config::fallback, a peer
  // group), the workers finish the all-reduce among themselves and say so on stderr
  // (docs/fallback.md); otherwise, and when a worker stops answering, throws Error(kTimeout)
  // naming the missing slots. After a failed operation the workers' packet numbering has diverged,
  // so every later operation on this communicator fails at once with the first failure's code. bf16
  // travels as bf16 and needs an aggregator that adds floats (the FPGA aggregator, which
  // accumulates in fp32 and rounds the sum to bf16): with float_wire kBlockInt32 (an integer
  // aggregator, the switch) it throws Error(kUnsupported).
  void allreduce(std::span<float> data);
  void allreduce(std::span<std::int32_t> data);
  void allreduce(std::span<Bf16> data);
  // Queued and run in call order on the communicator's worker thread; data must stay alive and
  // untouched until wait() returns.
  Handle allreduce_async(std::span<float> data);
  Handle allreduce_async(std::span<std::int32_t> data);
  Handle allreduce_async(std::span<Bf16> data);

  // Snapshots taken after each operation.
  // Packet counters of the engine, as of the last finished call; `operations` counts the
  // all-reduce calls that succeeded (a small fp32 call takes two engine operations).
  EngineStats stats() const;
  TransportCounters transport_counters() const;
  // The host fallback's counts, as of the last finished call (zeros without a fallback).
  FallbackStats fallback_stats() const;
  // Whether this communicator has a host fallback (a peer group), and on what.
  bool has_fallback() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netagg

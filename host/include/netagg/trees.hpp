// SPDX-License-Identifier: Apache-2.0
// A worker's protocol engines, one per tree of its job (one for a job without trees), sans-IO:
// what the communicator and the fabric simulator's workers both drive. It splits the worker's
// pace over the trees by their weights, routes each result to the engine of its job id (a
// datagram of no tree's job is counted unroutable and dropped, whatever the number of trees),
// and tells the earliest deadline and when the running engines last made progress (the host
// fallback's stall detection, netagg/fallback.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "netagg/engine.hpp"

namespace netagg {

class TreeEngines {
 public:
  // One engine per entry of `trees` (its params' pace_gbps is replaced by its share); `weights`
  // (empty: equal) split `pace_gbps` (0: none). Throws Error(kInvalidArgument) for no trees,
  // weights of another count, or two trees with one job id.
  TreeEngines(std::vector<EngineParams> trees, std::span<const std::uint32_t> weights,
              double pace_gbps);

  std::size_t size() const { return engines_.size(); }
  Engine& operator[](std::size_t k) { return *engines_[k]; }
  const Engine& operator[](std::size_t k) const { return *engines_[k]; }
  std::vector<Engine*> list() const;

  // Starts an operation on every tree whose source is not null (sources.size() == size()).
  void start(std::span<PacketSource* const> sources, TimePoint now);
  // A datagram from the network, to the engine of its job id; returns that tree, or nothing
  // (counted unroutable: malformed, or of no tree's job).
  std::optional<std::size_t> on_packet(std::span<const std::byte> packet, TimePoint now,
                                       std::uint8_t ecn = 0);
  // on_timer() on every running engine whose deadline has passed.
  void on_timer(TimePoint now);
  // The earliest deadline of a running engine; nothing when none runs.
  std::optional<TimePoint> next_deadline() const;
  // When a running engine last got a result (or started); nothing when none runs.
  std::optional<TimePoint> last_progress() const;
  // When the running engines will have made no progress for `after` (the host fallback's stall
  // detection); nothing when none runs. stalled(): that moment has come.
  std::optional<TimePoint> stall_deadline(Duration after) const;
  bool stalled(TimePoint now, Duration after) const;
  // take_over() on every running engine (they go to kHost); resume() on every engine in kHost.
  void take_over();
  void resume(TimePoint now);
  bool running(std::size_t k) const { return engines_[k]->state() == Engine::State::kRunning; }
  bool any_running() const { return any_in(Engine::State::kRunning); }
  bool any_failed() const { return any_in(Engine::State::kFailed); }
  bool any_in(Engine::State state) const;

  // Datagrams that reached no engine.
  std::uint64_t unroutable() const { return unroutable_; }
  // The engines' counts summed; the estimates (RTO, SRTT, window) are tree 0's.
  EngineStats stats() const;

 private:
  std::vector<std::unique_ptr<Engine>> engines_;
  std::map<std::uint16_t, std::size_t> tree_of_job_;
  std::uint64_t unroutable_ = 0;
};

}  // namespace netagg

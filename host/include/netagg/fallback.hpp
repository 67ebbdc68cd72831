// SPDX-License-Identifier: Apache-2.0
// The host fallback: when an aggregator stops answering, the workers finish the all-reduce among
// themselves (docs/fallback.md) over a peer group (netagg/peers.hpp).
//
// A worker whose engines made no progress for `fallback_after` takes its operation over from the
// network (Engine::take_over) and joins a session with the other workers. A session is rounds of
// the same collective calls on every rank, each decided from what every rank holds:
//   1. every rank tells the others, per tree and slot, the first packet it holds no result for;
//   2. a result that some rank holds and another lacks is copied to it from the lowest such rank
//      (bit-identical everywhere: the one result the aggregator gave);
//   3. then, if every rank is in the same operation, what nobody holds is computed on the hosts
//      from the ranks' contributions, as the aggregator would have (netagg/reduce.hpp), in waves;
//      unless some rank got a result from the network after another had stalled (the aggregator
//      answers: a rank was merely late) or a probe is due: then every rank gives the operation
//      back to the network (Engine::resume).
// A communicator being destroyed joins as `closing`, so a rank that lost the last results of its
// last all-reduce gets them from ranks that are done.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "netagg/engine.hpp"
#include "netagg/peers.hpp"
#include "netagg/stats.hpp"

namespace netagg {

class HostFallback {
 public:
  enum class Role { kStuck, kClosing };
  enum class Outcome {
    kComplete,  // every engine's operation is done
    kResume,    // the workers gave the operation back to the network: resume() the engines
    kLeft,      // closing: nobody needed more from this rank
  };

  // The clock the session reads (result and stall ages, `seconds`): the engines' own (the
  // fabric simulator's workers run on simulated time).
  using NowFn = std::function<TimePoint()>;

  // `timeout`: how long a round waits for the other ranks to join (on the peers' clock); `now`:
  // the engines' clock (none: Clock::now).
  HostFallback(std::shared_ptr<Peers> peers, std::chrono::milliseconds timeout, NowFn now = {});

  // Call at the start of each engine operation (all trees): resumes are counted per operation.
  void begin_operation(std::span<Engine* const> engines);
  // Runs the session's rounds until this rank's part ends. Every engine with an operation is in
  // kHost or kDone (kStuck), or has none running (kClosing). Throws Error(kTimeout) when the others
  // do not join in time, Error(kInvalidArgument) when the ranks' calls differ (other sizes, trees
  // or windows, a rank closed while others wait).
  // `stalled_since`: when this rank took its operation over (none: now).
  Outcome run(std::span<Engine* const> engines, Role role,
              std::optional<TimePoint> stalled_since = std::nullopt);

  // The hosts computed results of tree k: its later operations go to the hosts (taken over at
  // once, finished in a session after the other trees) until a probe finds its aggregators
  // answering again.
  bool host_mode(std::size_t k) const { return k < host_trees_.size() && host_trees_[k]; }
  bool host_mode() const;
  // Whether this operation of a tree in host mode tries the network (a probe). The same on every
  // rank: probes come at the 1st, 2nd, 4th, 8th, ... operation in host mode, then every 1024th,
  // counted per operation (every rank makes the same ones). Call once per operation.
  bool probe_now();
  // Other ranks wait in a session for this rank's next operation: start it there.
  bool join_next() const { return join_next_; }
  // A probe tree k's aggregators answered: its later operations go to the network again.
  void back_to_network(std::size_t k);
  const FallbackStats& stats() const { return stats_; }
  const Peers& peers() const { return *peers_; }

 private:
  struct Status;
  std::shared_ptr<Peers> peers_;
  std::chrono::milliseconds timeout_;
  NowFn now_;
  FallbackStats stats_;
  std::vector<char> host_trees_;       // per engine: in host mode
  std::uint64_t host_operations_ = 0;  // operations since a tree went to host mode
  std::uint64_t next_probe_ = 1;       // host_operations_ of the next probe
  bool join_next_ = false;
  std::uint32_t resumes_in_operation_ = 0;
  std::vector<int> closed_;  // ranks that closed their communicator in a session
};

}  // namespace netagg

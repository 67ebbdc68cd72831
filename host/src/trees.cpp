// SPDX-License-Identifier: Apache-2.0
#include "netagg/trees.hpp"

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg {

TreeEngines::TreeEngines(std::vector<EngineParams> trees, std::span<const std::uint32_t> weights,
                         double pace_gbps) {
  if (trees.empty()) throw Error(Errc::kInvalidArgument, "trees: no tree");
  if (!weights.empty() && weights.size() != trees.size())
    throw Error(Errc::kInvalidArgument,
                fmt::format("trees: {} weights for {} trees", weights.size(), trees.size()));
  double weight_sum = 0;
  for (const std::uint32_t w : weights) weight_sum += w;
  for (std::size_t k = 0; k < trees.size(); ++k) {
    EngineParams p = trees[k];
    // The worker's pace, split as its chunks are: each tree's share by its weight.
    p.pace_gbps = weights.empty() || weight_sum == 0 ? pace_gbps / static_cast<double>(trees.size())
                                                     : pace_gbps * weights[k] / weight_sum;
    if (!tree_of_job_.emplace(p.job_id, k).second)
      throw Error(Errc::kInvalidArgument, fmt::format("trees: job id {} on two trees", p.job_id));
    engines_.push_back(std::make_unique<Engine>(p));
  }
}

std::vector<Engine*> TreeEngines::list() const {
  std::vector<Engine*> out;
  for (const auto& e : engines_) out.push_back(e.get());
  return out;
}

void TreeEngines::start(std::span<PacketSource* const> sources, TimePoint now) {
  if (sources.size() != engines_.size())
    throw Error(Errc::kInvalidArgument, "trees: one source per tree");
  for (std::size_t k = 0; k < engines_.size(); ++k)
    if (sources[k]) engines_[k]->start(*sources[k], now);
}

std::optional<std::size_t> TreeEngines::on_packet(std::span<const std::byte> packet, TimePoint now,
                                                  std::uint8_t ecn) {
  if (packet.size() < wire::offset::kJobId + 2) {
    ++unroutable_;
    return std::nullopt;
  }
  const auto it = tree_of_job_.find(wire::load_be16(packet.data() + wire::offset::kJobId));
  if (it == tree_of_job_.end()) {
    ++unroutable_;
    return std::nullopt;
  }
  engines_[it->second]->on_packet(packet, now, ecn);
  return it->second;
}

void TreeEngines::on_timer(TimePoint now) {
  for (const auto& e : engines_) {
    if (e->state() != Engine::State::kRunning) continue;
    const auto due = e->next_deadline();
    if (due && now >= *due) e->on_timer(now);
  }
}

std::optional<TimePoint> TreeEngines::next_deadline() const {
  std::optional<TimePoint> best;
  for (const auto& e : engines_) {
    if (e->state() != Engine::State::kRunning) continue;
    if (const auto d = e->next_deadline(); d && (!best || *d < *best)) best = d;
  }
  return best;
}

std::optional<TimePoint> TreeEngines::last_progress() const {
  std::optional<TimePoint> latest;
  for (const auto& e : engines_) {
    if (e->state() != Engine::State::kRunning) continue;
    if (!latest || e->last_progress() > *latest) latest = e->last_progress();
  }
  return latest;
}

std::optional<TimePoint> TreeEngines::stall_deadline(Duration after) const {
  if (const auto progress = last_progress()) return *progress + after;
  return std::nullopt;
}

bool TreeEngines::stalled(TimePoint now, Duration after) const {
  const auto due = stall_deadline(after);
  return due && now >= *due;
}

void TreeEngines::take_over() {
  for (const auto& e : engines_)
    if (e->state() == Engine::State::kRunning) e->take_over();
}

void TreeEngines::resume(TimePoint now) {
  for (const auto& e : engines_)
    if (e->state() == Engine::State::kHost) e->resume(now);
}

bool TreeEngines::any_in(Engine::State state) const {
  for (const auto& e : engines_)
    if (e->state() == state) return true;
  return false;
}

EngineStats TreeEngines::stats() const {
  EngineStats total = engines_.front()->stats();
  for (std::size_t k = 1; k < engines_.size(); ++k) {
    const EngineStats& more = engines_[k]->stats();
    total.packets_sent += more.packets_sent;
    total.retransmissions += more.retransmissions;
    total.results += more.results;
    total.duplicates += more.duplicates;
    total.rejected += more.rejected;
    total.foreign_epoch += more.foreign_epoch;
    total.notices += more.notices;
    total.notices_ignored += more.notices_ignored;
    total.recovery_resends += more.recovery_resends;
    total.ce_results += more.ce_results;
    total.window_cuts += more.window_cuts;
    total.rtt_samples += more.rtt_samples;
    total.spurious_retransmissions += more.spurious_retransmissions;
    total.overtaken_retransmissions += more.overtaken_retransmissions;
    total.host_results += more.host_results;
  }
  total.unroutable = unroutable_;
  return total;
}

}  // namespace netagg

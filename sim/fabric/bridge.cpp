// SPDX-License-Identifier: Apache-2.0
// The fabric's netagg side (C++20): the job from netagg's job code, the workers' protocol engines
// (netagg::Engine, the same engine the UDP and DPDK transports drive) and the aggregators' switch
// model (netagg::sim::SwitchModel, as netagg-switchd serves it). See bridge.hpp.
#include "bridge.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "netagg/engine.hpp"
#include "netagg/error.hpp"
#include "netagg/fallback.hpp"
#include "netagg/job.hpp"
#include "netagg/peers.hpp"
#include "netagg/split.hpp"
#include "netagg/trees.hpp"
#include "netagg/wire.hpp"
#include "netagg/wire_format.hpp"
#include "switch_model.hpp"
#ifdef NETAGG_FABRIC_PLAN
#include "netagg/plan/topology.hpp"
#endif
#ifdef NETAGG_FABRIC_FPGA
#include <map>

#include "harness.hpp"
#include "netagg/fpga/control.hpp"
#endif

namespace netagg::fabric {

namespace {

// ns-3 time (ns from the simulation's start) as the engine's clock. One second is added so that
// the simulation's start is not the clock's epoch (a default-constructed TimePoint).
TimePoint to_time_point(std::int64_t ns) {
  return TimePoint{} + std::chrono::seconds(1) + std::chrono::nanoseconds(ns);
}
std::int64_t to_ns(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - TimePoint{} -
                                                              std::chrono::seconds(1))
      .count();
}

std::span<const std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

void store_be32(std::uint32_t v, std::byte* p) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}

std::uint32_t load_be32(const std::byte* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 |
         std::uint32_t(p[3]);
}

}  // namespace

// ---- JobPlan ------------------------------------------------------------------------------------

static_assert(kJobIdOffset == wire::offset::kJobId, "bridge.hpp's job id offset is the wire's");
static_assert(kTypeOffset == wire::offset::kType, "bridge.hpp's type offset is the wire's");
static_assert(kResultType == static_cast<std::uint8_t>(wire::MsgType::kResult),
              "bridge.hpp's result type is the wire's");

// ---- GraphSpec ----------------------------------------------------------------------------------

GraphSpec parse_graph(const std::string& json_text, const std::string& source) {
#ifdef NETAGG_FABRIC_PLAN
  const plan::Topology t = plan::parse_topology(json_text, source);
  GraphSpec g;
  for (const plan::Node& n : t.nodes) {
    GraphSpec::Vertex v;
    v.name = n.name;
    v.kind = n.kind == plan::NodeKind::kWorker ? GraphSpec::Kind::kWorker
             : n.kind == plan::NodeKind::kRoot ? GraphSpec::Kind::kRoot
                                               : GraphSpec::Kind::kSwitch;
    v.aggregation_gbps = n.aggregation_gbps;
    v.ingress_gbps = n.ingress_gbps == plan::kUnlimited ? 0 : n.ingress_gbps;
    g.vertices.push_back(std::move(v));
  }
  for (std::size_t i = 0; i < t.links.size(); ++i) {
    const plan::Link& l = t.links[i];
    if (l.twin < 0)
      throw Error(Errc::kConfig,
                  fmt::format("{}: link {} ({} -> {}) is one-way; the fabric's links "
                              "are full duplex",
                              source, l.name, t.nodes[l.from].name, t.nodes[l.to].name));
    if (static_cast<std::size_t>(l.twin) < i) continue;  // its pair was taken
    if (t.links[l.twin].gbps != l.gbps)
      throw Error(Errc::kConfig,
                  fmt::format("{}: link {} has {} Gbit/s one way and {} the other; the fabric's "
                              "links have one rate",
                              source, l.name, l.gbps, t.links[l.twin].gbps));
    g.edges.push_back(
        {static_cast<std::size_t>(l.from), static_cast<std::size_t>(l.to), l.gbps, l.name});
  }
  return g;
#else
  (void)json_text;
  throw Error(Errc::kUnsupported,
              fmt::format("{}: graph topologies are read by netagg-plan's parser, which was not "
                          "built (it needs GLPK: libglpk-dev)",
                          source));
#endif
}

// ---- JobPlan ------------------------------------------------------------------------------------

struct JobPlan::Impl {
  JobSpec job;
};

JobPlan::JobPlan(const PlanSpec& spec) : impl_(std::make_unique<Impl>()) {
  if (spec.trees.empty()) throw Error(Errc::kConfig, "fabric job: no aggregation tree");
  JobSpec job;
  job.job_id = spec.job_id;
  job.elements_per_packet = spec.elements_per_packet;
  for (std::size_t r = 0; r < spec.workers.size(); ++r) {
    WorkerSpec w;
    w.rank = static_cast<std::uint16_t>(r);
    w.address = Endpoint{spec.workers[r].first, spec.workers[r].second};
    job.workers.push_back(w);
  }
  for (std::size_t t = 0; t < spec.trees.size(); ++t) {
    TreeSpec tree;
    tree.job_id = static_cast<std::uint16_t>(spec.job_id + t);
    tree.weight = spec.trees[t].weight;
    tree.window = spec.window;
    const std::size_t base = t * spec.window;
    if (base + spec.window > 65536)
      throw Error(Errc::kConfig, fmt::format("fabric job: {} trees of window {} do not fit the "
                                             "16-bit slot space",
                                             spec.trees.size(), spec.window));
    for (const PlanNode& n : spec.trees[t].nodes) {
      TreeNode node;
      node.name = n.name;
      node.address = Endpoint{n.ip, spec.aggregator_port};
      node.slot_base = static_cast<std::uint16_t>(base);
      node.parent = n.parent;
      node.workers = n.workers;
      tree.aggregators.push_back(std::move(node));
    }
    job.trees.push_back(std::move(tree));
  }
  // Through netagg's own parser, which checks the whole description (ranks, a tree's root,
  // parents, every rank at exactly one aggregator of each tree).
  impl_->job = parse_job(netagg::to_json(job), "fabric job");
  for (std::size_t t = 0; t < impl_->job.trees.size(); ++t)
    for (const TreeNode& n : impl_->job.trees[t].aggregators) {
      const JobSpec v = aggregator_view(impl_->job, t, n.name);
      if (v.workers.size() > sim::kMaxWorkersPerJob)
        throw Error(Errc::kConfig,
                    fmt::format("fabric job: aggregator '{}' of tree {} has {} members, the switch "
                                "model holds at most {} per job (its bitmap); use \"tree\"",
                                n.name, t, v.workers.size(), sim::kMaxWorkersPerJob));
    }
}

JobPlan::~JobPlan() = default;
std::size_t JobPlan::world_size() const { return impl_->job.world_size(); }
std::size_t JobPlan::trees() const { return impl_->job.trees.size(); }
std::uint16_t JobPlan::elements_per_packet() const { return impl_->job.elements_per_packet; }
std::string JobPlan::to_json() const { return netagg::to_json(impl_->job); }

// ---- WorkerCore ---------------------------------------------------------------------------------

struct WorkerCore::Impl {
  // Tree t's share of the tensor: its chunks, from the formula; results checked element by
  // element.
  class Source final : public PacketSource {
   public:
    Source(Impl& w, std::size_t tree, std::uint64_t packets)
        : w_(w), tree_(tree), packets_(packets) {}
    std::uint64_t packet_count() const override { return packets_; }
    void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
      const auto [first, n] = w_.chunk(w_.split.global(tree_, p));
      h.dtype = wire::DataType::kInt32;
      h.count = static_cast<std::uint16_t>(n);
      h.exponent = wire::kExponentNone;
      // The tensor's formula: element i of rank r is (r + 1) * ((i mod 251) + 1), int32 with
      // wrap-around computed as uint32; the modulo is carried along.
      const std::uint32_t scale = w_.rank + 1;
      std::uint32_t m = static_cast<std::uint32_t>(first % 251);
      for (std::uint64_t k = 0; k < n; ++k) {
        std::uint32_t v = scale * (m + 1);
        if (static_cast<int>(w_.rank) == w_.options.corrupt_rank && first + k == 0) v += 1;
        store_be32(v, payload.data() + 4 * k);
        if (++m == 251) m = 0;
      }
    }
    void deliver(std::uint64_t p, const wire::Header& h,
                 std::span<const std::byte> payload) override {
      const auto [first, n] = w_.chunk(w_.split.global(tree_, p));
      if (h.count != n || h.dtype != wire::DataType::kInt32) {
        w_.mismatches += n;  // the engine delivers only the shape sent; counted all the same
        return;
      }
      std::uint32_t m = static_cast<std::uint32_t>(first % 251);
      for (std::uint64_t k = 0; k < n; ++k) {
        if (load_be32(payload.data() + 4 * k) != w_.rank_sum * (m + 1)) ++w_.mismatches;
        if (++m == 251) m = 0;
      }
      w_.checked += n;
    }

   private:
    Impl& w_;
    std::size_t tree_;
    std::uint64_t packets_;
  };

  Impl(const JobSpec& job, std::uint16_t r, const WorkerOptions& o)
      : rank(r),
        options(o),
        world(job.world_size()),
        epp(job.elements_per_packet),
        split(weights(job)),
        engines(engine_params(job, r, o), weights(job), o.pace_gbps) {
    chunks = (options.elements + epp - 1) / epp;
    // Sum over ranks of (r + 1) = N (N + 1) / 2, modulo 2^32 like the aggregator's adds.
    rank_sum = static_cast<std::uint32_t>(world * (world + 1) / 2);
    for (std::size_t t = 0; t < job.trees.size(); ++t) {
      const WorkerView v = worker_view(job, t, rank);
      sources.push_back(std::make_unique<Source>(*this, t, split.count(t, chunks)));
      aggregators.emplace_back(v.job.aggregator->ip, v.job.aggregator->port);
    }
  }

  // Each tree's engine: the tree's job id, this worker's rank and slots there.
  static std::vector<EngineParams> engine_params(const JobSpec& job, std::uint16_t rank,
                                                 const WorkerOptions& options) {
    std::vector<EngineParams> out;
    for (std::size_t t = 0; t < job.trees.size(); ++t) {
      const WorkerView v = worker_view(job, t, rank);
      EngineParams p;
      p.job_id = v.job.job_id;
      p.rank = v.rank;
      p.slot_base = v.job.slot_base;
      p.window = v.job.slot_count;
      p.adaptive_retransmit = true;
      p.retransmit_timeout = std::chrono::nanoseconds(options.retransmit_timeout_ns);
      p.min_retransmit_timeout = std::chrono::nanoseconds(options.min_retransmit_timeout_ns);
      p.max_retransmit_timeout = std::chrono::nanoseconds(options.max_retransmit_timeout_ns);
      p.job_timeout = std::chrono::nanoseconds(options.job_timeout_ns);
      p.epoch = options.epoch;
      p.congestion_control = options.congestion_control;
      // Simulated timers fire on time: no slack to make up for late wake-ups.
      p.pace_slack = std::chrono::nanoseconds(0);
      out.push_back(p);
    }
    return out;
  }

  static std::vector<std::uint32_t> weights(const JobSpec& job) {
    std::vector<std::uint32_t> w;
    for (const TreeSpec& t : job.trees) w.push_back(t.weight);
    return w;
  }

  struct Chunk {
    std::uint64_t first, size;
  };
  Chunk chunk(std::uint64_t c) const {
    const std::uint64_t first = c * epp;
    return {first, std::min<std::uint64_t>(epp, options.elements - first)};
  }

  void flush(std::size_t t, const SendFn& send) {
    Engine& e = engines[t];
    for (const auto packet : e.transmits()) {
      Outgoing o;
      o.ip = aggregators[t].first;
      o.port = aggregators[t].second;
      o.data = reinterpret_cast<const std::uint8_t*>(packet.data());
      o.size = packet.size();
      send(o);
    }
    e.clear_transmits();
  }

  std::uint16_t rank;
  WorkerOptions options;
  std::uint64_t world;
  std::uint64_t epp;
  ChunkSplit split;
  std::uint64_t chunks = 0;
  std::uint32_t rank_sum = 0;
  TreeEngines engines;  // one per tree of the job
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<std::pair<std::uint32_t, std::uint16_t>> aggregators;
  std::uint64_t checked = 0, mismatches = 0;
  // The host fallback (FallbackGroup): null without one.
  std::unique_ptr<HostFallback> fallback;
  bool in_fallback = false;     // taken over: waits for, or is in, the job's session
  bool resume_pending = false;  // the session gave the operation back to the network
  bool session_ran = false;     // its session ran; finish_fallback is to come
  TimePoint stalled_since{};
  TimePoint session_now{};  // the session's instant: the fallback's clock
};

WorkerCore::WorkerCore(const JobPlan& plan, std::uint16_t rank, const WorkerOptions& options)
    : impl_(std::make_unique<Impl>(plan.impl().job, rank, options)) {}
WorkerCore::~WorkerCore() = default;

std::pair<std::uint32_t, std::uint16_t> WorkerCore::aggregator(std::size_t tree) const {
  return impl_->aggregators.at(tree);
}

void WorkerCore::start(std::int64_t now_ns, const SendFn& send) {
  std::vector<PacketSource*> sources;
  for (const auto& s : impl_->sources) sources.push_back(s.get());
  impl_->engines.start(sources, to_time_point(now_ns));
  if (impl_->fallback) impl_->fallback->begin_operation(impl_->engines.list());
  for (std::size_t t = 0; t < impl_->engines.size(); ++t) impl_->flush(t, send);
}

void WorkerCore::on_packet(const std::uint8_t* data, std::size_t size, std::uint8_t ecn,
                           std::int64_t now_ns, const SendFn& send) {
  // To the engine of the result's job id (its tree); anything else is counted unroutable.
  if (const auto t = impl_->engines.on_packet(bytes_of(data, size), to_time_point(now_ns), ecn))
    impl_->flush(*t, send);
}

void WorkerCore::on_timer(std::int64_t now_ns, const SendFn& send) {
  Impl& w = *impl_;
  const TimePoint now = to_time_point(now_ns);
  w.engines.on_timer(now);
  const auto after = std::chrono::nanoseconds(w.options.fallback_after_ns);
  if (w.options.fallback_after_ns > 0 && !w.in_fallback && !w.engines.any_failed() &&
      w.engines.stalled(now, after)) {
    // No result for fallback_after: the aggregator may be gone (as the communicator decides).
    w.engines.take_over();
    w.in_fallback = true;
    w.stalled_since = now;
  }
  for (std::size_t t = 0; t < w.engines.size(); ++t) w.flush(t, send);
}

std::optional<std::int64_t> WorkerCore::next_deadline_ns() const {
  std::optional<TimePoint> d = impl_->engines.next_deadline();
  if (impl_->options.fallback_after_ns > 0)
    if (const auto due = impl_->engines.stall_deadline(
            std::chrono::nanoseconds(impl_->options.fallback_after_ns));
        due && (!d || *due < *d))
      d = due;
  if (d) return to_ns(*d);
  return std::nullopt;
}

void WorkerCore::finish_fallback(std::int64_t now_ns, const SendFn& send) {
  Impl& w = *impl_;
  if (!w.in_fallback) return;
  w.in_fallback = false;
  w.session_ran = false;
  if (w.resume_pending) {
    w.resume_pending = false;
    w.engines.resume(to_time_point(now_ns));
  }
  for (std::size_t t = 0; t < w.engines.size(); ++t) w.flush(t, send);
}

WorkerCore::State WorkerCore::state() const {
  if (impl_->in_fallback && !impl_->engines.any_failed()) return State::kStalled;
  bool running = false, idle = false;
  for (const Engine* e : impl_->engines.list()) {
    switch (e->state()) {
      case Engine::State::kFailed:
        return State::kFailed;
      case Engine::State::kRunning:
      case Engine::State::kHost:  // (in a fallback session: in_fallback)
        running = true;
        break;
      case Engine::State::kIdle:
        idle = true;
        break;
      case Engine::State::kDone:
        break;
    }
  }
  return running ? State::kRunning : idle ? State::kIdle : State::kDone;
}

std::string WorkerCore::failure() const {
  std::string out;
  for (std::size_t t = 0; t < impl_->engines.size(); ++t)
    if (impl_->engines[t].state() == Engine::State::kFailed)
      out += fmt::format("{}tree {}: {}", out.empty() ? "" : "; ", t, impl_->engines[t].failure());
  return out;
}

WorkerCounters WorkerCore::counters() const {
  WorkerCounters c;
  const EngineStats s = impl_->engines.stats();  // summed; the estimates are tree 0's
  c.packets_sent = s.packets_sent;
  c.retransmissions = s.retransmissions;
  c.results = s.results;
  c.duplicates = s.duplicates;
  c.rejected = s.rejected;
  c.foreign_epoch = s.foreign_epoch;
  c.notices = s.notices;
  c.recovery_resends = s.recovery_resends;
  c.ce_results = s.ce_results;
  c.window_cuts = s.window_cuts;
  c.rtt_samples = s.rtt_samples;
  c.spurious_retransmissions = s.spurious_retransmissions;
  c.cwnd = s.cwnd;
  c.srtt_us = std::chrono::duration<double, std::micro>(s.srtt).count();
  c.elements_checked = impl_->checked;
  c.mismatches = impl_->mismatches;
  c.unroutable = s.unroutable;
  if (impl_->fallback) {
    const FallbackStats& f = impl_->fallback->stats();
    c.fallback_sessions = f.sessions;
    c.fallback_shared_results = f.shared_results;
    c.fallback_host_packets = f.host_packets;
    c.fallback_resumed = f.resumed;
  }
  return c;
}

// ---- FallbackGroup ------------------------------------------------------------------------------

namespace {

// A member of the in-process group that logs what each collective call sends to and receives
// from the other ranks (the session's modeled duration).
class MeteredPeers final : public Peers {
 public:
  struct Call {
    std::uint64_t out = 0, in = 0;
  };
  MeteredPeers(std::shared_ptr<Peers> inner, std::vector<Call>* log)
      : inner_(std::move(inner)), log_(log) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return "the fabric's hosts"; }
  std::vector<Bytes> allgather(std::span<const std::byte> mine,
                               std::chrono::milliseconds timeout) override {
    std::vector<Bytes> all = inner_->allgather(mine, timeout);
    Call c;
    c.out = mine.size() * static_cast<std::uint64_t>(size() - 1);
    for (int r = 0; r < size(); ++r)
      if (r != rank()) c.in += all[static_cast<std::size_t>(r)].size();
    log_->push_back(c);
    return all;
  }
  std::vector<Bytes> alltoall(const std::vector<Bytes>& to,
                              std::chrono::milliseconds timeout) override {
    std::vector<Bytes> from = inner_->alltoall(to, timeout);
    Call c;
    for (int r = 0; r < size(); ++r) {
      if (r == rank()) continue;
      c.out += to[static_cast<std::size_t>(r)].size();
      c.in += from[static_cast<std::size_t>(r)].size();
    }
    log_->push_back(c);
    return from;
  }

 private:
  std::shared_ptr<Peers> inner_;
  std::vector<Call>* log_;
};

// How long a rank of a session may wait for the others (wall time): the threads of one process
// all join at once, so only a defect waits this long.
constexpr std::chrono::milliseconds kSessionTimeout{60'000};

}  // namespace

struct FallbackGroup::Impl {
  std::vector<WorkerCore*> workers;
  FallbackCost cost;
  InprocPeerGroup group;
  std::vector<std::vector<MeteredPeers::Call>> logs;  // per rank, the current session's calls

  Impl(std::vector<WorkerCore*> w, const FallbackCost& c)
      : workers(std::move(w)),
        cost(c),
        group(static_cast<int>(workers.size())),
        logs(workers.size()) {}
};

FallbackGroup::FallbackGroup(std::vector<WorkerCore*> workers, const FallbackCost& cost)
    : impl_(std::make_unique<Impl>(std::move(workers), cost)) {
  if (cost.host_gbps <= 0) throw Error(Errc::kConfig, "fabric fallback: host_gbps must be > 0");
  for (std::size_t r = 0; r < impl_->workers.size(); ++r) {
    WorkerCore::Impl& w = *impl_->workers[r]->impl_;
    if (w.options.fallback_after_ns <= 0)
      throw Error(Errc::kConfig,
                  fmt::format("fabric fallback: rank {} has no fallback_after_ns", r));
    auto peers =
        std::make_shared<MeteredPeers>(impl_->group.member(static_cast<int>(r)), &impl_->logs[r]);
    w.fallback =
        std::make_unique<HostFallback>(peers, kSessionTimeout, [&w] { return w.session_now; });
  }
}
FallbackGroup::~FallbackGroup() = default;

bool FallbackGroup::ready() const {
  bool stalled = false;
  for (const WorkerCore* w : impl_->workers) {
    const WorkerCore::State st = w->state();
    if (st == WorkerCore::State::kStalled && !w->impl_->session_ran)
      stalled = true;
    else if (st != WorkerCore::State::kDone)
      return false;  // running, failed, or its session's exchange has not ended
  }
  return stalled;
}

FallbackRun FallbackGroup::run(std::int64_t now_ns) {
  FallbackRun out;
  const std::size_t n = impl_->workers.size();
  std::vector<std::string> errors(n);
  std::vector<HostFallback::Outcome> outcomes(n, HostFallback::Outcome::kComplete);
  for (auto& log : impl_->logs) log.clear();
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < n; ++r) {
    WorkerCore::Impl& w = *impl_->workers[r]->impl_;
    w.session_now = to_time_point(now_ns);
    const bool stalled = impl_->workers[r]->state() == WorkerCore::State::kStalled;
    if (stalled) {
      out.stalled.push_back(static_cast<std::uint16_t>(r));
      w.session_ran = true;
    }
    threads.emplace_back([this, &w, &errors, &outcomes, r, stalled] {
      try {
        const std::vector<Engine*> list = w.engines.list();
        outcomes[r] = stalled ? w.fallback->run(list, HostFallback::Role::kStuck, w.stalled_since)
                              : w.fallback->run(list, HostFallback::Role::kClosing);
      } catch (const std::exception& e) {
        errors[r] = fmt::format("rank {}: {}", r, e.what());
        impl_->group.break_group();  // the others' calls fail at once instead of waiting
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors)
    if (!e.empty() && out.error.empty()) out.error = e;
  if (!out.error.empty()) return out;
  for (std::size_t r = 0; r < n; ++r)
    if (outcomes[r] == HostFallback::Outcome::kResume)
      impl_->workers[r]->impl_->resume_pending = true;
  // Every rank made the same calls: the c-th call of all ranks is one collective.
  std::size_t calls = 0;
  for (const auto& log : impl_->logs) calls = std::max(calls, log.size());
  double ns = 0;
  for (std::size_t c = 0; c < calls; ++c) {
    std::uint64_t most = 0;
    for (const auto& log : impl_->logs) {
      if (c >= log.size()) continue;
      most = std::max({most, log[c].out, log[c].in});
      out.bytes += log[c].out;
    }
    ns += static_cast<double>(impl_->cost.step_ns) +
          static_cast<double>(most) * 8 / impl_->cost.host_gbps;
  }
  out.calls = calls;
  out.duration_ns = std::llround(ns);
  return out;
}

// ---- AggregatorCore -----------------------------------------------------------------------------

struct AggregatorCore::Impl {
  // The model's output, handed to the SendFn of the call in progress.
  class Sink final : public sim::PacketSink {
   public:
    void send(const Endpoint& destination, std::span<const std::byte> packet,
              std::uint8_t ecn) override {
      Outgoing o;
      o.ip = destination.ip;
      o.port = destination.port;
      o.data = reinterpret_cast<const std::uint8_t*>(packet.data());
      o.size = packet.size();
      o.ecn = ecn;
      (*to)(o);
    }
    const SendFn* to = nullptr;
  };

  Impl(const std::vector<JobSpec>& jobs, std::size_t pool, std::size_t lanes)
      : model(std::make_unique<sim::SwitchModel>(pool, lanes)) {
    for (const JobSpec& j : jobs) model->add_job(j);
  }

#ifdef NETAGG_FABRIC_FPGA
  // The FPGA aggregator's HLS model, as netagg-fpgad drives it: each datagram becomes a frame on
  // the port of its sender, the model runs until idle, each egress frame's packet is sent.
  struct Route {
    unsigned port = 0;
    wire::Mac mac{};
  };
  struct Fpga {};
  Impl(Fpga, const std::vector<JobSpec>& jobs, std::uint32_t ip, std::uint16_t port)
      : fpga(sim::make_hls_model()) {
    const fpga::DeviceInfo info = fpga::read_device_info(*fpga);
    fpga::check_jobs(info, jobs);
    address.ip = ip;
    address.udp_port = port;
    fpga::set_aggregator_address(*fpga, address);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      fpga::program_job(*fpga, jobs[i], static_cast<unsigned>(i), address);
      for (const WorkerSpec& w : jobs[i].workers)
        routes[key(w.address)] = {fpga::worker_port(w, info.num_ports), fpga::worker_mac(w)};
      if (jobs[i].parent)
        routes[key(jobs[i].parent->address)] = {fpga::parent_port(*jobs[i].parent),
                                                fpga::parent_mac(*jobs[i].parent)};
    }
    frame.resize(wire::kFrameOverhead + wire::kMaxPacketSize);
  }
  static std::uint64_t key(const Endpoint& e) { return (std::uint64_t{e.ip} << 16) | e.port; }

  void process_fpga(const Endpoint& source, std::span<const std::byte> bytes, std::uint8_t ecn,
                    const SendFn& send) {
    const auto r = routes.find(key(source));
    const Route route =
        r != routes.end()
            ? r->second
            : Route{0, fpga::worker_mac(WorkerSpec{0, source, std::nullopt, std::nullopt})};
    wire::FrameAddress a;
    a.src_mac = route.mac;
    a.dst_mac = address.mac;
    a.src_ip = source.ip;
    a.src_port = source.port;
    a.dst_ip = address.ip;
    a.dst_port = address.udp_port;
    a.ecn = ecn;
    const std::size_t n = wire::encode_frame(a, bytes, frame);
    if (n == 0) throw Error(Errc::kInvalidArgument, "fabric: a datagram does not fit a frame");
    fpga->push_frame(route.port, {frame.data(), n});
    if (!fpga->run_until_idle(fpga->default_quiet_cycles(), 10'000'000))
      throw Error(Errc::kTransport, "fabric: the FPGA's HLS model did not go idle");
    for (const sim::EgressFrame& f : fpga->pop_egress()) {
      const wire::DecodedFrame d = wire::decode_frame(f.bytes, /*udp_port=*/0);
      if (!d) {
        ++undecodable;
        continue;
      }
      Outgoing o;
      o.ip = d.address.dst_ip;
      o.port = d.address.dst_port;
      o.data = reinterpret_cast<const std::uint8_t*>(f.bytes.data() + wire::kFrameOverhead);
      o.size = d.packet.header.packet_size();
      o.ecn = d.address.ecn;
      send(o);
    }
  }

  std::unique_ptr<sim::FpgaModel> fpga;
  fpga::AggregatorAddress address;
  std::map<std::uint64_t, Route> routes;
  std::vector<std::byte> frame;
  std::uint64_t undecodable = 0;
#endif

  std::unique_ptr<sim::SwitchModel> model;
  Sink sink;
};

namespace {
std::size_t pool_for(const std::vector<JobSpec>& jobs) {
  std::size_t pool = 1;
  for (const JobSpec& j : jobs)
    pool = std::max<std::size_t>(pool, std::size_t{j.slot_base} + j.slot_count);
  return pool;
}
}  // namespace

AggregatorCore::AggregatorCore(const JobPlan& plan, const std::string& name,
                               const std::string& model, std::uint32_t ip, std::uint16_t port) {
  const std::vector<JobSpec> jobs = jobs_at_aggregator(plan.impl().job, name, std::nullopt);
  if (model == "switch") {
    impl_ = std::make_unique<Impl>(jobs, pool_for(jobs), plan.elements_per_packet());
    return;
  }
  if (model != "fpga-hls")
    throw Error(Errc::kConfig, fmt::format("fabric: no aggregator model '{}'", model));
#ifdef NETAGG_FABRIC_FPGA
  impl_ = std::make_unique<Impl>(Impl::Fpga{}, jobs, ip, port);
#else
  (void)ip;
  (void)port;
  throw Error(Errc::kUnsupported,
              "fabric: the FPGA aggregator's model was not built (NETAGG_BUILD_HW and "
              "NETAGG_BUILD_DRIVER)");
#endif
}
AggregatorCore::~AggregatorCore() = default;

void AggregatorCore::process(std::uint32_t src_ip, std::uint16_t src_port, const std::uint8_t* data,
                             std::size_t size, std::uint8_t ecn, const SendFn& send) {
#ifdef NETAGG_FABRIC_FPGA
  if (impl_->fpga) {
    impl_->process_fpga(Endpoint{src_ip, src_port}, bytes_of(data, size), ecn, send);
    return;
  }
#endif
  impl_->sink.to = &send;
  impl_->model->process(Endpoint{src_ip, src_port}, bytes_of(data, size), impl_->sink, ecn);
  impl_->sink.to = nullptr;
}

std::vector<std::pair<std::string, std::uint64_t>> AggregatorCore::counters() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
#ifdef NETAGG_FABRIC_FPGA
  if (impl_->fpga) {
    for (const auto& c : fpga::read_counters(*impl_->fpga))
      out.emplace_back(std::string(c.name), c.value);
    out.emplace_back("egress_undecodable", impl_->undecodable);
    return out;
  }
#endif
  for (const auto& [name, value] : impl_->model->counters().named())
    out.emplace_back(std::string(name), value);
  return out;
}

std::size_t AggregatorCore::open_rounds() const {
  return impl_->model ? impl_->model->open_rounds().size() : 0;
}

std::uint64_t AggregatorCore::cycles() const {
#ifdef NETAGG_FABRIC_FPGA
  if (impl_->fpga) return impl_->fpga->cycles();
#endif
  return 0;
}

}  // namespace netagg::fabric

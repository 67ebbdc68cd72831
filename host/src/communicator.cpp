// SPDX-License-Identifier: Apache-2.0
// The communicator: a queue of all-reduce operations run in order by one thread per
// communicator, each operation a PacketSource per tree (packet_sources.hpp: how the caller's
// elements become packets and results become elements again) driven through the sans-IO engines
// (TreeEngines) over a Transport (transport.cpp makes the one the configuration names).
#include "netagg/communicator.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "netagg/engine.hpp"
#include "netagg/fallback.hpp"
#include "netagg/split.hpp"
#include "netagg/trees.hpp"
#include "packet_sources.hpp"

namespace netagg {

struct Handle::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      done = true;
      error = std::move(e);
    }
    done_cv.notify_all();
  }
};

void Handle::wait() {
  if (!state_) throw Error(Errc::kInvalidArgument, "wait() on an empty Handle");
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Handle::ready() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

namespace {

// Different seeds per rank, so that the workers of one job do not lose the same packets.
std::uint64_t rank_seed(std::uint64_t seed, int rank) {
  return seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1));
}

// How long an aggregator that never answered may refuse every packet before the all-reduce ends
// (a daemon started a little after its workers is answering by then).
constexpr Duration kRefusedFor = std::chrono::seconds(1);

// Idle wait when the engine has no deadline (it always has one while running; this is a guard).
constexpr Duration kIdlePoll = std::chrono::milliseconds(50);
// A round that waits for other ranks is reported after this long without a result.
constexpr Duration kWaitingReportAfter = std::chrono::milliseconds(500);
constexpr int kWaitingReports = 4;  // per operation

}  // namespace

struct Communicator::Impl {
  using Data = std::variant<std::span<float>, std::span<std::int32_t>, std::span<Bf16>>;
  struct Op {
    Data data;
    std::shared_ptr<Handle::State> state;
  };

  Impl(Config c, std::unique_ptr<Transport> t, std::shared_ptr<Peers> peers)
      : cfg(std::move(c)),
        transport(std::move(t)),
        split(tree_weights(cfg)),
        engines(tree_params(cfg), tree_weights(cfg), cfg.pace_gbps) {
    if (peers)
      fallback = std::make_unique<HostFallback>(
          std::move(peers),
          std::chrono::duration_cast<std::chrono::milliseconds>(cfg.fallback_timeout));
    if (cfg.loss > 0)
      transport = with_loss(std::move(transport), cfg.loss, rank_seed(cfg.loss_seed, cfg.rank));
    worker = std::thread([this] { run(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    queue_cv.notify_all();
    worker.join();
  }

  Handle enqueue(Data data) {
    auto state = std::make_shared<Handle::State>();
    {
      std::lock_guard lock(mutex);
      queue.push_back({data, state});
    }
    queue_cv.notify_all();
    return Handle(state);
  }

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock lock(mutex);
        queue_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) {  // stopping, and everything queued is done
          lock.unlock();
          close();
          return;
        }
        op = std::move(queue.front());
        queue.pop_front();
      }
      std::exception_ptr error;
      try {
        execute(op);
        ++completed;
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        stats_snapshot = engines.stats();
        stats_snapshot.operations = completed;  // all-reduce calls, not engine operations
        counters_snapshot = transport->counters();
        if (fallback) fallback_snapshot = fallback->stats();
      }
      op.state->finish(error);
    }
  }

  void report(const std::string& text) const {
    fmt::print(stderr, "netagg: rank {}: {}\n", cfg.rank, text);
    std::fflush(stderr);
  }

  std::vector<Engine*> engine_list() const { return engines.list(); }

  // The aggregators this worker sends to (of the trees whose engines run, if any do), each once.
  std::string aggregators_text() const {
    const std::vector<Endpoint> all = cfg.aggregator_addresses();
    std::vector<std::string> names;
    bool any_running = false;
    for (const Engine* e : engines.list())
      any_running = any_running || e->state() == Engine::State::kRunning;
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (any_running && k < engines.size() && engines[k].state() != Engine::State::kRunning)
        continue;
      std::string name = all[k].to_string();
      if (all.size() > 1) name += fmt::format(" (tree {})", k);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return fmt::format("{}", fmt::join(names, ", "));
  }

  // A communicator that goes away joins the others' session once: a rank that lost the last
  // results of its last all-reduce gets them from the ranks that are done.
  void close() {
    if (!fallback || broken || completed == 0) return;
    try {
      const std::vector<Engine*> list = engine_list();
      fallback->run(list, HostFallback::Role::kClosing);
    } catch (const std::exception& e) {
      report(
          fmt::format("closing: the other workers did not all close with this one ({})", e.what()));
    }
  }

  // The aggregator's address refuses our packets (ICMP port unreachable: nothing listens there)
  // and it never answered this communicator: a wrong address or port, or a daemon that is not
  // running. Without the host fallback that ends the all-reduce after kRefusedFor, not after the
  // job timeout; with it, the fallback's message names the cause.
  void check_refused() {
    const std::uint64_t refused = transport->counters().refused;
    if (refused == refusals_seen) return;
    const TimePoint now = Clock::now();
    if (refusals_seen == 0) first_refusal = now;
    refusals_seen = refused;
    if (engines.stats().results > 0 || fallback) return;
    if (now - first_refusal >= kRefusedFor) throw Error(Errc::kTransport, refused_text());
  }
  std::string refused_text() const {
    const std::optional<Endpoint> at = transport->last_refused();
    return fmt::format(
        "job {} rank {}: nothing listens at aggregator {}: {} packets sent there were refused "
        "(ICMP port unreachable) and it never answered. Is its daemon running, and on the "
        "address and port the job names?",
        cfg.job.job_id, cfg.rank, at ? at->to_string() : aggregators_text(), refusals_seen);
  }
  bool refused_and_never_answered() const {
    return refusals_seen > 0 && engines.stats().results == 0;
  }

  // Runs a session of the host fallback for the operation the engines hold; returns true when
  // the operation is complete, false when the workers gave it back to the network.
  bool host_session() {
    const std::vector<Engine*> list = engine_list();
    engines.take_over();
    const FallbackStats before = fallback->stats();
    HostFallback::Outcome outcome;
    try {
      outcome = fallback->run(list, HostFallback::Role::kStuck);
    } catch (const Error& e) {
      throw Error(
          e.code(),
          fmt::format("all-reduce timed out: job {} rank {}: no result from aggregator {} "
                      "and the workers could not finish it among themselves: {}; "
                      "unanswered: {}",
                      cfg.job.job_id, cfg.rank, aggregators_text(), e.what(), unanswered_text()));
    }
    const FallbackStats& after = fallback->stats();
    if (outcome == HostFallback::Outcome::kResume) {
      engines.resume(Clock::now());
      report(
          "the workers give the all-reduce back to the aggregator (it answered another "
          "worker: a worker was late)");
      return false;
    }
    if (after.host_packets > before.host_packets || after.shared_results > before.shared_results)
      report(fmt::format(
          "all-reduce finished by the workers over {}: {} packets "
          "computed on the hosts, {} results copied from other workers{}",
          fallback->peers().name(), after.host_packets - before.host_packets,
          after.shared_results - before.shared_results,
          after.to_hosts > before.to_hosts
              ? fmt::format("; later all-reduces of {} run on the hosts, and the aggregator is "
                            "tried again now and then",
                            host_trees_text())
              : ""));
    return true;
  }

  void execute(Op& op) {
    if (broken)
      throw Error(broken->code(), fmt::format("an earlier all-reduce on this "
                                              "communicator failed: {}",
                                              broken->what()));
    try {
      std::visit([&](auto data) { execute(data); }, op.data);
    } catch (const Error& e) {
      broken = e;
      throw;
    }
  }

  // Tree k's share of a tensor of n elements (all of it on one tree).
  Chunking chunking(std::size_t n, std::size_t k) const {
    return Chunking(n, cfg.job.elements_per_packet, engines.size() > 1 ? &split : nullptr, k);
  }

  template <typename T, wire::DataType kDtype>
  void execute_raw(std::span<T> data) {
    std::vector<std::unique_ptr<PacketSource>> sources;
    for (std::size_t k = 0; k < engines.size(); ++k)
      sources.push_back(std::make_unique<RawSource<T, kDtype>>(data, chunking(data.size(), k)));
    drive(sources);
  }

  void execute(std::span<std::int32_t> data) {
    if (data.empty()) return;
    execute_raw<std::int32_t, wire::DataType::kInt32>(data);
  }

  void execute(std::span<Bf16> data) {
    if (data.empty()) return;
    execute_raw<Bf16, wire::DataType::kBf16>(data);
  }

  void execute(std::span<float> data) {
    if (data.empty()) return;
    if (cfg.float_wire == FloatWire::kFp32) {
      execute_raw<float, wire::DataType::kFp32>(data);
      return;
    }
    if (cfg.float_wire == FloatWire::kFp32Exact) {
      execute_exact(data);
      return;
    }
    // Block floating point scales by the number of workers whose values are summed: all of the
    // job's (the workers its entries stand for, `covers` counted). A file of one aggregator below
    // the root of a tree (a job with a parent) stands only for that aggregator's subtree, so its
    // count is not the sum's: refused rather than overflowed.
    if (cfg.job.parent)
      throw Error(Errc::kConfig,
                  fmt::format("job {}: an fp32 all-reduce as block floating point (float_wire "
                              "int32-bfp) needs the whole job's worker count, and this job is one "
                              "aggregator's part of a tree (it has a parent): give the workers the "
                              "whole job, with its trees (docs/job-format.md, \"Trees\")",
                              cfg.job.job_id));
    const int world = static_cast<int>(cfg.job.covered());
    execute_ahead(data, [&](const Chunking& c, std::size_t lead) {
      return std::make_unique<BlockFloatSource>(data, c, lead, world);
    });
  }

  // fp32 summed exactly by the aggregator: the schedule of block floating point.
  void execute_exact(std::span<float> data) {
    execute_ahead(data, [&](const Chunking& c, std::size_t lead) {
      return std::make_unique<ExactSource>(data, c, lead);
    });
  }

  // A source whose exponents travel ahead of the data (block floating point, exact fp32), on each
  // tree: pipelined with the exponents a window ahead, or for a share of fewer chunks than the
  // tree's window in two operations (exponents, then values). make(chunking, lead) makes it.
  template <typename Make>
  void execute_ahead(std::span<float> data, Make make) {
    std::vector<std::unique_ptr<PacketSource>> sources;
    std::vector<std::unique_ptr<PacketSource>> first(engines.size()), second(engines.size());
    bool two_phases = false;
    for (std::size_t k = 0; k < engines.size(); ++k) {
      const Chunking c = chunking(data.size(), k);
      const std::uint64_t chunks = c.chunks();
      const std::size_t window = engines[k].params().window;  // the exponents' lead
      if (chunks == 0) continue;
      if (chunks >= window) {
        sources.push_back(make(c, window));
        first[k] = std::make_unique<SubrangeSource>(*sources.back(), 0, chunks + window);
      } else {
        sources.push_back(make(c, chunks));
        first[k] = std::make_unique<SubrangeSource>(*sources.back(), 0, chunks);
        second[k] = std::make_unique<SubrangeSource>(*sources.back(), chunks, 2 * chunks);
        two_phases = true;
      }
    }
    drive(first);
    if (two_phases) drive(second);
  }

  // Runs one operation on each tree's engine that has a source (null: none), all at once, to
  // their end: packets out, results in (to the engine of their job_id), timers, until every one
  // is done or one failed. An engine's transmits stay valid until cleared, so a whole received
  // batch is answered with one send per tree.
  void drive(const std::vector<std::unique_ptr<PacketSource>>& sources) {
    const auto start = Clock::now();
    for (std::size_t k = 0; k < engines.size(); ++k)
      if (sources[k]) engines[k].start(*sources[k], start);
    std::vector<bool> probing(engines.size(), false);  // trees in host mode tried in the network
    if (fallback) {
      const std::vector<Engine*> list = engine_list();
      fallback->begin_operation(list);
      if (fallback->join_next()) {
        // The others wait for this operation in a session: it starts there.
        if (host_session()) return;
      } else if (fallback->host_mode()) {
        // Trees whose aggregators died go to the hosts at once (finished in a session once the
        // others are done), unless this operation probes them; the same on every rank.
        const bool probe = fallback->probe_now();
        for (std::size_t k = 0; k < engines.size(); ++k) {
          if (!fallback->host_mode(k) || engines[k].state() != Engine::State::kRunning) continue;
          if (probe)
            probing[k] = true;
          else
            engines[k].take_over();
        }
        if (probe) report(fmt::format("trying the aggregator of {} again", host_trees_text()));
      }
    }
    const auto running = [&](std::size_t k) {
      return sources[k] && engines[k].state() == Engine::State::kRunning;
    };
    const auto handle_packet = [&](std::span<const std::byte> packet) {
      engines.on_packet(packet, Clock::now(), transport->last_ecn());
    };
    // A round that waits for other ranks (a duplicate notice) is reported after
    // kWaitingReportAfter without a result, and again (a few times at most) when the ranks it
    // waits for change: the job waits, but the user knows for whom.
    std::string waiting_reported;
    int waiting_reports = 0;
    const auto waiting_text = [&](TimePoint now) -> std::optional<std::string> {
      for (std::size_t k = 0; k < engines.size(); ++k) {
        const Engine& e = engines[k];
        if (!running(k) || !e.waiting_notice()) continue;
        if (now - e.last_progress() < kWaitingReportAfter) continue;
        return (engines.size() == 1 ? "" : fmt::format("tree {}: ", k)) +
               e.describe(*e.waiting_notice());
      }
      return std::nullopt;
    };
    for (;;) {
      bool any = false;
      std::optional<TimePoint> deadline;
      // Nothing runs in the network any more: what the hosts have is finished in a session.
      bool in_network = false;
      for (std::size_t k = 0; k < engines.size(); ++k) in_network = in_network || running(k);
      if (!in_network && fallback) {
        bool hosted = false;
        for (const Engine* e : engines.list())
          hosted = hosted || e->state() == Engine::State::kHost;
        if (hosted && host_session()) return;
      }
      for (std::size_t k = 0; k < engines.size(); ++k) {
        Engine& e = engines[k];
        if (!e.transmits().empty()) {
          transport->send_to(k, e.transmits());
          e.clear_transmits();
        }
        if (!running(k)) continue;
        any = true;
        if (const auto d = e.next_deadline(); d && (!deadline || *d < *deadline)) deadline = d;
      }
      if (!any) break;
      // (A failure ends the communicator, so an engine in kFailed is this operation's.)
      if (engines.any_failed()) break;
      const auto now = Clock::now();
      const auto waiting = waiting_text(now);
      if (waiting && *waiting != waiting_reported && waiting_reports < kWaitingReports) {
        waiting_reported = *waiting;
        ++waiting_reports;
        report(*waiting);
      }
      if (fallback) {
        // No result on any tree for fallback_after: the aggregator may be gone. (Or, when it
        // says that its rounds wait for ranks, those ranks went to the hosts already, or are
        // gone: the session tells.)
        if (engines.stalled(now, cfg.fallback_after)) {
          report(fmt::format(
              "no result from aggregator {} for {} ms{}: finishing the all-reduce with the other "
              "workers (fallback {})",
              aggregators_text(),
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  now - engines.last_progress().value_or(now))
                  .count(),
              refused_and_never_answered()
                  ? fmt::format(" ({} packets refused: nothing listens there, and it never "
                                "answered; is its daemon running, on the job's address?)",
                                refusals_seen)
                  : "",
              to_string(cfg.fallback)));
          if (host_session()) return;
          continue;
        }
        if (const auto due = engines.stall_deadline(cfg.fallback_after); deadline && due)
          deadline = std::min(*deadline, *due);
      }
      if (waiting_reports < kWaitingReports)  // wake up for the first report (later ones
        for (std::size_t k = 0; k < engines.size(); ++k)  // come with the notices)
          if (const auto at = engines[k].last_progress() + kWaitingReportAfter;
              running(k) && engines[k].waiting_notice() && at > now)
            deadline = std::min(deadline.value_or(TimePoint::max()), at);
      const Duration wait =
          deadline ? std::max(Duration::zero(), *deadline - Clock::now()) : kIdlePoll;
      transport->receive(wait, handle_packet);
      check_refused();
      engines.on_timer(Clock::now());  // what it sends goes at the top of the loop
    }
    for (std::size_t k = 0; k < engines.size(); ++k)
      if (sources[k] && engines[k].state() == Engine::State::kFailed)
        throw Error(engines[k].failed_by_notice() ? Errc::kRejected : Errc::kTimeout,
                    engines.size() == 1 ? engines[k].failure()
                                        : fmt::format("tree {}: {}", k, engines[k].failure()));
    for (std::size_t k = 0; k < engines.size(); ++k) {
      if (!probing[k] || engines[k].state() != Engine::State::kDone) continue;
      fallback->back_to_network(k);
      report(
          fmt::format("the aggregator of {} answers again: its all-reduces run in the network "
                      "again",
                      engines.size() == 1 ? std::string("the job") : fmt::format("tree {}", k)));
    }
  }

  // The first packet without a result of each slot of the current operation, for messages.
  std::string unanswered_text() const {
    std::vector<std::string> missing;
    std::size_t more = 0;
    for (std::size_t k = 0; k < engines.size(); ++k) {
      const Engine& e = engines[k];
      if (e.state() == Engine::State::kDone) continue;
      for (std::uint32_t s = 0; s < e.params().window; ++s) {
        const std::uint64_t g = e.frontier(s);
        if (g >= e.op_end_global()) continue;
        if (missing.size() == 8) {
          ++more;
          continue;
        }
        missing.push_back(fmt::format("{}slot {} seq {}",
                                      engines.size() > 1 ? fmt::format("tree {} ", k) : "",
                                      e.params().slot_base + s, static_cast<std::uint32_t>(g)));
      }
    }
    return fmt::format("{}{}", fmt::join(missing, ", "),
                       more ? fmt::format(" and {} more", more) : std::string());
  }

  // The trees in host mode, for messages: "the job" on one tree.
  std::string host_trees_text() const {
    if (engines.size() == 1) return "the job";
    std::vector<std::size_t> trees;
    for (std::size_t k = 0; k < engines.size(); ++k)
      if (fallback && fallback->host_mode(k)) trees.push_back(k);
    return fmt::format("tree{} {}", trees.size() == 1 ? "" : "s", fmt::join(trees, ", "));
  }

  static std::vector<EngineParams> tree_params(const Config& c) {
    std::vector<EngineParams> out;
    for (std::size_t k = 0; k < c.trees(); ++k) out.push_back(c.engine_params(k));
    return out;
  }

  static std::vector<std::uint32_t> tree_weights(const Config& c) {
    std::vector<std::uint32_t> w;
    for (const TreeSpec& t : c.job.trees) w.push_back(t.weight);
    return w;
  }

  Config cfg;
  std::unique_ptr<Transport> transport;
  ChunkSplit split;                        // the trees' shares of a tensor's chunks
  TreeEngines engines;                     // one per tree
  std::optional<Error> broken;             // the first failure; only the worker thread touches it
  std::unique_ptr<HostFallback> fallback;  // null: no host fallback
  // Refusals (Transport::counters().refused) seen, and when the first came.
  std::uint64_t refusals_seen = 0;
  TimePoint first_refusal{};

  mutable std::mutex mutex;
  std::condition_variable queue_cv;
  std::deque<Op> queue;
  bool stopping = false;
  std::uint64_t completed = 0;  // all-reduce calls that succeeded (worker thread only)
  EngineStats stats_snapshot;
  TransportCounters counters_snapshot;
  FallbackStats fallback_snapshot;
  std::thread worker;  // last: starts after everything above is built
};

namespace {

Config validated(Config cfg) {
  cfg.validate();
  if (!cfg.epoch) {
    if (const auto problem = launcher_run_id_problem())
      throw Error(Errc::kConfig, fmt::format("epoch: not set: {}", *problem));
    throw Error(Errc::kConfig,
                "epoch: not set. Every worker of a run needs the same epoch, a new one for each "
                "run: set NETAGG_EPOCH (e.g. to $(od -An -N4 -tu4 /dev/urandom) once for all "
                "workers), start the workers with mpirun, torchrun or srun, or set Config::epoch");
  }
  check_epoch(*cfg.epoch, "epoch");
  return cfg;
}

}  // namespace

namespace {

// The host fallback's peer group the configuration asks for: Gloo through cfg.store (keys of
// this run kept apart by job and epoch), or none, with a warning when the fallback is wanted
// but has no store.
std::shared_ptr<Peers> peers_for(const Config& cfg) {
  if (cfg.fallback == Fallback::kOff) return nullptr;
  if (cfg.store.empty()) {
    fmt::print(stderr,
               "netagg: rank {}: warning: no host fallback: no rendezvous store is set "
               "(NETAGG_STORE=file:DIR, a directory every worker sees). If the aggregator stops "
               "answering, all-reduces fail after the job timeout. Set NETAGG_FALLBACK=off to "
               "say that this is intended.\n",
               cfg.rank);
    return nullptr;
  }
  Endpoint local = cfg.local_address();
  const std::string address = Endpoint{local.ip, 0}.to_string();
  return make_gloo_peers(
      cfg.store, fmt::format("netagg/job{}/epoch{}", cfg.job.job_id, *cfg.epoch),
      address.substr(0, address.rfind(':')), cfg.rank, static_cast<int>(cfg.job.world_size()),
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.fallback_timeout));
}

}  // namespace

Communicator::Communicator(Config cfg) {
  cfg = validated(std::move(cfg));
  auto transport = make_transport(cfg);
  auto peers = peers_for(cfg);
  impl_ = std::make_unique<Impl>(std::move(cfg), std::move(transport), std::move(peers));
}

Communicator::Communicator(Config cfg, std::unique_ptr<Transport> transport) {
  if (!transport) throw Error(Errc::kInvalidArgument, "Communicator: no transport given");
  cfg = validated(std::move(cfg));
  auto peers = peers_for(cfg);
  impl_ = std::make_unique<Impl>(std::move(cfg), std::move(transport), std::move(peers));
}

Communicator::Communicator(Config cfg, std::unique_ptr<Transport> transport,
                           std::shared_ptr<Peers> peers) {
  if (!transport) throw Error(Errc::kInvalidArgument, "Communicator: no transport given");
  if (peers &&
      (peers->rank() != cfg.rank || peers->size() != static_cast<int>(cfg.job.world_size())))
    throw Error(Errc::kInvalidArgument,
                fmt::format("Communicator: the peer group is rank {} of {}, the configuration "
                            "rank {} of {}",
                            peers->rank(), peers->size(), cfg.rank, cfg.job.world_size()));
  cfg = validated(std::move(cfg));
  if (cfg.fallback == Fallback::kOff) peers.reset();
  if (peers && cfg.fallback_after >= cfg.job_timeout)
    throw Error(Errc::kConfig,
                fmt::format("fallback_after: {} ms is not below job_timeout {} ms: the job timeout "
                            "would end the all-reduce before the fallback starts",
                            std::chrono::duration<double, std::milli>(cfg.fallback_after).count(),
                            std::chrono::duration<double, std::milli>(cfg.job_timeout).count()));
  impl_ = std::make_unique<Impl>(std::move(cfg), std::move(transport), std::move(peers));
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->cfg.rank; }
int Communicator::world_size() const { return static_cast<int>(impl_->cfg.job.world_size()); }
const Config& Communicator::config() const { return impl_->cfg; }

void Communicator::allreduce(std::span<float> data) { allreduce_async(data).wait(); }
void Communicator::allreduce(std::span<std::int32_t> data) { allreduce_async(data).wait(); }
void Communicator::allreduce(std::span<Bf16> data) { allreduce_async(data).wait(); }
Handle Communicator::allreduce_async(std::span<float> data) { return impl_->enqueue(data); }
Handle Communicator::allreduce_async(std::span<std::int32_t> data) { return impl_->enqueue(data); }
Handle Communicator::allreduce_async(std::span<Bf16> data) {
  // Refused at once, not as a failed operation: nothing was sent, the communicator stays usable.
  if (!adds_floats(impl_->cfg.float_wire))
    throw Error(Errc::kUnsupported,
                "bf16: the aggregator adds integers (float_wire int32-bfp: the switch), which "
                "cannot sum bf16; bf16 needs an aggregator that adds floats (float_wire fp32 or "
                "fp32-exact: the FPGA aggregator)");
  return impl_->enqueue(data);
}

EngineStats Communicator::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats_snapshot;
}

TransportCounters Communicator::transport_counters() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->counters_snapshot;
}

FallbackStats Communicator::fallback_stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->fallback_snapshot;
}

bool Communicator::has_fallback() const { return impl_->fallback != nullptr; }

}  // namespace netagg

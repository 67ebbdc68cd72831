// SPDX-License-Identifier: Apache-2.0
// netagg-switchd: serves the SwitchML switch model on UDP, so workers (netagg-allreduce, the
// end-to-end tests) can all-reduce through it on one machine. The UDP side (batched with
// recvmmsg/sendmmsg, signals through a signalfd) is sim/common's DatagramServer; main's frame and
// the counters' reports are sim/common's daemon_main.hpp.
//
// --threads N serves from N threads, each with its own socket on the address (SO_REUSEPORT)
// and its own copy of the model. The kernel steers each datagram to thread (slot mod N) with a
// classic BPF program on the socket group, so a slot's registers are only ever touched by one
// thread and the threads share nothing on the data path. A datagram that reaches another thread
// all the same is processed in its owner's model under the owner's lock (counted
// `cross_thread`); the counters are the sums over the threads.
//
// --max-gbps G limits how fast contributions are processed: at most G Gbit/s of UDP payload (the
// netagg header and data), the aggregation capacity of a switch in a plan (docs/routing.md). They
// wait in a bounded queue (--rate-queue datagrams; beyond it they are dropped and counted
// `rate_limit_drops`); results from a parent and everything else pass at once. With --threads N
// each thread serves its datagrams at G / N.
//
// --dpdk serves on a DPDK port instead (sim/common's frame_io.hpp: frames built and parsed
// there, ARP answered, peers' MACs learned from their frames), e.g. on an XDP socket.
//
// stdout: "netagg-switchd: listening on IP:PORT" once ready (launchers wait for it), then the
// counters on SIGUSR1, every --stats-interval seconds and at exit. SIGHUP re-reads the job files
// and installs their jobs afresh (slots cleared), so a job can start again from packet 0 without
// a new daemon. Exit: 0 after SIGINT/SIGTERM, 2 on bad configuration, 1 if the socket fails while
// running.
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "daemon_main.hpp"
#include "datagram_server.hpp"
#include "netagg/error.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "switch_model.hpp"

namespace {

using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
namespace sim = netagg::sim;
namespace wire = netagg::wire;

using sim::kExitRuntime;

struct Options {
  std::string listen = fmt::format("127.0.0.1:{}", wire::kUdpPort);
  std::vector<std::string> job_files;
  std::size_t slots = 1024;
  std::size_t max_elements = sim::kMaxLanes;
  unsigned threads = 1;
  std::string as;  // this switch's name in the jobs' trees
  double stats_interval = 0;
  bool quiet = false;
  bool no_udp_offload = false;
  bool dpdk = false;
  std::uint64_t die_at_datagram = 0;  // fault injection: SIGKILL at this datagram; 0: never
  std::string counters_json;
  double max_gbps = 0;  // 0: contributions processed as they come
  std::size_t rate_queue = 2048;
};

using Clock = std::chrono::steady_clock;

// Contributions served at most at a rate of UDP payload bytes, first come first served, from a
// bounded queue. A contribution is served at max(its turn, now - kSlack) + its size * 8 / rate
// after the previous one: a wake-up up to kSlack late is made up, so the daemon's timer need not
// be exact for the rate to hold, and never more than kSlack's worth leaves at once.
class RateLimiter {
 public:
  static constexpr Clock::duration kSlack = std::chrono::microseconds(500);
  struct Queued {
    Endpoint source;
    std::uint8_t ecn;
    std::vector<std::byte> bytes;
  };

  RateLimiter(double gbps, std::size_t capacity) : ns_per_byte_(8.0 / gbps), capacity_(capacity) {
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0)
      throw Error(Errc::kConfig, fmt::format("timerfd_create: {}", std::strerror(errno)));
  }
  ~RateLimiter() { ::close(timer_fd_); }
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  int timer_fd() const { return timer_fd_; }
  std::uint64_t drops() const { return drops_.load(); }

  // A contribution joins the queue, or is dropped when the queue is full.
  void push(const sim::Datagram& d) {
    if (queue_.size() >= capacity_) {
      ++drops_;
      return;
    }
    queue_.push_back({d.source, d.ecn, {d.bytes.begin(), d.bytes.end()}});
  }

  // Serves every queued contribution whose turn has come, then arms the timer for the next.
  template <typename Process>
  void serve(Process&& process) {
    std::uint64_t expirations = 0;
    (void)!::read(timer_fd_, &expirations, sizeof(expirations));  // empty or not, re-armed below
    const Clock::time_point now = Clock::now();
    while (!queue_.empty() && now >= next_) {
      const Queued& q = queue_.front();
      next_ = std::max(next_, now - kSlack) +
              std::chrono::nanoseconds(std::llround(q.bytes.size() * ns_per_byte_));
      process(q);
      queue_.pop_front();
    }
    itimerspec at{};
    if (!queue_.empty()) {
      // Absolute CLOCK_MONOTONIC time, which steady_clock is on Linux.
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::max(next_, now + std::chrono::microseconds(1)).time_since_epoch())
                          .count();
      at.it_value.tv_sec = ns / 1'000'000'000;
      at.it_value.tv_nsec = ns % 1'000'000'000;
    }
    ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &at, nullptr);
  }

 private:
  double ns_per_byte_;
  std::size_t capacity_;
  int timer_fd_ = -1;
  std::deque<Queued> queue_;
  Clock::time_point next_{};
  std::atomic<std::uint64_t> drops_{0};  // read by the reporting thread
};

// The model answers through the server's send queue, which goes out when the batch is done.
class ServerSink : public sim::PacketSink {
 public:
  explicit ServerSink(sim::DatagramServer& server) : server_(server) {}
  void send(const Endpoint& destination, std::span<const std::byte> packet,
            std::uint8_t ecn) override {
    server_.send(destination, packet, 0, ecn);
  }

 private:
  sim::DatagramServer& server_;
};

// One thread's part: the slots s with s mod threads == index live in its model. `mutex` guards
// the model (its thread, a thread handed one of its datagrams, the reporter).
struct Shard {
  Shard(const Options& opt, unsigned index) : index(index), model(opt.slots, opt.max_elements) {}
  unsigned index;
  std::mutex mutex;
  sim::SwitchModel model;
  std::unique_ptr<sim::DatagramServer> server;
  std::uint64_t datagrams_in = 0;        // datagrams this thread's socket received (under mutex)
  std::uint64_t cross_thread = 0;        // of them, of another thread's slots (under mutex)
  std::unique_ptr<RateLimiter> limiter;  // with --max-gbps: this thread's share of the rate
};
using Shards = std::vector<std::unique_ptr<Shard>>;

// The thread whose model holds the datagram's slot; 0 for one too short to name one.
unsigned owner(std::span<const std::byte> packet, unsigned threads) {
  if (threads == 1 || packet.size() < wire::offset::kSlot + 2) return 0;
  const unsigned slot = (std::to_integer<unsigned>(packet[wire::offset::kSlot]) << 8) |
                        std::to_integer<unsigned>(packet[wire::offset::kSlot + 1]);
  return slot % threads;
}

// The counters summed over the threads, in the model's order, then the daemon's; with several
// threads also what each thread's socket received (datagrams_in_thread_I).
sim::CounterList all_counters(const Shards& shards) {
  sim::CounterList named;
  std::vector<std::uint64_t> per_thread;
  sim::ServerCounters server;
  std::uint64_t cross_thread = 0, rate_limit_drops = 0;
  bool limited = false;
  for (const auto& shard : shards) {
    if (shard->limiter) {
      limited = true;
      rate_limit_drops += shard->limiter->drops();
    }
    const std::lock_guard lock(shard->mutex);
    const auto mine = shard->model.counters().named();
    if (named.empty())
      for (const auto& [name, value] : mine) named.emplace_back(name, value);
    else
      for (std::size_t i = 0; i < named.size(); ++i) named[i].second += mine[i].second;
    if (shard->server) server += shard->server->counters();
    cross_thread += shard->cross_thread;
    per_thread.push_back(shard->datagrams_in);
  }
  named.emplace_back("datagrams_sent", server.datagrams_sent.load());
  named.emplace_back("cross_thread", cross_thread);
  if (shards.size() > 1)
    for (std::size_t i = 0; i < per_thread.size(); ++i)
      named.emplace_back(fmt::format("datagrams_in_thread_{}", i), per_thread[i]);
  named.emplace_back("send_errors", server.send_errors.load());
  if (limited) named.emplace_back("rate_limit_drops", rate_limit_drops);
  return named;
}

// The rounds still waiting for some of their workers, at most kListedOpenRounds of them by
// name: what a job that timed out was waiting for (netagg-local reports it). Nothing if none.
constexpr std::size_t kListedOpenRounds = 16;
void print_open_rounds(const Shards& shards) {
  std::vector<sim::OpenRound> open;
  for (const auto& shard : shards) {
    const std::lock_guard lock(shard->mutex);
    for (auto& r : shard->model.open_rounds()) open.push_back(std::move(r));
  }
  if (open.empty()) return;
  std::sort(open.begin(), open.end(), [](const sim::OpenRound& a, const sim::OpenRound& b) {
    return std::tie(a.job_id, a.slot, a.set) < std::tie(b.job_id, b.slot, b.set);
  });
  std::printf("netagg-switchd: open rounds at exit: %zu\n", open.size());
  for (std::size_t i = 0; i < open.size() && i < kListedOpenRounds; ++i) {
    const sim::OpenRound& r = open[i];
    if (r.waits_for_parent)
      std::printf("netagg-switchd: open round: job %u slot %u set %u seq %u waits for the parent\n",
                  r.job_id, r.slot, r.set, r.seq);
    else
      std::printf("netagg-switchd: open round: job %u slot %u set %u seq %u waits for ranks %s\n",
                  r.job_id, r.slot, r.set, r.seq,
                  fmt::format("{}", fmt::join(r.missing_ranks, " ")).c_str());
  }
  std::fflush(stdout);
}

std::string describe(const netagg::JobSpec& job) {
  std::string text = fmt::format("job {}: {} workers, slots [{}, {}), {} elements per packet",
                                 job.job_id, job.workers.size(), job.slot_base,
                                 job.slot_base + job.slot_count, job.elements_per_packet);
  if (job.covered() != job.workers.size())
    text += fmt::format(" (members covering {} workers)", job.covered());
  if (job.parent)
    text += fmt::format(", child of {} as rank {} (its slots from {})",
                        job.parent->address.to_string(), job.parent->rank, job.parent->slot_base);
  return text;
}

// The jobs of `file` as this switch holds them: a job with trees becomes this switch's part of
// each tree it is in (found by --as, else by the listen address).
std::vector<netagg::JobSpec> load_job_file(const std::string& file, const Options& opt) {
  return netagg::load_aggregator_jobs(file, opt.as, sim::parse_listen_address(opt.listen));
}

std::vector<netagg::JobSpec> load_job_files(const Options& opt) {
  std::vector<netagg::JobSpec> jobs;
  for (const auto& file : opt.job_files)
    for (auto& job : load_job_file(file, opt)) jobs.push_back(std::move(job));
  return jobs;
}

// SIGHUP: the job files as they are now become the job table, every job's slots cleared. All or
// nothing: if a file cannot be read or its jobs do not fit, the running jobs keep their state.
// The report goes to stdout (as the counters on SIGUSR1), one line per job, ending with a line
// "netagg-switchd: SIGHUP: done ..." or "netagg-switchd: SIGHUP: failed ...".
// Every thread's model gets the same table: the first checks it, the others cannot refuse it.
void reload_jobs(const Options& opt, const Shards& shards) {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& shard : shards) locks.emplace_back(shard->mutex);
  const sim::SwitchModel& first = shards.front()->model;
  std::map<std::uint16_t, netagg::JobSpec> before;
  for (const std::uint16_t id : first.job_ids()) before.emplace(id, *first.find_job(id));
  std::vector<netagg::JobSpec> jobs;
  try {
    jobs = load_job_files(opt);
    sim::check_job_aggregators(opt.job_files, sim::parse_listen_address(opt.listen),
                               shards.front()->server->address());
    for (const auto& shard : shards) shard->model.replace_jobs(jobs);
  } catch (const std::exception& e) {
    const std::string line =
        fmt::format("netagg-switchd: SIGHUP: failed, jobs unchanged: {}\n", e.what());
    std::fputs(line.c_str(), stderr);
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    return;
  }
  std::string text;
  for (const auto& job : jobs) {
    const auto old = before.find(job.job_id);
    const char* what = old == before.end()                                    ? "new"
                       : netagg::to_json(old->second) == netagg::to_json(job) ? "re-installed"
                                                                              : "changed";
    text += fmt::format("netagg-switchd: SIGHUP: {} ({}, slots cleared)\n", describe(job), what);
    if (old != before.end()) before.erase(old);
  }
  for (const auto& [id, job] : before)
    text += fmt::format("netagg-switchd: SIGHUP: job {}: removed, slots [{}, {}) cleared\n", id,
                        job.slot_base, job.slot_base + job.slot_count);
  text += fmt::format("netagg-switchd: SIGHUP: done, {} jobs installed from {} files, {} removed\n",
                      jobs.size(), opt.job_files.size(), before.size());
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int run(const Options& opt) {
  // Configuration first: every error here exits 2 before the "listening" line.
  Shards shards;
  if (opt.max_gbps > 0 && opt.rate_queue == 0)
    throw Error(Errc::kConfig, "--rate-queue: must be at least 1");
  if (opt.dpdk && opt.threads > 1)
    throw Error(Errc::kConfig, "--dpdk: one thread serves the port; leave --threads out");
  for (unsigned i = 0; i < opt.threads; ++i) {
    shards.push_back(std::make_unique<Shard>(opt, i));
    if (opt.max_gbps > 0)
      shards.back()->limiter =
          std::make_unique<RateLimiter>(opt.max_gbps / opt.threads, opt.rate_queue);
  }
  for (const auto& file : opt.job_files)
    for (const auto& job : load_job_file(file, opt)) {
      for (const auto& shard : shards) {
        try {
          shard->model.add_job(job);
        } catch (const Error& e) {
          throw Error(Errc::kConfig, fmt::format("{}: {}", file, e.what()));
        }
      }
      if (!opt.quiet) std::fprintf(stderr, "netagg-switchd: %s\n", describe(job).c_str());
    }
  const sim::CounterReport report("netagg-switchd", opt.counters_json,
                                  [&shards] { return all_counters(shards); });
  report.report("start", /*print=*/false);

  // The threads' sockets join the address in thread order (the steering program's order); the
  // first one's address (its port, if the kernel chose it) is the others'.
  Endpoint listen = sim::parse_listen_address(opt.listen);
  for (const auto& shard : shards) {
    sim::ServerOptions options;
    options.offload = !opt.no_udp_offload;
    if (opt.dpdk) options.dpdk = netagg::dpdk_config_from_env();
    options.reuse_port = opt.threads > 1;
    options.signals = shard->index == 0;
    options.die_at_datagram = opt.die_at_datagram;
    shard->server = std::make_unique<sim::DatagramServer>(listen, options);
    listen = shard->server->address();
  }
  sim::check_job_aggregators(opt.job_files, sim::parse_listen_address(opt.listen), listen);
  if (opt.threads > 1) shards.front()->server->steer_by_slot(opt.threads);
  shards.front()->server->announce("netagg-switchd");

  const auto hooks_of = [&](Shard& shard, ServerSink& sink) {
    // Called with shard.mutex held (`mine`).
    const auto process = [&shard, &shards, &sink, threads = opt.threads](
                             std::unique_lock<std::mutex>& mine, const Endpoint& source,
                             std::span<const std::byte> bytes, std::uint8_t ecn) {
      const unsigned to = owner(bytes, threads);
      if (to == shard.index) {
        shard.model.process(source, bytes, sink, ecn);
        return;
      }
      ++shard.cross_thread;
      mine.unlock();  // one lock at a time: no order between threads to get wrong
      {
        const std::lock_guard theirs(shards[to]->mutex);
        shards[to]->model.process(source, bytes, sink, ecn);
      }
      mine.lock();
    };
    const auto serve_queue = [&shard, process](std::unique_lock<std::mutex>& mine) {
      shard.limiter->serve(
          [&](const RateLimiter::Queued& q) { process(mine, q.source, q.bytes, q.ecn); });
    };
    sim::DatagramServer::Hooks hooks;
    hooks.on_batch = [&shard, process, serve_queue](std::span<const sim::Datagram> batch) {
      std::unique_lock mine(shard.mutex);
      shard.datagrams_in += batch.size();
      for (const sim::Datagram& d : batch) {
        const bool contribution =
            d.bytes.size() > wire::offset::kType &&
            d.bytes[wire::offset::kType] == std::byte(wire::MsgType::kContribution);
        if (shard.limiter && contribution)
          shard.limiter->push(d);
        else
          process(mine, d.source, d.bytes, d.ecn);
      }
      if (shard.limiter) serve_queue(mine);
    };
    if (shard.limiter)
      hooks.watches.push_back({shard.limiter->timer_fd(), [&shard, serve_queue] {
                                 {
                                   std::unique_lock mine(shard.mutex);
                                   serve_queue(mine);
                                 }
                                 shard.server->flush();
                               }});
    return hooks;
  };

  // Threads 1..N-1 serve until thread 0 (the signals' thread) stops them.
  std::vector<std::unique_ptr<ServerSink>> sinks;
  for (const auto& shard : shards) sinks.push_back(std::make_unique<ServerSink>(*shard->server));
  std::mutex failure_mutex;
  std::string failure;
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < opt.threads; ++i)
    threads.emplace_back([&, i] {
      try {
        shards[i]->server->serve(hooks_of(*shards[i], *sinks[i]));
      } catch (const std::exception& e) {
        {
          const std::lock_guard lock(failure_mutex);
          if (failure.empty()) failure = e.what();
        }
        shards.front()->server->request_stop();
      }
    });

  sim::DatagramServer::Hooks hooks = hooks_of(*shards.front(), *sinks.front());
  report.add_hooks(hooks, opt.stats_interval, [&] { reload_jobs(opt, shards); });

  int exit_code = 0;
  try {
    shards.front()->server->serve(hooks);
  } catch (const Error& e) {
    const std::lock_guard lock(failure_mutex);
    if (failure.empty()) failure = e.what();
  }
  for (unsigned i = 1; i < opt.threads; ++i) shards[i]->server->request_stop();
  for (auto& t : threads) t.join();
  if (!failure.empty()) {
    std::fprintf(stderr, "netagg-switchd: %s\n", failure.c_str());
    exit_code = kExitRuntime;
  }

  if (report.report_at_exit(/*print=*/!opt.quiet) != 0) exit_code = kExitRuntime;
  print_open_rounds(shards);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"netagg-switchd: the SwitchML switch model served on UDP"};
  app.add_option("--listen", opt.listen, "UDP address to serve, IP:PORT (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--job", opt.job_files, "job description file (docs/job-format.md); repeatable")
      ->required();
  app.add_option("--slots", opt.slots, "slots in the switch's pool (each with two sets)")
      ->capture_default_str();
  app.add_option("--max-elements", opt.max_elements,
                 "value lanes per slot: the largest elements_per_packet a job may use")
      ->capture_default_str();
  app.add_option("--as", opt.as,
                 "this switch's aggregator name in the jobs' trees (default: the one whose "
                 "address is --listen)");
  app.add_option("--threads", opt.threads,
                 "serve from N threads, slots split between them (slot mod N; SO_REUSEPORT)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--max-gbps", opt.max_gbps,
                 "process contributions at most at G Gbit/s of UDP payload (netagg header and "
                 "data), queued beyond it; results and other datagrams pass at once; 0: no limit. "
                 "With --threads N each thread has G / N")
      ->check(CLI::Range(0.0, 1e4));
  app.add_option("--rate-queue", opt.rate_queue,
                 "contributions --max-gbps may hold waiting (per thread); more are dropped and "
                 "counted rate_limit_drops")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--stats-interval", opt.stats_interval, "print the counters every S seconds")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--die-at-datagram", opt.die_at_datagram,
                 "fault injection for tests: kill this process with SIGKILL (as kill -9 would) "
                 "when its N-th datagram arrives, before serving it (counted per thread)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quiet", opt.quiet, "print neither the job summary nor the counters at exit");
  app.add_flag("--no-udp-offload", opt.no_udp_offload,
               "send and receive one datagram per system call's message (no UDP GSO/GRO)");
  app.add_flag("--dpdk", opt.dpdk,
               "serve on a DPDK port instead of a UDP socket: Ethernet frames to and from "
               "--listen's address (which must name the IP and port), ARP answered; the EAL and "
               "the port from the NETAGG_DPDK_* variables (docs/configuration.md), e.g. "
               "NETAGG_DPDK_VDEVS=net_af_xdp0,iface=eth0");
  app.add_option("--counters-json", opt.counters_json,
                 "write the counters as JSON to FILE at start, on SIGUSR1 and at exit");
  return sim::daemon_main("netagg-switchd", app, argc, argv, [&] { return run(opt); });
}

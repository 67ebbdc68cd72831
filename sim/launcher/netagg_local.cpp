// SPDX-License-Identifier: Apache-2.0
// netagg-local: an all-reduce on one machine. It writes a loopback job file, starts the daemon of
// the target (netagg-switchd for switch-sim, netagg-fpgad for fpga-sim; none for an IP:PORT),
// runs N netagg-allreduce workers with --json, stops the daemon and prints one summary of the
// workers' reports.
//
//   netagg-local --workers N [--target switch-sim|fpga-sim|IP:PORT] [options]
//
// The programs are looked for where the build puts them, relative to this one; --worker,
// --switchd and --fpgad name others. Exit status: 0 ok, 1 wrong result, 2 usage or configuration
// error, 3 an all-reduce failed (timeout, transport) or a worker died.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "allreduce_report.hpp"
#include "child_process.hpp"
#include "netagg/config.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
using netagg::report::median;
using netagg::sim::ChildProcess;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;
using netagg::report::kExitUsage;
constexpr int kExitFailed = 3;

// The worker bitmap of the wire header has 32 bits.
constexpr int kMaxWorkers = 32;

// The FPGA aggregator's defaults (formats/csr.json's parameters): a slot holds MAX_BEATS * 16
// lanes of 32-bit elements, the pool has SLOTS slots.
constexpr int kFpgaMaxElementsPerPacket = netagg::fpga::csr::kDefaultMaxBeats * 16;
constexpr int kFpgaSlots = netagg::fpga::csr::kDefaultSlots;
// The Verilated RTL simulates some 2.5 * 10^5 busy cycles a second: 16 slots per worker keep all
// ports busy. 32 and 64 were measured no faster for `make demo`'s tensor (docs/performance.md,
// "The simulator's speed").
constexpr int kFpgaSimWindow = 16;

struct Options : netagg::report::TensorOptions {
  int workers = 4;
  std::string target = "switch-sim";
  std::string transport;
  int elements_per_packet = 1024;  // loopback: no 1500-byte MTU to respect (fpga-sim: below)
  int window = 128;
  int port_base = 0;
  std::string worker;  // paths; empty: in the build tree
  std::string switchd;
  std::string fpgad;
  std::string fpga_model = "rtl";
  unsigned switchd_threads = 1;
  int leaves = 0;           // > 0: a two-level tree of daemons, this many leaves under a root
  int trees = 1;            // with leaves: the job's trees, each with a root of its own
  std::string root_target;  // with leaves: the roots' daemon (switch-sim, fpga-sim); "": target
  bool json = false;
  bool verbose = false;
  std::string fallback = "gloo";  // the workers' host fallback (docs/fallback.md)
  std::optional<double> fallback_after_ms;
  std::uint64_t kill_aggregator_at = 0;  // an aggregator dies at this datagram; 0: never
  std::string kill_aggregator;           // which (a tree's aggregator name); empty: the first
  bool restart_aggregator = false;       // and is started again on its port when it has died
  int kill_rank = -1;                    // hidden: this rank dies after kill_after_packets
  std::int64_t kill_after_packets = -1;
  int wrong_input_rank = -1;  // hidden: this rank's input is not what the others expect
};

[[noreturn]] void usage_error(const std::string& what) { throw Error(Errc::kConfig, what); }

bool is_address(const std::string& target) { return target.find(':') != std::string::npos; }

void check_options(const Options& o) {
  if (o.target != "switch-sim" && o.target != "fpga-sim" && !is_address(o.target))
    usage_error(fmt::format("--target: '{}' is not switch-sim, fpga-sim or IP:PORT", o.target));
  if (o.transport == "dpdk")
    usage_error(
        "--transport dpdk: the workers run over kernel UDP on loopback; DPDK workers "
        "need a port each: run them one by one (netagg-allreduce --rank, --job, "
        "--transport dpdk)");
  if (o.leaves < 0 || o.leaves > kMaxWorkers)
    usage_error(fmt::format("--leaves: {} leaves; 0..{} are supported", o.leaves, kMaxWorkers));
  if (o.trees < 1 || o.trees > 16) usage_error("--trees: must be in 1..16");
  if (o.trees > 1 && o.leaves == 0) usage_error("--trees: needs --leaves");
  if (o.leaves > 0 && static_cast<long>(o.trees) * o.window > 0xFFFF)
    usage_error("--trees: the trees' slots (trees x window) exceed a leaf's 16-bit slot space");
  if (o.leaves > 0 && o.target != "switch-sim" && o.target != "fpga-sim")
    usage_error("--leaves: trees of daemons are built for --target switch-sim or fpga-sim");
  if (!o.root_target.empty() && o.leaves == 0) usage_error("--root-target: needs --leaves");
  if (o.float_wire == "fp32-exact" && o.leaves > 0 &&
      o.elements_per_packet > kFpgaMaxElementsPerPacket / 2)
    usage_error(fmt::format(
        "--elements-per-packet: a tree's exact uploads hold 8 bytes an element, so at most {} "
        "elements a packet with --float-wire fp32-exact and --leaves",
        kFpgaMaxElementsPerPacket / 2));
  if (o.root_target == "switch-sim" && o.target == "fpga-sim" &&
      (o.float_wire == "fp32" || o.float_wire == "fp32-exact"))
    usage_error(
        "--root-target switch-sim: the switch adds int32 only; fp32 goes as int32-bfp through "
        "it (--float-wire int32-bfp)");
  const int max_workers = kMaxWorkers * std::max(1, o.leaves);
  if (o.workers < 1 || o.workers > max_workers)
    usage_error(fmt::format("--workers: {} workers; 1..{} are supported{}", o.workers, max_workers,
                            o.leaves > 0 ? " on that many leaves" : ""));
  if (o.leaves > o.workers)
    usage_error(fmt::format("--leaves: {} leaves for {} workers; each leaf needs a worker",
                            o.leaves, o.workers));
  if (o.kill_rank >= o.workers)
    usage_error(fmt::format("--kill-rank {} but only {} workers", o.kill_rank, o.workers));
  if (!o.kill_aggregator.empty() && o.leaves == 0)
    usage_error("--kill-aggregator names an aggregator of the trees: needs --leaves");
  if (o.window < 1 || o.window > 0xFFFF) usage_error("--window: must be in 1..65535");
  if (o.elements_per_packet < 1 || o.elements_per_packet > netagg::wire::kMaxCount)
    usage_error(fmt::format("--elements-per-packet: must be in 1..{}", netagg::wire::kMaxCount));
  if (o.target == "fpga-sim") {
    if (o.elements_per_packet > kFpgaMaxElementsPerPacket)
      usage_error(
          fmt::format("--elements-per-packet: the FPGA aggregator's slots hold at most {} "
                      "elements (MAX_BEATS * LANES)",
                      kFpgaMaxElementsPerPacket));
    if (o.window > kFpgaSlots)
      usage_error(fmt::format("--window: the FPGA aggregator has {} slots", kFpgaSlots));
    if (o.leaves > 0 && o.trees * o.window > kFpgaSlots)
      usage_error(
          fmt::format("--trees: {} trees of window {} need {} slots at a leaf; the FPGA "
                      "aggregator has {}",
                      o.trees, o.window, o.trees * o.window, kFpgaSlots));
  }
  if (o.port_base > 0 && o.port_base + o.workers + o.leaves + 1 > 0xFFFF)
    usage_error("--port-base: too high for that many workers");
}

// What the target takes when the command line does not say: for the FPGA aggregator fp32 summed
// exactly (the same bits whatever the order); packets and a window that fit its slots (a tree's
// exact uploads hold 8 bytes an element: half as many).
void apply_target_defaults(Options& o, bool elements_given, bool window_given) {
  if (o.target != "fpga-sim") return;
  // (an FPGA leaf under a switch root: block floating point, which both add as int32)
  if (o.float_wire.empty() && o.root_target != "switch-sim") o.float_wire = "fp32-exact";
  if (!elements_given)
    o.elements_per_packet = o.float_wire == "fp32-exact" && o.leaves > 0
                                ? kFpgaMaxElementsPerPacket / 2
                                : kFpgaMaxElementsPerPacket;
  if (!window_given) o.window = kFpgaSimWindow;
}

// ---- the programs -----------------------------------------------------------------------------

std::atomic<int> g_stop_signal{0};  // set by SIGINT/SIGTERM
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

struct Program {
  std::string name;  // netagg-switchd
  std::string flag;  // the option that overrides its path: switchd
  fs::path path;
};

// `given` if the command line named one, else where the build puts `name`: `relative` to this
// executable (sim/launcher/CMakeLists.txt passes those paths in), else beside it (installed: all
// in one bin/).
Program find_program(std::string name, std::string flag, const std::string& given,
                     const char* relative) {
  if (!given.empty()) return {std::move(name), std::move(flag), given};
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw Error(Errc::kConfig, fmt::format("cannot find my own executable: {}", ec.message()));
  const fs::path built = (self.parent_path() / relative).lexically_normal();
  const fs::path beside = self.parent_path() / fs::path(relative).filename();
  return {std::move(name), std::move(flag),
          !fs::exists(built) && fs::exists(beside) ? beside : built};
}

void check_exists(const Program& p) {
  if (!fs::exists(p.path))
    throw Error(Errc::kConfig, fmt::format("{} not found at {} (build it, or pass --{} PATH)",
                                           p.name, p.path.string(), p.flag));
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "netagg-local-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error(Errc::kConfig, fmt::format("mkdtemp: {}", std::strerror(errno)));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::string> worker_args(const Program& worker, const Options& o, int rank,
                                     const fs::path& job, const std::optional<Endpoint>& aggregator,
                                     std::uint32_t epoch) {
  std::vector<std::string> a{worker.path.string(), "--rank",  std::to_string(rank),  "--job",
                             job.string(),         "--epoch", std::to_string(epoch), "--json"};
  if (aggregator) a.insert(a.end(), {"--target", aggregator->to_string()});
  const auto tensor = netagg::report::tensor_args(o);
  a.insert(a.end(), tensor.begin(), tensor.end());
  if (rank == o.wrong_input_rank) a.push_back("--wrong-input");
  // The host fallback's rendezvous: a folder of the run's own (docs/fallback.md).
  a.insert(a.end(),
           {"--store", "file:" + (job.parent_path() / "store").string(), "--fallback", o.fallback});
  if (o.fallback_after_ms)
    a.insert(a.end(), {"--fallback-after-ms", fmt::format("{}", *o.fallback_after_ms)});
  if (rank == o.kill_rank && o.kill_after_packets >= 0)
    a.insert(a.end(), {"--die-after-packets", std::to_string(o.kill_after_packets)});
  return a;
}

// The daemon that serves `target`: netagg-switchd (switch-sim) or netagg-fpgad (fpga-sim), with
// the arguments after its path.
// `as`: the daemon's aggregator name in the job's tree ("" without one).
std::pair<Program, std::vector<std::string>> daemon_command(
    const Options& o, const std::string& target, const fs::path& job, const fs::path& counters,
    std::uint16_t port, const std::string& as = "") {
  std::vector<std::string> args{"--listen",        fmt::format("127.0.0.1:{}", port),
                                "--job",           job.string(),
                                "--counters-json", counters.string()};
  if (target == "fpga-sim") {
    args.insert(args.end(), {"--model", o.fpga_model});
    if (!as.empty()) args.insert(args.end(), {"--as", as});
    return {find_program("netagg-fpgad", "fpgad", o.fpgad, NETAGG_LOCAL_FPGAD), args};
  }
  args.insert(args.end(), {"--slots", std::to_string(o.window * o.trees), "--threads",
                           std::to_string(o.switchd_threads)});
  if (!as.empty()) args.insert(args.end(), {"--as", as});
  return {find_program("netagg-switchd", "switchd", o.switchd, NETAGG_LOCAL_SWITCHD), args};
}

// Starts the daemon, stdout and stderr on one pipe, and waits for its "listening on" line;
// returns the address it serves.
Endpoint start_daemon(std::optional<ChildProcess>& daemon, const Program& program,
                      const std::vector<std::string>& args) {
  check_exists(program);
  std::vector<std::string> argv{program.path.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  netagg::sim::ChildOptions options;
  options.stderr_to = netagg::sim::ChildStderr::kStdout;
  daemon.emplace(argv, options);
  const std::string ready = program.name + ": listening on ";
  // The RTL model builds its job table through simulated CSR accesses before it is ready.
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (const auto address = daemon->line_after(ready))
      return Endpoint::parse(*address, program.name + " address");
    if (daemon->poll_exit()) {
      // Exit 2 is a configuration the daemon refused: the launcher's usage error too.
      throw Error(daemon->exit_code() == kExitUsage ? Errc::kConfig : Errc::kTransport,
                  fmt::format("{} {} before it was ready:\n{}", program.name,
                              daemon->describe_exit(), daemon->output()));
    }
    if (Clock::now() > give_up) {
      daemon->signal(SIGKILL);
      daemon->wait_exit();
      throw Error(Errc::kTransport,
                  fmt::format("{} did not report \"listening\" within 30 s", program.name));
    }
    if (g_stop_signal) throw Error(Errc::kTransport, "interrupted");
    ChildProcess* const waiting[] = {&*daemon};
    netagg::sim::wait_for_output(waiting, std::chrono::milliseconds(100));
  }
}

// ---- the run: the workers, then their summary ------------------------------------------

// A daemon of the run: the single aggregator (name "") or an aggregator of the tree.
struct DaemonRun {
  std::string name;
  std::string program;  // netagg-switchd, netagg-fpgad
  std::optional<ChildProcess> process;
  fs::path counters_path;
  Program restart_program;  // how to start it again (--restart-aggregator)
  std::vector<std::string> restart_args;
  bool doomed = false;  // --kill-aggregator-at kills this one
  std::string killed;   // how it ended, once it has
};
std::optional<ChildProcess> g_no_daemon;  // the daemon of a run against --target IP:PORT

struct Worker {
  ChildProcess process;
  bool killed_by_launcher = false;

  std::string describe_exit() const {
    return process.describe_exit() + (killed_by_launcher && process.term_signal()
                                          ? " by the launcher after the grace period"
                                          : "");
  }
};

int run(const Options& o) {
  const int n = o.workers;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const Program worker_program =
      find_program("netagg-allreduce", "worker", o.worker, NETAGG_LOCAL_WORKER);
  check_exists(worker_program);
  const TempDir tmp;
  const fs::path job_path = tmp.path() / "job.json";
  const int daemons_wanted = is_address(o.target) ? 0 : o.leaves > 0 ? o.leaves + o.trees : 1;

  // Ports: consecutive from --port-base (the daemons first), or whatever the kernel says is
  // free (a single daemon picks its own; a tree's daemons need theirs in the job file first).
  std::vector<std::uint16_t> ports, daemon_ports(daemons_wanted, 0);
  if (o.port_base > 0) {
    for (int i = 0; i < daemons_wanted; ++i)
      daemon_ports[i] = static_cast<std::uint16_t>(o.port_base + i);
    for (int i = 0; i < n; ++i)
      ports.push_back(static_cast<std::uint16_t>(o.port_base + std::max(daemons_wanted, 1) + i));
  } else {
    ports = netagg::sim::free_loopback_ports(static_cast<std::size_t>(n) +
                                             (o.leaves > 0 ? daemons_wanted : 0));
    if (o.leaves > 0)
      for (int i = 0; i < daemons_wanted; ++i) {
        daemon_ports[i] = ports.back();
        ports.pop_back();
      }
  }
  netagg::JobSpec job;
  job.job_id = 1;
  job.slot_base = 0;
  job.slot_count = static_cast<std::uint16_t>(o.window);
  job.elements_per_packet = static_cast<std::uint16_t>(o.elements_per_packet);
  for (int r = 0; r < n; ++r)
    job.workers.push_back({static_cast<std::uint16_t>(r), Endpoint{0x7F000001, ports[r]},
                           std::nullopt, std::nullopt});
  // Two-level trees: "leaf0".. with the workers spread over them in rank order (leaf i takes
  // ranks i, i + L, ...), under "root" (one tree) or under "root0", "root1", ... (one tree each,
  // the leaves in every tree with its slots from k * window, PANAMA's several trees per job).
  // Daemons: the roots, then the leaves.
  std::vector<std::string> daemon_names(daemons_wanted);
  if (o.leaves > 0) {
    for (int k = 0; k < o.trees; ++k) {
      netagg::TreeSpec tree;
      tree.job_id = static_cast<std::uint16_t>(job.job_id + k);
      tree.window = job.slot_count;
      const std::string root = o.trees == 1 ? "root" : fmt::format("root{}", k);
      tree.aggregators.push_back(
          {root, Endpoint{0x7F000001, daemon_ports[k]}, 0, std::nullopt, {}});
      daemon_names[k] = root;
      for (int l = 0; l < o.leaves; ++l) {
        netagg::TreeNode leaf{fmt::format("leaf{}", l),
                              Endpoint{0x7F000001, daemon_ports[o.trees + l]},
                              static_cast<std::uint16_t>(k * o.window),
                              std::size_t{0},
                              {}};
        for (int r = l; r < n; r += o.leaves) leaf.workers.push_back(static_cast<std::uint16_t>(r));
        tree.aggregators.push_back(leaf);
        daemon_names[o.trees + l] = leaf.name;
      }
      job.trees.push_back(tree);
    }
  }

  std::vector<DaemonRun> daemons(daemons_wanted);
  std::string daemon_name;
  Endpoint aggregator;
  if (!is_address(o.target)) {
    std::ofstream(job_path) << netagg::to_json(job) << "\n";
    for (int i = 0; i < daemons_wanted; ++i) {
      daemons[i].name = daemon_names[i];
      daemons[i].counters_path =
          tmp.path() / fmt::format("aggregator-counters{}.json", daemon_names[i]);
      // The roots first: their daemon may be another (--root-target).
      const bool root = o.leaves > 0 && i < o.trees;
      const std::string& target = root && !o.root_target.empty() ? o.root_target : o.target;
      auto [program, args] = daemon_command(o, target, job_path, daemons[i].counters_path,
                                            daemon_ports[i], daemon_names[i]);
      daemons[i].restart_program = program;
      daemons[i].restart_args = args;
      const bool doomed = o.kill_aggregator.empty() ? i == 0 : daemon_names[i] == o.kill_aggregator;
      daemons[i].doomed = doomed;
      if (doomed && o.kill_aggregator_at > 0)
        args.insert(args.end(), {"--die-at-datagram", std::to_string(o.kill_aggregator_at)});
      daemon_name = program.name;
      daemons[i].program = program.name;
      const Endpoint at = start_daemon(daemons[i].process, program, args);
      // Started again (--restart-aggregator) on the port it got, which the workers send to.
      auto& again = daemons[i].restart_args;
      if (const auto listen = std::find(again.begin(), again.end(), "--listen");
          listen != again.end() && listen + 1 != again.end())
        *(listen + 1) = at.to_string();
      if (i == 0) aggregator = at;
    }
  } else {
    aggregator = Endpoint::parse(o.target, "--target");
  }
  if (o.leaves == 0) job.aggregator = aggregator;
  std::ofstream(job_path) << netagg::to_json(job) << "\n";

  // Every run draws its own epoch, so that it can never take an earlier run's sums from an
  // aggregator that still holds them.
  const std::uint32_t epoch = netagg::random_epoch();
  std::vector<Worker> workers;
  for (int r = 0; r < n; ++r) {
    // On trees a worker takes its aggregators from the job (one per tree).
    const std::optional<Endpoint> to =
        o.leaves > 0 ? std::nullopt : std::optional<Endpoint>(aggregator);
    workers.push_back({ChildProcess(worker_args(worker_program, o, r, job_path, to, epoch))});
  }

  // Wait for the workers. When one fails, the others should fail by their own --timeout; who is
  // still running after that and a grace period is killed, so nothing hangs the launcher.
  const auto grace =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s + 5.0));
  std::optional<Clock::time_point> first_failure;
  for (;;) {
    std::vector<ChildProcess*> live;
    for (auto& w : workers) {
      if (!w.process.exited() && w.process.poll_exit() && !w.process.succeeded() && !first_failure)
        first_failure = Clock::now();
      if (!w.process.exited()) live.push_back(&w.process);
    }
    if (live.empty()) break;
    if (g_stop_signal) {
      for (auto* w : live) w->signal(SIGKILL);
      for (auto* w : live) w->wait_exit();
      break;
    }
    if (first_failure && Clock::now() > *first_failure + grace) {
      for (auto& w : workers) {
        if (w.process.exited()) continue;
        w.killed_by_launcher = true;
        w.process.signal(SIGKILL);
        w.process.wait_exit();
      }
      break;
    }
    for (auto& d : daemons) {
      if (d.process->exited() || !d.process->poll_exit()) {
        live.push_back(&*d.process);
        continue;
      }
      // --kill-aggregator-at: the aggregator killed itself at its datagram, as planned.
      if (d.doomed && o.kill_aggregator_at > 0 && d.killed.empty()) {
        d.killed = d.process->describe_exit();
        std::fprintf(stderr, "netagg-local: %s %s at datagram %llu%s\n", d.program.c_str(),
                     d.killed.c_str(), static_cast<unsigned long long>(o.kill_aggregator_at),
                     o.restart_aggregator ? ": starting it again" : "");
        if (o.restart_aggregator) start_daemon(d.process, d.restart_program, d.restart_args);
      }
      live.push_back(&*d.process);
    }
    netagg::sim::wait_for_output(live, std::chrono::milliseconds(100));
  }

  json aggregator_counters, tree_counters = json::object();
  std::vector<std::string> daemon_statuses;
  for (auto& d : daemons) {
    ChildProcess& p = *d.process;
    const std::string who = d.name.empty() ? d.program : d.program + " " + d.name;
    if (!d.killed.empty() && p.exited()) {
      // Killed on purpose and not started again: no counters, and no problem.
    } else if (!p.exited()) {
      p.signal(SIGTERM);
      if (!p.wait_exit(Clock::now() + std::chrono::seconds(5))) {
        p.signal(SIGKILL);
        p.wait_exit();
      }
    } else {
      daemon_statuses.push_back(fmt::format("{} {} while the workers ran", who, p.describe_exit()));
    }
    if (o.verbose) std::fprintf(stderr, "%s", p.output().c_str());
    json counters;
    std::ifstream in(d.counters_path);
    if (in) counters = json::parse(in, nullptr, false);
    if (counters.is_discarded()) counters = nullptr;
    if (d.name.empty() || d.name == "root" || d.name == "root0") aggregator_counters = counters;
    if (!d.name.empty()) tree_counters[d.name] = counters;
  }
  std::optional<ChildProcess>& daemon = daemons.empty() ? g_no_daemon : daemons.front().process;

  // Results: each worker printed one JSON line (unless it died).
  std::vector<json> results(n);
  json ranks = json::array();
  bool all_ok = true, any_mismatch = false;
  std::optional<std::pair<int, json>> first_mismatch;
  std::vector<std::string> problems;
  for (int r = 0; r < n; ++r) {
    const Worker& w = workers[r];
    std::istringstream lines(w.process.output());
    for (std::string line; std::getline(lines, line);) {
      auto j = json::parse(line, nullptr, false);
      if (j.is_object()) results[r] = j;
    }
    json entry{{"rank", r}, {"status", w.describe_exit()}};
    if (results[r].is_object()) {
      entry["verification"] = results[r].value("verification", "");
      for (const char* key :
           {"fallback_chunks", "fallback_to_hosts", "fallback_to_network", "result_digest"})
        if (results[r].contains(key)) entry[key] = results[r][key];
      if (results[r].contains("error")) {
        entry["error"] = results[r]["error"];
        entry["error_kind"] = results[r]["error_kind"];
      }
      if (results[r].contains("mismatch")) {
        any_mismatch = true;
        if (!first_mismatch) first_mismatch = {r, results[r]["mismatch"]};
      }
    }
    if (!w.process.succeeded()) {
      all_ok = false;
      std::string why = fmt::format("rank {} {}", r, w.describe_exit());
      if (entry.contains("error"))
        why += fmt::format(": {} error: {}", entry["error_kind"].get<std::string>(),
                           entry["error"].get<std::string>());
      problems.push_back(why);
    }
    ranks.push_back(entry);
  }
  for (const auto& status : daemon_statuses) problems.push_back(status);
  // A worker that timed out names the slots it waited on, but only the aggregator knows whom the
  // rounds wait for: netagg-switchd lists its open rounds when it stops.
  json waiting_for = json::array();
  if (daemon && !all_ok && o.leaves == 0) {
    if (const auto line = daemon->line_after(daemon_name + ": open rounds at exit: ")) {
      std::set<unsigned> missing;
      std::istringstream out(daemon->output());
      const std::string marker = daemon_name + ": open round: ";
      std::string first;
      for (std::string l; std::getline(out, l);) {
        const auto at = l.find(marker);
        const auto ranks = l.find("waits for ranks ");
        if (at == std::string::npos || ranks == std::string::npos) continue;
        if (first.empty()) first = l.substr(at + marker.size(), ranks - at - marker.size() - 1);
        std::istringstream list(l.substr(ranks + 16));
        for (unsigned r; list >> r;) missing.insert(r);
      }
      for (unsigned r : missing) waiting_for.push_back(r);
      problems.push_back(fmt::format("{} still waited for rank{} {} in {} open round{} (first: {})",
                                     daemon_name, missing.size() == 1 ? "" : "s",
                                     fmt::join(missing, ", "), *line, *line == "1" ? "" : "s",
                                     first));
    }
  }
  if (g_stop_signal)
    problems.push_back(fmt::format("interrupted by signal {}", int(g_stop_signal)));

  // Per iteration the slowest worker's time is the all-reduce's time.
  std::vector<double> per_iteration;
  for (int it = 0; it < o.iterations; ++it) {
    double slowest = 0;
    bool complete = true;
    for (const auto& res : results) {
      if (!res.is_object() || !res.contains("seconds_all") ||
          res["seconds_all"].size() <= static_cast<std::size_t>(it)) {
        complete = false;
        break;
      }
      slowest = std::max(slowest, res["seconds_all"][it].get<double>());
    }
    if (complete) per_iteration.push_back(slowest);
  }
  const double best =
      per_iteration.empty() ? 0 : *std::min_element(per_iteration.begin(), per_iteration.end());
  std::uint64_t retransmissions = 0, spurious = 0, overtaken = 0, packets_sent = 0,
                injected_drops = 0;
  std::uint64_t fallback_chunks = 0, fallback_sessions = 0, fallback_copied = 0;
  double fallback_seconds = 0;
  for (const auto& res : results)
    if (res.is_object()) {
      retransmissions += res.value("retransmissions", 0ull);
      spurious += res.value("spurious_retransmissions", 0ull);
      overtaken += res.value("overtaken_retransmissions", 0ull);
      packets_sent += res.value("packets_sent", 0ull);
      injected_drops += res.value("injected_drops", 0ull);
      fallback_chunks =
          std::max<std::uint64_t>(fallback_chunks, res.value("fallback_chunks", 0ull));
      fallback_sessions =
          std::max<std::uint64_t>(fallback_sessions, res.value("fallback_sessions", 0ull));
      fallback_copied += res.value("fallback_copied_results", 0ull);
      fallback_seconds = std::max(fallback_seconds, res.value("fallback_seconds", 0.0));
    }
  std::string aggregator_killed;
  for (const auto& d : daemons)
    if (!d.killed.empty())
      aggregator_killed =
          fmt::format("{}{} at datagram {}{}", d.name.empty() ? "" : d.name + " ", d.killed,
                      o.kill_aggregator_at, o.restart_aggregator ? ", started again" : "");
  const std::string verification = all_ok ? "ok" : any_mismatch ? "mismatch" : "error";
  const std::uint64_t bytes = o.count * 4;

  if (o.json) {
    json summary{
        {"target", o.target},
        {"dtype", o.dtype},
        {"float_wire",
         o.dtype == "fp32" ? (o.float_wire.empty() ? "int32-bfp" : o.float_wire) : "int32"},
        {"workers", n},
        {"count", o.count},
        {"bytes", bytes},
        {"elements_per_packet", o.elements_per_packet},
        {"window", o.window},
        {"loss", o.loss},
        {"seed", o.seed},
        {"iterations", o.iterations},
        {"seconds", best},
        {"seconds_median", median(per_iteration)},
        {"seconds_all", per_iteration},
        {"goodput_gbps", best > 0 ? bytes * 8 / best / 1e9 : 0.0},
        {"ate_per_second", best > 0 ? o.count / best : 0.0},
        {"verification", verification},
        {"retransmissions", retransmissions},
        {"spurious_retransmissions", spurious},
        {"overtaken_retransmissions", overtaken},
        {"packets_sent", packets_sent},
        {"injected_drops", injected_drops},
        {"ranks", ranks},
        {"problems", problems},
        {"waiting_for_ranks", waiting_for},
        {"fallback", o.fallback},
        {"fallback_sessions", fallback_sessions},
        {"fallback_chunks", fallback_chunks},
        {"fallback_copied_results", fallback_copied},
        {"fallback_seconds", fallback_seconds},
        {"aggregator_killed", aggregator_killed},
        {(o.root_target.empty() ? o.target : o.root_target) == "fpga-sim" ? "fpga_counters"
                                                                          : "switch_counters",
         aggregator_counters}};
    if (o.leaves > 0) {
      summary["tree_counters"] = tree_counters;  // by aggregator name
      summary["root_target"] = o.root_target.empty() ? o.target : o.root_target;
    }
    if (first_mismatch) {
      summary["mismatch"] = first_mismatch->second;
      summary["mismatch"]["rank"] = first_mismatch->first;
    }
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    // Named after the workers: the all-reduce is theirs, this program only starts them.
    std::printf(
        "netagg-allreduce: %d workers through %s, %s, %llu elements (%.1f MiB), "
        "%d iteration%s%s\n",
        n, o.target.c_str(), o.dtype.c_str(), static_cast<unsigned long long>(o.count),
        bytes / 1048576.0, o.iterations, o.iterations == 1 ? "" : "s",
        o.loss > 0 ? fmt::format(", loss {}", o.loss).c_str() : "");
    for (const auto& p : problems) std::printf("%s\n", p.c_str());
    if (first_mismatch)
      std::printf(
          "rank %d: %s\n", first_mismatch->first,
          netagg::report::mismatch_text(netagg::report::mismatch_from_json(first_mismatch->second))
              .c_str());
    // A worker that failed (timeout, transport) verified nothing: that is not a wrong sum.
    std::printf("verification: %s\n", verification == "ok"         ? "ok"
                                      : verification == "mismatch" ? "FAILED"
                                                                   : "not done (a worker failed)");
    if (best > 0) {
      std::printf("time: %.6f s (best of %zu, median %.6f s; slowest worker)\n%s\n", best,
                  per_iteration.size(), median(per_iteration),
                  netagg::report::rate_text(best, bytes, o.count).c_str());
      std::printf("retransmissions: %llu (%llu shown spurious)\n",
                  static_cast<unsigned long long>(retransmissions),
                  static_cast<unsigned long long>(spurious));
    }
  }
  std::fflush(stdout);
  if (all_ok && problems.empty()) return kExitOk;
  return any_mismatch ? kExitMismatch : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "netagg-local: N netagg-allreduce workers and the aggregator's daemon on loopback; the "
      "workers all-reduce a test tensor and verify the result, this program sums up."};
  app.add_option("-n,--workers", o.workers, "worker processes, 1..32")->capture_default_str();
  app.add_option("--target", o.target,
                 "switch-sim (netagg-switchd, the switch model), fpga-sim (netagg-fpgad, the "
                 "FPGA aggregator's RTL in Verilator), or the IP:PORT of a running aggregator "
                 "(no daemon is started)")
      ->capture_default_str();
  app.add_option("--transport", o.transport, "the workers' transport: udp (the only one here)")
      ->check(CLI::IsMember({"udp", "dpdk"}));
  netagg::report::add_tensor_options(app, o);
  auto* elements_option =
      app.add_option("--elements-per-packet", o.elements_per_packet,
                     "elements per packet in the job; fpga-sim: 256 and at most that")
          ->capture_default_str();
  auto* window_option =
      app.add_option("--window", o.window, "slots per worker in the job; fpga-sim: 16, at most 64")
          ->capture_default_str();
  app.add_option("--port-base", o.port_base,
                 "the daemon at this UDP port, the workers above it (default: free ports)");
  app.add_option("--worker", o.worker,
                 "path of netagg-allreduce (default: in the build tree this program is in)");
  app.add_option("--switchd", o.switchd, "path of netagg-switchd (default: likewise)");
  app.add_option("--fpgad", o.fpgad, "path of netagg-fpgad (default: likewise)");
  app.add_option("--fpga-model", o.fpga_model,
                 "fpga-sim: the Verilated RTL (rtl), the HLS C model (hls) or the RTL on the "
                 "card's SystemC virtual platform (vp; netagg-fpgad --model vp)")
      ->check(CLI::IsMember({"rtl", "hls", "vp"}))
      ->capture_default_str();
  app.add_option("--leaves", o.leaves,
                 "a two-level tree of daemons (netagg-switchd for switch-sim, netagg-fpgad for "
                 "fpga-sim), L leaves under a root; worker r sends to leaf r mod L")
      ->capture_default_str();
  app.add_option("--root-target", o.root_target,
                 "with --leaves: the roots' daemon, switch-sim or fpga-sim (default: --target's), "
                 "e.g. FPGA leaves under a switch root")
      ->check(CLI::IsMember({"switch-sim", "fpga-sim"}));
  app.add_option("--trees", o.trees,
                 "with --leaves: the job's trees, each with a root of its own and the leaves in "
                 "every tree; the chunks go to the trees in turn")
      ->capture_default_str();
  app.add_option("--switchd-threads", o.switchd_threads,
                 "switch-sim: netagg-switchd serves from N threads (its --threads)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_flag("--json", o.json, "machine-readable summary on stdout");
  app.add_flag("--verbose", o.verbose, "show the daemon's output (job summary, counters)");
  // Test hooks, hidden from --help.
  app.add_option("--fallback", o.fallback,
                 "the workers' host fallback when the aggregator stops answering: gloo or off "
                 "(docs/fallback.md)")
      ->check(CLI::IsMember({"gloo", "off"}));
  app.add_option("--fallback-after-ms", o.fallback_after_ms,
                 "the fallback starts after this long without a result (the workers' default: "
                 "1000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--kill-aggregator-at", o.kill_aggregator_at,
                 "fault injection: the aggregator (the root of trees) kills itself with SIGKILL "
                 "when its N-th datagram arrives")
      ->check(CLI::PositiveNumber);
  app.add_option("--kill-aggregator", o.kill_aggregator,
                 "with --kill-aggregator-at: the aggregator of the trees to kill by name (root, "
                 "root0, root1, leaf0, ...); default: the first (the root, or tree 0's)");
  app.add_flag("--restart-aggregator", o.restart_aggregator,
               "with --kill-aggregator-at: start it again on its port once it has died");
  app.add_option("--kill-rank", o.kill_rank)->group("");
  app.add_option("--kill-after-packets", o.kill_after_packets)->group("");
  app.add_option("--wrong-input-rank", o.wrong_input_rank)->group("");
  if (const auto exit_code = netagg::report::parse_command_line(app, argc, argv)) return *exit_code;

  try {
    apply_target_defaults(o, elements_option->count() > 0, window_option->count() > 0);
    check_options(o);
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-local: %s\n", e.what());
    return e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitUsage : kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-local: %s\n", e.what());
    return kExitFailed;
  }
}

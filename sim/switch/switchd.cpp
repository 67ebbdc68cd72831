// SPDX-License-Identifier: Apache-2.0
// netagg-switchd: serves the SwitchML switch model on UDP, so workers (netagg-allreduce, the
// end-to-end tests) can all-reduce through it on one machine. The UDP side (one socket, batched
// with recvmmsg/sendmmsg, one thread, signals through a signalfd) is sim/common's DatagramServer.
//
// stdout: "netagg-switchd: listening on IP:PORT" once ready (launchers wait for it), then the
// counters on SIGUSR1, every --stats-interval seconds and at exit. SIGHUP re-reads the job files
// and installs their jobs afresh (slots cleared), so a job can start again from packet 0 without
// a new daemon. Exit: 0 after SIGINT/SIGTERM, 2 on bad configuration, 1 if the socket fails while
// running.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

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

constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 1;

struct Options {
  std::string listen = fmt::format("127.0.0.1:{}", wire::kUdpPort);
  std::vector<std::string> job_files;
  std::size_t slots = 1024;
  std::size_t max_elements = sim::kMaxLanes;
  double stats_interval = 0;
  bool quiet = false;
  bool no_udp_offload = false;
  std::string counters_json;
};

using DaemonCounters = sim::ServerCounters;

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

std::vector<std::pair<std::string_view, std::uint64_t>> all_counters(const sim::SwitchModel& model,
                                                                     const DaemonCounters& daemon) {
  auto named = model.counters().named();
  named.emplace_back("datagrams_sent", daemon.datagrams_sent);
  named.emplace_back("send_errors", daemon.send_errors);
  return named;
}

void print_counters(const sim::SwitchModel& model, const DaemonCounters& daemon,
                    std::string_view when) {
  std::string text = fmt::format("netagg-switchd: counters ({}):\n", when);
  for (const auto& [name, value] : all_counters(model, daemon))
    text += fmt::format("  {:<34} {}\n", name, value);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

// The rounds still waiting for some of their workers, at most kListedOpenRounds of them by
// name: what a job that timed out was waiting for (netagg-local reports it). Nothing if none.
constexpr std::size_t kListedOpenRounds = 16;
void print_open_rounds(const sim::SwitchModel& model) {
  const std::vector<sim::OpenRound> open = model.open_rounds();
  if (open.empty()) return;
  std::printf("netagg-switchd: open rounds at exit: %zu\n", open.size());
  for (std::size_t i = 0; i < open.size() && i < kListedOpenRounds; ++i) {
    const sim::OpenRound& r = open[i];
    std::printf("netagg-switchd: open round: job %u slot %u set %u seq %u waits for ranks %s\n",
                r.job_id, r.slot, r.set, r.seq,
                fmt::format("{}", fmt::join(r.missing_ranks, " ")).c_str());
  }
  std::fflush(stdout);
}

// Written to a temporary name and renamed, so a reader never sees half a file.
void write_counters_json(const std::string& file, const sim::SwitchModel& model,
                         const DaemonCounters& daemon) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : all_counters(model, daemon)) j[std::string(name)] = value;
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out) throw Error(Errc::kConfig, fmt::format("--counters-json: cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec)
    throw Error(Errc::kConfig,
                fmt::format("--counters-json: cannot write {}: {}", file, ec.message()));
}

std::string describe(const netagg::JobSpec& job) {
  return fmt::format("job {}: {} workers, slots [{}, {}), {} elements per packet", job.job_id,
                     job.workers.size(), job.slot_base, job.slot_base + job.slot_count,
                     job.elements_per_packet);
}

std::vector<netagg::JobSpec> load_job_files(const std::vector<std::string>& files) {
  std::vector<netagg::JobSpec> jobs;
  for (const auto& file : files)
    for (auto& job : netagg::load_jobs(file)) jobs.push_back(std::move(job));
  return jobs;
}

// SIGHUP: the job files as they are now become the job table, every job's slots cleared. All or
// nothing: if a file cannot be read or its jobs do not fit, the running jobs keep their state.
// The report goes to stdout (as the counters on SIGUSR1), one line per job, ending with a line
// "netagg-switchd: SIGHUP: done ..." or "netagg-switchd: SIGHUP: failed ...".
void reload_jobs(const Options& opt, sim::SwitchModel& model) {
  std::map<std::uint16_t, netagg::JobSpec> before;
  for (const std::uint16_t id : model.job_ids()) before.emplace(id, *model.find_job(id));
  std::vector<netagg::JobSpec> jobs;
  try {
    jobs = load_job_files(opt.job_files);
    model.replace_jobs(jobs);
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
  sim::SwitchModel model(opt.slots, opt.max_elements);
  for (const auto& file : opt.job_files)
    for (const auto& job : netagg::load_jobs(file)) {
      try {
        model.add_job(job);
      } catch (const Error& e) {
        throw Error(Errc::kConfig, fmt::format("{}: {}", file, e.what()));
      }
      if (!opt.quiet) std::fprintf(stderr, "netagg-switchd: %s\n", describe(job).c_str());
    }
  if (!opt.counters_json.empty()) write_counters_json(opt.counters_json, model, DaemonCounters{});

  sim::DatagramServer server(sim::parse_listen_address(opt.listen), !opt.no_udp_offload);
  ServerSink sink(server);
  server.announce("netagg-switchd");

  sim::DatagramServer::Hooks hooks;
  hooks.on_batch = [&](std::span<const sim::Datagram> batch) {
    for (const sim::Datagram& d : batch) model.process(d.source, d.bytes, sink, d.ecn);
  };
  hooks.on_signal = [&](int signo) {
    if (signo == SIGUSR1) {
      print_counters(model, server.counters(), "SIGUSR1");
      if (!opt.counters_json.empty())
        write_counters_json(opt.counters_json, model, server.counters());
    } else if (signo == SIGHUP) {
      reload_jobs(opt, model);
    }
  };
  hooks.tick_seconds = opt.stats_interval;
  hooks.on_tick = [&] { print_counters(model, server.counters(), "periodic"); };

  int exit_code = 0;
  try {
    server.serve(hooks);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
    exit_code = kExitRuntime;
  }
  const DaemonCounters& daemon = server.counters();

  if (!opt.quiet) print_counters(model, daemon, "exit");
  print_open_rounds(model);
  if (!opt.counters_json.empty()) {
    try {
      write_counters_json(opt.counters_json, model, daemon);
    } catch (const Error& e) {
      std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
      exit_code = kExitRuntime;
    }
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // a launcher that closed our stdout must not kill us
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
  app.add_option("--stats-interval", opt.stats_interval, "print the counters every S seconds")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--quiet", opt.quiet, "print neither the job summary nor the counters at exit");
  app.add_flag("--no-udp-offload", opt.no_udp_offload,
               "send and receive one datagram per system call's message (no UDP GSO/GRO)");
  app.add_option("--counters-json", opt.counters_json,
                 "write the counters as JSON to FILE at start, on SIGUSR1 and at exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitConfig;
  }
  try {
    return run(opt);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
    return kExitConfig;
  }
}

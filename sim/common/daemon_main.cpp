// SPDX-License-Identifier: Apache-2.0
#include "daemon_main.hpp"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace netagg::sim {

namespace {

// Written to a temporary name and renamed, so a reader never sees half a file.
void write_counters_json(const std::string& file, const CounterList& counters) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : counters) j[name] = value;
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

}  // namespace

void check_job_aggregators(const std::vector<std::string>& files, const Endpoint& requested,
                           const Endpoint& bound) {
  for (const auto& file : files)
    for (const JobSpec& job : load_jobs(file)) {
      if (!job.trees.empty() || !job.aggregator) continue;
      const Endpoint& to = *job.aggregator;
      if (to.port == bound.port && (bound.ip == 0 || to.ip == bound.ip)) continue;
      // A port the kernel chose is no address to write into a job.
      const std::string listening =
          requested.port == 0 ? fmt::format("{} (a port the kernel chose for --listen {})",
                                            bound.to_string(), requested.to_string())
                              : bound.to_string();
      const std::string or_set =
          requested.port == 0
              ? ""
              : fmt::format(", or set the job's \"aggregator\" to {}", bound.to_string());
      throw Error(Errc::kConfig,
                  fmt::format("{}: job {}: its workers send to {} (the job's \"aggregator\"), but "
                              "this daemon listens on {}: they would get no answer. Start it with "
                              "--listen {}{}, or leave the job's \"aggregator\" out and give the "
                              "workers the address (NETAGG_AGGREGATOR, netagg-allreduce --target)",
                              file, job.job_id, to.to_string(), listening, to.to_string(), or_set));
    }
}

CounterReport::CounterReport(std::string daemon, std::string json_file,
                             std::function<CounterList()> read)
    : daemon_(std::move(daemon)), json_file_(std::move(json_file)), read_(std::move(read)) {}

void CounterReport::report(std::string_view when, bool print, bool json) const {
  const CounterList all = read_();
  if (print) {
    std::string text = fmt::format("{}: counters ({}):\n", daemon_, when);
    for (const auto& [name, value] : all) text += fmt::format("  {:<34} {}\n", name, value);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
  if (json && !json_file_.empty()) write_counters_json(json_file_, all);
}

int CounterReport::report_at_exit(bool print) const {
  try {
    report("exit", print);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", daemon_.c_str(), e.what());
    return kExitRuntime;
  }
  return 0;
}

void CounterReport::add_hooks(DatagramServer::Hooks& hooks, double stats_interval,
                              std::function<void()> on_sighup) const {
  hooks.on_signal = [this, on_sighup = std::move(on_sighup)](int signo) {
    if (signo == SIGUSR1)
      report("SIGUSR1", /*print=*/true);
    else if (signo == SIGHUP && on_sighup)
      on_sighup();
  };
  hooks.tick_seconds = stats_interval;
  hooks.on_tick = [this] { report("periodic", /*print=*/true, /*json=*/false); };
}

int daemon_main(std::string_view daemon, CLI::App& app, int argc, char** argv,
                const std::function<int()>& run,
                const std::function<int(const Error&)>& exit_code_of) {
  ::signal(SIGPIPE, SIG_IGN);  // a launcher that closed our stdout must not kill us
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitConfig;
  }
  try {
    return run();
  } catch (const Error& e) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(daemon.size()), daemon.data(), e.what());
    return exit_code_of ? exit_code_of(e) : kExitConfig;
  }
}

}  // namespace netagg::sim

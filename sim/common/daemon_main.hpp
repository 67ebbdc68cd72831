// SPDX-License-Identifier: Apache-2.0
// What the aggregator daemons (netagg-switchd, netagg-fpgad) share around their serving loop:
// the frame of main() (the command line, the exit codes) and the reports of their counters, on
// stdout at SIGUSR1, every --stats-interval seconds and at exit, and as JSON in --counters-json
// at start, on SIGUSR1 and at exit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "datagram_server.hpp"
#include "netagg/error.hpp"
#include "netagg/job.hpp"

namespace netagg::sim {

inline constexpr int kExitRuntime = 1;  // the socket or the model failed while serving
inline constexpr int kExitConfig = 2;   // bad configuration: before the "listening" line

using CounterList = std::vector<std::pair<std::string, std::uint64_t>>;

class CounterReport {
 public:
  // `read` takes one snapshot of the daemon's counters; `json_file` empty: no JSON.
  CounterReport(std::string daemon, std::string json_file, std::function<CounterList()> read);

  // One snapshot: "<daemon>: counters (<when>):" and a line per counter on stdout (if `print`),
  // and the JSON file (if `json` and there is one).
  void report(std::string_view when, bool print, bool json = true) const;

  // The report at exit. Returns kExitRuntime if the counters could not be read or written (said
  // on stderr as "<daemon>: <problem>"), else 0.
  int report_at_exit(bool print) const;

  // SIGUSR1: a report on stdout and in the JSON file; SIGHUP: on_sighup; every `stats_interval`
  // seconds (if > 0): a report on stdout.
  void add_hooks(DatagramServer::Hooks& hooks, double stats_interval,
                 std::function<void()> on_sighup) const;

 private:
  std::string daemon_;
  std::string json_file_;
  std::function<CounterList()> read_;
};

// Error(kConfig) when a job of the job files `files` names an `aggregator` whose datagrams do not
// reach the daemon's socket, `bound` at the address --listen `requested` (with port 0: a port the
// kernel chose): another port, or another IP while the socket is not bound to the wildcard
// 0.0.0.0. The job's workers send there and would wait for answers that never come; the message
// names both addresses and the fixes. A job with trees is left out: its parts' addresses are the
// trees' (each part found by --as or by this address).
void check_job_aggregators(const std::vector<std::string>& files, const Endpoint& requested,
                           const Endpoint& bound);

// A daemon's main: SIGPIPE ignored (a launcher that closed our stdout must not kill us), the
// command line parsed by `app` (--help exits 0, a bad command line kExitConfig), then `run`. An
// Error out of `run` is printed as "<daemon>: <what>" on stderr and exits with
// exit_code_of(error), by default kExitConfig.
int daemon_main(std::string_view daemon, CLI::App& app, int argc, char** argv,
                const std::function<int()>& run,
                const std::function<int(const Error&)>& exit_code_of = {});

}  // namespace netagg::sim

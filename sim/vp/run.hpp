// SPDX-License-Identifier: Apache-2.0
// One run of the virtual platform: a Platform, the jobs programmed through driver/fpga over TLM,
// the traffic until every result came back (or max_cycles), and the JSON of what it counted,
// measured and checked. SystemC elaborates one design per process, so run_in_child runs it in a
// forked process and brings the JSON back through a pipe; a program (netagg-vp, the tests) can
// then run as many as it likes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform.hpp"
#include "traffic.hpp"

namespace netagg::vp {

struct RunOptions {
  PlatformConfig platform;
  std::vector<JobPattern> jobs;
  std::uint64_t max_cycles = 5'000'000;  // kernel cycles the traffic may take
  // Runs in the host thread after the traffic, with the platform and out["host_check"] to fill
  // (e.g. CSR accesses of a test). What it throws ends the run with "ok": false.
  std::function<void(Platform&, nlohmann::json&)> host_check{};
};

// In this process: may be called once per process (SystemC).
nlohmann::json run_once(const RunOptions& options);
// In a child process. The JSON has "ok" (every result right, everything arrived), "errors",
// counts of results, "device_counters", "ports" (per-port statistics and rates: "wire_gbps",
// "line_rate_fraction", "elements_per_s", ...). A failure of the child (an exception) comes back
// as "ok": false with its message in "errors".
nlohmann::json run_in_child(const RunOptions& options);

}  // namespace netagg::vp

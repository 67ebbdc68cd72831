// SPDX-License-Identifier: Apache-2.0
// netagg's ns-3 fabric: runs a scenario (docs/fabric.md) and returns its result. Plain types only,
// so that C++20 code (the executable's CLI, the tests) can call the C++17 ns-3 side.
#pragma once

#include <string>

namespace netagg::fabric {

struct RunOutput {
  std::string result_json;  // the result document (docs/fabric.md, "Result")
  // Every mode completed and every worker's result matched the expected sums.
  bool ok = false;
  std::string summary;  // one line per mode, for people
};

// Runs every mode of the scenario (a JSON document), one ns-3 simulation each, in this process.
// Throws std::runtime_error on a bad scenario. Progress goes to stderr unless `quiet`. Files the
// scenario names (a graph, a plan) are read relative to `base_dir` ("": the current folder).
RunOutput run_scenario(const std::string& scenario_json, bool quiet,
                       const std::string& base_dir = "");

}  // namespace netagg::fabric

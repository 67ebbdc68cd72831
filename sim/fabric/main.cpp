// SPDX-License-Identifier: Apache-2.0
// netagg-fabric SCENARIO.json [--out RESULT.json] [--quiet]: runs a scenario in the ns-3 fabric
// (docs/fabric.md) and writes its result. Exit: 0 when every mode completed and every worker's
// result was right, 1 when a mode did not complete or a result was wrong, 2 on a bad scenario.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "fabric.hpp"

int main(int argc, char** argv) {
  CLI::App app{"netagg-fabric: in-network all-reduce and ring all-reduce in an ns-3 fabric"};
  std::string scenario_path, out_path;
  bool quiet = false;
  app.add_option("scenario", scenario_path, "scenario JSON (docs/fabric.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "write the result JSON here (default: stdout)");
  app.add_flag("--quiet", quiet, "no progress on stderr");
  CLI11_PARSE(app, argc, argv);

  // A simulation allocates and frees a packet's buffers at every hop. glibc's default returns
  // the heap's top to the kernel and takes it back again and again (each time as pages the
  // kernel zeroes): a quarter of the run time with a thousand hosts. Keep what was once used.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);

  std::ifstream in(scenario_path);
  std::stringstream text;
  text << in.rdbuf();
  netagg::fabric::RunOutput out;
  try {
    out = netagg::fabric::run_scenario(text.str(), quiet,
                                       std::filesystem::path(scenario_path).parent_path().string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-fabric: %s\n", e.what());
    return 2;
  }
  if (out_path.empty()) {
    std::cout << out.result_json << "\n";
  } else {
    std::ofstream f(out_path);
    f << out.result_json << "\n";
    if (!f) {
      std::fprintf(stderr, "netagg-fabric: cannot write %s\n", out_path.c_str());
      return 1;
    }
  }
  if (!out.ok) std::fprintf(stderr, "netagg-fabric: FAILED (see the result's modes)\n");
  return out.ok ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0
// What a netagg-allreduce worker reports (its --json line and its text), in one place for the
// worker and for the launchers that merge the reports of several workers into one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
}

namespace netagg::report {

// The test tensor and how it is all-reduced: options of the worker that a launcher passes on.
struct TensorOptions {
  std::string dtype = "fp32";
  std::string float_wire;  // empty: what the target needs
  std::uint64_t count = 1 << 20;
  double loss = 0.0;
  std::uint64_t seed = 1;
  std::optional<std::uint64_t> loss_seed;  // unset: seed
  double stagger_ms = 0;  // rank r starts each all-reduce r * stagger_ms late (after the barrier)
  double timeout_s = 10.0;
  int iterations = 1;
  std::string retransmit = "adaptive";  // or "fixed"
  double retransmit_timeout_ms = 20;    // fixed, or the adaptive timeout's first value
};
// Exit status of a command line the tools cannot use (docs/configuration.md).
constexpr int kExitUsage = 2;

// Parses the command line. Returns the status to exit with at once (0 after --help, kExitUsage
// after an error CLI11 printed; CLI11's own codes are not the tools'), or nullopt to go on.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// --dtype, --float-wire, --count, --loss, --seed, --loss-seed, --stagger-ms, --timeout,
// --iterations, --retransmit, --retransmit-timeout-ms.
void add_tensor_options(CLI::App& app, TensorOptions& o);
// The same options as arguments for a worker.
std::vector<std::string> tensor_args(const TensorOptions& o);

// An element of the result outside the bound of the reference sum.
struct Mismatch {
  std::uint64_t index = 0;
  double got = 0, want = 0, bound = 0;
};

nlohmann::json to_json(const Mismatch& m);
Mismatch mismatch_from_json(const nlohmann::json& j);
// "verification: FAILED at index I: got G, want W, bound B".
std::string mismatch_text(const Mismatch& m);

double median(std::vector<double> v);

// "goodput: ... Gbit/s\nATE/s: ... M elements/s" for `count` elements (`bytes` bytes) reduced in
// `seconds`; "" without a time.
std::string rate_text(double seconds, std::uint64_t bytes, std::uint64_t count);

}  // namespace netagg::report

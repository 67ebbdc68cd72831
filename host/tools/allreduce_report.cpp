// SPDX-License-Identifier: Apache-2.0
#include "allreduce_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace netagg::report {

void add_tensor_options(CLI::App& app, TensorOptions& o) {
  app.add_option("--dtype", o.dtype, "element type")
      ->check(CLI::IsMember({"fp32", "int32"}))
      ->capture_default_str();
  app.add_option("--float-wire", o.float_wire,
                 "how fp32 travels; default: what the target needs (fpga-sim: fp32-exact, else "
                 "int32-bfp)")
      ->check(CLI::IsMember({"int32-bfp", "fp32", "fp32-exact"}));
  app.add_option("--count", o.count, "elements in the tensor")
      ->check(CLI::Range(1ull, 1ull << 31))
      ->capture_default_str();
  app.add_option("--loss", o.loss, "injected loss per packet and direction, 0..0.99")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the test tensor and of the injected loss")
      ->capture_default_str();
  app.add_option("--loss-seed", o.loss_seed,
                 "seed of the injected loss alone (default: --seed): the same tensor, other "
                 "packets lost");
  app.add_option("--stagger-ms", o.stagger_ms,
                 "rank r starts each all-reduce r times this many milliseconds late (staggered "
                 "workers: another arrival order)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--timeout", o.timeout_s,
                 "seconds without progress before an all-reduce fails (0.001 to 86400)")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "timed all-reduces; best and median reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--retransmit", o.retransmit,
                 "retransmission timeout: adaptive (from measured round trips) or fixed")
      ->check(CLI::IsMember({"adaptive", "fixed"}))
      ->capture_default_str();
  app.add_option("--retransmit-timeout-ms", o.retransmit_timeout_ms,
                 "the fixed timeout, or the adaptive one's first value (0.01 to 60000)")
      ->check(CLI::Range(0.01, 60000.0))
      ->capture_default_str();
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help or the error
    return code == 0 ? 0 : kExitUsage;
  }
  return std::nullopt;
}

std::vector<std::string> tensor_args(const TensorOptions& o) {
  std::vector<std::string> a = {"--dtype",
                                o.dtype,
                                "--count",
                                std::to_string(o.count),
                                "--loss",
                                fmt::format("{}", o.loss),
                                "--seed",
                                std::to_string(o.seed),
                                "--timeout",
                                fmt::format("{}", o.timeout_s),
                                "--iterations",
                                std::to_string(o.iterations),
                                "--retransmit",
                                o.retransmit,
                                "--retransmit-timeout-ms",
                                fmt::format("{}", o.retransmit_timeout_ms)};
  if (!o.float_wire.empty()) a.insert(a.end(), {"--float-wire", o.float_wire});
  if (o.loss_seed) a.insert(a.end(), {"--loss-seed", std::to_string(*o.loss_seed)});
  if (o.stagger_ms > 0) a.insert(a.end(), {"--stagger-ms", fmt::format("{}", o.stagger_ms)});
  return a;
}

nlohmann::json to_json(const Mismatch& m) {
  return {{"index", m.index}, {"got", m.got}, {"want", m.want}, {"bound", m.bound}};
}

Mismatch mismatch_from_json(const nlohmann::json& j) {
  return {j.at("index").get<std::uint64_t>(), j.at("got").get<double>(), j.at("want").get<double>(),
          j.at("bound").get<double>()};
}

namespace {
// An integer (an int32 sum) in all its digits; any other value with 9 significant ones (fp32's).
std::string value_text(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 0x1p53)
    return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{:.9g}", v);
}
}  // namespace

std::string mismatch_text(const Mismatch& m) {
  return fmt::format("verification: FAILED at index {}: got {}, want {}, bound {:.3g}", m.index,
                     value_text(m.got), value_text(m.want), m.bound);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string rate_text(double seconds, std::uint64_t bytes, std::uint64_t count) {
  if (seconds <= 0) return "";
  return fmt::format("goodput: {:.3f} Gbit/s\nATE/s: {:.2f} M elements/s",
                     bytes * 8 / seconds / 1e9, count / seconds / 1e6);
}

}  // namespace netagg::report

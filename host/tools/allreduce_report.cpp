// SPDX-License-Identifier: Apache-2.0
#include "allreduce_report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace netagg::report {

nlohmann::json to_json(const Mismatch& m) {
  return {{"index", m.index}, {"got", m.got}, {"want", m.want}, {"bound", m.bound}};
}

Mismatch mismatch_from_json(const nlohmann::json& j) {
  return {j.at("index").get<std::uint64_t>(), j.at("got").get<double>(), j.at("want").get<double>(),
          j.at("bound").get<double>()};
}

std::string mismatch_text(const Mismatch& m) {
  return fmt::format("verification: FAILED at index {}: got {:.9g}, want {:.9g}, bound {:.3g}",
                     m.index, m.got, m.want, m.bound);
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

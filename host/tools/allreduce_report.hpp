// SPDX-License-Identifier: Apache-2.0
// What a netagg-allreduce worker reports (its --json line and its text), in one place for the
// worker and for the launchers that merge the reports of several workers into one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace netagg::report {

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

// SPDX-License-Identifier: Apache-2.0
// numerics_study: the exact fp32 arithmetic (host/include/netagg/exact.hpp) against fp32 adder
// trees as the FPGA aggregator groups them, on random gradients: each element's error against
// the exact sum in ulps (worst and mean), overall and over the elements whose exact sum is at
// least 2^-20 of the chunk's largest input magnitude, and how many elements change their bits
// when the same contributions arrive in another order. JSON on stdout; docs/numerics.md ("Exact
// fp32") has the figures and the command.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gradients.hpp"
#include "netagg/exact.hpp"

namespace {

namespace exact = netagg::exact;

using netagg::testing::Distribution;
using netagg::testing::exact_sum;
using netagg::testing::gradients;
using netagg::testing::ulp32;

// The FPGA aggregator's fp32 order for one arrival order: contributions reach it in groups of 1
// to 4 (ports that deliver together), each group summed by the adder tree ((p0 + p1) + (p2 +
// p3)), the groups accumulated in arrival order, the first stored as it is.
float adder_tree_sum(const std::vector<std::vector<float>>& x, int i, const std::vector<int>& order,
                     const std::vector<int>& groups) {
  float acc = 0.0f;
  std::size_t at = 0;
  bool first = true;
  for (int g : groups) {
    float lanes[4] = {0, 0, 0, 0};
    for (int k = 0; k < g; ++k) lanes[k] = x[order[at + k]][i];
    float group = 0.0f;
    if (g == 1) group = lanes[0];
    if (g == 2) group = lanes[0] + lanes[1];
    if (g == 3) group = (lanes[0] + lanes[1]) + lanes[2];
    if (g == 4) group = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    acc = first ? group : acc + group;
    first = false;
    at += g;
  }
  return acc;
}

struct Arrival {
  std::vector<int> order, groups;
};
Arrival random_arrival(int workers, std::mt19937_64& rng) {
  Arrival a;
  a.order.resize(workers);
  for (int w = 0; w < workers; ++w) a.order[w] = w;
  std::shuffle(a.order.begin(), a.order.end(), rng);
  for (int left = workers; left > 0;) {
    const int g = std::min(left, 1 + static_cast<int>(rng() % 4));
    a.groups.push_back(g);
    left -= g;
  }
  return a;
}

struct Errors {
  double worst = 0, sum = 0, worst_above = 0, sum_above = 0;
  std::uint64_t n = 0, n_above = 0, order_dependent = 0;
  void add(double ulps, bool above) {
    worst = std::max(worst, ulps);
    sum += ulps;
    ++n;
    if (above) {
      worst_above = std::max(worst_above, ulps);
      sum_above += ulps;
      ++n_above;
    }
  }
  nlohmann::json json() const {
    return {{"worst_ulps", worst},
            {"mean_ulps", n ? sum / n : 0.0},
            {"worst_ulps_above", worst_above},
            {"mean_ulps_above", n_above ? sum_above / n_above : 0.0},
            {"elements_above", n_above},
            {"order_dependent_elements", order_dependent}};
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"numerics_study: exact fp32 lanes against fp32 adder trees on random gradients"};
  std::uint64_t elements = 10'000'000;
  std::vector<int> worker_counts = {4, 16, 64, 256};
  std::uint64_t seed = 1;
  app.add_option("--elements", elements, "elements per distribution, split over the worker counts")
      ->check(CLI::PositiveNumber);
  app.add_option("--workers", worker_counts, "worker counts")
      ->check(CLI::Range(2, exact::kMaxContributions));
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);

  constexpr int kChunk = 256;
  std::mt19937_64 rng(seed);
  nlohmann::json out = {{"elements_per_distribution", elements},
                        {"chunk", kChunk},
                        {"seed", seed},
                        {"above", "exact sum at least 2^-20 of the chunk's largest input"},
                        {"results", nlohmann::json::array()}};
  for (Distribution d :
       {Distribution::kNormal, Distribution::kHeavyTailed, Distribution::kMixedScales}) {
    for (int workers : worker_counts) {
      const std::uint64_t target = elements / worker_counts.size();
      Errors ex, tree;
      for (std::uint64_t done = 0; done < target; done += kChunk) {
        const auto x = gradients(d, workers, kChunk, rng);
        std::vector<std::span<const float>> views(x.begin(), x.end());
        std::vector<float> sums(kChunk);
        exact::sum(views, sums);
        float largest = 0.0f;
        for (const auto& w : x)
          for (float v : w) largest = std::max(largest, std::fabs(v));
        const long double threshold = std::ldexp(static_cast<long double>(largest), -20);
        const Arrival first = random_arrival(workers, rng), second = random_arrival(workers, rng);
        std::vector<std::span<const float>> reversed(views.rbegin(), views.rend());
        std::vector<float> sums_reversed(kChunk);
        exact::sum(reversed, sums_reversed);
        for (int i = 0; i < kChunk; ++i) {
          const long double s = exact_sum(x, i);
          const bool above = std::fabs(s) >= threshold;
          const long double u = ulp32(s);
          ex.add(static_cast<double>(std::fabs(sums[i] - s) / u), above);
          const float t1 = adder_tree_sum(x, i, first.order, first.groups);
          const float t2 = adder_tree_sum(x, i, second.order, second.groups);
          tree.add(static_cast<double>(std::fabs(t1 - s) / u), above);
          if (t1 != t2) ++tree.order_dependent;
          if (sums[i] != sums_reversed[i]) ++ex.order_dependent;
        }
      }
      out["results"].push_back({{"distribution", netagg::testing::name(d)},
                                {"workers", workers},
                                {"elements", ex.n},
                                {"exact", ex.json()},
                                {"adder_trees", tree.json()}});
      std::cerr << "numerics_study: " << netagg::testing::name(d) << ", " << workers
                << " workers done\n";
    }
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Gradient-like random data, and the exact sums that fp32 results are judged by: what the exact
// fp32 tests (tests/host/exact_test.cpp) and the numerics study (bench/numerics_study.cpp) share.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace netagg::testing {

// Normal (standard deviation 1e-3); heavy tailed (1e-3 times Student's t with 2 degrees of
// freedom: infinite variance); mixed scales (normal, each worker's values times its own 2^k, k
// uniform in [-20, 20]); cancelling: mixed scales, but the last worker's value brings every
// element's sum down to about 2^-19 of the element's largest magnitude, where an error bound
// relative to the sum is tightest.
enum class Distribution { kNormal, kHeavyTailed, kMixedScales, kCancelling };

inline const char* name(Distribution d) {
  switch (d) {
    case Distribution::kNormal:
      return "normal";
    case Distribution::kHeavyTailed:
      return "heavy_tailed";
    case Distribution::kMixedScales:
      return "mixed_scales";
    case Distribution::kCancelling:
      return "cancelling";
  }
  return "?";
}

// `length` elements from each of `workers` workers.
inline std::vector<std::vector<float>> gradients(Distribution d, int workers, int length,
                                                 std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::student_t_distribution<float> heavy(2.0f);
  std::uniform_int_distribution<int> scale(-20, 20);
  std::vector<std::vector<float>> x(workers, std::vector<float>(length));
  for (auto& w : x) {
    const int k = scale(rng);
    for (float& v : w) {
      switch (d) {
        case Distribution::kNormal:
          v = normal(rng);
          break;
        case Distribution::kHeavyTailed:
          v = 1e-3f * heavy(rng);
          break;
        case Distribution::kMixedScales:
        case Distribution::kCancelling:
          v = std::ldexp(normal(rng), k);
          break;
      }
    }
  }
  if (d == Distribution::kCancelling && workers > 1) {
    std::uniform_real_distribution<double> target(1.0, 2.0);
    for (int i = 0; i < length; ++i) {
      double others = 0.0, largest = 0.0;
      for (int w = 0; w + 1 < workers; ++w) {
        others += x[w][i];
        largest = std::max(largest, std::fabs(static_cast<double>(x[w][i])));
      }
      largest = std::max(largest, std::fabs(others));
      const double wanted = std::ldexp(target(rng), -19) * largest * ((rng() & 1) ? 1 : -1);
      x[workers - 1][i] = static_cast<float>(wanted - others);
    }
  }
  return x;
}

// The exact sum of element i over the workers as a double-double (TwoSum): its error is below
// 2^-100 of the sum of the magnitudes, far below any fp32 ulp it is compared with.
inline long double exact_sum(const std::vector<std::vector<float>>& x, int i) {
  double hi = 0.0, lo = 0.0;
  for (const auto& w : x) {
    const double a = w[i];
    const double s = hi + a;
    const double b = s - hi;
    lo += (hi - (s - b)) + (a - b);
    hi = s;
  }
  return static_cast<long double>(hi) + static_cast<long double>(lo);
}

// The fp32 unit in the last place at |s| (the subnormal spacing below 2^-126).
inline long double ulp32(long double s) {
  const long double a = std::fabs(s);
  if (a < std::ldexp(1.0L, -126)) return std::ldexp(1.0L, -149);
  return std::ldexp(1.0L, std::ilogb(a) - 23);
}

}  // namespace netagg::testing

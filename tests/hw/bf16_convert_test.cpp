// SPDX-License-Identifier: Apache-2.0
// netagg_bf16_to_fp32 (exact widening) on all 65536 bf16 patterns, and netagg_fp32_to_bf16
// (round to nearest even, NaN stays NaN) on every upper half with the lower halves that decide
// rounding, on random patterns, and on named cases, against a reference that picks the nearer
// neighbour by exact arithmetic in double.
#include <gtest/gtest.h>
#include <verilated.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>

#include "Vnetagg_bf16_to_fp32.h"
#include "Vnetagg_fp32_to_bf16.h"

namespace {

bool fp32_is_nan(std::uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu); }

// The value of a bf16 pattern, decoded field by field (not by widening, which is under test).
double bf16_value(std::uint16_t h) {
  const int exponent = (h >> 7) & 0xFF;
  const int fraction = h & 0x7F;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0xFF) return fraction ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(fraction, -126 - 7);
  return sign * std::ldexp(128 + fraction, exponent - 127 - 7);
}

// Round to nearest, ties to even, by comparing distances to the two bf16 neighbours. The
// neighbour past the largest finite bf16 is infinity, which IEEE rounding treats as 2^128.
std::uint16_t reference_to_bf16(std::uint32_t x) {
  if (fp32_is_nan(x)) return static_cast<std::uint16_t>((x >> 16) | 0x0040);
  const double v = std::fabs(static_cast<double>(std::bit_cast<float>(x)));
  const auto below = static_cast<std::uint16_t>(x >> 16);  // toward zero
  if ((below & 0x7FFF) == 0x7F80) return below;            // infinity
  const auto above = static_cast<std::uint16_t>(below + 1);
  const double v_below = std::fabs(bf16_value(below));
  const double v_above =
      (above & 0x7FFF) == 0x7F80 ? std::ldexp(1.0, 128) : std::fabs(bf16_value(above));
  const double d_below = v - v_below, d_above = v_above - v;
  if (d_below < d_above) return below;
  if (d_above < d_below) return above;
  return (below & 1) ? above : below;
}

class Converters : public ::testing::Test {
 protected:
  std::uint32_t widen(std::uint16_t h) {
    to_fp32_->bf16_i = h;
    to_fp32_->eval();
    return to_fp32_->fp32_o;
  }
  std::uint16_t narrow(std::uint32_t x) {
    to_bf16_->fp32_i = x;
    to_bf16_->eval();
    return to_bf16_->bf16_o;
  }

  std::unique_ptr<VerilatedContext> ctx_ = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vnetagg_bf16_to_fp32> to_fp32_ =
      std::make_unique<Vnetagg_bf16_to_fp32>(ctx_.get());
  std::unique_ptr<Vnetagg_fp32_to_bf16> to_bf16_ =
      std::make_unique<Vnetagg_fp32_to_bf16>(ctx_.get());
};

TEST_F(Converters, WideningIsExactForAll65536Patterns) {
  int failures = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t x = widen(static_cast<std::uint16_t>(h));
    const double expected = bf16_value(static_cast<std::uint16_t>(h));
    const double got = std::bit_cast<float>(x);
    const bool ok =
        std::isnan(expected)
            ? (fp32_is_nan(x) && (x >> 16) == h)  // NaN keeps sign and payload
            : (got == expected && std::signbit(got) == std::signbit(expected) && (x & 0xFFFF) == 0);
    if (!ok && ++failures <= 5) ADD_FAILURE() << std::hex << "bf16 0x" << h << " -> 0x" << x;
  }
  EXPECT_EQ(failures, 0);
}

TEST_F(Converters, NamedRoundingCases) {
  EXPECT_EQ(narrow(0x3F800000), 0x3F80) << "1.0 exact";
  EXPECT_EQ(narrow(0x3F808000), 0x3F80) << "tie, even below";
  EXPECT_EQ(narrow(0x3F818000), 0x3F82) << "tie, odd below: up";
  EXPECT_EQ(narrow(0x3F808001), 0x3F81) << "above half";
  EXPECT_EQ(narrow(0x3F807FFF), 0x3F80) << "below half";
  EXPECT_EQ(narrow(0xBF818000), 0xBF82) << "negative tie";
  EXPECT_EQ(narrow(0x7F7FFFFF), 0x7F80) << "largest fp32 rounds to infinity";
  EXPECT_EQ(narrow(0x7F7F7FFF), 0x7F7F) << "stays the largest finite bf16";
  EXPECT_EQ(narrow(0x7F7F8000), 0x7F80) << "tie at the top, odd: infinity";
  EXPECT_EQ(narrow(0x007FFFFF), 0x0080) << "largest subnormal rounds to the smallest normal";
  EXPECT_EQ(narrow(0x00008000), 0x0000) << "subnormal tie to even zero";
  EXPECT_EQ(narrow(0x80000000), 0x8000) << "-0";
  EXPECT_EQ(narrow(0xFF800000), 0xFF80) << "-inf";
  EXPECT_EQ(narrow(0x7F800001), 0x7FC0) << "NaN with its payload in the dropped half";
  EXPECT_EQ(narrow(0xFFBF0000), 0xFFFF) << "signaling NaN quieted";
  EXPECT_EQ(narrow(0x7FC00000), 0x7FC0) << "quiet NaN";
}

TEST_F(Converters, NarrowingMatchesTheReference) {
  std::vector<std::uint32_t> inputs;
  // Every upper half with the lower halves that decide the rounding.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      inputs.push_back((h << 16) | lo);
    }
  }
  // Every lower half under the largest finite bf16 (either sign): the overflow boundary.
  for (std::uint32_t lo = 0; lo < 0x10000; ++lo) {
    inputs.push_back(0x7F7F0000u | lo);
    inputs.push_back(0xFF7F0000u | lo);
  }
  std::mt19937_64 rng(42);
  for (int i = 0; i < 1'000'000; ++i) inputs.push_back(static_cast<std::uint32_t>(rng()));

  int failures = 0;
  std::size_t ties_up = 0, ties_down = 0, overflows = 0, nans = 0;
  for (const std::uint32_t x : inputs) {
    const std::uint16_t expected = reference_to_bf16(x);
    const std::uint16_t got = narrow(x);
    if (got != expected && ++failures <= 5) {
      ADD_FAILURE() << std::hex << "fp32 0x" << x << ": RTL 0x" << got << ", reference 0x"
                    << expected;
    }
    if (!fp32_is_nan(x) && (x & 0xFFFF) == 0x8000) {
      (expected == ((x >> 16) & 0xFFFF) ? ties_down : ties_up)++;
    }
    overflows += (expected & 0x7FFF) == 0x7F80 && (x & 0x7FFFFFFF) != 0x7F800000;
    nans += fp32_is_nan(x);
  }
  EXPECT_EQ(failures, 0);
  // The inputs reach both directions of a tie, overflow and NaN.
  EXPECT_GT(ties_up, 10'000u);
  EXPECT_GT(ties_down, 10'000u);
  EXPECT_GT(overflows, 60'000u);
  EXPECT_GT(nans, 1'000u);
}

}  // namespace

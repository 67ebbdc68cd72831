// SPDX-License-Identifier: Apache-2.0
// The exact fp32 mode's arithmetic (host/include/netagg/exact.hpp): conversions against long
// double (64 significant bits: every lane and every element exactly, one rounding to float),
// the same bits for every order and grouping, the error bound of docs/numerics.md ("Exact fp32")
// against the exact sum, specials, the limits of the width.
#include "netagg/exact.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "gradients.hpp"
#include "netagg/error.hpp"

namespace netagg::exact {
namespace {

using testing::Distribution;
using testing::exact_sum;
using testing::gradients;
using testing::ulp32;

constexpr std::int16_t kNone = kExponentNone;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

bool long_double_is_wide() { return std::numeric_limits<long double>::digits >= 64; }

// The oracle of to_lane: RNE(x * 2^(54 - e)) in long double (exact: 24 bits shifted).
std::int64_t lane_oracle(float x, int e) {
  return static_cast<std::int64_t>(
      std::nearbyint(std::ldexp(static_cast<long double>(x), kFractionBits - e)));
}
// The oracle of to_fp32: value * 2^(e - 54) is exact in long double; the cast rounds once.
float fp32_oracle(std::int64_t v, int e) {
  return static_cast<float>(std::ldexp(static_cast<long double>(v), e - kFractionBits));
}

// A random float of any class and magnitude (all bit patterns but NaN and Inf).
float random_finite(std::mt19937_64& rng) {
  for (;;) {
    const auto b = static_cast<std::uint32_t>(rng());
    const float x = std::bit_cast<float>(b);
    if (std::isfinite(x)) return x;
  }
}

TEST(ExactLane, ExamplesAtExponentOne) {
  // e = 1: |x| < 2, the unit is 2^-53.
  EXPECT_EQ(to_lane(1.0f, 1), (Lane{std::int64_t{1} << 53, Special::kFinite}));
  EXPECT_EQ(to_lane(-1.5f, 1), (Lane{-(std::int64_t{3} << 52), Special::kFinite}));
  EXPECT_EQ(to_lane(std::nextafter(2.0f, 0.0f), 1).value,
            (std::int64_t{1} << 54) - (std::int64_t{1} << 30));
  EXPECT_EQ(to_lane(2.0f, 1), (Lane{0, Special::kNaN})) << "outside the agreed range";
  EXPECT_EQ(to_lane(0.0f, 1), Lane{});
  EXPECT_EQ(to_lane(-0.0f, 1), Lane{});
  EXPECT_EQ(to_lane(0.0f, kNone), Lane{});
  EXPECT_EQ(to_lane(1e-30f, kNone), (Lane{0, Special::kNaN})) << "nonzero in an all-zero chunk";
  EXPECT_EQ(to_lane(INFINITY, 1).special, Special::kPosInf);
  EXPECT_EQ(to_lane(-INFINITY, kNone).special, Special::kNegInf);
  EXPECT_EQ(to_lane(NAN, 1).special, Special::kNaN);
}

TEST(ExactLane, RoundsBelowTheUnitToNearestEven) {
  const int e = 20;  // unit 2^-34
  EXPECT_EQ(to_lane(std::ldexp(1.0f, -35), e).value, 0) << "half a unit: ties to even (0)";
  EXPECT_EQ(to_lane(std::ldexp(3.0f, -35), e).value, 2) << "1.5 units: ties to even (2)";
  EXPECT_EQ(to_lane(std::ldexp(5.0f, -35), e).value, 2) << "2.5 units: ties to even (2)";
  EXPECT_EQ(to_lane(-std::ldexp(3.0f, -35), e).value, -2) << "symmetric";
  EXPECT_EQ(to_lane(std::nextafter(std::ldexp(1.0f, -35), 1.0f), e).value, 1);
  EXPECT_EQ(to_lane(std::ldexp(1.0f, -100), e).value, 0);
  // At e <= -95 the unit is at most 2^-149: every element, subnormals included, is exact.
  EXPECT_EQ(to_lane(std::numeric_limits<float>::denorm_min(), -95).value, 1);
  EXPECT_EQ(to_lane(std::numeric_limits<float>::denorm_min(), kMinExponent).value, 4);
}

TEST(ExactLane, MatchesLongDoubleOnRandomFloatsAndExponents) {
  if (!long_double_is_wide()) GTEST_SKIP() << "long double has fewer than 64 significant bits";
  std::mt19937_64 rng(7);
  int converted = 0;
  for (int i = 0; i < 400000; ++i) {
    const float x = random_finite(rng);
    const int lowest = std::max(kMinExponent, x == 0.0f ? kMinExponent : std::ilogb(x) + 1);
    if (lowest > kMaxExponent) continue;
    const int e = lowest + static_cast<int>(rng() % (kMaxExponent - lowest + 1));
    const Lane lane = to_lane(x, static_cast<std::int16_t>(e));
    ASSERT_EQ(lane.special, Special::kFinite) << x << " at " << e;
    ASSERT_EQ(lane.value, lane_oracle(x, e)) << x << " at " << e;
    ++converted;
    // The same element at an exponent it reaches: out of range.
    if (x != 0.0f && lowest > kMinExponent) {
      ASSERT_EQ(to_lane(x, static_cast<std::int16_t>(lowest - 1)).special, Special::kNaN) << x;
    }
  }
  EXPECT_GT(converted, 390000);
}

TEST(ExactFp32, MatchesLongDoubleOnRandomLanesAndExponents) {
  if (!long_double_is_wide()) GTEST_SKIP() << "long double has fewer than 64 significant bits";
  std::mt19937_64 rng(11);
  for (int i = 0; i < 400000; ++i) {
    // Magnitudes of every width up to 63 bits, so sums that are subnormal, normal and (at large
    // exponents) beyond FLT_MAX all occur.
    const int width = static_cast<int>(rng() % 64);
    std::int64_t v = width == 0 ? 0 : static_cast<std::int64_t>(rng() >> (64 - width));
    if (rng() % 8 == 0) v = (std::int64_t{1} << width) - 1;  // all ones: rounds up a binade
    if (rng() & 1) v = -v;
    const int e = kMinExponent + static_cast<int>(rng() % (kMaxExponent - kMinExponent + 1));
    const float got = to_fp32({v, Special::kFinite}, static_cast<std::int16_t>(e));
    ASSERT_EQ(bits(got), bits(v == 0 ? 0.0f : fp32_oracle(v, e))) << v << " at " << e;
  }
}

TEST(ExactFp32, EdgesOfTheFloatRange) {
  const auto lane = [](std::int64_t v) { return Lane{v, Special::kFinite}; };
  // 2^-149 (the smallest subnormal) and half of it (a tie: to even, 0), at e = -95 (unit 2^-149)
  // and e = -94 (unit 2^-148).
  EXPECT_EQ(bits(to_fp32(lane(1), -95)), 1u);
  EXPECT_EQ(bits(to_fp32(lane(1), -96)), 0u) << "2^-150: a tie, rounds to even 0";
  EXPECT_EQ(bits(to_fp32(lane(3), -96)), 2u) << "1.5 * 2^-149: to even 2";
  EXPECT_EQ(bits(to_fp32(lane(-1), -95)), 0x80000001u);
  // 2^-126 - 2^-150, half-way between the largest subnormal and 2^-126: to even, the smallest
  // normal.
  EXPECT_EQ(bits(to_fp32(lane((std::int64_t{1} << 24) - 1), -96)), 0x00800000u);
  // 2^25 - 1: 25 significant bits, a tie rounded up to the next power of two.
  EXPECT_EQ(to_fp32(lane((std::int64_t{1} << 25) - 1), 54), 33554432.0f);
  EXPECT_EQ(to_fp32(lane(-((std::int64_t{1} << 62) - 1)), 54), -0x1p62f);
  // 511 times the largest float below 2^128: beyond FLT_MAX, +-Inf.
  const std::int64_t largest = to_lane(std::numeric_limits<float>::max(), 128).value;
  EXPECT_EQ(largest, (std::int64_t{1} << 54) - (std::int64_t{1} << 30));
  EXPECT_EQ(bits(to_fp32(lane(largest), 128)), bits(std::numeric_limits<float>::max()));
  EXPECT_EQ(bits(to_fp32(lane(2 * largest), 128)), 0x7F800000u);
  EXPECT_EQ(bits(to_fp32(lane(-511 * largest), 128)), 0xFF800000u);
  EXPECT_EQ(bits(to_fp32(lane(0), 128)), 0u);
  EXPECT_EQ(bits(to_fp32(lane(12345), kNone)), 0u);
  EXPECT_EQ(bits(to_fp32({0, Special::kNaN}, 3)), 0x7FC00000u);
  EXPECT_EQ(bits(to_fp32({5, Special::kPosInf}, 3)), 0x7F800000u);
  EXPECT_EQ(bits(to_fp32({5, Special::kNegInf}, kNone)), 0xFF800000u);
}

TEST(ExactArguments, InvalidExponentsAndTooManyContributionsAreErrors) {
  for (int e : {kMinExponent - 1, kMaxExponent + 1, int{INT16_MAX}}) {
    EXPECT_THROW(to_lane(1.0f, static_cast<std::int16_t>(e)), Error) << e;
    EXPECT_THROW(to_fp32({}, static_cast<std::int16_t>(e)), Error) << e;
  }
  std::vector<float> one(4, 1.0f), out(4), shorter(3, 1.0f);
  std::vector<std::span<const float>> many(kMaxContributions + 1, std::span<const float>(one));
  try {
    sum(many, out);
    FAIL() << "512 contributions accepted";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::kInvalidArgument);
  }
  many.resize(kMaxContributions);
  sum(many, out);
  EXPECT_EQ(out[0], 511.0f);
  const std::vector<std::span<const float>> uneven = {one, shorter};
  EXPECT_THROW(sum(uneven, out), Error);
}

// The largest contributions the width allows: 511 workers at the largest magnitude below 2^e,
// of either sign, for every exponent: no wrap, the exact result.
TEST(ExactLimits, FiveHundredElevenLargestValuesDoNotOverflow) {
  for (int e = kMinExponent; e <= kMaxExponent; ++e) {
    const float x = std::nextafter(std::ldexp(1.0f, e), 0.0f);
    if (!std::isfinite(x) || std::ilogb(x) + 1 != e) continue;  // not a float below 2^e
    for (float s : {x, -x}) {
      Lane acc;
      for (int w = 0; w < kMaxContributions; ++w)
        acc = add(acc, to_lane(s, static_cast<std::int16_t>(e)));
      const double exact = 511.0 * static_cast<double>(s);
      EXPECT_EQ(to_fp32(acc, static_cast<std::int16_t>(e)), static_cast<float>(exact)) << e;
    }
  }
}

TEST(ExactSpecials, JoinedElementByElementLikeFp32Addition) {
  const std::vector<float> a = {1.0f,      INFINITY, INFINITY, NAN,
                                -INFINITY, 0.0f,     -0.0f,    std::ldexp(1.0f, -52)};
  const std::vector<float> b = {2.0f, 1.0f, -INFINITY, 1.0f, -2.0f, -0.0f, -0.0f, 8.0f};
  std::vector<float> out(a.size());
  const std::vector<std::span<const float>> both = {a, b};
  sum(both, out);
  EXPECT_EQ(out[0], 3.0f) << "finite lanes are unaffected by the specials beside them";
  EXPECT_EQ(bits(out[1]), 0x7F800000u);
  EXPECT_EQ(bits(out[2]), 0x7FC00000u) << "+Inf + -Inf";
  EXPECT_EQ(bits(out[3]), 0x7FC00000u);
  EXPECT_EQ(bits(out[4]), 0xFF800000u);
  EXPECT_EQ(bits(out[5]), 0u);
  EXPECT_EQ(bits(out[6]), 0u) << "-0 + -0 gives +0: the sign of a zero sum is not kept";
  EXPECT_EQ(out[7], 8.0f) << "2^-52 is a quarter of the unit at the chunk's exponent (4)";
  // The join is associative and commutative: all 4^3 triples, every grouping.
  for (int i = 0; i < 64; ++i) {
    const Lane x{1, Special(i & 3)}, y{2, Special((i >> 2) & 3)}, z{3, Special((i >> 4) & 3)};
    EXPECT_EQ(add(add(x, y), z), add(x, add(y, z)));
    EXPECT_EQ(add(x, y), add(y, x));
  }
  // All-zero finite parts: exponent none, +-Inf and NaN still pass.
  const std::vector<float> z1 = {0.0f, INFINITY}, z2 = {-0.0f, 0.0f};
  std::vector<float> zo(2);
  const std::vector<std::span<const float>> zeros = {z1, z2};
  sum(zeros, zo);
  EXPECT_EQ(block_exponent(z1), kNone);
  EXPECT_EQ(bits(zo[0]), 0u);
  EXPECT_EQ(bits(zo[1]), 0x7F800000u);
}

// docs/numerics.md, "Exact fp32": for up to 256 workers, every element whose exact sum is at
// least 2^-20 of the chunk's largest input magnitude comes back within 1 ulp of the exact sum
// (the bound proved there is 1/2 + 1/8 ulp); every other element within 2^(e-46) + 1/2 ulp.
TEST(ExactBound, WithinOneUlpForSumsAboveTwoToTheMinusTwentyOfTheLargestInput) {
  std::mt19937_64 rng(3);
  constexpr int kChunk = 256;
  for (Distribution d : {Distribution::kNormal, Distribution::kHeavyTailed,
                         Distribution::kMixedScales, Distribution::kCancelling}) {
    double worst = 0.0;  // over the distribution's sums
    for (int workers : {2, 3, 8, 32, 100, 256}) {
      const auto x = gradients(d, workers, kChunk, rng);
      std::vector<std::span<const float>> views(x.begin(), x.end());
      std::vector<float> out(kChunk);
      sum(views, out);
      float largest = 0.0f;
      std::int16_t e = kNone;
      for (const auto& w : x) {
        for (float v : w) largest = std::max(largest, std::fabs(v));
        e = std::max(e, block_exponent(w));
      }
      for (int i = 0; i < kChunk; ++i) {
        const long double s = exact_sum(x, i);
        const long double err = std::fabs(static_cast<long double>(out[i]) - s);
        if (std::fabs(s) >= std::ldexp(static_cast<long double>(largest), -20)) {
          const double ulps = static_cast<double>(err / ulp32(s));
          worst = std::max(worst, ulps);
          ASSERT_LE(ulps, 0.625) << "element " << i << " of " << workers << " workers";
        } else {
          ASSERT_LE(err, std::ldexp(1.0L, e - 46) + ulp32(s) / 2) << "element " << i;
        }
      }
    }
    EXPECT_GT(worst, 0.0) << "no element was rounded: the data tests nothing";
  }
}

// The derivation's worst case: 254 of 256 workers send just under half the lanes' unit, each
// cut to 0, all in the same direction, beside a sum of 2^-21 (2^-20 of the largest input, 0.75):
// the lost part stays below 1/8 ulp of the sum (127 half units of 2^-54 against ulp 2^-44).
TEST(ExactBound, TheWorstCaseOfTheQuantizationStaysBelowAnEighthOfAnUlp) {
  const float tiny = 0.499f * std::ldexp(1.0f, -kFractionBits);  // at e = 0
  std::vector<std::vector<float>> x(256, std::vector<float>{tiny});
  x[0][0] = 0.75f + std::ldexp(1.0f, -21);
  x[1][0] = -0.75f;
  std::vector<std::span<const float>> views(x.begin(), x.end());
  float out = 0.0f;
  sum(views, std::span(&out, 1));
  const long double exact = exact_sum(x, 0);
  const double ulps = static_cast<double>(std::fabs(out - exact) / ulp32(exact));
  EXPECT_EQ(out, std::ldexp(1.0f, -21)) << "every tiny input cut to 0";
  EXPECT_GT(ulps, 0.12);
  EXPECT_LT(ulps, 0.125);
}

// Sums of a chunk's lanes in random orders and random groupings (random binary trees, as
// aggregation trees and adder trees group them) give the same lanes, bit for bit; the same
// contributions summed in fp32 in those orders do not (the data is sensitive to the order).
TEST(ExactOrder, EveryOrderAndGroupingGivesTheSameBits) {
  std::mt19937_64 rng(5);
  constexpr int kChunk = 64;
  for (int workers : {3, 7, 32, 256, 511}) {
    const auto x = gradients(Distribution::kMixedScales, workers, kChunk, rng);
    std::int16_t e = kNone;
    for (const auto& w : x) e = std::max(e, block_exponent(w));
    std::vector<Lane> reference(kChunk);
    for (int i = 0; i < kChunk; ++i)
      for (const auto& w : x) reference[i] = add(reference[i], to_lane(w[i], e));

    int fp32_differs = 0;
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<int> order(workers);
      for (int w = 0; w < workers; ++w) order[w] = w;
      std::shuffle(order.begin(), order.end(), rng);
      // A random binary tree over order[lo, hi).
      std::function<Lane(int, int, int)> tree = [&](int i, int lo, int hi) -> Lane {
        if (hi - lo == 1) return to_lane(x[order[lo]][i], e);
        const int mid = lo + 1 + static_cast<int>(rng() % (hi - lo - 1));
        return add(tree(i, lo, mid), tree(i, mid, hi));
      };
      std::function<float(int, int, int)> fp32_tree = [&](int i, int lo, int hi) -> float {
        if (hi - lo == 1) return x[order[lo]][i];
        const int mid = lo + 1 + static_cast<int>(rng() % (hi - lo - 1));
        return fp32_tree(i, lo, mid) + fp32_tree(i, mid, hi);
      };
      for (int i = 0; i < kChunk; ++i) {
        ASSERT_EQ(tree(i, 0, workers), reference[i]) << "element " << i << ", trial " << trial;
        float sequential = 0.0f;
        for (int w = 0; w < workers; ++w) sequential += x[w][i];
        if (bits(fp32_tree(i, 0, workers)) != bits(sequential)) ++fp32_differs;
      }
    }
    EXPECT_GT(fp32_differs, 0) << workers << " workers: fp32 sums never depended on the order";
  }
}

// ---- On the wire -----------------------------------------------------------------------------

TEST(ExactWire, ExponentCodesOrderAsExponentsAndRoundTrip) {
  EXPECT_EQ(to_code(kExponentNone), 0);
  EXPECT_EQ(to_code(kMinExponent), 1);
  EXPECT_EQ(to_code(kMaxExponent), kMaxCode);
  EXPECT_EQ(kMaxCode, 226);
  for (int e = kMinExponent; e <= kMaxExponent; ++e) {
    const auto e16 = static_cast<std::int16_t>(e);
    EXPECT_EQ(from_code(to_code(e16)), e16);
    if (e > kMinExponent) {
      EXPECT_GT(to_code(e16), to_code(static_cast<std::int16_t>(e - 1)));
    }
  }
  EXPECT_EQ(from_code(0), kExponentNone);
  EXPECT_EQ(from_code(227), std::nullopt);
  EXPECT_EQ(from_code(255), std::nullopt);
  EXPECT_THROW(to_code(129), Error);
}

// With one scale in the high byte, the signed 16-bit maximum of two fields (what every
// aggregator takes) is the field of the larger announced exponent, for every scale.
TEST(ExactWire, TheSignedMaxOfFieldsWithOneScaleIsTheMaxOfTheAnnouncedExponents) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> e(kMinExponent - 1, kMaxExponent);  // min - 1: none
  const auto pick = [&] {
    const int v = e(rng);
    return static_cast<std::int16_t>(v < kMinExponent ? kExponentNone : v);
  };
  for (int i = 0; i < 100000; ++i) {
    const std::int16_t scale = pick(), a = pick(), b = pick();
    const std::int16_t fa = pack_exponents(scale, a), fb = pack_exponents(scale, b);
    EXPECT_EQ(scale_code(fa), to_code(scale));
    EXPECT_EQ(ahead_code(fa), to_code(a));
    EXPECT_EQ(std::max(fa, fb), pack_exponents(scale, std::max(a, b)));
  }
}

TEST(ExactWire, SpecialsTravelAsValuesNoSumReaches) {
  EXPECT_EQ(to_wire({0, Special::kPosInf}), INT64_MAX);
  EXPECT_EQ(to_wire({0, Special::kNegInf}), INT64_MIN + 1);
  EXPECT_EQ(to_wire({0, Special::kNaN}), INT64_MIN);
  const std::int64_t largest = std::int64_t{kMaxContributions} << kFractionBits;
  for (const Lane& l : {Lane{0}, Lane{-1}, Lane{largest}, Lane{-largest}, Lane{0, Special::kPosInf},
                        Lane{0, Special::kNegInf}, Lane{0, Special::kNaN}})
    EXPECT_EQ(from_wire(to_wire(l)), l);
  EXPECT_LT(largest, INT64_MAX - 1);  // every finite sum is below the reserved values
}

}  // namespace
}  // namespace netagg::exact

// SPDX-License-Identifier: Apache-2.0
// Tests of the block floating point codec. Each statement of docs/numerics.md names the test
// here that proves it.

#include "netagg/codec.hpp"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg::codec {
namespace {

constexpr std::int16_t kNone = wire::kExponentNone;
constexpr std::int16_t kNonFinite = wire::kExponentNonFinite;
constexpr int kMin = kMinExponent;
constexpr int kMax = kMaxExponent;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// Largest float below 2^e.
float below_power_of_two(int e) { return std::nextafter(std::ldexp(1.0f, e), 0.0f); }

// ---- scalar reference, written from the definitions in docs/numerics.md -------------------

namespace ref {

// Lf: floor(INT32_MAX / world), rounded down to a float.
std::int32_t limit(int world) {
  const std::int32_t l = std::numeric_limits<std::int32_t>::max() / world;
  float f = static_cast<float>(l);  // nearest; step down if that rounded up
  if (static_cast<double>(f) > l) f = std::nextafter(f, 0.0f);
  return static_cast<std::int32_t>(f);
}

std::int16_t block_exponent(std::span<const float> x) {
  float max_abs = 0.0f;
  for (float v : x) {
    if (!std::isfinite(v)) return kNonFinite;
    max_abs = std::max(max_abs, std::fabs(v));
  }
  if (max_abs == 0.0f) return kNone;
  int e = 0;
  std::frexp(max_abs, &e);  // max_abs = f * 2^e, 0.5 <= f < 1: 2^(e-1) <= max_abs < 2^e
  return static_cast<std::int16_t>(std::max(e, kMinExponent));
}

std::vector<std::byte> quantize(std::span<const float> x, std::int16_t e, int world) {
  std::vector<std::byte> out(4 * x.size());
  if (e == kNone || e == kNonFinite) return out;
  const std::int32_t lim = limit(world);
  const float scale = std::ldexp(static_cast<float>(lim), -e);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float r = std::nearbyint(x[i] * scale);  // default rounding mode: half to even
    const float clamped = std::min(std::max(r, static_cast<float>(-lim)), static_cast<float>(lim));
    wire::store_be32(&out[4 * i], static_cast<std::uint32_t>(static_cast<std::int32_t>(clamped)));
  }
  return out;
}

float dequantize_one(std::int32_t q, std::int16_t e, int world) {
  return static_cast<float>(static_cast<double>(q) * (std::ldexp(1.0, e) / limit(world)));
}

}  // namespace ref

// ---- helpers --------------------------------------------------------------------------------

// Runs `body` once per SIMD target this machine supports and the library was built for.
// codec::simd_target() proves the dispatch really switched.
void for_each_target(const std::function<void()>& body) {
  const auto targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    ASSERT_EQ(simd_target(), hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

std::vector<std::int32_t> decode_payload(const std::vector<std::byte>& bytes) {
  std::vector<std::int32_t> q(bytes.size() / 4);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<std::int32_t>(wire::load_be32(&bytes[4 * i]));
  }
  return q;
}

std::vector<std::byte> quantize_vec(std::span<const float> x, std::int16_t e, int world) {
  std::vector<std::byte> out(4 * x.size(), std::byte{0xAA});
  quantize(x, e, world, out.data());
  return out;
}

// Exact sum of floats as a double-double (hi + lo); the residual error (~2^-100 relative) is
// far below every bound checked here.
struct ExactSum {
  double hi = 0, lo = 0;
  void add(double x) {
    const double s = hi + x;
    const double bb = s - hi;
    lo += (hi - (s - bb)) + (x - bb);
    hi = s;
  }
  double error_of(float approx) const { return std::fabs((static_cast<double>(approx) - hi) - lo); }
};

// One all-reduce of a chunk through an integer aggregator, as the switch does it: every worker
// sends its local block exponent, the aggregator max-reduces them (kExponentNone is the
// identity, kExponentNonFinite absorbs), every worker quantizes with the common exponent, the
// aggregator adds the int32 payloads modulo 2^32, every worker dequantizes the sum.
struct Reduced {
  std::int16_t exponent;
  std::vector<float> out;
};

Reduced simulate_allreduce(const std::vector<std::vector<float>>& x) {
  const int world = static_cast<int>(x.size());
  const std::size_t n = x.front().size();
  std::int16_t e = kNone;
  for (const auto& xw : x) e = std::max(e, block_exponent(xw));
  std::vector<std::uint32_t> sum(n, 0);
  std::vector<std::byte> payload(4 * n);
  for (const auto& xw : x) {
    quantize(xw, e, world, payload.data());
    for (std::size_t i = 0; i < n; ++i) sum[i] += wire::load_be32(&payload[4 * i]);  // wraps
  }
  for (std::size_t i = 0; i < n; ++i) wire::store_be32(&payload[4 * i], sum[i]);
  Reduced r{e, std::vector<float>(n)};
  dequantize(payload.data(), e, world, r.out);
  return r;
}

// Checks every output element against the exact sum: within error_bound, or, where the float
// result overflowed, the exact sum's magnitude beyond FLT_MAX - bound (same sign).
// Returns the largest error / bound ratio seen among finite outputs.
double expect_within_bound(const std::vector<std::vector<float>>& x, const Reduced& r) {
  const int world = static_cast<int>(x.size());
  const double bound = error_bound(r.exponent, world);
  double worst = 0;
  for (std::size_t i = 0; i < r.out.size(); ++i) {
    ExactSum s;
    for (const auto& xw : x) s.add(xw[i]);
    if (std::isinf(r.out[i])) {
      EXPECT_GT(std::fabs(s.hi), FLT_MAX - bound) << "element " << i;
      EXPECT_EQ(std::signbit(r.out[i]), std::signbit(s.hi)) << "element " << i;
      continue;
    }
    const double err = s.error_of(r.out[i]);
    EXPECT_LE(err, bound) << "element " << i << " world " << world << " e " << r.exponent
                          << " exact " << s.hi << " got " << r.out[i];
    worst = std::max(worst, err / bound);
  }
  return worst;
}

// A float with |x| < 2^e, uniform in value.
float uniform_below(std::mt19937& rng, int e) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const float x = static_cast<float>(std::ldexp(u(rng), e));
  return std::fabs(x) < std::ldexp(1.0, e) ? x : std::copysign(below_power_of_two(e), x);
}

// A float with |x| < 2^e whose magnitude is spread over 2^(e-40) .. 2^e (subnormal or zero
// at the bottom of the range), or one of the extremes: zero, the largest float below 2^e.
float spread_below(std::mt19937& rng, int e) {
  const int pick = std::uniform_int_distribution<int>(0, 19)(rng);
  const float sign = (rng() & 1) ? -1.0f : 1.0f;
  if (pick == 0) return sign * 0.0f;
  if (pick == 1) return sign * below_power_of_two(e);
  const int k = std::uniform_int_distribution<int>(e - 40, e - 1)(rng);
  const double mantissa = std::uniform_real_distribution<double>(1.0, 2.0)(rng);
  const float x = static_cast<float>(std::ldexp(mantissa, k));
  return sign * std::min(x, below_power_of_two(e));
}

std::vector<int> exponents_to_test(std::mt19937& rng) {
  std::vector<int> es = {kMin, kMin + 1, kMin + 3, -90, -64, -20, -1,  0,
                         1,    2,        24,       31,  100, 127, kMax};
  for (int i = 0; i < 6; ++i) es.push_back(std::uniform_int_distribution<int>(kMin, kMax)(rng));
  return es;
}

// ---- exponents and scale --------------------------------------------------------------------

TEST(CodecScale, FiniteNormalForEveryWorldAndExponent) {
  for (int world = 1; world <= kMaxWorld; ++world) {
    const std::int32_t lf = quantization_limit(world);
    ASSERT_EQ(lf, ref::limit(world)) << world;
    // Rounding the limit down to a float loses less than 2^-23 of the range.
    ASSERT_GE(static_cast<double>(lf),
              (std::numeric_limits<std::int32_t>::max() / world) * (1.0 - 0x1p-23));
    // n contributions at the limit fit in int32.
    ASSERT_LE(static_cast<std::int64_t>(lf) * world, std::numeric_limits<std::int32_t>::max());
    for (int e = kMin; e <= kMax; ++e) {
      const float s = quantization_scale(static_cast<std::int16_t>(e), world);
      ASSERT_TRUE(std::isnormal(s)) << "world " << world << " e " << e;
      ASSERT_EQ(static_cast<double>(s), std::ldexp(static_cast<double>(lf), -e));
    }
  }
}

TEST(CodecScale, MinExponentIsTheSmallestWithFiniteScale) {
  // World 1 has the largest limit: at kMinExponent its scale is exactly FLT_MAX, one lower
  // overflows.
  EXPECT_EQ(quantization_scale(kMin, 1), FLT_MAX);
  EXPECT_TRUE(std::isinf(std::ldexp(static_cast<float>(quantization_limit(1)), -(kMin - 1))));
  // Every finite float is below 2^128, FLT_MAX is not below 2^127.
  EXPECT_EQ(block_exponent(std::array{FLT_MAX}), kMax);
}

TEST(CodecBlockExponent, SmallestPowerOfTwoAboveMaxMagnitude) {
  EXPECT_EQ(block_exponent(std::array{1.0f}), 1);
  EXPECT_EQ(block_exponent(std::array{0.75f}), 0);
  EXPECT_EQ(block_exponent(std::array{0.5f}), 0);
  EXPECT_EQ(block_exponent(std::array{-2.0f, 1.0f}), 2);
  EXPECT_EQ(block_exponent(std::array{3.0f, -3.5f}), 2);
  EXPECT_EQ(block_exponent(std::array{below_power_of_two(5)}), 5);
  EXPECT_EQ(block_exponent(std::array{std::ldexp(1.0f, 127)}), 128);
  EXPECT_EQ(block_exponent(std::array{below_power_of_two(127)}), 127);
  EXPECT_EQ(block_exponent(std::array{-FLT_MAX}), 128);
  EXPECT_EQ(block_exponent(std::array{std::ldexp(1.0f, -90)}), -89);
  // Below 2^kMinExponent the exponent is raised to kMinExponent.
  EXPECT_EQ(block_exponent(std::array{std::ldexp(1.0f, -98)}), kMin);
  EXPECT_EQ(block_exponent(std::array{FLT_MIN}), kMin);

  // Random data of every length, the maximum at every position: same as the reference and
  // the defining property (|x| < 2^e, and |x| >= 2^(e-1) unless raised to kMinExponent).
  std::mt19937 rng(1);
  for (std::size_t n = 1; n <= 200; ++n) {
    std::vector<float> x(n);
    const int e = std::uniform_int_distribution<int>(-140, 128)(rng);
    for (float& v : x) v = spread_below(rng, std::max(e, -126));
    const std::int16_t got = block_exponent(x);
    ASSERT_EQ(got, ref::block_exponent(x)) << n;
    if (got == kNone) continue;
    float max_abs = 0;
    for (float v : x) max_abs = std::max(max_abs, std::fabs(v));
    ASSERT_LT(max_abs, std::ldexp(1.0, got));
    if (got > kMin) {
      ASSERT_GE(max_abs, std::ldexp(1.0, got - 1));
    }
  }
}

// ---- quantize / dequantize ------------------------------------------------------------------

TEST(CodecQuantize, BigEndianLayout) {
  // world 65535: Lf = 2^15, so with e = 15 the scale is 1 and q = x.
  ASSERT_EQ(quantization_limit(65535), 1 << 15);
  ASSERT_EQ(quantization_scale(15, 65535), 1.0f);
  const std::array x{32513.0f, -2.0f, 258.0f};
  const auto bytes = quantize_vec(x, 15, 65535);
  const std::vector<std::byte> expected = {std::byte{0x00}, std::byte{0x00}, std::byte{0x7F},
                                           std::byte{0x01}, std::byte{0xFF}, std::byte{0xFF},
                                           std::byte{0xFF}, std::byte{0xFE}, std::byte{0x00},
                                           std::byte{0x00}, std::byte{0x01}, std::byte{0x02}};
  EXPECT_EQ(bytes, expected);
  std::array<float, 3> back{};
  dequantize(bytes.data(), 15, 65535, back);
  EXPECT_EQ(back, x);

  std::array<std::byte, 8> raw{};
  store_be(std::array<std::int32_t, 2>{0x01020304, -2}, raw.data());
  EXPECT_EQ(raw, (std::array{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                             std::byte{0xFF}, std::byte{0xFF}, std::byte{0xFF}, std::byte{0xFE}}));
  store_be(std::array{1.0f, -0.0f}, raw.data());
  EXPECT_EQ(raw, (std::array{std::byte{0x3F}, std::byte{0x80}, std::byte{0}, std::byte{0},
                             std::byte{0x80}, std::byte{0}, std::byte{0}, std::byte{0}}));
  std::array<float, 2> f{};
  load_be(raw.data(), f);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(bits(f[1]), 0x80000000u);
}

TEST(CodecQuantize, RoundsHalfToEven) {
  // world 65535, e = 15: scale 1, so x itself is the value rounded.
  // 0.49999997 is the float just below 0.5: adding 0.5 in float would round it up to 1.
  const std::vector<float> x = {0.5f,         1.5f,       2.5f,       3.5f,       -0.5f,
                                -1.5f,        -2.5f,      2.4999998f, 2.5000002f, 0.49999997f,
                                -0.49999997f, 1.4999999f, 32766.5f,   32765.5f};
  const std::vector<std::int32_t> expected = {0, 2, 2, 4, 0, -2, -2, 2, 3, 0, 0, 1, 32766, 32766};
  for_each_target([&] { EXPECT_EQ(decode_payload(quantize_vec(x, 15, 65535)), expected); });
}

TEST(CodecQuantize, GridValuesRoundTripExactly) {
  // world 65535: Lf = 2^15, every k * 2^(e-15) with |k| <= 2^15 is a quantization level.
  std::mt19937 rng(2);
  for (int e : {kMin, -50, 0, 15, 60, 127, kMax}) {
    std::vector<float> x(301);
    for (float& v : x) {
      const int k = std::uniform_int_distribution<int>(-(1 << 15) + 1, (1 << 15) - 1)(rng);
      v = std::ldexp(static_cast<float>(k), e - 15);
    }
    std::vector<float> back(x.size());
    dequantize(quantize_vec(x, static_cast<std::int16_t>(e), 65535).data(),
               static_cast<std::int16_t>(e), 65535, back);
    EXPECT_EQ(back, x) << "e " << e;
  }
}

TEST(CodecQuantize, VectorMatchesScalarReferenceOnEveryTarget) {
  for_each_target([] {
    std::mt19937 rng(3);
    const std::array worlds{1, 2, 3, 7, 64, 1000, 65535, 65536};
    for (std::size_t n = 0; n <= 70; ++n) {
      for (int round = 0; round < 8; ++round) {
        const int world = worlds[rng() % worlds.size()];
        const auto e =
            static_cast<std::int16_t>(std::uniform_int_distribution<int>(kMin, kMax)(rng));
        std::vector<float> x(n);
        for (float& v : x) v = uniform_below(rng, e);
        // Out of contract: values >= 2^e, huge, infinite. Must saturate the same way.
        if (round == 7 && n > 0) {
          x[rng() % n] = FLT_MAX;
          x[rng() % n] = -kInf;
          x[rng() % n] = std::ldexp(1.0f, std::min<int>(e, 127)) * -3.0f;
        }
        ASSERT_EQ(quantize_vec(x, e, world), ref::quantize(x, e, world))
            << "n " << n << " world " << world << " e " << e;
        ASSERT_EQ(block_exponent(x), ref::block_exponent(x));

        // Dequantize any int32 payload, bit for bit.
        std::vector<std::byte> payload(4 * n);
        for (std::size_t i = 0; i < n; ++i) wire::store_be32(&payload[4 * i], rng());
        std::vector<float> out(n);
        dequantize(payload.data(), e, world, out);
        for (std::size_t i = 0; i < n; ++i) {
          const auto q = static_cast<std::int32_t>(wire::load_be32(&payload[4 * i]));
          ASSERT_EQ(bits(out[i]), bits(ref::dequantize_one(q, e, world)))
              << "n " << n << " i " << i << " q " << q;
        }

        // Plain big-endian copies.
        std::vector<std::int32_t> ints(n);
        for (auto& v : ints) v = static_cast<std::int32_t>(rng());
        std::vector<std::byte> be(4 * n);
        store_be(ints, be.data());
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(wire::load_be32(&be[4 * i]), static_cast<std::uint32_t>(ints[i]));
        }
        std::vector<std::int32_t> ints_back(n);
        load_be(be.data(), ints_back);
        ASSERT_EQ(ints_back, ints);
        store_be(std::span<const float>(x), be.data());
        std::vector<float> floats_back(n);
        load_be(be.data(), floats_back);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(wire::load_be32(&be[4 * i]), bits(x[i]));
          ASSERT_EQ(bits(floats_back[i]), bits(x[i]));
        }
      }
    }
  });
}

TEST(CodecQuantize, InPlaceCopiesAndDequantize) {
  std::vector<float> x(37);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 18.5f;
  std::vector<float> buf = x;
  auto* bytes = reinterpret_cast<std::byte*>(buf.data());
  store_be(std::span<const float>(buf), bytes);
  EXPECT_EQ(wire::load_be32(bytes), bits(x[0]));
  load_be(bytes, std::span<float>(buf));
  EXPECT_EQ(buf, x);

  quantize(x, 6, 1, bytes);
  const auto expected = ref::quantize(x, 6, 1);
  std::vector<float> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] =
        ref::dequantize_one(static_cast<std::int32_t>(wire::load_be32(&expected[4 * i])), 6, 1);
  }
  dequantize(bytes, 6, 1, std::span<float>(buf));
  EXPECT_EQ(buf, want);
}

// ---- the error bound ------------------------------------------------------------------------

TEST(CodecBound, ErrorBoundFormula) {
  for (int world : {1, 2, 3, 1000, 65536}) {
    for (int e : {kMin, -3, 0, 40, kMax}) {
      const double lf = quantization_limit(world);
      const double b = world * std::ldexp(1.0, e) * (0.5 / lf + 0x1p-23 + 0x1p-42) + 0x1p-149;
      EXPECT_EQ(error_bound(static_cast<std::int16_t>(e), world), b);
    }
  }
  EXPECT_EQ(error_bound(kNone, 5), 0.0);
  EXPECT_TRUE(std::isinf(error_bound(kNonFinite, 5)));
  // The integer rounding term n 2^e / (2 Lf) outgrows the float rounding term 2^-23 n 2^e
  // from n = 512 on.
  for (int world = 1; world <= 2000; ++world) {
    const bool integer_term_larger = 0.5 / quantization_limit(world) > 0x1p-23;
    EXPECT_EQ(integer_term_larger, world >= 512) << world;
  }
}

TEST(CodecBound, IncreasesWithExponentAndWorld) {
  // So the bound for the largest exponent of a whole tensor bounds every chunk of it.
  for (int world : {1, 2, 3, 1000, 65535}) {
    for (int e = kMin; e < kMax; ++e) {
      ASSERT_LT(error_bound(static_cast<std::int16_t>(e), world),
                error_bound(static_cast<std::int16_t>(e + 1), world));
    }
  }
  for (int e : {kMin, 0, kMax}) {
    for (int world = 1; world < kMaxWorld; ++world) {
      ASSERT_LT(error_bound(static_cast<std::int16_t>(e), world),
                error_bound(static_cast<std::int16_t>(e), world + 1));
    }
  }
}

TEST(CodecBound, HoldsOnRandomData) {
  std::mt19937 rng(4);
  for (int world : {1, 2, 3, 4, 7, 64, 1000}) {
    double worst_uniform = 0;
    for (int e : exponents_to_test(rng)) {
      for (int pattern = 0; pattern < 3; ++pattern) {
        // Pattern 0: all workers uniform below 2^e. 1: spread magnitudes. 2: each worker has
        // its own, smaller local exponent; the last one sets the common exponent.
        std::vector<std::vector<float>> x(world, std::vector<float>(131));
        for (int w = 0; w < world; ++w) {
          const int local = pattern == 2 && w + 1 < world
                                ? std::uniform_int_distribution<int>(std::max(kMin, e - 30), e)(rng)
                                : e;
          for (float& v : x[w])
            v = pattern == 0 ? uniform_below(rng, local) : spread_below(rng, local);
        }
        SCOPED_TRACE(testing::Message()
                     << "world " << world << " e " << e << " pattern " << pattern);
        const Reduced r = simulate_allreduce(x);
        ASSERT_LE(r.exponent, e);
        ASSERT_GE(r.exponent, std::max<int>(kMin, e - 1));
        const double worst = expect_within_bound(x, r);
        if (pattern == 0) worst_uniform = std::max(worst_uniform, worst);
      }
    }
    // The bound is a worst case, yet uniform random data comes within a factor 100 of it
    // for world >= 2. For world 1 the product and output roundings cancel (the round trip
    // mostly gives x back) and the error stays far below the bound.
    if (world >= 2) {
      EXPECT_GT(worst_uniform, 0.01) << "world " << world;
    } else {
      EXPECT_LT(worst_uniform, 0.01);
    }
  }
}

TEST(CodecBound, NoWrapAtFullScale) {
  // Every worker at the largest magnitude allowed: the int32 sum reaches world * Lf and no
  // further, so the modulo-2^32 add never wraps.
  for (int world : {1, 2, 3, 7, 64, 1000, 65535, 65536}) {
    for (int e : {kMin, 0, kMax}) {
      const auto ee = static_cast<std::int16_t>(e);
      const std::array x{below_power_of_two(e), -below_power_of_two(e)};
      const auto q = decode_payload(quantize_vec(x, ee, world));
      const std::int32_t lf = quantization_limit(world);
      ASSERT_LE(q[0], lf);
      ASSERT_GE(q[0], lf - lf / (1 << 22));  // full scale is really used
      ASSERT_EQ(q[1], -q[0]);
      std::uint32_t wrapped_pos = 0, wrapped_neg = 0;
      for (int w = 0; w < world; ++w) {
        wrapped_pos += static_cast<std::uint32_t>(q[0]);
        wrapped_neg += static_cast<std::uint32_t>(q[1]);
      }
      EXPECT_EQ(static_cast<std::int32_t>(wrapped_pos), static_cast<std::int64_t>(q[0]) * world);
      EXPECT_EQ(static_cast<std::int32_t>(wrapped_neg), static_cast<std::int64_t>(q[1]) * world);
    }
  }
  // The guarantee needs `world` to be the number of contributions: two contributions at full
  // scale quantized for world 1 wrap around.
  const std::array one{below_power_of_two(0)};
  const std::uint32_t q = wire::load_be32(quantize_vec(one, 0, 1).data());
  EXPECT_LT(static_cast<std::int32_t>(q + q), 0);
}

TEST(CodecBound, OutOfContractInputsStayWithinLimit) {
  // NaN, Inf and values >= 2^e with a finite exponent break the contract; they still never
  // produce |q| > Lf, so the sum of n contributions cannot overflow.
  for_each_target([] {
    std::vector<float> x = {kNaN, -kNaN, kInf, -kInf, FLT_MAX, -FLT_MAX, 4.0f, -4.0f, 1.0f};
    for (int world : {1, 3, 65536}) {
      for (int e : {kMin, 0, 2, kMax}) {
        const auto q = decode_payload(quantize_vec(x, static_cast<std::int16_t>(e), world));
        const std::int32_t lf = quantization_limit(world);
        for (std::int32_t v : q) EXPECT_LE(std::abs(static_cast<std::int64_t>(v)), lf);
        if (e <= 2) {
          EXPECT_EQ(q[2], lf);  // +Inf saturates up
          EXPECT_EQ(q[3], -lf);
          EXPECT_EQ(q[4], lf);
          EXPECT_EQ(q[5], -lf);
        }
      }
    }
  });
}

// ---- zeros, subnormals, huge values, NaN and Inf --------------------------------------------

TEST(CodecSpecial, Zeros) {
  for (std::size_t n = 0; n <= 70; ++n) {
    std::vector<float> x(n, 0.0f);
    for (std::size_t i = 0; i < n; i += 3) x[i] = -0.0f;
    EXPECT_EQ(block_exponent(x), kNone) << n;
  }
  // Quantize with kExponentNone writes zeros; dequantize gives +0.0.
  const std::vector<float> zeros(19, -0.0f);
  EXPECT_EQ(quantize_vec(zeros, kNone, 4), std::vector<std::byte>(4 * 19));
  std::vector<std::byte> junk(4 * 19, std::byte{0x5A});
  std::vector<float> out(19, 1.0f);
  dequantize(junk.data(), kNone, 4, out);
  for (float v : out) EXPECT_EQ(bits(v), 0u);
  // All workers zero: the max-reduced exponent stays kExponentNone, the sum is exactly +0.
  const Reduced r = simulate_allreduce(std::vector<std::vector<float>>(3, zeros));
  EXPECT_EQ(r.exponent, kNone);
  for (float v : r.out) EXPECT_EQ(bits(v), 0u);
  // Zeros inside a non-zero chunk quantize to 0 and come back as +0.0 (the sign of a zero
  // is not kept).
  const Reduced mixed = simulate_allreduce({{1.0f, -0.0f, 0.0f}, {-0.0f, -0.0f, 0.0f}});
  EXPECT_EQ(mixed.out[0], 1.0f);
  EXPECT_EQ(bits(mixed.out[1]), 0u);
  EXPECT_EQ(bits(mixed.out[2]), 0u);
}

TEST(CodecSpecial, SubnormalOnlyChunk) {
  std::mt19937 rng(5);
  std::vector<float> x(257);
  for (float& v : x) {
    const std::uint32_t mantissa =
        std::uniform_int_distribution<std::uint32_t>(1, (1u << 23) - 1)(rng);
    v = std::bit_cast<float>(mantissa | (static_cast<std::uint32_t>(rng() & 1) << 31));
    ASSERT_EQ(std::fpclassify(v), FP_SUBNORMAL);
  }
  x[0] = std::bit_cast<float>((1u << 23) - 1);  // largest subnormal
  EXPECT_EQ(block_exponent(x), kMin);
  for (int world : {1, 2, 7, 1000, 65536}) {
    const auto q = decode_payload(quantize_vec(x, kMin, world));
    std::int32_t largest = 0;
    for (std::int32_t v : q) largest = std::max(largest, std::abs(v));
    EXPECT_LE(largest, 4) << world;  // a few quanta at most
    if (world == 1) {
      EXPECT_EQ(largest, 4);
    }
  }
  // Sums of subnormal chunks stay within the bound.
  for (int world : {1, 2, 3, 64}) {
    std::vector<std::vector<float>> xs(world, x);
    for (auto& xw : xs) std::shuffle(xw.begin(), xw.end(), rng);
    expect_within_bound(xs, simulate_allreduce(xs));
  }
}

TEST(CodecSpecial, SubnormalsVanishAboveMinExponentPlusTwo) {
  const std::vector<float> x = {std::bit_cast<float>((1u << 23) - 1), -std::bit_cast<float>(1u),
                                std::bit_cast<float>(0x00400000u)};
  for (int world : {1, 2, 65536}) {
    for (int e : {kMin + 3, kMin + 10, 0, kMax}) {
      for (std::int32_t q : decode_payload(quantize_vec(x, static_cast<std::int16_t>(e), world))) {
        EXPECT_EQ(q, 0) << "world " << world << " e " << e;
      }
    }
  }
}

TEST(CodecSpecial, DequantizeProducesSubnormals) {
  std::array<std::byte, 8> payload{};
  wire::store_be32(&payload[0], 1);
  wire::store_be32(&payload[4], static_cast<std::uint32_t>(-3));
  std::array<float, 2> out{};
  dequantize(payload.data(), kMin, 1, out);
  EXPECT_EQ(std::fpclassify(out[0]), FP_SUBNORMAL);
  EXPECT_EQ(out[0], ref::dequantize_one(1, kMin, 1));
  EXPECT_EQ(std::fpclassify(out[1]), FP_SUBNORMAL);
  EXPECT_LT(out[1], 0.0f);
}

TEST(CodecSpecial, HugeValuesNearFltMax) {
  // One worker: every value up to FLT_MAX comes back finite and within the bound.
  std::mt19937 rng(6);
  std::vector<float> x = {FLT_MAX, -FLT_MAX, std::ldexp(1.0f, 127), below_power_of_two(127)};
  while (x.size() < 100) {
    x.push_back(std::bit_cast<float>(std::uniform_int_distribution<std::uint32_t>(
                    bits(std::ldexp(1.0f, 126)), bits(FLT_MAX))(rng)) *
                ((rng() & 1) ? -1.0f : 1.0f));
  }
  EXPECT_EQ(block_exponent(x), kMax);
  const Reduced one = simulate_allreduce({x});
  for (float v : one.out) EXPECT_TRUE(std::isfinite(v));
  expect_within_bound({x}, one);

  // Two workers whose exact sum exceeds FLT_MAX: +-Inf, like an fp32 add would give.
  const float big = 0.75f * FLT_MAX;
  const Reduced over = simulate_allreduce({{big, -big, FLT_MAX}, {big, -big, -FLT_MAX}});
  EXPECT_EQ(over.out[0], kInf);
  EXPECT_EQ(over.out[1], -kInf);
  EXPECT_LE(std::fabs(over.out[2]), error_bound(kMax, 2));
  // Quantization may round a sum at FLT_MAX up to Inf; the bound allows it (B > 0 at e = 128).
  std::vector<std::vector<float>> lone(1000, std::vector<float>{0.0f});
  lone[0][0] = FLT_MAX;
  EXPECT_EQ(simulate_allreduce(lone).out[0], kInf);
  expect_within_bound(lone, simulate_allreduce(lone));
  const Reduced fits = simulate_allreduce({{0.4f * FLT_MAX}, {0.4f * FLT_MAX}});
  EXPECT_TRUE(std::isfinite(fits.out[0]));
  expect_within_bound({{0.4f * FLT_MAX}, {0.4f * FLT_MAX}}, fits);

  // Many workers near FLT_MAX: finite results are within the bound, overflows only where the
  // exact sum is beyond FLT_MAX - bound.
  for (int world : {2, 3, 7}) {
    std::vector<std::vector<float>> xs(world, std::vector<float>(200));
    for (auto& xw : xs) {
      for (float& v : xw) v = uniform_below(rng, kMax) * (world > 2 ? 0.5f : 1.0f);
    }
    expect_within_bound(xs, simulate_allreduce(xs));
  }
}

TEST(CodecSpecial, NanAndInfMakeTheWholeChunkNan) {
  // Detected at every position, in the vector body and in the tail.
  for (float bad : {kNaN, -kNaN, kInf, -kInf}) {
    for (std::size_t n : {1u, 7u, 16u, 70u, 200u}) {
      for (std::size_t pos = 0; pos < n; ++pos) {
        std::vector<float> x(n, 1.0f);
        x[pos] = bad;
        ASSERT_EQ(block_exponent(x), kNonFinite) << "n " << n << " pos " << pos;
      }
    }
  }
  // One worker's NaN or Inf turns every element of the chunk into a quiet NaN for everybody.
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<std::vector<float>> x(4, std::vector<float>(33, 2.5f));
    x[2][17] = bad;
    const Reduced r = simulate_allreduce(x);
    EXPECT_EQ(r.exponent, kNonFinite);
    for (float v : r.out) {
      EXPECT_TRUE(std::isnan(v));
      EXPECT_NE(bits(v) & 0x00400000u, 0u) << "quiet NaN";
    }
  }
  // Quantizing with kExponentNonFinite writes zeros (the payload does not matter).
  EXPECT_EQ(quantize_vec(std::vector<float>{1.0f, kNaN}, kNonFinite, 2), std::vector<std::byte>(8));
}

TEST(CodecSpecial, WindowAheadProtocol) {
  // The exponent of chunk p travels in packet p, its data in packet p + W with the exponent
  // the result of packet p brought back (docs/numerics.md, "Switch path").
  constexpr int kWorld = 4;
  constexpr std::size_t kWindow = 3, kPerPacket = 64, kCount = 10 * kPerPacket + 17;
  constexpr std::size_t kChunks = (kCount + kPerPacket - 1) / kPerPacket;
  std::mt19937 rng(7);
  std::vector<std::vector<float>> data(kWorld, std::vector<float>(kCount));
  for (int w = 0; w < kWorld; ++w) {
    for (std::size_t i = 0; i < kCount; ++i) {
      const std::size_t c = i / kPerPacket;
      if (c == 2)
        data[w][i] = 0.0f;  // zeros everywhere
      else if (c == 7 && w == 3)
        data[w][i] = uniform_below(rng, 40);  // one big worker
      else
        data[w][i] = uniform_below(rng, static_cast<int>(c) * 5 - 20);
    }
  }
  data[1][5 * kPerPacket + 9] = kNaN;  // chunk 5 becomes NaN

  auto chunk = [&](std::vector<float>& v, std::size_t c) {
    const std::size_t begin = c * kPerPacket;
    return std::span<float>(v).subspan(begin, std::min(kPerPacket, kCount - begin));
  };
  std::vector<std::vector<float>> result = data;
  std::vector<std::vector<std::int16_t>> global(kWorld, std::vector<std::int16_t>(kChunks, 0));
  for (std::size_t p = 0; p < kChunks + kWindow; ++p) {
    std::int16_t max_exponent = kNone;
    std::vector<std::uint32_t> sum(kPerPacket, 0);
    std::size_t count = 0;
    for (int w = 0; w < kWorld; ++w) {
      const std::int16_t e = p < kChunks ? block_exponent(chunk(data[w], p)) : kNone;
      max_exponent = std::max(max_exponent, e);
      if (p < kWindow) continue;
      const auto x = chunk(data[w], p - kWindow);
      count = x.size();
      std::vector<std::byte> payload(4 * count);
      quantize(x, global[w][p - kWindow], kWorld, payload.data());
      for (std::size_t i = 0; i < count; ++i) sum[i] += wire::load_be32(&payload[4 * i]);
    }
    std::vector<std::byte> result_payload(4 * count);
    for (std::size_t i = 0; i < count; ++i) wire::store_be32(&result_payload[4 * i], sum[i]);
    for (int w = 0; w < kWorld; ++w) {
      if (p < kChunks) global[w][p] = max_exponent;
      if (p >= kWindow) {
        dequantize(result_payload.data(), global[w][p - kWindow], kWorld,
                   chunk(result[w], p - kWindow));
      }
    }
  }
  for (int w = 1; w < kWorld; ++w) {
    ASSERT_EQ(std::memcmp(result[w].data(), result[0].data(), kCount * 4), 0) << "worker " << w;
  }
  for (std::size_t c = 0; c < kChunks; ++c) {
    const auto out = chunk(result[0], c);
    const std::int16_t e = global[0][c];
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (c == 2) {
        ASSERT_EQ(e, kNone);
        ASSERT_EQ(bits(out[i]), 0u);
      } else if (c == 5) {
        ASSERT_EQ(e, kNonFinite);
        ASSERT_TRUE(std::isnan(out[i]));
      } else {
        ExactSum s;
        for (int w = 0; w < kWorld; ++w) s.add(chunk(data[w], c)[i]);
        ASSERT_LE(s.error_of(out[i]), error_bound(e, kWorld)) << "chunk " << c << " i " << i;
      }
    }
  }
  EXPECT_EQ(global[0][7], 40);
}

// ---- argument checks ------------------------------------------------------------------------

TEST(CodecArguments, InvalidWorldOrExponentIsAnError) {
  const std::array x{1.0f};
  std::array<std::byte, 4> buf{};
  std::array<float, 1> out{};
  auto expect_invalid = [](const std::function<void()>& f) {
    try {
      f();
      ADD_FAILURE() << "no exception";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("codec"), std::string::npos);
    }
  };
  for (int world : {0, -1, kMaxWorld + 1}) {
    expect_invalid([&] { quantize(x, 1, world, buf.data()); });
    expect_invalid([&] { dequantize(buf.data(), 1, world, out); });
    expect_invalid([&] { error_bound(1, world); });
    expect_invalid([&] { quantization_limit(world); });
  }
  for (int e : {kMin - 1, kMax + 1, -1000, 1000}) {
    const auto ee = static_cast<std::int16_t>(e);
    EXPECT_FALSE(is_valid_exponent(ee));
    expect_invalid([&] { quantize(x, ee, 2, buf.data()); });
    expect_invalid([&] { dequantize(buf.data(), ee, 2, out); });
    expect_invalid([&] { error_bound(ee, 2); });
    expect_invalid([&] { quantization_scale(ee, 2); });
  }
  expect_invalid([&] { quantization_scale(kNone, 2); });
  EXPECT_TRUE(is_valid_exponent(kNone));
  EXPECT_TRUE(is_valid_exponent(kNonFinite));
  EXPECT_TRUE(is_valid_exponent(kMin));
  EXPECT_TRUE(is_valid_exponent(kMax));
  EXPECT_FALSE(simd_target().empty());
}

}  // namespace
}  // namespace netagg::codec

// SPDX-License-Identifier: Apache-2.0
// The kernel's exact fp32 arithmetic (hls/include/netagg_hls/exact.hpp) against its definition,
// the host's reference model (host/include/netagg/exact.hpp): conversions of every special
// class and of a million random floats at random exponents, lane sums back to fp32 over the whole
// range, and the specials' join.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "netagg/exact.hpp"
#include "netagg_hls/exact.hpp"

namespace netagg::fpga {
namespace {

static_assert(kExactFractionBits == exact::kFractionBits);
static_assert(kExactMinExponent == exact::kMinExponent);
static_assert(kExactMaxExponent == exact::kMaxExponent);
static_assert(kExactExponentNone == exact::kExponentNone);

bool same(const ExactLane& kernel, const exact::Lane& host) {
  return kernel.value == host.value && kernel.special == static_cast<std::uint8_t>(host.special);
}

// Exponents worth trying for x: none, the smallest one x fits under, random ones above, and the
// ones just below it (x out of range).
std::vector<std::int16_t> exponents_for(float x, std::mt19937_64& rng) {
  std::vector<std::int16_t> out = {exact::kExponentNone, exact::kMinExponent, exact::kMaxExponent};
  const std::int16_t fit = exact::block_exponent(std::span(&x, 1));
  if (fit != exact::kExponentNone) {
    for (int d : {-2, -1, 0, 1, 23, 24, 25, 53, 54, 55})
      if (fit + d >= exact::kMinExponent && fit + d <= exact::kMaxExponent)
        out.push_back(static_cast<std::int16_t>(fit + d));
    out.push_back(static_cast<std::int16_t>(
        fit + static_cast<int>(rng() % static_cast<unsigned>(exact::kMaxExponent - fit + 1))));
  }
  return out;
}

TEST(HlsExact, EveryFloatClassConvertsAsTheReference) {
  std::mt19937_64 rng(1);
  std::vector<std::uint32_t> words = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu,
                                      0x00800000u, 0x3F800000u, 0x3FC00000u, 0x7F7FFFFFu,
                                      0x7F800000u, 0xFF800000u, 0x7F800001u, 0x7FC00000u,
                                      0xFFFFFFFFu, 0x33800000u, 0x0C000000u, 0xB3800001u};
  for (std::uint32_t w : words) {
    const float x = std::bit_cast<float>(w);
    for (std::int16_t e : exponents_for(x, rng)) {
      const exact::Lane host = exact::to_lane(x, e);
      const ExactLane kernel = exact_to_lane(w, e);
      EXPECT_TRUE(same(kernel, host)) << std::hex << w << std::dec << " at " << e;
    }
  }
}

TEST(HlsExact, MillionRandomFloatsConvertAsTheReference) {
  std::mt19937_64 rng(2);
  int compared = 0;
  for (int i = 0; i < 1000000; ++i) {
    const auto w = static_cast<std::uint32_t>(rng());
    const float x = std::bit_cast<float>(w);
    const std::vector<std::int16_t> es = exponents_for(x, rng);
    const std::int16_t e = es[rng() % es.size()];
    ASSERT_TRUE(same(exact_to_lane(w, e), exact::to_lane(x, e)))
        << std::hex << w << std::dec << " at " << e;
    ++compared;
  }
  EXPECT_EQ(compared, 1000000);
}

TEST(HlsExact, MillionRandomLaneSumsRoundAsTheReference) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    const int width = static_cast<int>(rng() % 64);
    std::int64_t v = width == 0 ? 0 : static_cast<std::int64_t>(rng() >> (64 - width));
    if (rng() % 8 == 0) v = (std::int64_t{1} << width) - 1;  // all ones: rounds up a binade
    if (rng() & 1) v = -v;
    const auto special = static_cast<std::uint8_t>(rng() % 16 == 0 ? rng() % 4 : 0);
    const std::int16_t e =
        rng() % 64 == 0
            ? exact::kExponentNone
            : static_cast<std::int16_t>(exact::kMinExponent + static_cast<int>(rng() % 226));
    const float host = exact::to_fp32({v, static_cast<exact::Special>(special)}, e);
    ASSERT_EQ(exact_to_fp32({v, special}, e), std::bit_cast<std::uint32_t>(host))
        << v << " special " << int(special) << " at " << e;
  }
}

TEST(HlsExact, AddIsTheReferencesAdd) {
  std::mt19937_64 rng(4);
  for (int i = 0; i < 100000; ++i) {
    const ExactLane a = {static_cast<std::int64_t>(rng()), static_cast<std::uint8_t>(rng() % 4)};
    const ExactLane b = {static_cast<std::int64_t>(rng()), static_cast<std::uint8_t>(rng() % 4)};
    const exact::Lane h = exact::add({a.value, static_cast<exact::Special>(a.special)},
                                     {b.value, static_cast<exact::Special>(b.special)});
    ASSERT_TRUE(same(exact_add(a, b), h));
  }
}

}  // namespace
}  // namespace netagg::fpga

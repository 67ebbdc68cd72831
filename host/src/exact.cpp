// SPDX-License-Identifier: Apache-2.0
// Exact fp32 summation: integer arithmetic only, bit by bit what an aggregator's datapath does
// (docs/numerics.md, "Exact fp32").
#include "netagg/exact.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/wire_format.hpp"

namespace netagg::exact {
// The wire's constants (formats/wire.json) are this arithmetic's.
static_assert(kFractionBits == wire::kExactFractionBits);
static_assert(kCodeOffset == wire::kExactCodeOffset);
static_assert(kMaxContributions == wire::kExactMaxContributions);

namespace {

constexpr std::uint32_t kQuietNan = 0x7FC00000u;

void check_exponent(std::int16_t e) {
  if (!is_valid_exponent(e))
    throw Error(Errc::kInvalidArgument,
                fmt::format("exact: agreed exponent {} is outside [{}, {}] and not 'none'", e,
                            kMinExponent, kMaxExponent));
}

// m / 2^s rounded to the nearest integer, ties to even.
std::uint64_t shift_right_even(std::uint64_t m, int s) {
  if (s <= 0) return m;
  if (s >= 64) return 0;  // m < 2^63 here, so m / 2^s < 1/2
  const std::uint64_t r = m >> s;
  const std::uint64_t rest = m & ((std::uint64_t{1} << s) - 1);
  const std::uint64_t half = std::uint64_t{1} << (s - 1);
  return r + ((rest > half || (rest == half && (r & 1))) ? 1 : 0);
}

}  // namespace

bool is_valid_exponent(std::int16_t e) {
  return e == kExponentNone || (e >= kMinExponent && e <= kMaxExponent);
}

std::int16_t block_exponent(std::span<const float> x) {
  float largest = 0.0f;
  for (float v : x)
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  if (largest == 0.0f) return kExponentNone;
  // largest = f * 2^k with f in [0.5, 1): 2^(k-1) <= largest < 2^k.
  int k = 0;
  std::frexp(largest, &k);
  return static_cast<std::int16_t>(std::max(k, kMinExponent));
}

Lane to_lane(float x, std::int16_t e) {
  check_exponent(e);
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const bool negative = (bits >> 31) != 0;
  const auto biased = static_cast<int>((bits >> 23) & 0xFF);
  const std::uint32_t fraction = bits & 0x7FFFFFu;
  if (biased == 0xFF) {
    if (fraction != 0) return {0, Special::kNaN};
    return {0, negative ? Special::kNegInf : Special::kPosInf};
  }
  if (biased == 0 && fraction == 0) return {};  // +-0
  if (e == kExponentNone) return {0, Special::kNaN};
  // |x| = m * 2^scale with m < 2^24.
  const std::uint64_t m = biased != 0 ? (fraction | 0x800000u) : fraction;
  const int scale = biased != 0 ? biased - 150 : -149;
  const int top = std::bit_width(m) - 1;  // 2^(top + scale) <= |x| < 2^(top + scale + 1)
  if (top + scale >= e) return {0, Special::kNaN};
  const int shift = scale + kFractionBits - e;  // |x| / 2^(e - kFractionBits) = m * 2^shift
  // top + shift <= kFractionBits - 1: a left shift stays below 2^54.
  const std::uint64_t q = shift >= 0 ? m << shift : shift_right_even(m, -shift);
  const auto value = static_cast<std::int64_t>(q);
  return {negative ? -value : value, Special::kFinite};
}

Lane add(const Lane& a, const Lane& b) {
  // Two's-complement addition (wraps instead of undefined behaviour; the width is chosen so
  // that it never has to) and the join of the specials, which is their bitwise or.
  const auto sum = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.value) +
                                             static_cast<std::uint64_t>(b.value));
  const auto special = static_cast<Special>(static_cast<std::uint8_t>(a.special) |
                                            static_cast<std::uint8_t>(b.special));
  return {sum, special};
}

float to_fp32(const Lane& lane, std::int16_t e) {
  check_exponent(e);
  switch (lane.special) {
    case Special::kPosInf:
      return std::bit_cast<float>(0x7F800000u);
    case Special::kNegInf:
      return std::bit_cast<float>(0xFF800000u);
    case Special::kNaN:
      return std::bit_cast<float>(kQuietNan);
    case Special::kFinite:
      break;
  }
  if (e == kExponentNone || lane.value == 0) return 0.0f;
  const std::uint32_t sign = lane.value < 0 ? 0x80000000u : 0u;
  // |value| as unsigned (INT64_MIN included).
  const std::uint64_t a = lane.value < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(lane.value)
                                         : static_cast<std::uint64_t>(lane.value);
  const int top = std::bit_width(a) - 1;
  int exponent = top + e - kFractionBits;  // 2^exponent <= |sum| < 2^(exponent + 1)
  std::uint32_t bits = 0;
  if (exponent >= -126) {
    // Normal: 24 significant bits, rounded once.
    std::uint64_t m = top > 23 ? shift_right_even(a, top - 23) : a << (23 - top);
    if (m == (std::uint64_t{1} << 24)) {  // rounded up to the next power of two
      m >>= 1;
      ++exponent;
    }
    if (exponent > 127) return std::bit_cast<float>(sign | 0x7F800000u);
    bits = static_cast<std::uint32_t>(exponent + 127) << 23 |
           (static_cast<std::uint32_t>(m) & 0x7FFFFFu);
  } else {
    // Subnormal: multiples of 2^-149; |sum| / 2^-149 = a * 2^(e - kFractionBits + 149). A sum
    // that rounds up to 2^-126 gives m = 2^23, the smallest normal's encoding.
    const int shift = e - kFractionBits + 149;
    const std::uint64_t m = shift >= 0 ? a << shift : shift_right_even(a, -shift);
    bits = static_cast<std::uint32_t>(m);
  }
  return std::bit_cast<float>(sign | bits);
}

std::uint8_t to_code(std::int16_t e) {
  check_exponent(e);
  return e == kExponentNone ? 0 : static_cast<std::uint8_t>(e + kCodeOffset);
}

std::optional<std::int16_t> from_code(std::uint8_t code) {
  if (code == 0) return kExponentNone;
  if (code > kMaxCode) return std::nullopt;
  return static_cast<std::int16_t>(code - kCodeOffset);
}

std::int16_t pack_exponents(std::int16_t scale, std::int16_t ahead) {
  return static_cast<std::int16_t>(
      static_cast<std::uint16_t>(to_code(scale) << 8 | to_code(ahead)));
}

std::int64_t to_wire(const Lane& lane) {
  switch (lane.special) {
    case Special::kPosInf:
      return INT64_MAX;
    case Special::kNegInf:
      return INT64_MIN + 1;
    case Special::kNaN:
      return INT64_MIN;
    case Special::kFinite:
      break;
  }
  return lane.value;
}

Lane from_wire(std::int64_t v) {
  if (v == INT64_MAX) return {0, Special::kPosInf};
  if (v == INT64_MIN + 1) return {0, Special::kNegInf};
  if (v == INT64_MIN) return {0, Special::kNaN};
  return {v, Special::kFinite};
}

void sum(std::span<const std::span<const float>> contributions, std::span<float> out) {
  if (contributions.size() > static_cast<std::size_t>(kMaxContributions))
    throw Error(Errc::kInvalidArgument,
                fmt::format("exact: {} contributions, at most {} fit the {}-bit lanes",
                            contributions.size(), kMaxContributions, kAccumulatorBits));
  std::int16_t e = kExponentNone;
  for (const auto& c : contributions) {
    if (c.size() != out.size())
      throw Error(Errc::kInvalidArgument,
                  fmt::format("exact: a contribution of {} elements for a sum of {}", c.size(),
                              out.size()));
    e = std::max(e, block_exponent(c));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    Lane acc;
    for (const auto& c : contributions) acc = add(acc, to_lane(c[i], e));
    out[i] = to_fp32(acc, e);
  }
}

}  // namespace netagg::exact

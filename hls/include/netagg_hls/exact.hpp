// SPDX-License-Identifier: Apache-2.0
// The exact fp32 arithmetic for the kernel (docs/numerics.md, "Exact fp32"), on raw words and
// with loops of fixed trip count, bit for bit the host's reference model
// (host/include/netagg/exact.hpp, which defines it; tests/hls/hls_exact_test.cpp compares the
// two):
//
//   exact_to_lane   an fp32 word at the agreed exponent e: a 64-bit lane, RNE(x * 2^(54 - e)),
//                   and its special (finite, +Inf, -Inf, NaN; |x| >= 2^e poisons the lane: NaN)
//   exact_add       lanes added in two's complement, specials joined by a bitwise or
//   exact_to_fp32   a lane sum back to an fp32 word, rounded once to nearest even
//
// Kernel code: C++14.
#ifndef NETAGG_HLS_EXACT_HPP
#define NETAGG_HLS_EXACT_HPP

#include <stdint.h>

namespace netagg {
namespace fpga {

constexpr int kExactFractionBits = 54;
constexpr int kExactMinExponent = -97;
constexpr int kExactMaxExponent = 128;
constexpr int16_t kExactExponentNone = -32768;

// Specials as the host's netagg::exact::Special: or-ing two gives their fp32 join.
constexpr uint8_t kExactFinite = 0, kExactPosInf = 1, kExactNegInf = 2, kExactNan = 3;
constexpr uint32_t kExactQuietNan = 0x7FC00000u;

struct ExactLane {
  int64_t value;
  uint8_t special;
};

// Bits needed for m (0 for 0): the position of the leading one plus one.
inline int exact_bit_width(uint64_t m) {
#pragma HLS INLINE
  int width = 0;
  for (int i = 0; i < 64; ++i) {
#pragma HLS UNROLL
    if ((m >> i) & 1u) width = i + 1;
  }
  return width;
}

// m / 2^s rounded to nearest, ties to even (s >= 0).
inline uint64_t exact_shift_right_even(uint64_t m, int s) {
#pragma HLS INLINE
  if (s == 0) return m;
  if (s >= 64) return 0;  // m < 2^63 wherever this is used
  const uint64_t r = m >> s;
  const uint64_t rest = m & ((uint64_t(1) << s) - 1u);
  const uint64_t half = uint64_t(1) << (s - 1);
  return r + ((rest > half || (rest == half && (r & 1u))) ? 1u : 0u);
}

inline ExactLane exact_to_lane(uint32_t x, int16_t e) {
#pragma HLS INLINE
  ExactLane lane = {0, kExactFinite};
  const bool negative = (x >> 31) != 0;
  const int biased = static_cast<int>((x >> 23) & 0xFFu);
  const uint32_t fraction = x & 0x7FFFFFu;
  if (biased == 0xFF) {
    lane.special = fraction != 0 ? kExactNan : (negative ? kExactNegInf : kExactPosInf);
    return lane;
  }
  if (biased == 0 && fraction == 0) return lane;  // +-0
  if (e == kExactExponentNone) {
    lane.special = kExactNan;  // nonzero where every contribution agreed on zeros
    return lane;
  }
  const uint64_t m = biased != 0 ? (fraction | 0x800000u) : fraction;
  const int scale = biased != 0 ? biased - 150 : -149;  // |x| = m * 2^scale
  const int top = exact_bit_width(m) - 1;
  if (top + scale >= e) {  // |x| >= 2^e
    lane.special = kExactNan;
    return lane;
  }
  const int shift = scale + kExactFractionBits - e;
  const uint64_t q = shift >= 0 ? m << shift : exact_shift_right_even(m, -shift);
  lane.value = negative ? -static_cast<int64_t>(q) : static_cast<int64_t>(q);
  return lane;
}

inline ExactLane exact_add(ExactLane a, ExactLane b) {
#pragma HLS INLINE
  ExactLane s;
  s.value = static_cast<int64_t>(static_cast<uint64_t>(a.value) + static_cast<uint64_t>(b.value));
  s.special = static_cast<uint8_t>(a.special | b.special);
  return s;
}

inline uint32_t exact_to_fp32(ExactLane lane, int16_t e) {
#pragma HLS INLINE
  if (lane.special == kExactPosInf) return 0x7F800000u;
  if (lane.special == kExactNegInf) return 0xFF800000u;
  if (lane.special == kExactNan) return kExactQuietNan;
  if (e == kExactExponentNone || lane.value == 0) return 0;
  const uint32_t sign = lane.value < 0 ? 0x80000000u : 0u;
  const uint64_t a = lane.value < 0 ? uint64_t(0) - static_cast<uint64_t>(lane.value)
                                    : static_cast<uint64_t>(lane.value);
  const int top = exact_bit_width(a) - 1;
  int exponent = top + e - kExactFractionBits;  // 2^exponent <= |sum| < 2^(exponent + 1)
  if (exponent >= -126) {
    uint64_t m = top > 23 ? exact_shift_right_even(a, top - 23) : a << (23 - top);
    if (m == (uint64_t(1) << 24)) {  // rounded up into the next binade
      m >>= 1;
      ++exponent;
    }
    if (exponent > 127) return sign | 0x7F800000u;
    return sign | (static_cast<uint32_t>(exponent + 127) << 23) |
           (static_cast<uint32_t>(m) & 0x7FFFFFu);
  }
  // Subnormal: multiples of 2^-149 (a sum that rounds up to 2^-126 gives the smallest normal).
  const int shift = e - kExactFractionBits + 149;
  const uint64_t m = shift >= 0 ? a << shift : exact_shift_right_even(a, -shift);
  return sign | static_cast<uint32_t>(m);
}

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_EXACT_HPP

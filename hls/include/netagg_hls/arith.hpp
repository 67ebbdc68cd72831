// SPDX-License-Identifier: Apache-2.0
// The aggregator's arithmetic (docs/fpga-aggregator.md, "Arithmetic and summation order"),
// on raw 32-bit words so that C simulation and hardware agree bit for bit:
//
//   fp32_add      IEEE 754 binary32 addition, round to nearest even, subnormals kept; NaNs as
//                 x86 SSE addss gives them (a NaN first operand quieted, else a NaN second
//                 operand quieted, else inf - inf = 0xFFC00000). Integer logic only: Xilinx's
//                 floating-point cores flush subnormals, so the kernel does not use `float`.
//   bf16          widening is exact (the top half of an fp32); narrowing rounds to nearest even,
//                 a NaN stays NaN (quieted).
//   tree_reduce   PANAMA's adder tree over the ports of one cycle, lanes and element type as
//                 template parameters.
// Kernel code: C++14.
#ifndef NETAGG_HLS_ARITH_HPP
#define NETAGG_HLS_ARITH_HPP

#include <stdint.h>

namespace netagg {
namespace fpga {

constexpr uint32_t kFp32SignMask = 0x80000000u;
constexpr uint32_t kFp32QuietBit = 0x00400000u;
constexpr uint32_t kFp32DefaultNan = 0xFFC00000u;  // x86's "real indefinite"

inline bool fp32_is_nan(uint32_t a) { return (a & 0x7FFFFFFFu) > 0x7F800000u; }

inline uint32_t fp32_add(uint32_t a, uint32_t b) {
#pragma HLS INLINE
  if (fp32_is_nan(a)) return a | kFp32QuietBit;
  if (fp32_is_nan(b)) return b | kFp32QuietBit;
  const bool a_inf = (a & 0x7FFFFFFFu) == 0x7F800000u;
  const bool b_inf = (b & 0x7FFFFFFFu) == 0x7F800000u;
  if (a_inf && b_inf && ((a ^ b) & kFp32SignMask)) return kFp32DefaultNan;
  if (a_inf) return a;
  if (b_inf) return b;

  // |big| >= |small|: the bit patterns of finite magnitudes order like their values.
  const bool swap = (b & 0x7FFFFFFFu) > (a & 0x7FFFFFFFu);
  const uint32_t big = swap ? b : a;
  const uint32_t small = swap ? a : b;
  const uint32_t sign = big & kFp32SignMask;
  int exp_big = static_cast<int>((big >> 23) & 0xFF);
  int exp_small = static_cast<int>((small >> 23) & 0xFF);
  uint32_t sig_big = big & 0x7FFFFFu;
  uint32_t sig_small = small & 0x7FFFFFu;
  if (exp_big != 0)
    sig_big |= 0x800000u;
  else
    exp_big = 1;  // subnormal: exponent 1, no hidden bit
  if (exp_small != 0)
    sig_small |= 0x800000u;
  else
    exp_small = 1;

  // Three extra bits below the significand: guard, round and a sticky bit that keeps whether
  // anything nonzero was shifted out (enough for round to nearest even, see Goldberg 1991).
  const uint32_t x = sig_big << 3;  // < 2^27
  uint32_t y = sig_small << 3;
  const int shift = exp_big - exp_small;
  if (shift >= 27) {
    y = y != 0 ? 1u : 0u;
  } else if (shift > 0) {
    const uint32_t lost = y & ((1u << shift) - 1u);
    y = (y >> shift) | (lost != 0 ? 1u : 0u);
  }

  int exp = exp_big;
  uint32_t s;
  if (((a ^ b) & kFp32SignMask) == 0) {
    s = x + y;
    if (s >> 27) {  // carry out: one position right, keeping the sticky bit
      s = (s >> 1) | (s & 1u);
      ++exp;
    }
  } else {
    s = x - y;
    if (s == 0) return 0;  // x + (-x) = +0 when rounding to nearest
  normalize:
    for (int i = 0; i < 26; ++i) {  // leading-zero shift; stops at the subnormal exponent
#pragma HLS UNROLL
      if ((s >> 26) != 0 || exp == 1) break;
      s <<= 1;
      --exp;
    }
  }

  uint32_t m = s >> 3;
  const uint32_t rest = s & 7u;
  if (rest > 4u || (rest == 4u && (m & 1u))) ++m;
  if (m >> 24) {  // rounding carried into a new bit
    m >>= 1;
    ++exp;
  }
  if (exp >= 255) return sign | 0x7F800000u;
  if ((m >> 23) == 0) return sign | m;  // subnormal (exp is 1 here)
  return sign | (static_cast<uint32_t>(exp) << 23) | (m & 0x7FFFFFu);
}

inline uint32_t bf16_to_fp32(uint16_t h) { return static_cast<uint32_t>(h) << 16; }

inline uint16_t fp32_to_bf16(uint32_t f) {
#pragma HLS INLINE
  if (fp32_is_nan(f)) return static_cast<uint16_t>((f >> 16) | 0x0040u);
  const uint32_t rounded = f + 0x7FFFu + ((f >> 16) & 1u);  // carries into the exponent as needed
  return static_cast<uint16_t>(rounded >> 16);
}

// Element types of the adder tree: how two 32-bit words add.
struct Int32Elem {
  static uint32_t add(uint32_t a, uint32_t b) { return a + b; }  // wraps, as the switch
};
struct Fp32Elem {  // fp32 and bf16 (accumulated as fp32)
  static uint32_t add(uint32_t a, uint32_t b) { return fp32_add(a, b); }
};

// PANAMA's adder tree over the leaves of one cycle: leaf p is port p's beat, present[p] says
// whether port p takes part. Pairs add lower port first ((p0 + p1) + (p2 + p3)); a leaf or
// subtree whose partner is missing passes through its level unchanged. Leaves must be a power of
// two (ports padded with absent leaves). Returns false (out untouched) if no leaf is present.
template <class Elem, int Lanes, int Leaves>
bool tree_reduce(const uint32_t in[Leaves][Lanes], const bool present[Leaves],
                 uint32_t out[Lanes]) {
#pragma HLS INLINE
  static_assert(Leaves >= 1 && (Leaves & (Leaves - 1)) == 0, "leaves: a power of two");
  uint32_t v[Leaves][Lanes];
#pragma HLS ARRAY_PARTITION variable = v complete dim = 0
  bool m[Leaves];
  for (int p = 0; p < Leaves; ++p) {
#pragma HLS UNROLL
    m[p] = present[p];
    for (int l = 0; l < Lanes; ++l) v[p][l] = in[p][l];
  }
levels:
  for (int width = Leaves; width > 1; width /= 2) {
#pragma HLS UNROLL
    for (int i = 0; i < width / 2; ++i) {
#pragma HLS UNROLL
      const bool left = m[2 * i], right = m[2 * i + 1];
      for (int l = 0; l < Lanes; ++l) {
#pragma HLS UNROLL
        v[i][l] = left && right ? Elem::add(v[2 * i][l], v[2 * i + 1][l])
                                : (right ? v[2 * i + 1][l] : v[2 * i][l]);
      }
      m[i] = left || right;
    }
  }
  if (!m[0]) return false;
  for (int l = 0; l < Lanes; ++l) {
#pragma HLS UNROLL
    out[l] = v[0][l];
  }
  return true;
}

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_ARITH_HPP

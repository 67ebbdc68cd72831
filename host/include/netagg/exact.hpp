// SPDX-License-Identifier: Apache-2.0
// Exact fp32 summation: the arithmetic of netagg's order-independent fp32 mode, as a reference
// model. Every fp32 element is turned into a 64-bit two's-complement integer at a scale all
// contributions of a chunk share (taken from the chunk's agreed block exponent), integers are
// added, and the sum becomes fp32 once, rounded to nearest even. Integer addition is
// associative, so every arrival order, adder grouping and tree shape gives the same bits.
// docs/numerics.md ("Exact fp32") derives the width and the error bound; tests/host/exact_test.cpp
// proves them. This is the definition the aggregators' implementations are checked against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace netagg::exact {

// The least significant bit of a lane is 2^(e - kFractionBits) for the agreed exponent e: an
// element |x| < 2^e is at most 2^kFractionBits lanes' units.
inline constexpr int kFractionBits = 54;
// Bits of a lane's integer.
inline constexpr int kAccumulatorBits = 64;
// The most contributions one sum may hold without overflow: kMaxContributions * 2^54 < 2^63.
inline constexpr int kMaxContributions = 511;
// Real agreed exponents lie in [kMinExponent, kMaxExponent]; besides them only kExponentNone
// (every finite element of the chunk is +-0) is valid. Every finite float is below 2^128. Below
// 2^-97 the lanes' unit is at most 2^-151, finer than the smallest subnormal: every element of
// such a chunk is converted exactly.
inline constexpr int kMinExponent = -97;
inline constexpr int kMaxExponent = 128;
inline constexpr std::int16_t kExponentNone = INT16_MIN;

// What a lane holds besides its integer: the IEEE specials, joined as fp32 addition joins them
// (NaN absorbs everything, +Inf and -Inf make NaN). The join is associative and commutative.
// kNaN also marks an element outside the agreed range (|x| >= 2^e): a contract broken by a
// worker poisons its lane instead of giving a wrong sum.
enum class Special : std::uint8_t { kFinite = 0, kPosInf = 1, kNegInf = 2, kNaN = 3 };

struct Lane {
  std::int64_t value = 0;
  Special special = Special::kFinite;
  friend bool operator==(const Lane&, const Lane&) = default;
};

// True for kExponentNone and [kMinExponent, kMaxExponent].
bool is_valid_exponent(std::int16_t e);

// The chunk's block exponent over its finite elements: the smallest e with max|x| < 2^e, raised
// to kMinExponent if smaller; kExponentNone if every finite element is +-0 (NaN and +-Inf do not
// count: they travel as specials, element by element).
std::int16_t block_exponent(std::span<const float> x);

// One element as a lane at the agreed exponent e: RNE(x * 2^(kFractionBits - e)) (exact for
// every element whose unit in the last place is at least the lane's unit, in particular for
// every element when e <= -95); +-Inf and NaN as their specials; |x| >= 2^e, or a nonzero x
// when e is kExponentNone, as kNaN. Throws netagg::Error(kInvalidArgument) for an invalid e.
Lane to_lane(float x, std::int16_t e);

// a + b: the integers added, the specials joined. Associative and commutative; no overflow
// while at most kMaxContributions lanes of one exponent are added.
Lane add(const Lane& a, const Lane& b);

// The lane's value as fp32: value * 2^(e - kFractionBits) rounded once to nearest even
// (subnormal results rounded at the subnormal grid, results beyond FLT_MAX to +-Inf with the
// sign of the sum); a zero sum gives +0.0; specials give +-Inf or the quiet NaN 0x7FC00000. For
// e == kExponentNone a finite lane gives +0.0. Throws netagg::Error(kInvalidArgument) for an
// invalid e.
float to_fp32(const Lane& lane, std::int16_t e);

// ---- On the wire (dtype fp32_exact, docs/exact-fp32.md) -------------------------------------
// An exponent as an 8-bit code: 0 for kExponentNone, e + kCodeOffset for e in [kMinExponent,
// kMaxExponent] (1..226); codes order as exponents do.
inline constexpr int kCodeOffset = 98;
inline constexpr int kMaxCode = kMaxExponent + kCodeOffset;
// Throws netagg::Error(kInvalidArgument) for an invalid e.
std::uint8_t to_code(std::int16_t e);
// nullopt for a code above kMaxCode.
std::optional<std::int16_t> from_code(std::uint8_t code);
// The header's exponent field: the scale of this packet's data in the high byte, the sender's
// exponent of the chunk it announces in the low byte. The signed 16-bit maximum of fields with
// one scale is the field of the maximum announced exponent.
std::int16_t pack_exponents(std::int16_t scale, std::int16_t ahead);
inline std::uint8_t scale_code(std::int16_t field) {
  return static_cast<std::uint8_t>(static_cast<std::uint16_t>(field) >> 8);
}
inline std::uint8_t ahead_code(std::int16_t field) {
  return static_cast<std::uint8_t>(static_cast<std::uint16_t>(field) & 0xFFu);
}

// A lane as dtype exact_lanes carries it: the integer, or for a special one of the values no
// sum reaches (INT64_MAX +Inf, INT64_MIN + 1 -Inf, INT64_MIN NaN).
std::int64_t to_wire(const Lane& lane);
Lane from_wire(std::int64_t v);

// The whole path for n contributions of one chunk: out[i] = to_fp32(sum over w of
// to_lane(x[w][i], e)), with e the maximum of the contributions' block exponents. Throws
// netagg::Error(kInvalidArgument) if the contributions differ in length or there are more than
// kMaxContributions.
void sum(std::span<const std::span<const float>> contributions, std::span<float> out);

}  // namespace netagg::exact

// Codecs between the caller's elements and payload bytes (big-endian on the wire).
// Block floating point (SwitchML): fp32 -> int32 with one exponent per chunk, so that an
// integer aggregator (switch) can sum n workers' chunks without overflow.
// docs/numerics.md states the error bound; tests/host/codec_test.cpp proves it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "netagg/wire.hpp"

namespace netagg::codec {

// Exponents are clamped to this range so the scale INT32_MAX / (n * 2^e) stays a normal float.
inline constexpr int kMinExponent = -94;
inline constexpr int kMaxExponent = 128;

// The chunk's block exponent: the smallest e with max|x| < 2^e, clamped to
// [kMinExponent, kMaxExponent]; wire::kExponentNone if every element is +-0;
// wire::kExponentNonFinite if any element is NaN or +-Inf.
std::int16_t block_exponent(std::span<const float> x);

// Quantizes x with the (max-reduced) block exponent e for `world` workers:
// q = clamp(round_half_even(x * INT32_MAX / (world * 2^e)), -L, L), L = INT32_MAX / world,
// written as big-endian int32 to out[0 .. 4*x.size()). e must be a real exponent (not None /
// NonFinite): for None every element is zero, write zeros instead.
void quantize(std::span<const float> x, std::int16_t e, int world, std::byte* out);

// Inverse of quantize for the summed chunk: out[i] = q[i] * (world * 2^e) / INT32_MAX.
// For e == kExponentNone, zeros; for e == kExponentNonFinite, quiet NaNs.
void dequantize(const std::byte* in, std::int16_t e, int world, std::span<float> out);

// Absolute error bound per element of dequantize(sum of quantize(x_w)) against the exact sum,
// for block exponent e and `world` workers (docs/numerics.md derives it).
double error_bound(std::int16_t e, int world);

// Plain big-endian copies, for int32 and fp32 payloads.
void store_be(std::span<const std::int32_t> x, std::byte* out);
void store_be(std::span<const float> x, std::byte* out);
void load_be(const std::byte* in, std::span<std::int32_t> out);
void load_be(const std::byte* in, std::span<float> out);

}  // namespace netagg::codec

// SPDX-License-Identifier: Apache-2.0
// Codecs between the caller's elements and payload bytes (big-endian on the wire).
// Block floating point (SwitchML): fp32 -> int32 with one exponent per chunk, so that an
// integer aggregator (switch) can sum n workers' chunks without overflow.
// docs/numerics.md states the error bound; tests/host/codec_test.cpp proves it.
//
// The kernels are vectorized with Highway and dispatched at run time (SSSE3, SSE4, AVX2,
// AVX-512, or a portable fallback); every target gives bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "netagg/wire.hpp"

namespace netagg::codec {

// Real block exponents lie in [kMinExponent, kMaxExponent]; the only other values are
// wire::kExponentNone and wire::kExponentNonFinite. kMaxExponent = 128 because every finite
// float is < 2^128. kMinExponent = -97 is the smallest e whose scale (below) is finite for
// world 1: there the scale is (2^31 - 128) * 2^97 = FLT_MAX exactly. For every world in
// [1, kMaxWorld] and every e in range the scale is a finite normal float.
inline constexpr int kMinExponent = -97;
inline constexpr int kMaxExponent = 128;

// Worker ranks are 16 bits on the wire.
inline constexpr int kMaxWorld = 65536;

// True for kExponentNone, kExponentNonFinite and [kMinExponent, kMaxExponent].
bool is_valid_exponent(std::int16_t e);

// The chunk's block exponent: the smallest e with max|x| < 2^e, raised to kMinExponent if
// smaller; wire::kExponentNone if every element is +-0 (or x is empty);
// wire::kExponentNonFinite if any element is NaN or +-Inf.
std::int16_t block_exponent(std::span<const float> x);

// The largest magnitude a quantized element can have for `world` workers:
// Lf = floor(INT32_MAX / world) rounded down to fp32 precision, so world * Lf <= INT32_MAX.
std::int32_t quantization_limit(int world);

// The scale of quantize: Lf * 2^-e (the SwitchML scale INT32_MAX / (world * 2^e) with the
// numerator rounded down to Lf). Exact as a float. e must be in [kMinExponent, kMaxExponent].
float quantization_scale(std::int16_t e, int world);

// Quantizes x with the (max-reduced) block exponent e for `world` workers:
// q = clamp(round_half_even(fl32(x * scale)), -Lf, Lf), written as big-endian int32 to
// out[0 .. 4*x.size()). The clamp never acts when |x| < 2^e (true when e >= block_exponent(x));
// it only keeps out-of-contract inputs (|x| >= 2^e, Inf, NaN) from overflowing the sum.
// For e == kExponentNone or kExponentNonFinite writes zeros: the result is then determined by
// the exponent alone. Throws netagg::Error(kInvalidArgument) for an invalid e or world.
void quantize(std::span<const float> x, std::int16_t e, int world, std::byte* out);

// Inverse of quantize for the summed chunk: out[i] = fl32(fl64(q[i] * fl64(2^e / Lf))).
// For e == kExponentNone, +0.0; for e == kExponentNonFinite, quiet NaNs.
// Throws netagg::Error(kInvalidArgument) for an invalid e or world.
void dequantize(const std::byte* in, std::int16_t e, int world, std::span<float> out);

// Absolute error bound per element of dequantize(sum of quantize(x_w)) against the exact sum,
// for block exponent e and `world` workers (docs/numerics.md derives it): 0 for
// kExponentNone, +infinity for kExponentNonFinite.
double error_bound(std::int16_t e, int world);

// Plain big-endian copies, for int32 and fp32 payloads.
void store_be(std::span<const std::int32_t> x, std::byte* out);
void store_be(std::span<const float> x, std::byte* out);
void load_be(const std::byte* in, std::span<std::int32_t> out);
void load_be(const std::byte* in, std::span<float> out);

// Name of the instruction set the kernels dispatch to on this machine (e.g. "AVX2").
std::string_view simd_target();

}  // namespace netagg::codec

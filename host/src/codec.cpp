// SPDX-License-Identifier: Apache-2.0
// Block floating point codec and big-endian copies, vectorized with Highway.
//
// This file is compiled once per SIMD target by foreach_target.h (it re-includes itself);
// HWY_DYNAMIC_DISPATCH picks the best target the CPU supports at run time. Quantize,
// dequantize and the copies run their tail through the same vector code on a zero-padded copy
// (the max of block_exponent does not care about order), so results depend neither on the
// length nor on the target (tests/host/codec_test.cpp checks this for every target).

#include "netagg/codec.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "netagg/error.hpp"

// foreach_target.h includes this file again once per target. The path is relative to
// host/include (on the include path); __FILE__ would expand inside foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/codec.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace netagg::codec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// HWY_SCALAR (the fallback for CPUs without SSSE3 when the compiler cannot build HWY_EMU128)
// has one-lane vectors and no byte vectors: go through a 32-bit word.
template <class D>
HWY_INLINE hn::Vec<D> LoadNative32(D d, const uint8_t* p) {
  hn::TFromD<D> value;
  std::memcpy(&value, p, 4);
  return hn::Set(d, value);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadBe32(D d, const uint8_t* p) {
  uint32_t word;
  std::memcpy(&word, p, 4);
  return hn::Set(d, std::bit_cast<hn::TFromD<D>>(__builtin_bswap32(word)));
}

template <class D>
HWY_INLINE void StoreBe32(D d, hn::Vec<D> v, uint8_t* p) {
  const uint32_t word = __builtin_bswap32(std::bit_cast<uint32_t>(hn::GetLane(v)));
  (void)d;
  std::memcpy(p, &word, 4);
}

// Highway 1.0.3's scalar DemoteTo turns +-Inf and every overflow into +-FLT_MAX; the C++
// conversion rounds like the x86 instruction (overflow to +-Inf).
template <class DF, class V>
HWY_INLINE hn::Vec<DF> DemoteToFloat(DF df, V v) {
  return hn::Set(df, static_cast<float>(hn::GetLane(v)));
}
#else
template <class DF, class V>
HWY_INLINE hn::Vec<DF> DemoteToFloat(DF df, V v) {
  return hn::DemoteTo(df, v);
}

// Byte indices that reverse the four bytes of every 32-bit lane. TableLookupBytes works
// within 128-bit blocks, hence the "& 15".
template <class D8>
HWY_INLINE hn::Vec<D8> ByteSwap32Indices(D8 d8) {
  return hn::And(hn::Xor(hn::Iota(d8, 0), hn::Set(d8, uint8_t{3})), hn::Set(d8, uint8_t{15}));
}

template <class D>
HWY_INLINE hn::Vec<D> LoadNative32(D d, const uint8_t* p) {
  return hn::BitCast(d, hn::LoadU(hn::Repartition<uint8_t, D>(), p));
}

// Big-endian bytes -> lanes of 32-bit values in host order: one load, one byte shuffle.
template <class D>
HWY_INLINE hn::Vec<D> LoadBe32(D d, const uint8_t* p) {
  const hn::Repartition<uint8_t, D> d8;
  return hn::BitCast(d, hn::TableLookupBytes(hn::LoadU(d8, p), ByteSwap32Indices(d8)));
}

template <class D>
HWY_INLINE void StoreBe32(D d, hn::Vec<D> v, uint8_t* p) {
  const hn::Repartition<uint8_t, D> d8;
  (void)d;
  hn::StoreU(hn::TableLookupBytes(hn::BitCast(d8, v), ByteSwap32Indices(d8)), d8, p);
}
#endif

// Runs `body(in, out)` on `lanes` elements at a time, then once more on a zero-padded copy of
// the remaining elements, so the tail goes through exactly the same instructions. An element
// is 4 bytes on both sides; pointers are float* or uint8_t* (payload bytes, any alignment).
template <typename In, typename Out, class Body>
HWY_INLINE void ForEachVector(const In* in, size_t n, size_t lanes, Out* out, Body body) {
  constexpr size_t kIn = 4 / sizeof(In), kOut = 4 / sizeof(Out);  // array units per element
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) body(in + i * kIn, out + i * kOut);
  const size_t rest = n - i;
  if (rest == 0) return;
  HWY_ALIGN In in_pad[HWY_MAX_BYTES / sizeof(In)] = {};
  HWY_ALIGN Out out_pad[HWY_MAX_BYTES / sizeof(Out)];
  std::memcpy(in_pad, in + i * kIn, rest * 4);
  body(in_pad, out_pad);
  std::memcpy(out + i * kOut, out_pad, rest * 4);
}

// q = clamp(NearestInt(x * scale), -limit, limit) as big-endian int32.
void QuantizeKernel(const float* x, size_t n, float scale, int32_t limit, uint8_t* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const auto vscale = hn::Set(df, scale);
  const auto vmax = hn::Set(di, limit);
  const auto vmin = hn::Set(di, -limit);
  ForEachVector(x, n, hn::Lanes(df), out, [&](const float* in, uint8_t* o) {
    // NearestInt rounds half to even (the MXCSR default) and saturates Inf and huge values.
    auto q = hn::NearestInt(hn::Mul(hn::LoadU(df, in), vscale));
    q = hn::Min(hn::Max(q, vmin), vmax);
    StoreBe32(di, q, o);
  });
}

// out = float(double(q) * factor) for big-endian int32 q; the arithmetic is in double lanes.
void DequantizeKernel(const uint8_t* in, size_t n, double factor, float* out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const hn::Rebind<float, decltype(dd)> df;
  const auto vfactor = hn::Set(dd, factor);
  ForEachVector(in, n, hn::Lanes(dd), out, [&](const uint8_t* i, float* o) {
    const auto q = LoadBe32(di, i);
    hn::StoreU(DemoteToFloat(df, hn::Mul(hn::PromoteTo(dd, q), vfactor)), df, o);
  });
}

// max over i of (bits(x[i]) & 0x7FFFFFFF): the bit pattern of max|x| when nothing is NaN, and
// >= 0x7F800000 exactly when some element is NaN or Inf.
uint32_t MaxAbsBitsKernel(const float* x, size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t lanes = hn::Lanes(df);
  const auto abs_mask = hn::Set(du, 0x7FFFFFFFu);
  const auto abs_bits = [&](const float* p) {
    return hn::And(hn::BitCast(du, hn::LoadU(df, p)), abs_mask);
  };
  // Four independent accumulators hide the latency of Max.
  auto m0 = hn::Zero(du), m1 = hn::Zero(du), m2 = hn::Zero(du), m3 = hn::Zero(du);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    m0 = hn::Max(m0, abs_bits(x + i));
    m1 = hn::Max(m1, abs_bits(x + i + lanes));
    m2 = hn::Max(m2, abs_bits(x + i + 2 * lanes));
    m3 = hn::Max(m3, abs_bits(x + i + 3 * lanes));
  }
  auto m = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
  for (; i + lanes <= n; i += lanes) m = hn::Max(m, abs_bits(x + i));
  uint32_t result = hn::GetLane(hn::MaxOfLanes(du, m));
  for (; i < n; ++i) result = std::max(result, std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu);
  return result;
}

// Reverses the bytes of n 32-bit words (host order <-> big-endian).
void ByteSwap32Kernel(const uint8_t* in, size_t n, uint8_t* out) {
  const hn::ScalableTag<uint32_t> du;
  ForEachVector(in, n, hn::Lanes(du), out,
                [&](const uint8_t* i, uint8_t* o) { StoreBe32(du, LoadNative32(du, i), o); });
}

int64_t TargetKernel() { return HWY_TARGET; }

}  // namespace netagg::codec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace netagg::codec {

HWY_EXPORT(QuantizeKernel);
HWY_EXPORT(DequantizeKernel);
HWY_EXPORT(MaxAbsBitsKernel);
HWY_EXPORT(ByteSwap32Kernel);
HWY_EXPORT(TargetKernel);

namespace {

constexpr std::uint32_t kInfBits = 0x7F800000u;

void check_world(int world) {
  if (world < 1 || world > kMaxWorld) {
    throw Error(Errc::kInvalidArgument, "codec: world size " + std::to_string(world) +
                                            " outside [1, " + std::to_string(kMaxWorld) + "]");
  }
}

void check_exponent(std::int16_t e) {
  if (!is_valid_exponent(e)) {
    throw Error(Errc::kInvalidArgument, "codec: block exponent " + std::to_string(e) +
                                            " is neither in [" + std::to_string(kMinExponent) +
                                            ", " + std::to_string(kMaxExponent) +
                                            "] nor kExponentNone / kExponentNonFinite");
  }
}

bool is_special(std::int16_t e) {
  return e == wire::kExponentNone || e == wire::kExponentNonFinite;
}

// Smallest e with a < 2^e for the positive finite float with bit pattern `bits`.
int exponent_above(std::uint32_t bits) {
  const int biased = static_cast<int>(bits >> 23);
  if (biased == 0) {
    // Subnormal: a = m * 2^-149 with 1 <= m < 2^23, so 2^(w-1) <= m < 2^w for w = bit_width(m).
    return static_cast<int>(std::bit_width(bits)) - 149;
  }
  // Normal: 2^(biased-127) <= a < 2^(biased-126).
  return biased - 126;
}

// The kernels see payloads as uint8_t (any alignment).
const std::uint8_t* as_bytes(const void* p) { return static_cast<const std::uint8_t*>(p); }
std::uint8_t* as_bytes(void* p) { return static_cast<std::uint8_t*>(p); }

void byte_swap(const void* in, std::size_t words, void* out) {
  if (words == 0) return;
  HWY_DYNAMIC_DISPATCH(ByteSwap32Kernel)(as_bytes(in), words, as_bytes(out));
}

}  // namespace

bool is_valid_exponent(std::int16_t e) {
  return is_special(e) || (e >= kMinExponent && e <= kMaxExponent);
}

std::int16_t block_exponent(std::span<const float> x) {
  const std::uint32_t bits = HWY_DYNAMIC_DISPATCH(MaxAbsBitsKernel)(x.data(), x.size());
  if (bits >= kInfBits) return wire::kExponentNonFinite;
  if (bits == 0) return wire::kExponentNone;
  return static_cast<std::int16_t>(std::max(exponent_above(bits), kMinExponent));
}

namespace {

// 2^k for k in [-1022, 1023], without a libm call (these run once per packet).
double pow2(int k) { return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52); }

std::int32_t limit_unchecked(int world) {
  const auto limit = static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max() / world);
  // Round down to 24 significant bits, so the limit is exactly a float.
  const int drop = std::max(0, static_cast<int>(std::bit_width(limit)) - 24);
  return static_cast<std::int32_t>((limit >> drop) << drop);
}

// Exact: the limit has at most 24 significant bits and the result is a normal float.
float scale_unchecked(std::int16_t e, std::int32_t limit) {
  return static_cast<float>(limit * pow2(-e));
}

}  // namespace

std::int32_t quantization_limit(int world) {
  check_world(world);
  return limit_unchecked(world);
}

float quantization_scale(std::int16_t e, int world) {
  check_world(world);
  if (e < kMinExponent || e > kMaxExponent) {
    throw Error(Errc::kInvalidArgument,
                "codec: quantization_scale needs an exponent in [" + std::to_string(kMinExponent) +
                    ", " + std::to_string(kMaxExponent) + "], got " + std::to_string(e));
  }
  return scale_unchecked(e, limit_unchecked(world));
}

void quantize(std::span<const float> x, std::int16_t e, int world, std::byte* out) {
  check_world(world);
  check_exponent(e);
  if (x.empty()) return;
  if (is_special(e)) {
    std::memset(out, 0, x.size() * sizeof(std::int32_t));
    return;
  }
  const std::int32_t limit = limit_unchecked(world);
  HWY_DYNAMIC_DISPATCH(QuantizeKernel)
  (x.data(), x.size(), scale_unchecked(e, limit), limit, as_bytes(out));
}

void dequantize(const std::byte* in, std::int16_t e, int world, std::span<float> out) {
  check_world(world);
  check_exponent(e);
  if (e == wire::kExponentNone) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  if (e == wire::kExponentNonFinite) {
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (out.empty()) return;
  const double factor = pow2(e) / limit_unchecked(world);  // fl64(2^e / Lf)
  HWY_DYNAMIC_DISPATCH(DequantizeKernel)(as_bytes(in), out.size(), factor, out.data());
}

double error_bound(std::int16_t e, int world) {
  check_world(world);
  check_exponent(e);
  if (e == wire::kExponentNone) return 0.0;
  if (e == wire::kExponentNonFinite) return std::numeric_limits<double>::infinity();
  // docs/numerics.md: B = n 2^e (1/(2 Lf) + 2^-23 + 2^-42) + 2^-149.
  const double lf = limit_unchecked(world);
  return world * std::ldexp(1.0, e) * (0.5 / lf + 0x1p-23 + 0x1p-42) + 0x1p-149;
}

void store_be(std::span<const std::int32_t> x, std::byte* out) {
  byte_swap(x.data(), x.size(), out);
}
void store_be(std::span<const float> x, std::byte* out) { byte_swap(x.data(), x.size(), out); }
void load_be(const std::byte* in, std::span<std::int32_t> out) {
  byte_swap(in, out.size(), out.data());
}
void load_be(const std::byte* in, std::span<float> out) { byte_swap(in, out.size(), out.data()); }

std::string_view simd_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetKernel)()); }

}  // namespace netagg::codec
#endif  // HWY_ONCE

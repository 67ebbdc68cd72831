// SPDX-License-Identifier: Apache-2.0
#include "netagg/reduce.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/exact.hpp"

namespace netagg {
namespace {

std::uint32_t load32(const std::byte* p) { return wire::load_be32(p); }
void store32(std::uint32_t v, std::byte* p) { wire::store_be32(p, v); }
std::uint16_t load16(const std::byte* p) { return wire::load_be16(p); }

// bf16 from fp32, round to nearest even, NaN kept (quieted): the FPGA's rounding.
std::uint16_t to_bf16(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// fp32_exact: lanes at the round's scale (every contribution's high byte), added as integers,
// rounded once: the exact aggregator's bits, whatever the order.
void reduce_exact(std::span<const wire::Decoded> contributions, std::span<std::byte> payload) {
  const std::int16_t field = contributions[0].header.exponent;
  for (std::size_t r = 1; r < contributions.size(); ++r)
    if (exact::scale_code(contributions[r].header.exponent) != exact::scale_code(field))
      throw Error(Errc::kInvalidArgument,
                  fmt::format("reduce: rank {}'s packet seq {} converts at scale code {}, rank 0's "
                              "at {}: the workers did not agree on the chunk's exponent",
                              r, contributions[r].header.seq,
                              exact::scale_code(contributions[r].header.exponent),
                              exact::scale_code(field)));
  const auto scale = exact::from_code(exact::scale_code(field));
  if (!scale)
    throw Error(Errc::kInvalidArgument, fmt::format("reduce: scale code {} is not an exponent's",
                                                    exact::scale_code(field)));
  const std::size_t n = contributions[0].header.count;
  for (std::size_t i = 0; i < n; ++i) {
    exact::Lane sum;
    for (const wire::Decoded& c : contributions) {
      // (An element beyond the scale becomes a NaN lane, as the aggregator makes it.)
      const float x = std::bit_cast<float>(load32(c.payload.data() + 4 * i));
      sum = exact::add(sum, exact::to_lane(x, *scale));
    }
    store32(std::bit_cast<std::uint32_t>(exact::to_fp32(sum, *scale)), payload.data() + 4 * i);
  }
}

}  // namespace

void reduce_round(std::span<const wire::Decoded> contributions, wire::Header& result,
                  std::span<std::byte> payload) {
  if (contributions.empty()) throw Error(Errc::kInvalidArgument, "reduce: no contributions");
  const wire::Header& first = contributions[0].header;
  for (std::size_t r = 1; r < contributions.size(); ++r) {
    const wire::Header& h = contributions[r].header;
    if (h.dtype != first.dtype || h.count != first.count)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("reduce: rank {}'s packet seq {} has dtype {} and {} elements, rank "
                              "0's dtype {} and {}: every worker must make the same calls with "
                              "the same sizes",
                              r, h.seq, static_cast<int>(h.dtype), h.count,
                              static_cast<int>(first.dtype), first.count));
  }
  result.dtype = first.dtype;
  result.count = first.count;
  result.exponent = first.exponent;
  for (const wire::Decoded& c : contributions)
    result.exponent = std::max(result.exponent, c.header.exponent);
  if (payload.size() < result.payload_size())
    throw Error(Errc::kInvalidArgument, "reduce: payload buffer too small");
  const std::size_t n = first.count;
  if (first.dtype == wire::DataType::kFp32Exact) {
    reduce_exact(contributions, payload);
    return;
  }
  switch (first.dtype) {
    case wire::DataType::kInt32:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t sum = 0;
        for (const wire::Decoded& c : contributions) sum += load32(c.payload.data() + 4 * i);
        store32(sum, payload.data() + 4 * i);
      }
      break;
    case wire::DataType::kFp32:
      for (std::size_t i = 0; i < n; ++i) {
        // The first contribution as it is (no 0 + x: -0 stays -0), then the others in order.
        float sum = std::bit_cast<float>(load32(contributions[0].payload.data() + 4 * i));
        for (std::size_t r = 1; r < contributions.size(); ++r)
          sum += std::bit_cast<float>(load32(contributions[r].payload.data() + 4 * i));
        store32(std::bit_cast<std::uint32_t>(sum), payload.data() + 4 * i);
      }
      break;
    case wire::DataType::kBf16:
      for (std::size_t i = 0; i < n; ++i) {
        const auto widen = [&](std::size_t r) {
          return std::bit_cast<float>(std::uint32_t{load16(contributions[r].payload.data() + 2 * i)}
                                      << 16);
        };
        float sum = widen(0);
        for (std::size_t r = 1; r < contributions.size(); ++r) sum += widen(r);
        const std::uint16_t b = to_bf16(sum);
        payload[2 * i] = static_cast<std::byte>(b >> 8);
        payload[2 * i + 1] = static_cast<std::byte>(b & 0xFF);
      }
      break;
    default:
      throw Error(Errc::kInvalidArgument,
                  fmt::format("reduce: dtype {} is not one the aggregators add",
                              static_cast<int>(first.dtype)));
  }
}

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// Block floating point's packets (packet_sources.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/exact.hpp"
#include "packet_sources.hpp"

namespace netagg {

void BlockFloatSource::fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) {
  h.dtype = wire::DataType::kInt32;
  h.exponent = p < chunks_.chunks() ? codec::block_exponent(std::span<const float>(chunk(p)))
                                    : wire::kExponentNone;
  if (p < lead_) {
    h.count = 0;
    return;
  }
  const std::uint64_t c = p - lead_;
  const auto x = chunk(c);
  h.count = static_cast<std::uint16_t>(x.size());
  const std::int16_t e = agreed_[c];
  if (e == wire::kExponentNone || e == wire::kExponentNonFinite) {
    // All-zero chunk everywhere, or somebody's chunk is not finite (the result becomes NaN
    // by its exponent): the values do not matter, send zeros to keep the slot's count.
    std::fill_n(payload.data(), x.size() * sizeof(std::int32_t), std::byte{0});
  } else {
    codec::quantize(std::span<const float>(x), e, world_, payload.data());
  }
}

void BlockFloatSource::deliver(std::uint64_t p, const wire::Header& h,
                               std::span<const std::byte> payload) {
  // An exponent no worker can have sent means a broken aggregator: fail loudly rather than
  // dequantize garbage (a retransmission would get the same stored result back).
  if (!codec::is_valid_exponent(h.exponent))
    throw Error(Errc::kTransport,
                fmt::format("aggregator returned block exponent {} (outside [{}, {}]) in the "
                            "result of slot {} seq {}",
                            h.exponent, codec::kMinExponent, codec::kMaxExponent, h.slot, h.seq));
  if (p < chunks_.chunks()) agreed_[p] = h.exponent;
  if (p < lead_) return;  // a preamble packet: exponent only
  const std::uint64_t c = p - lead_;
  codec::dequantize(payload.data(), agreed_[c], world_, chunk(c));
}

std::int16_t ExactSource::scale(std::uint64_t p) const {
  return p < lead_ ? exact::kExponentNone : agreed_[p - lead_];
}

void ExactSource::fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) {
  h.dtype = wire::DataType::kFp32Exact;
  const std::int16_t ahead = p < chunks_.chunks()
                                 ? exact::block_exponent(std::span<const float>(chunk(p)))
                                 : exact::kExponentNone;
  h.exponent = exact::pack_exponents(scale(p), ahead);
  if (p < lead_) {
    h.count = 0;
    return;
  }
  const auto x = chunk(p - lead_);
  h.count = static_cast<std::uint16_t>(x.size());
  codec::store_be(std::span<const float>(x), payload.data());
}

void ExactSource::deliver(std::uint64_t p, const wire::Header& h,
                          std::span<const std::byte> payload) {
  // The scale must be the one every worker converted at, and the announced exponent one a
  // worker can have sent: otherwise the aggregator is broken, and its sums with it.
  const auto ahead = exact::from_code(exact::ahead_code(h.exponent));
  const std::uint8_t sent = exact::to_code(scale(p));
  if (!ahead || exact::scale_code(h.exponent) != sent)
    throw Error(Errc::kTransport,
                fmt::format("aggregator returned exponent field {:#06x} in the result of slot {} "
                            "seq {}: scale code {} (sent {}), exponent code {} (at most {})",
                            static_cast<std::uint16_t>(h.exponent), h.slot, h.seq,
                            exact::scale_code(h.exponent), sent, exact::ahead_code(h.exponent),
                            exact::kMaxCode));
  if (p < chunks_.chunks()) agreed_[p] = *ahead;
  if (p < lead_) return;  // a preamble packet: exponent only
  codec::load_be(payload.data(), chunk(p - lead_));
}

}  // namespace netagg

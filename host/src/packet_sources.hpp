// SPDX-License-Identifier: Apache-2.0
// The codec step of an all-reduce: how a caller's tensor becomes the packets of an engine
// operation and its results become elements again (PacketSource, netagg/engine.hpp). One source
// per tree and operation: elements as they are (RawSource), fp32 as block floating point through
// an integer aggregator (BlockFloatSource), or part of another source's packets as an operation
// of its own (SubrangeSource). Internal to libnetagg (the communicator).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "netagg/codec.hpp"
#include "netagg/communicator.hpp"  // Bf16
#include "netagg/engine.hpp"
#include "netagg/exact.hpp"
#include "netagg/split.hpp"
#include "netagg/wire.hpp"

namespace netagg {

// Chunk c of a tree's share of a tensor of n elements cut into pieces of `per_packet`: the
// tensor's chunk split->global(tree, c) (a job on several trees), or chunk c (split null).
struct Chunking {
  Chunking(std::size_t n, std::size_t per_packet, const ChunkSplit* split = nullptr,
           std::size_t tree = 0)
      : n(n), per_packet(per_packet), split(split), tree(tree) {
    const std::uint64_t all = (n + per_packet - 1) / per_packet;
    count = split ? split->count(tree, all) : all;  // once: sources ask for it per packet
  }
  std::size_t n;
  std::size_t per_packet;
  const ChunkSplit* split;
  std::size_t tree;
  std::uint64_t count;
  std::uint64_t chunks() const { return count; }
  std::size_t offset(std::uint64_t c) const {
    return static_cast<std::size_t>(split ? split->global(tree, c) : c) * per_packet;
  }
  std::size_t size(std::uint64_t c) const { return std::min(per_packet, n - offset(c)); }
};

// bf16 elements as 16-bit big-endian words (codec has int32 and fp32 only; bf16 is rare enough
// not to need its vector kernels).
inline void store_be(std::span<const Bf16> x, std::byte* out) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[2 * i] = static_cast<std::byte>(x[i].bits >> 8);
    out[2 * i + 1] = static_cast<std::byte>(x[i].bits & 0xFF);
  }
}
inline void load_be(const std::byte* in, std::span<Bf16> out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].bits = static_cast<std::uint16_t>((std::to_integer<unsigned>(in[2 * i]) << 8) |
                                             std::to_integer<unsigned>(in[2 * i + 1]));
}
using codec::load_be;
using codec::store_be;

// Elements travel as they are (int32, bf16, or fp32 to an fp32-capable aggregator): packet p is
// chunk p, no exponent.
template <typename T, wire::DataType kDtype>
class RawSource final : public PacketSource {
 public:
  explicit RawSource(std::span<T> data, Chunking chunks) : data_(data), chunks_(chunks) {}

  std::uint64_t packet_count() const override { return chunks_.chunks(); }
  bool independent() const override { return true; }

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    h.dtype = kDtype;
    h.count = static_cast<std::uint16_t>(chunks_.size(p));
    h.exponent = wire::kExponentNone;
    store_be(std::span<const T>(data_.subspan(chunks_.offset(p), h.count)), payload.data());
  }

  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    // The engine delivers only results of the shape that was sent: h.count == chunk size.
    load_be(payload.data(), data_.subspan(chunks_.offset(p), h.count));
  }

 private:
  std::span<T> data_;
  Chunking chunks_;
};

// Packets [begin, end) of another source, as an operation of their own.
class SubrangeSource final : public PacketSource {
 public:
  SubrangeSource(PacketSource& inner, std::uint64_t begin, std::uint64_t end)
      : inner_(inner), begin_(begin), end_(end) {}
  std::uint64_t packet_count() const override { return end_ - begin_; }
  bool independent() const override { return inner_.independent(); }
  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    inner_.fill(begin_ + p, h, payload);
  }
  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    inner_.deliver(begin_ + p, h, payload);
  }

 private:
  PacketSource& inner_;
  std::uint64_t begin_, end_;
};

// fp32 whose chunks' exponents travel `lead` packets ahead of their data (block floating point,
// exact fp32): packets = chunks + lead; what the results brought back per chunk is `agreed_`.
class AheadSource : public PacketSource {
 public:
  std::uint64_t packet_count() const override { return chunks_.chunks() + lead_; }

 protected:
  AheadSource(std::span<float> data, Chunking chunks, std::size_t lead, std::int16_t none)
      : data_(data), chunks_(chunks), lead_(lead), agreed_(chunks_.chunks(), none) {}
  std::span<float> chunk(std::uint64_t c) const {
    return data_.subspan(chunks_.offset(c), chunks_.size(c));
  }

  std::span<float> data_;
  Chunking chunks_;
  std::size_t lead_;
  std::vector<std::int16_t> agreed_;  // per chunk, the exponent the results brought back
};

// fp32 through an integer aggregator, SwitchML's block floating point. Exponents travel `lead`
// packets ahead of the data: packet p carries in its exponent field the local block exponent of
// chunk p and as payload chunk p - lead, quantized with chunk p - lead's global exponent, which
// the result of packet p - lead brought back (the aggregator max-reduces exponents). The first
// `lead` packets carry exponents only, the last `lead` data only: packets = chunks + lead.
// Pipelined in one engine operation, lead = W: the engine sends packet p only after the result
// of p - W. A tensor of fewer chunks than W runs as two operations with lead = chunks (all
// exponents, then all data; see SubrangeSource), which sends 2 * chunks packets, not chunks + W.
class BlockFloatSource final : public AheadSource {
 public:
  BlockFloatSource(std::span<float> data, Chunking chunks, std::size_t lead, int world)
      : AheadSource(data, chunks, lead, wire::kExponentNone), world_(world) {}

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override;
  void deliver(std::uint64_t p, const wire::Header& h, std::span<const std::byte> payload) override;

 private:
  int world_;
};

// fp32 summed exactly by the aggregator (dtype fp32_exact, docs/exact-fp32.md): the schedule of
// BlockFloatSource, with fp32 elements as they are. Packet p announces chunk p's exponent in
// the low byte of its exponent field and carries chunk p - lead, whose agreed exponent (the
// result of packet p - lead) is the scale in the high byte; the aggregator converts the
// elements at that scale, adds 64-bit integers and rounds the sum once. The result's scale byte
// must be the one sent.
class ExactSource final : public AheadSource {
 public:
  ExactSource(std::span<float> data, Chunking chunks, std::size_t lead)
      : AheadSource(data, chunks, lead, exact::kExponentNone) {}

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override;
  void deliver(std::uint64_t p, const wire::Header& h, std::span<const std::byte> payload) override;

 private:
  std::int16_t scale(std::uint64_t p) const;  // of packet p's data
};

}  // namespace netagg

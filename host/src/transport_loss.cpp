// SPDX-License-Identifier: Apache-2.0
// Seeded loss injection: a decorator that drops packets on their way out and on their way in,
// so tests and demos exercise retransmission without a lossy network.
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/transport.hpp"

namespace netagg {
namespace {

// splitmix64: tiny, fast, and every seed (including 0) gives a good stream.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

class LossyTransport final : public Transport {
 public:
  LossyTransport(std::unique_ptr<Transport> inner, double loss, std::uint64_t seed)
      : inner_(std::move(inner)),
        // Compare 53-bit uniforms against loss * 2^53: exact for every representable loss.
        threshold_(static_cast<std::uint64_t>(std::ldexp(loss, 53))),
        // Separate streams, so what is dropped one way does not depend on traffic the other way.
        send_rng_(seed),
        receive_rng_(seed ^ 0x5DEECE66Dull * 0x2545F4914F6CDD1Dull) {}

  void send(std::span<const std::span<const std::byte>> packets) override { send_to(0, packets); }

  void send_to(std::size_t peer, std::span<const std::span<const std::byte>> packets) override {
    kept_.clear();
    for (auto p : packets) {
      if (drop(send_rng_)) {
        ++dropped_;
        continue;
      }
      kept_.push_back(p);
    }
    if (!kept_.empty()) inner_->send_to(peer, kept_);
  }

  std::size_t receive(Duration timeout, const PacketHandler& on_packet) override {
    std::size_t handed = 0;
    inner_->receive(timeout, [&](std::span<const std::byte> p) {
      if (drop(receive_rng_)) {
        ++dropped_;
        return;
      }
      ++handed;
      on_packet(p);
    });
    return handed;
  }

  std::uint8_t last_ecn() const override { return inner_->last_ecn(); }
  std::optional<Endpoint> last_refused() const override { return inner_->last_refused(); }

  std::string name() const override { return fmt::format("{} (lossy)", inner_->name()); }

  TransportCounters counters() const override {
    TransportCounters c = inner_->counters();
    c.injected_drops += dropped_;
    return c;
  }

 private:
  bool drop(SplitMix64& rng) { return (rng.next() >> 11) < threshold_; }

  std::unique_ptr<Transport> inner_;
  std::uint64_t threshold_;
  SplitMix64 send_rng_, receive_rng_;
  std::uint64_t dropped_ = 0;
  std::vector<std::span<const std::byte>> kept_;
};

}  // namespace

std::unique_ptr<Transport> with_loss(std::unique_ptr<Transport> inner, double loss,
                                     std::uint64_t seed) {
  if (!inner) throw Error(Errc::kInvalidArgument, "with_loss: no transport to wrap");
  if (!(loss >= 0 && loss <= 1))
    throw Error(Errc::kInvalidArgument, fmt::format("loss: {} is outside [0, 1]", loss));
  if (loss == 0) return inner;
  return std::make_unique<LossyTransport>(std::move(inner), loss, seed);
}

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The HLS aggregator as a plain C++ reference model, for tests and for checking the RTL bit for
// bit (C++20; not for synthesis). It owns an Aggregator and speaks bytes instead of streams:
//
//   process_frame(port, bytes)   one frame alone: the default drive, contributions added in
//                                the order they are given
//   process_group(frames)        the frames the RTL presented in one cycle (distinct ports): the
//                                adder tree combines those that meet in one (slot, set)
//   csr_read / csr_write         the AXI4-Lite registers (formats/csr.json)
//
// Both process_* return the frames in the order the model makes them: for each round that
// completes, one frame per worker in rank order; a resend where the retransmission was taken; a
// notice where a dropped frame gets one. Per egress port that is the order the result frames
// leave the port (the RTL sends notices through a queue of their own, netagg_notice.sv).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "netagg_hls/aggregator.hpp"

namespace netagg::fpga {

struct RxFrame {
  unsigned port = 0;
  std::vector<std::byte> bytes;
};

struct TxFrame {
  unsigned port = 0;  // egress port
  std::vector<std::byte> bytes;
  friend bool operator==(const TxFrame&, const TxFrame&) = default;
};

// A frame as AXI4-Stream beats: 64 bytes a beat, byte 0 in TDATA bits 7:0, TKEEP = TSTRB all
// ones but on the last beat, where it covers the remaining bytes (contiguous from byte 0); TLAST
// on the last beat. An empty frame is one beat with TKEEP 0.
inline std::vector<AxisBeat> to_beats(std::span<const std::byte> frame) {
  const std::size_t n = frame.empty() ? 1 : (frame.size() + 63) / 64;
  std::vector<AxisBeat> beats(n);
  for (std::size_t b = 0; b < n; ++b) {
    AxisBeat& w = beats[b];
    const std::size_t begin = b * 64;
    const std::size_t len = std::min<std::size_t>(64, frame.size() - std::min(begin, frame.size()));
    for (std::size_t i = 0; i < len; ++i)
      set_byte(w.data, static_cast<int>(i), static_cast<unsigned>(frame[begin + i]));
    w.keep = len == 64 ? ~0ULL : (1ULL << len) - 1;
    w.strb = w.keep;
    w.last = b + 1 == n;
  }
  return beats;
}

// The bytes of a frame given as beats: 64 of every beat but the last, whose TKEEP says how many
// (counted, as the aggregator counts them). Throws std::invalid_argument if TLAST is missing or
// set before the last beat.
inline std::vector<std::byte> from_beats(std::span<const AxisBeat> beats) {
  if (beats.empty() || !beats.back().last)
    throw std::invalid_argument("from_beats: the last beat has no TLAST");
  std::vector<std::byte> out;
  for (std::size_t b = 0; b < beats.size(); ++b) {
    if (b + 1 < beats.size() && beats[b].last)
      throw std::invalid_argument("from_beats: TLAST before the last beat");
    unsigned len = 64;
    if (b + 1 == beats.size()) {
      len = 0;
      for (int i = 0; i < 64; ++i)
        len += static_cast<unsigned>((beats[b].keep.to_uint64() >> i) & 1);
    }
    for (unsigned i = 0; i < len; ++i)
      out.push_back(std::byte(get_byte(beats[b].data, static_cast<int>(i))));
  }
  return out;
}

template <class P = DefaultParams>
class ReferenceModel {
 public:
  using Core = Aggregator<P>;
  static constexpr unsigned kNumPorts = P::kNumPorts;

  ReferenceModel() : core_(std::make_unique<Core>()) {}

  // ap_rst_n: registers, job table, slots and counters to their power-on values.
  void reset() { core_->hard_reset(); }

  std::uint32_t csr_read(std::uint32_t address) { return core_->csr_read(address); }
  void csr_write(std::uint32_t address, std::uint32_t value) { core_->csr_write(address, value); }
  // A counter's value without going through COUNTER_INDEX/LO/HI (0 for an unknown index).
  std::uint64_t counter(unsigned index) const { return core_->counter(index); }

  // One frame on ingress port `port`. Throws std::invalid_argument for a port out of range.
  std::vector<TxFrame> process_frame(unsigned port, std::span<const std::byte> frame) {
    RxFrame rx{port, {frame.begin(), frame.end()}};
    return process_group(std::span<const RxFrame>(&rx, 1));
  }

  // Frames presented in one cycle, at most one per port. Throws std::invalid_argument for a port
  // out of range or used twice.
  std::vector<TxFrame> process_group(std::span<const RxFrame> frames) {
    auto group = std::make_unique<typename Core::Frame[]>(kNumPorts);
    bool present[kNumPorts] = {};
    for (const RxFrame& f : frames) {
      if (f.port >= kNumPorts)
        throw std::invalid_argument("process_group: port " + std::to_string(f.port) +
                                    " out of range");
      if (present[f.port])
        throw std::invalid_argument("process_group: port " + std::to_string(f.port) +
                                    " given twice");
      present[f.port] = true;
      load(f.bytes, group[f.port]);
    }
    Collector sink;
    core_->process_group(group.get(), present, sink);
    return std::move(sink.frames);
  }

  Core& core() { return *core_; }
  const Core& core() const { return *core_; }

 private:
  // Result beats to frames, per port (a port's beats of one frame are consecutive).
  struct Collector {
    std::vector<TxFrame> frames;
    std::vector<AxisBeat> partial[kNumPorts];
    void write(int port, const AxisBeat& w) {
      partial[port].push_back(w);
      if (w.last) {
        frames.push_back({static_cast<unsigned>(port), from_beats(partial[port])});
        partial[port].clear();
      }
    }
  };

  static void load(std::span<const std::byte> bytes, typename Core::Frame& f) {
    const std::vector<AxisBeat> beats = to_beats(bytes);
    f.beats = static_cast<std::uint32_t>(beats.size());
    f.bytes = static_cast<std::uint32_t>(bytes.size());
    for (std::size_t b = 0; b < beats.size() && b < static_cast<std::size_t>(Core::kMaxFrameBeats);
         ++b)
      f.beat[b] = beats[b].data;
  }

  std::unique_ptr<Core> core_;
};

}  // namespace netagg::fpga

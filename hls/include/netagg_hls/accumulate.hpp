// SPDX-License-Identifier: Apache-2.0
// The adds (docs/fpga-aggregator.md, "Arithmetic and summation order"): the frames of a group
// that start or join one round form a run; its elements are summed by PANAMA's adder tree in
// port order and the sum is stored (a new round, the parent's result) or added to the
// accumulators, accumulator first. Mirrors hw/rtl/netagg_accum.sv (the adder pipeline),
// netagg_adder_tree.sv (the tree), netagg_beat_add.sv (the lane adders) and netagg_slot_mem.sv
// (the accumulators).
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_ACCUMULATE_HPP
#define NETAGG_HLS_ACCUMULATE_HPP

#include <stdint.h>

#include <type_traits>

#include "netagg_hls/admit.hpp"
#include "netagg_hls/arith.hpp"
#include "netagg_hls/exact.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/round.hpp"

namespace netagg {
namespace fpga {
namespace pipeline {

// The frames of a group that start or join one round of one (slot, set).
template <class P>
struct Run {
  bool open;
  bool first;  // the run starts the round: its tree sum overwrites the accumulators
  int at;      // 2 * slot + set
  bool member[P::kTreeLeaves];

  // An open run of (slot, set) `index` without members yet.
  void open_at(int index) {
    open = true;
    at = index;
    for (int q = 0; q < P::kTreeLeaves; ++q) member[q] = false;
  }
};

// The group's open run of (slot, set) `at`, or -1.
template <class P>
int open_run(const Run<P> runs[P::kNumPorts], int at) {
  for (int r = 0; r < P::kNumPorts; ++r)
    if (runs[r].open && runs[r].at == at) return r;
  return -1;
}
// A group holds at most kNumPorts frames, so a run is always free.
template <class P>
int free_run(const Run<P> runs[P::kNumPorts]) {
  for (int r = 0; r < P::kNumPorts; ++r)
    if (!runs[r].open) return r;
  return 0;
}

static_assert(kExactFractionBits == static_cast<int>(layout::kExactFractionBits),
              "exact.hpp's lanes are the wire's (formats/wire.json)");

// The exact dtypes' lanes: an fp32_exact element converted at the scale `code` (the exponent's
// high byte: 0 none, else e + exact_code_offset; a code beyond 226 is taken as none, so every
// nonzero finite element becomes NaN), an exact_lanes element decoded (specials as reserved
// int64 values).
inline int16_t exact_scale(unsigned code) {
  if (code == 0 || code > layout::kExactCodeOffset + kExactMaxExponent) return kExactExponentNone;
  return static_cast<int16_t>(static_cast<int>(code) - static_cast<int>(layout::kExactCodeOffset));
}
// An element of fp32_exact that the scale cannot hold (finite, nonzero, |x| >= 2^e or scale
// none): exact_to_lane poisoned its lane (NaN) although the element is no NaN. Counted.
inline bool exact_out_of_range(uint32_t x, const ExactLane& lane) {
  return ((x >> 23) & 0xFFu) != 0xFFu && (x & 0x7FFFFFFFu) != 0 && lane.special == kExactNan;
}
inline ExactLane exact_from_wire(uint64_t v) {
#pragma HLS INLINE
  ExactLane lane = {static_cast<int64_t>(v), kExactFinite};
  if (v == 0x7FFFFFFFFFFFFFFFull) lane = ExactLane{0, kExactPosInf};
  if (v == 0x8000000000000001ull) lane = ExactLane{0, kExactNegInf};
  if (v == 0x8000000000000000ull) lane = ExactLane{0, kExactNan};
  return lane;
}
inline uint64_t exact_to_wire(ExactLane lane) {
#pragma HLS INLINE
  if (lane.special == kExactPosInf) return 0x7FFFFFFFFFFFFFFFull;
  if (lane.special == kExactNegInf) return 0x8000000000000001ull;
  if (lane.special == kExactNan) return 0x8000000000000000ull;
  return static_cast<uint64_t>(lane.value);
}

// MAX_BEATS beats of LANES accumulators per (slot, set): 32 bits (int32 or fp32 bits), and with
// P::kExact 64 bits and a special (fp32_exact lanes; a 32-bit round uses the low half).
template <class P>
class Accumulators {
 public:
  static constexpr int kLanes = P::kLanes;
  static constexpr int kExactSets = P::kExact ? 2 * P::kSlots : 1;
  using Word = typename std::conditional<P::kExact, uint64_t, uint32_t>::type;

  void clear() {
    for (int s = 0; s < 2 * P::kSlots; ++s)
      for (int b = 0; b < P::kMaxBeats; ++b)
        for (int l = 0; l < kLanes; ++l) acc_[s][b][l] = 0;
    for (int s = 0; s < kExactSets; ++s)
      for (int b = 0; b < P::kMaxBeats; ++b)
        for (int l = 0; l < kLanes; ++l) special_[s][b][l] = kExactFinite;
  }

  // Lane `lane` of beat `beat` of (slot, set) `at`: the 32-bit word (the low half of a lane).
  uint32_t word(int at, int beat, int lane) const {
    return static_cast<uint32_t>(acc_[at][beat][lane]);
  }
  // The exact lane (P::kExact).
  ExactLane lane(int at, int beat, int lane) const {
    ExactLane x = {static_cast<int64_t>(acc_[at][beat][lane]),
                   special_[P::kExact ? at : 0][beat][lane]};
    return x;
  }

  // The run's tree sum into the accumulators of its (slot, set), whose round is `round`:
  // stored for a new round, else added to them, accumulator first. Exact rounds: each member's
  // elements as lanes (its own dtype and scale), added as integers; a rounded round (the
  // parent's result) stores the fp32 words as they are. Returns the elements poisoned for being
  // out of their scale's range.
  unsigned apply(const Run<P>& run, const RoundState& round, const Frame<P> frames[P::kNumPorts]) {
    if (P::kExact && round.dtype == layout::kDtypeFp32Exact && !round.rounded)
      return apply_exact(run, round, frames);
    const int beats = (round.count + kLanes - 1) / kLanes;
    const bool fp = round.dtype != layout::kDtypeInt32;
  accumulate:
    for (int a = 0; a < beats; ++a) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 16
      uint32_t leaf[P::kTreeLeaves][kLanes];
      for (int p = 0; p < P::kTreeLeaves; ++p) {
#pragma HLS UNROLL
        for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
          leaf[p][l] =
              p < P::kNumPorts && run.member[p] ? element(frames[p], round.dtype, a, l) : 0;
        }
      }
      uint32_t sum[kLanes] = {0};  // a run has at least one member: always written
      if (fp)
        tree_reduce<Fp32Elem, kLanes, P::kTreeLeaves>(leaf, run.member, sum);
      else
        tree_reduce<Int32Elem, kLanes, P::kTreeLeaves>(leaf, run.member, sum);
      for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
        const uint32_t acc = static_cast<uint32_t>(acc_[run.at][a][l]);
        if (run.first)
          acc_[run.at][a][l] = sum[l];
        else
          acc_[run.at][a][l] = fp ? Fp32Elem::add(acc, sum[l]) : Int32Elem::add(acc, sum[l]);
      }
    }
    return 0;
  }

 private:
  // Element `lane` of accumulator beat `a` taken from frame f, as a 32-bit word (int32 bits or
  // fp32 bits; bf16 widened).
  static uint32_t element(const Frame<P>& f, unsigned dtype, int a, int lane) {
#pragma HLS INLINE
    if (dtype == layout::kDtypeBf16)
      return bf16_to_fp32(get_lane16(f.beat[1 + a / 2], (a % 2) * kLanes + lane));
    return get_lane32(f.beat[1 + a], lane);
  }

  // An exact round: integer adds, so the order of the members does not matter.
  unsigned apply_exact(const Run<P>& run, const RoundState& round,
                       const Frame<P> frames[P::kNumPorts]) {
    const int beats = (round.count + kLanes - 1) / kLanes;
    unsigned poisoned = 0;
  accumulate_exact:
    for (int a = 0; a < beats; ++a) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 16
      for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
        const bool used = kLanes * a + l < round.count;
        ExactLane sum = {0, kExactFinite};
        for (int p = 0; p < P::kNumPorts; ++p) {
#pragma HLS UNROLL
          if (!run.member[p] || !used) continue;
          const Frame<P>& f = frames[p];
          const unsigned dtype = get_byte(f.beat[0], layout::kNetaggDtype);
          ExactLane x;
          if (dtype == layout::kDtypeExactLanes) {
            const int w = 2 * (kLanes * a + l);  // 32-bit word of the payload
            const uint64_t hi = get_lane32(f.beat[1 + w / kLanes], w % kLanes);
            const uint64_t lo = get_lane32(f.beat[1 + (w + 1) / kLanes], (w + 1) % kLanes);
            x = exact_from_wire(hi << 32 | lo);
          } else {
            const unsigned code = get_be16(f.beat[0], layout::kNetaggExponent) >> 8;
            const uint32_t v = get_lane32(f.beat[1 + a], l);
            x = exact_to_lane(v, exact_scale(code));
            if (exact_out_of_range(v, x)) ++poisoned;
          }
          sum = exact_add(sum, x);
        }
        const int s = P::kExact ? run.at : 0;
        if (!run.first) sum = exact_add(lane(run.at, a, l), sum);
        acc_[run.at][a][l] = static_cast<Word>(static_cast<uint64_t>(sum.value));
        special_[s][a][l] = sum.special;
      }
    }
    return poisoned;
  }

  Word acc_[2 * P::kSlots][P::kMaxBeats][kLanes];
  uint8_t special_[kExactSets][P::kMaxBeats][kLanes];
};

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_ACCUMULATE_HPP

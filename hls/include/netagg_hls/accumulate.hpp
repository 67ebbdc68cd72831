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

#include "netagg_hls/admit.hpp"
#include "netagg_hls/arith.hpp"
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

// MAX_BEATS beats of LANES 32-bit accumulators (int32 or fp32 bits) per (slot, set).
template <class P>
class Accumulators {
 public:
  static constexpr int kLanes = P::kLanes;

  void clear() {
    for (int s = 0; s < 2 * P::kSlots; ++s)
      for (int b = 0; b < P::kMaxBeats; ++b)
        for (int l = 0; l < kLanes; ++l) acc_[s][b][l] = 0;
  }

  // Lane `lane` of beat `beat` of (slot, set) `at`.
  uint32_t word(int at, int beat, int lane) const { return acc_[at][beat][lane]; }

  // The run's tree sum into the accumulators of its (slot, set), whose round is `round`:
  // stored for a new round, else added to them, accumulator first.
  void apply(const Run<P>& run, const RoundState& round, const Frame<P> frames[P::kNumPorts]) {
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
        uint32_t& acc = acc_[run.at][a][l];
        if (run.first)
          acc = sum[l];
        else
          acc = fp ? Fp32Elem::add(acc, sum[l]) : Int32Elem::add(acc, sum[l]);
      }
    }
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

  uint32_t acc_[2 * P::kSlots][P::kMaxBeats][kLanes];
};

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_ACCUMULATE_HPP

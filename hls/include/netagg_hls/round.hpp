// SPDX-License-Identifier: Apache-2.0
// The round decision and the round state of every (slot, set), as hw/rtl/netagg_round.sv keeps
// them (docs/fpga-aggregator.md, "Rounds"): sim/switch/README.md's table plus dtype_mismatch,
// the tree cases (a member's retransmission while the round waits for the parent, the parent's
// result), and what a new round, a join and the parent's result write into the state. The RTL
// decides a group's members at once in its stages D1..D4; here they are decided one after the
// other in port order, which is what the RTL's decision equals.
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_ROUND_HPP
#define NETAGG_HLS_ROUND_HPP

#include <stdint.h>

#include "netagg_hls/admit.hpp"
#include "netagg_hls/csr14.hpp"

namespace netagg {
namespace fpga {

// The round state of one (slot, set), as in sim/switch plus dtype and the ECN OR.
struct RoundState {
  // Trees: the round is complete here and its sum went to the parent, whose result is not here
  // yet. `fresh`: the round's first contribution was fresh (the sum goes up fresh).
  bool upstream;
  bool fresh;
  bool has_round;     // the set holds a round (in progress or complete)
  uint32_t epoch;     // the epoch (run token) of its contributions, echoed in results
  uint32_t seq;       // seq of the round's first contribution, echoed in results
  uint32_t bitmap;    // ranks that contributed to this round
  uint8_t remaining;  // workers still to contribute; 0 = complete
  uint16_t count;     // elements of the round
  uint8_t dtype;      // layout::kDtype*; fp32_exact for a round of the exact class
  int16_t exponent;   // max of the contributions' exponents
  uint8_t ecn;        // OR of the contributions' ECN bits
  // An exact round whose accumulators hold the parent's rounded fp32 result (their low 32 bits),
  // not lanes: sent as it is.
  bool rounded;
};

namespace pipeline {

// >= 0: a drop counter index. kTakeover: a new round on a set that holds another epoch's.
// kResendToParent: a member's retransmission while the round waits for the parent.
// kParentResult: the parent's result for a round waiting for it.
enum Decision {
  kNewRound = -1,
  kJoin = -2,
  kResend = -3,
  kTakeover = -4,
  kResendToParent = -5,
  kParentResult = -6
};

// The dtype a round records: the exact class (fp32_exact from workers, exact_lanes from a child
// aggregator) is one, fp32_exact; the others their own.
inline uint8_t round_dtype(unsigned dtype) {
  return static_cast<uint8_t>(is_exact(dtype) ? layout::kDtypeFp32Exact : dtype);
}
// The exact class: the contribution's scale (the exponent's high byte) is not its round's.
inline bool scale_differs(const RoundState& round, const Contribution& k) {
  return round.dtype == layout::kDtypeFp32Exact &&
         ((static_cast<uint16_t>(k.exponent) ^ static_cast<uint16_t>(round.exponent)) >> 8) != 0;
}

// A result from the job's parent: taken only by the round that waits for it (same epoch and
// seq, complete here, its sum sent up), in the switch model's order of checks.
inline int decide_parent_result(const RoundState& round, const Contribution& k) {
  if (!round.has_round) return csr14::kDroppedNoRound;
  if (k.epoch != round.epoch) return csr14::kDroppedStaleEpoch;
  const int32_t age = static_cast<int32_t>(k.seq - round.seq);
  if (age < 0) return csr14::kDroppedStale;
  if (age > 0 || round.remaining != 0) return csr14::kDroppedNoRound;
  if (!round.upstream) return csr14::kDroppedDuplicate;  // answered already
  if (k.count != round.count) return csr14::kDroppedCountMismatch;
  if (round_dtype(k.dtype) != round.dtype) return csr14::kDroppedDtypeMismatch;
  if (scale_differs(round, k)) return csr14::kDroppedScaleMismatch;
  return kParentResult;
}

// sim/switch/README.md's table, plus dtype_mismatch next to count_mismatch. Returns a drop
// counter index (>= 0) or a Decision.
inline int decide(const RoundState& round, const Contribution& k) {
  if (k.from_parent) return decide_parent_result(round, k);
  // A recovery copy never starts a round (and so never takes a set over).
  if (!round.has_round) return k.recovery ? csr14::kDroppedNoRound : static_cast<int>(kNewRound);
  if (k.epoch != round.epoch)
    return k.fresh && !k.recovery ? static_cast<int>(kTakeover) : csr14::kDroppedStaleEpoch;
  const int32_t age = static_cast<int32_t>(k.seq - round.seq);  // serial-number arithmetic
  const bool complete = round.remaining == 0;
  if (age < 0) return csr14::kDroppedStale;
  if (age > 0 && k.recovery) return csr14::kDroppedNoRound;
  if (age > 0) return kNewRound;  // the round is over for every worker, complete or not
  if (k.count != round.count) return csr14::kDroppedCountMismatch;
  if (round_dtype(k.dtype) != round.dtype) return csr14::kDroppedDtypeMismatch;
  if (scale_differs(round, k)) return csr14::kDroppedScaleMismatch;
  if (complete)
    return round.upstream ? static_cast<int>(kResendToParent) : static_cast<int>(kResend);
  if (round.bitmap & (1u << k.rank)) return csr14::kDroppedDuplicate;
  return kJoin;
}

// A new round (also a takeover) of `workers` members: the first contribution's fields. Its
// bitmap starts empty: the bits set belong to an earlier round.
inline void start_round(RoundState& round, const Contribution& k, uint8_t workers) {
  round.bitmap = 0;
  round.has_round = true;
  round.epoch = k.epoch;
  round.seq = k.seq;
  round.remaining = workers;
  round.count = k.count;
  round.dtype = round_dtype(k.dtype);
  round.exponent = k.exponent;
  round.ecn = k.ecn;
  round.upstream = false;
  round.fresh = k.fresh != 0;
  round.rounded = false;
}

// A join: the max exponent (exact class: the scale bytes are equal, so the signed max is the
// max of the low bytes' codes), the ECN OR.
inline void join_round(RoundState& round, const Contribution& k) {
  if (k.exponent > round.exponent) round.exponent = k.exponent;
  round.ecn |= k.ecn;
}

// Every contribution added (a new round's first or a join): its rank's bit (the other set's
// bitmap is left alone, as in sim/switch), one member less to wait for.
inline void count_member(RoundState& round, const Contribution& k) {
  round.bitmap |= 1u << k.rank;
  --round.remaining;
}

// The parent's result completes the round waiting for it: its exponent replaces the round's,
// its ECN bits are ORed in (its values replace the sum, accumulate.hpp; an exact round's are
// rounded already).
inline void take_parent_result(RoundState& round, const Contribution& k) {
  round.exponent = k.exponent;
  round.ecn |= k.ecn;
  round.upstream = false;
  round.rounded = round.dtype == layout::kDtypeFp32Exact;
}

// The round state of every (slot, set), index 2 * slot + set.
template <class P>
class RoundTable {
 public:
  RoundState& at(int index) { return rounds_[index]; }
  const RoundState& at(int index) const { return rounds_[index]; }

  void clear() {
    for (int s = 0; s < 2 * P::kSlots; ++s) rounds_[s] = RoundState();
  }
  // Slot range [base, base + count) clipped to the pool: both sets hold no round.
  void clear_slots(uint32_t base, uint32_t count) {
  clear:
    for (int s = 0; s < P::kSlots; ++s) {
#pragma HLS PIPELINE II = 1
      if (static_cast<uint32_t>(s) - base < count) {
        rounds_[2 * s] = RoundState();
        rounds_[2 * s + 1] = RoundState();
      }
    }
  }

 private:
  RoundState rounds_[2 * P::kSlots];
};

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_ROUND_HPP

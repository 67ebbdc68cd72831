// SPDX-License-Identifier: Apache-2.0
// Parameters of the FPGA aggregator (docs/fpga-aggregator.md, "Parameters"). Kernel code: C++14,
// as Vitis HLS takes it.
#ifndef NETAGG_HLS_PARAMS_HPP
#define NETAGG_HLS_PARAMS_HPP

#include "netagg_hls/csr14.hpp"

namespace netagg {
namespace fpga {

constexpr int ceil_pow2(int n) { return n <= 1 ? 1 : 2 * ceil_pow2((n + 1) / 2); }
constexpr int log2_exact(int n) { return n <= 1 ? 0 : 1 + log2_exact(n / 2); }

template <int NumPorts, int Slots, int MaxBeats, int MaxJobs, int MaxWorkers, bool Exact = true>
struct Params {
  static constexpr int kNumPorts = NumPorts;      // AXI4-Stream ingress and egress ports
  static constexpr int kLanes = 16;               // 32-bit lanes per 512-bit beat (do not change)
  static constexpr int kSlots = Slots;            // slots in the pool, two sets each
  static constexpr int kMaxBeats = MaxBeats;      // payload beats a slot holds
  static constexpr int kMaxJobs = MaxJobs;        // job table entries
  static constexpr int kMaxWorkers = MaxWorkers;  // workers per job (bitmap bits)
  // Dtypes fp32_exact and exact_lanes (FEATURES bit 5): 64-bit lanes beside the 32-bit ones.
  static constexpr bool kExact = Exact;

  // Derived; do not change.
  static constexpr int kBeatBits = 512;
  static constexpr int kBeatBytes = kBeatBits / 8;
  static constexpr int kMaxFrameBeats = 1 + kMaxBeats;      // header beat + payload beats stored
  static constexpr int kMaxElements = kLanes * kMaxBeats;   // 32-bit accumulators per slot set
  static constexpr int kTreeLeaves = ceil_pow2(kNumPorts);  // adder tree inputs, padded
  static constexpr int kLog2Slots = log2_exact(kSlots);

  static_assert(kNumPorts >= 1 && kNumPorts <= 8, "NUM_PORTS must be 1..8 (FEATURES has 4 bits)");
  static_assert(kLanes * 32 == kBeatBits, "a beat is 512 bits of 32-bit lanes");
  static_assert(kSlots >= 1 && kSlots <= 65536 && (1 << kLog2Slots) == kSlots,
                "SLOTS must be a power of two, at most 65536 (16-bit slot field)");
  static_assert(kMaxBeats >= 1 && kMaxBeats * kLanes <= 1024,
                "MAX_BEATS * LANES must be 1..1024 (the wire's largest count)");
  static_assert(kMaxBeats <= 255, "MAX_BEATS must fit FEATURES bits 31:24");
  static_assert(kMaxJobs >= 1 && kMaxJobs <= 255, "MAX_JOBS must be 1..255 (FEATURES 15:8)");
  static_assert(kMaxWorkers >= 1 && kMaxWorkers <= 32, "MAX_WORKERS must be 1..32 (bitmap)");
};

// The defaults (formats/csr.json's parameters, as the RTL's *_DEFAULT); the synthesized top uses
// these.
using DefaultParams = Params<csr14::kDefaultNumPorts, csr14::kDefaultSlots, csr14::kDefaultMaxBeats,
                             csr14::kDefaultMaxJobs, csr14::kDefaultMaxWorkers>;
// The defaults without exact fp32 (FEATURES bit 5 clear: a design that drops those dtypes as
// unsupported_dtype, as the RTL built with EXACT = 0 does).
using WithoutExactParams =
    Params<csr14::kDefaultNumPorts, csr14::kDefaultSlots, csr14::kDefaultMaxBeats,
           csr14::kDefaultMaxJobs, csr14::kDefaultMaxWorkers, false>;

constexpr int NUM_PORTS = DefaultParams::kNumPorts;
constexpr int LANES = DefaultParams::kLanes;
constexpr int SLOTS = DefaultParams::kSlots;
constexpr int MAX_BEATS = DefaultParams::kMaxBeats;
constexpr int MAX_JOBS = DefaultParams::kMaxJobs;
constexpr int MAX_WORKERS = DefaultParams::kMaxWorkers;

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_PARAMS_HPP

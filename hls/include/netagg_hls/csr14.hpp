// The CSR map (hw/csr/csr_map.json) as the HLS kernel sees it.
//
// The one definition is the JSON; its generated C++ view, netagg/fpga_csr.hpp
// (scripts/gen_csr.py), is C++17 (inline variables, std::string_view), and Vitis HLS compiles
// kernels as C++14. So the kernel keeps this C++14 table, and tests/hls/csr_map_test.cpp checks
// it entry by entry against the generated header at compile time (static_assert) and against the
// JSON at run time: a change of the map that is not made here breaks the build of the tests.
#ifndef NETAGG_HLS_CSR14_HPP
#define NETAGG_HLS_CSR14_HPP

namespace netagg {
namespace fpga {
namespace csr14 {

constexpr unsigned kAddrBits = 12;

// Register byte offsets.
constexpr unsigned kVersion = 0x000;
constexpr unsigned kFeatures = 0x004;
constexpr unsigned kControl = 0x008;
constexpr unsigned kStatus = 0x00C;
constexpr unsigned kAggMacLo = 0x010;
constexpr unsigned kAggMacHi = 0x014;
constexpr unsigned kAggIp = 0x018;
constexpr unsigned kAggUdpPort = 0x01C;
constexpr unsigned kJobIndex = 0x020;
constexpr unsigned kJobId = 0x024;
constexpr unsigned kJobWorkers = 0x028;
constexpr unsigned kJobSlots = 0x02C;
constexpr unsigned kJobElements = 0x030;
constexpr unsigned kWorkerIndex = 0x034;
constexpr unsigned kWorkerIp = 0x038;
constexpr unsigned kWorkerUdpPort = 0x03C;
constexpr unsigned kWorkerMacLo = 0x040;
constexpr unsigned kWorkerMacHi = 0x044;
constexpr unsigned kCommit = 0x048;
constexpr unsigned kCounterIndex = 0x050;
constexpr unsigned kCounterLo = 0x054;
constexpr unsigned kCounterHi = 0x058;

constexpr unsigned kAggUdpPortReset = 20033;

// COMMIT commands (bits 1:0) and CONTROL bits.
constexpr unsigned kCommitStoreJob = 1;
constexpr unsigned kCommitStoreWorker = 2;
constexpr unsigned kCommitRemoveJob = 3;
constexpr unsigned kControlSoftReset = 1u << 0;
constexpr unsigned kControlClearCounters = 1u << 1;
constexpr unsigned kJobIdValid = 1u << 31;

// Counter indices (COUNTER_INDEX), in the JSON's order.
enum Counter {
  kFramesIn = 0,
  kFramesOut,
  kAggregated,
  kCompletions,
  kResultsResent,
  kMalformedTruncated,
  kMalformedNotIpv4,
  kMalformedBadIpHeader,
  kMalformedNotUdp,
  kMalformedWrongPort,
  kMalformedIpLengthMismatch,
  kMalformedUdpLengthMismatch,
  kMalformedBadVersion,
  kMalformedBadType,
  kMalformedBadDtype,
  kMalformedBadFlags,
  kMalformedReservedNonzero,
  kMalformedCountTooLarge,
  kMalformedLengthMismatch,
  kDroppedNotContribution,
  kDroppedUnknownJob,
  kDroppedRankOutOfRange,
  kDroppedForeignSource,
  kDroppedSlotOutOfRange,
  kDroppedCountTooLargeForJob,
  kDroppedCountMismatch,
  kDroppedDtypeMismatch,
  kDroppedDuplicate,
  kDroppedStale,
  kDroppedAhead,
  kCounterCount
};

}  // namespace csr14
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_CSR14_HPP

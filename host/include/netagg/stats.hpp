// SPDX-License-Identifier: Apache-2.0
// What a communicator reports (Communicator::stats, Communicator::fallback_stats) and the clock
// its timeouts are in. The protocol engine (netagg/engine.hpp) and the host fallback
// (netagg/fallback.hpp) count these; their own headers are not part of the installed API.
#pragma once

#include <chrono>
#include <cstdint>

namespace netagg {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;

struct EngineStats {
  std::uint64_t packets_sent = 0;  // first transmissions
  std::uint64_t retransmissions = 0;
  std::uint64_t results = 0;        // results accepted (one per packet)
  std::uint64_t duplicates = 0;     // results for packets already answered or not in flight
  std::uint64_t rejected = 0;       // undecodable, wrong job/rank/type, slot out of range, or the
                                    // in-flight packet's slot/set/seq with another count or dtype
  std::uint64_t foreign_epoch = 0;  // results of this job with another run's epoch, dropped
  // Notices (the aggregator dropped a packet in flight and said why; docs/wire-format.md), and
  // notices that named no packet in flight (another run's, late, or forged), ignored.
  std::uint64_t notices = 0;
  std::uint64_t notices_ignored = 0;
  // Packets sent again for others: a packet's predecessor on its slot, whose result this worker
  // has, sent along with the packet's later retransmissions (Engine::kRecoveryAfter).
  std::uint64_t recovery_resends = 0;
  std::uint64_t ce_results = 0;   // results that carried ECN's CE mark (congestion experienced)
  std::uint64_t window_cuts = 0;  // congestion window reductions (marks or loss)
  double cwnd = 0;   // the congestion window now, in slots (the window W when not controlled)
  double alpha = 0;  // the EWMA of the marked fraction
  std::uint64_t operations = 0;   // operations completed
  std::uint64_t rtt_samples = 0;  // round trips measured (packets answered without a resend)
  // Retransmissions shown unnecessary: a result came again for a packet already answered that
  // had been retransmitted, i.e. the aggregator answered the original and the copy. Then the
  // first result answered the original, so its round trip is known after all and is measured
  // (as Eifel detection does in TCP). (A copy the aggregator drops as a duplicate while the
  // round waits for other workers is not seen here.)
  std::uint64_t spurious_retransmissions = 0;
  // Adaptive only: retransmissions of packets overtaken by a later one's result (taken as lost
  // without waiting for the RTO); the others were timeouts.
  std::uint64_t overtaken_retransmissions = 0;
  // Results this engine did not take from the network: given by the host fallback
  // (deliver_external), computed by the workers or copied from one that had it.
  std::uint64_t host_results = 0;
  // Datagrams of no tree's job (or too short to say): counted by a worker's TreeEngines
  // (netagg/trees.hpp), never by an engine.
  std::uint64_t unroutable = 0;
  // The retransmission timeout now and the round-trip estimate behind it (zero before the
  // first sample, and always without adaptive_retransmit).
  Duration rto{0}, srtt{0}, rttvar{0};
  // Adaptive only: the timeout while an operation has no result yet (Engine::start_rto).
  Duration start_rto{0};
};

// The host fallback's counts (docs/fallback.md).
struct FallbackStats {
  std::uint64_t sessions = 0;        // sessions joined
  std::uint64_t shared_results = 0;  // results this rank got from another rank's copy
  std::uint64_t host_packets = 0;    // packets whose results the workers computed (all ranks)
  std::uint64_t resumed = 0;         // sessions that gave the operation back to the network
  std::uint64_t to_hosts = 0;    // trees that went to host mode (their later operations go there)
  std::uint64_t to_network = 0;  // trees that came back (a probe their aggregators answered)
  std::uint64_t probes = 0;      // operations of trees in host mode tried in the network
  double seconds = 0;            // time spent in sessions
};

}  // namespace netagg

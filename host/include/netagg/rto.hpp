// SPDX-License-Identifier: Apache-2.0
// The retransmission timeout from measured round trips, as TCP computes it (RFC 6298): a
// smoothed round-trip time SRTT and its mean deviation RTTVAR, updated per sample with gains 1/8
// and 1/4; RTO = SRTT + 4 RTTVAR, kept within [min, max]. Before the first sample the RTO is the
// initial value. The k-th retransmission of a packet waits backoff(k) = min(max, RTO * 2^k).
//
// The gains assume one sample per round trip. Where a round trip yields several (one per packet
// of a window), RFC 7323 (Appendix G) divides them by the samples expected per round trip, so
// that the estimate moves per round trip, not per sample: `per_round_trip` in on_sample.
//
// The engine feeds it only unambiguous samples (Karn's rule): the time from a packet's first
// transmission to its result, for packets never retransmitted and answered in order (a result
// that comes after a later packet's waited for a loss to be repaired). For in-network
// aggregation a round trip includes waiting for the job's slowest worker, so the RTO follows the
// stragglers too, which is what keeps a slow peer from setting off retransmissions.
#pragma once

#include <chrono>
#include <cstdint>

namespace netagg {

class RtoEstimator {
 public:
  using Duration = std::chrono::nanoseconds;

  // Throws Error(kInvalidArgument) unless 0 < min <= initial <= max.
  RtoEstimator(Duration initial, Duration min, Duration max);

  // One round-trip sample (negative samples count as zero), one of `per_round_trip` samples
  // expected per round trip: the gains are 1/(8 per_round_trip) and 1/(4 per_round_trip)
  // (RFC 7323, Appendix G; 0 counts as 1). The first sample sets SRTT and RTTVAR as it is.
  void on_sample(Duration rtt, std::uint32_t per_round_trip = 1);
  // A retransmission timer expired at `now`: the RTO doubles (up to max) and stays so until the
  // next sample, as TCP's does; otherwise, with Karn's rule, a round trip longer than the RTO
  // would retransmit every packet and never yield a sample to learn from. Timers of several
  // packets expiring together double it once: at most once per RTO.
  void on_timeout(std::chrono::steady_clock::time_point now);

  Duration rto() const { return rto_; }
  // The timeout of a packet retransmitted `retransmissions` times so far: RTO doubled that many
  // times, at most max (no overflow for any count).
  Duration backoff(unsigned retransmissions) const;

  std::uint64_t samples() const { return samples_; }
  Duration srtt() const { return srtt_; }      // zero before the first sample
  Duration rttvar() const { return rttvar_; }  // zero before the first sample
  Duration min() const { return min_; }
  Duration max() const { return max_; }

 private:
  Duration min_, max_;
  Duration srtt_{0}, rttvar_{0}, rto_;
  std::uint64_t samples_ = 0;
  std::chrono::steady_clock::time_point backed_off_at_{};
  bool backed_off_ = false;
};

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
#include "netagg/rto.hpp"

#include <algorithm>

#include "netagg/error.hpp"

namespace netagg {

RtoEstimator::RtoEstimator(Duration initial, Duration min, Duration max)
    : min_(min), max_(max), rto_(initial) {
  if (min <= Duration::zero() || initial < min || max < initial) {
    throw Error(Errc::kInvalidArgument,
                "retransmission timeout: need 0 < minimum <= initial <= maximum");
  }
}

void RtoEstimator::on_sample(Duration rtt, std::uint32_t per_round_trip) {
  rtt = std::max(rtt, Duration::zero());
  if (samples_ == 0) {
    srtt_ = rtt;
    rttvar_ = rtt / 2;
  } else {
    const Duration::rep n = std::max<std::uint32_t>(per_round_trip, 1);
    const Duration error = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
    rttvar_ = rttvar_ - rttvar_ / (4 * n) + error / (4 * n);  // (1 - 1/4n) RTTVAR + 1/4n |SRTT - R|
    srtt_ = srtt_ - srtt_ / (8 * n) + rtt / (8 * n);          // (1 - 1/8n) SRTT + 1/8n R
  }
  ++samples_;
  // Both terms are at most a few round trips; a sample near Duration::max would be clamped
  // by max_ long before 4 * RTTVAR could overflow, so compare before adding.
  const Duration spread = rttvar_ > (max_ - srtt_) / 4 ? max_ : 4 * rttvar_;
  const Duration rto = srtt_ >= max_ || spread >= max_ - srtt_ ? max_ : srtt_ + spread;
  rto_ = std::clamp(rto, min_, max_);
  backed_off_ = false;
}

void RtoEstimator::on_timeout(std::chrono::steady_clock::time_point now) {
  if (backed_off_ && now - backed_off_at_ < rto_) return;
  rto_ = rto_ > max_ / 2 ? max_ : rto_ * 2;
  backed_off_at_ = now;
  backed_off_ = true;
}

RtoEstimator::Duration RtoEstimator::backoff(unsigned retransmissions) const {
  Duration t = rto_;
  for (unsigned i = 0; i < retransmissions && t < max_; ++i) t = t > max_ / 2 ? max_ : t * 2;
  return std::min(t, max_);
}

}  // namespace netagg

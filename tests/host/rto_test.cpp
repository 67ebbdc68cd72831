// SPDX-License-Identifier: Apache-2.0
// RtoEstimator against RFC 6298's arithmetic, worked by hand, and its limits.
#include "netagg/rto.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include "netagg/error.hpp"

namespace netagg {
namespace {

using namespace std::chrono_literals;
using D = RtoEstimator::Duration;

TEST(RtoEstimator, InitialValueUntilTheFirstSample) {
  const RtoEstimator r(20ms, 1ms, 500ms);
  EXPECT_EQ(r.rto(), 20ms);
  EXPECT_EQ(r.samples(), 0u);
  EXPECT_EQ(r.srtt(), D::zero());
  EXPECT_EQ(r.backoff(0), 20ms);
  EXPECT_EQ(r.backoff(1), 40ms);
  EXPECT_EQ(r.backoff(4), 320ms);
  EXPECT_EQ(r.backoff(5), 500ms) << "capped";
  EXPECT_EQ(r.backoff(1000), 500ms) << "any count, no overflow";
}

TEST(RtoEstimator, FollowsRfc6298) {
  RtoEstimator r(20ms, 1ms, 500ms);
  // First sample R: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 3R.
  r.on_sample(2ms);
  EXPECT_EQ(r.srtt(), 2ms);
  EXPECT_EQ(r.rttvar(), 1ms);
  EXPECT_EQ(r.rto(), 6ms);
  // R = 4 ms: RTTVAR = 3/4 * 1 + 1/4 * |2 - 4| = 1.25 ms, SRTT = 7/8 * 2 + 1/8 * 4 = 2.25 ms,
  // RTO = 2.25 + 5 = 7.25 ms.
  r.on_sample(4ms);
  EXPECT_EQ(r.rttvar(), 1250us);
  EXPECT_EQ(r.srtt(), 2250us);
  EXPECT_EQ(r.rto(), 7250us);
  EXPECT_EQ(r.samples(), 2u);
  EXPECT_EQ(r.backoff(2), 29ms);
}

// RFC 7323, Appendix G: with n samples per round trip the gains are divided by n, so that a
// round trip's samples move the estimate about as far as one sample does with n = 1.
TEST(RtoEstimator, SeveralSamplesPerRoundTripMoveItAsOneDoes) {
  RtoEstimator one(20ms, 1ms, 500ms), eight(20ms, 1ms, 500ms);
  one.on_sample(2ms);
  eight.on_sample(2ms);
  one.on_sample(4ms);  // SRTT 2.25 ms, RTTVAR 1.25 ms (FollowsRfc6298)
  for (int i = 0; i < 8; ++i) eight.on_sample(4ms, 8);
  // Each of the 8: RTTVAR (1 - 1/32) RTTVAR + 1/32 |SRTT - 4|, SRTT (1 - 1/64) SRTT + 4/64.
  EXPECT_EQ(eight.srtt(), 2236751ns);
  EXPECT_EQ(eight.rttvar(), 1199407ns);
  EXPECT_EQ(eight.rto(), 7034379ns);  // against 7.25 ms
  EXPECT_EQ(eight.samples(), 9u);

  // A window of 64 samples equal to SRTT: one sample per round trip keeps 3/4 of the spread
  // (RTTVAR 0.78 ms), one per packet forgets it.
  RtoEstimator per_round_trip(20ms, 1ms, 500ms), per_packet(20ms, 1ms, 500ms);
  per_round_trip.on_sample(2ms);
  per_packet.on_sample(2ms);
  for (int i = 0; i < 64; ++i) {
    per_round_trip.on_sample(2ms, 64);
    per_packet.on_sample(2ms);
  }
  EXPECT_EQ(per_round_trip.rttvar(), 778446ns);
  EXPECT_EQ(per_round_trip.rto(), 5113784ns);
  EXPECT_EQ(per_packet.rto(), 2000012ns);
  // 0 counts as 1.
  RtoEstimator zero(20ms, 1ms, 500ms);
  zero.on_sample(2ms);
  zero.on_sample(4ms, 0);
  EXPECT_EQ(zero.rto(), one.rto());
}

TEST(RtoEstimator, SteadyRoundTripsConvergeToTheFloorOrTheRoundTrip) {
  RtoEstimator r(20ms, 1ms, 500ms);
  for (int i = 0; i < 200; ++i) r.on_sample(3ms);
  // RTTVAR decays to (nearly) zero, SRTT to the round trip.
  const double rto_ms = std::chrono::duration<double, std::milli>(r.rto()).count();
  EXPECT_NEAR(rto_ms, 3.0, 0.01);
  RtoEstimator fast(20ms, 1ms, 500ms);
  for (int i = 0; i < 200; ++i) fast.on_sample(50us);
  EXPECT_EQ(fast.rto(), 1ms) << "never below the floor";
}

TEST(RtoEstimator, ClampsAtTheCeilingWithoutOverflow) {
  RtoEstimator r(20ms, 1ms, 500ms);
  r.on_sample(D::max());
  EXPECT_EQ(r.rto(), 500ms);
  r.on_sample(D::max() / 2);
  EXPECT_EQ(r.rto(), 500ms);
  r.on_sample(-5ms);  // a clock that went backwards counts as zero
  EXPECT_EQ(r.rto(), 500ms) << "one short sample does not undo the spread";
  EXPECT_EQ(r.samples(), 3u);
}

TEST(RtoEstimator, ExpiryBacksOffOncePerRtoUntilTheNextSample) {
  RtoEstimator r(20ms, 1ms, 500ms);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1s;
  r.on_timeout(t0);
  EXPECT_EQ(r.rto(), 40ms);
  r.on_timeout(t0 + 39ms);  // another timer of the same burst
  EXPECT_EQ(r.rto(), 40ms);
  r.on_timeout(t0 + 40ms);
  EXPECT_EQ(r.rto(), 80ms);
  for (int i = 0; i < 10; ++i) r.on_timeout(t0 + 1s * (i + 1));
  EXPECT_EQ(r.rto(), 500ms) << "capped";
  r.on_sample(2ms);
  EXPECT_EQ(r.rto(), 6ms) << "a sample ends the backoff";
  r.on_timeout(t0 + 20s);
  EXPECT_EQ(r.rto(), 12ms);
}

TEST(RtoEstimator, RejectsInconsistentLimits) {
  EXPECT_THROW(RtoEstimator(20ms, 0ms, 500ms), Error);
  EXPECT_THROW(RtoEstimator(20ms, 30ms, 500ms), Error);
  EXPECT_THROW(RtoEstimator(20ms, 1ms, 10ms), Error);
  EXPECT_NO_THROW(RtoEstimator(5ms, 5ms, 5ms));
}

}  // namespace
}  // namespace netagg

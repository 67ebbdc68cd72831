// SPDX-License-Identifier: Apache-2.0
// The exact fp32 arithmetic's converters in RTL (hw/rtl/netagg_exact_to_lane.sv,
// netagg_exact_to_fp32.sv) against the kernel's C++ (hls/include/netagg_hls/exact.hpp, itself
// checked against the host's reference model): every float class at many exponents, a million
// random floats at random exponents, a million random lane sums over the whole range.
#include <gtest/gtest.h>
#include <verilated.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "Vnetagg_exact_to_fp32.h"
#include "Vnetagg_exact_to_lane.h"
#include "netagg_hls/exact.hpp"

namespace netagg::fpga {
namespace {

class ExactConverters : public ::testing::Test {
 protected:
  ExactLane to_lane(std::uint32_t x, std::int16_t e) {
    to_lane_->fp32_i = x;
    to_lane_->exponent_i = static_cast<std::uint16_t>(e);
    to_lane_->eval();
    return {static_cast<std::int64_t>(to_lane_->lane_o),
            static_cast<std::uint8_t>(to_lane_->special_o)};
  }
  std::uint32_t to_fp32(const ExactLane& lane, std::int16_t e) {
    to_fp32_->lane_i = static_cast<std::uint64_t>(lane.value);
    to_fp32_->special_i = lane.special;
    to_fp32_->exponent_i = static_cast<std::uint16_t>(e);
    to_fp32_->eval();
    return to_fp32_->fp32_o;
  }
  static bool same(const ExactLane& a, const ExactLane& b) {
    return a.value == b.value && a.special == b.special;
  }

  std::unique_ptr<VerilatedContext> ctx_ = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vnetagg_exact_to_lane> to_lane_ =
      std::make_unique<Vnetagg_exact_to_lane>(ctx_.get());
  std::unique_ptr<Vnetagg_exact_to_fp32> to_fp32_ =
      std::make_unique<Vnetagg_exact_to_fp32>(ctx_.get());
};

// Every exponent (and none) for floats of every class: zeros, subnormals, normals around 1 and
// the largest, infinities, NaNs.
TEST_F(ExactConverters, EveryFloatClassAtEveryExponent) {
  const std::vector<std::uint32_t> words = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x00000003u, 0x007FFFFFu, 0x00800000u,
      0x00FFFFFFu, 0x33800000u, 0x3EFFFFFFu, 0x3F000000u, 0x3F800000u, 0x3FC00001u,
      0x4B7FFFFFu, 0x7F000000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u};
  int failures = 0;
  for (std::uint32_t magnitude : words)
    for (std::uint32_t sign : {0u, 0x80000000u})
      for (int e = kExactMinExponent - 1; e <= kExactMaxExponent; ++e) {
        const std::uint32_t x = sign | magnitude;
        const auto ee = static_cast<std::int16_t>(e < kExactMinExponent ? kExactExponentNone : e);
        if (!same(to_lane(x, ee), exact_to_lane(x, ee)) && ++failures <= 5)
          ADD_FAILURE() << std::hex << x << std::dec << " at " << ee;
      }
  EXPECT_EQ(failures, 0);
}

TEST_F(ExactConverters, MillionRandomFloatsAtRandomExponents) {
  std::mt19937_64 rng(21);
  int failures = 0;
  for (int i = 0; i < 1000000; ++i) {
    const auto x = static_cast<std::uint32_t>(rng());
    // Mostly exponents the float fits under (the datapath's case), some below it.
    const int fit = static_cast<int>((x >> 23) & 0xFF) - 126;
    int e = fit + static_cast<int>(rng() % 64) - 4;
    if (rng() % 32 == 0) e = kExactMinExponent - 1;  // none
    e = std::min(std::max(e, kExactMinExponent - 1), kExactMaxExponent);
    const auto ee = static_cast<std::int16_t>(e < kExactMinExponent ? kExactExponentNone : e);
    if (!same(to_lane(x, ee), exact_to_lane(x, ee)) && ++failures <= 5)
      ADD_FAILURE() << std::hex << x << std::dec << " at " << ee;
  }
  EXPECT_EQ(failures, 0);
}

TEST_F(ExactConverters, MillionRandomLaneSumsBackToFp32) {
  std::mt19937_64 rng(22);
  int failures = 0;
  for (int i = 0; i < 1000000; ++i) {
    const int width = static_cast<int>(rng() % 64);
    std::int64_t v = width == 0 ? 0 : static_cast<std::int64_t>(rng() >> (64 - width));
    if (rng() % 8 == 0) v = (std::int64_t{1} << width) - 1;  // all ones: rounds up a binade
    if (rng() & 1) v = -v;
    const auto special = static_cast<std::uint8_t>(rng() % 16 == 0 ? rng() % 4 : 0);
    const int e = kExactMinExponent - 1 + static_cast<int>(rng() % 227);
    const auto ee = static_cast<std::int16_t>(e < kExactMinExponent ? kExactExponentNone : e);
    const ExactLane lane = {v, special};
    if (to_fp32(lane, ee) != exact_to_fp32(lane, ee) && ++failures <= 5)
      ADD_FAILURE() << v << " special " << int(special) << " at " << ee << ": rtl " << std::hex
                    << to_fp32(lane, ee) << " c++ " << exact_to_fp32(lane, ee);
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace netagg::fpga

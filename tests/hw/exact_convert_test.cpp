// SPDX-License-Identifier: Apache-2.0
// The exact fp32 arithmetic's converters in RTL (hw/rtl/netagg_exact_to_lane.sv,
// netagg_exact_to_fp32.sv), in every register placement, against the kernel's C++
// (hls/include/netagg_hls/exact.hpp, itself checked against the host's reference model): every
// float class at every exponent, a million random floats at random exponents, a million random
// lane sums over the whole range, one a cycle through the pipeline.
#include <gtest/gtest.h>
#include <verilated.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "Vnetagg_exact_to_fp32.h"
#include "Vnetagg_exact_to_fp32_s1.h"
#include "Vnetagg_exact_to_fp32_s2.h"
#include "Vnetagg_exact_to_fp32_s3.h"
#include "Vnetagg_exact_to_lane.h"
#include "Vnetagg_exact_to_lane_s1.h"
#include "netagg_hls/exact.hpp"

namespace netagg::fpga {
namespace {

struct ToLaneInput {
  std::uint32_t x;
  std::int16_t e;
};
struct ToFp32Input {
  ExactLane lane;
  std::int16_t e;
};

template <typename Model>
void reset(Model& m) {
  m.rst_ni = 0;
  m.valid_i = 0;
  m.clk_i = 0;
  m.eval();
  for (int i = 0; i < 4; ++i) {
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
  }
  m.rst_ni = 1;
}

// Drives `inputs` one a cycle (set(m, input) loads the ports) and returns get(m) for every
// cycle valid_o is high, in order; fails unless the latency is `stages` for every input.
template <typename Model, typename In, typename Set, typename Get>
auto run(Model& m, unsigned stages, const std::vector<In>& inputs, Set set, Get get) {
  reset(m);
  std::vector<decltype(get(m))> out;
  std::size_t cycle = 0;
  for (; out.size() < inputs.size() && cycle < inputs.size() + 10; ++cycle) {
    m.valid_i = cycle < inputs.size();
    if (cycle < inputs.size()) set(m, inputs[cycle]);
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
    if (m.valid_o) {
      EXPECT_EQ(cycle + 1, out.size() + stages) << "latency";
      out.push_back(get(m));
    }
  }
  EXPECT_EQ(out.size(), inputs.size());
  return out;
}

template <typename Model>
std::vector<ExactLane> lanes(unsigned stages, const std::vector<ToLaneInput>& in) {
  auto ctx = std::make_unique<VerilatedContext>();
  Model m(ctx.get());
  return run(
      m, stages, in,
      [](Model& mm, const ToLaneInput& i) {
        mm.fp32_i = i.x;
        mm.exponent_i = static_cast<std::uint16_t>(i.e);
      },
      [](Model& mm) {
        return ExactLane{static_cast<std::int64_t>(mm.lane_o),
                         static_cast<std::uint8_t>(mm.special_o)};
      });
}

template <typename Model>
std::vector<std::uint32_t> floats(unsigned stages, const std::vector<ToFp32Input>& in) {
  auto ctx = std::make_unique<VerilatedContext>();
  Model m(ctx.get());
  return run(
      m, stages, in,
      [](Model& mm, const ToFp32Input& i) {
        mm.lane_i = static_cast<std::uint64_t>(i.lane.value);
        mm.special_i = i.lane.special;
        mm.exponent_i = static_cast<std::uint16_t>(i.e);
      },
      [](Model& mm) { return static_cast<std::uint32_t>(mm.fp32_o); });
}

void expect_lanes(const std::vector<ToLaneInput>& in) {
  std::vector<ExactLane> want;
  for (const auto& i : in) want.push_back(exact_to_lane(i.x, i.e));
  for (unsigned stages : {1u, 2u}) {
    const auto got =
        stages == 1 ? lanes<Vnetagg_exact_to_lane_s1>(1, in) : lanes<Vnetagg_exact_to_lane>(2, in);
    ASSERT_EQ(got.size(), in.size());
    int failures = 0;
    for (std::size_t k = 0; k < in.size(); ++k)
      if ((got[k].value != want[k].value || got[k].special != want[k].special) && ++failures <= 5)
        ADD_FAILURE() << "STAGES " << stages << ": " << std::hex << in[k].x << std::dec << " at "
                      << in[k].e << ": rtl " << got[k].value << "/" << int(got[k].special)
                      << ", c++ " << want[k].value << "/" << int(want[k].special);
  }
}

void expect_floats(const std::vector<ToFp32Input>& in) {
  std::vector<std::uint32_t> want;
  for (const auto& i : in) want.push_back(exact_to_fp32(i.lane, i.e));
  for (unsigned stages : {1u, 2u, 3u, 4u}) {
    const auto got = stages == 1   ? floats<Vnetagg_exact_to_fp32_s1>(1, in)
                     : stages == 2 ? floats<Vnetagg_exact_to_fp32_s2>(2, in)
                     : stages == 3 ? floats<Vnetagg_exact_to_fp32_s3>(3, in)
                                   : floats<Vnetagg_exact_to_fp32>(4, in);
    ASSERT_EQ(got.size(), in.size());
    int failures = 0;
    for (std::size_t k = 0; k < in.size(); ++k)
      if (got[k] != want[k] && ++failures <= 5)
        ADD_FAILURE() << "STAGES " << stages << ": " << in[k].lane.value << " special "
                      << int(in[k].lane.special) << " at " << in[k].e << ": rtl " << std::hex
                      << got[k] << ", c++ " << want[k];
  }
}

std::int16_t exponent_or_none(int e) {
  return static_cast<std::int16_t>(e < kExactMinExponent ? kExactExponentNone : e);
}

TEST(ExactConverters, EveryFloatClassAtEveryExponent) {
  const std::vector<std::uint32_t> words = {
      0x00000000u, 0x00000001u, 0x00000003u, 0x007FFFFFu, 0x00800000u, 0x00FFFFFFu,
      0x33800000u, 0x3EFFFFFFu, 0x3F000000u, 0x3F800000u, 0x3FC00001u, 0x4B7FFFFFu,
      0x7F000000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u};
  std::vector<ToLaneInput> in;
  for (std::uint32_t magnitude : words)
    for (std::uint32_t sign : {0u, 0x80000000u})
      for (int e = kExactMinExponent - 1; e <= kExactMaxExponent; ++e)
        in.push_back({sign | magnitude, exponent_or_none(e)});
  expect_lanes(in);
}

TEST(ExactConverters, MillionRandomFloatsAtRandomExponents) {
  std::mt19937_64 rng(21);
  std::vector<ToLaneInput> in;
  for (int i = 0; i < 1000000; ++i) {
    const auto x = static_cast<std::uint32_t>(rng());
    // Mostly exponents the float fits under (the datapath's case), some below it, some none.
    const int fit = static_cast<int>((x >> 23) & 0xFF) - 126;
    int e = fit + static_cast<int>(rng() % 64) - 4;
    if (rng() % 32 == 0) e = kExactMinExponent - 1;
    e = std::min(std::max(e, kExactMinExponent - 1), kExactMaxExponent);
    in.push_back({x, exponent_or_none(e)});
  }
  expect_lanes(in);
}

TEST(ExactConverters, MillionRandomLaneSumsBackToFp32) {
  std::mt19937_64 rng(22);
  std::vector<ToFp32Input> in;
  for (int i = 0; i < 1000000; ++i) {
    const int width = static_cast<int>(rng() % 64);
    std::int64_t v = width == 0 ? 0 : static_cast<std::int64_t>(rng() >> (64 - width));
    if (rng() % 8 == 0) v = (std::int64_t{1} << width) - 1;  // all ones: rounds up a binade
    if (rng() & 1) v = -v;
    const auto special = static_cast<std::uint8_t>(rng() % 16 == 0 ? rng() % 4 : 0);
    const int e = kExactMinExponent - 1 + static_cast<int>(rng() % 227);
    in.push_back({{v, special}, exponent_or_none(e)});
  }
  expect_floats(in);
}

}  // namespace
}  // namespace netagg::fpga

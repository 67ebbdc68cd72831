// SPDX-License-Identifier: Apache-2.0
// The kernel's arithmetic (hls/include/netagg_hls/arith.hpp) against the host: fp32_add bit for
// bit against the x86 addss instruction on a million random pairs and every special class,
// bf16 rounding against a reference built from double comparisons, and the adder tree's order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "fpga_test_util.hpp"
#include "netagg_hls/arith.hpp"

namespace netagg::fpga {
namespace {

using testing::bits;
using testing::from_bits;
using testing::host_add;
using testing::reference_bf16;

const std::vector<std::uint32_t>& special_values() {
  static const std::vector<std::uint32_t> v = [] {
    std::vector<std::uint32_t> out;
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      for (std::uint32_t magnitude :
           {0x00000000u, 0x00000001u, 0x00000002u, 0x00000003u, 0x003FFFFFu, 0x00400000u,
            0x007FFFFEu, 0x007FFFFFu,                                         // subnormals
            0x00800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u, 0x0B800000u,  // smallest normals
            0x33800000u, 0x34000000u, 0x3F7FFFFFu, 0x3F800000u, 0x3F800001u, 0x3FFFFFFFu,
            0x40000000u, 0x4B000000u, 0x4B7FFFFFu, 0x4B800000u,  // around 1, 2, 2^23, 2^24
            0x7E800000u, 0x7F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu,  // largest finite
            0x7F800000u,                                         // infinity
            0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FC00001u, 0x7FFFFFFFu}) {  // NaNs
        out.push_back(sign | magnitude);
      }
    }
    return out;
  }();
  return v;
}

TEST(HlsFp32Add, EverySpecialPairMatchesTheHostFpu) {
  for (std::uint32_t a : special_values())
    for (std::uint32_t b : special_values())
      ASSERT_EQ(fp32_add(a, b), host_add(a, b)) << std::hex << a << " + " << b;
}

TEST(HlsFp32Add, SpecRulesSpelledOut) {
  EXPECT_EQ(fp32_add(0x80000000u, 0x80000000u), 0x80000000u);  // -0 + -0 = -0
  EXPECT_EQ(fp32_add(0x00000000u, 0x80000000u), 0x00000000u);  // +0 + -0 = +0
  EXPECT_EQ(fp32_add(bits(1.5f), bits(-1.5f)), 0x00000000u);   // x + -x = +0
  EXPECT_EQ(fp32_add(0x7F800000u, 0xFF800000u), 0xFFC00000u);  // inf - inf: default NaN
  EXPECT_EQ(fp32_add(0x7F800001u, 0xFFC00002u), 0x7FC00001u);  // first NaN, quieted
  EXPECT_EQ(fp32_add(bits(1.0f), 0xFF800005u), 0xFFC00005u);   // second NaN, quieted
  EXPECT_EQ(fp32_add(0x00000001u, 0x00000001u), 0x00000002u);  // subnormals kept, no flush
  EXPECT_EQ(fp32_add(0x007FFFFFu, 0x00000001u), 0x00800000u);  // subnormal to normal
  EXPECT_EQ(fp32_add(0x7F7FFFFFu, 0x73000000u), 0x7F800000u);  // FLT_MAX + half ulp: inf (tie, odd)
  EXPECT_EQ(fp32_add(0x7F7FFFFFu, 0x72FFFFFFu), 0x7F7FFFFFu);  // below half ulp: stays
  EXPECT_EQ(fp32_add(bits(1.0f), bits(0x1p-24f)), bits(1.0f));  // tie to even (down)
  EXPECT_EQ(fp32_add(bits(1.0f + 0x1p-23f), bits(0x1p-24f)), bits(1.0f + 0x1p-22f));  // up
}

TEST(HlsFp32Add, MillionRandomPairsMatchTheHostFpu) {
  std::mt19937_64 rng(20240603);
  auto random_bits = [&] { return static_cast<std::uint32_t>(rng()); };
  // Operands close in exponent (cancellation, carries), far apart (sticky), and subnormal.
  auto near = [&](std::uint32_t a) {
    const std::uint32_t exp_delta = static_cast<std::uint32_t>(rng() % 5) << 23;
    const std::uint32_t b = (a & 0xFF800000u) - (exp_delta & 0x7F800000u) * (rng() & 1) +
                            static_cast<std::uint32_t>(rng() & 0x7FFFFFu);
    return (rng() & 1) ? b ^ 0x80000000u : b;
  };
  auto subnormal = [&] {
    return static_cast<std::uint32_t>(rng() & 0x807FFFFFu) | ((rng() % 4 == 0) ? 0x00800000u : 0);
  };
  std::size_t mismatches = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    std::uint32_t a = random_bits(), b;
    switch (i % 4) {
      case 0:
        b = random_bits();
        break;
      case 1:
        b = near(a);
        break;
      case 2:
        a = subnormal();
        b = (rng() & 1) ? subnormal() : near(a);
        break;
      default:
        b = a ^ 0x80000000u ^ static_cast<std::uint32_t>(rng() & 0xF);
        break;
    }
    if (fp32_add(a, b) != host_add(a, b) && ++mismatches <= 5)
      ADD_FAILURE() << std::hex << a << " + " << b << ": kernel " << fp32_add(a, b) << ", host "
                    << host_add(a, b);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(HlsBf16, WideningIsExact) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const std::uint32_t f = bf16_to_fp32(static_cast<std::uint16_t>(h));
    EXPECT_EQ(f >> 16, h);
    EXPECT_EQ(f & 0xFFFF, 0u);
  }
}

TEST(HlsBf16, NarrowingRoundsToNearestEvenAndKeepsNan) {
  std::vector<std::uint32_t> cases = special_values();
  for (std::uint32_t base : {0x3F800000u, 0x3F810000u, 0x7F7F0000u, 0x00010000u, 0x00000000u}) {
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      cases.push_back(base | low);
      cases.push_back(0x80000000u | base | low);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1'000'000; ++i) cases.push_back(static_cast<std::uint32_t>(rng()));
  for (std::uint32_t f : cases) ASSERT_EQ(fp32_to_bf16(f), reference_bf16(f)) << std::hex << f;
  EXPECT_EQ(fp32_to_bf16(0x3F808000u), 0x3F80);  // tie, even: down
  EXPECT_EQ(fp32_to_bf16(0x3F818000u), 0x3F82);  // tie, odd: up
  EXPECT_EQ(fp32_to_bf16(0x7F7FFFFFu), 0x7F80);  // rounds to infinity
  EXPECT_EQ(fp32_to_bf16(0x7F800001u), 0x7FC0);  // signalling NaN: stays NaN, quieted
}

// The tree's order for 4 ports, every presence mask, written out by hand.
TEST(HlsTree, FourPortsAddInTheSpecifiedOrder) {
  // Values where the order changes the fp32 result.
  const float a = 1e8f, b = 3.0f, c = -1e8f, d = 5.0f;
  const float p[4] = {a, b, c, d};
  auto expected = [&](unsigned mask) -> float {
    switch (mask) {
      case 0b0001:
        return a;
      case 0b0010:
        return b;
      case 0b0011:
        return a + b;
      case 0b0100:
        return c;
      case 0b0101:
        return a + c;
      case 0b0110:
        return b + c;
      case 0b0111:
        return (a + b) + c;
      case 0b1000:
        return d;
      case 0b1001:
        return a + d;
      case 0b1010:
        return b + d;
      case 0b1011:
        return (a + b) + d;
      case 0b1100:
        return c + d;
      case 0b1101:
        return a + (c + d);
      case 0b1110:
        return b + (c + d);
      default:
        return (a + b) + (c + d);
    }
  };
  for (unsigned mask = 1; mask < 16; ++mask) {
    std::uint32_t in[4][2];
    bool present[4];
    for (int i = 0; i < 4; ++i) {
      in[i][0] = bits(p[i]);
      in[i][1] = static_cast<std::uint32_t>(i + 1) * 1000u;  // an int lane alongside
      present[i] = (mask >> i) & 1;
    }
    std::uint32_t out[2] = {0, 0};
    ASSERT_TRUE((tree_reduce<Fp32Elem, 2, 4>(in, present, out)));
    EXPECT_EQ(out[0], bits(expected(mask))) << "mask " << mask;
    std::uint32_t int_out[2];
    ASSERT_TRUE((tree_reduce<Int32Elem, 2, 4>(in, present, int_out)));
    std::uint32_t int_sum = 0;
    for (int i = 0; i < 4; ++i)
      if (present[i]) int_sum += in[i][1];
    EXPECT_EQ(int_out[1], int_sum);
  }
  // The order matters for these values: the test could tell a different tree apart.
  EXPECT_NE(bits((a + b) + (c + d)), bits(((a + b) + c) + d));
  const bool none[4] = {false, false, false, false};
  std::uint32_t in[4][2] = {}, out[2] = {7, 7};
  EXPECT_FALSE((tree_reduce<Fp32Elem, 2, 4>(in, none, out)));
  EXPECT_EQ(out[0], 7u);
}

TEST(HlsTree, EightPortsPairUpLevelByLevel) {
  const float v[8] = {1e8f, 3.0f, -1e8f, 5.0f, 7.0f, 1e9f, 11.0f, -1e9f};
  std::uint32_t in[8][1];
  bool all[8], some[8];
  for (int i = 0; i < 8; ++i) {
    in[i][0] = bits(v[i]);
    all[i] = true;
    some[i] = i != 1 && i != 4 && i != 7;
  }
  std::uint32_t out[1];
  ASSERT_TRUE((tree_reduce<Fp32Elem, 1, 8>(in, all, out)));
  EXPECT_EQ(out[0], bits(((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))));
  ASSERT_TRUE((tree_reduce<Fp32Elem, 1, 8>(in, some, out)));
  EXPECT_EQ(out[0], bits((v[0] + (v[2] + v[3])) + (v[5] + v[6])));
}

}  // namespace
}  // namespace netagg::fpga

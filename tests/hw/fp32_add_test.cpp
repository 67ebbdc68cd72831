// SPDX-License-Identifier: Apache-2.0
// netagg_fp32_add in Verilator, bit for bit against the host FPU (x86 SSE addss, default MXCSR:
// round to nearest even, no flush to zero), one pair a cycle through the pipeline. The default
// model (STAGES from netagg_pkg) gets a million random pairs; the models with the other register
// placements get every special pair and fewer random ones.
//
// Built a second time as fp32_add_netlist_test (NETAGG_FP32_ADD_NETLIST_STAGES): then the model
// is the gate netlist yosys synthesizes from the RTL, so the test shows that yosys reads the
// SystemVerilog the way Verilator does.
#include <gtest/gtest.h>
#include <verilated.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define NETAGG_HAVE_SSE 1
#else
#define NETAGG_HAVE_SSE 0
#endif

#ifdef NETAGG_FP32_ADD_NETLIST_STAGES
#include "Vnetagg_fp32_add_netlist.h"
using DefaultModel = Vnetagg_fp32_add_netlist;
#else
#include "Vnetagg_fp32_add.h"
#include "Vnetagg_fp32_add_netagg_fp32_add.h"  // STAGES, public in the RTL
#include "Vnetagg_fp32_add_s1.h"
#include "Vnetagg_fp32_add_s2.h"
#include "Vnetagg_fp32_add_s4.h"
#include "Vnetagg_fp32_add_s6.h"
using DefaultModel = Vnetagg_fp32_add;
#endif

namespace {

// a + b as the x86 instruction computes it, a the first (destination) operand: the asm pins the
// operand order (the compiler may swap a commutative `+`, which changes which NaN is returned)
// and keeps the compiler from folding the sum at compile time.
std::uint32_t host_add(std::uint32_t a, std::uint32_t b) {
#if NETAGG_HAVE_SSE
  float x = std::bit_cast<float>(a);
  const float y = std::bit_cast<float>(b);
  asm("addss %1, %0" : "+x"(x) : "x"(y));
  return std::bit_cast<std::uint32_t>(x);
#else
  (void)a;
  (void)b;
  return 0;
#endif
}

bool host_fpu_is_the_reference() {
#if NETAGG_HAVE_SSE
  const unsigned csr = _mm_getcsr();
  const bool round_to_nearest = ((csr >> 13) & 3u) == 0;
  const bool no_ftz_daz = (csr & 0x8040u) == 0;
  return round_to_nearest && no_ftz_daz;
#else
  return false;
#endif
}

#define REQUIRE_HOST_FPU()                                                           \
  if (!host_fpu_is_the_reference()) {                                                \
    GTEST_SKIP() << "needs x86 SSE in the default MXCSR (nearest even, no FTZ/DAZ)"; \
  }

bool is_nan(std::uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu); }
bool is_inf(std::uint32_t x) { return (x & 0x7FFFFFFFu) == 0x7F800000u; }
bool is_subnormal(std::uint32_t x) { return (x & 0x7F800000u) == 0 && (x & 0x007FFFFFu); }
bool is_zero(std::uint32_t x) { return (x & 0x7FFFFFFFu) == 0; }

struct Pair {
  std::uint32_t a, b;
};

// One model in its own VerilatedContext, clocked one cycle per call.
template <class Model>
class Pipe {
 public:
  Pipe() {
    ctx_->randReset(2);  // registers start random: the design may not rely on power-up zeros
    model_ = std::make_unique<Model>(ctx_.get());
    reset();
  }

  void reset() {
    model_->rst_ni = 0;
    model_->valid_i = 0;
    for (int i = 0; i < 3; ++i) tick();
    model_->rst_ni = 1;
  }

  struct Out {
    bool valid;
    std::uint32_t sum;
  };

  // Presents the inputs for one cycle; returns the outputs after the rising edge.
  Out cycle(bool valid, std::uint32_t a, std::uint32_t b) {
    model_->valid_i = valid;
    model_->a_i = a;
    model_->b_i = b;
    tick();
    return {model_->valid_o != 0, model_->sum_o};
  }

  void set_reset(bool active) { model_->rst_ni = active ? 0 : 1; }

 private:
  void tick() {
    model_->clk_i = 0;
    model_->eval();
    ctx_->timeInc(1);
    model_->clk_i = 1;
    model_->eval();
    ctx_->timeInc(1);
  }

  std::unique_ptr<VerilatedContext> ctx_ = std::make_unique<VerilatedContext>();
  std::unique_ptr<Model> model_;
};

// Streams pairs through the pipeline, one a cycle with random bubbles, and checks that each
// sum leaves exactly `stages` cycles after its operands entered, in order, and equals the host
// FPU's. Returns the number of mismatches (the first few are reported).
template <class Model>
int stream_and_check(Pipe<Model>& pipe, unsigned stages, const std::vector<Pair>& pairs,
                     std::mt19937_64& rng, double bubble_rate) {
  std::bernoulli_distribution bubble(bubble_rate);
  // What the output shows after cycle t: the input of cycle t - (stages - 1).
  // The pipeline is empty when this starts (after a reset or the drain at the end of a
  // previous call), so the first stages - 1 outputs must be invalid too.
  std::deque<std::pair<bool, Pair>> in_flight(stages - 1, {false, Pair{0, 0}});
  int mismatches = 0;
  std::size_t next = 0;
  const auto check = [&](const typename Pipe<Model>::Out& out) {
    const auto [valid, pair] = in_flight.front();
    in_flight.pop_front();
    if (out.valid != valid) {
      if (++mismatches <= 5) ADD_FAILURE() << "valid_o " << out.valid << ", expected " << valid;
      return;
    }
    if (!valid) return;
    const std::uint32_t expected = host_add(pair.a, pair.b);
    if (out.sum != expected && ++mismatches <= 5) {
      ADD_FAILURE() << std::hex << "0x" << pair.a << " + 0x" << pair.b << ": RTL 0x" << out.sum
                    << ", host 0x" << expected;
    }
  };
  while (next < pairs.size()) {
    const bool valid = !bubble(rng);
    const Pair p = valid
                       ? pairs[next++]
                       : Pair{static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng())};
    in_flight.emplace_back(valid, p);
    check(pipe.cycle(valid, p.a, p.b));
  }
  for (unsigned i = 0; i < stages; ++i) {
    in_flight.emplace_back(false, Pair{0, 0});
    check(pipe.cycle(false, 0, 0));
  }
  return mismatches;
}

// ---- operands ------------------------------------------------------------------------------

std::vector<std::uint32_t> special_values() {
  std::vector<std::uint32_t> magnitudes = {
      0x00000000,                                                  // zero
      0x00000001,                                                  // smallest subnormal
      0x00000002, 0x00000003, 0x00012345, 0x003FFFFF, 0x00400000,  // subnormals around the middle
      0x007FFFFE, 0x007FFFFF,                                      // largest subnormals
      0x00800000, 0x00800001,                                      // smallest normals
      0x00FFFFFF, 0x01000000, 0x01800000,
      0x33800000,  // 2^-24: half an ulp of 1
      0x34000000,  // 2^-23: an ulp of 1
      0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x40000000,
      0x4B7FFFFF, 0x4B800000,  // 2^24 - 1 and 2^24
      0x7E800000, 0x7F000000,
      0x73000000,                          // 2^103: half an ulp of the largest finite
      0x7F7FFFFE, 0x7F7FFFFF,              // largest finite
      0x7F800000,                          // infinity
      0x7FC00000,                          // default quiet NaN
      0x7FC00001, 0x7FFFFFFF, 0x7FD55555,  // quiet NaNs with payloads
      0x7F800001, 0x7FA00000, 0x7FBFFFFF,  // signaling NaNs
  };
  std::vector<std::uint32_t> values;
  for (auto m : magnitudes) {
    values.push_back(m);
    values.push_back(m | 0x80000000u);
  }
  return values;
}

std::vector<Pair> every_special_pair() {
  const auto values = special_values();
  std::vector<Pair> pairs;
  for (auto a : values) {
    for (auto b : values) pairs.push_back({a, b});
  }
  return pairs;
}

std::uint32_t make_float(std::uint32_t sign, std::uint32_t exponent, std::uint32_t fraction) {
  return (sign << 31) | ((exponent & 0xFF) << 23) | (fraction & 0x7FFFFF);
}

// A mix of operand classes; each pair draws one.
std::vector<Pair> random_pairs(std::size_t n, std::mt19937_64& rng) {
  std::vector<Pair> pairs;
  pairs.reserve(n);
  auto u32 = [&] { return static_cast<std::uint32_t>(rng()); };
  auto range = [&](std::uint32_t lo, std::uint32_t hi) {
    return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  };
  for (std::size_t i = 0; i < n; ++i) {
    Pair p{};
    switch (i % 8) {
      case 0:  // any bit patterns
        p = {u32(), u32()};
        break;
      case 1: {  // exponents within 2: alignment by 0..2, cancellation when signs differ
        const std::uint32_t e = range(0, 254);
        const std::uint32_t f = std::min<std::uint32_t>(254, e + range(0, 2));
        p = {make_float(u32() & 1, e, u32()), make_float(u32() & 1, f, u32())};
        break;
      }
      case 2: {  // b = -(a +- a few ulps): massive cancellation, exact results, zeros
        const std::uint32_t a = make_float(u32() & 1, range(0, 254), u32());
        const std::int32_t k = static_cast<std::int32_t>(range(0, 8)) - 4;
        const std::uint32_t b_mag = (a & 0x7FFFFFFFu) + static_cast<std::uint32_t>(k);
        p = {a, ((a ^ 0x80000000u) & 0x80000000u) | (b_mag & 0x7FFFFFFFu)};
        if (is_nan(p.b) || is_inf(p.b)) p.b = a ^ 0x80000000u;
        break;
      }
      case 3: {  // exponent difference 0..40: every alignment shift and the sticky bit
        const std::uint32_t e = range(40, 254);
        p = {make_float(u32() & 1, e, u32()), make_float(u32() & 1, e - range(0, 40), u32())};
        if (u32() & 1) std::swap(p.a, p.b);
        break;
      }
      case 4:  // tiny: subnormals and the smallest normals, underflow from normal
        p = {make_float(u32() & 1, range(0, 3), u32()), make_float(u32() & 1, range(0, 3), u32())};
        break;
      case 5:  // huge: overflow to infinity and the largest finite numbers
        p = {make_float(u32() & 1, range(250, 254), u32()),
             make_float(u32() & 1, range(250, 254), u32())};
        break;
      case 6: {  // exact ties: b is an odd multiple of half an ulp of a
        const std::uint32_t e = range(30, 254);
        const std::uint32_t a = make_float(u32() & 1, e, u32());
        const double half_ulp = std::ldexp(1.0, static_cast<int>(e) - 127 - 24);
        const double k = static_cast<double>((u32() & 0xFFFFF) | 1u);
        const float b = static_cast<float>(k * half_ulp * ((u32() & 1) ? -1.0 : 1.0));
        p = {a, std::bit_cast<std::uint32_t>(b)};
        break;
      }
      default:  // one operand special, the other random
        p = {special_values()[range(0, static_cast<std::uint32_t>(special_values().size() - 1))],
             u32()};
        if (u32() & 1) std::swap(p.a, p.b);
        break;
    }
    pairs.push_back(p);
  }
  return pairs;
}

// The latency of DefaultModel: the RTL's default STAGES (a public parameter, so Verilator
// exports its value), or the value the netlist was synthesized for.
unsigned default_stages() {
#ifdef NETAGG_FP32_ADD_NETLIST_STAGES
  return NETAGG_FP32_ADD_NETLIST_STAGES;
#else
  return Vnetagg_fp32_add_netagg_fp32_add::STAGES;
#endif
}

// ---- the reference itself -----------------------------------------------------------------

// The rules the specification states, on the reference: if these fail, the comparisons below
// would compare against the wrong thing.
TEST(Fp32AddReference, FollowsTheSpecification) {
  REQUIRE_HOST_FPU();
  EXPECT_EQ(host_add(0x7FC00001, 0x7FC00002), 0x7FC00001u) << "first NaN wins";
  EXPECT_EQ(host_add(0x3F800000, 0x7F800123), 0x7FC00123u) << "b's NaN, quieted";
  EXPECT_EQ(host_add(0xFF800001, 0x7FC00002), 0xFFC00001u) << "a's signaling NaN, quieted";
  EXPECT_EQ(host_add(0x7F800000, 0xFF800000), 0xFFC00000u) << "inf - inf";
  EXPECT_EQ(host_add(0x80000000, 0x80000000), 0x80000000u) << "-0 + -0";
  EXPECT_EQ(host_add(0x3F800000, 0xBF800000), 0x00000000u) << "x + -x";
  EXPECT_EQ(host_add(0x3F800000, 0x33800000), 0x3F800000u) << "1 + half ulp: tie to even";
  EXPECT_EQ(host_add(0x3F800001, 0x33800000), 0x3F800002u) << "odd + half ulp: up";
  EXPECT_EQ(host_add(0x7F7FFFFF, 0x73000000), 0x7F800000u) << "max + half ulp: to infinity";
  EXPECT_EQ(host_add(0x7F7FFFFF, 0x72FFFFFF), 0x7F7FFFFFu) << "max + under half ulp";
  EXPECT_EQ(host_add(0x00000001, 0x00000001), 0x00000002u) << "subnormals are kept";
  EXPECT_EQ(host_add(0x00800000, 0x80000001), 0x007FFFFFu) << "underflow to subnormal";
}

// ---- the default model (or its netlist) ---------------------------------------------------

TEST(Fp32Add, DefaultLatencyIsThePackagesDefault) {
  Pipe<DefaultModel> pipe;
  const unsigned stages = default_stages();
  // One pair in, then count cycles until it shows.
  auto out = pipe.cycle(true, 0x3F800000, 0x40000000);
  unsigned cycles = 1;
  while (!out.valid && cycles < 20) {
    out = pipe.cycle(false, 0, 0);
    ++cycles;
  }
  EXPECT_EQ(cycles, stages);
  EXPECT_EQ(out.sum, 0x40400000u) << "1 + 2 = 3";
  EXPECT_FALSE(pipe.cycle(false, 0, 0).valid) << "one valid in, one valid out";
}

TEST(Fp32Add, EverySpecialPair) {
  REQUIRE_HOST_FPU();
  Pipe<DefaultModel> pipe;
  std::mt19937_64 rng(1);
  EXPECT_EQ(stream_and_check(pipe, default_stages(), every_special_pair(), rng, 0.0), 0);
}

TEST(Fp32Add, MillionRandomPairsOnePerCycle) {
  REQUIRE_HOST_FPU();
  Pipe<DefaultModel> pipe;
  std::mt19937_64 rng(20240601);
  const auto pairs = random_pairs(1'000'000, rng);

  // The mix must reach every class of result, or the comparison proves less than it claims.
  std::size_t subnormal = 0, zero = 0, overflow = 0, nan = 0, exact_ties = 0;
  for (const auto& p : pairs) {
    const std::uint32_t r = host_add(p.a, p.b);
    subnormal += is_subnormal(r);
    zero += is_zero(r) && !is_zero(p.a);
    overflow += is_inf(r) && !is_inf(p.a) && !is_inf(p.b) && !is_nan(p.a) && !is_nan(p.b);
    nan += is_nan(r);
    const double a = std::bit_cast<float>(p.a), b = std::bit_cast<float>(p.b);
    if (std::isfinite(a) && std::isfinite(b) && std::isfinite(std::bit_cast<float>(r))) {
      // Exact in double when the exponents are close; a tie leaves exactly half an ulp.
      const double exact = a + b, got = std::bit_cast<float>(r);
      const double ulp =
          std::nextafter(static_cast<float>(std::fabs(got)), INFINITY) - std::fabs(got);
      exact_ties += std::fabs(exact - got) == ulp / 2 && exact != got;
    }
  }
  EXPECT_GT(subnormal, 10'000u);
  EXPECT_GT(zero, 10'000u);
  EXPECT_GT(overflow, 10'000u);
  EXPECT_GT(nan, 10'000u);
  EXPECT_GT(exact_ties, 50'000u);

  EXPECT_EQ(stream_and_check(pipe, default_stages(), pairs, rng, 1.0 / 16), 0);
}

TEST(Fp32Add, ResetEmptiesThePipeline) {
  Pipe<DefaultModel> pipe;
  const unsigned stages = default_stages();
  for (unsigned i = 0; i < stages; ++i) pipe.cycle(true, 0x3F800000, 0x3F800000);
  pipe.set_reset(true);
  for (unsigned i = 0; i < stages + 1; ++i) {
    EXPECT_FALSE(pipe.cycle(true, 0x3F800000, 0x3F800000).valid) << "cycle " << i << " of reset";
  }
  pipe.set_reset(false);
  // Nothing that entered before or during the reset comes out.
  for (unsigned i = 0; i < stages + 2; ++i) EXPECT_FALSE(pipe.cycle(false, 0, 0).valid);
  // And it works afterwards.
  std::mt19937_64 rng(7);
  EXPECT_EQ(stream_and_check(pipe, stages, random_pairs(1000, rng), rng, 0.0), 0);
}

// ---- every register placement --------------------------------------------------------------

#ifndef NETAGG_FP32_ADD_NETLIST_STAGES

// Every special pair and 100 000 random ones, with input bubbles and output stalls, through the
// adder built with `Stages` register stages (one test per build, named by its stage count, so
// that the test names stay plain words).
template <class Model, unsigned Stages>
void special_and_random_pairs_with_bubbles() {
  Pipe<Model> pipe;
  std::mt19937_64 rng(Stages);
  auto pairs = every_special_pair();
  const auto random = random_pairs(100'000, rng);
  pairs.insert(pairs.end(), random.begin(), random.end());
  EXPECT_EQ(stream_and_check(pipe, Stages, pairs, rng, 0.25), 0);
}

TEST(Fp32AddPlacement, SpecialAndRandomPairsWithBubblesInOneStage) {
  REQUIRE_HOST_FPU();
  special_and_random_pairs_with_bubbles<Vnetagg_fp32_add_s1, 1>();
}

TEST(Fp32AddPlacement, SpecialAndRandomPairsWithBubblesInTwoStages) {
  REQUIRE_HOST_FPU();
  special_and_random_pairs_with_bubbles<Vnetagg_fp32_add_s2, 2>();
}

TEST(Fp32AddPlacement, SpecialAndRandomPairsWithBubblesInFourStages) {
  REQUIRE_HOST_FPU();
  special_and_random_pairs_with_bubbles<Vnetagg_fp32_add_s4, 4>();
}

TEST(Fp32AddPlacement, SpecialAndRandomPairsWithBubblesInSixStages) {
  REQUIRE_HOST_FPU();
  special_and_random_pairs_with_bubbles<Vnetagg_fp32_add_s6, 6>();
}

#endif  // NETAGG_FP32_ADD_NETLIST_STAGES

}  // namespace

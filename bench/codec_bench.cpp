// SPDX-License-Identifier: Apache-2.0
// Throughput of the block floating point codec against memcpy of the same buffer.
//
// Every benchmark is named <what>/<buffer bytes>; bytes_per_second counts the fp32 buffer
// once (4 bytes per element), so each figure compares directly with BM_Memcpy of the same size.
// The codec runs packet by packet (wire::kMaxCount elements per call), as the communicator
// calls it. Run: codec_bench --benchmark_format=json
//
//   BM_Memcpy             memcpy of the buffer
//   BM_BlockExponent      block_exponent of every packet's chunk
//   BM_Quantize           fp32 -> big-endian int32 payloads
//   BM_Dequantize         big-endian int32 payloads -> fp32
//   BM_QuantizeDequantize both, one after the other (what one all-reduce costs a worker)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "netagg/codec.hpp"
#include "netagg/wire.hpp"

namespace {

namespace codec = netagg::codec;
constexpr std::size_t kPerPacket = netagg::wire::kMaxCount;
constexpr int kWorld = 4;

struct Buffers {
  std::vector<float> x, out;
  std::vector<std::byte> payload;
  std::vector<std::int16_t> exponents;  // per packet

  explicit Buffers(std::size_t bytes) : x(bytes / sizeof(float)), out(x.size()), payload(bytes) {
    std::mt19937 rng(42);
    std::normal_distribution<float> gradient(0.0f, 1e-3f);
    for (float& v : x) v = gradient(rng);
    for (std::size_t i = 0; i < x.size(); i += kPerPacket)
      exponents.push_back(codec::block_exponent(chunk(i)));
    // Dequantize reads one worker's contribution: a sum has the same format and cost.
    quantize_all();
  }

  std::span<const float> chunk(std::size_t i) const {
    return std::span<const float>(x).subspan(i, std::min(kPerPacket, x.size() - i));
  }

  void quantize_all() {
    for (std::size_t i = 0, p = 0; i < x.size(); i += kPerPacket, ++p) {
      codec::quantize(chunk(i), exponents[p], kWorld, payload.data() + 4 * i);
    }
  }

  void dequantize_all() {
    for (std::size_t i = 0, p = 0; i < x.size(); i += kPerPacket, ++p) {
      const std::size_t n = std::min(kPerPacket, x.size() - i);
      codec::dequantize(payload.data() + 4 * i, exponents[p], kWorld,
                        std::span<float>(out).subspan(i, n));
    }
  }
};

void finish(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
  state.SetLabel(std::string(codec::simd_target()));
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    std::memcpy(b.out.data(), b.x.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}

void BM_BlockExponent(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    for (std::size_t i = 0, p = 0; i < b.x.size(); i += kPerPacket, ++p) {
      b.exponents[p] = codec::block_exponent(b.chunk(i));
    }
    benchmark::DoNotOptimize(b.exponents.data());
    benchmark::ClobberMemory();
  }
  finish(state, bytes);
}

void BM_Quantize(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    b.quantize_all();
    benchmark::ClobberMemory();
  }
  finish(state, bytes);
}

void BM_Dequantize(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    b.dequantize_all();
    benchmark::ClobberMemory();
  }
  finish(state, bytes);
}

void BM_QuantizeDequantize(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    b.quantize_all();
    b.dequantize_all();
    benchmark::ClobberMemory();
  }
  finish(state, bytes);
}

constexpr std::int64_t kMinBytes = 4 << 10, kMaxBytes = 64 << 20;

BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_BlockExponent)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Quantize)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_Dequantize)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
BENCHMARK(BM_QuantizeDequantize)->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("simd_target", std::string(codec::simd_target()));
  benchmark::AddCustomContext("elements_per_call", std::to_string(kPerPacket));
  benchmark::AddCustomContext("world", std::to_string(kWorld));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

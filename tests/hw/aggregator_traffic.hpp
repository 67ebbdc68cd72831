// SPDX-License-Identifier: Apache-2.0
// Protocol-driven traffic for the RTL aggregator tests: workers that follow the protocol
// engine's rules against the Verilated aggregator, over a network that loses and duplicates.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "fpga_test_util.hpp"
#include "harness.hpp"
#include "netagg/exact.hpp"
#include "netagg/wire.hpp"

namespace netagg::rtltest {

using namespace netagg::fpga::testing;  // NOLINT
using sim::EgressFrame;
using wire::DataType;

// Workers that follow the protocol engine's rules against the RTL: packet P to slot
// base + P mod W, set (P / W) mod 2, seq P mod 2^32, sent only after the result of P - W
// arrived; retransmitted after a timeout. The network between them may lose contributions and
// results and duplicate contributions (the copy possibly on another port).
struct TrafficConfig {
  std::uint16_t window = 4;
  std::uint32_t packets = 32;
  DataType dtype = DataType::kInt32;
  unsigned max_count = 48;         // elements per packet: 0 .. max_count, the same for all ranks
  std::uint64_t first_packet = 0;  // global index of the first packet (seq wrap tests)
  double loss = 0.0;               // each contribution and each result
  double duplicate = 0.0;          // each contribution sent twice
  bool random_ports = false;       // a contribution enters on any port
  unsigned ports = 4;              // ingress ports in use (rank r sends on r mod ports)
  std::uint64_t timeout = 4000;    // cycles before a retransmission
  std::uint64_t seed = 1;
};

class Traffic {
 public:
  // NETAGG_RTL_SEED (environment, default 0) is added to every seed: run the tests with other
  // values to try other traffic (the default keeps CI deterministic).
  static std::uint64_t seed_offset() {
    const char* v = std::getenv("NETAGG_RTL_SEED");
    return v ? std::strtoull(v, nullptr, 10) : 0;
  }

  Traffic(sim::FpgaModel& tb, const JobSpec& job, TrafficConfig config)
      : tb_(tb), job_(job), cfg_(config), rng_(config.seed + seed_offset()) {
    cfg_.seed += seed_offset();
    const std::size_t n = job.workers.size();
    next_.assign(n, 0);
    got_.assign(n, std::vector<bool>(cfg_.packets, false));
    sent_at_.assign(n, std::vector<std::uint64_t>(cfg_.packets, 0));
    payload_.assign(n, std::vector<Bytes>(cfg_.packets));
  }

  // Runs until every worker has the result of every packet; false after max_cycles.
  bool run(std::uint64_t max_cycles) {
    const std::uint64_t end = tb_.cycles() + max_cycles;
    while (tb_.cycles() < end) {
      step();
      if (done()) return true;
    }
    return false;
  }
  void step() {
    for (auto& f : tb_.pop_egress()) receive(f);
    transmit_due();
    tb_.step(1);
  }
  // New packets the window allows, and retransmissions whose timeout expired.
  void transmit_due() {
    for (std::size_t r = 0; r < job_.workers.size(); ++r) {
      while (next_[r] < cfg_.packets &&
             (next_[r] < cfg_.window || got_[r][next_[r] - cfg_.window])) {
        transmit(r, next_[r]);
        ++next_[r];
      }
      for (std::uint32_t k = 0; k < next_[r]; ++k)
        if (!got_[r][k] && tb_.cycles() >= sent_at_[r][k] + cfg_.timeout) transmit(r, k);
    }
  }
  bool done() const {
    for (const auto& worker : got_)
      for (bool g : worker)
        if (!g) return false;
    return true;
  }

  // The contribution of rank r to packet k.
  Contribution contribution(std::size_t r, std::uint32_t k) const {
    const std::uint64_t p = cfg_.first_packet + k;
    Contribution c;
    c.job = job_.job_id;
    c.rank = static_cast<std::uint16_t>(r);
    c.slot = static_cast<std::uint16_t>(job_.slot_base + p % cfg_.window);
    c.set = static_cast<std::uint8_t>((p / cfg_.window) % 2);
    c.seq = static_cast<std::uint32_t>(p);
    c.dtype = cfg_.dtype;
    c.exponent = static_cast<std::int16_t>(hash(r, k, 1000) % 200) - 100;
    // Exact fp32: every rank converts at the packet's scale (high byte) and announces its own
    // exponent of another chunk (low byte).
    const int scale = exact_scale(k);
    if (cfg_.dtype == DataType::kFp32Exact)
      c.exponent = exact::pack_exponents(static_cast<std::int16_t>(scale),
                                         static_cast<std::int16_t>(hash(r, k, 1000) % 60 - 30));
    c.ecn = hash(r, k, 2000) % 7 == 0 ? static_cast<std::uint8_t>(hash(r, k, 3000) % 4) : 0;
    const unsigned count = static_cast<unsigned>(hash(0, k, 4000) % (cfg_.max_count + 1));
    for (unsigned i = 0; i < count; ++i) {
      const std::uint64_t h = hash(r, k, i);
      std::uint32_t v = static_cast<std::uint32_t>(h);
      if (cfg_.dtype == DataType::kFp32)
        v = bits(std::ldexp(float(std::int32_t(h % 2000001) - 1000000), int(h >> 40) % 30 - 15));
      if (cfg_.dtype == DataType::kBf16) v = (h >> 20) & 0xFFFF;
      if (cfg_.dtype == DataType::kFp32Exact) {
        // below 2^scale, spread over 40 binades below it; now and then a special
        v = bits(std::ldexp(float(std::int32_t(h % 2000001) - 1000000) / 1048576.0f,
                            scale - 1 - int(h >> 40) % 40));
        if ((h >> 8) % 97 == 0) v = (h >> 20) % 2 ? 0x7F800000u : 0xFF800000u;
        if ((h >> 8) % 89 == 0) v = 0x7FC00001u;
      }
      c.values.push_back(v);
    }
    return c;
  }
  // The scale of packet k's data in exact fp32: the same for every rank.
  int exact_scale(std::uint32_t k) const { return static_cast<int>(hash(0, k, 5000) % 41) - 20; }
  // Exact fp32: the reference's sum (netagg/exact.hpp) every worker must receive, whatever the
  // order the aggregator took the contributions in.
  std::vector<std::uint32_t> exact_sum(std::uint32_t k) const {
    const auto e = static_cast<std::int16_t>(exact_scale(k));
    std::vector<exact::Lane> lanes;
    for (std::size_t r = 0; r < job_.workers.size(); ++r) {
      const Contribution c = contribution(r, k);
      lanes.resize(c.values.size());
      for (std::size_t i = 0; i < c.values.size(); ++i)
        lanes[i] = exact::add(lanes[i], exact::to_lane(from_bits(c.values[i]), e));
    }
    std::vector<std::uint32_t> sum;
    for (const auto& l : lanes) sum.push_back(bits(exact::to_fp32(l, e)));
    return sum;
  }
  // int32: the exact wrapped sum every worker must receive.
  std::vector<std::uint32_t> int32_sum(std::uint32_t k) const {
    std::vector<std::uint32_t> sum;
    for (std::size_t r = 0; r < job_.workers.size(); ++r) {
      const Contribution c = contribution(r, k);
      sum.resize(c.values.size(), 0);
      for (std::size_t i = 0; i < c.values.size(); ++i) sum[i] += c.values[i];
    }
    return sum;
  }
  // The payload bytes rank r accepted for packet k.
  const Bytes& payload(std::size_t r, std::uint32_t k) const { return payload_[r][k]; }
  // A result frame of this job arrives at its worker (which may lose it).
  void receive(const EgressFrame& f) {
    egress.push_back(f);
    accept(f);
  }

  std::vector<Result> results;      // every result a worker accepted
  std::vector<Result> notices;      // every notice the RTL sent
  std::vector<EgressFrame> egress;  // every frame the RTL sent to this job

 private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t hash(std::size_t r, std::uint32_t k, std::uint64_t i) const {
    return mix(cfg_.seed * 0x9E3779B97F4A7C15ull + (std::uint64_t(r) << 48) +
               (std::uint64_t(k) << 20) + i);
  }
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void transmit(std::size_t r, std::uint32_t k) {
    sent_at_[r][k] = tb_.cycles();
    if (chance(cfg_.loss)) return;
    const Contribution c = contribution(r, k);
    const Bytes frame = frame_from(job_.workers[r], encode_packet(c), c.ecn);
    const unsigned home = static_cast<unsigned>(r % cfg_.ports);
    tb_.push_frame(cfg_.random_ports ? static_cast<unsigned>(rng_() % cfg_.ports) : home, frame);
    if (chance(cfg_.duplicate)) tb_.push_frame(static_cast<unsigned>(rng_() % cfg_.ports), frame);
  }

  void accept(const EgressFrame& f) {
    const Result res = decode_result(f);
    if (res.header.type == wire::MsgType::kNotice) {  // a copy or a late retransmission dropped
      notices.push_back(res);
      return;
    }
    std::size_t r = 0;
    while (r < job_.workers.size() &&
           !(job_.workers[r].address == Endpoint{res.address.dst_ip, res.address.dst_port}))
      ++r;
    ASSERT_LT(r, job_.workers.size()) << "a result to nobody of the job";
    EXPECT_EQ(res.header.rank, r);
    EXPECT_EQ(f.port, egress_port(job_, r));
    const std::uint32_t k = res.header.seq - static_cast<std::uint32_t>(cfg_.first_packet);
    ASSERT_LT(k, cfg_.packets);
    EXPECT_EQ(res.header.slot, job_.slot_base + (cfg_.first_packet + k) % cfg_.window);
    if (chance(cfg_.loss) || got_[r][k]) return;
    got_[r][k] = true;
    payload_[r][k] = Bytes(f.bytes.begin() + 64, f.bytes.end());
    results.push_back(res);
  }

  sim::FpgaModel& tb_;
  JobSpec job_;
  TrafficConfig cfg_;
  std::mt19937_64 rng_;
  std::vector<std::uint32_t> next_;
  std::vector<std::vector<bool>> got_;
  std::vector<std::vector<std::uint64_t>> sent_at_;
  std::vector<std::vector<Bytes>> payload_;
};

// Every worker got, for every packet, the result with the max exponent, the OR of the ECN bits,
// the same payload as every other worker, and (int32) the exact wrapped sum.
inline void expect_results_exact(const Traffic& t, const JobSpec& job, const TrafficConfig& cfg) {
  for (std::uint32_t k = 0; k < cfg.packets; ++k) {
    for (std::size_t r = 1; r < job.workers.size(); ++r)
      EXPECT_EQ(t.payload(r, k), t.payload(0, k)) << "packet " << k << " rank " << r;
    if (cfg.dtype == DataType::kInt32 || cfg.dtype == DataType::kFp32Exact) {
      const auto sum = cfg.dtype == DataType::kInt32 ? t.int32_sum(k) : t.exact_sum(k);
      Bytes want(4 * sum.size());
      for (std::size_t i = 0; i < sum.size(); ++i) wire::store_be32(want.data() + 4 * i, sum[i]);
      EXPECT_EQ(t.payload(0, k), want) << "packet " << k;
    }
  }
  for (const Result& res : t.results) {
    const std::uint32_t k = res.header.seq - static_cast<std::uint32_t>(cfg.first_packet);
    std::int16_t exponent = wire::kExponentNone;
    std::uint8_t ecn = 0;
    for (std::size_t r = 0; r < job.workers.size(); ++r) {
      const Contribution c = t.contribution(r, k);
      exponent = std::max(exponent, c.exponent);
      ecn |= c.ecn;
    }
    EXPECT_EQ(res.header.exponent, exponent) << "packet " << k;
    EXPECT_EQ(res.address.ecn, ecn) << "packet " << k;
    EXPECT_EQ(res.header.dtype, cfg.dtype);
  }
}

}  // namespace netagg::rtltest

// SPDX-License-Identifier: Apache-2.0
// The fixture of the RTL aggregator's tests: a Verilated configuration of netagg_aggregator in
// the harness of sim/fpga, and the HLS reference model with the same parameters, both programmed
// the same way through driver/fpga; and the comparison of what the RTL sent with what the model
// sends when it is fed the frames the RTL took, in the groups the RTL took them (the harness
// observes the round stage's decisions).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fpga_test_util.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"
#include "netagg_hls/reference.hpp"
#include "rtl_harness.hpp"

namespace netagg::rtltest {

using namespace netagg::fpga::testing;  // NOLINT
using fpga::Command;
using sim::EgressFrame;
using sim::PortFrame;
using sim::RoundDecision;
using C = csr::Counter;

inline constexpr unsigned kTopPorts = 4;  // the top's ports; NUM_PORTS of them are used

// Idle: nothing moved (a beat in or out, a decision) for this many cycles, every frame taken
// was decided and no egress frame is half out.
inline constexpr std::uint64_t kQuietCycles = 200;
inline constexpr std::uint64_t kMaxIdleCycles = 2'000'000;

// ---- comparing two aggregators -------------------------------------------------------------

// Canonical order of egress frames for comparing two aggregators: per port in order, but copies
// of one result (same job, slot, set, seq) that follow each other sorted by rank, so that the
// order of several resends answered together does not matter. Notices are compared apart (per
// port in order, after the port's results): the RTL sends them from a queue of their own between
// the result frames, the model where it drops a frame.
inline std::uint64_t result_key(const Bytes& b) {  // job id, flags, slot, seq
  if (b.size() < 64) return 0;
  std::uint64_t k = 0;
  for (std::size_t i : {46, 47, 45, 50, 51, 56, 57, 58, 59}) k = k << 8 | std::uint64_t(b[i]);
  return k;
}
inline unsigned result_rank(const Bytes& b) {
  return b.size() < 64 ? 0 : (unsigned(b[48]) << 8 | unsigned(b[49]));
}
inline bool is_notice(const Bytes& b) {
  return b.size() > wire::kFrameOverhead + wire::offset::kType &&
         b[wire::kFrameOverhead + wire::offset::kType] == std::byte(wire::MsgType::kNotice);
}
inline std::map<unsigned, std::vector<Bytes>> canonical(const std::vector<PortFrame>& frames) {
  std::map<unsigned, std::vector<Bytes>> per_port, notices;
  for (const auto& [port, bytes] : frames)
    (is_notice(bytes) ? notices : per_port)[port].push_back(bytes);
  for (auto& [port, list] : per_port) {
    std::size_t i = 0;
    while (i < list.size()) {
      std::size_t j = i + 1;
      while (j < list.size() && result_key(list[j]) == result_key(list[i])) ++j;
      std::stable_sort(
          list.begin() + static_cast<std::ptrdiff_t>(i),
          list.begin() + static_cast<std::ptrdiff_t>(j),
          [](const Bytes& a, const Bytes& b) { return result_rank(a) < result_rank(b); });
      i = j;
    }
  }
  for (auto& [port, list] : notices)
    per_port[port].insert(per_port[port].end(), list.begin(), list.end());
  return per_port;
}

// One line about an egress frame, for failure messages.
inline std::string describe(const Bytes& b) {
  const auto d = wire::decode_frame(b, 0);
  if (!d) return fmt::format("{} bytes, undecodable ({})", b.size(), wire::error_id(d.error));
  const wire::Header& h = d.packet.header;
  std::uint32_t sum = 0;
  for (std::byte x : d.packet.payload) sum = sum * 31 + std::uint32_t(x);
  return fmt::format(
      "{} job {} rank {} slot {} set {} seq {} count {} exp {} ecn {} payload#{:08x}",
      wire::to_string(h.type), h.job_id, h.rank, h.slot, h.set, h.seq, h.count, h.exponent,
      d.address.ecn, sum);
}

// Empty if both have the same frames per port (canonical order); else the first differences.
inline std::string egress_difference(const std::vector<PortFrame>& rtl,
                                     const std::vector<PortFrame>& model) {
  const auto a = canonical(rtl), b = canonical(model);
  std::string out;
  int shown = 0;
  for (unsigned port = 0; port < kTopPorts; ++port) {
    static const std::vector<Bytes> kNone;
    const auto& x = a.count(port) ? a.at(port) : kNone;
    const auto& y = b.count(port) ? b.at(port) : kNone;
    if (x.size() != y.size())
      out += fmt::format("port {}: RTL sent {} frames, the model {}\n", port, x.size(), y.size());
    for (std::size_t i = 0; i < std::max(x.size(), y.size()) && shown < 6; ++i) {
      const std::string dx = i < x.size() ? describe(x[i]) : "-";
      const std::string dy = i < y.size() ? describe(y[i]) : "-";
      if (i < x.size() && i < y.size() && x[i] == y[i]) continue;
      out += fmt::format("port {} frame {}:\n  RTL   {}\n  model {}\n", port, i, dx, dy);
      ++shown;
    }
  }
  return out;
}

// Feeds the reference model what the RTL took, in the same groups and order. Returns the
// model's egress frames.
template <class ReferenceModel>
std::vector<PortFrame> replay(ReferenceModel& model, const std::vector<RoundDecision>& decisions) {
  std::vector<PortFrame> out;
  for (const RoundDecision& d : decisions) {
    for (const auto& [port, bytes] : d.dropped)
      for (auto& f : model.process_frame(port, bytes)) out.emplace_back(f.port, f.bytes);
    if (!d.group.empty()) {
      std::vector<fpga::RxFrame> group;
      for (const auto& [port, bytes] : d.group) group.push_back({port, bytes});
      for (auto& f : model.process_group(group)) out.emplace_back(f.port, f.bytes);
    }
  }
  return out;
}

inline std::vector<PortFrame> as_pairs(const std::vector<EgressFrame>& frames) {
  std::vector<PortFrame> out;
  for (const auto& f : frames) out.emplace_back(f.port, f.bytes);
  return out;
}

// ---- the fixture -----------------------------------------------------------------------------

// A fresh RTL (Verilated class Top, kPorts ports in use) and a fresh reference model with
// parameters P, with the same aggregator address.
template <class Top, unsigned kPorts, class P>
class RtlAgainstModel : public ::testing::Test {
 protected:
  using Harness = sim::RtlHarness<Top, kPorts>;
  using Model = fpga::ReferenceModel<P>;

  explicit RtlAgainstModel(std::uint64_t seed)
      : tb({.name = "rtl", .seed = seed, .observe_rounds = true}) {}

  void SetUp() override {
    set_aggregator_address(tb, kAggregator);
    set_aggregator_address(model_bus, kAggregator);
  }
  // The job into the entry on both, through driver/fpga (with its checks).
  void install(unsigned entry, const JobSpec& job) {
    program_job(tb, job, entry, kAggregator);
    program_job(model_bus, job, entry, kAggregator);
  }
  // A job the driver refuses (e.g. more elements than a slot holds): the devices' own checks
  // decide.
  void install_unchecked(unsigned entry, const JobSpec& job) {
    store_job(tb, job, entry, kPorts);
    store_job(model_bus, job, entry, kPorts);
  }
  std::uint64_t counter(unsigned index) { return read_counter(tb, index); }
  std::uint64_t count(C c) { return counter(csr::index(c)); }
  bool run_until_idle() { return tb.run_until_idle(kQuietCycles, kMaxIdleCycles); }

  // Every counter of the RTL equals the model's.
  void expect_counters_match_model() {
    for (unsigned i = 0; i < csr::kCounterCount; ++i)
      EXPECT_EQ(counter(i), model.counter(i)) << "counter " << csr::kCounterNames[i];
  }
  // The RTL's egress frames (and what it took since the last call) against the model's.
  void expect_same_as_model(const std::vector<EgressFrame>& egress) {
    EXPECT_EQ(egress_difference(as_pairs(egress), replay(model, tb.take_decisions())), "");
    expect_counters_match_model();
    EXPECT_EQ(tb.egress_protocol_errors(), 0u) << tb.last_protocol_error();
  }

  Harness tb;
  Model model;
  ModelBus<Model> model_bus{model};
};

}  // namespace netagg::rtltest

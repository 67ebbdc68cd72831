// SPDX-License-Identifier: Apache-2.0
#include "aggregator_scenarios.hpp"

#include <signal.h>

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

namespace netagg::testing {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

AggregatorDaemon::AggregatorDaemon(const std::filesystem::path& program,
                                   const std::filesystem::path& dir, std::vector<std::string> args)
    : DaemonProcess(program.filename().string(), command(program, std::move(args)), dir, kGuard) {}

std::string TwoJobs::job_file(std::optional<int> rank2_switch_port) const {
  return fmt::format(R"({{"jobs": [
  {{"job_id": {}, "slots": {{"base": {}, "count": {}}}, "elements_per_packet": 3,
    "workers": [{}, {}, {}]}},
  {{"job_id": {}, "slots": {{"base": 0, "count": 4}}, "elements_per_packet": 8,
    "workers": [{}]}}
]}})",
                     kJob, kBase, kWindow, worker_json(0, workers[0].local()),
                     worker_json(1, workers[1].local()),
                     worker_json(2, workers[2].local(), rank2_switch_port), kOtherJob,
                     worker_json(0, other_job_worker.local()));
}

void TwoJobs::reduce_and_retransmit(const Endpoint& aggregator) {
  // Rank r sends {P + r, -P, 1000 * r}; the sum over 3 ranks is {3P + 3, -3P, 3000}.
  for (std::uint32_t p = 0; p < kPackets; ++p) {
    const auto slot = static_cast<std::uint16_t>(kBase + p % kWindow);
    const auto set = static_cast<std::uint8_t>((p / kWindow) % 2);
    for (std::uint16_t r = 0; r < 3; ++r)
      workers[r].send_to(aggregator, contribution(kJob, r, slot, set, p,
                                                  {std::int32_t(p + r), -std::int32_t(p), 1000 * r},
                                                  std::int16_t(r - 5)));
    for (std::uint16_t r = 0; r < 3; ++r) {
      Endpoint from;
      const auto bytes = workers[r].receive(&from);
      ASSERT_TRUE(bytes) << "no result for packet " << p << " at rank " << r;
      EXPECT_EQ(from, aggregator) << "results come from the address the workers send to";
      const Result res = parse_result(*bytes);
      EXPECT_EQ(res.header.type, wire::MsgType::kResult);
      EXPECT_EQ(res.header.job_id, kJob);
      EXPECT_EQ(res.header.rank, r);
      EXPECT_EQ(res.header.slot, slot);
      EXPECT_EQ(res.header.set, set);
      EXPECT_EQ(res.header.seq, p);
      EXPECT_EQ(res.header.exponent, -3);
      EXPECT_THAT(res.values, ElementsAre(std::int32_t(3 * p + 3), -3 * std::int32_t(p), 3000));
    }
  }
  // Rank 1 retransmits the last packet: the stored result comes back to it alone.
  const std::uint32_t last = kPackets - 1;
  const auto last_slot = static_cast<std::uint16_t>(kBase + last % kWindow);
  const auto last_set = static_cast<std::uint8_t>((last / kWindow) % 2);
  workers[1].send_to(aggregator, contribution(kJob, 1, last_slot, last_set, last,
                                              {std::int32_t(last + 1), -std::int32_t(last), 1000}));
  const auto bytes = workers[1].receive();
  ASSERT_TRUE(bytes);
  const Result res = parse_result(*bytes);
  EXPECT_EQ(res.header.rank, 1);
  EXPECT_EQ(res.header.seq, last);
  EXPECT_THAT(res.values, ElementsAre(3 * 7 + 3, -21, 3000));
}

void TwoJobs::send_junk(const Endpoint& to) {
  const auto good = contribution(kJob, 0, kBase, 0, 100, {1, 2, 3});
  auto patched = [&](std::size_t at, std::uint8_t v) {
    auto b = good;
    b[at] = std::byte(v);
    return b;
  };
  LoopbackUdpSocket& w = workers[0];
  w.send_to(to, {});                                   // truncated
  w.send_to(to, {good.begin(), good.begin() + 10});    // truncated
  w.send_to(to, patched(wire::offset::kVersion, 9));   // bad version
  w.send_to(to, patched(wire::offset::kType, 0));      // bad type
  w.send_to(to, patched(wire::offset::kDtype, 7));     // bad dtype
  w.send_to(to, patched(wire::offset::kFlags, 8));     // bad flags
  w.send_to(to, patched(wire::offset::kFlags, 0x80));  // bad flags
  w.send_to(to, patched(wire::offset::kCount, 0x80));  // count too large
  w.send_to(to, {good.begin(), good.end() - 1});       // length
  {
    // Longer than any valid packet: arrives cut to kMaxPacketSize + 1 bytes, a length mismatch
    // (and, on the FPGA aggregator, a frame longer than the device stores).
    auto oversized = good;
    wire::store_be16(oversized.data() + wire::offset::kCount, wire::kMaxCount);
    oversized.resize(wire::kMaxPacketSize + 100);
    w.send_to(to, oversized);
  }
  stranger.send_to(to, contribution(kJob, 0, kBase, 0, 100, {1, 2, 3}));    // foreign source
  other_job_worker.send_to(to, contribution(kJob, 0, kBase, 0, 100, {1}));  // foreign source
  w.send_to(to, contribution(99, 0, kBase, 0, 100, {1}));                   // unknown job
  w.send_to(to, contribution(kJob, 3, kBase, 0, 100, {1}));                 // rank
  w.send_to(to, contribution(kJob, 0, kBase + kWindow, 0, 100, {1}));       // slot
  w.send_to(to, contribution(kJob, 0, 0, 0, 100, {1}));                     // the other job's slot
  w.send_to(to, contribution(kJob, 0, kBase, 0, 100, {1, 2, 3, 4}));        // count > 3
  auto result = good;
  result[wire::offset::kType] = std::byte(wire::MsgType::kResult);
  w.send_to(to, result);  // not a contribution
}

void TwoJobs::expect_nothing_pending() {
  for (auto& w : workers) EXPECT_FALSE(w.has_pending()) << "junk was answered";
  EXPECT_FALSE(other_job_worker.has_pending());
  EXPECT_FALSE(stranger.has_pending());
}

std::string one_slot_job(const Endpoint& worker, const std::optional<Endpoint>& aggregator) {
  return fmt::format(
      R"({{"job_id": 1, "slots": {{"base": 0, "count": 1}},
      "elements_per_packet": 1, {}"workers": [{}]}})",
      aggregator ? fmt::format(R"("aggregator": "{}", )", aggregator->to_string()) : "",
      worker_json(0, worker));
}

std::string job_of_another_aggregator(const Endpoint& worker) {
  return one_slot_job(worker, Endpoint{0x7F000001, 9});
}

void expect_job_of_another_aggregator_refused(DaemonProcess& d, const std::string& file) {
  EXPECT_EQ(d.wait_exit(), 2);
  EXPECT_THAT(d.stdout_text(), ::testing::Not(HasSubstr("listening")));
  // The daemon's port is the kernel's: not one to suggest for the job.
  EXPECT_THAT(d.stderr_text(),
              ::testing::AllOf(
                  HasSubstr(fmt::format("{}: {}: job 1: its workers send to 127.0.0.1:9 (the "
                                        "job's \"aggregator\"), but this daemon listens on "
                                        "127.0.0.1:",
                                        d.name(), file)),
                  HasSubstr(" (a port the kernel chose for --listen 127.0.0.1:0): they would get "
                            "no answer. Start it with --listen 127.0.0.1:9, or leave the job's "
                            "\"aggregator\" out and give the workers the address "
                            "(NETAGG_AGGREGATOR, netagg-allreduce --target)\n")));
}

void expect_answer_then_quiet_stop_on_sigint(DaemonProcess& d, LoopbackUdpSocket& worker) {
  const Endpoint aggregator = d.wait_listening();
  worker.send_to(aggregator, contribution(1, 0, 0, 0, 0, {41}));
  const auto bytes = worker.receive();
  ASSERT_TRUE(bytes);
  EXPECT_THAT(parse_result(*bytes).values, ElementsAre(41));
  EXPECT_EQ(d.stop(SIGINT), 0) << d.stderr_text();
  EXPECT_THAT(d.stdout_text(), ::testing::Not(HasSubstr("counters")));
  EXPECT_EQ(d.stderr_text(), "");
}

Notices notices_received(LoopbackUdpSocket& socket, std::size_t n, const Endpoint& aggregator) {
  Notices out;
  for (std::size_t i = 0; i < n; ++i) {
    Endpoint from;
    const auto bytes = socket.receive(&from);
    if (!bytes) break;
    EXPECT_EQ(from, aggregator) << "notices come from the address the workers send to";
    const Result res = parse_result(*bytes);
    EXPECT_EQ(res.header.type, wire::MsgType::kNotice);
    if (res.values.empty()) continue;
    const auto reason = static_cast<wire::NoticeReason>(res.values[0]);
    out.emplace_back(std::string(wire::to_string(reason)),
                     res.values.size() > 1 ? std::uint32_t(res.values[1]) : 0u);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace netagg::testing

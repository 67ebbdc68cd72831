// SPDX-License-Identifier: Apache-2.0
// The switch model against hand-written expectations: the conformance cases (basic
// reduction, retransmission after completion, other set, both sets, slot reuse, ignored
// retransmissions, retransmission from the previous set, foreign job, unknown source, slot out
// of range), every malformed class, the exponent max, wrap-around adds, job isolation and job
// validation; late copies told apart by the round's seq (overtaken retransmissions, stale and
// ahead packets, a restart against old state, the seq wrap); and the whole protocol, with
// unbounded reordering, loss and duplication, against the model.
#include "switch_model.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "netagg/error.hpp"

namespace netagg::sim {

void PrintTo(const Outcome& o, std::ostream* os) {
  static constexpr const char* kActions[] = {"aggregated", "completed", "result resent", "dropped"};
  *os << kActions[static_cast<int>(o.action)];
  if (o.action == Action::kDropped) {
    *os << " (" << to_string(o.reason);
    if (o.reason == DropReason::kMalformed) *os << ": " << wire::to_string(o.malformed);
    *os << ")";
  }
}

namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr std::uint32_t kLoopback = 0x7F000001;

Endpoint addr(std::uint16_t port, std::uint32_t ip = kLoopback) { return Endpoint{ip, port}; }

// A job whose rank r sits at ip:first_port + r.
JobSpec make_job(std::uint16_t id, std::size_t workers, std::uint16_t slot_base,
                 std::uint16_t slot_count, std::uint16_t elements_per_packet,
                 std::uint16_t first_port, std::uint32_t ip = kLoopback) {
  JobSpec job;
  job.job_id = id;
  job.slot_base = slot_base;
  job.slot_count = slot_count;
  job.elements_per_packet = elements_per_packet;
  for (std::size_t r = 0; r < workers; ++r)
    job.workers.push_back({static_cast<std::uint16_t>(r),
                           addr(static_cast<std::uint16_t>(first_port + r), ip), std::nullopt,
                           std::nullopt});
  return job;
}

struct Contribution {
  std::uint16_t job_id = 1;
  std::uint16_t rank = 0;
  std::uint16_t slot = 0;
  std::uint8_t set = 0;
  std::vector<std::int32_t> values;
  std::int16_t exponent = wire::kExponentNone;
  std::uint32_t seq = 0;
  wire::DataType dtype = wire::DataType::kInt32;
  wire::MsgType type = wire::MsgType::kContribution;
};

std::vector<std::byte> encode(const Contribution& c) {
  wire::Header h;
  h.type = c.type;
  h.dtype = c.dtype;
  h.set = c.set;
  h.job_id = c.job_id;
  h.rank = c.rank;
  h.slot = c.slot;
  h.count = static_cast<std::uint16_t>(c.values.size());
  h.exponent = c.exponent;
  h.seq = c.seq;
  std::vector<std::byte> bytes(h.packet_size());
  EXPECT_TRUE(wire::encode_header(h, bytes));
  const std::size_t size = wire::element_size(c.dtype);
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    const auto v = static_cast<std::uint32_t>(c.values[i]);
    if (size == 4)
      wire::store_be32(bytes.data() + wire::kHeaderSize + 4 * i, v);
    else
      wire::store_be16(bytes.data() + wire::kHeaderSize + 2 * i, static_cast<std::uint16_t>(v));
  }
  return bytes;
}

struct Result {
  Endpoint destination;
  wire::Header header;
  std::vector<std::int32_t> values;
};

Result decode_result(const CollectingSink::Packet& p) {
  const wire::Decoded d = wire::decode(p.bytes);
  EXPECT_TRUE(d) << wire::to_string(d.error);
  Result r{p.destination, d.header, {}};
  if (!d) return r;
  for (std::size_t i = 0; i < d.header.count; ++i)
    r.values.push_back(static_cast<std::int32_t>(wire::load_be32(d.payload.data() + 4 * i)));
  return r;
}

// Registers and values of one (slot, set), to prove that a packet left them alone.
struct Snapshot {
  SlotRegisters reg;
  std::vector<ValueRegister> values;
  bool operator==(const Snapshot& o) const {
    return reg.bitmap == o.reg.bitmap && reg.remaining == o.reg.remaining &&
           reg.count == o.reg.count && reg.exponent == o.reg.exponent && reg.seq == o.reg.seq &&
           reg.has_round == o.reg.has_round && values == o.values;
  }
};
Snapshot snapshot(const SwitchModel& m, std::size_t slot, unsigned set) {
  const auto v = m.values(slot, set);
  return {m.registers(slot, set), {v.begin(), v.end()}};
}

// Every packet is counted exactly once: aggregated, answered by unicast, or dropped.
void expect_balanced(const SwitchCounters& c) {
  EXPECT_EQ(c.packets_in, c.aggregated + c.results_resent + c.dropped_total());
}

class SwitchModelTest : public ::testing::Test {
 protected:
  static constexpr std::uint16_t kJob = 1;
  static constexpr std::uint16_t kPort = 40000;  // rank r at 127.0.0.1:40000 + r

  SwitchModelTest() : model(64, 16) {}

  void install(std::size_t workers = 3, std::uint16_t base = 8, std::uint16_t count = 4,
               std::uint16_t epp = 4) {
    model.add_job(make_job(kJob, workers, base, count, epp, kPort));
  }

  Outcome send(const Contribution& c) { return send_from(addr(kPort + c.rank), c); }
  Outcome send_from(const Endpoint& source, const Contribution& c) {
    return model.process(source, encode(c), sink);
  }
  Outcome send_raw(const Endpoint& source, const std::vector<std::byte>& bytes) {
    return model.process(source, bytes, sink);
  }
  // The results sent since the last call; the notices among the packets go to `notices`.
  std::vector<Result> take_results() {
    std::vector<Result> out;
    for (const auto& p : sink.packets) {
      Result r = decode_result(p);
      (r.header.type == wire::MsgType::kNotice ? notices : out).push_back(std::move(r));
    }
    sink.packets.clear();
    return out;
  }
  bool no_results() { return take_results().empty(); }
  // The notices sent since the last call: (destination, reason, waiting words).
  std::vector<Result> take_notices() {
    take_results();
    return std::exchange(notices, {});
  }

  std::vector<Result> notices;

  SwitchModel model;
  CollectingSink sink;
};

Outcome dropped(DropReason r, wire::Error e = wire::Error::kOk) { return {Action::kDropped, r, e}; }

TEST_F(SwitchModelTest, BasicReduction) {
  install();
  EXPECT_EQ(send({kJob, 0, 9, 0, {1, 2, 3, 4}, 2, 77}).action, Action::kAggregated);
  EXPECT_EQ(send({kJob, 2, 9, 0, {100, 200, 300, 400}, 2, 77}).action, Action::kAggregated);
  EXPECT_TRUE(no_results());
  EXPECT_EQ(send({kJob, 1, 9, 0, {10, 20, 30, 40}, 2, 77}).action, Action::kCompleted);

  const auto results = take_results();
  ASSERT_EQ(results.size(), 3u);
  for (std::uint16_t r = 0; r < 3; ++r) {
    const Result& res = results[r];
    EXPECT_EQ(res.destination, addr(kPort + r));
    EXPECT_EQ(res.header.type, wire::MsgType::kResult);
    EXPECT_EQ(res.header.dtype, wire::DataType::kInt32);
    EXPECT_EQ(res.header.job_id, kJob);
    EXPECT_EQ(res.header.rank, r);  // the destination's rank
    EXPECT_EQ(res.header.slot, 9);
    EXPECT_EQ(res.header.set, 0);
    EXPECT_EQ(res.header.count, 4);
    EXPECT_EQ(res.header.exponent, 2);
    EXPECT_EQ(res.header.seq, 77u);
    EXPECT_THAT(res.values, ElementsAre(111, 222, 333, 444));
  }
  const auto& c = model.counters();
  EXPECT_EQ(c.packets_in, 3u);
  EXPECT_EQ(c.aggregated, 3u);
  EXPECT_EQ(c.completions, 1u);
  EXPECT_EQ(c.results_multicast, 3u);
  EXPECT_EQ(c.results_resent, 0u);
  EXPECT_EQ(c.dropped_total(), 0u);
  const auto& reg = model.registers(9, 0);
  EXPECT_EQ(reg.bitmap, 0b111u);
  EXPECT_EQ(reg.remaining, 0u);
}

TEST_F(SwitchModelTest, SingleWorkerCompletesAtOnce) {
  install(1);
  EXPECT_EQ(send({kJob, 0, 8, 1, {5, -6}, 0, 3}).action, Action::kCompleted);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].header.set, 1);
  EXPECT_THAT(results[0].values, ElementsAre(5, -6));
}

TEST_F(SwitchModelTest, RetransmissionAfterCompletion) {
  install();
  send({kJob, 0, 10, 0, {1, 1, 1}, 4, 5});
  send({kJob, 1, 10, 0, {2, 2, 2}, 6, 5});
  send({kJob, 2, 10, 0, {3, 3, 3}, 5, 5});
  ASSERT_EQ(take_results().size(), 3u);
  const Snapshot before = snapshot(model, 10, 0);

  // Rank 1 lost its result and sends its contribution again.
  EXPECT_EQ(send({kJob, 1, 10, 0, {2, 2, 2}, 6, 5}).action, Action::kResultResent);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].destination, addr(kPort + 1));
  EXPECT_EQ(results[0].header.rank, 1);
  EXPECT_EQ(results[0].header.type, wire::MsgType::kResult);
  EXPECT_EQ(results[0].header.slot, 10);
  EXPECT_EQ(results[0].header.seq, 5u);
  EXPECT_EQ(results[0].header.exponent, 6);
  EXPECT_THAT(results[0].values, ElementsAre(6, 6, 6));
  EXPECT_EQ(snapshot(model, 10, 0), before);  // not added a second time

  // Again: every retransmission gets the stored result.
  EXPECT_EQ(send({kJob, 1, 10, 0, {2, 2, 2}, 6, 5}).action, Action::kResultResent);
  EXPECT_EQ(take_results().size(), 1u);
  EXPECT_EQ(model.counters().results_resent, 2u);
  EXPECT_EQ(model.counters().completions, 1u);
  expect_balanced(model.counters());
}

TEST_F(SwitchModelTest, OpenRoundsNameTheMissingRanks) {
  install();  // slots 8..11
  EXPECT_TRUE(model.open_rounds().empty());
  send({kJob, 0, 10, 0, {1, 1, 1}, 4, 5});
  send({kJob, 2, 10, 0, {3, 3, 3}, 5, 5});
  send({kJob, 1, 11, 1, {2, 2, 2}, 6, 9});
  const auto open = model.open_rounds();
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].job_id, kJob);
  EXPECT_EQ(open[0].slot, 10);
  EXPECT_EQ(open[0].set, 0);
  EXPECT_EQ(open[0].seq, 5u);
  EXPECT_THAT(open[0].missing_ranks, ElementsAre(1));
  EXPECT_EQ(open[1].slot, 11);
  EXPECT_EQ(open[1].set, 1);
  EXPECT_EQ(open[1].seq, 9u);
  EXPECT_THAT(open[1].missing_ranks, ElementsAre(0, 2));
  send({kJob, 1, 10, 0, {2, 2, 2}, 6, 5});  // completes slot 10's round
  ASSERT_EQ(model.open_rounds().size(), 1u);
  EXPECT_EQ(model.open_rounds()[0].slot, 11);
}

TEST_F(SwitchModelTest, ReductionInTheOtherSet) {
  install(2);
  send({kJob, 0, 11, 1, {7, 8}, 1, 900});
  EXPECT_EQ(send({kJob, 1, 11, 1, {-7, 100}, 3, 900}).action, Action::kCompleted);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.header.set, 1);
    EXPECT_EQ(r.header.seq, 900u);
    EXPECT_EQ(r.header.exponent, 3);
    EXPECT_THAT(r.values, ElementsAre(0, 108));
  }
  // Set 0 of the slot is untouched.
  const auto& set0 = model.registers(11, 0);
  EXPECT_EQ(set0.bitmap, 0u);
  EXPECT_EQ(set0.remaining, 0u);
  EXPECT_THAT(model.values(11, 0).subspan(0, 2), ElementsAre(0, 0));
  EXPECT_EQ(model.registers(11, 1).bitmap, 0b11u);
}

// A round ORs its contributions' ECN bits into every result (PANAMA): one CE mark on one
// worker's path reaches every worker, the resend of a completed round carries it too, and the
// set's next round starts clean.
TEST_F(SwitchModelTest, ResultsCarryTheOrOfTheContributionsEcn) {
  install();
  model.process(addr(kPort + 0), encode({kJob, 0, 8, 0, {1}, 0, 40}), sink, 2);  // ECT(0)
  model.process(addr(kPort + 1), encode({kJob, 1, 8, 0, {2}, 0, 40}), sink, 3);  // CE
  EXPECT_EQ(model.process(addr(kPort + 2), encode({kJob, 2, 8, 0, {3}, 0, 40}), sink, 2).action,
            Action::kCompleted);
  ASSERT_EQ(sink.packets.size(), 3u);
  for (const auto& p : sink.packets) EXPECT_EQ(p.ecn, 3);
  sink.packets.clear();
  EXPECT_EQ(model.process(addr(kPort + 2), encode({kJob, 2, 8, 0, {3}, 0, 40}), sink, 0).action,
            Action::kResultResent);
  ASSERT_EQ(sink.packets.size(), 1u);
  EXPECT_EQ(sink.packets[0].ecn, 3);
  sink.packets.clear();
  for (std::uint16_t r = 0; r < 3; ++r)
    model.process(addr(kPort + r), encode({kJob, r, 8, 0, {1}, 0, 48}), sink, 2);
  ASSERT_EQ(sink.packets.size(), 3u);
  for (const auto& p : sink.packets) EXPECT_EQ(p.ecn, 2);
}

TEST_F(SwitchModelTest, RetransmissionFromThePreviousSet) {
  install();
  // Round of set 0 completes; rank 2's result is lost in the network.
  send({kJob, 0, 8, 0, {1, 2}, 0, 40});
  send({kJob, 1, 8, 0, {3, 4}, 0, 40});
  send({kJob, 2, 8, 0, {5, 6}, 0, 40});
  ASSERT_EQ(take_results().size(), 3u);
  // Ranks 0 and 1 got theirs and move on to set 1 (seq + W, W = 4).
  EXPECT_EQ(send({kJob, 0, 8, 1, {10, 10}, 0, 44}).action, Action::kAggregated);
  EXPECT_EQ(send({kJob, 1, 8, 1, {20, 20}, 0, 44}).action, Action::kAggregated);
  // Set 0's bitmap is left alone (a complete round's bitmap is never looked at).
  EXPECT_EQ(model.registers(8, 0).bitmap, 0b111u);
  const Snapshot set1 = snapshot(model, 8, 1);

  // Rank 2 retransmits its set-0 packet: it gets the set-0 result, set 1 is left alone.
  EXPECT_EQ(send({kJob, 2, 8, 0, {5, 6}, 0, 40}).action, Action::kResultResent);
  auto results = take_results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].destination, addr(kPort + 2));
  EXPECT_EQ(results[0].header.set, 0);
  EXPECT_EQ(results[0].header.seq, 40u);
  EXPECT_THAT(results[0].values, ElementsAre(9, 12));
  EXPECT_EQ(snapshot(model, 8, 1), set1);

  // Then its set-1 packet completes set 1 with the right sum.
  EXPECT_EQ(send({kJob, 2, 8, 1, {30, 30}, 0, 44}).action, Action::kCompleted);
  results = take_results();
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.header.seq, 44u);
    EXPECT_THAT(r.values, ElementsAre(60, 60));
  }
  // Set 0's next round starts from its starter's bit alone.
  EXPECT_EQ(send({kJob, 1, 8, 0, {7, 7}, 0, 48}).action, Action::kAggregated);
  EXPECT_EQ(model.registers(8, 0).bitmap, 0b10u);
  expect_balanced(model.counters());
}

// At any time one set of a slot aggregates while the other keeps the last result for workers
// that lost it. Eight rounds through one slot, each with a different arrival order, a lost
// result and its retransmission while the next round is being filled.
TEST_F(SwitchModelTest, BothSetsInFlight) {
  install(3, /*base=*/20, /*count=*/1, /*epp=*/2);
  const std::vector<std::vector<std::uint16_t>> orders = {
      {0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {1, 2, 0}, {0, 1, 2}, {2, 1, 0}};
  auto value = [](std::uint32_t p, std::uint16_t r) { return std::int32_t(1000 * (p + 1) + r); };
  for (std::uint32_t p = 0; p < orders.size(); ++p) {
    const std::uint8_t set = p % 2;
    const auto& order = orders[p];
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::uint16_t r = order[i];
      const Outcome o = send({kJob, r, 20, set, {value(p, r), -value(p, r)}, 0, p});
      EXPECT_EQ(o.action, i + 1 == order.size() ? Action::kCompleted : Action::kAggregated)
          << "round " << p << " rank " << r;
      if (i == 0 && p > 0) {
        // The worker that completed the previous round lost that result: it retransmits the
        // previous set's packet while this round is in flight.
        const std::uint16_t last = orders[p - 1].back();
        if (last != r) {
          EXPECT_EQ(send({kJob,
                          last,
                          20,
                          std::uint8_t(set ^ 1),
                          {value(p - 1, last), -value(p - 1, last)},
                          0,
                          p - 1})
                        .action,
                    Action::kResultResent);
          const auto resent = take_results();
          ASSERT_EQ(resent.size(), 1u);
          const std::int32_t previous = 3000 * std::int32_t(p) + 3;  // 1000p*3 + (0+1+2)
          EXPECT_THAT(resent[0].values, ElementsAre(previous, -previous));
          EXPECT_EQ(resent[0].header.seq, p - 1);
        }
      }
    }
    const auto results = take_results();
    ASSERT_EQ(results.size(), 3u);
    const std::int32_t sum = 3000 * std::int32_t(p + 1) + 3;
    for (const auto& res : results) {
      EXPECT_EQ(res.header.set, set);
      EXPECT_EQ(res.header.seq, p);
      EXPECT_THAT(res.values, ElementsAre(sum, -sum));
    }
  }
  EXPECT_EQ(model.counters().completions, orders.size());
  expect_balanced(model.counters());
}

// Packet P of a window of W = 2 goes to slot base + P mod 2, set (P / 2) mod 2. A slot's set is
// reused every 2W packets; each new round overwrites the old sum instead of adding to it.
TEST_F(SwitchModelTest, SlotReuse) {
  install(2, /*base=*/30, /*count=*/2, /*epp=*/1);
  const std::int32_t expected[] = {3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47};
  for (std::uint32_t p = 0; p < std::size(expected); ++p) {
    const auto slot = static_cast<std::uint16_t>(30 + p % 2);
    const auto set = static_cast<std::uint8_t>((p / 2) % 2);
    // rank 0 sends 2p + 1, rank 1 sends 2p + 2: their sum is 4p + 3.
    send({kJob, 0, slot, set, {std::int32_t(2 * p + 1)}, 0, p});
    EXPECT_EQ(send({kJob, 1, slot, set, {std::int32_t(2 * p + 2)}, 0, p}).action,
              Action::kCompleted);
    const auto results = take_results();
    ASSERT_EQ(results.size(), 2u);
    EXPECT_THAT(results[0].values, ElementsAre(expected[p])) << "packet " << p;
    EXPECT_EQ(results[0].header.slot, slot);
    EXPECT_EQ(results[0].header.set, set);
  }
}

TEST_F(SwitchModelTest, IgnoredRetransmissions) {
  install();
  send({kJob, 0, 9, 0, {5, 5}, 0, 1});
  const Snapshot after_first = snapshot(model, 9, 0);
  EXPECT_EQ(send({kJob, 0, 9, 0, {5, 5}, 0, 1}), dropped(DropReason::kDuplicate));
  EXPECT_EQ(send({kJob, 0, 9, 0, {5, 5}, 0, 1}), dropped(DropReason::kDuplicate));
  EXPECT_EQ(snapshot(model, 9, 0), after_first);
  EXPECT_TRUE(no_results());
  send({kJob, 1, 9, 0, {6, 6}, 0, 1});
  EXPECT_EQ(send({kJob, 1, 9, 0, {6, 6}, 0, 1}), dropped(DropReason::kDuplicate));
  // Each duplicate is answered with a notice (a retransmission, paced by its sender): rank 0's
  // round waits for ranks 1 and 2, then (rank 1's copy) for rank 2.
  const auto notices = take_notices();
  ASSERT_EQ(notices.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ(notices[i].destination, addr(kPort));
    EXPECT_EQ(notices[i].header.seq, 1u);
    EXPECT_THAT(notices[i].values, ElementsAre(int(wire::NoticeReason::kDuplicate), 0b110));
  }
  EXPECT_EQ(notices[2].destination, addr(kPort + 1));
  EXPECT_THAT(notices[2].values, ElementsAre(int(wire::NoticeReason::kDuplicate), 0b100));
  EXPECT_EQ(send({kJob, 2, 9, 0, {7, 7}, 0, 1}).action, Action::kCompleted);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_THAT(results[0].values, ElementsAre(18, 18));  // each worker counted once
  EXPECT_EQ(model.counters().drops(DropReason::kDuplicate), 3u);
  expect_balanced(model.counters());
}

TEST_F(SwitchModelTest, ForeignJob) {
  install(2, 8, 4, 4);                             // job 1: ports 40000, 40001
  model.add_job(make_job(2, 2, 12, 4, 4, 41000));  // job 2: ports 41000, 41001
  const Snapshot job2 = snapshot(model, 12, 0);
  // A worker of job 1 sends into job 2 (its address is not job 2's rank 0).
  EXPECT_EQ(send_from(addr(40000), {2, 0, 12, 0, {1}, 0, 0}), dropped(DropReason::kForeignSource));
  // A worker of job 1 names its own job but job 2's slot.
  EXPECT_EQ(send_from(addr(40000), {1, 0, 12, 0, {1}, 0, 0}), dropped(DropReason::kSlotOutOfRange));
  // A job nobody installed.
  EXPECT_EQ(send_from(addr(40000), {3, 0, 8, 0, {1}, 0, 0}), dropped(DropReason::kUnknownJob));
  EXPECT_EQ(snapshot(model, 12, 0), job2);
  EXPECT_EQ(model.registers(8, 0).bitmap, 0u);
  // Each drop is answered, to the sender, with a notice of its reason.
  const auto notices = take_notices();
  ASSERT_EQ(notices.size(), 3u);
  for (const auto& n : notices) EXPECT_EQ(n.destination, addr(40000));
  EXPECT_THAT(notices[0].values, ElementsAre(int(wire::NoticeReason::kForeignSource)));
  EXPECT_THAT(notices[1].values, ElementsAre(int(wire::NoticeReason::kSlotOutOfRange)));
  EXPECT_THAT(notices[2].values, ElementsAre(int(wire::NoticeReason::kUnknownJob)));
  EXPECT_EQ(notices[2].header.job_id, 3u);
  EXPECT_EQ(model.counters().notices, 3u);
  expect_balanced(model.counters());
}

TEST_F(SwitchModelTest, UnknownSource) {
  install();
  // Right job and rank, wrong address: another port, another IP, another rank's address.
  EXPECT_EQ(send_from(addr(40999), {kJob, 0, 8, 0, {1}, 0, 0}),
            dropped(DropReason::kForeignSource));
  EXPECT_EQ(send_from(addr(kPort, 0x0A000001), {kJob, 0, 8, 0, {1}, 0, 0}),
            dropped(DropReason::kForeignSource));
  EXPECT_EQ(send_from(addr(kPort + 1), {kJob, 0, 8, 0, {1}, 0, 0}),
            dropped(DropReason::kForeignSource));
  EXPECT_EQ(model.counters().drops(DropReason::kForeignSource), 3u);
  EXPECT_EQ(model.registers(8, 0).bitmap, 0u);
  EXPECT_EQ(model.registers(8, 0).remaining, 0u);
  EXPECT_TRUE(no_results());
}

TEST_F(SwitchModelTest, RankOutOfRange) {
  install(3);
  EXPECT_EQ(send_from(addr(kPort + 3), {kJob, 3, 8, 0, {1}, 0, 0}),
            dropped(DropReason::kRankOutOfRange));
  EXPECT_EQ(send_from(addr(kPort), {kJob, 0xFFFF, 8, 0, {1}, 0, 0}),
            dropped(DropReason::kRankOutOfRange));
}

TEST_F(SwitchModelTest, SlotOutOfRange) {
  install(3, /*base=*/8, /*count=*/4);
  for (std::uint16_t slot : {0, 7, 12, 63, 64, 0xFFFF})
    EXPECT_EQ(send({kJob, 0, slot, 0, {1}, 0, 0}), dropped(DropReason::kSlotOutOfRange))
        << "slot " << slot;
  for (std::size_t s = 0; s < model.pool_slots(); ++s)
    for (unsigned set = 0; set < 2; ++set) EXPECT_EQ(model.registers(s, set).bitmap, 0u);
  EXPECT_EQ(send({kJob, 0, 11, 0, {1}, 0, 0}).action, Action::kAggregated);  // last valid slot
}

TEST_F(SwitchModelTest, DtypeCountTypeChecks) {
  install(2, 8, 4, /*epp=*/4);
  Contribution c{kJob, 0, 8, 0, {1, 2}, 0, 0};
  c.dtype = wire::DataType::kFp32;
  EXPECT_EQ(send(c), dropped(DropReason::kUnsupportedDtype));
  c.dtype = wire::DataType::kBf16;
  EXPECT_EQ(send(c), dropped(DropReason::kUnsupportedDtype));
  c.dtype = wire::DataType::kInt32;
  c.type = wire::MsgType::kResult;
  EXPECT_EQ(send(c), dropped(DropReason::kNotContribution));
  c.type = wire::MsgType::kContribution;
  c.values = {1, 2, 3, 4, 5};  // job allows 4
  EXPECT_EQ(send(c), dropped(DropReason::kCountTooLargeForJob));
  EXPECT_EQ(model.registers(8, 0).bitmap, 0u);

  // The round's count is set by its first contribution; others must match it.
  c.values = {1, 2, 3};
  EXPECT_EQ(send(c).action, Action::kAggregated);
  const Snapshot round = snapshot(model, 8, 0);
  Contribution other{kJob, 1, 8, 0, {10, 20}, 0, 0};
  EXPECT_EQ(send(other), dropped(DropReason::kCountMismatch));
  EXPECT_EQ(snapshot(model, 8, 0), round);
  c.values = {1, 2};  // a "retransmission" that disagrees with the round
  EXPECT_EQ(send(c), dropped(DropReason::kCountMismatch));
  other.values = {10, 20, 30};
  EXPECT_EQ(send(other).action, Action::kCompleted);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(results[0].values, ElementsAre(11, 22, 33));
  expect_balanced(model.counters());
}

TEST_F(SwitchModelTest, ZeroCountCarriesOnlyTheExponent) {
  install(2);
  send({kJob, 0, 8, 0, {}, -5, 0});
  EXPECT_EQ(send({kJob, 1, 8, 0, {}, 12, 0}).action, Action::kCompleted);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].header.count, 0);
  EXPECT_EQ(results[0].header.exponent, 12);
  EXPECT_TRUE(results[0].values.empty());
}

// Each malformed class is counted under its wire::Error and leaves every register alone.
TEST_F(SwitchModelTest, MalformedPackets) {
  install(2, 8, 4, 4);
  send({kJob, 0, 8, 0, {1, 2}, 0, 0});  // a round in progress that must stay untouched
  const Snapshot round = snapshot(model, 8, 0);
  const std::vector<std::byte> good = encode({kJob, 1, 8, 0, {3, 4}, 0, 0});

  struct Case {
    const char* name;
    std::vector<std::byte> bytes;
    wire::Error error;
  };
  std::vector<Case> cases;
  cases.push_back({"empty", {}, wire::Error::kTruncated});
  cases.push_back({"header cut", {good.begin(), good.begin() + 21}, wire::Error::kTruncated});
  auto patched = [&](std::size_t at, std::uint8_t v) {
    auto b = good;
    b[at] = std::byte(v);
    return b;
  };
  cases.push_back({"version 0", patched(wire::offset::kVersion, 0), wire::Error::kBadVersion});
  cases.push_back({"version 2", patched(wire::offset::kVersion, 2), wire::Error::kBadVersion});
  cases.push_back({"type 0", patched(wire::offset::kType, 0), wire::Error::kBadType});
  cases.push_back({"type 4", patched(wire::offset::kType, 4), wire::Error::kBadType});
  cases.push_back({"the first undefined dtype",
                   patched(wire::offset::kDtype, static_cast<std::uint8_t>(wire::kDataTypeCount)),
                   wire::Error::kBadDtype});
  cases.push_back({"flags 8", patched(wire::offset::kFlags, 8), wire::Error::kBadFlags});
  cases.push_back({"flags 0x81", patched(wire::offset::kFlags, 0x81), wire::Error::kBadFlags});
  {
    auto b = good;
    wire::store_be16(b.data() + wire::offset::kCount, wire::kMaxCount + 1);
    b.resize(wire::kHeaderSize + 4 * (wire::kMaxCount + 1));
    cases.push_back({"count 1025", b, wire::Error::kCountTooLarge});
  }
  {
    auto b = good;
    b.pop_back();
    cases.push_back({"payload short", b, wire::Error::kLengthMismatch});
    b = good;
    b.push_back(std::byte{0});
    cases.push_back({"payload long", b, wire::Error::kLengthMismatch});
    b = good;
    wire::store_be16(b.data() + wire::offset::kCount, 3);
    cases.push_back({"count says 3, payload 2", b, wire::Error::kLengthMismatch});
  }

  std::array<std::uint64_t, wire::kErrorCount> expected{};
  for (const auto& c : cases) {
    EXPECT_EQ(send_raw(addr(kPort + 1), c.bytes), dropped(DropReason::kMalformed, c.error))
        << c.name;
    ++expected[static_cast<std::size_t>(c.error)];
  }
  EXPECT_EQ(model.counters().malformed, expected);
  EXPECT_EQ(model.counters().drops(DropReason::kMalformed), cases.size());
  EXPECT_EQ(snapshot(model, 8, 0), round);
  EXPECT_TRUE(no_results());
  // The good packet still completes the round.
  EXPECT_EQ(send_raw(addr(kPort + 1), good).action, Action::kCompleted);
  EXPECT_THAT(take_results()[0].values, ElementsAre(4, 6));
  expect_balanced(model.counters());
}

// Anything dropped by the job table leaves every register of the pool alone.
TEST_F(SwitchModelTest, DroppedPacketsNeverTouchSlotState) {
  install(2, 8, 4, 4);
  send({kJob, 0, 9, 1, {1, 2, 3}, 4, 9});
  std::vector<Snapshot> before;
  for (std::size_t s = 0; s < model.pool_slots(); ++s)
    for (unsigned set = 0; set < 2; ++set) before.push_back(snapshot(model, s, set));

  Contribution fp32{kJob, 1, 9, 1, {1, 2, 3}, 0, 9};
  fp32.dtype = wire::DataType::kFp32;
  Contribution result{kJob, 1, 9, 1, {1, 2, 3}, 0, 9};
  result.type = wire::MsgType::kResult;
  send_from(addr(123), {kJob, 1, 9, 1, {1, 2, 3}, 0, 9});        // foreign source
  send_from(addr(kPort + 1), {7, 1, 9, 1, {1, 2, 3}, 0, 9});     // unknown job
  send_from(addr(kPort + 1), {kJob, 2, 9, 1, {1, 2, 3}, 0, 9});  // rank out of range
  send({kJob, 1, 5, 1, {1, 2, 3}, 0, 9});                        // slot out of range
  send(fp32);
  send(result);
  send({kJob, 1, 9, 1, {1, 2, 3, 4, 5}, 0, 9});  // count too large for the job
  send({kJob, 1, 9, 1, {1, 2}, 0, 9});           // count mismatch
  send({kJob, 0, 9, 1, {1, 2, 3}, 4, 9});        // duplicate
  EXPECT_EQ(model.counters().dropped_total(), 9u);
  for (DropReason r :
       {DropReason::kForeignSource, DropReason::kUnknownJob, DropReason::kRankOutOfRange,
        DropReason::kSlotOutOfRange, DropReason::kUnsupportedDtype, DropReason::kNotContribution,
        DropReason::kCountTooLargeForJob, DropReason::kCountMismatch, DropReason::kDuplicate})
    EXPECT_EQ(model.counters().drops(r), 1u) << to_string(r);

  std::size_t i = 0;
  for (std::size_t s = 0; s < model.pool_slots(); ++s)
    for (unsigned set = 0; set < 2; ++set)
      EXPECT_EQ(snapshot(model, s, set), before[i++]) << "slot " << s << " set " << set;
  EXPECT_TRUE(no_results());
  expect_balanced(model.counters());
}

TEST_F(SwitchModelTest, MaxExponent) {
  install(4);
  struct Round {
    std::vector<std::int16_t> exponents;
    std::int16_t expected;
  };
  const std::vector<Round> rounds = {
      {{-3, 7, wire::kExponentNone, 2}, 7},
      {{wire::kExponentNone, wire::kExponentNone, wire::kExponentNone, wire::kExponentNone},
       wire::kExponentNone},
      {{-20, -9, -15, -31}, -9},
      {{5, wire::kExponentNonFinite, 6, 0}, wire::kExponentNonFinite},
      {{wire::kExponentNone, wire::kExponentNone, -126, wire::kExponentNone}, -126},
  };
  for (std::uint32_t i = 0; i < rounds.size(); ++i) {
    const auto set = static_cast<std::uint8_t>(i % 2);
    for (std::uint16_t r = 0; r < 4; ++r) send({kJob, r, 8, set, {1}, rounds[i].exponents[r], i});
    const auto results = take_results();
    ASSERT_EQ(results.size(), 4u) << "round " << i;
    for (const auto& res : results) EXPECT_EQ(res.header.exponent, rounds[i].expected);
  }
}

TEST_F(SwitchModelTest, WrapAroundAdd) {
  install(2);
  send({kJob, 0, 8, 0, {INT32_MAX, INT32_MIN, -1, INT32_MAX}, 0, 0});
  send({kJob, 1, 8, 0, {1, -1, INT32_MIN, INT32_MAX}, 0, 0});
  const auto results = take_results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(results[0].values, ElementsAre(INT32_MIN, INT32_MAX, INT32_MAX, -2));
}

TEST_F(SwitchModelTest, ThirtyTwoWorkers) {
  model.add_job(make_job(kJob, 32, 0, 2, 1, kPort));
  for (std::uint16_t r = 0; r < 32; ++r) {
    const Outcome o = send({kJob, r, 1, 1, {std::int32_t(1) << (r % 31)}, 0, 0});
    EXPECT_EQ(o.action, r == 31 ? Action::kCompleted : Action::kAggregated) << r;
  }
  EXPECT_EQ(model.registers(1, 1).bitmap, 0xFFFFFFFFu);
  const auto results = take_results();
  ASSERT_EQ(results.size(), 32u);
  // Ranks 0..30 send 2^r, rank 31 sends 2^0: 2^31 - 1 + 1 wraps to INT32_MIN.
  EXPECT_THAT(results[31].values, ElementsAre(INT32_MIN));
  EXPECT_EQ(results[31].destination, addr(kPort + 31));
  EXPECT_EQ(results[31].header.rank, 31);
  // Rank 31's retransmission is recognised by its bit (the bitmap's top bit).
  EXPECT_EQ(send({kJob, 31, 1, 1, {1}, 0, 0}).action, Action::kResultResent);
}

TEST_F(SwitchModelTest, JobsAreIsolated) {
  // Two jobs share the switch; they interleave on adjacent slot ranges, and one address even
  // belongs to both (the job id tells them apart).
  JobSpec a = make_job(10, 2, 0, 4, 2, 40000);
  JobSpec b = make_job(20, 3, 4, 4, 2, 40001);  // its rank 0 is job a's rank 1
  model.add_job(a);
  model.add_job(b);
  model.process(addr(40000), encode({10, 0, 3, 0, {1, 2}, 1, 3}), sink);
  model.process(addr(40001), encode({20, 0, 4, 0, {100, 200}, 2, 0}), sink);
  model.process(addr(40002), encode({20, 1, 4, 0, {300, 400}, 9, 0}), sink);
  EXPECT_TRUE(no_results());
  EXPECT_EQ(model.process(addr(40001), encode({10, 1, 3, 0, {5, 6}, 4, 3}), sink).action,
            Action::kCompleted);
  auto results = take_results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].destination, addr(40000));
  EXPECT_EQ(results[1].destination, addr(40001));
  for (const auto& r : results) {
    EXPECT_EQ(r.header.job_id, 10);
    EXPECT_EQ(r.header.exponent, 4);
    EXPECT_THAT(r.values, ElementsAre(6, 8));
  }
  EXPECT_EQ(model.process(addr(40003), encode({20, 2, 4, 0, {-100, 1}, 0, 0}), sink).action,
            Action::kCompleted);
  results = take_results();
  ASSERT_EQ(results.size(), 3u);
  for (std::uint16_t r = 0; r < 3; ++r) {
    EXPECT_EQ(results[r].destination, addr(40001 + r));
    EXPECT_EQ(results[r].header.job_id, 20);
    EXPECT_EQ(results[r].header.rank, r);
    EXPECT_EQ(results[r].header.exponent, 9);
    EXPECT_THAT(results[r].values, ElementsAre(300, 601));
  }
  // Removing job a leaves job b working and makes a's packets unknown.
  model.remove_job(10);
  EXPECT_EQ(model.process(addr(40000), encode({10, 0, 3, 1, {1, 2}, 1, 7}), sink),
            dropped(DropReason::kUnknownJob));
  EXPECT_EQ(model.process(addr(40001), encode({20, 0, 5, 0, {1, 1}, 0, 1}), sink).action,
            Action::kAggregated);
  EXPECT_THAT(model.job_ids(), ElementsAre(20));
}

TEST_F(SwitchModelTest, AddJobClearsItsSlots) {
  install(2, 8, 4, 4);
  send({kJob, 0, 8, 0, {1, 2}, 0, 0});
  send({kJob, 1, 8, 0, {1, 2}, 0, 0});
  take_results();
  model.remove_job(kJob);
  install(2, 8, 4, 4);
  // The bit of the old round is gone: this is a new round, not a retransmission.
  EXPECT_EQ(send({kJob, 0, 8, 0, {7, 7}, 0, 0}).action, Action::kAggregated);
  EXPECT_THAT(model.values(8, 0).subspan(0, 2), ElementsAre(7, 7));
  EXPECT_EQ(model.registers(8, 0).remaining, 1u);
}

// ---- Late copies: the round's seq tells them from new rounds ------------------------------------

// Every register of the pool, to prove that a packet left all of them alone.
std::vector<Snapshot> snapshot_all(const SwitchModel& m) {
  std::vector<Snapshot> all;
  for (std::size_t s = 0; s < m.pool_slots(); ++s)
    for (unsigned set = 0; set < 2; ++set) all.push_back(snapshot(m, s, set));
  return all;
}

// Two ranks, W = 1: packet P goes to slot 8, set P % 2, seq P. Rank 0's retransmission of
// packet 0 is overtaken by its packet 1 (which, in SwitchML, clears its bit in set 0: there the
// late copy started a round on set 0 and corrupted packet 2); here it is recognised by its seq
// as a copy of the completed round 0.
TEST_F(SwitchModelTest, RetransmissionOvertakenByTheSendersNextPacket) {
  install(2, /*base=*/8, /*count=*/1, /*epp=*/2);
  send({kJob, 0, 8, 0, {1, 2}, 0, 0});
  EXPECT_EQ(send({kJob, 1, 8, 0, {10, 20}, 0, 0}).action, Action::kCompleted);
  ASSERT_EQ(take_results().size(), 2u);
  EXPECT_EQ(send({kJob, 0, 8, 1, {3, 4}, 0, 1}).action, Action::kAggregated);
  EXPECT_EQ(model.registers(8, 0).bitmap, 0b11u);  // set 0's bitmap is not touched
  const auto before = snapshot_all(model);

  // The late copy of packet 0: answered with round 0's result, nothing else changes.
  EXPECT_EQ(send({kJob, 0, 8, 0, {1, 2}, 0, 0}).action, Action::kResultResent);
  auto results = take_results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].destination, addr(kPort));
  EXPECT_EQ(results[0].header.seq, 0u);
  EXPECT_EQ(results[0].header.set, 0);
  EXPECT_THAT(results[0].values, ElementsAre(11, 22));
  EXPECT_EQ(snapshot_all(model), before);

  // The next rounds complete with the right sums and seqs.
  EXPECT_EQ(send({kJob, 1, 8, 1, {30, 40}, 0, 1}).action, Action::kCompleted);
  results = take_results();
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.header.seq, 1u);
    EXPECT_THAT(r.values, ElementsAre(33, 44));
  }
  EXPECT_EQ(send({kJob, 0, 8, 0, {5, 6}, 0, 2}).action, Action::kAggregated);
  EXPECT_EQ(send({kJob, 1, 8, 0, {50, 60}, 0, 2}).action, Action::kCompleted);
  results = take_results();
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.header.seq, 2u);
    EXPECT_EQ(r.header.set, 0);
    EXPECT_THAT(r.values, ElementsAre(55, 66));
  }
  EXPECT_EQ(model.counters().dropped_total(), 0u);
  expect_balanced(model.counters());
}

// A copy older than the set's round (complete or in progress) is dropped as stale and touches
// no register; a packet newer than a round still in progress ends it and starts its own (every
// worker has had the old round's result by then; after a restart a re-formed round can be left
// unfinished, and the set must not stay blocked).
TEST_F(SwitchModelTest, StalePacketsTouchNothingAndNewerOnesEndAnUnfinishedRound) {
  install(2, /*base=*/8, /*count=*/1, /*epp=*/2);
  for (std::uint32_t p = 0; p < 3; ++p) {  // rounds 0 (set 0), 1 (set 1), 2 (set 0)
    const auto set = static_cast<std::uint8_t>(p % 2);
    send({kJob, 0, 8, set, {1, 1}, 0, p});
    ASSERT_EQ(send({kJob, 1, 8, set, {2, 2}, 0, p}).action, Action::kCompleted);
  }
  take_results();
  auto before = snapshot_all(model);

  // Packet 0 from both ranks, two rounds late: set 0 holds round 2 (complete).
  EXPECT_EQ(send({kJob, 0, 8, 0, {7, 7}, 0, 0}), dropped(DropReason::kStale));
  EXPECT_EQ(send({kJob, 1, 8, 0, {7, 7}, 0, 0}), dropped(DropReason::kStale));
  EXPECT_EQ(snapshot_all(model), before);
  EXPECT_TRUE(no_results());

  // Round 4 in progress on set 0 (after round 3 on set 1).
  send({kJob, 0, 8, 1, {1, 1}, 0, 3});
  send({kJob, 1, 8, 1, {2, 2}, 0, 3});
  take_results();
  EXPECT_EQ(send({kJob, 0, 8, 0, {4, 4}, 0, 4}).action, Action::kAggregated);
  before = snapshot_all(model);
  EXPECT_EQ(send({kJob, 1, 8, 0, {9, 9}, 0, 2}), dropped(DropReason::kStale));  // round 2's copy
  EXPECT_EQ(send({kJob, 1, 8, 0, {9, 9}, 0, 0}), dropped(DropReason::kStale));
  EXPECT_EQ(snapshot_all(model), before);
  EXPECT_TRUE(no_results());
  EXPECT_EQ(model.counters().drops(DropReason::kStale), 4u);

  // Round 6 (newer) replaces the unfinished round 4 and completes with both ranks.
  EXPECT_EQ(send({kJob, 1, 8, 0, {9, 9}, 0, 6}).action, Action::kAggregated);
  EXPECT_EQ(model.registers(8, 0).seq, 6u);
  EXPECT_EQ(model.registers(8, 0).bitmap, 0b10u);
  EXPECT_EQ(send({kJob, 0, 8, 0, {9, 9}, 0, 6}).action, Action::kCompleted);
  EXPECT_THAT(take_results()[0].values, ElementsAre(18, 18));
  // Round 4's packet is now stale.
  EXPECT_EQ(send({kJob, 1, 8, 0, {40, 40}, 0, 4}), dropped(DropReason::kStale));
  expect_balanced(model.counters());
}

// A worker group started again from packet 0 against slots that hold a longer earlier run: every
// packet is older than its set's round, so nothing is aggregated or answered and the workers
// time out instead of receiving the old run's sums.
TEST_F(SwitchModelTest, RestartFromZeroAgainstOldStateIsDroppedAsStale) {
  constexpr std::uint16_t kW = 2;
  install(2, /*base=*/8, kW, /*epp=*/1);
  auto run = [&](std::uint32_t first, std::uint32_t packets, std::int32_t base_value) {
    for (std::uint32_t p = first; p < first + packets; ++p) {
      const auto slot = static_cast<std::uint16_t>(8 + p % kW);
      const auto set = static_cast<std::uint8_t>((p / kW) % 2);
      send({kJob, 0, slot, set, {base_value + std::int32_t(p)}, 0, p});
      send({kJob, 1, slot, set, {base_value}, 0, p});
    }
  };
  run(0, 6 * kW, 1000);                   // the old run: packets 0..11
  send({kJob, 0, 8, 0, {1}, 0, 6 * kW});  // ... and packet 12 (slot 8, set 0) in progress
  ASSERT_EQ(model.registers(8, 0).remaining, 1u);
  ASSERT_EQ(model.registers(9, 0).remaining, 0u);  // packet 9, complete
  take_results();
  const auto before = snapshot_all(model);
  const auto counters = model.counters();

  run(0, kW, 0);  // the new run's first window, from both ranks
  for (int retransmission = 0; retransmission < 2; ++retransmission) run(0, kW, 0);
  EXPECT_TRUE(no_results());
  EXPECT_EQ(snapshot_all(model), before);
  EXPECT_EQ(model.counters().aggregated, counters.aggregated);
  EXPECT_EQ(model.counters().drops(DropReason::kStale), 3u * 2 * kW);
  expect_balanced(model.counters());
}

// Installing the job again clears its slots: then a run from packet 0 works.
TEST_F(SwitchModelTest, ReinstalledJobStartsAfresh) {
  install(2, /*base=*/8, /*count=*/1, /*epp=*/1);
  for (std::uint32_t p = 0; p < 7; ++p) {
    send({kJob, 0, 8, std::uint8_t(p % 2), {1}, 0, p});
    send({kJob, 1, 8, std::uint8_t(p % 2), {1}, 0, p});
  }
  send({kJob, 0, 8, 1, {1}, 0, 7});  // round 7 in progress
  take_results();
  EXPECT_EQ(send({kJob, 0, 8, 0, {5}, 0, 0}), dropped(DropReason::kStale));

  auto restart = [&] {
    for (std::uint32_t p = 0; p < 4; ++p) {
      EXPECT_EQ(send({kJob, 0, 8, std::uint8_t(p % 2), {std::int32_t(p)}, 0, p}).action,
                Action::kAggregated)
          << p;
      EXPECT_EQ(send({kJob, 1, 8, std::uint8_t(p % 2), {100}, 0, p}).action, Action::kCompleted)
          << p;
      const auto results = take_results();
      ASSERT_EQ(results.size(), 2u);
      EXPECT_EQ(results[0].header.seq, p);
      EXPECT_THAT(results[0].values, ElementsAre(100 + std::int32_t(p)));
    }
  };
  model.remove_job(kJob);
  install(2, 8, 1, 1);
  EXPECT_FALSE(model.registers(8, 0).has_round);
  EXPECT_FALSE(model.registers(8, 1).has_round);
  restart();

  // replace_jobs with the same description does the same.
  model.replace_jobs(std::vector<JobSpec>{*model.find_job(kJob)});
  EXPECT_FALSE(model.registers(8, 0).has_round);
  restart();
  expect_balanced(model.counters());
}

// Seqs compare in serial-number arithmetic: across the 2^32 wrap a round's successor is newer
// and its predecessor older. W = 1, packets 2^32 - 2 .. 2^32 + 1.
TEST_F(SwitchModelTest, SeqWrapsAround) {
  install(2, /*base=*/8, /*count=*/1, /*epp=*/1);
  constexpr std::uint64_t kFirst = (std::uint64_t{1} << 32) - 2;
  for (std::uint64_t p = kFirst; p < kFirst + 4; ++p) {
    const auto set = static_cast<std::uint8_t>(p % 2);
    const auto seq = static_cast<std::uint32_t>(p);
    EXPECT_EQ(send({kJob, 0, 8, set, {std::int32_t(p % 1000)}, 0, seq}).action, Action::kAggregated)
        << p;
    if (p >= kFirst + 2) {
      // The copy of the set's previous round (2 packets back, across the wrap) is stale; the
      // copy of the other set's round, complete, gets its result again.
      const auto old = static_cast<std::uint32_t>(p - 2);
      EXPECT_EQ(send({kJob, 1, 8, set, {0}, 0, old}), dropped(DropReason::kStale)) << p;
      EXPECT_EQ(send({kJob, 1, 8, std::uint8_t(set ^ 1), {0}, 0, old + 1}).action,
                Action::kResultResent)
          << p;
      EXPECT_EQ(take_results().at(0).header.seq, old + 1);
    }
    EXPECT_EQ(send({kJob, 1, 8, set, {1}, 0, seq}).action, Action::kCompleted) << p;
    const auto results = take_results();
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].header.seq, seq);
    EXPECT_THAT(results[0].values, ElementsAre(std::int32_t(p % 1000) + 1));
  }
  EXPECT_EQ(model.registers(8, 0).seq, 0u);
  EXPECT_EQ(model.registers(8, 1).seq, 1u);
  // Half the seq space ahead of a complete round is newer; further is older.
  EXPECT_EQ(send({kJob, 0, 8, 0, {1}, 0, 0x80000000u}), dropped(DropReason::kStale));
  EXPECT_EQ(send({kJob, 0, 8, 0, {1}, 0, 0x7FFFFFFFu}).action, Action::kAggregated);
  EXPECT_EQ(model.registers(8, 0).seq, 0x7FFFFFFFu);
  expect_balanced(model.counters());
}

// ---- The whole protocol against the model ------------------------------------------------------
//
// n workers run the engine's protocol through a window of W slots: packet P goes to slot
// base + P mod W, set (P / W) mod 2, with seq = P mod 2^32, and is sent only after the result of
// P - W arrived. The network delivers any packet in flight next (unbounded reordering), loses
// and duplicates some, and workers retransmit what is unanswered at random moments, so late
// copies of every age reach the switch. Each worker checks every result it accepts against the
// exact sum; at the end every round must have been aggregated exactly once per worker.
struct ProtocolCase {
  const char* name;
  std::uint16_t workers;
  std::uint16_t window;
  std::uint64_t first_packet;  // global index of the first packet (near 2^32: seq wraps)
  std::uint64_t packets;
  double loss;
  double duplicate;
  double retransmit;  // per step: a random worker retransmits everything unanswered
  std::uint64_t seed;
  friend void PrintTo(const ProtocolCase& c, std::ostream* os) { *os << c.name; }
};

class SwitchProtocolTest : public ::testing::TestWithParam<ProtocolCase> {};

// What worker `rank` contributes in packet P: a count that changes from packet to packet (as
// the fp32 preamble's zero-count packets do) and values whose sums wrap.
std::vector<std::int32_t> protocol_values(std::uint64_t p, std::uint16_t rank) {
  std::vector<std::int32_t> v(p % 3 + 1);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(p * 2654435761u) +
                                     0x9E3779B9u * (rank + 1) + static_cast<std::uint32_t>(i));
  return v;
}
std::int16_t protocol_exponent(std::uint64_t p, std::uint16_t rank) {
  return static_cast<std::int16_t>(static_cast<int>((p + 7 * rank) % 41) - 20);
}

TEST_P(SwitchProtocolTest, EveryRoundOnceAndEveryResultExact) {
  const ProtocolCase& pc = GetParam();
  constexpr std::uint16_t kJob = 9, kBase = 5, kPort = 42000;
  SwitchModel model(64, 4);
  model.add_job(make_job(kJob, pc.workers, kBase, pc.window, 4, kPort));

  struct Packet {
    bool to_switch;
    std::uint16_t rank;  // the sender (to the switch) or the destination (to a worker)
    std::vector<std::byte> bytes;
  };
  std::vector<Packet> network;
  std::mt19937_64 rng(pc.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const std::uint64_t end = pc.first_packet + pc.packets;

  struct Worker {
    std::vector<std::optional<std::uint64_t>> in_flight;  // by slot index: the packet awaited
    std::uint64_t answered = 0;
  };
  std::vector<Worker> workers(pc.workers);
  auto contribution_of = [&](std::uint16_t rank, std::uint64_t p) {
    return encode({kJob, rank, static_cast<std::uint16_t>(kBase + p % pc.window),
                   static_cast<std::uint8_t>((p / pc.window) % 2), protocol_values(p, rank),
                   protocol_exponent(p, rank), static_cast<std::uint32_t>(p)});
  };
  auto send = [&](std::uint16_t rank, std::uint64_t p) {
    network.push_back({true, rank, contribution_of(rank, p)});
  };
  for (std::uint16_t r = 0; r < pc.workers; ++r) {
    workers[r].in_flight.resize(pc.window);
    for (std::uint64_t p = pc.first_packet; p < std::min(end, pc.first_packet + pc.window); ++p) {
      workers[r].in_flight[p % pc.window] = p;
      send(r, p);
    }
  }
  auto retransmit = [&](std::uint16_t r) {
    for (const auto& p : workers[r].in_flight)
      if (p) send(r, *p);
  };
  auto all_done = [&] {
    for (const auto& w : workers)
      if (w.answered != pc.packets) return false;
    return true;
  };

  CollectingSink out;
  std::uint64_t steps = 0;
  while (!all_done()) {
    ASSERT_LT(++steps, 2'000'000u) << "no progress";
    if (network.empty() || coin(rng) < pc.retransmit) {  // a retransmission timer fires
      if (network.empty())
        for (std::uint16_t r = 0; r < pc.workers; ++r) retransmit(r);
      else
        retransmit(static_cast<std::uint16_t>(rng() % pc.workers));
      continue;
    }
    const std::size_t pick = rng() % network.size();
    Packet packet = network[pick];
    if (coin(rng) >= pc.duplicate) {  // else a copy stays in flight
      network[pick] = std::move(network.back());
      network.pop_back();
    }
    if (coin(rng) < pc.loss) continue;
    if (packet.to_switch) {
      model.process(addr(kPort + packet.rank), packet.bytes, out);
      for (auto& result : out.packets) {
        const auto d = wire::decode(result.bytes);
        ASSERT_TRUE(d);
        ASSERT_EQ(result.destination, addr(kPort + d.header.rank));
        network.push_back({false, d.header.rank, std::move(result.bytes)});
      }
      out.packets.clear();
      continue;
    }
    // A result at its worker: accepted only for the packet awaited on that slot and set (as the
    // engine does); an accepted result must be exactly right.
    const Result res = decode_result({addr(kPort + packet.rank), packet.bytes});
    if (res.header.type == wire::MsgType::kNotice) continue;  // never a result
    Worker& w = workers[packet.rank];
    const std::size_t idx = res.header.slot - kBase;
    ASSERT_LT(idx, pc.window);
    const std::optional<std::uint64_t> awaited = w.in_flight[idx];
    if (!awaited || res.header.seq != static_cast<std::uint32_t>(*awaited) ||
        res.header.set != (*awaited / pc.window) % 2)
      continue;
    const std::uint64_t p = *awaited;
    std::vector<std::int32_t> sum = protocol_values(p, 0);
    std::int16_t exponent = protocol_exponent(p, 0);
    for (std::uint16_t r = 1; r < pc.workers; ++r) {
      const auto v = protocol_values(p, r);
      for (std::size_t i = 0; i < sum.size(); ++i)
        sum[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum[i]) +
                                           static_cast<std::uint32_t>(v[i]));
      exponent = std::max(exponent, protocol_exponent(p, r));
    }
    ASSERT_EQ(res.values, sum) << "rank " << packet.rank << " packet " << p;
    ASSERT_EQ(res.header.exponent, exponent) << "rank " << packet.rank << " packet " << p;
    ++w.answered;
    w.in_flight[idx].reset();
    if (p + pc.window < end) {
      w.in_flight[idx] = p + pc.window;
      send(packet.rank, p + pc.window);
    }
  }
  // Whatever is still in flight reaches the switch late; none of it may start a round.
  for (const Packet& packet : network)
    if (packet.to_switch) model.process(addr(kPort + packet.rank), packet.bytes, out);

  const SwitchCounters& c = model.counters();
  EXPECT_EQ(c.completions, pc.packets);
  EXPECT_EQ(c.aggregated, pc.packets * pc.workers);
  EXPECT_EQ(c.results_multicast, pc.packets * pc.workers);
  expect_balanced(c);
  EXPECT_GT(c.results_resent, 0u) << "no retransmission reached a completed round";
  EXPECT_GT(c.drops(DropReason::kStale), 0u) << "no copy arrived after its round was over";
  // Only copies of packets whose round is under way or over are dropped.
  EXPECT_EQ(c.dropped_total(), c.drops(DropReason::kDuplicate) + c.drops(DropReason::kStale));
}

INSTANTIATE_TEST_SUITE_P(
    Reordering, SwitchProtocolTest,
    ::testing::Values(ProtocolCase{"two_workers_window_1", 2, 1, 0, 2000, 0.05, 0.05, 0.02, 1},
                      ProtocolCase{"three_workers_window_4", 3, 4, 0, 3000, 0.10, 0.05, 0.02, 2},
                      ProtocolCase{"eight_workers_window_3", 8, 3, 0, 1500, 0.05, 0.10, 0.05, 3},
                      ProtocolCase{"seq_wraps", 3, 5, (std::uint64_t{1} << 32) - 1003, 2000, 0.05,
                                   0.05, 0.02, 4},
                      ProtocolCase{"one_worker_seq_wraps", 1, 2, (std::uint64_t{1} << 32) - 9, 200,
                                   0.1, 0.1, 0.05, 5},
                      ProtocolCase{"no_loss_heavy_duplicates", 4, 2, 0, 1500, 0.0, 0.3, 0.05, 6}),
    [](const auto& info) { return std::string(info.param.name); });

void expect_config_error(const std::function<void()>& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning \"" << text << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

TEST(SwitchModelConfig, ConstructorLimits) {
  expect_config_error([] { SwitchModel m(0, 4); }, "pool size 0");
  expect_config_error([] { SwitchModel m(kMaxPoolSlots + 1, 4); }, "pool size 65537");
  expect_config_error([] { SwitchModel m(4, 0); }, "elements per packet 0");
  expect_config_error([] { SwitchModel m(4, kMaxLanes + 1); }, "elements per packet 1025");
  SwitchModel m(1, kMaxLanes);
  EXPECT_EQ(m.pool_slots(), 1u);
  EXPECT_EQ(m.max_elements_per_packet(), kMaxLanes);
}

TEST(SwitchModelConfig, JobValidation) {
  SwitchModel m(64, 16);
  m.add_job(make_job(1, 2, 10, 10, 16, 40000));  // slots [10, 20)

  expect_config_error([&] { m.add_job(make_job(1, 2, 30, 2, 4, 41000)); },
                      "job 1 is installed already");
  expect_config_error([&] { m.add_job(make_job(2, 33, 30, 2, 4, 41000)); },
                      "job 2 has 33 workers; the switch's 32-bit worker bitmap allows at most 32");
  expect_config_error([&] { m.add_job(make_job(2, 0, 30, 2, 4, 41000)); }, "job 2 has no workers");
  expect_config_error([&] { m.add_job(make_job(2, 2, 30, 0, 4, 41000)); },
                      "job 2 has an empty slot range");
  expect_config_error([&] { m.add_job(make_job(2, 2, 60, 5, 4, 41000)); },
                      "job 2 uses slots [60, 65) but the switch pool has 64 slots");
  expect_config_error([&] { m.add_job(make_job(2, 2, 19, 2, 4, 41000)); },
                      "job 2: slots [19, 21) overlap slots [10, 20) of job 1");
  expect_config_error([&] { m.add_job(make_job(2, 2, 0, 11, 4, 41000)); },
                      "job 2: slots [0, 11) overlap slots [10, 20) of job 1");
  expect_config_error([&] { m.add_job(make_job(2, 2, 30, 2, 17, 41000)); },
                      "job 2: elements_per_packet 17 is out of range [1, 16]");
  expect_config_error([&] { m.add_job(make_job(2, 2, 30, 2, 0, 41000)); },
                      "elements_per_packet 0 is out of range");
  JobSpec swapped = make_job(2, 3, 30, 2, 4, 41000);
  std::swap(swapped.workers[0].rank, swapped.workers[2].rank);
  expect_config_error([&] { m.add_job(swapped); }, "job 2: worker 0 has rank 2");
  JobSpec shared = make_job(2, 3, 30, 2, 4, 41000);
  shared.workers[2].address = shared.workers[0].address;
  expect_config_error([&] { m.add_job(shared); },
                      "job 2: ranks 0 and 2 share address 127.0.0.1:41000");
  expect_config_error([&] { m.remove_job(2); }, "job 2 is not installed");

  // None of the failures installed anything; the boundary cases are accepted.
  EXPECT_THAT(m.job_ids(), ElementsAre(1));
  m.add_job(make_job(2, 32, 20, 44, 16, 41000));  // up to the pool's end, 32 workers
  m.add_job(make_job(3, 1, 0, 10, 1, 42000));     // right below job 1
  EXPECT_THAT(m.job_ids(), ElementsAre(1, 2, 3));
  ASSERT_NE(m.find_job(2), nullptr);
  EXPECT_EQ(m.find_job(2)->workers.size(), 32u);
  EXPECT_EQ(m.find_job(4), nullptr);
}

// replace_jobs is all or nothing: a bad set leaves the table and every register as they were.
TEST(SwitchModelConfig, ReplaceJobs) {
  SwitchModel m(32, 4);
  CollectingSink sink;
  m.add_job(make_job(1, 2, 0, 4, 4, 40000));
  m.add_job(make_job(2, 1, 4, 4, 4, 41000));
  m.process(addr(40000), encode({1, 0, 1, 0, {5}, 0, 1}), sink);  // a round in progress
  m.process(addr(41000), encode({2, 0, 5, 1, {6}, 0, 5}), sink);  // a completed round
  const auto before = snapshot_all(m);

  const std::vector<JobSpec> twice = {make_job(3, 1, 8, 2, 4, 42000),
                                      make_job(3, 1, 10, 2, 4, 43000)};
  expect_config_error([&] { m.replace_jobs(twice); }, "job 3 is listed twice");
  const std::vector<JobSpec> overlapping = {make_job(1, 2, 0, 4, 4, 40000),
                                            make_job(3, 1, 3, 2, 4, 42000)};
  expect_config_error([&] { m.replace_jobs(overlapping); },
                      "job 3: slots [3, 5) overlap slots [0, 4) of job 1");
  const std::vector<JobSpec> too_big = {make_job(1, 2, 0, 4, 4, 40000),
                                        make_job(4, 1, 30, 4, 4, 42000)};
  expect_config_error([&] { m.replace_jobs(too_big); }, "job 4 uses slots [30, 34)");
  EXPECT_THAT(m.job_ids(), ElementsAre(1, 2));
  EXPECT_EQ(snapshot_all(m), before);

  // Job 1 again (its slots cleared), job 2 gone (its slots cleared), job 3 new on job 2's slots.
  const std::vector<JobSpec> next = {make_job(1, 2, 0, 4, 4, 40000),
                                     make_job(3, 1, 4, 2, 4, 42000)};
  m.replace_jobs(next);
  EXPECT_THAT(m.job_ids(), ElementsAre(1, 3));
  for (std::size_t slot = 0; slot < m.pool_slots(); ++slot)
    for (unsigned set = 0; set < 2; ++set) {
      EXPECT_FALSE(m.registers(slot, set).has_round) << slot << " " << set;
      EXPECT_EQ(m.registers(slot, set).bitmap, 0u);
      EXPECT_THAT(m.values(slot, set), ::testing::Each(0));
    }
  EXPECT_EQ(m.process(addr(41000), encode({2, 0, 5, 1, {6}, 0, 5}), sink),
            dropped(DropReason::kUnknownJob));
  EXPECT_EQ(m.process(addr(42000), encode({3, 0, 5, 1, {6}, 0, 5}), sink).action,
            Action::kCompleted);
  m.replace_jobs({});
  EXPECT_TRUE(m.job_ids().empty());
}

TEST(SwitchModelConfig, CounterNamesAreUniqueAndComplete) {
  SwitchCounters c;
  const auto named = c.named();
  std::set<std::string_view> names;
  for (const auto& [name, value] : named) {
    EXPECT_TRUE(names.insert(name).second) << "twice: " << name;
    EXPECT_EQ(value, 0u);
  }
  for (std::size_t r = 0; r < kDropReasonCount; ++r)
    EXPECT_TRUE(names.count("dropped_" + std::string(to_string(DropReason(r))))) << r;
  for (const char* n :
       {"packets_in", "aggregated", "epoch_takeovers", "completions", "results_multicast",
        "results_resent", "dropped_total", "malformed_truncated", "malformed_length_mismatch"})
    EXPECT_TRUE(names.count(n)) << n;
  // One per packet-level wire error (kTruncated .. kLengthMismatch).
  std::size_t malformed = 0;
  for (const auto& n : names) malformed += n.starts_with("malformed_");
  EXPECT_EQ(malformed, static_cast<std::size_t>(wire::Error::kLengthMismatch));
}

}  // namespace
}  // namespace netagg::sim

// SPDX-License-Identifier: Apache-2.0
// The protocol engine, driven single-threaded with a simulated clock through a simulated network
// (seeded loss, duplication, reordering) to a reference aggregator written here to be obviously
// correct; and once with real threads through the in-process network.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "netagg/engine.hpp"
#include "netagg/error.hpp"
#include "netagg/inproc.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr std::uint16_t kJob = 7;
constexpr std::uint16_t kSlotBase = 100;
constexpr std::uint16_t kElementsPerPacket = 256;

// What worker `rank` contributes at element i: non-zero and different for every worker, so a
// contribution added twice or not at all changes the sum.
std::uint32_t contribution(std::uint16_t rank, std::size_t i) {
  return (rank + 1u) * 1000003u + static_cast<std::uint32_t>(i) * 7u + 1u;
}

std::vector<std::int32_t> expected_sum(std::uint16_t workers, std::size_t n) {
  std::vector<std::int32_t> sum(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t s = 0;
    for (std::uint16_t r = 0; r < workers; ++r) s += contribution(r, i);
    sum[i] = static_cast<std::int32_t>(s);
  }
  return sum;
}

// An int32 all-reduce of n elements as a PacketSource; checks the engine keeps its promises.
class Int32Source : public PacketSource {
 public:
  Int32Source(std::uint16_t rank, std::size_t n, std::uint16_t window,
              std::uint16_t per_packet = kElementsPerPacket)
      : rank_(rank),
        n_(n),
        window_(window),
        per_packet_(per_packet),
        packets_((n + per_packet - 1) / per_packet),
        filled_(packets_),
        delivered_(packets_),
        result_(n) {}

  std::uint64_t packet_count() const override { return packets_; }

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    EXPECT_LT(p, packets_);
    EXPECT_FALSE(filled_[p]) << "packet " << p << " filled twice";
    if (p >= window_) {
      EXPECT_TRUE(delivered_[p - window_]) << "packet " << p << " sent early";
    }
    filled_[p] = true;
    h.dtype = wire::DataType::kInt32;
    h.count = static_cast<std::uint16_t>(elements(p));
    h.exponent = wire::kExponentNone;
    for (std::size_t k = 0; k < h.count; ++k) {
      wire::store_be32(payload.data() + 4 * k, contribution(rank_, p * per_packet_ + k));
    }
  }

  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    ASSERT_LT(p, packets_);
    EXPECT_TRUE(filled_[p]);
    EXPECT_FALSE(delivered_[p]) << "packet " << p << " delivered twice";
    delivered_[p] = true;
    ++deliveries_;
    ASSERT_EQ(h.count, elements(p));
    ASSERT_EQ(payload.size(), h.count * 4u);
    for (std::size_t k = 0; k < h.count; ++k) {
      result_[p * per_packet_ + k] = static_cast<std::int32_t>(wire::load_be32(&payload[4 * k]));
    }
  }

  std::size_t elements(std::uint64_t p) const {
    return std::min<std::size_t>(per_packet_, n_ - p * per_packet_);
  }
  const std::vector<std::int32_t>& result() const { return result_; }
  std::uint64_t deliveries() const { return deliveries_; }
  bool filled(std::uint64_t p) const { return filled_[p]; }
  bool delivered(std::uint64_t p) const { return delivered_[p]; }

 private:
  std::uint16_t rank_;
  std::size_t n_;
  std::uint16_t window_, per_packet_;
  std::uint64_t packets_;
  std::vector<bool> filled_, delivered_;
  std::uint64_t deliveries_ = 0;
  std::vector<std::int32_t> result_;
};

// Index of the first element where a and b differ, or -1.
std::ptrdiff_t first_mismatch(const std::vector<std::int32_t>& a,
                              const std::vector<std::int32_t>& b) {
  if (a.size() != b.size()) return 0;
  const auto it = std::mismatch(a.begin(), a.end(), b.begin());
  return it.first == a.end() ? -1 : it.first - a.begin();
}

// The aggregator as simply as it can be said: one round per packet sequence number; a round
// adds each worker's contribution once and, when all have contributed, answers every worker;
// a worker that asks again for a completed round gets the stored result.
class ReferenceAggregator {
 public:
  using Emit = std::function<void(std::uint16_t rank, std::span<const std::byte> packet)>;

  ReferenceAggregator(std::uint16_t workers, std::uint16_t window)
      : workers_(workers), window_(window) {}

  void handle(std::uint16_t source_rank, std::span<const std::byte> packet, const Emit& emit) {
    const wire::Decoded d = wire::decode(packet);
    ASSERT_TRUE(d) << wire::to_string(d.error);
    const wire::Header& h = d.header;
    ASSERT_EQ(h.type, wire::MsgType::kContribution);
    ASSERT_EQ(h.job_id, kJob);
    ASSERT_EQ(h.rank, source_rank);
    // The engine's slot pattern: packet seq on slot base + seq mod W, set (seq / W) mod 2.
    ASSERT_EQ(h.slot, kSlotBase + h.seq % window_);
    ASSERT_EQ(h.set, (h.seq / window_) % 2);

    Round& round = rounds_[h.seq];
    if (round.seen.empty()) {
      round.seen.assign(workers_, false);
      round.header = h;
      round.header.type = wire::MsgType::kResult;
      round.sum.assign(h.count, 0);
    }
    ASSERT_EQ(h.count, round.header.count) << "workers disagree on packet " << h.seq;
    if (round.seen[h.rank]) {
      if (round.contributors == workers_) {
        ++unicast_results_;
        emit(h.rank, result_packet(round, h.rank));
      } else {
        ++ignored_;
      }
      return;
    }
    round.seen[h.rank] = true;
    ++round.contributors;
    ++contributions_;
    round.header.exponent = std::max(round.header.exponent, h.exponent);
    for (std::size_t k = 0; k < h.count; ++k) round.sum[k] += wire::load_be32(&d.payload[4 * k]);
    if (round.contributors == workers_) {
      for (std::uint16_t r = 0; r < workers_; ++r) emit(r, result_packet(round, r));
    }
  }

  std::uint64_t contributions() const { return contributions_; }
  std::uint64_t unicast_results() const { return unicast_results_; }
  std::uint64_t ignored() const { return ignored_; }

 private:
  struct Round {
    std::vector<bool> seen;
    std::uint16_t contributors = 0;
    wire::Header header;
    std::vector<std::uint32_t> sum;
  };

  static Bytes result_packet(const Round& round, std::uint16_t rank) {
    wire::Header h = round.header;
    h.rank = rank;
    Bytes out(h.packet_size());
    EXPECT_TRUE(wire::encode_header(h, out));
    for (std::size_t k = 0; k < round.sum.size(); ++k) {
      wire::store_be32(&out[wire::kHeaderSize + 4 * k], round.sum[k]);
    }
    return out;
  }

  std::uint16_t workers_, window_;
  std::map<std::uint32_t, Round> rounds_;
  std::uint64_t contributions_ = 0, unicast_results_ = 0, ignored_ = 0;
};

struct Impairments {
  const char* name;
  double loss = 0, duplicate = 0, reorder = 0;
};

void PrintTo(const Impairments& imp, std::ostream* os) { *os << imp.name; }

// A network in simulated time: each packet arrives after a fixed latency, plus a random extra
// delay for the ones picked for reordering; loss and duplication are seeded coin flips.
class SimNetwork {
 public:
  static constexpr int kAggregator = -1;

  SimNetwork(Impairments imp, std::uint64_t seed) : imp_(imp), rng_(seed) {}

  void send(int dest, int source, std::span<const std::byte> packet, TimePoint now) {
    if (roll(imp_.loss)) return;
    const int copies = roll(imp_.duplicate) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      Duration delay = kLatency;
      if (roll(imp_.reorder)) delay += Duration(rng_() % kReorderDelay.count());
      events_.push({now + delay, order_++, dest, source, Bytes(packet.begin(), packet.end())});
    }
  }

  std::optional<TimePoint> next_arrival() const {
    if (events_.empty()) return std::nullopt;
    return events_.top().at;
  }

  struct Event {
    TimePoint at;
    std::uint64_t order;  // ties in time arrive in sending order
    int dest, source;
    Bytes bytes;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  // The next packet due at or before now, if any.
  std::optional<Event> pop_due(TimePoint now) {
    if (events_.empty() || events_.top().at > now) return std::nullopt;
    Event e = events_.top();
    events_.pop();
    return e;
  }

 private:
  static constexpr Duration kLatency = 10us;
  static constexpr Duration kReorderDelay = 200us;

  bool roll(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  Impairments imp_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t order_ = 0;
};

EngineParams sim_params(std::uint16_t rank, std::uint16_t window) {
  EngineParams p;
  p.job_id = kJob;
  p.rank = rank;
  p.slot_base = kSlotBase;
  p.window = window;
  p.retransmit_timeout = 1ms;
  p.max_retransmit_timeout = 16ms;
  p.job_timeout = 1s;
  return p;
}

// n workers, each an Engine, all driven from this thread in simulated time.
class Cluster {
 public:
  Cluster(std::uint16_t workers, std::uint16_t window, Impairments imp, std::uint64_t seed = 1,
          double pace_gbps = 0, const std::function<void(EngineParams&)>& tune = {})
      : window_(window), net_(imp, seed), aggregator_(workers, window) {
    for (std::uint16_t r = 0; r < workers; ++r) {
      EngineParams params = sim_params(r, window);
      params.pace_gbps = pace_gbps;
      if (tune) tune(params);
      engines_.push_back(std::make_unique<Engine>(params));
    }
    alive_.assign(workers, true);
    failed_at_.resize(workers);
    last_result_at_.resize(workers);
  }

  // One all-reduce of n elements on every living worker; returns when none is running.
  // A worker given in kill_rank stops (its packets vanish) after kill_after results.
  void run(std::size_t n, std::optional<std::uint16_t> kill_rank = std::nullopt,
           std::uint64_t kill_after = 0) {
    sources_.clear();
    for (std::uint16_t r = 0; r < engines_.size(); ++r) {
      sources_.push_back(std::make_unique<Int32Source>(r, n, window_));
      if (alive_[r]) engines_[r]->start(*sources_[r], now_);
    }
    flush();
    const TimePoint give_up = now_ + 1h;
    while (now_ < give_up) {
      std::optional<TimePoint> next = net_.next_arrival();
      bool running = false;
      for (std::uint16_t r = 0; r < engines_.size(); ++r) {
        if (!alive_[r]) continue;
        if (const auto d = engines_[r]->next_deadline()) {
          running = true;
          next = next ? std::min(*next, *d) : *d;
        }
      }
      if (!running) return;
      ASSERT_TRUE(next.has_value());
      now_ = std::max(now_, *next);
      while (auto e = net_.pop_due(now_)) {
        if (e->dest == SimNetwork::kAggregator) {
          aggregator_.handle(static_cast<std::uint16_t>(e->source), e->bytes,
                             [&](std::uint16_t rank, std::span<const std::byte> packet) {
                               net_.send(rank, SimNetwork::kAggregator, packet, now_);
                             });
        } else if (alive_[e->dest]) {
          const std::uint64_t results = engines_[e->dest]->stats().results;
          engines_[e->dest]->on_packet(e->bytes, now_);
          if (engines_[e->dest]->stats().results != results) last_result_at_[e->dest] = now_;
          if (kill_rank == e->dest && sources_[e->dest]->deliveries() >= kill_after) {
            alive_[e->dest] = false;
          }
        }
      }
      for (std::uint16_t r = 0; r < engines_.size(); ++r) {
        if (!alive_[r]) continue;
        const auto d = engines_[r]->next_deadline();
        if (d && *d <= now_) {
          engines_[r]->on_timer(now_);
          if (engines_[r]->state() == Engine::State::kFailed) failed_at_[r] = now_;
        }
      }
      flush();
    }
    FAIL() << "simulation did not finish within an hour of simulated time";
  }

  void kill(std::uint16_t rank) { alive_[rank] = false; }
  Engine& engine(std::uint16_t r) { return *engines_[r]; }
  const Int32Source& source(std::uint16_t r) const { return *sources_[r]; }
  const ReferenceAggregator& aggregator() const { return aggregator_; }
  TimePoint now() const { return now_; }
  std::optional<TimePoint> failed_at(std::uint16_t r) const { return failed_at_[r]; }
  std::optional<TimePoint> last_result_at(std::uint16_t r) const { return last_result_at_[r]; }
  std::uint16_t workers() const { return static_cast<std::uint16_t>(engines_.size()); }

  // Every worker finished with the exact sum.
  void expect_all_correct(std::size_t n) {
    const std::vector<std::int32_t> want = expected_sum(workers(), n);
    for (std::uint16_t r = 0; r < workers(); ++r) {
      ASSERT_EQ(engines_[r]->state(), Engine::State::kDone)
          << "rank " << r << ": " << engines_[r]->failure();
      EXPECT_EQ(sources_[r]->deliveries(), sources_[r]->packet_count());
      const std::ptrdiff_t bad = first_mismatch(sources_[r]->result(), want);
      EXPECT_EQ(bad, -1) << "rank " << r << " element " << bad << ": got "
                         << sources_[r]->result()[bad] << ", want " << want[bad];
    }
  }

 private:
  void flush() {
    for (std::uint16_t r = 0; r < engines_.size(); ++r) {
      for (std::span<const std::byte> packet : engines_[r]->transmits()) {
        if (alive_[r]) net_.send(SimNetwork::kAggregator, r, packet, now_);
      }
      engines_[r]->clear_transmits();
    }
  }

  std::uint16_t window_;
  SimNetwork net_;
  ReferenceAggregator aggregator_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<std::unique_ptr<Int32Source>> sources_;
  std::vector<bool> alive_;
  std::vector<std::optional<TimePoint>> failed_at_, last_result_at_;
  TimePoint now_ = TimePoint{} + 1s;
};

// ---- whole all-reduces over an impaired network ---------------------------------------------

const Impairments kClean{"clean"};
const Impairments kLoss1{"loss1", 0.01};
const Impairments kLoss10{"loss10", 0.10};
const Impairments kDuplicate{"duplicate", 0, 0.10};
const Impairments kReorder{"reorder", 0, 0, 0.30};
const Impairments kEverything{"everything", 0.05, 0.05, 0.30};

class AllReduceTest : public ::testing::TestWithParam<std::tuple<Impairments, std::size_t>> {};

TEST_P(AllReduceTest, EveryElementAggregatedExactlyOnce) {
  const auto& [imp, n] = GetParam();
  constexpr std::uint16_t kWorkers = 4, kWindow = 16;
  Cluster cluster(kWorkers, kWindow, imp, /*seed=*/n + 1);
  cluster.run(n);
  cluster.expect_all_correct(n);

  const std::uint64_t packets = (n + kElementsPerPacket - 1) / kElementsPerPacket;
  EXPECT_EQ(cluster.aggregator().contributions(), packets * kWorkers);
  std::uint64_t retransmissions = 0, duplicates = 0;
  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    const EngineStats& s = cluster.engine(r).stats();
    EXPECT_EQ(s.packets_sent, packets);
    EXPECT_EQ(s.results, packets);
    EXPECT_EQ(s.operations, 1u);
    EXPECT_EQ(s.rejected, 0u);
    EXPECT_EQ(cluster.engine(r).next_global_packet(), packets);
    retransmissions += s.retransmissions;
    duplicates += s.duplicates;
  }
  // Without loss nothing may time out: latency and reordering delays are far below the timeout.
  if (imp.loss == 0) {
    EXPECT_EQ(retransmissions, 0u);
  }
  if (imp.loss == 0 && imp.duplicate == 0) {
    EXPECT_EQ(duplicates, 0u);
  }
  // Where the network misbehaved enough, the recovery paths must have run.
  if (packets >= 100 && imp.loss > 0) {
    EXPECT_GT(retransmissions, 0u);
  }
  if (packets >= 100 && imp.duplicate > 0) {
    EXPECT_GT(duplicates, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Engine, AllReduceTest,
                         ::testing::Combine(::testing::Values(kClean, kLoss1, kLoss10, kDuplicate,
                                                              kReorder, kEverything),
                                            ::testing::Values(1, 7, 255, 256, 257, 1000000)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(EngineTest, ConsecutiveOperationsContinueTheNumbering) {
  constexpr std::uint16_t kWorkers = 3, kWindow = 8;
  Cluster cluster(kWorkers, kWindow, kEverything, 99);
  std::uint64_t global = 0, ops = 0;
  for (std::size_t n : {257u, 1u, 0u, 5000u, 7u, 8u * 256u + 3u, 0u, 256u}) {
    cluster.run(n);
    cluster.expect_all_correct(n);
    global += (n + kElementsPerPacket - 1) / kElementsPerPacket;
    ++ops;
    for (std::uint16_t r = 0; r < kWorkers; ++r) {
      EXPECT_EQ(cluster.engine(r).next_global_packet(), global) << "after n=" << n;
      EXPECT_EQ(cluster.engine(r).stats().operations, ops);
    }
  }
  EXPECT_EQ(cluster.aggregator().contributions(), global * kWorkers);
}

TEST(EngineTest, LargeWindowAndWindowOfOne) {
  for (std::uint16_t window : {1, 3, 2048}) {
    Cluster cluster(2, window, kLoss10, window);
    const std::size_t n = 300 * 256 + 5;
    cluster.run(n);
    cluster.expect_all_correct(n);
  }
}

TEST(EngineTest, ZeroPacketOperationCompletesAtOnce) {
  Engine engine(sim_params(0, 4));
  Int32Source empty(0, 0, 4);
  const TimePoint t0 = TimePoint{} + 5s;
  engine.start(empty, t0);
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  EXPECT_TRUE(engine.transmits().empty());
  EXPECT_FALSE(engine.next_deadline().has_value());
  EXPECT_EQ(engine.stats().operations, 1u);
  EXPECT_EQ(engine.next_global_packet(), 0u);
}

// ---- failures ---------------------------------------------------------------------------------

// The expected "slot S set T seq Q" list of a worker's unanswered packets, in packet order.
std::vector<std::string> unanswered(const Int32Source& src, std::uint64_t first_global,
                                    std::uint16_t window) {
  std::vector<std::string> out;
  for (std::uint64_t p = 0; p < src.packet_count(); ++p) {
    if (!src.filled(p) || src.delivered(p)) continue;
    const std::uint64_t g = first_global + p;
    out.push_back("slot " + std::to_string(kSlotBase + g % window) + " set " +
                  std::to_string((g / window) % 2) + " seq " + std::to_string(g));
  }
  return out;
}

TEST(EngineTest, DeadWorkerMakesTheOthersFailNamingTheSlots) {
  constexpr std::uint16_t kWindow = 4;
  Cluster cluster(3, kWindow, kLoss1);
  cluster.kill(2);
  const TimePoint start = cluster.now();
  cluster.run(10 * 256);
  for (std::uint16_t r = 0; r < 2; ++r) {
    Engine& e = cluster.engine(r);
    ASSERT_EQ(e.state(), Engine::State::kFailed);
    // Nothing came back at all, so the failure is exactly one job timeout after the start.
    EXPECT_EQ(cluster.failed_at(r), start + e.params().job_timeout);
    const std::string& why = e.failure();
    EXPECT_NE(why.find("timed out"), std::string::npos) << why;
    EXPECT_NE(why.find("rank " + std::to_string(r)), std::string::npos) << why;
    EXPECT_NE(why.find("4 unanswered"), std::string::npos) << why;
    EXPECT_NE(why.find("slot 100 set 0 seq 0, slot 101 set 0 seq 1, slot 102 set 0 seq 2, "
                       "slot 103 set 0 seq 3"),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find("more"), std::string::npos) << why;
    EXPECT_FALSE(e.next_deadline().has_value());
    EXPECT_EQ(e.stats().results, 0u);
  }
}

TEST(EngineTest, WorkerDyingMidwayListsAtMostSixteenSlots) {
  constexpr std::uint16_t kWindow = 20;
  Cluster cluster(3, kWindow, kClean);
  cluster.run(100 * 256, /*kill_rank=*/2, /*kill_after=*/30);
  for (std::uint16_t r = 0; r < 2; ++r) {
    Engine& e = cluster.engine(r);
    ASSERT_EQ(e.state(), Engine::State::kFailed) << "rank " << r;
    const std::vector<std::string> missing = unanswered(cluster.source(r), 0, kWindow);
    ASSERT_EQ(missing.size(), kWindow);  // every slot waits for the dead worker
    std::string listed;
    for (std::size_t i = 0; i < 16; ++i) listed += (i ? ", " : "") + missing[i];
    const std::string& why = e.failure();
    EXPECT_NE(why.find(std::to_string(e.delivered()) +
                       " of 100 packets answered, 20 unanswered: " + listed + " and 4 more"),
              std::string::npos)
        << why << "\nwanted: " << listed;
    EXPECT_GE(e.delivered(), 30u);
    // Failure comes exactly one job timeout after the last result.
    ASSERT_TRUE(cluster.last_result_at(r).has_value());
    EXPECT_EQ(cluster.failed_at(r), *cluster.last_result_at(r) + e.params().job_timeout);
  }
}

TEST(EngineTest, StartAfterFailureContinuesNumbering) {
  constexpr std::uint16_t kWindow = 4;
  Cluster cluster(2, kWindow, kClean);
  cluster.run(6 * 256, /*kill_rank=*/1, /*kill_after=*/2);
  ASSERT_EQ(cluster.engine(0).state(), Engine::State::kFailed);
  EXPECT_EQ(cluster.engine(0).next_global_packet(), 6u);
  Int32Source next(0, 10, kWindow);
  cluster.engine(0).start(next, cluster.now());
  EXPECT_EQ(cluster.engine(0).state(), Engine::State::kRunning);
  EXPECT_TRUE(cluster.engine(0).failure().empty());
  ASSERT_EQ(cluster.engine(0).transmits().size(), 1u);
  const wire::Decoded d = wire::decode(cluster.engine(0).transmits()[0]);
  ASSERT_TRUE(d);
  EXPECT_EQ(d.header.seq, 6u);
  EXPECT_EQ(d.header.slot, kSlotBase + 6 % kWindow);
  EXPECT_EQ(d.header.set, (6 / kWindow) % 2);
}

// ---- one engine by hand -------------------------------------------------------------------------

Bytes result_packet(std::uint64_t global, std::uint16_t window, std::uint16_t count,
                    std::int32_t value, std::uint16_t rank = 0) {
  wire::Header h;
  h.type = wire::MsgType::kResult;
  h.job_id = kJob;
  h.rank = rank;
  h.slot = static_cast<std::uint16_t>(kSlotBase + global % window);
  h.set = static_cast<std::uint8_t>((global / window) % 2);
  h.seq = static_cast<std::uint32_t>(global);
  h.count = count;
  Bytes out(h.packet_size());
  EXPECT_TRUE(wire::encode_header(h, out));
  for (std::size_t k = 0; k < count; ++k) {
    wire::store_be32(&out[wire::kHeaderSize + 4 * k], static_cast<std::uint32_t>(value));
  }
  return out;
}

Bytes with_header(Bytes packet, void (*change)(wire::Header&)) {
  wire::Decoded d = wire::decode(packet);
  EXPECT_TRUE(d);
  change(d.header);
  EXPECT_TRUE(wire::encode_header(d.header, packet));
  return packet;
}

std::vector<std::uint32_t> transmitted_seqs(const Engine& e) {
  std::vector<std::uint32_t> seqs;
  for (std::span<const std::byte> t : e.transmits()) {
    const wire::Decoded d = wire::decode(t);
    EXPECT_TRUE(d) << wire::to_string(d.error);
    seqs.push_back(d.header.seq);
  }
  return seqs;
}

TEST(EngineTest, SendsTheSlotPattern) {
  constexpr std::uint16_t kWindow = 3;
  Engine engine(sim_params(2, kWindow));
  Int32Source src(2, 2 * 256 + 1, kWindow);
  engine.start(src, TimePoint{});
  ASSERT_EQ(engine.transmits().size(), 3u);
  for (std::uint32_t p = 0; p < 3; ++p) {
    const wire::Decoded d = wire::decode(engine.transmits()[p]);
    ASSERT_TRUE(d);
    EXPECT_EQ(d.header.type, wire::MsgType::kContribution);
    EXPECT_EQ(d.header.job_id, kJob);
    EXPECT_EQ(d.header.rank, 2);
    EXPECT_EQ(d.header.slot, kSlotBase + p);
    EXPECT_EQ(d.header.set, 0);
    EXPECT_EQ(d.header.seq, p);
    EXPECT_EQ(d.header.count, p < 2 ? 256 : 1);
    EXPECT_EQ(wire::load_be32(d.payload.data()), contribution(2, p * 256));
  }
  EXPECT_EQ(engine.stats().packets_sent, 3u);
}

TEST(EngineTest, BackoffDoublesUpToTheCap) {
  EngineParams params = sim_params(0, 1);
  params.retransmit_timeout = 20ms;
  params.max_retransmit_timeout = 500ms;
  params.job_timeout = 10s;
  Engine engine(params);
  Int32Source src(0, 5, 1);
  const TimePoint t0 = TimePoint{} + 1s;
  engine.start(src, t0);
  ASSERT_EQ(engine.transmits().size(), 1u);
  const Bytes original(engine.transmits()[0].begin(), engine.transmits()[0].end());
  engine.clear_transmits();

  TimePoint last = t0;
  std::uint64_t n = 0;
  for (Duration want : {20ms, 40ms, 80ms, 160ms, 320ms, 500ms, 500ms, 500ms}) {
    const TimePoint d = *engine.next_deadline();
    EXPECT_EQ(d - last, want) << "retransmission " << n;
    engine.on_timer(d - 1ns);  // early: nothing due
    EXPECT_TRUE(engine.transmits().empty());
    engine.on_timer(d);
    ASSERT_EQ(engine.transmits().size(), 1u);
    EXPECT_TRUE(std::ranges::equal(engine.transmits()[0], original)) << "resends the same bytes";
    engine.clear_transmits();
    EXPECT_EQ(engine.stats().retransmissions, ++n);
    last = d;
  }
  EXPECT_EQ(engine.state(), Engine::State::kRunning);
}

TEST(EngineTest, JobTimeoutDeadlineBeatsALongBackoff) {
  EngineParams params = sim_params(0, 1);
  params.retransmit_timeout = 20ms;
  params.max_retransmit_timeout = 500ms;
  params.job_timeout = 1s;
  Engine engine(params);
  Int32Source src(0, 5, 1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  // 20 + 40 + 80 + 160 + 320 = 620 ms; the next retransmission (1120 ms) is after the timeout.
  for (int i = 0; i < 5; ++i) engine.on_timer(*engine.next_deadline());
  EXPECT_EQ(engine.stats().retransmissions, 5u);
  EXPECT_EQ(*engine.next_deadline(), t0 + 1s);
  engine.on_timer(t0 + 1s);
  EXPECT_EQ(engine.state(), Engine::State::kFailed);
  EXPECT_NE(engine.failure().find("no new result for 1000 ms"), std::string::npos)
      << engine.failure();
  EXPECT_NE(engine.failure().find("slot 100 set 0 seq 0"), std::string::npos);
}

TEST(EngineTest, ProgressPostponesTheJobTimeout) {
  EngineParams params = sim_params(0, 2);
  params.job_timeout = 100ms;
  params.retransmit_timeout = 1s;
  params.max_retransmit_timeout = 1s;
  Engine engine(params);
  Int32Source src(0, 3 * 256, 2);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  EXPECT_EQ(*engine.next_deadline(), t0 + 100ms);
  engine.on_packet(result_packet(0, 2, 256, 1), t0 + 90ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 190ms);
  engine.on_timer(t0 + 189ms);
  EXPECT_EQ(engine.state(), Engine::State::kRunning);
  engine.on_timer(t0 + 190ms);
  EXPECT_EQ(engine.state(), Engine::State::kFailed);
  EXPECT_NE(engine.failure().find("1 of 3 packets answered, 2 unanswered: "
                                  "slot 101 set 0 seq 1, slot 100 set 1 seq 2"),
            std::string::npos)
      << engine.failure();
}

TEST(EngineTest, OnlyExpiredSlotsAreRetransmitted) {
  constexpr std::uint16_t kWindow = 4;
  EngineParams params = sim_params(0, kWindow);
  params.retransmit_timeout = 20ms;
  params.max_retransmit_timeout = 1s;
  Engine engine(params);
  Int32Source src(0, 8 * 256, kWindow);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.clear_transmits();
  engine.on_packet(result_packet(0, kWindow, 256, 1), t0 + 5ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{4});
  engine.clear_transmits();
  EXPECT_EQ(*engine.next_deadline(), t0 + 20ms);
  engine.on_timer(t0 + 20ms);
  EXPECT_EQ(transmitted_seqs(engine), (std::vector<std::uint32_t>{1, 2, 3}));
  engine.clear_transmits();
  EXPECT_EQ(*engine.next_deadline(), t0 + 25ms);
  engine.on_timer(t0 + 25ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{4});
  engine.clear_transmits();
  // 1, 2, 3 backed off to 40 ms after their first retransmission at 20 ms.
  EXPECT_EQ(*engine.next_deadline(), t0 + 60ms);
  engine.on_packet(result_packet(2, kWindow, 256, 1), t0 + 30ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{6});
  engine.clear_transmits();
  EXPECT_EQ(*engine.next_deadline(), t0 + 50ms);
  engine.on_timer(t0 + 50ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{6});
  engine.clear_transmits();
  // Packet 2 was answered: only 1 and 3 are left of the first batch.
  engine.on_timer(t0 + 60ms);
  EXPECT_EQ(transmitted_seqs(engine), (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(engine.stats().retransmissions, 7u);
}

// ---- adaptive retransmission (netagg/rto.hpp) -------------------------------------------------

EngineParams adaptive_params(std::uint16_t window) {
  EngineParams params = sim_params(0, window);
  params.adaptive_retransmit = true;
  params.retransmit_timeout = 20ms;
  params.min_retransmit_timeout = 1ms;
  params.max_retransmit_timeout = 500ms;
  params.job_timeout = 10s;
  return params;
}

TEST(EngineTest, AdaptiveTimeoutFollowsTheRoundTrips) {
  Engine engine(adaptive_params(1));
  Int32Source src(0, 4 * 256, 1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  EXPECT_EQ(engine.stats().rto, 20ms) << "the initial timeout before any round trip";
  EXPECT_EQ(*engine.next_deadline(), t0 + 20ms);
  engine.clear_transmits();
  // A 2 ms round trip: SRTT 2, RTTVAR 1, RTO 6 ms; the next packet waits 6 ms.
  engine.on_packet(result_packet(0, 1, 256, 1), t0 + 2ms);
  EXPECT_EQ(engine.stats().rtt_samples, 1u);
  EXPECT_EQ(engine.stats().srtt, 2ms);
  EXPECT_EQ(engine.stats().rto, 6ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 8ms);
  // Its retransmissions back off from there: the RTO doubles per expiry, 12 then 24 ms.
  engine.on_timer(t0 + 8ms);
  EXPECT_EQ(engine.stats().rto, 12ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 20ms);
  engine.on_timer(t0 + 20ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 44ms);
  EXPECT_EQ(engine.stats().retransmissions, 2u);
}

TEST(EngineTest, FixedTimeoutIgnoresTheRoundTrips) {
  EngineParams params = adaptive_params(1);
  params.adaptive_retransmit = false;
  Engine engine(params);
  Int32Source src(0, 2 * 256, 1);
  engine.start(src, TimePoint{});
  engine.on_packet(result_packet(0, 1, 256, 1), TimePoint{} + 2ms);
  EXPECT_EQ(engine.stats().rtt_samples, 1u) << "counted, not used";
  EXPECT_EQ(engine.stats().rto, 20ms);
  EXPECT_EQ(*engine.next_deadline(), TimePoint{} + 22ms);
}

TEST(EngineTest, KarnsRuleRetransmittedPacketsGiveNoSample) {
  Engine engine(adaptive_params(1));
  Int32Source src(0, 2 * 256, 1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_timer(t0 + 20ms);
  EXPECT_EQ(engine.stats().retransmissions, 1u);
  // The result may answer the first copy or the second: no round trip can be told.
  engine.on_packet(result_packet(0, 1, 256, 1), t0 + 21ms);
  EXPECT_EQ(engine.stats().results, 1u);
  EXPECT_EQ(engine.stats().rtt_samples, 0u);
  EXPECT_EQ(engine.stats().rto, 40ms) << "backed off at the expiry, kept until a sample";
  // The next packet is sent once: its round trip counts.
  engine.on_packet(result_packet(1, 1, 256, 1), t0 + 25ms);
  EXPECT_EQ(engine.stats().rtt_samples, 1u);
  EXPECT_EQ(engine.stats().srtt, 4ms);
}

TEST(EngineTest, ASecondResultForARetransmittedPacketShowsItSpurious) {
  Engine engine(adaptive_params(1));
  Int32Source src(0, 3 * 256, 1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_timer(t0 + 20ms);  // a retransmission of packet 0
  engine.on_packet(result_packet(0, 1, 256, 1), t0 + 21ms);
  EXPECT_EQ(engine.stats().spurious_retransmissions, 0u);
  // The aggregator answered both copies: the retransmission was not needed.
  engine.on_packet(result_packet(0, 1, 256, 1), t0 + 22ms);
  EXPECT_EQ(engine.stats().duplicates, 1u);
  EXPECT_EQ(engine.stats().spurious_retransmissions, 1u);
  // So the first result answered the first copy: a round trip of 21 ms after all.
  EXPECT_EQ(engine.stats().rtt_samples, 1u);
  EXPECT_EQ(engine.stats().srtt, 21ms);
  // One retransmission explains one extra result, no more.
  engine.on_packet(result_packet(0, 1, 256, 1), t0 + 23ms);
  EXPECT_EQ(engine.stats().duplicates, 2u);
  EXPECT_EQ(engine.stats().spurious_retransmissions, 1u);
  // A duplicate of a packet sent once is not a spurious retransmission.
  engine.on_packet(result_packet(1, 1, 256, 1), t0 + 24ms);
  engine.on_packet(result_packet(1, 1, 256, 1), t0 + 25ms);
  EXPECT_EQ(engine.stats().duplicates, 3u);
  EXPECT_EQ(engine.stats().spurious_retransmissions, 1u);
}

TEST(EngineTest, AnOvertakenPacketIsTakenAsLostAfterItsRoundTrip) {
  Engine engine(adaptive_params(2));
  Int32Source src(0, 4 * 256, 2);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);                                    // packets 0 and 1
  engine.on_packet(result_packet(0, 2, 256, 1), t0 + 2ms);  // RTO 6 ms; sends packet 2
  engine.clear_transmits();
  EXPECT_EQ(*engine.next_deadline(), t0 + 8ms) << "packet 1: 6 ms after the last result";
  // Packet 2, sent after packet 1, is answered first: packet 1 was overtaken. It is due once
  // its round trip (2 ms, the latest measured) and the reordering window (1 ms) have passed,
  // long before the RTO.
  engine.on_packet(result_packet(2, 2, 256, 1), t0 + 4ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 3ms);
  engine.on_timer(t0 + 4ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{1});
  EXPECT_EQ(engine.stats().overtaken_retransmissions, 1u);
  // Packet 2's round trip made the RTO 5 ms (SRTT 2, RTTVAR 0.75); a loss seen is no timeout,
  // so no backoff.
  EXPECT_EQ(engine.stats().rto, 5ms);
  engine.clear_transmits();
  // The copy is not overtaken (nothing sent after it was answered): it waits the RTO.
  EXPECT_EQ(*engine.next_deadline(), t0 + 9ms);
}

TEST(EngineTest, ResultsThatKeepComingHoldOffTheTimeout) {
  // Three packets queued together: their results come 2, 7 and 12 ms later, as from an
  // aggregator that is slower than the workers. None is retransmitted: each later one is not
  // late while results keep arriving.
  Engine engine(adaptive_params(3));
  Int32Source src(0, 3 * 256, 3);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_packet(result_packet(0, 3, 256, 1), t0 + 2ms);
  EXPECT_EQ(engine.stats().rto, 6ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 8ms) << "not t0 + 6 ms: a result came at 2 ms";
  engine.on_timer(t0 + 7ms);
  engine.on_packet(result_packet(1, 3, 256, 1), t0 + 7ms);
  engine.on_timer(t0 + 12ms);
  engine.on_packet(result_packet(2, 3, 256, 1), t0 + 12ms);
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  EXPECT_EQ(engine.stats().retransmissions, 0u);
}

TEST(EngineTest, ALaterResultOfTheSameBurstShowsALoss) {
  // Packets sent in one call leave in order: a result for packet 3 before one for packet 0
  // means packet 0 (or its result) was lost, though all four were sent at the same instant.
  Engine engine(adaptive_params(4));
  Int32Source src(0, 4 * 256, 4);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.clear_transmits();
  for (std::uint64_t p = 1; p < 4; ++p) engine.on_packet(result_packet(p, 4, 256, 1), t0 + 2ms);
  // The round trip (2 ms) and the reordering window (1 ms) after its sending; not the RTO.
  EXPECT_EQ(*engine.next_deadline(), t0 + 3ms);
  engine.on_timer(t0 + 3ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{0});
  EXPECT_EQ(engine.stats().overtaken_retransmissions, 1u);
  EXPECT_EQ(engine.stats().rto, 4250us) << "a loss seen is no timeout: no backoff";
}

TEST(EngineTest, ARetransmittedPacketOvertakesOnlyWhatWasSentBeforeItsFirstCopy) {
  Engine engine(adaptive_params(3));
  Int32Source src(0, 3 * 256, 3);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);  // packets 0, 1, 2
  engine.clear_transmits();
  engine.on_packet(result_packet(1, 3, 256, 1), t0 + 2ms);  // RTO 6 ms; packet 0 overtaken
  engine.on_timer(t0 + 3ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{0});
  engine.clear_transmits();
  // This result may answer the first copy of packet 0, sent with packet 2: packet 2 is not
  // overtaken by it, only queued behind it, and waits the RTO from this result.
  engine.on_packet(result_packet(0, 3, 256, 1), t0 + 4ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 10ms);
  engine.on_timer(t0 + 4ms);
  EXPECT_TRUE(engine.transmits().empty());
}

TEST(EngineTest, ATimeoutProbesWithTheNewestPacketDueThenTheOldest) {
  // Packets 1 and 2 unanswered, nothing sent after them answered: both are due at once. Only
  // packet 2 goes, the RTO doubles and counts from then.
  Engine engine(adaptive_params(3));
  Int32Source src(0, 3 * 256, 3);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.clear_transmits();
  engine.on_packet(result_packet(0, 3, 256, 1), t0 + 2ms);  // RTO 6 ms
  EXPECT_EQ(*engine.next_deadline(), t0 + 8ms);
  engine.on_timer(t0 + 8ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{2});
  engine.clear_transmits();
  EXPECT_EQ(engine.stats().rto, 12ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 20ms);
  // No result: from now on the oldest due goes, each in turn.
  engine.on_timer(t0 + 20ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{1});
  engine.clear_transmits();
  EXPECT_EQ(*engine.next_deadline(), t0 + 44ms);
  engine.on_timer(t0 + 44ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{2});
  EXPECT_EQ(engine.stats().retransmissions, 3u);
}

TEST(EngineTest, TheProbesResultOvertakesThePacketsDueWithIt) {
  Engine engine(adaptive_params(3));
  Int32Source src(0, 3 * 256, 3);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_packet(result_packet(0, 3, 256, 1), t0 + 2ms);  // RTO 6 ms
  engine.on_timer(t0 + 8ms);                                // packet 2 again
  engine.clear_transmits();
  // Packet 1 goes at once, not after another (doubled) timeout.
  engine.on_packet(result_packet(2, 3, 256, 1), t0 + 9ms);
  EXPECT_EQ(*engine.next_deadline(), t0 + 3ms);
  engine.on_timer(t0 + 9ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{1});
  EXPECT_EQ(engine.stats().overtaken_retransmissions, 1u);
}

TEST(EngineTest, AProbeBehindADeepQueueIsItsOnlyRetransmission) {
  // The same timeout, but the packets were only queued: their results come in order, the
  // probe's original last, and nothing else is sent again.
  Engine engine(adaptive_params(3));
  Int32Source src(0, 3 * 256, 3);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_packet(result_packet(0, 3, 256, 1), t0 + 2ms);
  engine.on_timer(t0 + 8ms);
  engine.clear_transmits();
  engine.on_packet(result_packet(1, 3, 256, 1), t0 + 9ms);
  engine.on_timer(t0 + 9ms);
  EXPECT_TRUE(engine.transmits().empty()) << "packet 1 was not overtaken by the probe";
  engine.on_packet(result_packet(2, 3, 256, 1), t0 + 10ms);
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  EXPECT_EQ(engine.stats().retransmissions, 1u);
}

// An operation's first rounds wait for every worker to start it, later ones only for the
// network: the first result of an operation may come as late as the spread between operations
// says, while inside an operation a gap longer than the last packets' round trips is a loss.
// Three operations of 32 packets answered 0.2, 3 and 0.2 ms after they start: the RTO of the
// packets just answered is back at the floor, the timeout for a first result keeps the spread
// (per round trip, RFC 7323: SRTT 0.49 ms, RTTVAR 0.57 ms).
TEST(EngineTest, AnOperationsFirstResultWaitsForTheSpreadBetweenOperations) {
  constexpr std::uint16_t kWindow = 32;
  Engine engine(adaptive_params(kWindow));
  std::vector<std::unique_ptr<Int32Source>> sources;
  std::uint64_t global = 0;
  TimePoint t = TimePoint{};
  const auto start = [&] {
    sources.push_back(std::make_unique<Int32Source>(0, kWindow * 256, kWindow));
    engine.start(*sources.back(), t);
    engine.clear_transmits();
  };
  for (const Duration rtt : {200us, 3000us, 200us}) {
    start();
    for (std::uint16_t p = 0; p < kWindow; ++p)
      engine.on_packet(result_packet(global++, kWindow, 256, 1), t + rtt);
    ASSERT_EQ(engine.state(), Engine::State::kDone);
    t += rtt + 1ms;
  }
  EXPECT_EQ(engine.stats().rto, 1ms);
  EXPECT_EQ(engine.stats().start_rto, 2772359ns);

  start();
  EXPECT_EQ(*engine.next_deadline(), t + 2772359ns);
  engine.on_timer(t + 1ms);
  EXPECT_TRUE(engine.transmits().empty()) << "no result yet: the others may not have started";
  // Results for all but the last packet: it waits the RTO of the packets just answered.
  const TimePoint last_result = t + 200us;
  for (std::uint16_t p = 0; p + 1 < kWindow; ++p)
    engine.on_packet(result_packet(global++, kWindow, 256, 1), last_result);
  EXPECT_EQ(engine.stats().rto, 1ms);
  EXPECT_EQ(*engine.next_deadline(), last_result + 1ms);
  engine.on_timer(last_result + 1ms);
  EXPECT_EQ(transmitted_seqs(engine),
            std::vector<std::uint32_t>{static_cast<std::uint32_t>(global)});
  EXPECT_EQ(engine.stats().retransmissions, 1u);
}

TEST(EngineTest, AResultThatCameOutOfOrderGivesNoRoundTrip) {
  // Packet 0's result comes after packet 1's: its round waited for a loss (this worker's or
  // another's), and its delay measures that recovery, not the way to the aggregator and back.
  Engine engine(adaptive_params(2));
  Int32Source src(0, 2 * 256, 2);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_packet(result_packet(1, 2, 256, 1), t0 + 1ms);
  EXPECT_EQ(engine.stats().rtt_samples, 1u);
  engine.on_packet(result_packet(0, 2, 256, 1), t0 + 1500us);
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  EXPECT_EQ(engine.stats().rtt_samples, 1u);
  EXPECT_EQ(engine.stats().srtt, 1ms);
  EXPECT_EQ(engine.stats().rto, 3ms);
}

// An all-reduce takes as long as its slowest worker. At 1 % loss each way nearly every
// operation of 4 workers x 64 packets loses some contribution or result, and the slowest
// operations are those whose repairs were slowest. A repair must cost about a round trip and the
// reordering window, or one timeout of the size of the round trips: not a timeout inflated by the
// repairs before it, nor one doubled for each packet lost at the end of a burst. (Simulated
// time: exact for the seed.)
TEST(EngineTest, UnderLossTheSlowestAllReducesStayNearTheMedian) {
  constexpr std::uint16_t kWorkers = 4, kWindow = 128;
  constexpr std::size_t kPackets = 64, kOperations = 300;
  Cluster cluster(kWorkers, kWindow, kLoss1, /*seed=*/3, /*pace_gbps=*/0, [](EngineParams& p) {
    p.adaptive_retransmit = true;
    p.retransmit_timeout = 20ms;
    p.min_retransmit_timeout = 1ms;
    p.max_retransmit_timeout = 500ms;
    p.job_timeout = 10s;
  });
  std::vector<Duration> times;
  for (std::size_t op = 0; op < kOperations; ++op) {
    const TimePoint start = cluster.now();
    cluster.run(kPackets * kElementsPerPacket);
    cluster.expect_all_correct(kPackets * kElementsPerPacket);
    times.push_back(cluster.now() - start);
  }
  std::sort(times.begin(), times.end());
  const Duration median = times[times.size() / 2];
  const Duration p99 = times[times.size() * 99 / 100];
  std::uint64_t timeouts = 0, overtaken = 0;
  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    const EngineStats& s = cluster.engine(r).stats();
    timeouts += s.retransmissions - s.overtaken_retransmissions;
    overtaken += s.overtaken_retransmissions;
  }
  const auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  RecordProperty("median_ms", std::to_string(ms(median)));
  RecordProperty("p99_ms", std::to_string(ms(p99)));
  RecordProperty("max_ms", std::to_string(ms(times.back())));
  EXPECT_GT(overtaken, 10 * timeouts) << "most losses are seen, not waited for";
  EXPECT_LE(p99, 3 * median) << "median " << ms(median) << " ms, p99 " << ms(p99) << " ms, max "
                             << ms(times.back()) << " ms; " << timeouts << " timeouts, "
                             << overtaken << " losses seen by overtaking";
}

TEST(EngineTest, AdaptiveAllReducesUnderHeavyLossAllComplete) {
  // Every packet a timeout leaves behind must go again in its turn, whatever the others do.
  for (const Impairments& imp : {kLoss10, kEverything}) {
    Cluster cluster(4, 128, imp, /*seed=*/5, /*pace_gbps=*/0, [](EngineParams& p) {
      p.adaptive_retransmit = true;
      p.retransmit_timeout = 20ms;
      p.min_retransmit_timeout = 1ms;
      p.max_retransmit_timeout = 500ms;
      p.job_timeout = 10s;
    });
    for (std::size_t n : {64u * 256u, 1u, 64u * 256u, 1u, 100u * 256u, 7u}) {
      for (int rep = 0; rep < 20; ++rep) {
        cluster.run(n);
        cluster.expect_all_correct(n);
        if (HasFailure()) return;
      }
    }
  }
}

TEST(EngineTest, DuplicateStaleAndForeignResultsAreCountedNotDelivered) {
  constexpr std::uint16_t kWindow = 2;
  Engine engine(sim_params(0, kWindow));
  Int32Source src(0, 4, kWindow, /*per_packet=*/1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.clear_transmits();
  const Bytes r0 = result_packet(0, kWindow, 1, 42);

  engine.on_packet(r0, t0);
  EXPECT_EQ(src.deliveries(), 1u);
  EXPECT_EQ(src.result()[0], 42);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{2});
  engine.clear_transmits();

  engine.on_packet(r0, t0);  // again: packet 0 is answered, slot 100 now carries packet 2
  EXPECT_EQ(engine.stats().duplicates, 1u);
  engine.on_packet(result_packet(4, kWindow, 1, 5), t0);  // not sent yet
  EXPECT_EQ(engine.stats().duplicates, 2u);
  engine.on_packet(with_header(result_packet(2, kWindow, 1, 5), [](wire::Header& h) { h.set = 0; }),
                   t0);  // packet 2's seq with packet 0's set
  EXPECT_EQ(engine.stats().duplicates, 3u);

  const Bytes r1 = result_packet(1, kWindow, 1, 9);
  engine.on_packet(with_header(r1, [](wire::Header& h) { h.job_id = kJob + 1; }), t0);
  engine.on_packet(with_header(r1, [](wire::Header& h) { h.rank = 1; }), t0);
  engine.on_packet(with_header(r1, [](wire::Header& h) { h.slot = kSlotBase - 1; }), t0);
  engine.on_packet(with_header(r1, [](wire::Header& h) { h.slot = kSlotBase + kWindow; }), t0);
  engine.on_packet(with_header(r1, [](wire::Header& h) { h.type = wire::MsgType::kContribution; }),
                   t0);
  engine.on_packet(std::span(r1).first(wire::kHeaderSize + 2), t0);  // truncated
  engine.on_packet(result_packet(1, kWindow, 2, 9), t0);  // right slot, wrong element count
  EXPECT_EQ(engine.stats().rejected, 7u);
  EXPECT_EQ(src.deliveries(), 1u);
  EXPECT_TRUE(engine.transmits().empty());

  engine.on_packet(r1, t0);
  engine.on_packet(result_packet(2, kWindow, 1, 11), t0);
  engine.on_packet(result_packet(3, kWindow, 1, 12), t0);
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  EXPECT_EQ(src.result(), (std::vector<std::int32_t>{42, 9, 11, 12}));
  engine.on_packet(r1, t0);  // late duplicate after the operation
  EXPECT_EQ(engine.stats().duplicates, 4u);
  EXPECT_EQ(engine.stats().results, 4u);
  EXPECT_EQ(src.deliveries(), 4u);
}

TEST(EngineTest, TransmitViewsStayValidUntilCleared) {
  Engine engine(sim_params(0, 1));
  Int32Source src(0, 3, 1, /*per_packet=*/1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  engine.on_timer(*engine.next_deadline());  // retransmission queued behind the first send
  EXPECT_EQ(transmitted_seqs(engine), (std::vector<std::uint32_t>{0, 0}));
  // Answering packet 0 reuses its buffer for packet 1: the unsent views of packet 0 go away.
  engine.on_packet(result_packet(0, 1, 1, 3), t0 + 2ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{1});
  engine.on_packet(result_packet(1, 1, 1, 4), t0 + 2ms);
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{2});
  engine.clear_transmits();
  engine.on_timer(*engine.next_deadline());
  EXPECT_EQ(transmitted_seqs(engine), std::vector<std::uint32_t>{2});
}

TEST(EngineTest, RejectsBadParametersAndMisuse) {
  auto bad = [](void (*change)(EngineParams&)) {
    EngineParams p = sim_params(0, 4);
    change(p);
    return p;
  };
  EXPECT_THROW(Engine{bad([](EngineParams& p) { p.window = 0; })}, Error);
  EXPECT_THROW(Engine{bad([](EngineParams& p) { p.slot_base = 65535, p.window = 2; })}, Error);
  EXPECT_THROW(Engine{bad([](EngineParams& p) { p.retransmit_timeout = 0ms; })}, Error);
  EXPECT_THROW(Engine{bad([](EngineParams& p) { p.max_retransmit_timeout = 10us; })}, Error);
  EXPECT_THROW(Engine{bad([](EngineParams& p) { p.job_timeout = -1s; })}, Error);
  EXPECT_NO_THROW(Engine{bad([](EngineParams& p) { p.slot_base = 65534, p.window = 2; })});

  Engine engine(sim_params(0, 4));
  Int32Source src(0, 10, 4);
  engine.start(src, TimePoint{});
  EXPECT_THROW(engine.start(src, TimePoint{}), Error);

  struct Oversized : Int32Source {
    using Int32Source::Int32Source;
    void fill(std::uint64_t, wire::Header& h, std::span<std::byte>) override {
      h.count = wire::kMaxCount + 1;
    }
  } oversized(0, 10, 4);
  Engine other(sim_params(0, 4));
  try {
    other.start(oversized, TimePoint{});
    ADD_FAILURE() << "an oversized packet was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("count 1025"), std::string::npos) << e.what();
  }
  EXPECT_EQ(other.state(), Engine::State::kFailed);
  EXPECT_NE(other.failure().find("count 1025"), std::string::npos) << other.failure();
  Int32Source fine(0, 10, 4);
  other.start(fine, TimePoint{});  // a failed operation does not block the next one
  EXPECT_EQ(other.state(), Engine::State::kRunning);
}
// ---- pacing
// ---------------------------------------------------------------------------------------

// A packet's bytes at `gbps` (one bit per nanosecond at 1 Gbit/s).
Duration wire_time(std::size_t bytes, double gbps) {
  return Duration(static_cast<Duration::rep>(std::llround(bytes * 8 / gbps)));
}

TEST(EnginePacingTest, SendTimesAreSpacedBySizeOverRate) {
  constexpr std::uint16_t kWindow = 8;
  constexpr double kGbps = 0.4;
  EngineParams params = sim_params(0, kWindow);
  params.pace_gbps = kGbps;
  params.pace_slack = Duration::zero();
  params.retransmit_timeout = 1s;  // nothing is retransmitted in this test
  params.max_retransmit_timeout = 1s;
  params.job_timeout = 10s;
  Engine engine(params);
  // 5 full packets and a short one: the last gap is the short packet's predecessor's.
  Int32Source src(0, 5 * 256 + 3, kWindow);
  const TimePoint t0 = TimePoint{} + 1s;
  engine.start(src, t0);

  std::vector<TimePoint> sent_at;
  std::vector<std::size_t> sizes;
  const auto take = [&](TimePoint now) {
    for (std::span<const std::byte> t : engine.transmits()) {
      sent_at.push_back(now);
      sizes.push_back(t.size());
    }
    engine.clear_transmits();
  };
  take(t0);
  ASSERT_EQ(sent_at.size(), 1u) << "one packet at once, the others held back";
  while (sent_at.size() < 6) {
    ASSERT_EQ(engine.state(), Engine::State::kRunning);
    const TimePoint d = *engine.next_deadline();
    engine.on_timer(d - 1ns);  // early: the pace holds
    EXPECT_TRUE(engine.transmits().empty()) << "packet " << sent_at.size() << " left early";
    engine.on_timer(d);
    const std::size_t before = sent_at.size();
    take(d);
    ASSERT_EQ(sent_at.size(), before + 1) << "one packet per pace deadline";
  }
  for (std::size_t k = 1; k < sent_at.size(); ++k)
    EXPECT_EQ(sent_at[k] - sent_at[k - 1], wire_time(sizes[k - 1], kGbps)) << "gap " << k;
  EXPECT_EQ(sizes.front(), wire::kHeaderSize + 256 * 4);
  EXPECT_EQ(sizes.back(), wire::kHeaderSize + 3 * 4);
  // All sent: the next deadline is the retransmission timeout, not the pace.
  EXPECT_EQ(*engine.next_deadline(), sent_at.front() + 1s);
  EXPECT_EQ(engine.stats().packets_sent, 6u);
}

TEST(EnginePacingTest, UnpacedSendsTheWholeWindowAtOnce) {
  constexpr std::uint16_t kWindow = 8;
  EngineParams params = sim_params(0, kWindow);
  ASSERT_EQ(params.pace_gbps, 0);
  Engine engine(params);
  Int32Source src(0, 20 * 256, kWindow);
  const TimePoint t0 = TimePoint{} + 1s;
  engine.start(src, t0);
  EXPECT_EQ(engine.transmits().size(), kWindow);
  EXPECT_EQ(*engine.next_deadline(), t0 + params.retransmit_timeout);
}

TEST(EnginePacingTest, RetransmissionsArePacedToo) {
  constexpr std::uint16_t kWindow = 4;
  constexpr double kGbps = 1;
  EngineParams params = sim_params(0, kWindow);
  params.pace_gbps = kGbps;
  params.pace_slack = Duration::zero();
  params.retransmit_timeout = 1ms;  // fixed: every packet expires 1 ms after it left
  params.max_retransmit_timeout = 1ms;
  params.job_timeout = 10s;
  Engine engine(params);
  Int32Source src(0, kWindow * 256, kWindow);
  const TimePoint t0 = TimePoint{} + 1s;
  const Duration gap = wire_time(wire::kHeaderSize + 256 * 4, kGbps);
  engine.start(src, t0);
  TimePoint now = t0;
  std::size_t first = engine.transmits().size();
  engine.clear_transmits();
  while (first < kWindow) {
    ASSERT_EQ(engine.state(), Engine::State::kRunning);
    now = *engine.next_deadline();
    engine.on_timer(now);
    first += engine.transmits().size();
    engine.clear_transmits();
  }
  EXPECT_EQ(now, t0 + 3 * gap);
  // Every packet expires; their copies leave one per gap, whatever the timer batch.
  std::vector<TimePoint> resent_at;
  now = t0 + 100ms;
  engine.on_timer(now);  // all four expired long ago
  ASSERT_EQ(engine.state(), Engine::State::kRunning);
  EXPECT_EQ(engine.stats().retransmissions, kWindow);
  for (std::size_t k = 0; k < engine.transmits().size(); ++k) resent_at.push_back(now);
  engine.clear_transmits();
  EXPECT_EQ(resent_at.size(), 1u) << "one copy at once, the others held back by the pace";
  while (resent_at.size() < kWindow) {
    ASSERT_EQ(engine.state(), Engine::State::kRunning);
    now = *engine.next_deadline();
    engine.on_timer(now);
    for (std::size_t k = 0; k < engine.transmits().size(); ++k) resent_at.push_back(now);
    engine.clear_transmits();
  }
  for (std::size_t k = 1; k < resent_at.size(); ++k)
    EXPECT_EQ(resent_at[k] - resent_at[k - 1], gap) << "copy " << k;
}

TEST(EnginePacingTest, ALateTimerIsMadeUpWithinTheSlackAndNoMore) {
  constexpr std::uint16_t kWindow = 64;
  constexpr double kGbps = 1;
  EngineParams params = sim_params(0, kWindow);
  params.pace_gbps = kGbps;
  params.pace_slack = 50us;
  params.retransmit_timeout = 1s;
  params.max_retransmit_timeout = 1s;
  params.job_timeout = 10s;
  Engine engine(params);
  Int32Source src(0, kWindow * 256, kWindow);
  const Duration gap = wire_time(wire::kHeaderSize + 256 * 4, kGbps);  // 8.368 us
  const TimePoint t0 = TimePoint{} + 1s;
  engine.start(src, t0);
  std::size_t sent = engine.transmits().size();
  engine.clear_transmits();
  // The engine was idle before: the slack's worth leaves at once, then one packet per gap from
  // t0 - slack on. A caller that wakes only every 30 us (later than the pace asks, within the
  // slack) gets the packets it owes together, so the rate holds exactly: by time t, packets
  // 1 + (t - t0 + slack) / gap.
  const auto owed = [&](TimePoint now) {
    return static_cast<std::size_t>((now - t0 + 50us) / gap) + 1;
  };
  EXPECT_EQ(sent, owed(t0));
  for (TimePoint now = t0 + 30us; now <= t0 + 300us; now += 30us) {
    engine.on_timer(now);
    sent += engine.transmits().size();
    engine.clear_transmits();
    EXPECT_EQ(sent, owed(now)) << "at " << (now - t0).count() << " ns";
  }
  // After an idle spell the burst is bounded by the slack: pace_slack / gap + 1 packets.
  TimePoint now = t0 + 10ms;
  engine.on_timer(now);
  sent += engine.transmits().size();
  engine.clear_transmits();
  const std::size_t before = sent;
  ASSERT_LT(sent, std::size_t{kWindow});
  now += 10ms;
  engine.on_timer(now);
  EXPECT_EQ(engine.transmits().size(),
            std::min<std::size_t>(kWindow - before, static_cast<std::size_t>(50us / gap) + 1));
}

TEST(EnginePacingTest, PacedAllReduceUnderLossDuplicationAndReorderingIsExact) {
  constexpr std::uint16_t kWorkers = 4, kWindow = 16;
  constexpr std::size_t kElements = 300 * kElementsPerPacket;
  Cluster cluster(kWorkers, kWindow, kEverything, /*seed=*/5, /*pace_gbps=*/2);
  cluster.run(kElements);
  cluster.expect_all_correct(kElements);
  std::uint64_t retransmissions = 0;
  for (std::uint16_t r = 0; r < kWorkers; ++r)
    retransmissions += cluster.engine(r).stats().retransmissions;
  EXPECT_GT(retransmissions, 0u) << "the paced copies' path was not exercised";
  // No faster than the pace: 300 packets of 1046 bytes at 2 Gbit/s take 1.2552 ms at least.
  EXPECT_GE(cluster.now() - (TimePoint{} + 1s), wire_time(299 * (wire::kHeaderSize + 1024), 2));
}

TEST(EnginePacingTest, RejectsBadRates) {
  EngineParams params = sim_params(0, 4);
  for (double bad : {-1.0, 1e-9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    params.pace_gbps = bad;
    EXPECT_THROW(Engine{params}, Error) << bad;
  }
  params.pace_gbps = 1;
  params.pace_slack = -1ns;
  EXPECT_THROW(Engine{params}, Error);
}

// ---- real threads through the in-process network ----------------------------------------------

Endpoint worker_endpoint(std::uint16_t rank) {
  return Endpoint{0x7F000001u, static_cast<std::uint16_t>(30000 + rank)};
}

// The loop a communicator runs: send what the engine wants sent, wait for packets until the
// engine's next deadline, fire its timer when due.
void drive(Engine& engine, Transport& transport, PacketSource& src) {
  auto flush = [&] {
    if (engine.transmits().empty()) return;
    transport.send(engine.transmits());
    engine.clear_transmits();
  };
  engine.start(src, Clock::now());
  flush();
  while (engine.state() == Engine::State::kRunning) {
    const TimePoint deadline = *engine.next_deadline();
    const TimePoint now = Clock::now();
    if (now >= deadline) {
      engine.on_timer(now);
    } else {
      transport.receive(deadline - now, [&](std::span<const std::byte> packet) {
        engine.on_packet(packet, Clock::now());
      });
    }
    flush();
  }
}

TEST(EngineTest, ThreadsThroughTheInprocNetworkWithLoss) {
  constexpr std::uint16_t kWorkers = 4, kWindow = 16;
  ReferenceAggregator aggregator(kWorkers, kWindow);
  InprocNetwork net(
      [&](const Endpoint& from, std::span<const std::byte> packet,
          const InprocNetwork::SendFn& send) {
        const auto rank = static_cast<std::uint16_t>(from.port - worker_endpoint(0).port);
        ASSERT_LT(rank, kWorkers);
        aggregator.handle(rank, packet, [&](std::uint16_t to, std::span<const std::byte> p) {
          send(worker_endpoint(to), p);
        });
      },
      {.loss = 0.05, .duplicate = 0.02, .reorder = 0.05, .seed = 11});

  const std::vector<std::size_t> sizes = {100000, 7, 0, 3000};
  std::vector<std::vector<std::unique_ptr<Int32Source>>> sources(kWorkers);
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::thread> threads;
  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    EngineParams params = sim_params(r, kWindow);
    params.retransmit_timeout = 2ms;
    params.max_retransmit_timeout = 32ms;
    params.job_timeout = 30s;  // only a hang would reach it
    engines.push_back(std::make_unique<Engine>(params));
    for (std::size_t n : sizes) sources[r].push_back(std::make_unique<Int32Source>(r, n, kWindow));
  }
  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    threads.emplace_back([&, r] {
      auto transport = net.attach(worker_endpoint(r));
      for (auto& src : sources[r]) {
        drive(*engines[r], *transport, *src);
        if (engines[r]->state() != Engine::State::kDone) return;
      }
    });
  }
  for (auto& t : threads) t.join();

  for (std::uint16_t r = 0; r < kWorkers; ++r) {
    ASSERT_EQ(engines[r]->state(), Engine::State::kDone) << engines[r]->failure();
    EXPECT_EQ(engines[r]->stats().operations, sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::vector<std::int32_t> want = expected_sum(kWorkers, sizes[i]);
      EXPECT_EQ(first_mismatch(sources[r][i]->result(), want), -1)
          << "rank " << r << " operation " << i;
    }
  }
  const InprocCounters c = net.counters();
  EXPECT_GT(c.dropped, 0u);
  EXPECT_GT(c.duplicated, 0u);
  EXPECT_GT(c.reordered, 0u);
}

}  // namespace
}  // namespace netagg

namespace netagg {
namespace {

// A single worker with congestion control against a loop that answers every packet sent, oldest
// first, each answer CE-marked or not as `mark(result index)` says; returns the packets in
// flight before each answer, and the engine's final stats.
struct ControlledRun {
  std::vector<std::uint32_t> in_flight;  // packets in flight before each answer
  EngineStats stats;
};
ControlledRun run_controlled(std::uint16_t window, std::size_t packets,
                             const std::function<bool(std::size_t)>& mark) {
  EngineParams params = sim_params(0, window);
  params.congestion_control = true;
  Engine engine(params);
  Int32Source src(0, packets, window, /*per_packet=*/1);
  TimePoint now{};
  engine.start(src, now);
  std::deque<std::uint64_t> outstanding;  // seqs sent, in order
  ControlledRun run;
  std::size_t answered = 0;
  for (int steps = 0; engine.state() == Engine::State::kRunning && steps < 100000; ++steps) {
    for (auto t : engine.transmits()) outstanding.push_back(wire::decode(t).header.seq);
    engine.clear_transmits();
    if (outstanding.empty()) break;
    run.in_flight.push_back(static_cast<std::uint32_t>(outstanding.size()));
    const std::uint64_t seq = outstanding.front();
    outstanding.pop_front();
    now += 100us;
    engine.on_packet(result_packet(seq, window, 1, 1), now, mark(answered++) ? 3 : 0);
  }
  EXPECT_EQ(engine.state(), Engine::State::kDone);
  run.stats = engine.stats();
  return run;
}

TEST(EngineCongestionTest, WithoutMarksTheWholeWindowIsInFlight) {
  const ControlledRun run = run_controlled(16, 400, [](std::size_t) { return false; });
  EXPECT_EQ(run.stats.window_cuts, 0u);
  EXPECT_DOUBLE_EQ(run.stats.cwnd, 16.0);
  EXPECT_EQ(*std::max_element(run.in_flight.begin(), run.in_flight.end()), 16u);
  EXPECT_EQ(run.stats.retransmissions, 0u);
}

// Every result marked: alpha climbs towards 1 and the window is cut by alpha / 2 per window of
// results, down to one packet in flight; never more in flight than the window allows.
TEST(EngineCongestionTest, MarkedResultsShrinkTheWindowToOne) {
  const ControlledRun run = run_controlled(16, 2000, [](std::size_t) { return true; });
  EXPECT_GT(run.stats.window_cuts, 5u);
  EXPECT_GT(run.stats.alpha, 0.9);
  EXPECT_DOUBLE_EQ(run.stats.cwnd, 1.0);
  EXPECT_EQ(run.stats.ce_results, 2000u);
  // At the end one packet at a time.
  const std::vector<std::uint32_t> tail(run.in_flight.end() - 20, run.in_flight.end());
  EXPECT_EQ(*std::max_element(tail.begin(), tail.end()), 1u);
}

// Marks for a while, then none: the window comes back (additive increase) but never above W.
TEST(EngineCongestionTest, TheWindowGrowsBackButNeverAboveTheJobsSlots) {
  const ControlledRun run = run_controlled(8, 3000, [](std::size_t i) { return i < 300; });
  EXPECT_GT(run.stats.window_cuts, 0u);
  EXPECT_DOUBLE_EQ(run.stats.cwnd, 8.0);
  EXPECT_EQ(*std::max_element(run.in_flight.begin(), run.in_flight.end()), 8u);
  EXPECT_LE(*std::max_element(run.in_flight.begin() + 200, run.in_flight.begin() + 310), 4u);
}

// A loss (a retransmission on timeout) halves the window, once per round trip.
TEST(EngineCongestionTest, ALossHalvesTheWindowOncePerRoundTrip) {
  EngineParams params = sim_params(0, 16);
  params.congestion_control = true;
  Engine engine(params);
  Int32Source src(0, 64, 16, /*per_packet=*/1);
  engine.start(src, TimePoint{});
  EXPECT_EQ(engine.transmits().size(), 16u);
  engine.clear_transmits();
  engine.on_timer(*engine.next_deadline());  // all 16 time out together: one cut
  EXPECT_EQ(engine.stats().window_cuts, 1u);
  EXPECT_DOUBLE_EQ(engine.stats().cwnd, 8.0);
}

TEST(EngineCongestionTest, OffMeansNoWindowAndNoCuts) {
  Engine engine(sim_params(0, 16));
  Int32Source src(0, 64, 16, /*per_packet=*/1);
  engine.start(src, TimePoint{});
  engine.on_packet(result_packet(0, 16, 1, 1), TimePoint{} + 1ms, 3);
  EXPECT_EQ(engine.stats().window_cuts, 0u);
  EXPECT_EQ(engine.stats().ce_results, 0u);
  EXPECT_DOUBLE_EQ(engine.stats().cwnd, 16.0);
}

// ---- the marks and windows of a job's workers ----------------------------------------------

// Workers of one job in simulated time behind an aggregator that ORs the ECN bits of a round's
// contributions into its result, also when it answers a retransmission from the stored result.
// Rank 0's contribution of packet seq arrives CE-marked when marked(seq) (a queue on its way up
// above its threshold), every other contribution ECT(0); nothing marks the results on their way
// down, and every copy of a result takes the same time. lose(rank, seq): the first copy of
// seq's result to rank is lost.
std::vector<EngineStats> run_with_marked_uplink(
    std::uint16_t workers, std::uint16_t window, std::size_t packets,
    const std::function<bool(std::uint32_t)>& marked,
    const std::function<bool(std::uint16_t, std::uint32_t)>& lose) {
  constexpr Duration kLatency = 10us;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::unique_ptr<Int32Source>> sources;
  for (std::uint16_t r = 0; r < workers; ++r) {
    EngineParams params = sim_params(r, window);
    params.congestion_control = true;
    engines.push_back(std::make_unique<Engine>(params));
    sources.push_back(std::make_unique<Int32Source>(r, packets, window, /*per_packet=*/1));
  }
  ReferenceAggregator aggregator(workers, window);
  std::map<std::uint32_t, std::uint8_t> round_ecn;         // per seq: its contributions' OR
  std::set<std::pair<std::uint16_t, std::uint32_t>> lost;  // (rank, seq) lost once already
  struct Arrival {
    TimePoint at;
    std::uint64_t order;  // ties in time arrive in sending order
    int dest;             // a rank, or -1: the aggregator
    std::uint16_t source;
    Bytes bytes;
    std::uint8_t ecn;
    bool operator>(const Arrival& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> network;
  std::uint64_t order = 0;
  TimePoint now = TimePoint{} + 1s;
  const auto flush = [&] {
    for (std::uint16_t r = 0; r < workers; ++r) {
      for (std::span<const std::byte> t : engines[r]->transmits()) {
        const std::uint32_t seq = wire::decode(t).header.seq;
        const std::uint8_t ecn = r == 0 && marked(seq) ? 3 : 2;
        network.push({now + kLatency, order++, -1, r, Bytes(t.begin(), t.end()), ecn});
      }
      engines[r]->clear_transmits();
    }
  };
  for (std::uint16_t r = 0; r < workers; ++r) engines[r]->start(*sources[r], now);
  flush();
  for (;;) {
    std::optional<TimePoint> next;
    if (!network.empty()) next = network.top().at;
    for (const auto& e : engines)
      if (const auto d = e->next_deadline()) next = next ? std::min(*next, *d) : *d;
    if (!next) break;
    now = std::max(now, *next);
    while (!network.empty() && network.top().at <= now) {
      const Arrival a = network.top();
      network.pop();
      if (a.dest >= 0) {
        engines[a.dest]->on_packet(a.bytes, now, a.ecn);
        continue;
      }
      const std::uint32_t seq = wire::decode(a.bytes).header.seq;
      round_ecn[seq] |= a.ecn;
      aggregator.handle(a.source, a.bytes,
                        [&](std::uint16_t rank, std::span<const std::byte> result) {
                          if (lose(rank, seq) && lost.insert({rank, seq}).second) return;
                          network.push({now + kLatency, order++, rank, 0,
                                        Bytes(result.begin(), result.end()), round_ecn[seq]});
                        });
    }
    for (const auto& e : engines)
      if (const auto d = e->next_deadline(); d && *d <= now) e->on_timer(now);
    flush();
  }
  std::vector<EngineStats> stats;
  for (std::uint16_t r = 0; r < workers; ++r) {
    EXPECT_EQ(engines[r]->state(), Engine::State::kDone) << "rank " << r;
    EXPECT_EQ(sources[r]->deliveries(), packets) << "rank " << r;
    stats.push_back(engines[r]->stats());
  }
  return stats;
}

// One worker's contributions marked: every worker's results carry the marks (the aggregator's
// OR), and with no loss and equal delays every worker's window follows the same course.
TEST(EngineCongestionTest, OneWorkersMarksGiveEveryWorkerTheSameWindowWithoutLoss) {
  const auto stats = run_with_marked_uplink(
      4, 64, 20000, [](std::uint32_t seq) { return seq % 8 == 0; },
      [](std::uint16_t, std::uint32_t) { return false; });
  EXPECT_EQ(stats[0].ce_results, 20000u / 8);
  EXPECT_GT(stats[0].window_cuts, 0u);
  for (const EngineStats& s : stats) {
    EXPECT_EQ(s.ce_results, stats[0].ce_results);
    EXPECT_EQ(s.window_cuts, stats[0].window_cuts);
    EXPECT_DOUBLE_EQ(s.cwnd, stats[0].cwnd);
    EXPECT_DOUBLE_EQ(s.alpha, stats[0].alpha);
  }
}

// The same marks do not make the same windows: a worker that loses a result retransmits, and
// its own timeout halves its own window. Here the last result is lost to rank 2 only.
TEST(EngineCongestionTest, ALostResultCutsOnlyTheWindowOfTheWorkerThatLostIt) {
  constexpr std::size_t kPackets = 20000;
  const auto stats = run_with_marked_uplink(
      4, 64, kPackets, [](std::uint32_t seq) { return seq < 2000 && seq % 8 == 0; },
      [](std::uint16_t rank, std::uint32_t seq) { return rank == 2 && seq == kPackets - 1; });
  for (const EngineStats& s : stats) EXPECT_EQ(s.ce_results, stats[0].ce_results);
  EXPECT_GT(stats[0].ce_results, 0u);
  EXPECT_EQ(stats[2].retransmissions, 1u);
  EXPECT_EQ(stats[2].window_cuts, stats[0].window_cuts + 1);
  // Halved by the timeout, then the last result's growth (1 / cwnd above ssthresh).
  EXPECT_NEAR(stats[2].cwnd, stats[0].cwnd / 2, 1.0);
  for (const std::uint16_t r : {1, 3}) EXPECT_DOUBLE_EQ(stats[r].cwnd, stats[0].cwnd);
}

}  // namespace
// ---- Notices --------------------------------------------------------------------------------

// The notice an aggregator sends for the contribution `sent` (as the engine transmitted it).
Bytes notice_for(std::span<const std::byte> sent, wire::NoticeReason reason,
                 std::vector<std::uint32_t> waiting = {}) {
  const wire::Decoded d = wire::decode(sent);
  EXPECT_TRUE(d);
  Bytes out(wire::kMaxPacketSize);
  out.resize(wire::encode_notice(d.header, reason, waiting, out));
  EXPECT_FALSE(out.empty());
  return out;
}

// A notice of a drop the worker can act on fails the operation once its packet has stayed
// unanswered for kNoticeGrace, with an error that names the cause; before that, nothing changes.
TEST(EngineTest, ANoticeFailsTheOperationWhenItsPacketStaysUnanswered) {
  EngineParams params = sim_params(1, 2);
  params.epoch = 0x5eed;
  params.job_timeout = 10s;
  params.retransmit_timeout = params.max_retransmit_timeout = 5s;
  Engine engine(params);
  Int32Source src(1, 4 * 256, 2);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  ASSERT_EQ(engine.transmits().size(), 2u);
  const Bytes sent(engine.transmits()[0].begin(), engine.transmits()[0].end());
  engine.clear_transmits();
  engine.on_packet(notice_for(sent, wire::NoticeReason::kUnknownJob), t0 + 1ms);
  EXPECT_EQ(engine.stats().notices, 1u);
  EXPECT_EQ(*engine.next_deadline(), t0 + 1ms + Engine::kNoticeGrace);
  engine.on_timer(t0 + 1ms + Engine::kNoticeGrace - 1ns);
  EXPECT_EQ(engine.state(), Engine::State::kRunning);
  engine.on_timer(t0 + 1ms + Engine::kNoticeGrace);
  ASSERT_EQ(engine.state(), Engine::State::kFailed);
  EXPECT_TRUE(engine.failed_by_notice());
  EXPECT_THAT(engine.failure(), HasSubstr("job 7 rank 1: the aggregator drops our packets "
                                          "(unknown_job): it has no job 7"));
}

// A notice is taken only for the packet in flight, of this run: another run's (another epoch),
// one for a packet answered already, or one that a result follows (a forged notice of a packet
// the aggregator answers) stops nothing.
TEST(EngineTest, ANoticeOfNoPacketInFlightOrFollowedByTheResultChangesNothing) {
  EngineParams params = sim_params(0, 2);
  params.epoch = 0x5eed;
  Engine engine(params);
  Int32Source src(0, 4 * 256, 2);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  const Bytes first(engine.transmits()[0].begin(), engine.transmits()[0].end());
  engine.clear_transmits();
  Bytes other_run = notice_for(first, wire::NoticeReason::kStaleEpoch);
  wire::store_be32(other_run.data() + wire::offset::kEpoch, 0x0bad);
  engine.on_packet(other_run, t0 + 1ms);
  EXPECT_EQ(engine.stats().notices_ignored, 1u);
  engine.on_packet(notice_for(first, wire::NoticeReason::kStaleEpoch), t0 + 2ms);
  EXPECT_EQ(engine.stats().notices, 1u);
  Bytes result = result_packet(0, 2, 256, 1);
  wire::store_be32(result.data() + wire::offset::kEpoch, 0x5eed);
  engine.on_packet(result, t0 + 3ms);  // the packet is answered after all
  engine.on_packet(notice_for(first, wire::NoticeReason::kStale), t0 + 4ms);  // late
  EXPECT_EQ(engine.stats().notices_ignored, 2u);
  engine.on_timer(t0 + 2ms + Engine::kNoticeGrace);
  EXPECT_EQ(engine.state(), Engine::State::kRunning);
  EXPECT_FALSE(engine.failed_by_notice());
}

// A duplicate notice says whom the round waits for; the operation goes on waiting, and its
// timeout names them.
TEST(EngineTest, ADuplicateNoticeNamesTheRanksTheRoundWaitsFor) {
  EngineParams params = sim_params(0, 1);
  params.job_timeout = 1s;
  Engine engine(params);
  Int32Source src(0, 256, 1);
  const TimePoint t0 = TimePoint{};
  engine.start(src, t0);
  const Bytes sent(engine.transmits()[0].begin(), engine.transmits()[0].end());
  engine.clear_transmits();
  engine.on_packet(notice_for(sent, wire::NoticeReason::kDuplicate, {0b1010, 1}), t0 + 5ms);
  ASSERT_TRUE(engine.waiting_notice());
  EXPECT_EQ(Engine::ranks_of(engine.waiting_notice()->waiting),
            (std::vector<std::uint32_t>{1, 3, 32}));
  EXPECT_THAT(engine.describe(*engine.waiting_notice()),
              HasSubstr("ranks 1, 3, 32 have not contributed to any round of this all-reduce"));
  engine.on_timer(t0 + 1s);
  ASSERT_EQ(engine.state(), Engine::State::kFailed);
  EXPECT_FALSE(engine.failed_by_notice());
  EXPECT_THAT(engine.failure(), AllOf(HasSubstr("timed out"), HasSubstr("ranks 1, 3, 32")));
}

}  // namespace netagg

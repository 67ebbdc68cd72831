// SPDX-License-Identifier: Apache-2.0
// The host fallback end to end in one process: communicators of several ranks as threads, the
// switch model as the aggregator behind an in-process network, an in-process peer group. The
// aggregator dies, restarts, or loses results to chosen ranks at a chosen packet (counted as it
// arrives), so every scenario is the same on every run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "netagg/codec.hpp"
#include "netagg/communicator.hpp"
#include "netagg/error.hpp"
#include "netagg/inproc.hpp"
#include "netagg/peers.hpp"
#include "switch_model.hpp"

namespace netagg {
namespace {

using ::testing::HasSubstr;

constexpr std::uint16_t kJobId = 5;
constexpr std::uint16_t kWindow = 8;
constexpr std::uint16_t kPerPacket = 32;

JobSpec test_job(std::uint16_t workers) {
  return make_local_job(kJobId, workers, 42000, 0, kWindow, kPerPacket,
                        Endpoint::parse("127.0.0.1:20033"));
}

Config test_config(const JobSpec& job, int rank) {
  Config c;
  c.job = job;
  c.rank = rank;
  c.retransmit_timeout = std::chrono::milliseconds(2);
  c.max_retransmit_timeout = std::chrono::milliseconds(20);
  c.job_timeout = std::chrono::seconds(20);
  c.fallback = Fallback::kGloo;  // the peers are given: an in-process group
  c.fallback_after = std::chrono::milliseconds(150);
  c.fallback_timeout = std::chrono::seconds(20);
  c.epoch = 0x5eed0002;
  return c;
}

// The switch model behind a switch that a test can kill (everything dropped from then on),
// restart (a new model: every round lost), or make lose the results of a chosen round on their
// way to one rank and restart right after.
class Aggregator {
 public:
  explicit Aggregator(const JobSpec& job) : job_(job) { restart_locked(); }

  void restart() {
    std::lock_guard lock(mutex_);
    restart_locked();
  }
  // `action` runs once, when the `packet`-th packet (1-based, retransmissions included) arrives,
  // before it is processed.
  void at_packet(std::uint64_t packet, std::function<void(Aggregator&)> action) {
    std::lock_guard lock(mutex_);
    trigger_at_ = packet;
    trigger_ = std::move(action);
  }
  // The `round`-th round to complete (1-based) sends its results to every rank but `rank`; the
  // next packet to arrive finds a restarted aggregator.
  void lose_round_then_restart(std::size_t round, int rank) {
    std::lock_guard lock(mutex_);
    lose_round_ = round;
    lose_to_ = rank;
  }
  // Called by the trigger actions, under the lock.
  void kill() { dead_ = true; }
  void restart_locked() {
    model_ = std::make_unique<sim::SwitchModel>(64, 1024);
    model_->add_job(job_);
    dead_ = false;
  }

  void process(const Endpoint& from, std::span<const std::byte> packet,
               const InprocNetwork::SendFn& send) {
    std::lock_guard lock(mutex_);
    ++packets_;
    if (trigger_ && packets_ == trigger_at_) std::exchange(trigger_, nullptr)(*this);
    if (restart_next_) {
      restart_next_ = false;
      restart_locked();
    }
    if (dead_) return;
    Sink sink(*this, send);
    model_->process(from, packet, sink);
  }

 private:
  class Sink final : public sim::PacketSink {
   public:
    Sink(Aggregator& a, const InprocNetwork::SendFn& send) : a_(a), send_(send) {}
    void send(const Endpoint& to, std::span<const std::byte> packet, std::uint8_t) override {
      if (a_.lose_round_ > 0) {
        const wire::Decoded d = wire::decode(packet);
        if (d && a_.rounds_.insert(d.header.seq).second && a_.rounds_.size() == a_.lose_round_)
          a_.losing_seq_ = d.header.seq;
        if (d && a_.losing_seq_ && *a_.losing_seq_ == d.header.seq) {
          a_.restart_next_ = true;
          if (a_.job_.workers[static_cast<std::size_t>(a_.lose_to_)].address == to) return;
        }
      }
      send_(to, packet);
    }

   private:
    Aggregator& a_;
    const InprocNetwork::SendFn& send_;
  };

  JobSpec job_;
  std::mutex mutex_;
  std::unique_ptr<sim::SwitchModel> model_;
  bool dead_ = false;
  std::uint64_t packets_ = 0, trigger_at_ = 0;
  std::function<void(Aggregator&)> trigger_;
  std::size_t lose_round_ = 0;
  int lose_to_ = -1;
  std::set<std::uint32_t> rounds_;  // seqs of the rounds completed (their results seen)
  std::optional<std::uint32_t> losing_seq_;
  bool restart_next_ = false;
};

struct Rig {
  explicit Rig(const JobSpec& j, InprocOptions options = {})
      : job(j),
        aggregator(j),
        net([this](const Endpoint& from, std::span<const std::byte> packet,
                   const InprocNetwork::SendFn& send) { aggregator.process(from, packet, send); },
            options),
        peers(static_cast<int>(j.world_size())) {}
  JobSpec job;
  Aggregator aggregator;
  InprocNetwork net;
  InprocPeerGroup peers;
};

struct RankOutcome {
  std::exception_ptr error;
  FallbackStats fallback;
  EngineStats engine;
};

// body(rank, communicator) on a thread per rank, each with its peer of the rig's group.
std::vector<RankOutcome> run_ranks(Rig& rig, const std::function<Config(int)>& config,
                                   const std::function<void(int, Communicator&)>& body) {
  const int n = static_cast<int>(rig.job.world_size());
  std::vector<RankOutcome> out(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      RankOutcome& o = out[static_cast<std::size_t>(r)];
      try {
        auto comm = std::make_unique<Communicator>(
            config(r), rig.net.attach(rig.job.workers[static_cast<std::size_t>(r)].address),
            rig.peers.member(r));
        body(r, *comm);
        o.fallback = comm->fallback_stats();
        o.engine = comm->stats();
        comm.reset();  // closes: may still help another rank
      } catch (...) {
        o.error = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

void expect_no_errors(const std::vector<RankOutcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    if (!outcomes[r].error) continue;
    try {
      std::rethrow_exception(outcomes[r].error);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
}

std::vector<std::int32_t> random_ints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng());
  return v;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::ldexp(u(rng), static_cast<int>(i / 97 % 9));
  return v;
}

constexpr std::size_t kElements = 2000;  // 63 packets of 32: the last one short
constexpr int kCalls = 3;                // all-reduces per rank

// Inputs of rank r for call c, and what every rank must get: int32 wraps exactly; fp32 goes as
// block floating point, whose result on the hosts is the aggregator's, so every rank's bits are
// compared with those of a run that had no failure.
struct Expected {
  std::vector<std::vector<std::int32_t>> ints;  // per call
  std::vector<std::vector<float>> floats;       // per call, from a run without failures
};

Expected expected_sums(const JobSpec& job) {
  Expected e;
  for (int c = 0; c < kCalls; ++c) {
    std::vector<std::int32_t> sum(kElements);
    for (std::size_t r = 0; r < job.world_size(); ++r) {
      const auto in = random_ints(kElements, 100 * c + r);
      for (std::size_t i = 0; i < kElements; ++i)
        sum[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum[i]) +
                                           static_cast<std::uint32_t>(in[i]));
    }
    e.ints.push_back(sum);
  }
  Rig clean(job);
  std::vector<std::vector<float>> first(kCalls);
  expect_no_errors(run_ranks(
      clean, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        for (int c = 0; c < kCalls; ++c) {
          auto x = random_floats(kElements, 1000 * c + r);
          comm.allreduce(std::span<float>(x));
          if (r == 0) first[static_cast<std::size_t>(c)] = x;
        }
      }));
  e.floats = first;
  return e;
}

// Every rank runs kCalls int32 and kCalls fp32 all-reduces and checks every element.
std::vector<RankOutcome> run_and_check(Rig& rig, const Expected& want, std::atomic<int>* mismatches,
                                       const std::function<Config(int)>& config) {
  return run_ranks(rig, config, [&](int r, Communicator& comm) {
    for (int c = 0; c < kCalls; ++c) {
      auto x = random_ints(kElements, 100 * c + r);
      comm.allreduce(std::span<std::int32_t>(x));
      if (x != want.ints[static_cast<std::size_t>(c)]) ++*mismatches;
    }
    for (int c = 0; c < kCalls; ++c) {
      auto x = random_floats(kElements, 1000 * c + r);
      comm.allreduce(std::span<float>(x));
      for (std::size_t i = 0; i < kElements; ++i)
        if (std::bit_cast<std::uint32_t>(x[i]) !=
            std::bit_cast<std::uint32_t>(want.floats[static_cast<std::size_t>(c)][i])) {
          ++*mismatches;
          break;
        }
    }
  });
}

// Contributions a run without failures makes: 3 ranks x (3 x 63 int32 packets + 3 x (63 + 8)
// block floating point packets: the exponents travel a window ahead).
constexpr std::uint64_t kAllPackets = 3 * (3 * 63 + 3 * (63 + kWindow));

struct Point {
  const char* name;
  double fraction;  // of kAllPackets, when the aggregator fails
  bool restart;     // restarted at once, or dead for good
  friend void PrintTo(const Point& p, std::ostream* os) { *os << p.name; }
};

class AggregatorFailure : public ::testing::TestWithParam<Point> {};

// Whenever the aggregator dies or restarts, every rank gets every sum, bit for bit, and never a
// timeout error.
TEST_P(AggregatorFailure, EveryRankGetsEverySum) {
  const JobSpec job = test_job(3);
  static const Expected want = expected_sums(job);
  Rig rig(job);
  const Point point = GetParam();
  const auto at =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(point.fraction * kAllPackets));
  rig.aggregator.at_packet(at,
                           [&](Aggregator& a) { point.restart ? a.restart_locked() : a.kill(); });
  std::atomic<int> mismatches{0};
  const auto outcomes =
      run_and_check(rig, want, &mismatches, [&](int r) { return test_config(job, r); });
  expect_no_errors(outcomes);
  EXPECT_EQ(mismatches.load(), 0);
  if (!point.restart && at < kAllPackets) {
    for (const RankOutcome& o : outcomes) EXPECT_GT(o.fallback.host_packets, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AtChosenPackets, AggregatorFailure,
    ::testing::Values(Point{"killed_at_start", 0.0, false}, Point{"killed_at_10", 0.10, false},
                      Point{"killed_at_50", 0.50, false}, Point{"killed_at_80", 0.80, false},
                      Point{"killed_at_95", 0.95, false}, Point{"killed_at_99", 0.99, false},
                      Point{"restarted_at_10", 0.10, true}, Point{"restarted_at_50", 0.50, true},
                      Point{"restarted_at_80", 0.80, true}, Point{"restarted_at_95", 0.95, true},
                      Point{"restarted_at_99", 0.99, true}, Point{"restarted_at_last", 1.0, true}),
    [](const auto& info) { return std::string(info.param.name); });

// The hole of a restart late in the last all-reduce: the last round's results reach ranks 0 and 1
// only, then the aggregator restarts, and ranks 0 and 1 are done and close their communicators.
// Rank 2's retransmissions start rounds nobody else joins; it gets the results from the others
// as they close.
TEST(HostFallback, TheLastResultsLostToOneRankComeFromTheOthersAsTheyClose) {
  const JobSpec job = test_job(3);
  Rig rig(job);
  rig.aggregator.lose_round_then_restart(63, 2);  // the 63rd round of 63 packets: the last
  std::vector<std::vector<std::int32_t>> got(3);
  const auto outcomes = run_ranks(
      rig, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        auto x = random_ints(kElements, 7 + r);
        comm.allreduce(std::span<std::int32_t>(x));
        got[static_cast<std::size_t>(r)] = x;
      });
  expect_no_errors(outcomes);
  std::vector<std::int32_t> sum(kElements);
  for (int r = 0; r < 3; ++r) {
    const auto in = random_ints(kElements, 7 + r);
    for (std::size_t i = 0; i < kElements; ++i)
      sum[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum[i]) +
                                         static_cast<std::uint32_t>(in[i]));
  }
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], sum) << "rank " << r;
  EXPECT_EQ(outcomes[2].fallback.shared_results, 1u);
  EXPECT_EQ(outcomes[2].fallback.host_packets, 0u);
}

// After the hosts took over, a probe that finds the aggregator answering again brings the
// all-reduces back to the network, and says so.
TEST(HostFallback, AProbeThatTheAggregatorAnswersBringsTheJobBackToTheNetwork) {
  const JobSpec job = test_job(3);
  Rig rig(job);
  rig.aggregator.at_packet(3 * 20, [](Aggregator& a) { a.kill(); });
  std::atomic<int> mismatches{0};
  const auto outcomes = run_ranks(
      rig, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        for (int c = 0; c < 4; ++c) {
          // Calls 0 and 1 end on the hosts; rank 0 restarts the aggregator before call 2, whose
          // probe is decided once every rank has joined its session.
          if (c == 2 && r == 0) rig.aggregator.restart();
          auto x = random_ints(kElements, 100 * c + r);
          comm.allreduce(std::span<std::int32_t>(x));
          std::vector<std::int32_t> sum(kElements);
          for (int k = 0; k < 3; ++k) {
            const auto in = random_ints(kElements, 100 * c + k);
            for (std::size_t i = 0; i < kElements; ++i)
              sum[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum[i]) +
                                                 static_cast<std::uint32_t>(in[i]));
          }
          if (x != sum) ++mismatches;
        }
      });
  expect_no_errors(outcomes);
  EXPECT_EQ(mismatches.load(), 0);
  for (const RankOutcome& o : outcomes) {
    EXPECT_EQ(o.fallback.to_hosts, 1u);
    EXPECT_EQ(o.fallback.to_network, 1u);
  }
}

}  // namespace
}  // namespace netagg

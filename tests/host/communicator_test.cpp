// SPDX-License-Identifier: Apache-2.0
// Communicators of several ranks as threads in one process, over the in-process network with
// the switch model as the aggregator: the whole host runtime (communicator, codec, engine) and
// the SwitchML algorithm, without sockets.
#include "netagg/communicator.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "expect_error.hpp"
#include "netagg/codec.hpp"
#include "netagg/engine.hpp"
#include "netagg/error.hpp"
#include "netagg/exact.hpp"
#include "netagg/inproc.hpp"
#include "netagg/reduce.hpp"
#include "netagg/split.hpp"
#include "switch_model.hpp"

namespace netagg {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr std::uint16_t kJobId = 3;
constexpr std::uint16_t kSlotBase = 8;
constexpr std::uint16_t kWindow = 16;
constexpr std::uint16_t kPerPacket = 64;

JobSpec test_job(std::uint16_t workers, std::uint16_t per_packet = kPerPacket) {
  return make_local_job(kJobId, workers, 41000, kSlotBase, kWindow, per_packet,
                        Endpoint::parse("127.0.0.1:20033"));
}

Config test_config(const JobSpec& job, int rank) {
  Config c;
  c.job = job;
  c.rank = rank;
  c.retransmit_timeout = std::chrono::milliseconds(2);
  c.max_retransmit_timeout = std::chrono::milliseconds(20);
  c.job_timeout = std::chrono::seconds(5);  // generous: only the dead-worker test needs it
  c.epoch = 0x5eed0001;
  c.fallback = Fallback::kOff;  // these tests are about the network path (fallback_test.cpp)
  return c;
}

// Forwards the switch model's results into the in-process network.
class NetworkSink final : public sim::PacketSink {
 public:
  explicit NetworkSink(const InprocNetwork::SendFn& send) : send_(send) {}
  void send(const Endpoint& destination, std::span<const std::byte> packet, std::uint8_t) override {
    send_(destination, packet);
  }

 private:
  const InprocNetwork::SendFn& send_;
};

// The switch model as the network's aggregator.
struct SwitchedNetwork {
  explicit SwitchedNetwork(const JobSpec& job, InprocOptions options = {})
      : model(64, 1024),
        net(
            [this](const Endpoint& from, std::span<const std::byte> packet,
                   const InprocNetwork::SendFn& send) {
              NetworkSink sink(send);
              model.process(from, packet, sink);
            },
            options) {
    model.add_job(job);
  }
  sim::SwitchModel model;
  InprocNetwork net;
};

// Runs body(rank, communicator) on one thread per rank; returns each rank's exception.
std::vector<std::exception_ptr> run_ranks(InprocNetwork& net, const JobSpec& job,
                                          const std::function<Config(int)>& config,
                                          const std::function<void(int, Communicator&)>& body) {
  const int n = static_cast<int>(job.world_size());
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        Communicator comm(config(r), net.attach(job.workers[r].address));
        body(r, comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
}

std::vector<std::int32_t> random_ints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng());  // full range: sums wrap
  return v;
}

std::vector<std::int32_t> wrapping_sum(const std::vector<std::vector<std::int32_t>>& inputs) {
  std::vector<std::int32_t> sum(inputs[0].size());
  for (std::size_t i = 0; i < sum.size(); ++i) {
    std::uint32_t s = 0;
    for (const auto& in : inputs) s += static_cast<std::uint32_t>(in[i]);
    sum[i] = static_cast<std::int32_t>(s);
  }
  return sum;
}

// Floats whose magnitude changes from chunk to chunk and from seed to seed (so the workers'
// block exponents differ and the max-reduced one matters), with an all-zero chunk.
std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int chunk = static_cast<int>(i / kPerPacket);
    const int scale = chunk % 7 * 5 - 15 + static_cast<int>((chunk + seed) % 4);
    v[i] = chunk == 2 ? 0.0f : std::ldexp(u(rng), scale);
  }
  return v;
}

// Checks got against the exact sum within the codec's bound for each chunk's global exponent.
void expect_within_bound(const std::vector<float>& got,
                         const std::vector<std::vector<float>>& inputs, std::size_t per_packet) {
  const int world = static_cast<int>(inputs.size());
  for (std::size_t base = 0; base < got.size(); base += per_packet) {
    const std::size_t n = std::min(per_packet, got.size() - base);
    std::int16_t e = wire::kExponentNone;
    for (const auto& in : inputs)
      e = std::max(e, codec::block_exponent(std::span<const float>(in.data() + base, n)));
    const double bound = e == wire::kExponentNone ? 0.0 : codec::error_bound(e, world);
    for (std::size_t i = base; i < base + n; ++i) {
      double want = 0;
      for (const auto& in : inputs) want += in[i];
      ASSERT_LE(std::fabs(got[i] - want), bound)
          << "element " << i << " got " << got[i] << " want " << want << " exponent " << e;
    }
  }
}

TEST(CommunicatorTest, Int32IsExactForEverySizeInOneCommunicator) {
  const JobSpec job = test_job(4);
  SwitchedNetwork sw(job);
  // Consecutive operations of different sizes share the packet numbering and the slots.
  const std::vector<std::size_t> sizes = {1, 7, 255, 256, 257, 64 * kWindow + 3, 5000};
  std::vector<std::vector<std::vector<std::int32_t>>> inputs(sizes.size());
  for (std::size_t s = 0; s < sizes.size(); ++s)
    for (int r = 0; r < 4; ++r) inputs[s].push_back(random_ints(sizes[s], 100 * s + r));
  std::vector<std::vector<std::vector<std::int32_t>>> results(4);

  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        EXPECT_EQ(comm.rank(), r);
        EXPECT_EQ(comm.world_size(), 4);
        for (std::size_t s = 0; s < sizes.size(); ++s) {
          auto data = inputs[s][r];
          comm.allreduce(std::span<std::int32_t>(data));
          results[r].push_back(std::move(data));
        }
      }));
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const auto want = wrapping_sum(inputs[s]);
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(results[r][s], want) << "size " << sizes[s] << " rank " << r;
  }
  // Retransmissions (a slow thread can trigger one) are the only thing the switch may drop.
  EXPECT_EQ(sw.model.counters().dropped_total(),
            sw.model.counters().drops(sim::DropReason::kDuplicate));
}

TEST(CommunicatorTest, Fp32BlockFloatIsWithinTheBound) {
  const JobSpec job = test_job(4);
  SwitchedNetwork sw(job);
  // Smaller than one window, exactly a window, and many windows with a partial last chunk.
  const std::vector<std::size_t> sizes = {10, 64 * kWindow, 20011};
  std::vector<std::vector<std::vector<float>>> inputs(sizes.size());
  for (std::size_t s = 0; s < sizes.size(); ++s)
    for (int r = 0; r < 4; ++r) inputs[s].push_back(random_floats(sizes[s], 7 * s + r));
  std::vector<std::vector<std::vector<float>>> results(4);

  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        for (std::size_t s = 0; s < sizes.size(); ++s) {
          auto data = inputs[s][r];
          comm.allreduce(std::span<float>(data));
          results[r].push_back(std::move(data));
        }
      }));
  for (std::size_t s = 0; s < sizes.size(); ++s)
    for (int r = 0; r < 4; ++r) {
      SCOPED_TRACE(::testing::Message() << "size " << sizes[s] << " rank " << r);
      expect_within_bound(results[r][s], inputs[s], kPerPacket);
      // Every worker gets the same bits: they all dequantize the same sums.
      EXPECT_EQ(results[r][s], results[0][s]);
    }
}

TEST(CommunicatorTest, Fp32NonFiniteInputMakesTheChunkNaN) {
  const JobSpec job = test_job(2);
  SwitchedNetwork sw(job);
  std::vector<std::vector<float>> data(2, std::vector<float>(3 * kPerPacket, 1.0f));
  data[1][kPerPacket + 5] = INFINITY;  // chunk 1 of rank 1
  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) { comm.allreduce(std::span<float>(data[r])); }));
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < data[r].size(); ++i) {
      if (i / kPerPacket == 1)
        EXPECT_TRUE(std::isnan(data[r][i])) << i;
      else
        EXPECT_NEAR(data[r][i], 2.0f, codec::error_bound(1, 2)) << i;
    }
}

TEST(CommunicatorTest, AsyncHandlesRunInCallOrder) {
  const JobSpec job = test_job(3);
  SwitchedNetwork sw(job);
  std::vector<std::vector<std::int32_t>> a(3), c(3);
  std::vector<std::vector<float>> b(3);
  for (int r = 0; r < 3; ++r) {
    a[r] = random_ints(1000, r);
    b[r] = random_floats(700, 10 + r);
    c[r] = random_ints(3, 20 + r);
  }
  const auto want_a = wrapping_sum(a), want_c = wrapping_sum(c);
  const auto inputs_b = b;
  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        Handle ha = comm.allreduce_async(std::span<std::int32_t>(a[r]));
        Handle hb = comm.allreduce_async(std::span<float>(b[r]));
        Handle hc = comm.allreduce_async(std::span<std::int32_t>(c[r]));
        EXPECT_TRUE(ha.valid());
        hc.wait();  // the last one done means the earlier ones are done
        EXPECT_TRUE(ha.ready());
        EXPECT_TRUE(hb.ready());
        hb.wait();
        ha.wait();
        ha.wait();  // waiting twice is fine
        EXPECT_EQ(comm.stats().operations, 3u);
      }));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(a[r], want_a);
    EXPECT_EQ(c[r], want_c);
    expect_within_bound(b[r], inputs_b, kPerPacket);
  }
}

TEST(CommunicatorTest, DestructorFinishesQueuedOperations) {
  const JobSpec job = test_job(2);
  SwitchedNetwork sw(job);
  std::vector<std::vector<std::int32_t>> data = {random_ints(3000, 1), random_ints(3000, 2)};
  const auto want = wrapping_sum(data);
  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        comm.allreduce_async(std::span<std::int32_t>(data[r]));  // handle dropped at once
      }));
  EXPECT_EQ(data[0], want);
  EXPECT_EQ(data[1], want);
}

TEST(CommunicatorTest, EmptyTensorsAndEmptyHandles) {
  const JobSpec job = test_job(1);
  SwitchedNetwork sw(job);
  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },
      [&](int, Communicator& comm) {
        comm.allreduce(std::span<float>());
        comm.allreduce(std::span<std::int32_t>());
        std::vector<std::int32_t> one = {42};
        comm.allreduce(std::span<std::int32_t>(one));
        EXPECT_EQ(one[0], 42);  // one worker: the sum is its own tensor
      }));
  Handle empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.ready());
  EXPECT_THROW(empty.wait(), Error);
}

struct LossCase {
  const char* name;
  InprocOptions network;
  double config_loss;  // the communicator's own with_loss()
  friend void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }
};

class CommunicatorLossTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(CommunicatorLossTest, ResultsStayExactAndRetransmissionsHappen) {
  const JobSpec job = test_job(4);
  SwitchedNetwork sw(job, GetParam().network);
  std::vector<std::vector<std::int32_t>> ints(4);
  std::vector<std::vector<float>> floats(4);
  for (int r = 0; r < 4; ++r) {
    ints[r] = random_ints(6000, 50 + r);
    floats[r] = random_floats(3000, 60 + r);
  }
  const auto want = wrapping_sum(ints);
  const auto float_inputs = floats;
  std::vector<EngineStats> stats(4);
  std::vector<TransportCounters> counters(4);
  expect_no_errors(run_ranks(
      sw.net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.loss = GetParam().config_loss;
        c.loss_seed = 5;
        return c;
      },
      [&](int r, Communicator& comm) {
        comm.allreduce(std::span<std::int32_t>(ints[r]));
        comm.allreduce(std::span<float>(floats[r]));
        stats[r] = comm.stats();
        counters[r] = comm.transport_counters();
      }));
  std::uint64_t retransmissions = 0, injected = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ints[r], want) << "rank " << r;
    expect_within_bound(floats[r], float_inputs, kPerPacket);
    retransmissions += stats[r].retransmissions;
    injected += counters[r].injected_drops;
    EXPECT_EQ(stats[r].operations, 2u);
  }
  // Over a thousand packets each way at 2 % or more: some are lost, and each loss is repaired by
  // a retransmission.
  EXPECT_GT(sw.net.counters().dropped + injected, 0u);
  EXPECT_GT(retransmissions, 0u);
  if (GetParam().network.reorder > 0) {
    EXPECT_GT(sw.net.counters().reordered, 0u);
  }
  // The switch drops only copies of packets it has seen: within their round or after it.
  const sim::SwitchCounters& sc = sw.model.counters();
  EXPECT_EQ(sc.dropped_total(),
            sc.drops(sim::DropReason::kDuplicate) + sc.drops(sim::DropReason::kStale));
  if (GetParam().config_loss > 0)
    EXPECT_GT(injected, 0u);
  else
    EXPECT_EQ(injected, 0u);
}

// Reordering included: a retransmission overtaken by its sender's next packet reaches the
// switch model after its round, and the round's seq keeps it out of the next one.
INSTANTIATE_TEST_SUITE_P(
    Loss, CommunicatorLossTest,
    ::testing::Values(
        LossCase{"network_2pct", {.loss = 0.02, .seed = 11}, 0.0},
        LossCase{"network_10pct_reorder", {.loss = 0.10, .reorder = 0.05, .seed = 12}, 0.0},
        LossCase{"network_5pct_duplicate_reorder",
                 {.loss = 0.05, .duplicate = 0.05, .reorder = 0.10, .seed = 13},
                 0.0},
        LossCase{"transport_5pct_network_reorder", {.reorder = 0.05, .seed = 14}, 0.05}),
    [](const auto& info) { return std::string(info.param.name); });

// The aggregator restarts (loses every round, the job stays installed) three times during the
// first of two all-reduces under 5 % loss. Workers that lost a completed round's result send it
// again into an aggregator that no longer has it; the workers that had it send their copy again
// along with their stuck next packet on that slot (Engine::kRecoveryAfter), and the sums stay
// exact.
TEST(CommunicatorTest, AnAggregatorThatRestartsMidRunLosesNoSum) {
  const JobSpec job = test_job(4);
  sim::SwitchModel model(64, 1024);
  model.add_job(job);
  std::uint64_t packets = 0, restarts = 0;
  InprocNetwork net(
      [&](const Endpoint& from, std::span<const std::byte> packet,
          const InprocNetwork::SendFn& send) {
        // Not near the end: the last packets of a communicator's last all-reduce cannot be
        // recovered (wire-format.md, "A restarted aggregator").
        if (++packets % 700 == 0 && restarts < 3) {
          model.replace_jobs(std::span<const JobSpec>(&job, 1));  // a restart: empty slots
          ++restarts;
        }
        NetworkSink sink(send);
        model.process(from, packet, sink);
      },
      {.loss = 0.05, .seed = 21});
  std::vector<std::vector<std::int32_t>> ints(4);
  std::vector<std::vector<float>> floats(4);
  for (int r = 0; r < 4; ++r) {
    ints[r] = random_ints(40000, 70 + r);
    floats[r] = random_floats(20000, 80 + r);
  }
  const auto want = wrapping_sum(ints);
  const auto float_inputs = floats;
  std::vector<EngineStats> stats(4);
  expect_no_errors(run_ranks(
      net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        comm.allreduce(std::span<std::int32_t>(ints[r]));
        comm.allreduce(std::span<float>(floats[r]));
        stats[r] = comm.stats();
      }));
  EXPECT_EQ(restarts, 3u);
  std::uint64_t recovery = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ints[r], want) << "rank " << r;
    expect_within_bound(floats[r], float_inputs, kPerPacket);
    recovery += stats[r].recovery_resends;
  }
  EXPECT_GT(recovery, 0u);
}

// ---- aggregation trees ------------------------------------------------------------------------

// A job on one tree: leaf i has leaves[i] workers (consecutive ranks); the leaves hang under the
// root, or (three levels) under two middle aggregators that hang under the root. Each
// aggregator takes the tree's slots from its own base.
JobSpec tree_job(const std::vector<int>& leaves, int levels,
                 const std::vector<std::uint32_t>& weights = {1}) {
  int n = 0;
  for (const int k : leaves) n += k;
  JobSpec job = make_local_job(kJobId, static_cast<std::uint16_t>(n), 41000, 0, 0, kPerPacket,
                               Endpoint::parse("127.0.0.1:20033"));
  job.aggregator.reset();
  job.slot_count = 0;
  TreeSpec t;
  t.job_id = 40;
  t.window = kWindow;
  const auto node = [&](const std::string& name, std::uint16_t port, std::uint16_t base,
                        std::optional<std::size_t> parent) {
    TreeNode a;
    a.name = name;
    a.address = Endpoint{0x7F000002, port};
    a.slot_base = base;
    a.parent = parent;
    t.aggregators.push_back(a);
    return t.aggregators.size() - 1;
  };
  const std::size_t root = node("root", 20000, 100, std::nullopt);
  t.weight = weights[0];
  std::vector<std::size_t> mids;
  if (levels == 3) {
    mids.push_back(node("mid0", 20001, 7, root));
    mids.push_back(node("mid1", 20002, 0, root));
  }
  std::uint16_t rank = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const std::size_t parent = mids.empty() ? root : mids[i % mids.size()];
    const std::size_t leaf = node(fmt::format("leaf{}", i), static_cast<std::uint16_t>(20010 + i),
                                  static_cast<std::uint16_t>(3 * i), parent);
    for (int k = 0; k < leaves[i]; ++k) t.aggregators[leaf].workers.push_back(rank++);
  }
  job.trees.push_back(t);
  // Further trees (PANAMA): the same leaves (their slots from 40 on) under roots of their own.
  for (std::size_t k = 1; k < weights.size(); ++k) {
    TreeSpec more = t;
    more.job_id = static_cast<std::uint16_t>(t.job_id + k);
    more.weight = weights[k];
    more.window = static_cast<std::uint16_t>(kWindow / 2);  // each tree has its own window
    for (TreeNode& a : more.aggregators) {
      if (a.name == "root") {
        a.address.port = static_cast<std::uint16_t>(20100 + k);
        a.name = fmt::format("root{}", k);
      } else if (a.name.rfind("leaf", 0) == 0) {
        a.slot_base = static_cast<std::uint16_t>(40 * k + a.slot_base);
      } else {
        a.address.port = static_cast<std::uint16_t>(a.address.port + 200 * k);  // mids
      }
    }
    job.trees.push_back(more);
  }
  return parse_job(to_json(job), "tree job");  // through the format: what a file would give
}

// A tree of switch models in one process. A worker's packet goes to its leaf's model; what a
// model sends to another aggregator's address is processed by that model at once (lost with
// probability `inner_loss`), and what it sends to a worker goes into the network.
struct TreeNetwork {
  TreeNetwork(const JobSpec& job, InprocOptions options, double inner_loss)
      : inner_loss(inner_loss),
        rng(options.seed * 7 + 1),
        net(
            [this](const Endpoint& from, std::span<const std::byte> packet,
                   const InprocNetwork::SendFn& send) {
              if (before_packet) before_packet();
              // The packet's job_id says its tree, the tree and the sender its aggregator.
              const std::uint16_t job_id =
                  packet.size() >= 6 ? wire::load_be16(packet.data() + wire::offset::kJobId) : 0;
              const auto leaf = leaf_of.find({job_id, from.port});
              if (leaf == leaf_of.end()) return;  // no tree's: lost
              deliver(leaf->second, from, packet, send);
            },
            options) {
    // A switch can be in several trees (same address): it holds each tree's part as a job.
    for (std::size_t k = 0; k < job.trees.size(); ++k)
      for (const TreeNode& a : job.trees[k].aggregators) {
        auto& model = models[a.address.port];
        if (!model) model = std::make_unique<sim::SwitchModel>(256, 1024);
        model->add_job(aggregator_view(job, k, a.name));
      }
    for (std::size_t k = 0; k < job.trees.size(); ++k)
      for (std::uint16_t r = 0; r < job.world_size(); ++r)
        leaf_of[{job.trees[k].job_id, job.workers[r].address.port}] =
            worker_view(job, k, r).job.aggregator->port;
  }

  void deliver(std::uint16_t at, const Endpoint& from, std::span<const std::byte> packet,
               const InprocNetwork::SendFn& send) {
    sim::CollectingSink sink;
    models.at(at)->process(from, packet, sink);
    for (const auto& out : sink.packets) {
      if (models.count(out.destination.port) && out.destination.ip == 0x7F000002) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < inner_loss) {
          ++inner_dropped;
          continue;
        }
        deliver(out.destination.port, Endpoint{0x7F000002, at}, out.bytes, send);
      } else {
        send(out.destination, out.bytes);
      }
    }
  }

  sim::SwitchModel& model(const JobSpec& job, std::string_view name, std::size_t tree = 0) {
    const TreeSpec& t = job.trees[tree];
    return *models.at(t.aggregators[*find_tree_node(t, name)].address.port);
  }

  // Runs before each packet from a worker, under the network's lock (a test's restarts).
  std::function<void()> before_packet;
  double inner_loss;
  std::mt19937_64 rng;
  std::uint64_t inner_dropped = 0;
  std::map<std::uint16_t, std::unique_ptr<sim::SwitchModel>> models;  // by aggregator port
  // (tree's job_id, worker port) -> the port of the worker's aggregator in that tree
  std::map<std::pair<std::uint16_t, std::uint16_t>, std::uint16_t> leaf_of;
  InprocNetwork net;
};

TEST(TreeTest, TheViewsOfATreeJob) {
  const JobSpec job = tree_job({2, 3, 3}, 3);
  ASSERT_EQ(job.trees.size(), 1u);
  // leaf1 (under mid1): ranks 2..4 as its 0..2, a child of mid1 as mid1's rank 0 (mid1 has no
  // workers of its own).
  const JobSpec leaf1 = aggregator_view(job, 0, "leaf1");
  EXPECT_EQ(leaf1.job_id, 40);
  EXPECT_EQ(leaf1.slot_base, 3);
  EXPECT_EQ(leaf1.slot_count, kWindow);
  ASSERT_EQ(leaf1.workers.size(), 3u);
  EXPECT_EQ(leaf1.workers[0].address, job.workers[2].address);
  ASSERT_TRUE(leaf1.parent);
  EXPECT_EQ(leaf1.parent->address.port, 20002);
  EXPECT_EQ(leaf1.parent->rank, 0);
  EXPECT_EQ(leaf1.parent->slot_base, 0);
  const JobSpec root = aggregator_view(job, 0, "root");
  EXPECT_FALSE(root.parent);
  ASSERT_EQ(root.workers.size(), 2u);  // mid0 (leaves 0 and 2: 5 workers), mid1 (leaf 1: 3)
  EXPECT_EQ(root.workers[0].covers, 5);
  EXPECT_EQ(root.workers[1].covers, 3);
  EXPECT_EQ(root.covered(), 8u);
  const WorkerView w = worker_view(job, 0, 6);  // leaf2's second worker
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.job.aggregator->port, 20012);
  EXPECT_EQ(w.job.parent->address.port, 20001);  // leaf2 hangs under mid0
  Config c = test_config(job, 6);
  EXPECT_EQ(c.engine_params().rank, 1);
  EXPECT_EQ(c.engine_params().job_id, 40);
  EXPECT_EQ(c.engine_params().slot_base, 6);
  EXPECT_EQ(c.aggregator_address().port, 20012);
  EXPECT_NO_THROW(c.validate());
}

// A leaf's own file stands for its subtree only: block floating point on it would quantize for
// too few workers, so an fp32 all-reduce as int32-bfp is refused (int32 is not).
TEST(TreeTest, BlockFloatingPointOnALeafsOwnFileIsRefused) {
  const JobSpec job = tree_job({2, 3, 3}, 3);
  JobSpec leaf1 = aggregator_view(job, 0, "leaf1");
  ASSERT_TRUE(leaf1.parent);
  leaf1.aggregator = Endpoint{0x7F000001, 20011};
  InprocNetwork net(
      [](const Endpoint&, std::span<const std::byte>, const InprocNetwork::SendFn&) {});
  Config c = test_config(leaf1, 0);
  c.float_wire = FloatWire::kBlockInt32;
  Communicator comm(c, net.attach(leaf1.workers[0].address));
  std::vector<float> data(100, 1.0f);
  EXPECT_THAT(testing::error_of([&] { comm.allreduce(std::span(data)); }),
              AllOf(HasSubstr("needs the whole job's worker count"), HasSubstr("has a parent")));
}

// int32 through two- and three-level trees is exact, with loss on every hop: between workers
// and leaves (the network) and between aggregators.
class TreeLossTest : public ::testing::TestWithParam<int> {};

TEST_P(TreeLossTest, Int32IsExactAndFp32WithinTheBound) {
  const int levels = GetParam();
  const JobSpec job = tree_job({2, 3, 3}, levels);
  TreeNetwork tree(job, {.loss = 0.03, .seed = static_cast<std::uint64_t>(levels)}, 0.03);
  const int n = static_cast<int>(job.world_size());
  std::vector<std::vector<std::int32_t>> ints(n);
  std::vector<std::vector<float>> floats(n);
  for (int r = 0; r < n; ++r) {
    ints[r] = random_ints(20000, 300 + r);
    floats[r] = random_floats(9000, 400 + r);
  }
  const auto want = wrapping_sum(ints);
  const auto float_inputs = floats;
  expect_no_errors(run_ranks(
      tree.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        EXPECT_EQ(comm.world_size(), n);
        comm.allreduce(std::span<std::int32_t>(ints[r]));
        comm.allreduce(std::span<float>(floats[r]));
      }));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ints[r], want) << "rank " << r;
    expect_within_bound(floats[r], float_inputs, kPerPacket);
  }
  EXPECT_GT(tree.inner_dropped, 0u);
  const auto& leaf = tree.model(job, "leaf1").counters();
  EXPECT_GT(leaf.sent_to_parent, 0u);
  EXPECT_GT(leaf.resent_to_parent, 0u);  // loss above the leaf, recovered from below
  EXPECT_EQ(leaf.results_from_parent, leaf.sent_to_parent);
  EXPECT_EQ(tree.model(job, "root").counters().sent_to_parent, 0u);
  EXPECT_GT(tree.model(job, "root").counters().completions, 0u);
}

INSTANTIATE_TEST_SUITE_P(Levels, TreeLossTest, ::testing::Values(2, 3),
                         [](const auto& info) { return fmt::format("Levels{}", info.param); });

// The root and a leaf restart (lose every round, jobs kept) during a run under loss: the
// workers' retransmissions and recovery copies, passed up by the leaves, rebuild what was lost.
TEST(TreeTest, RestartsOfTheRootAndOfALeafLoseNoSum) {
  const JobSpec job = tree_job({2, 2, 3}, 2);
  TreeNetwork tree(job, {.loss = 0.03, .seed = 5}, 0.02);
  std::uint64_t packets = 0;
  int restarts = 0;
  auto& root = tree.model(job, "root");
  auto& leaf = tree.model(job, "leaf2");
  const JobSpec root_view = aggregator_view(job, 0, "root");
  const JobSpec leaf_view = aggregator_view(job, 0, "leaf2");
  tree.before_packet = [&] {
    if (++packets % 900 == 0 && restarts < 4) {
      if (restarts % 2 == 0)
        root.replace_jobs(std::span<const JobSpec>(&root_view, 1));
      else
        leaf.replace_jobs(std::span<const JobSpec>(&leaf_view, 1));
      ++restarts;
    }
  };
  const int n = static_cast<int>(job.world_size());
  std::vector<std::vector<std::int32_t>> ints(n);
  for (int r = 0; r < n; ++r) ints[r] = random_ints(30000, 500 + r);
  const auto want = wrapping_sum(ints);
  std::vector<std::vector<std::int32_t>> second(n);
  for (int r = 0; r < n; ++r) second[r] = random_ints(3000, 600 + r);
  const auto want_second = wrapping_sum(second);
  expect_no_errors(run_ranks(
      tree.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        comm.allreduce(std::span<std::int32_t>(ints[r]));
        comm.allreduce(std::span<std::int32_t>(second[r]));
      }));
  EXPECT_EQ(restarts, 4);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ints[r], want) << "rank " << r;
    EXPECT_EQ(second[r], want_second) << "rank " << r;
  }
}

// PANAMA's several trees per job: the leaves are in every tree, each tree has a root of its own,
// its own slots and window; the chunks go to the trees by weight. Sums exact (int32) and within
// the bound (fp32, also a tensor smaller than a tree's window), under loss, and each root's
// share of the rounds is its weight's.
TEST(TreeTest, AJobOnSeveralTreesSplitsItsChunksByWeight) {
  const JobSpec job = tree_job({2, 3}, 2, {3, 1});
  ASSERT_EQ(job.trees.size(), 2u);
  TreeNetwork tree(job, {.loss = 0.02, .seed = 9}, 0.02);
  const int n = static_cast<int>(job.world_size());
  std::vector<std::vector<std::int32_t>> ints(n);
  std::vector<std::vector<float>> floats(n), small(n);
  for (int r = 0; r < n; ++r) {
    ints[r] = random_ints(64 * 400, 700 + r);  // 400 chunks: 300 on tree 0, 100 on tree 1
    floats[r] = random_floats(7000, 800 + r);
    small[r] = random_floats(5 * kPerPacket, 900 + r);  // fewer chunks than either window
  }
  const auto want = wrapping_sum(ints);
  const auto float_inputs = floats, small_inputs = small;
  std::vector<EngineStats> stats(n);
  expect_no_errors(run_ranks(
      tree.net, job, [&](int r) { return test_config(job, r); },
      [&](int r, Communicator& comm) {
        comm.allreduce(std::span<std::int32_t>(ints[r]));
        comm.allreduce(std::span<float>(floats[r]));
        comm.allreduce(std::span<float>(small[r]));
        stats[r] = comm.stats();
      }));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ints[r], want) << "rank " << r;
    expect_within_bound(floats[r], float_inputs, kPerPacket);
    expect_within_bound(small[r], small_inputs, kPerPacket);
    EXPECT_GT(stats[r].retransmissions, 0u);
  }
  const std::uint64_t root0 = tree.model(job, "root", 0).counters().completions;
  const std::uint64_t root1 = tree.model(job, "root1", 1).counters().completions;
  EXPECT_GT(root1, 0u);
  // int32: 300 and 100 rounds; fp32 block floating point adds each tree's window of exponent
  // packets (16 and 8) to its 83 and 27 chunks of 7000 elements, and 4 + 4 and 1 + 1 rounds for
  // the 5 chunks of the small tensor (two phases on each tree).
  EXPECT_EQ(root0, 300u + (83 + kWindow) + 8);
  EXPECT_EQ(root1, 100u + (27 + kWindow / 2) + 2);
}

TEST(ChunkSplitTest, TreesTakeChunksByWeightEvenlyInterleaved) {
  const std::vector<std::uint32_t> equal = {1, 1, 1};
  const ChunkSplit three(equal);
  for (std::uint64_t c = 0; c < 30; ++c) EXPECT_EQ(three.tree_of(c), c % 3);
  const std::vector<std::uint32_t> weights = {3, 1};
  const ChunkSplit split(weights);
  EXPECT_EQ(split.trees(), 2u);
  std::vector<std::size_t> first;
  for (std::uint64_t c = 0; c < 8; ++c) first.push_back(split.tree_of(c));
  EXPECT_EQ(first, (std::vector<std::size_t>{0, 0, 1, 0, 0, 0, 1, 0}));
  for (const std::uint64_t chunks : {0u, 1u, 3u, 4u, 5u, 401u}) {
    std::vector<int> seen(chunks, 0);
    for (std::size_t k = 0; k < 2; ++k)
      for (std::uint64_t j = 0; j < split.count(k, chunks); ++j) {
        const std::uint64_t g = split.global(k, j);
        ASSERT_LT(g, chunks);
        EXPECT_EQ(split.tree_of(g), k);
        ++seen[g];
      }
    for (std::uint64_t c = 0; c < chunks; ++c) EXPECT_EQ(seen[c], 1) << "chunk " << c;
  }
  EXPECT_EQ(split.count(0, 400), 300u);
  const std::vector<std::uint32_t> zero = {1, 0};
  EXPECT_THROW(ChunkSplit{zero}, Error);
  EXPECT_EQ(ChunkSplit({}).trees(), 1u);
}

TEST(CommunicatorTest, DeadWorkerMakesTheOthersTimeOutNamingSlots) {
  const JobSpec job = test_job(4);
  SwitchedNetwork sw(job);
  std::vector<std::string> messages(4);
  std::vector<std::string> second(4);
  const auto errors = run_ranks(
      sw.net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.job_timeout = std::chrono::milliseconds(200);
        return c;
      },
      [&](int r, Communicator& comm) {
        if (r == 3) return;  // never calls
        std::vector<std::int32_t> data(500, r);
        try {
          comm.allreduce(std::span<std::int32_t>(data));
          ADD_FAILURE() << "rank " << r << " completed without rank 3";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), Errc::kTimeout);
          messages[r] = e.what();
        }
        // The workers' numbering has diverged: later operations fail at once, same code.
        try {
          comm.allreduce(std::span<std::int32_t>(data));
          ADD_FAILURE() << "rank " << r << " second operation completed";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), Errc::kTimeout);
          second[r] = e.what();
        }
      });
  expect_no_errors(errors);
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(messages[r], AllOf(HasSubstr("timed out"), HasSubstr("slot 8 set 0 seq 0"),
                                   HasSubstr(fmt::format("rank {}", r))));
    EXPECT_THAT(second[r], AllOf(HasSubstr("earlier all-reduce"), HasSubstr("timed out")));
  }
}

// An fp32-capable aggregator (as the FPGA will be): sums fp32 payloads per (slot, set) in rank
// order once all contributions of a round (same seq) are in. A retransmission from a rank that
// already contributed gets the stored result if the round is complete and is ignored otherwise,
// so a slow thread's retransmissions do not change the sum.
class Fp32Adder {
 public:
  explicit Fp32Adder(const JobSpec& job) : job_(job) {}
  void operator()(const Endpoint&, std::span<const std::byte> packet,
                  const InprocNetwork::SendFn& send) {
    const auto d = wire::decode(packet);
    ASSERT_TRUE(d) << wire::to_string(d.error);
    ASSERT_EQ(d.header.dtype, wire::DataType::kFp32);
    const std::size_t n = job_.world_size();
    Round& round = rounds_[{d.header.slot, d.header.set}];
    if (round.parts.empty() || round.seq != d.header.seq) {
      round = Round{d.header.seq, std::vector<std::vector<float>>(n), std::vector<bool>(n), 0, {}};
    }
    const auto reply = [&](const WorkerSpec& w) {
      wire::Header h = d.header;
      h.type = wire::MsgType::kResult;
      h.rank = w.rank;
      ASSERT_TRUE(wire::encode_header(h, round.result));
      send(w.address, round.result);
    };
    if (round.have[d.header.rank]) {
      if (round.arrived == n) reply(job_.workers[d.header.rank]);
      return;
    }
    round.have[d.header.rank] = true;
    round.parts[d.header.rank].resize(d.header.count);
    codec::load_be(d.payload.data(), std::span<float>(round.parts[d.header.rank]));
    if (++round.arrived < n) return;
    std::vector<float> sum(d.header.count, 0.0f);
    for (const auto& part : round.parts)
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    round.result.resize(wire::kHeaderSize + sum.size() * 4);
    codec::store_be(std::span<const float>(sum), round.result.data() + wire::kHeaderSize);
    for (const auto& w : job_.workers) reply(w);
  }

 private:
  struct Round {
    std::uint32_t seq = 0;
    std::vector<std::vector<float>> parts;
    std::vector<bool> have;
    std::size_t arrived = 0;
    std::vector<std::byte> result;
  };
  JobSpec job_;
  std::map<std::pair<int, int>, Round> rounds_;
};

TEST(CommunicatorTest, Fp32OnTheWireToAnFp32Aggregator) {
  const JobSpec job = test_job(3);
  InprocNetwork net{Fp32Adder(job)};
  std::vector<std::vector<float>> data(3);
  for (int r = 0; r < 3; ++r) data[r] = random_floats(1234, 90 + r);
  std::vector<float> want(1234, 0.0f);
  for (std::size_t i = 0; i < want.size(); ++i)
    for (int r = 0; r < 3; ++r) want[i] += data[r][i];  // the adder's order: rank 0, 1, 2
  expect_no_errors(run_ranks(
      net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.float_wire = FloatWire::kFp32;
        return c;
      },
      [&](int r, Communicator& comm) { comm.allreduce(std::span<float>(data[r])); }));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(data[r], want);
}

// An fp32 all-reduce of 3 packets, float_wire `wire`, through an aggregator whose results no
// worker can accept: it fails with a transport error naming `what`, and the buffer keeps its
// values.
void expect_fails_loudly(InprocNetwork& net, const JobSpec& job, FloatWire wire,
                         const std::string& what) {
  expect_no_errors(run_ranks(
      net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.float_wire = wire;
        return c;
      },
      [&](int, Communicator& comm) {
        std::vector<float> data(3 * kPerPacket, 0.5f);
        try {
          comm.allreduce(std::span<float>(data));
          ADD_FAILURE() << "completed although its results were wrong: " << what;
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), Errc::kTransport);
          EXPECT_THAT(e.what(), HasSubstr(what));
        }
        EXPECT_EQ(data, std::vector<float>(3 * kPerPacket, 0.5f));
      }));
}

// An aggregator that makes of each round what reduce_round (the host fallback's model of the
// aggregators) makes of it, once every rank's contribution is in; a retransmission of a complete
// round gets the stored result, of an incomplete one nothing. `scale_offset` is added to the
// results' scale byte (a broken aggregator); `order` names the rank order it adds in.
class RoundAdder {
 public:
  RoundAdder(const JobSpec& job, std::vector<int> order, int scale_offset = 0)
      : job_(job), order_(std::move(order)), scale_offset_(scale_offset) {}
  void operator()(const Endpoint&, std::span<const std::byte> packet,
                  const InprocNetwork::SendFn& send) {
    const auto d = wire::decode(packet);
    ASSERT_TRUE(d) << wire::to_string(d.error);
    const std::size_t n = job_.world_size();
    Round& round = rounds_[{d.header.slot, d.header.set}];
    if (round.parts.empty() || round.seq != d.header.seq)
      round = Round{d.header.seq, std::vector<std::vector<std::byte>>(n), {}};
    const auto reply = [&](const WorkerSpec& w) {
      wire::Header h = round.header;
      h.rank = w.rank;
      ASSERT_TRUE(wire::encode_header(h, round.result));
      send(w.address, round.result);
    };
    auto& mine = round.parts[d.header.rank];
    if (!mine.empty()) {
      if (!round.result.empty()) reply(job_.workers[d.header.rank]);
      return;
    }
    mine.assign(packet.begin(), packet.end());
    for (const auto& part : round.parts)
      if (part.empty()) return;
    std::vector<wire::Decoded> in;
    for (int r : order_) in.push_back(wire::decode(round.parts[r]));
    round.header = d.header;
    round.header.type = wire::MsgType::kResult;
    round.result.resize(d.header.packet_size());
    reduce_round(in, round.header, std::span<std::byte>(round.result).subspan(wire::kHeaderSize));
    round.header.exponent = static_cast<std::int16_t>(round.header.exponent + (scale_offset_ << 8));
    for (const auto& w : job_.workers) reply(w);
  }

 private:
  struct Round {
    std::uint32_t seq = 0;
    std::vector<std::vector<std::byte>> parts;
    std::vector<std::byte> result;
    wire::Header header{};
  };
  JobSpec job_;
  std::vector<int> order_;
  int scale_offset_;
  std::map<std::pair<int, int>, Round> rounds_;
};

// The exact reference's bits for `inputs` cut into chunks of `per_packet`: per chunk, the sum at
// the max of the ranks' block exponents (netagg/exact.hpp).
std::vector<float> exact_reference(const std::vector<std::vector<float>>& inputs,
                                   std::size_t per_packet) {
  std::vector<float> out(inputs[0].size());
  for (std::size_t base = 0; base < out.size(); base += per_packet) {
    const std::size_t n = std::min(per_packet, out.size() - base);
    std::vector<std::span<const float>> views;
    for (const auto& in : inputs) views.emplace_back(in.data() + base, n);
    exact::sum(views, std::span<float>(out).subspan(base, n));
  }
  return out;
}

// fp32-exact: the schedule of block floating point with fp32 on the wire; whatever order the
// aggregator adds in, every rank gets the reference's bits, for a tensor smaller than a window
// (two phases), exactly a window and many windows with a partial last chunk.
TEST(CommunicatorTest, Fp32ExactGivesTheReferenceBitsInEveryOrder) {
  const JobSpec job = test_job(3);
  const std::vector<std::size_t> sizes = {10, 3 * kPerPacket + 5, 64 * kWindow, 20011};
  std::vector<std::vector<std::vector<float>>> inputs(sizes.size());
  for (std::size_t s = 0; s < sizes.size(); ++s)
    for (int r = 0; r < 3; ++r) {
      inputs[s].push_back(random_floats(sizes[s], 11 * s + r));
      if (sizes[s] > 100) inputs[s][r][77] = r == 1 ? -INFINITY : 0.0f;  // a special travels
    }
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2}, std::vector<int>{2, 0, 1}}) {
    InprocNetwork net{RoundAdder(job, order)};
    std::vector<std::vector<std::vector<float>>> results(3);
    expect_no_errors(run_ranks(
        net, job,
        [&](int r) {
          Config c = test_config(job, r);
          c.float_wire = FloatWire::kFp32Exact;
          return c;
        },
        [&](int r, Communicator& comm) {
          for (std::size_t s = 0; s < sizes.size(); ++s) {
            auto data = inputs[s][r];
            comm.allreduce(std::span<float>(data));
            results[r].push_back(std::move(data));
          }
        }));
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const auto want = exact_reference(inputs[s], kPerPacket);
      for (int r = 0; r < 3; ++r) {
        SCOPED_TRACE(::testing::Message() << "size " << sizes[s] << " rank " << r);
        ASSERT_EQ(results[r].size(), sizes.size());
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(results[r][s][i]),
                    std::bit_cast<std::uint32_t>(want[i]))
              << "element " << i;
      }
    }
  }
}

// A result whose scale is not the one the workers converted at comes from a broken aggregator:
// the call fails loudly, naming the field, and the caller's buffer keeps its values.
TEST(CommunicatorTest, AnExactResultAtAnotherScaleFailsTheCallLoudly) {
  const JobSpec job = test_job(1);
  InprocNetwork net{RoundAdder(job, {0}, 1)};
  expect_fails_loudly(net, job, FloatWire::kFp32Exact, "scale code");
}

// An aggregator that adds bf16 as the FPGA aggregator does: each element widened to fp32, the
// contributions of a round added in rank order in fp32, the sum rounded to bf16 (nearest even).
// Every round completes once; a retransmission of a complete round gets the stored result.
class Bf16Adder {
 public:
  explicit Bf16Adder(const JobSpec& job) : job_(job) {}
  void operator()(const Endpoint&, std::span<const std::byte> packet,
                  const InprocNetwork::SendFn& send) {
    const auto d = wire::decode(packet);
    ASSERT_TRUE(d) << wire::to_string(d.error);
    ASSERT_EQ(d.header.dtype, wire::DataType::kBf16);
    const std::size_t n = job_.world_size();
    Round& round = rounds_[{d.header.slot, d.header.set}];
    if (round.parts.empty() || round.seq != d.header.seq)
      round = Round{d.header.seq, std::vector<std::vector<float>>(n), 0, {}};
    const auto reply = [&](const WorkerSpec& w) {
      wire::Header h = d.header;
      h.type = wire::MsgType::kResult;
      h.rank = w.rank;
      ASSERT_TRUE(wire::encode_header(h, round.result));
      send(w.address, round.result);
    };
    auto& part = round.parts[d.header.rank];
    if (!part.empty()) {
      if (round.arrived == n) reply(job_.workers[d.header.rank]);
      return;
    }
    for (std::size_t i = 0; i < d.header.count; ++i) {
      const auto hi = std::to_integer<std::uint32_t>(d.payload[2 * i]);
      const auto lo = std::to_integer<std::uint32_t>(d.payload[2 * i + 1]);
      part.push_back(std::bit_cast<float>(((hi << 8) | lo) << 16));
    }
    if (++round.arrived < n) return;
    round.result.assign(wire::kHeaderSize + 2 * std::size_t{d.header.count}, std::byte{0});
    for (std::size_t i = 0; i < d.header.count; ++i) {
      float sum = 0.0f;
      for (const auto& p : round.parts) sum += p[i];
      const std::uint16_t bits = Bf16::from_float(sum).bits;
      round.result[wire::kHeaderSize + 2 * i] = static_cast<std::byte>(bits >> 8);
      round.result[wire::kHeaderSize + 2 * i + 1] = static_cast<std::byte>(bits & 0xFF);
    }
    for (const auto& w : job_.workers) reply(w);
  }

 private:
  struct Round {
    std::uint32_t seq = 0;
    std::vector<std::vector<float>> parts;
    std::size_t arrived = 0;
    std::vector<std::byte> result;
  };
  JobSpec job_;
  std::map<std::pair<int, int>, Round> rounds_;
};

TEST(Bf16Test, WidensExactlyAndRoundsToNearestEven) {
  EXPECT_EQ(Bf16{0x3F80}.to_float(), 1.0f);
  EXPECT_EQ(Bf16{0xC040}.to_float(), -3.0f);
  EXPECT_EQ(Bf16::from_float(1.0f).bits, 0x3F80);
  EXPECT_EQ(Bf16::from_float(1.0f + 0x1p-8f).bits, 0x3F80);  // a tie: down to the even one
  EXPECT_EQ(Bf16::from_float(1.0f + 0x3p-8f).bits, 0x3F82);  // a tie: up to the even one
  EXPECT_EQ(Bf16::from_float(1.0f + 0x1p-8f + 0x1p-20f).bits, 0x3F81);  // above the tie
  EXPECT_EQ(Bf16::from_float(-0.0f).bits, 0x8000);
  EXPECT_EQ(Bf16::from_float(std::numeric_limits<float>::infinity()).bits, 0x7F80);
  EXPECT_EQ(Bf16::from_float(0x1.FFFFFEp127f).bits, 0x7F80);  // rounds up past the largest bf16
  const Bf16 nan = Bf16::from_float(std::bit_cast<float>(0x7F800001u));  // signalling NaN
  EXPECT_TRUE(std::isnan(nan.to_float()));
  EXPECT_EQ(nan.bits & 0x0040, 0x0040);  // quieted, not rounded to Inf
}

TEST(CommunicatorTest, Bf16ToAnAggregatorThatAddsFloats) {
  const JobSpec job = test_job(3);
  InprocNetwork net{Bf16Adder(job)};
  const std::size_t n = 64 * kWindow * 2 + 7;  // every (slot, set) used, a short last chunk
  std::vector<std::vector<Bf16>> data(3);
  std::vector<Bf16> want(n);
  for (int r = 0; r < 3; ++r)
    for (float x : random_floats(n, 50 + r)) data[r].push_back(Bf16::from_float(x));
  for (std::size_t i = 0; i < n; ++i) {
    float sum = 0.0f;  // the adder's order: rank 0, 1, 2, in fp32
    for (int r = 0; r < 3; ++r) sum += data[r][i].to_float();
    want[i] = Bf16::from_float(sum);
  }
  expect_no_errors(run_ranks(
      net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.float_wire = FloatWire::kFp32;
        return c;
      },
      [&](int r, Communicator& comm) {
        comm.allreduce(std::span<Bf16>(data[r]));
        std::vector<Bf16> async(data[r].begin(), data[r].begin() + 100);
        const Bf16 sum_of_one = async[99];
        auto h = comm.allreduce_async(std::span<Bf16>(async));
        h.wait();  // the sum of the sums: every rank holds the same 100 elements
        EXPECT_EQ(async[99], Bf16::from_float(3 * sum_of_one.to_float()))
            << "rank " << r << " element 99";
      }));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(data[r], want) << "rank " << r;
}

TEST(CommunicatorTest, Bf16IsRefusedByAnIntegerAggregatorAndTheCommunicatorGoesOn) {
  const JobSpec job = test_job(2);
  SwitchedNetwork sw(job);
  expect_no_errors(run_ranks(
      sw.net, job, [&](int r) { return test_config(job, r); },  // float_wire int32-bfp: a switch
      [&](int r, Communicator& comm) {
        std::vector<Bf16> b(10, Bf16::from_float(1.0f));
        EXPECT_THAT(
            testing::error_of([&] { comm.allreduce(std::span<Bf16>(b)); }, Errc::kUnsupported),
            AllOf(HasSubstr("bf16"), HasSubstr("float_wire fp32")));
        EXPECT_THAT(testing::error_of([&] { comm.allreduce_async(std::span<Bf16>(b)); },
                                      Errc::kUnsupported),
                    HasSubstr("int32-bfp"));
        EXPECT_EQ(b[0], Bf16::from_float(1.0f));  // untouched
        std::vector<std::int32_t> v{r + 1, 10};
        comm.allreduce(std::span<std::int32_t>(v));  // still usable
        EXPECT_EQ(v, (std::vector<std::int32_t>{3, 20}));
      }));
}

TEST(CommunicatorTest, ResultsOfTheWrongShapeAreRejectedNotDelivered) {
  // An aggregator that answers every contribution with one element fewer than it got: nothing
  // may land in the caller's buffer, and the operation times out.
  const JobSpec job = test_job(1);
  InprocNetwork net(
      [&](const Endpoint&, std::span<const std::byte> packet, const InprocNetwork::SendFn& send) {
        auto d = wire::decode(packet);
        wire::Header h = d.header;
        h.type = wire::MsgType::kResult;
        h.count = static_cast<std::uint16_t>(h.count - 1);
        std::vector<std::byte> out(h.packet_size(), std::byte{0x7F});
        wire::encode_header(h, out);
        send(job.workers[0].address, out);
      });
  expect_no_errors(run_ranks(
      net, job,
      [&](int r) {
        Config c = test_config(job, r);
        c.job_timeout = std::chrono::milliseconds(100);
        return c;
      },
      [&](int, Communicator& comm) {
        std::vector<std::int32_t> data(100, 1);
        try {
          comm.allreduce(std::span<std::int32_t>(data));
          ADD_FAILURE() << "completed with malformed results";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), Errc::kTimeout);
        }
        EXPECT_GT(comm.stats().rejected, 0u);
        EXPECT_EQ(comm.stats().results, 0u);
        EXPECT_EQ(data, std::vector<std::int32_t>(100, 1));
      }));
}

TEST(CommunicatorTest, ConstructorRejectsBadConfigs) {
  const JobSpec job = test_job(2);
  InprocNetwork net(
      [](const Endpoint&, std::span<const std::byte>, const InprocNetwork::SendFn&) {});
  Config c = test_config(job, 2);
  EXPECT_THROW(Communicator(c, net.attach(job.workers[0].address)), Error);
  c.rank = 0;
  EXPECT_THROW(Communicator(c, nullptr), Error);
  c.epoch.reset();  // without a run token a re-run could take an earlier run's sums
  EXPECT_THAT(testing::error_of([&] { Communicator(c, net.attach(job.workers[0].address)); }),
              HasSubstr("epoch: not set"));
  c.epoch = 0;  // what an unset token reads as
  EXPECT_THAT(testing::error_of([&] { Communicator(c, net.attach(job.workers[0].address)); }),
              HasSubstr("epoch: 0 is not a run token"));
}

// torchrun without --rdzv-id sets TORCHELASTIC_RUN_ID=none in every launch: the refusal names
// it and what to set, instead of taking a token that the next launch repeats.
TEST(CommunicatorTest, ARunIdThatEveryLaunchRepeatsIsRefusedByName) {
  const JobSpec job = test_job(2);
  InprocNetwork net(
      [](const Endpoint&, std::span<const std::byte>, const InprocNetwork::SendFn&) {});
  Config c = test_config(job, 0);
  c.epoch.reset();
  const char* saved = std::getenv("TORCHELASTIC_RUN_ID");
  const std::string old = saved ? saved : "";
  ::setenv("TORCHELASTIC_RUN_ID", "none", 1);
  const std::string error =
      testing::error_of([&] { Communicator(c, net.attach(job.workers[0].address)); });
  if (saved)
    ::setenv("TORCHELASTIC_RUN_ID", old.c_str(), 1);
  else
    ::unsetenv("TORCHELASTIC_RUN_ID");
  EXPECT_THAT(error, HasSubstr("epoch: not set: TORCHELASTIC_RUN_ID='none' is the same in every "
                               "launch"));
  EXPECT_THAT(error, HasSubstr("--rdzv-id"));
}

// A second run of a job against an aggregator that still holds the first run's rounds (same
// slots, same packet numbering from 0) gets its own sums: its fresh packets take the sets over.
// With one epoch for both runs the aggregator would answer the second run's packets with the
// first run's stored results.
TEST(CommunicatorTest, ARerunAgainstARunningAggregatorGetsItsOwnSums) {
  const JobSpec job = test_job(3);
  SwitchedNetwork sw(job);
  const std::size_t n = 64 * kWindow * 3 + 5;  // several uses of every (slot, set)
  for (const std::uint32_t epoch : {0x11111111u, 0x22222222u, 0x33333333u}) {
    std::vector<std::vector<std::int32_t>> inputs, results(3);
    for (int r = 0; r < 3; ++r) inputs.push_back(random_ints(n, epoch + r));
    expect_no_errors(run_ranks(
        sw.net, job,
        [&](int r) {
          Config c = test_config(job, r);
          c.epoch = epoch;
          return c;
        },
        [&](int r, Communicator& comm) {
          results[r] = inputs[r];
          comm.allreduce(std::span<std::int32_t>(results[r]));
        }));
    for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r], wrapping_sum(inputs)) << "rank " << r;
  }
}

}  // namespace
}  // namespace netagg

namespace netagg {
namespace {

TEST(CommunicatorTest, AnExponentNoWorkerCanSendFailsTheCallLoudly) {
  // An aggregator that echoes each contribution with the exponent field set to 500 (outside
  // [kMinExponent, kMaxExponent] and not one of the two markers): the call fails with a
  // transport error naming the exponent, and the caller's buffer is not overwritten with garbage.
  const JobSpec job = test_job(1);
  InprocNetwork net(
      [&](const Endpoint&, std::span<const std::byte> packet, const InprocNetwork::SendFn& send) {
        auto d = wire::decode(packet);
        ASSERT_TRUE(d);
        wire::Header h = d.header;
        h.type = wire::MsgType::kResult;
        h.exponent = 500;
        std::vector<std::byte> out(packet.begin(), packet.end());
        ASSERT_TRUE(wire::encode_header(h, out));
        send(job.workers[0].address, out);
      });
  expect_fails_loudly(net, job, FloatWire::kBlockInt32, "block exponent 500");
}

}  // namespace
}  // namespace netagg

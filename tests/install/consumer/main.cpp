// SPDX-License-Identifier: Apache-2.0
// A program outside the netagg tree, built against the installed library with
// find_package(netagg) (or pkg-config netagg): two workers all-reduce int32 vectors in one
// process, through an aggregator and an in-process network written here from the installed
// headers alone (the wire format, the Transport interface). Exits 0 when both workers hold the
// exact sum.
#include <netagg/communicator.hpp>
#include <netagg/transport.hpp>
#include <netagg/wire.hpp>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace {

// Sends a result packet to the worker of that rank.
using SendFn = std::function<void(std::uint16_t rank, std::span<const std::byte> packet)>;

// Sums the contributions of every worker to a (slot, set, seq) and sends each worker the result.
class Aggregator {
 public:
  explicit Aggregator(const netagg::JobSpec& job) : job_(job) {}

  void on_packet(std::span<const std::byte> packet, const SendFn& send) {
    const auto d = netagg::wire::decode(packet);
    if (!d || d.header.type != netagg::wire::MsgType::kContribution) return;
    auto& round = rounds_[{d.header.slot, d.header.set, d.header.seq}];
    if (round.seen.empty()) {
      round.header = d.header;
      round.sum.assign(d.header.count, 0);
      round.seen.assign(job_.world_size(), false);
    }
    if (d.header.rank >= round.seen.size() || round.seen[d.header.rank]) {
      resend(round, d.header.rank, send);  // a retransmission: its result may have been lost
      return;
    }
    round.seen[d.header.rank] = true;
    for (std::size_t i = 0; i < d.header.count; ++i)
      round.sum[i] += netagg::wire::load_be32(d.payload.data() + 4 * i);
    if (++round.arrived == job_.world_size())
      for (std::uint16_t r = 0; r < job_.world_size(); ++r) resend(round, r, send);
  }

 private:
  struct Round {
    netagg::wire::Header header;
    std::vector<std::uint32_t> sum;
    std::vector<bool> seen;
    std::size_t arrived = 0;
  };

  void resend(const Round& round, std::uint16_t rank, const SendFn& send) {
    if (round.arrived != job_.world_size() || rank >= job_.world_size()) return;
    netagg::wire::Header h = round.header;
    h.type = netagg::wire::MsgType::kResult;
    h.rank = rank;
    std::vector<std::byte> out(h.packet_size());
    netagg::wire::encode_header(h, out);
    for (std::size_t i = 0; i < round.sum.size(); ++i)
      netagg::wire::store_be32(out.data() + netagg::wire::kHeaderSize + 4 * i, round.sum[i]);
    send(rank, out);
  }

  netagg::JobSpec job_;
  std::map<std::tuple<std::uint16_t, std::uint8_t, std::uint32_t>, Round> rounds_;
};

// Every packet a worker sends goes straight to the aggregator; its results wait in the workers'
// inboxes until they receive them. No loss: the engine's retransmissions never run.
class Network {
 public:
  Network(Aggregator& aggregator, std::size_t workers) : aggregator_(aggregator), inbox_(workers) {}

  void to_aggregator(std::span<const std::byte> packet) {
    const std::lock_guard lock(mutex_);
    aggregator_.on_packet(packet, [&](std::uint16_t rank, std::span<const std::byte> result) {
      inbox_[rank].emplace_back(result.begin(), result.end());
    });
    ready_.notify_all();
  }

  std::vector<std::vector<std::byte>> take(std::uint16_t rank, netagg::Duration timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !inbox_[rank].empty(); });
    std::vector<std::vector<std::byte>> out(inbox_[rank].begin(), inbox_[rank].end());
    inbox_[rank].clear();
    return out;
  }

 private:
  Aggregator& aggregator_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::deque<std::vector<std::byte>>> inbox_;
};

// A worker's side of the network, as libnetagg's Transport interface asks.
class NetworkTransport : public netagg::Transport {
 public:
  NetworkTransport(Network& net, std::uint16_t rank) : net_(net), rank_(rank) {}

  void send(std::span<const std::span<const std::byte>> packets) override {
    for (const auto packet : packets) net_.to_aggregator(packet);
  }
  std::size_t receive(netagg::Duration timeout, const PacketHandler& on_packet) override {
    const auto packets = net_.take(rank_, timeout);
    for (const auto& packet : packets) on_packet(packet);
    return packets.size();
  }
  std::string name() const override { return "consumer"; }

 private:
  Network& net_;
  std::uint16_t rank_;
};

}  // namespace

int main() {
  const auto job = netagg::make_local_job(7, 2, 41000, 0, 8, 64, {0x7F000001, 20033});
  Aggregator aggregator(job);
  Network net(aggregator, job.world_size());
  constexpr std::size_t kCount = 1000;
  std::vector<std::vector<std::int32_t>> data(2, std::vector<std::int32_t>(kCount));
  for (std::size_t i = 0; i < kCount; ++i) {
    data[0][i] = static_cast<std::int32_t>(i);
    data[1][i] = static_cast<std::int32_t>(3 * i) - 500;
  }
  std::vector<std::exception_ptr> errors(2);
  std::vector<std::thread> workers;
  for (int rank = 0; rank < 2; ++rank)
    workers.emplace_back([&, rank] {
      try {
        netagg::Config cfg;
        cfg.job = job;
        cfg.rank = rank;
        cfg.epoch = 7;
        netagg::Communicator comm(
            cfg, std::make_unique<NetworkTransport>(net, static_cast<std::uint16_t>(rank)));
        comm.allreduce(std::span<std::int32_t>(data[rank]));
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  for (auto& w : workers) w.join();
  for (int rank = 0; rank < 2; ++rank) {
    if (errors[rank]) {
      try {
        std::rethrow_exception(errors[rank]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "consumer: rank %d: %s\n", rank, e.what());
      }
      return 1;
    }
    for (std::size_t i = 0; i < kCount; ++i) {
      const std::int32_t want = static_cast<std::int32_t>(4 * i) - 500;
      if (data[rank][i] != want) {
        std::fprintf(stderr, "consumer: rank %d element %zu: %d, want %d\n", rank, i, data[rank][i],
                     want);
        return 1;
      }
    }
  }
  std::printf("consumer: 2 workers, %zu int32 elements: sums exact\n", kCount);
  return 0;
}

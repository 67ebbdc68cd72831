// SPDX-License-Identifier: Apache-2.0
// A program outside the netagg tree, built against the installed library with
// find_package(netagg) (or pkg-config netagg): two workers all-reduce int32 vectors in one
// process, over libnetagg's in-process network, through an aggregator written here from the
// public wire API alone. Exits 0 when both workers hold the exact sum.
#include <netagg/communicator.hpp>
#include <netagg/inproc.hpp>
#include <netagg/wire.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <thread>
#include <vector>

namespace {

// Sums the contributions of every worker to a (slot, set, seq) and sends each worker the result.
class Aggregator {
 public:
  explicit Aggregator(const netagg::JobSpec& job) : job_(job) {}

  void on_packet(std::span<const std::byte> packet, const netagg::InprocNetwork::SendFn& send) {
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

  void resend(const Round& round, std::uint16_t rank, const netagg::InprocNetwork::SendFn& send) {
    if (round.arrived != job_.world_size() || rank >= job_.world_size()) return;
    netagg::wire::Header h = round.header;
    h.type = netagg::wire::MsgType::kResult;
    h.rank = rank;
    std::vector<std::byte> out(h.packet_size());
    netagg::wire::encode_header(h, out);
    for (std::size_t i = 0; i < round.sum.size(); ++i)
      netagg::wire::store_be32(out.data() + netagg::wire::kHeaderSize + 4 * i, round.sum[i]);
    send(job_.workers[rank].address, out);
  }

  netagg::JobSpec job_;
  std::map<std::tuple<std::uint16_t, std::uint8_t, std::uint32_t>, Round> rounds_;
};

}  // namespace

int main() {
  const auto job = netagg::make_local_job(7, 2, 41000, 0, 8, 64, {0x7F000001, 20033});
  Aggregator aggregator(job);
  netagg::InprocNetwork net(
      [&](const netagg::Endpoint&, std::span<const std::byte> packet,
          const netagg::InprocNetwork::SendFn& send) { aggregator.on_packet(packet, send); });
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
        netagg::Communicator comm(cfg, net.attach(job.workers[rank].address));
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

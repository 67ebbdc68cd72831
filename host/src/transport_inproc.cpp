// SPDX-License-Identifier: Apache-2.0
#include "netagg/inproc.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "netagg/error.hpp"

namespace netagg {
namespace {

using Bytes = std::vector<std::byte>;

std::uint64_t key_of(const Endpoint& e) { return (std::uint64_t{e.ip} << 16) | e.port; }

Bytes copy_of(std::span<const std::byte> packet) { return Bytes(packet.begin(), packet.end()); }

// Packets handed over per receive() call; the rest wait for the next call.
constexpr std::size_t kReceiveBatch = 64;

}  // namespace

struct InprocNetwork::Impl {
  struct Mailbox {
    std::deque<Bytes> queue;
    std::vector<Bytes> held;  // reordered: released after the next packet to this mailbox
    std::condition_variable arrived;
  };
  struct HeldUplink {
    Endpoint source;
    Bytes bytes;
  };

  Impl(Aggregator aggregator, InprocOptions options)
      : aggregator(std::move(aggregator)),
        options(options),
        rng(options.seed),
        send_fn([this](const Endpoint& dest, std::span<const std::byte> packet) {
          to_worker(dest, packet);
        }) {}

  // Every member below is guarded by mu.
  bool roll(double probability) {
    if (probability <= 0.0) return false;  // draws nothing, so other decisions stay the same
    return static_cast<double>(rng() >> 11) * 0x1p-53 < probability;
  }

  void call_aggregator(const Endpoint& source, std::span<const std::byte> packet) {
    if (!aggregator) {  // the network object is gone, and maybe what its callback used
      ++counters.undeliverable;
      return;
    }
    ++counters.to_aggregator;
    aggregator(source, packet, send_fn);
  }

  void release_uplink() {
    while (!held_uplink.empty()) {
      std::vector<HeldUplink> batch = std::move(held_uplink);
      held_uplink.clear();
      for (const HeldUplink& h : batch) call_aggregator(h.source, h.bytes);
    }
  }

  void to_aggregator(const Endpoint& source, std::span<const std::byte> packet) {
    if (roll(options.loss)) {
      ++counters.dropped;
      return;
    }
    const int copies = roll(options.duplicate) ? 2 : 1;
    counters.duplicated += copies - 1;
    for (int c = 0; c < copies; ++c) {
      if (roll(options.reorder)) {
        ++counters.reordered;
        held_uplink.push_back({source, copy_of(packet)});
        continue;
      }
      call_aggregator(source, packet);
      release_uplink();
    }
  }

  void to_worker(const Endpoint& dest, std::span<const std::byte> packet) {
    const auto it = mailboxes.find(key_of(dest));
    if (it == mailboxes.end()) {
      ++counters.undeliverable;
      return;
    }
    Mailbox& box = *it->second;
    if (roll(options.loss)) {
      ++counters.dropped;
      return;
    }
    const int copies = roll(options.duplicate) ? 2 : 1;
    counters.duplicated += copies - 1;
    for (int c = 0; c < copies; ++c) {
      if (roll(options.reorder)) {
        ++counters.reordered;
        box.held.push_back(copy_of(packet));
        continue;
      }
      enqueue(box, copy_of(packet));
      release_held(box);
    }
  }

  void enqueue(Mailbox& box, Bytes bytes) {
    ++counters.to_workers;
    box.queue.push_back(std::move(bytes));
    box.arrived.notify_one();
  }

  void release_held(Mailbox& box) {
    for (Bytes& bytes : box.held) enqueue(box, std::move(bytes));
    box.held.clear();
  }

  std::mutex mu;
  Aggregator aggregator;
  InprocOptions options;
  std::mt19937_64 rng;
  SendFn send_fn;
  std::unordered_map<std::uint64_t, std::unique_ptr<Mailbox>> mailboxes;
  std::vector<HeldUplink> held_uplink;
  InprocCounters counters;
};

namespace {

class InprocTransport final : public Transport {
 public:
  InprocTransport(std::shared_ptr<InprocNetwork::Impl> net, const Endpoint& local,
                  InprocNetwork::Impl::Mailbox* box)
      : net_(std::move(net)), local_(local), box_(box) {
    batch_.reserve(kReceiveBatch);
  }

  ~InprocTransport() override {
    std::lock_guard lock(net_->mu);
    net_->mailboxes.erase(key_of(local_));
  }

  void send(std::span<const std::span<const std::byte>> packets) override {
    std::lock_guard lock(net_->mu);
    for (std::span<const std::byte> packet : packets) net_->to_aggregator(local_, packet);
  }

  // Every packet goes to the network's aggregator callback, whichever aggregator it is for:
  // the callback tells them apart (a job's trees by the packet's job_id).
  void send_to(std::size_t, std::span<const std::span<const std::byte>> packets) override {
    send(packets);
  }

  std::size_t receive(Duration timeout, const PacketHandler& on_packet) override {
    {
      std::unique_lock lock(net_->mu);
      if (box_->queue.empty()) {
        // Nothing else is coming to release held-back packets while we wait: let them go now.
        // Held uplink packets first: the aggregator's answers may land in our mailbox.
        net_->release_uplink();
        net_->release_held(*box_);
      }
      if (box_->queue.empty() && timeout > Duration::zero()) {
        box_->arrived.wait_for(lock, timeout, [&] { return !box_->queue.empty(); });
      }
      while (!box_->queue.empty() && batch_.size() < kReceiveBatch) {
        batch_.push_back(std::move(box_->queue.front()));
        box_->queue.pop_front();
      }
    }
    // The handler runs without the lock: it may send.
    const std::size_t n = batch_.size();
    try {
      for (const Bytes& bytes : batch_) on_packet(bytes);
    } catch (...) {
      batch_.clear();
      throw;
    }
    batch_.clear();
    return n;
  }

  std::string name() const override { return "inproc"; }

 private:
  std::shared_ptr<InprocNetwork::Impl> net_;
  Endpoint local_;
  InprocNetwork::Impl::Mailbox* box_;  // owned by net_->mailboxes until our destructor
  std::vector<Bytes> batch_;
};

}  // namespace

InprocNetwork::InprocNetwork(Aggregator aggregator, InprocOptions options) {
  for (const auto& [name, p] : {std::pair{"loss", options.loss},
                                {"duplicate", options.duplicate},
                                {"reorder", options.reorder}}) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw Error(Errc::kInvalidArgument,
                  fmt::format("inproc network: {} probability {} is not in 0..1", name, p));
    }
  }
  if (!aggregator) throw Error(Errc::kInvalidArgument, "inproc network: no aggregator callback");
  impl_ = std::make_shared<Impl>(std::move(aggregator), options);
}

InprocNetwork::~InprocNetwork() {
  std::lock_guard lock(impl_->mu);
  impl_->aggregator = nullptr;
}

std::unique_ptr<Transport> InprocNetwork::attach(const Endpoint& local) {
  std::lock_guard lock(impl_->mu);
  auto [it, inserted] = impl_->mailboxes.try_emplace(key_of(local));
  if (!inserted) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("inproc network: {} is attached already", local.to_string()));
  }
  it->second = std::make_unique<Impl::Mailbox>();
  return std::make_unique<InprocTransport>(impl_, local, it->second.get());
}

InprocCounters InprocNetwork::counters() const {
  std::lock_guard lock(impl_->mu);
  return impl_->counters;
}

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The in-process peer group: each collective call of the group is one rendezvous, numbered by
// how many calls each member has made (every member makes the same calls in the same order).
#include <condition_variable>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/peers.hpp"

namespace netagg {

struct InprocPeerGroup::Impl {
  explicit Impl(int n) : size(n) {}

  // What every rank gave to call number `call`: per rank, the bytes for each destination (one
  // entry, for everyone, in an allgather).
  struct Call {
    std::vector<std::vector<Peers::Bytes>> given;
    int arrived = 0, collected = 0;
  };

  // Rank `rank`'s part of call `call`; returns, per source rank, what that rank gave for `to`
  // (0 for an allgather).
  std::vector<Peers::Bytes> exchange(std::uint64_t call, int rank, std::vector<Peers::Bytes> mine,
                                     bool personal, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex);
    if (broken) throw Error(Errc::kTransport, "in-process peer group: broken");
    Call& c = calls[call];
    c.given.resize(static_cast<std::size_t>(size));
    c.given[static_cast<std::size_t>(rank)] = std::move(mine);
    if (++c.arrived == size) cv.notify_all();
    if (!cv.wait_for(lock, timeout, [&] { return broken || c.arrived == size; })) {
      throw Error(Errc::kTimeout,
                  fmt::format("in-process peer group: {} of {} ranks joined call {} within {} ms",
                              c.arrived, size, call, timeout.count()));
    }
    if (broken) throw Error(Errc::kTransport, "in-process peer group: broken");
    std::vector<Peers::Bytes> out(static_cast<std::size_t>(size));
    for (std::size_t r = 0; r < out.size(); ++r)
      out[r] = c.given[r][personal ? static_cast<std::size_t>(rank) : 0];
    if (++c.collected == size) calls.erase(call);
    return out;
  }

  const int size;
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::uint64_t, Call> calls;
  bool broken = false;
};

namespace {

class InprocPeers final : public Peers {
 public:
  InprocPeers(std::shared_ptr<InprocPeerGroup::Impl> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size; }
  std::vector<Bytes> allgather(std::span<const std::byte> mine,
                               std::chrono::milliseconds timeout) override {
    return group_->exchange(calls_++, rank_, {Bytes(mine.begin(), mine.end())}, false, timeout);
  }
  std::vector<Bytes> alltoall(const std::vector<Bytes>& to,
                              std::chrono::milliseconds timeout) override {
    if (to.size() != static_cast<std::size_t>(size()))
      throw Error(Errc::kInvalidArgument, "peers: alltoall needs one buffer per rank");
    return group_->exchange(calls_++, rank_, to, true, timeout);
  }
  std::string name() const override { return "in-process"; }

 private:
  std::shared_ptr<InprocPeerGroup::Impl> group_;
  int rank_;
  std::uint64_t calls_ = 0;
};

}  // namespace

InprocPeerGroup::InprocPeerGroup(int size) : impl_(std::make_shared<Impl>(size)) {
  if (size < 1) throw Error(Errc::kInvalidArgument, "peer group: size must be at least 1");
}
InprocPeerGroup::~InprocPeerGroup() = default;

std::shared_ptr<Peers> InprocPeerGroup::member(int rank) {
  if (rank < 0 || rank >= impl_->size)
    throw Error(Errc::kInvalidArgument, fmt::format("peer group: no rank {}", rank));
  return std::make_shared<InprocPeers>(impl_, rank);
}

void InprocPeerGroup::break_group() {
  std::lock_guard lock(impl_->mutex);
  impl_->broken = true;
  impl_->cv.notify_all();
}

}  // namespace netagg

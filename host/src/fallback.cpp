// SPDX-License-Identifier: Apache-2.0
// The host fallback's session (netagg/fallback.hpp, docs/fallback.md). Every decision is a
// function of what all ranks said in the round, so every rank makes the same collective calls.
#include "netagg/fallback.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/reduce.hpp"

namespace netagg {
namespace {

using Bytes = Peers::Bytes;

// An operation may go back to the network this often before the hosts finish it: once for a
// rank that was late or an aggregator that answered again, once more for a probe.
constexpr std::uint32_t kMaxResumes = 2;
// Packets a wave of the hosts' reduction takes at most (about 4 MiB of contributions at 1024
// 4-byte elements a packet): fewer waves, fewer collective calls, bounded memory.
constexpr std::uint64_t kWavePackets = 1024;
constexpr std::uint64_t kNever = UINT64_MAX;
// In host mode the network is tried again at ever longer intervals (in operations), at most this.
constexpr std::uint64_t kMaxProbeInterval = 1024;
// Results on their way when an aggregator dies arrive within this of each other.
constexpr std::chrono::microseconds kAnsweredMargin{10000};

// Little-endian fields in a byte buffer (the ranks may run on hosts of any byte order).
class Writer {
 public:
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  void bytes(std::span<const std::byte> b) {
    u64(b.size());
    out.insert(out.end(), b.begin(), b.end());
  }
  Bytes out;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= std::uint64_t{std::to_integer<std::uint8_t>(in_[at_ + i])} << (8 * i);
    at_ += 8;
    return v;
  }
  bool done() const { return at_ == in_.size(); }
  std::span<const std::byte> bytes() {
    const std::uint64_t n = u64();
    need(n);
    const auto b = in_.subspan(at_, n);
    at_ += n;
    return b;
  }

 private:
  void need(std::uint64_t n) const {
    if (at_ + n > in_.size())
      throw Error(Errc::kTransport, "fallback: a peer's message is truncated");
  }
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

struct HostFallback::Status {
  std::uint64_t role = 0;  // Role
  // Microseconds since this rank took its operation over, at the round's start.
  std::uint64_t stalled_age_us = 0;
  std::uint64_t joined = 0;  // this operation began in a session others waited in
  struct Tree {
    std::uint64_t window = 0, first = 0, end = 0;
    // Microseconds since the tree's last result from the network in this operation (kNever:
    // none): a rank that got one after another had stalled shows the aggregator answering.
    std::uint64_t result_age_us = 0;
    std::vector<std::uint64_t> frontier;
  };
  std::vector<Tree> trees;

  Bytes encode() const {
    Writer w;
    w.u64(role);
    w.u64(stalled_age_us);
    w.u64(joined);
    w.u64(trees.size());
    for (const Tree& t : trees) {
      w.u64(t.window);
      w.u64(t.first);
      w.u64(t.end);
      w.u64(t.result_age_us);
      for (const std::uint64_t f : t.frontier) w.u64(f);
    }
    return w.out;
  }
  static Status decode(std::span<const std::byte> in) {
    Reader r(in);
    Status s;
    s.role = r.u64();
    s.stalled_age_us = r.u64();
    s.joined = r.u64();
    s.trees.resize(r.u64());
    for (Tree& t : s.trees) {
      t.window = r.u64();
      t.first = r.u64();
      t.end = r.u64();
      t.result_age_us = r.u64();
      if (t.window == 0 || t.window > 65536)
        throw Error(Errc::kTransport, "fallback: a peer's status is malformed");
      t.frontier.resize(t.window);
      for (std::uint64_t& f : t.frontier) f = r.u64();
    }
    return s;
  }
};

HostFallback::HostFallback(std::shared_ptr<Peers> peers, std::chrono::milliseconds timeout,
                           NowFn now)
    : peers_(std::move(peers)), timeout_(timeout), now_(std::move(now)) {
  if (!now_) now_ = [] { return Clock::now(); };
  if (!peers_) throw Error(Errc::kInvalidArgument, "fallback: no peer group");
}

void HostFallback::begin_operation(std::span<Engine* const> engines) {
  resumes_in_operation_ = 0;
  (void)engines;
}

bool HostFallback::host_mode() const {
  return std::any_of(host_trees_.begin(), host_trees_.end(), [](char h) { return h != 0; });
}

bool HostFallback::probe_now() {
  if (!host_mode()) return false;
  if (++host_operations_ < next_probe_) return false;
  next_probe_ = host_operations_ + std::min<std::uint64_t>(host_operations_, kMaxProbeInterval);
  ++stats_.probes;
  return true;
}

void HostFallback::back_to_network(std::size_t k) {
  if (!host_mode(k)) return;
  host_trees_[k] = 0;
  ++stats_.to_network;
}

HostFallback::Outcome HostFallback::run(std::span<Engine* const> engines, Role role,
                                        std::optional<TimePoint> stalled_since) {
  const TimePoint session_start = now_();
  const TimePoint started = stalled_since.value_or(session_start);
  struct Timer {
    FallbackStats& stats;
    const NowFn& now;
    TimePoint start;
    ~Timer() { stats.seconds += std::chrono::duration<double>(now() - start).count(); }
  } timer{stats_, now_, session_start};
  // Ranks that closed left the group for good: no collective call can include them again.
  if (!closed_.empty()) {
    if (role == Role::kClosing) return Outcome::kLeft;
    throw Error(Errc::kInvalidArgument,
                fmt::format("fallback: rank(s) {} closed their communicator while this rank waits "
                            "in an all-reduce: every rank must make the same all-reduce calls",
                            rank_list(closed_)));
  }
  ++stats_.sessions;
  const bool joined = join_next_;
  join_next_ = false;
  const int n = peers_->size();
  const int me = peers_->rank();

  for (;;) {
    // ---- 1. what every rank holds ----
    Status mine;
    mine.role = static_cast<std::uint64_t>(role);
    mine.joined = joined ? 1 : 0;
    const TimePoint now = now_();
    const auto micros = [](Duration d) {
      return static_cast<std::uint64_t>(std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
    };
    mine.stalled_age_us = micros(now - started);
    for (std::size_t t = 0; t < engines.size(); ++t) {
      const Engine& e = *engines[t];
      Status::Tree tree;
      tree.window = e.params().window;
      tree.first = e.op_first_global();
      tree.end = e.op_end_global();
      tree.result_age_us = e.last_result() != TimePoint{} && e.last_result() >= e.op_started()
                               ? micros(now - e.last_result())
                               : kNever;
      for (std::uint32_t s = 0; s < e.params().window; ++s) tree.frontier.push_back(e.frontier(s));
      mine.trees.push_back(std::move(tree));
    }
    const std::vector<Bytes> gathered = peers_->allgather(mine.encode(), timeout_);
    std::vector<Status> all;
    for (const Bytes& b : gathered) all.push_back(Status::decode(b));
    for (int r = 0; r < n; ++r) {
      bool same = all[r].trees.size() == mine.trees.size();
      for (std::size_t t = 0; same && t < mine.trees.size(); ++t)
        same = all[r].trees[t].window == mine.trees[t].window;
      if (!same)
        throw Error(Errc::kConfig,
                    fmt::format("fallback: rank {} runs the job on other trees or windows than "
                                "rank {}: every rank must use the same job",
                                r, me));
    }

    // ---- 2. a result one rank lacks, from the lowest rank that has it ----
    // The most any rank holds of each slot; a rank behind is exactly one packet behind (the
    // packet after needs its contribution, which it sends only after that result).
    std::vector<std::vector<std::uint64_t>> most(engines.size());
    std::vector<Bytes> to(static_cast<std::size_t>(n));
    std::vector<Writer> writers(static_cast<std::size_t>(n));
    bool sharing = false;
    for (std::size_t t = 0; t < engines.size(); ++t) {
      const std::uint64_t w = mine.trees[t].window;
      for (std::uint64_t s = 0; s < w; ++s) {
        std::uint64_t m = 0;
        int provider = -1;
        for (int r = 0; r < n; ++r) {
          const std::uint64_t f = all[r].trees[t].frontier[s];
          if (provider < 0 || f > m) {
            m = f;
            provider = r;
          }
        }
        most[t].push_back(m);
        for (int r = 0; r < n; ++r) {
          const std::uint64_t f = all[r].trees[t].frontier[s];
          if (f == m) continue;
          if (f + w != m)
            throw Error(
                Errc::kInvalidArgument,
                fmt::format("fallback: rank {} holds slot {} of tree {} up to packet {} and "
                            "rank {} up to {}: more than one packet apart, which the "
                            "protocol cannot produce (different calls on the ranks?)",
                            r, s, t, f, provider, m));
          sharing = true;
          if (provider != me) continue;
          const auto idx = static_cast<std::uint32_t>(s);
          if (engines[t]->kept_global(idx) != f)
            throw Error(Errc::kInvalidArgument,
                        fmt::format("fallback: rank {} should hold the result of packet {} of tree "
                                    "{} but holds {}",
                                    me, f, t, engines[t]->kept_global(idx)));
          Writer& out = writers[static_cast<std::size_t>(r)];
          out.u64(t);
          out.u64(f);
          out.bytes(engines[t]->kept_result(idx));
        }
      }
    }
    if (sharing) {
      for (int r = 0; r < n; ++r)
        to[static_cast<std::size_t>(r)] = std::move(writers[static_cast<std::size_t>(r)].out);
      const std::vector<Bytes> from = peers_->alltoall(to, timeout_);
      for (const Bytes& b : from) {
        Reader in(b);
        while (!in.done()) {
          const std::uint64_t t = in.u64();
          const std::uint64_t g = in.u64();
          const auto packet = in.bytes();
          const wire::Decoded d = wire::decode(packet);
          if (t >= engines.size() || !d || !engines[t]->deliver_external(g, d.header, d.payload))
            throw Error(Errc::kTransport,
                        fmt::format("fallback: a copy of the result of packet {} of tree {} does "
                                    "not fit this rank's operation",
                                    g, t));
          ++stats_.shared_results;
        }
      }
    }

    // ---- 3. who still lacks results of its operation ----
    std::vector<int> incomplete, closing;
    for (int r = 0; r < n; ++r) {
      if (all[r].role == static_cast<std::uint64_t>(Role::kClosing)) {
        closing.push_back(r);
        if (r != me) closed_.push_back(r);
        continue;
      }
      bool done = true;
      for (std::size_t t = 0; done && t < engines.size(); ++t)
        for (std::uint64_t s = 0; done && s < mine.trees[t].window; ++s)
          done = most[t][s] >= all[r].trees[t].end;
      if (!done) incomplete.push_back(r);
    }
    const bool me_incomplete =
        std::find(incomplete.begin(), incomplete.end(), me) != incomplete.end();
    if (incomplete.empty()) return role == Role::kClosing ? Outcome::kLeft : Outcome::kComplete;

    bool same_operation = closing.empty();
    for (int r = 0; same_operation && r < n; ++r)
      for (std::size_t t = 0; same_operation && t < engines.size(); ++t)
        same_operation = all[r].trees[t].first == mine.trees[t].first &&
                         all[r].trees[t].end == mine.trees[t].end;
    if (same_operation) {
      // ---- 4a. the network again, or the hosts ----
      // A rank got a result from the network after another rank had stalled: the aggregator
      // answers, and that rank was late (its contributions were what the others waited for).
      // Only the trees still unfinished count: the others' results say nothing of these.
      bool answered_after_stall = false, late = false;
      for (std::size_t t = 0; t < engines.size(); ++t) {
        bool unfinished = false;
        for (std::uint64_t s = 0; s < mine.trees[t].window; ++s)
          unfinished = unfinished || most[t][s] < mine.trees[t].end;
        if (!unfinished) continue;
        for (const Status& a : all)
          for (const Status& b : all)
            if (a.trees[t].result_age_us != kNever &&
                a.trees[t].result_age_us + kAnsweredMargin.count() < b.stalled_age_us)
              answered_after_stall = true;
      }
      for (const Status& st : all) late = late || st.joined != 0;
      if (resumes_in_operation_ < kMaxResumes && (answered_after_stall || late)) {
        ++resumes_in_operation_;
        ++stats_.resumed;
        return Outcome::kResume;
      }
      // Waves: the next packet of every slot, filled by every rank (its predecessor answered),
      // sent to the rank that reduces it, reduced in rank order, and the results to everyone.
      for (;;) {
        struct Item {
          std::size_t tree;
          std::uint64_t global;
        };
        // Sources that fill packets from the caller's data alone go in waves of many packets a
        // slot (in order on each slot, as results must be given); block floating point needs
        // each packet's predecessor on its slot answered first.
        std::vector<Item> wave;
        for (std::size_t t = 0; t < engines.size(); ++t) {
          const std::uint64_t w = mine.trees[t].window;
          const std::uint64_t depth =
              engines[t]->source_independent() ? std::max<std::uint64_t>(1, kWavePackets / w) : 1;
          for (std::uint64_t k = 0; k < depth; ++k)
            for (std::uint32_t s = 0; s < w; ++s)
              if (const std::uint64_t g = engines[t]->frontier(s) + k * w; g < mine.trees[t].end)
                wave.push_back({t, g});
        }
        if (wave.empty()) break;
        std::vector<Writer> contributions(static_cast<std::size_t>(n));
        std::array<std::byte, wire::kMaxPacketSize> packet{};
        for (std::size_t k = 0; k < wave.size(); ++k) {
          wire::Header h = engines[wave[k].tree]->contribution(
              wave[k].global, std::span(packet).subspan(wire::kHeaderSize));
          if (!wire::encode_header(h, packet))
            throw Error(Errc::kInvalidArgument, "fallback: a contribution is not encodable");
          contributions[k % static_cast<std::size_t>(n)].bytes(
              std::span(packet).first(h.packet_size()));
        }
        std::vector<Bytes> give(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r)
          give[static_cast<std::size_t>(r)] =
              std::move(contributions[static_cast<std::size_t>(r)].out);
        const std::vector<Bytes> got = peers_->alltoall(give, timeout_);
        std::vector<Reader> from;
        for (const Bytes& b : got) from.emplace_back(b);
        Writer results;
        std::vector<wire::Decoded> round(static_cast<std::size_t>(n));
        for (std::size_t k = static_cast<std::size_t>(me); k < wave.size();
             k += static_cast<std::size_t>(n)) {
          for (int r = 0; r < n; ++r) {
            round[static_cast<std::size_t>(r)] =
                wire::decode(from[static_cast<std::size_t>(r)].bytes());
            if (!round[static_cast<std::size_t>(r)])
              throw Error(Errc::kTransport,
                          fmt::format("fallback: rank {}'s contribution does not decode", r));
          }
          wire::Header h = round[0].header;
          h.type = wire::MsgType::kResult;
          reduce_round(round, h, std::span(packet).subspan(wire::kHeaderSize));
          if (!wire::encode_header(h, packet))
            throw Error(Errc::kInvalidArgument, "fallback: a result is not encodable");
          results.bytes(std::span(packet).first(h.packet_size()));
        }
        const std::vector<Bytes> reduced = peers_->allgather(results.out, timeout_);
        std::vector<Reader> by_owner;
        for (const Bytes& b : reduced) by_owner.emplace_back(b);
        for (std::size_t k = 0; k < wave.size(); ++k) {
          const wire::Decoded d = wire::decode(by_owner[k % static_cast<std::size_t>(n)].bytes());
          if (!d || !engines[wave[k].tree]->deliver_external(wave[k].global, d.header, d.payload))
            throw Error(Errc::kTransport,
                        fmt::format("fallback: the hosts' result of packet {} of tree {} does not "
                                    "fit this rank's operation",
                                    wave[k].global, wave[k].tree));
        }
        stats_.host_packets += wave.size();
        if (host_trees_.size() < engines.size()) host_trees_.resize(engines.size(), 0);
        for (const Item& item : wave) {
          if (host_trees_[item.tree]) continue;
          host_trees_[item.tree] = 1;
          ++stats_.to_hosts;
          host_operations_ = 0;
          next_probe_ = 1;
        }
      }
      return Outcome::kComplete;
    }

    if (!closing.empty()) {
      // ---- 4b. a rank closed while others wait: their operation can never complete ----
      if (role == Role::kClosing) return Outcome::kLeft;
      throw Error(Errc::kInvalidArgument,
                  fmt::format("fallback: rank(s) {} closed their communicator while rank(s) {} "
                              "wait in an all-reduce: every rank must make the same all-reduce "
                              "calls",
                              rank_list(closing), rank_list(incomplete)));
    }
    // ---- 4c. ranks that were behind finished with copies; the others wait for their next
    // operation, which starts in this session ----
    if (!me_incomplete) {
      join_next_ = true;
      return Outcome::kComplete;
    }
  }
}

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// The HLS aggregator against the switch model (sim/switch) on the same random int32 traffic:
// two jobs whose workers follow the protocol (a packet only after the result of the one W
// before it), retransmit at random, get duplicated by the network, and now and then send what no
// correct worker sends (packets ahead of the window, wrong counts, wrong ranks, foreign
// addresses, unknown jobs, slots outside the job, oversized counts, results, malformed headers,
// packets of another epoch). Twice during the run every job starts again as a new run (a new
// epoch, packets numbered from 0) while the old run's rounds are still held, and the old run's
// late packets keep coming.
// The switch takes UDP payloads, the FPGA model Ethernet frames of them. After every packet both
// must have sent the same packets to the same addresses, and in the end every counter the two
// share must agree.
#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <set>
#include <vector>

#include "fpga_test_util.hpp"
#include "fpga_tree_util.hpp"
#include "switch_model.hpp"

namespace netagg::fpga {
namespace {

using namespace netagg::fpga::testing;  // NOLINT
// csr::Counter, not fpga::Counter (a counter read back by name).
using Counter = csr::Counter;

struct Sent {
  Endpoint destination;
  std::vector<std::byte> packet;
  friend bool operator==(const Sent&, const Sent&) = default;
};

// The switch model and the FPGA model side by side, fed the same packets.
class SideBySide {
 public:
  std::uint64_t completions() const { return fpga_.counter(csr::index(Counter::kCompletions)); }

 protected:
  explicit SideBySide(std::uint32_t seed) : switch_(64, 256), rng_(seed) {}

  // `packet` from `source` into both (into a random one of the FPGA's ports): what the switch
  // model sends (results and notices) goes to `sent`. A fatal failure when the FPGA model sends
  // anything else.
  void process_on_both(const Endpoint& source, const std::vector<std::byte>& packet,
                       std::vector<Sent>& sent) {
    sim::CollectingSink sink;
    switch_.process(source, packet, sink);
    for (auto& p : sink.packets) sent.push_back({p.destination, p.bytes});

    const WorkerSpec from{0, source, wire::Mac{0x02, 0, 0, 0, 0, 0x42}, std::nullopt};
    const auto frames =
        fpga_.process_frame(static_cast<unsigned>(rng_() % 4), frame_from(from, packet));
    std::vector<Sent> got;
    for (const TxFrame& f : frames) {
      const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
      ASSERT_TRUE(d);
      const std::size_t udp_payload = wire::load_be16(f.bytes.data() + 38) - wire::kUdpHeaderSize;
      got.push_back({{d.address.dst_ip, d.address.dst_port},
                     {f.bytes.begin() + wire::kFrameOverhead,
                      f.bytes.begin() + wire::kFrameOverhead + udp_payload}});
    }
    ASSERT_EQ(got, sent) << "after " << switch_.counters().packets_in << " packets";
  }

  // The counters every cross-check compares: what enters, adds, completes, and the drops both
  // aggregators count alike.
  void expect_shared_counters_agree() const {
    const sim::SwitchCounters& s = switch_.counters();
    auto f = [&](Counter c) { return fpga_.counter(csr::index(c)); };
    using sim::DropReason;
    EXPECT_EQ(f(Counter::kFramesIn), s.packets_in);
    EXPECT_EQ(f(Counter::kAggregated), s.aggregated);
    EXPECT_EQ(f(Counter::kCompletions), s.completions);
    EXPECT_EQ(f(Counter::kResultsResent), s.results_resent);
    EXPECT_EQ(f(Counter::kNotices), s.notices);
    EXPECT_EQ(f(Counter::kDroppedNotContribution), s.drops(DropReason::kNotContribution));
    EXPECT_EQ(f(Counter::kDroppedUnknownJob), s.drops(DropReason::kUnknownJob));
    EXPECT_EQ(f(Counter::kDroppedRankOutOfRange), s.drops(DropReason::kRankOutOfRange));
    EXPECT_EQ(f(Counter::kDroppedForeignSource), s.drops(DropReason::kForeignSource));
    EXPECT_EQ(f(Counter::kDroppedSlotOutOfRange), s.drops(DropReason::kSlotOutOfRange));
    EXPECT_EQ(f(Counter::kDroppedCountTooLargeForJob), s.drops(DropReason::kCountTooLargeForJob));
    EXPECT_EQ(f(Counter::kDroppedCountMismatch), s.drops(DropReason::kCountMismatch));
    EXPECT_EQ(f(Counter::kDroppedDuplicate), s.drops(DropReason::kDuplicate));
    EXPECT_EQ(f(Counter::kDroppedStale), s.drops(DropReason::kStale));
    EXPECT_EQ(f(Counter::kDroppedStaleEpoch), s.drops(DropReason::kStaleEpoch));
    EXPECT_EQ(f(Counter::kEpochTakeovers), s.epoch_takeovers);
    EXPECT_EQ(f(Counter::kDroppedNoRound), s.drops(DropReason::kNoRound));
  }

  // Fails the test unless every counter of `counters` counted something.
  void expect_each_happened(std::initializer_list<Counter> counters) const {
    for (Counter c : counters) EXPECT_GT(fpga_.counter(csr::index(c)), 0u) << csr::name(c);
  }

  sim::SwitchModel switch_;
  ReferenceModel<> fpga_;
  ModelBus<ReferenceModel<>> fpga_bus_{fpga_};
  Sent last_;  // the packet last sent, which the network may duplicate
  std::mt19937 rng_;
};

class Crosscheck : public SideBySide {
 public:
  Crosscheck() : SideBySide(99) {
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      switch_.add_job(jobs_[j]);
      program_job(fpga_bus_, jobs_[j], static_cast<unsigned>(j + 2), kAggregator);
      progress_.emplace_back(jobs_[j].workers.size());
    }
  }

  void run(int packets) {
    for (int i = 0; i < packets; ++i) {
      if (i == packets / 3 || i == 2 * packets / 3)
        for (std::size_t j = 0; j < jobs_.size(); ++j) restart(j);
      Endpoint source;
      const std::vector<std::byte> packet = next_packet(source);
      last_ = {source, packet};
      deliver(source, packet);
      if (::testing::Test::HasFailure()) return;
    }
  }

  void check_counters() {
    const sim::SwitchCounters& s = switch_.counters();
    auto f = [&](Counter c) { return fpga_.counter(csr::index(c)); };
    expect_shared_counters_agree();
    EXPECT_EQ(f(Counter::kFramesOut), s.results_multicast + s.results_resent + s.notices);
    EXPECT_EQ(f(Counter::kMalformedBadVersion), s.malformed_by(wire::Error::kBadVersion));
    EXPECT_EQ(f(Counter::kMalformedLengthMismatch), s.malformed_by(wire::Error::kLengthMismatch));
    // Every kind of event happened, so the agreement above means something.
    expect_each_happened({Counter::kCompletions, Counter::kResultsResent,
                          Counter::kDroppedDuplicate, Counter::kDroppedStale,
                          Counter::kDroppedCountMismatch, Counter::kDroppedForeignSource,
                          Counter::kDroppedRankOutOfRange, Counter::kDroppedUnknownJob,
                          Counter::kDroppedSlotOutOfRange, Counter::kDroppedCountTooLargeForJob,
                          Counter::kDroppedNotContribution, Counter::kMalformedBadVersion,
                          Counter::kDroppedStaleEpoch, Counter::kDroppedNoRound,
                          Counter::kEpochTakeovers, Counter::kNotices});
  }

 private:
  struct WorkerProgress {
    std::uint32_t next = 0;           // the next new packet
    std::set<std::uint32_t> results;  // packets whose result arrived
  };

  // Job j starts a new run: a new epoch, every worker from packet 0.
  void restart(std::size_t j) {
    previous_[j] = {epoch_[j], progress_[j]};
    epoch_[j] = epoch_[j] * 2654435761u + 1;
    for (auto& w : progress_[j]) w = {};
  }

  void deliver(const Endpoint& source, const std::vector<std::byte>& packet) {
    std::vector<Sent> expected;
    process_on_both(source, packet, expected);
    if (::testing::Test::HasFatalFailure()) return;

    // Workers take in their results (a notice changes nothing here).
    for (const Sent& s : expected) {
      const wire::Decoded d = wire::decode(s.packet);
      if (d.header.type != wire::MsgType::kResult) continue;
      for (std::size_t j = 0; j < jobs_.size(); ++j)
        if (jobs_[j].job_id == d.header.job_id && d.header.epoch == epoch_[j])
          progress_[j][d.header.rank].results.insert(d.header.seq);
    }
  }

  // The data of packet P of a rank: the same on every retransmission.
  std::vector<std::uint32_t> values(std::size_t job, unsigned rank, std::uint32_t packet,
                                    std::uint16_t count) const {
    std::vector<std::uint32_t> v(count);
    std::uint32_t x = static_cast<std::uint32_t>(job * 7919 + rank * 104729 + packet * 1299709);
    for (auto& e : v) e = x = x * 1664525u + 1013904223u;
    return v;
  }

  std::vector<std::byte> packet_of(std::size_t j, unsigned rank, std::uint32_t packet,
                                   std::uint16_t count, Endpoint& source) {
    return packet_of(j, rank, packet, count, source, epoch_[j]);
  }
  // A worker's packet as a worker of the run with `epoch` sends it: fresh on its first use of
  // the (slot, set).
  std::vector<std::byte> packet_of(std::size_t j, unsigned rank, std::uint32_t packet,
                                   std::uint16_t count, Endpoint& source, std::uint32_t epoch) {
    const JobSpec& job = jobs_[j];
    wire::Header h = contribution_header(job, static_cast<std::uint16_t>(rank), packet, count);
    h.epoch = epoch;
    h.fresh = packet < 2 * job.slot_count ? 1 : 0;
    h.exponent = static_cast<std::int16_t>((packet * 31 + rank * 7) % 200) - 100;
    source = job.workers[rank].address;
    return encode_packet(h, values(j, rank, packet, count));
  }

  std::vector<std::byte> next_packet(Endpoint& source) {
    const std::size_t j = rng_() % jobs_.size();
    const JobSpec& job = jobs_[j];
    const unsigned rank = static_cast<unsigned>(rng_() % job.workers.size());
    WorkerProgress& w = progress_[j][rank];
    const std::uint32_t window = job.slot_count;
    const std::uint16_t count = job.elements_per_packet;
    const int kind = static_cast<int>(rng_() % 100);
    if (kind < 60) {  // the protocol: a new packet if allowed, else a retransmission
      if (w.next < window || w.results.count(w.next - window))
        return packet_of(j, rank, w.next++, count, source);
      for (std::uint32_t p = w.next - window; p < w.next; ++p)
        if (!w.results.count(p)) return packet_of(j, rank, p, count, source);
    }
    if (kind < 78 && w.next > 0) {  // a retransmission of something recent
      const std::uint32_t back = 1 + static_cast<std::uint32_t>(rng_() % (2 * window + 1));
      return packet_of(j, rank, w.next >= back ? w.next - back : 0, count, source);
    }
    if (kind < 86 && last_.packet.size()) {  // the network duplicates
      source = last_.destination;
      return last_.packet;
    }
    if (kind < 91 && w.next > 0)  // a count that differs from the round's
      return packet_of(j, rank, w.next - 1, static_cast<std::uint16_t>(count - 1), source);
    if (kind < 94) {  // a late packet of the previous run (never a fresh one: that would take
                      // the set back, and the current run would stall)
      const auto& [old_epoch, old_progress] = previous_[j];
      const std::uint32_t old_next = old_progress.empty() ? 0 : old_progress[rank].next;
      const std::uint32_t p = old_next - 1 - static_cast<std::uint32_t>(rng_() % (2 * window));
      if (old_next > 2 * window + 1 && p >= 2 * window)
        return packet_of(j, rank, p, count, source, old_epoch);
    }
    if (kind < 95) {  // a recovery copy: of an answered packet, as a worker sends one with a
                      // stuck retransmission, or (what none sends) of one far ahead
      const std::uint32_t back = window + 1 + static_cast<std::uint32_t>(rng_() % window);
      const bool ahead = rng_() % 4 == 0;
      if (ahead || w.next >= back) {
        const std::uint32_t p = ahead ? w.next + 2 * window : w.next - back;
        std::vector<std::byte> copy = packet_of(j, rank, p, count, source);
        copy[wire::offset::kFlags] |= std::byte{wire::kFlagRecovery};
        return copy;
      }
    }
    if (kind < 96 && w.next >= 2 * window) {  // a forged packet of an unknown epoch, not fresh
      const std::uint32_t p = w.next - 1 - static_cast<std::uint32_t>(rng_() % window);
      return packet_of(j, rank, p, count, source, static_cast<std::uint32_t>(rng_()) | 1u);
    }
    // What no correct worker sends.
    std::vector<std::byte> p = packet_of(j, rank, w.next, count, source);
    switch (rng_() % 8) {
      case 0:
        wire::store_be16(p.data() + wire::offset::kRank,
                         static_cast<std::uint16_t>(job.workers.size() + rng_() % 30));
        break;
      case 1:
        source.port = static_cast<std::uint16_t>(source.port + 1);
        break;
      case 2:
        source.ip ^= 0x100;
        break;
      case 3:
        wire::store_be16(p.data() + wire::offset::kJobId, 77);
        break;
      case 4:
        wire::store_be16(p.data() + wire::offset::kSlot,
                         static_cast<std::uint16_t>(job.slot_base + job.slot_count + rng_() % 4));
        break;
      case 5: {
        const auto big = static_cast<std::uint16_t>(job.elements_per_packet + 1 + rng_() % 3);
        p = packet_of(j, rank, w.next, big, source);
        break;
      }
      case 6:
        p[wire::offset::kType] = std::byte{2};
        break;
      default:
        p[wire::offset::kVersion] = std::byte{9};
        break;
    }
    if (rng_() % 16 == 0) p.pop_back();  // and now and then a malformed length
    return p;
  }

  std::vector<JobSpec> jobs_{make_job(3, 4, 0, 3, 37), make_job(9, 3, 10, 2, 256)};
  std::vector<std::vector<WorkerProgress>> progress_;
  std::vector<std::uint32_t> epoch_ = std::vector<std::uint32_t>(jobs_.size(), 0x5eed0001u);
  std::vector<std::pair<std::uint32_t, std::vector<WorkerProgress>>> previous_ =
      std::vector<std::pair<std::uint32_t, std::vector<WorkerProgress>>>(jobs_.size());
};

TEST(HlsSwitchCrosscheck, SameResultsAndCountersOnRandomInt32Traffic) {
  Crosscheck c;
  c.run(20000);
  c.check_counters();
  EXPECT_GT(c.completions(), 1000u);
}

// ---- trees -----------------------------------------------------------------------------------

// A child in a tree on both: three workers under it, a parent simulated here that answers the
// sums it receives (the sum plus its other members' part) now and then, late, twice, or not at
// all (a lost result), and sends results no correct parent sends (wrong rank, slot, epoch, seq,
// count, source, job). The workers follow the protocol and retransmit; the job starts a new run
// once. After every packet both must have sent the same packets to the same addresses (the
// parent included), and in the end the counters the two share must agree. Recovery copies are
// left out: the switch model keeps a round's sum after the parent's result to send it to a
// restarted parent again, the FPGA aggregator does not (docs/fpga-aggregator.md, "Trees").
class TreeCrosscheck : public SideBySide {
 public:
  TreeCrosscheck() : SideBySide(2024) {
    switch_.add_job(child_);
    program_job(fpga_bus_, child_, 1, kAggregator);
    progress_.resize(child_.workers.size());
  }

  void run(int packets) {
    for (int i = 0; i < packets; ++i) {
      if (i == packets / 2) restart();
      Endpoint source;
      const std::vector<std::byte> packet = next_packet(source);
      last_ = {source, packet};
      deliver(source, packet);
      if (::testing::Test::HasFailure()) return;
    }
  }

  void check_counters() {
    const sim::SwitchCounters& s = switch_.counters();
    auto f = [&](Counter c) { return fpga_.counter(csr::index(c)); };
    expect_shared_counters_agree();
    EXPECT_EQ(f(Counter::kSentToParent), s.sent_to_parent);
    EXPECT_EQ(f(Counter::kResentToParent), s.resent_to_parent);
    EXPECT_EQ(f(Counter::kResultsFromParent), s.results_from_parent);
    EXPECT_EQ(f(Counter::kFramesOut), s.results_multicast + s.results_resent + s.sent_to_parent +
                                          s.resent_to_parent + s.notices);
    // Every kind of event happened, so the agreement above means something.
    expect_each_happened({Counter::kCompletions, Counter::kResultsResent, Counter::kSentToParent,
                          Counter::kResentToParent, Counter::kResultsFromParent,
                          Counter::kDroppedDuplicate, Counter::kDroppedStale,
                          Counter::kDroppedCountMismatch, Counter::kDroppedRankOutOfRange,
                          Counter::kDroppedSlotOutOfRange, Counter::kDroppedNotContribution,
                          Counter::kDroppedStaleEpoch, Counter::kDroppedNoRound,
                          Counter::kEpochTakeovers, Counter::kNotices});
  }

 private:
  struct WorkerProgress {
    std::uint32_t next = 0;
    std::set<std::uint32_t> results;
  };
  // A sum that reached the parent (the contribution as the parent got it).
  struct Upload {
    wire::Header header;
    std::vector<std::uint32_t> values;
  };

  void restart() {
    old_epoch_ = epoch_;
    epoch_ = epoch_ * 2654435761u + 1;
    for (auto& w : progress_) w = {};
  }

  void deliver(const Endpoint& source, const std::vector<std::byte>& packet) {
    std::vector<Sent> expected;
    process_on_both(source, packet, expected);
    if (::testing::Test::HasFatalFailure()) return;

    for (const Sent& s : expected) {
      const wire::Decoded d = wire::decode(s.packet);
      if (d.header.type == wire::MsgType::kNotice) continue;  // changes nothing here
      if (s.destination == kParentAddress) {  // the parent gets it, or the network loses it
        if (rng_() % 5 == 0) continue;
        Upload u{d.header, {}};
        for (std::size_t i = 0; i < d.header.count; ++i)
          u.values.push_back(wire::load_be32(d.payload.data() + 4 * i));
        uploads_.push_back(u);
        if (uploads_.size() > 12) uploads_.erase(uploads_.begin());
      } else if (d.header.epoch == epoch_) {
        progress_[d.header.rank].results.insert(d.header.seq);
      }
    }
  }

  std::vector<std::uint32_t> values(unsigned rank, std::uint32_t packet,
                                    std::uint16_t count) const {
    std::vector<std::uint32_t> v(count);
    std::uint32_t x = static_cast<std::uint32_t>(rank * 104729 + packet * 1299709);
    for (auto& e : v) e = x = x * 1664525u + 1013904223u;
    return v;
  }

  std::vector<std::byte> packet_of(unsigned rank, std::uint32_t packet, std::uint16_t count,
                                   Endpoint& source, std::uint32_t epoch) {
    wire::Header h = contribution_header(child_, static_cast<std::uint16_t>(rank), packet, count);
    h.epoch = epoch;
    h.fresh = packet < 2 * child_.slot_count ? 1 : 0;
    h.exponent = static_cast<std::int16_t>((packet * 31 + rank * 7) % 200) - 100;
    source = child_.workers[rank].address;
    return encode_packet(h, values(rank, packet, count));
  }

  // The parent's result for an upload: the sum plus the parent's other members' part.
  std::vector<std::byte> parent_result(const Upload& u, Endpoint& source) {
    wire::Header h = u.header;
    h.type = wire::MsgType::kResult;
    h.fresh = h.recovery = 0;
    h.exponent = static_cast<std::int16_t>(h.exponent + 3);
    std::vector<std::uint32_t> v = u.values;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += 0x9E3779B9u * (i + 1);
    source = kParentAddress;
    switch (rng_() % 14) {  // what no correct parent sends, now and then
      case 0:
        h.rank = static_cast<std::uint16_t>(h.rank + 1);
        break;
      case 1:
        h.slot = static_cast<std::uint16_t>(child_.parent->slot_base + child_.slot_count);
        break;
      case 2:
        h.epoch ^= 0x10;
        break;
      case 3:
        h.seq -= 2 * child_.slot_count;
        break;
      case 4:
        h.seq += 2 * child_.slot_count;
        break;
      case 5:
        source.port = static_cast<std::uint16_t>(source.port + 1);
        break;
      case 6:
        h.job_id = static_cast<std::uint16_t>(h.job_id + 1);
        break;
      case 7:
        if (!v.empty()) v.pop_back();
        break;
      default:
        break;
    }
    h.count = static_cast<std::uint16_t>(v.size());
    return encode_packet(h, v);
  }

  std::vector<std::byte> next_packet(Endpoint& source) {
    const int kind = static_cast<int>(rng_() % 100);
    if (kind < 22 && !uploads_.empty()) {  // the parent answers some sum it got (again)
      const std::size_t i =
          uploads_.size() - 1 - rng_() % std::min<std::size_t>(4, uploads_.size());
      return parent_result(uploads_[i], source);
    }
    const unsigned rank = static_cast<unsigned>(rng_() % child_.workers.size());
    WorkerProgress& w = progress_[rank];
    const std::uint32_t window = child_.slot_count;
    const std::uint16_t count = child_.elements_per_packet;
    if (kind < 70) {  // the protocol: a new packet if allowed, else a retransmission
      if (w.next < window || w.results.count(w.next - window))
        return packet_of(rank, w.next++, count, source, epoch_);
      for (std::uint32_t p = w.next - window; p < w.next; ++p)
        if (!w.results.count(p)) return packet_of(rank, p, count, source, epoch_);
    }
    if (kind < 82 && w.next > 0) {  // a retransmission of something recent
      const std::uint32_t back = 1 + static_cast<std::uint32_t>(rng_() % (2 * window + 1));
      return packet_of(rank, w.next >= back ? w.next - back : 0, count, source, epoch_);
    }
    if (kind < 90 && !last_.packet.empty()) {  // the network duplicates
      source = last_.destination;
      return last_.packet;
    }
    if (kind < 94 && w.next > 0)  // a count that differs from the round's
      return packet_of(rank, w.next - 1, static_cast<std::uint16_t>(count - 1), source, epoch_);
    if (kind < 97 && old_epoch_ != epoch_ && w.next > 0)  // a late packet of the old run
      return packet_of(rank, 2 * window + rng_() % window, count, source, old_epoch_);
    // A result from a worker's address.
    std::vector<std::byte> p = packet_of(rank, w.next, count, source, epoch_);
    p[wire::offset::kType] = std::byte{2};
    return p;
  }

  JobSpec child_ = make_child_job(5, 3, 2, 3, 37, 50, 1, 30);
  std::vector<WorkerProgress> progress_;
  std::vector<Upload> uploads_;
  std::uint32_t epoch_ = 0x7ee00001u, old_epoch_ = 0x7ee00001u;
};

TEST(HlsSwitchCrosscheck, ATreeChildSendsAndTakesWhatTheSwitchModelDoes) {
  TreeCrosscheck c;
  c.run(20000);
  c.check_counters();
  EXPECT_GT(c.completions(), 500u);
}

}  // namespace
}  // namespace netagg::fpga

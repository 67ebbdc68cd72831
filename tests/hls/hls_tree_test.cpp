// SPDX-License-Identifier: Apache-2.0
// Aggregation trees in the HLS aggregator (docs/wire-format.md, "Aggregation trees";
// docs/fpga-aggregator.md, "Trees"): a job with a parent sends a completed round's sum to the
// parent as one contribution and waits, sends it again when a member retransmits, and completes
// the round with the parent's result, which goes to every member. Frames are built and checked
// with the host's wire code (fpga_tree_util.hpp), sums computed here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fpga_test_util.hpp"
#include "fpga_tree_util.hpp"
#include "netagg/error.hpp"

namespace netagg::fpga {
namespace {

using namespace netagg::fpga::testing;  // NOLINT
using Counter = csr::Counter;
using Model = ReferenceModel<>;

constexpr std::uint32_t kEpoch = 0x5eed0007;
constexpr std::uint16_t kCount = 20;  // two payload beats

class HlsTree : public ::testing::Test {
 protected:
  HlsTree() {
    set_aggregator_address(bus_, kAggregator);
    program_job(bus_, plain_, 0, kAggregator);
    program_job(bus_, child_, 1, kAggregator);
  }

  std::uint64_t count(Counter c) { return model_.counter(csr::index(c)); }
  // Every counter but the ones named is zero.
  void expect_only(std::initializer_list<std::pair<Counter, std::uint64_t>> nonzero) {
    for (std::size_t i = 0; i < csr::kCounterCount; ++i) {
      std::uint64_t want = 0;
      for (const auto& [c, v] : nonzero)
        if (csr::index(c) == i) want = v;
      EXPECT_EQ(model_.counter(static_cast<unsigned>(i)), want) << csr::kCounterNames[i];
    }
  }

  static std::int16_t exponent(std::uint16_t rank, std::uint32_t packet) {
    return static_cast<std::int16_t>(-5 + 3 * rank + static_cast<int>(packet));
  }
  // Rank r's contribution to packet p: fresh in the run's first 2W packets, as a worker sends.
  wire::Header header(std::uint16_t rank, std::uint32_t packet,
                      wire::DataType dtype = wire::DataType::kInt32) const {
    wire::Header h = contribution_header(child_, rank, packet, kCount, dtype);
    h.epoch = kEpoch;
    h.fresh = packet < 2u * child_.slot_count ? 1 : 0;
    h.exponent = exponent(rank, packet);
    return h;
  }
  static std::vector<std::uint32_t> values(std::uint16_t rank, std::uint32_t packet) {
    std::vector<std::uint32_t> v(kCount);
    for (std::uint32_t i = 0; i < kCount; ++i)
      v[i] = 0x10000000u * (rank + 1) + packet * 1000 + i * 7 + 0xFFFF0000u * (i % 3);
    return v;
  }
  // The round's header as the child holds it: the round's max exponent, its starter's fresh.
  wire::Header round_header(std::uint32_t packet) const {
    wire::Header h = header(0, packet);
    h.exponent = exponent(2, packet);
    return h;
  }
  static std::vector<std::uint32_t> partial(std::uint32_t packet) {
    std::vector<std::uint32_t> sum(kCount, 0);
    for (std::uint16_t r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < kCount; ++i) sum[i] += values(r, packet)[i];
    return sum;
  }
  // What the parent answers: the partial sum plus its other members' (here: a constant).
  static std::vector<std::uint32_t> total(std::uint32_t packet) {
    std::vector<std::uint32_t> sum = partial(packet);
    for (std::size_t i = 0; i < kCount; ++i) sum[i] += 0x01010101u * (i + 1);
    return sum;
  }

  std::vector<TxFrame> send(std::uint16_t rank, std::uint32_t packet, std::uint8_t ecn = 0) {
    const wire::Header h = header(rank, packet);
    return model_.process_frame(
        rank % 4, frame_from(child_.workers[rank], encode_packet(h, values(rank, packet)), ecn));
  }
  std::vector<TxFrame> from_parent(const Bytes& frame) { return model_.process_frame(3, frame); }
  // All three members' contributions to `packet`; returns what the last one made.
  std::vector<TxFrame> complete(std::uint32_t packet) {
    send(0, packet);
    send(1, packet, 1);
    return send(2, packet, 2);
  }
  TxFrame up(std::uint32_t packet) const {
    return expected_to_parent(child_, round_header(packet), partial(packet), 3);
  }
  Bytes result(std::uint32_t packet, std::uint8_t ecn = 0) const {
    return parent_result_frame(child_, round_header(packet), total(packet), 77, ecn);
  }
  std::vector<TxFrame> multicast(std::uint32_t packet, std::uint8_t ecn) const {
    wire::Header h = round_header(packet);
    h.exponent = 77;  // the parent's
    return expected_multicast(child_, h, total(packet), ecn);
  }

  Model model_;
  ModelBus<Model> bus_{model_};
  // Entry 1: three workers, slots [4, 6); at the parent job 40, rank 2, slots from 20.
  JobSpec child_ = make_child_job(7, 3, 4, 2, 32, 40, 2, 20);
  JobSpec plain_ = make_job(8, 2, 10, 2, 32);  // entry 0: no parent
};

TEST_F(HlsTree, ACompletedRoundGoesToTheParentAsOneContribution) {
  EXPECT_TRUE(send(0, 0).empty());
  EXPECT_TRUE(send(1, 0, 1).empty());
  const std::vector<TxFrame> out = send(2, 0, 2);
  ASSERT_EQ(out.size(), 1u) << "one frame, to the parent, none to the members";
  EXPECT_EQ(out[0], up(0));
  // Decoded independently: what the parent sees.
  const Result r = decode_result(out[0]);
  EXPECT_EQ(r.port, kParentPort);
  EXPECT_EQ(r.header.type, wire::MsgType::kContribution);
  EXPECT_EQ(r.header.job_id, 40);
  EXPECT_EQ(r.header.rank, 2);
  EXPECT_EQ(r.header.slot, 20);
  EXPECT_EQ(r.header.set, 0);
  EXPECT_EQ(r.header.seq, 0u);
  EXPECT_EQ(r.header.epoch, kEpoch);
  EXPECT_EQ(r.header.exponent, exponent(2, 0));
  EXPECT_TRUE(r.header.fresh);
  EXPECT_FALSE(r.header.recovery);
  EXPECT_EQ(r.address.ecn, 3);
  EXPECT_EQ(r.address.dst_ip, kParentAddress.ip);
  EXPECT_EQ(r.address.dst_port, kParentAddress.port);
  EXPECT_EQ(r.values, partial(0));
  EXPECT_TRUE(model_.core().round_state(4, 0).upstream);
  expect_only({{Counter::kFramesIn, 3},
               {Counter::kAggregated, 3},
               {Counter::kSentToParent, 1},
               {Counter::kFramesOut, 1}});
  // Packet 5 (slot 5, set 0) is no longer fresh: neither is its sum.
  for (std::uint32_t p = 1; p < 5; ++p) complete(p);
  const auto later = complete(5);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0], up(5));
  EXPECT_FALSE(decode_result(later[0]).header.fresh);
  EXPECT_EQ(decode_result(later[0]).header.slot, 21);
}

TEST_F(HlsTree, ARetransmissionWhileTheRoundWaitsSendsTheSumAgain) {
  complete(0);
  EXPECT_EQ(send(1, 0), std::vector{up(0)});
  EXPECT_EQ(send(0, 0), std::vector{up(0)});
  EXPECT_EQ(count(Counter::kResentToParent), 2u);
  EXPECT_EQ(count(Counter::kSentToParent), 1u);
  EXPECT_EQ(count(Counter::kResultsResent), 0u);
  EXPECT_EQ(count(Counter::kCompletions), 0u);
  EXPECT_EQ(count(Counter::kFramesOut), 3u);
  // A retransmission changes nothing about the round: the result still completes it.
  EXPECT_EQ(from_parent(result(0)), multicast(0, 3));
}

TEST_F(HlsTree, TheParentsResultCompletesTheRoundForEveryMember) {
  complete(0);
  // The parent's values and exponent, the ECN bits ORed with the round's.
  EXPECT_EQ(from_parent(result(0, 1)), multicast(0, 3));
  EXPECT_FALSE(model_.core().round_state(4, 0).upstream);
  expect_only({{Counter::kFramesIn, 4},
               {Counter::kAggregated, 3},
               {Counter::kSentToParent, 1},
               {Counter::kResultsFromParent, 1},
               {Counter::kCompletions, 1},
               {Counter::kFramesOut, 4}});
  // Answered: a retransmission gets the parent's result by unicast, as from any aggregator, and
  // another copy of the result is a duplicate.
  wire::Header h = round_header(0);
  h.exponent = 77;
  EXPECT_EQ(send(1, 0), std::vector{expected_result(child_, 1, h, total(0), 3)});
  EXPECT_TRUE(from_parent(result(0)).empty());
  EXPECT_EQ(count(Counter::kResultsResent), 1u);
  EXPECT_EQ(count(Counter::kDroppedDuplicate), 1u);
  // The next round of the slot (packet 4: slot 4, set 0) goes up again.
  complete(1), complete(2), complete(3);
  EXPECT_EQ(complete(4), std::vector{up(4)});
  EXPECT_EQ(from_parent(result(4)), multicast(4, 3));
}

TEST_F(HlsTree, ResultsThatMatchNoWaitingRoundAreDropped) {
  EXPECT_TRUE(from_parent(result(0)).empty());
  EXPECT_EQ(count(Counter::kDroppedNoRound), 1u) << "no round";
  send(0, 0);
  EXPECT_TRUE(from_parent(result(0)).empty());
  EXPECT_EQ(count(Counter::kDroppedNoRound), 2u) << "a round in progress";
  send(1, 0, 1), send(2, 0, 2);

  const wire::Header h = round_header(0);
  const auto dropped = [&](const Bytes& frame, Counter reason) {
    const std::uint64_t before = count(reason);
    EXPECT_TRUE(from_parent(frame).empty()) << csr::name(reason);
    EXPECT_EQ(count(reason), before + 1) << csr::name(reason);
  };
  const auto with = [&](auto change) {
    wire::Header x = h;
    change(x);
    return x;
  };
  const std::vector<std::uint32_t> v = total(0);
  // Not from the parent: another address, another UDP port, a worker.
  dropped(parent_result_frame(child_, h, v, 77, 0, Endpoint{0x0A00C802u, 40000}),
          Counter::kDroppedNotContribution);
  dropped(parent_result_frame(child_, h, v, 77, 0, Endpoint{kParentAddress.ip, 40001}),
          Counter::kDroppedNotContribution);
  dropped(parent_result_frame(child_, h, v, 77, 0, child_.workers[0].address),
          Counter::kDroppedNotContribution);
  // For another job at the parent.
  {
    JobSpec other = child_;
    other.parent->job_id = 41;
    dropped(parent_result_frame(other, h, v, 77), Counter::kDroppedNotContribution);
  }
  // Not for this aggregator's rank at the parent.
  {
    JobSpec other = child_;
    other.parent->rank = 1;
    dropped(parent_result_frame(other, h, v, 77), Counter::kDroppedRankOutOfRange);
  }
  // Slots outside the parent's range of the job: [20, 22).
  dropped(parent_result_frame(child_, with([](auto& x) { x.slot = 6; }), v, 77),
          Counter::kDroppedSlotOutOfRange);
  dropped(parent_result_frame(child_, with([](auto& x) { x.slot = 3; }), v, 77),
          Counter::kDroppedSlotOutOfRange);
  // More elements than the job's packets hold.
  dropped(parent_result_frame(child_, h, std::vector<std::uint32_t>(33, 1), 77),
          Counter::kDroppedCountTooLargeForJob);
  // Another run, an older or a newer packet of the set, another count or dtype.
  dropped(parent_result_frame(child_, with([](auto& x) { x.epoch = 1; }), v, 77),
          Counter::kDroppedStaleEpoch);
  dropped(parent_result_frame(child_, with([](auto& x) { x.seq = 0xFFFFFFFFu; }), v, 77),
          Counter::kDroppedStale);
  dropped(parent_result_frame(child_, with([](auto& x) { x.seq = 4; }), v, 77),
          Counter::kDroppedNoRound);
  dropped(parent_result_frame(child_, h, std::vector<std::uint32_t>(19, 1), 77),
          Counter::kDroppedCountMismatch);
  dropped(
      parent_result_frame(child_, with([](auto& x) { x.dtype = wire::DataType::kFp32; }), v, 77),
      Counter::kDroppedDtypeMismatch);
  // A result sent to the aggregator's own job (from the parent's address, the child's job id
  // and rank): not the parent's job.
  {
    JobSpec self = child_;
    self.parent->job_id = child_.job_id;
    self.parent->rank = 0;
    self.parent->slot_base = child_.slot_base;
    dropped(parent_result_frame(self, h, v, 77), Counter::kDroppedNotContribution);
  }
  EXPECT_EQ(count(Counter::kFramesOut), 1u) << "the sum to the parent, nothing else";
  EXPECT_TRUE(model_.core().round_state(4, 0).upstream) << "the round still waits";
  EXPECT_EQ(from_parent(result(0)), multicast(0, 3));
}

TEST_F(HlsTree, AFreshRoundOfANewRunReplacesARoundWaitingForTheParent) {
  complete(0);
  // A new run (another epoch) starts on the set: its fresh packet takes it over.
  wire::Header h = header(0, 0);
  h.epoch = kEpoch + 1;
  EXPECT_TRUE(model_.process_frame(0, frame_from(child_.workers[0], encode_packet(h, values(0, 0))))
                  .empty());
  EXPECT_FALSE(model_.core().round_state(4, 0).upstream);
  EXPECT_TRUE(from_parent(result(0)).empty());  // the old run's result
  EXPECT_EQ(count(Counter::kDroppedStaleEpoch), 1u);
}

TEST_F(HlsTree, Fp32SumsGoUpAndTheParentsResultComesDown) {
  const std::vector<float> x = {1.5f, -2.25f, 1e30f, 3.0f};
  const std::vector<float> y = {0.1f, 7.0f, -1e30f, -3.0f};
  const std::vector<float> z = {1e-40f, 0.5f, 1.0f, 0.0f};
  const auto contribution = [&](std::uint16_t rank, const std::vector<float>& v) {
    wire::Header h = contribution_header(child_, rank, 1, 4, wire::DataType::kFp32);
    h.epoch = kEpoch;
    h.fresh = 1;
    std::vector<std::uint32_t> b;
    for (float f : v) b.push_back(bits(f));
    return model_.process_frame(rank, frame_from(child_.workers[rank], encode_packet(h, b)));
  };
  contribution(0, x);
  contribution(1, y);
  const auto out = contribution(2, z);
  ASSERT_EQ(out.size(), 1u);
  const Result r = decode_result(out[0]);
  EXPECT_EQ(r.header.dtype, wire::DataType::kFp32);
  EXPECT_EQ(r.header.slot, 21);        // packet 1: slot 5
  for (std::size_t i = 0; i < 4; ++i)  // arrival order: (x + y) + z
    EXPECT_EQ(r.values[i], host_add(host_add(bits(x[i]), bits(y[i])), bits(z[i]))) << i;
  wire::Header round = contribution_header(child_, 0, 1, 4, wire::DataType::kFp32);
  round.epoch = kEpoch;
  const std::vector<std::uint32_t> down = {bits(10.0f), 0x7FC00000u, bits(-0.0f), bits(1e-41f)};
  const auto results = from_parent(parent_result_frame(child_, round, down, 5));
  round.exponent = 5;
  EXPECT_EQ(results, expected_multicast(child_, round, down));
}

TEST_F(HlsTree, Bf16SumsAreRoundedOnTheWayUpAndTakenAsTheyComeDown) {
  const auto contribution = [&](std::uint16_t rank, std::uint16_t a, std::uint16_t b) {
    wire::Header h = contribution_header(child_, rank, 0, 2, wire::DataType::kBf16);
    h.epoch = kEpoch;
    const std::vector<std::uint32_t> v = {a, b};
    return model_.process_frame(rank, frame_from(child_.workers[rank], encode_packet(h, v)));
  };
  // 1 + 2^-8 + 2^-8 (fp32 exact: 1 + 2^-7, a bf16) and 1 + 2^-9 + 2^-9 + 2^-9 (1 + 3 * 2^-9,
  // between bf16 values: rounded).
  contribution(0, 0x3F80, 0x3F80);
  contribution(1, 0x3B80, 0x3B00);
  const auto out = contribution(2, 0x3B80, 0x3B80);
  ASSERT_EQ(out.size(), 1u);
  const Result r = decode_result(out[0]);
  const std::uint32_t a = host_add(host_add(0x3F800000u, 0x3B800000u), 0x3B800000u);
  const std::uint32_t b = host_add(host_add(0x3F800000u, 0x3B000000u), 0x3B800000u);
  EXPECT_EQ(r.values, (std::vector<std::uint32_t>{reference_bf16(a), reference_bf16(b)}));
  wire::Header round = contribution_header(child_, 0, 0, 2, wire::DataType::kBf16);
  round.epoch = kEpoch;
  const std::vector<std::uint32_t> down = {0x4000, 0xC0A1};
  EXPECT_EQ(from_parent(parent_result_frame(child_, round, down, wire::kExponentNone)),
            expected_multicast(child_, round, down));
}

TEST_F(HlsTree, AJobWithoutAParentIsAnsweredAsBefore) {
  const std::vector<std::uint32_t> a{1, 2}, b{10, 20};
  model_.process_frame(0, contribution_frame(plain_, 0, 0, a));
  const auto out = model_.process_frame(1, contribution_frame(plain_, 1, 0, b));
  EXPECT_EQ(out, expected_multicast(plain_, contribution_header(plain_, 0, 0, 2),
                                    std::vector<std::uint32_t>{11, 22}));
  EXPECT_EQ(count(Counter::kSentToParent), 0u);
  // The child's entry stored again without a parent: its rounds are answered here.
  JobSpec alone = child_;
  alone.parent.reset();
  program_job(bus_, alone, 1, kAggregator);
  EXPECT_EQ(complete(0).size(), 3u);
  EXPECT_EQ(count(Counter::kSentToParent), 0u);
  // And with a parent again; a soft reset forgets it with the job.
  program_job(bus_, child_, 1, kAggregator);
  EXPECT_EQ(complete(0), std::vector{up(0)});
  soft_reset(bus_);
  EXPECT_TRUE(from_parent(result(0)).empty());
  EXPECT_EQ(count(Counter::kDroppedNotContribution), 1u);
}

TEST_F(HlsTree, TheDriverWritesTheParentAndChecksIt) {
  EXPECT_EQ(model_.csr_read(csr::kJobParentId), csr::kJobParentValid | 40u);
  EXPECT_EQ(model_.csr_read(csr::kJobParentRank), 2u);
  EXPECT_EQ(model_.csr_read(csr::kJobParentSlots), 20u);
  EXPECT_EQ(model_.csr_read(csr::kJobParentIp), kParentAddress.ip);
  EXPECT_EQ(model_.csr_read(csr::kJobParentUdpPort), 3u << 16 | kParentAddress.port);
  EXPECT_EQ(model_.csr_read(csr::kJobParentMacLo), 0x00C80001u);
  EXPECT_EQ(model_.csr_read(csr::kJobParentMacHi), 0x0200u);
  program_job(bus_, plain_, 0, kAggregator);
  EXPECT_EQ(model_.csr_read(csr::kJobParentId), 0u) << "a job without a parent clears it";

  const DeviceInfo info = read_device_info(bus_);
  EXPECT_NO_THROW(check_job(info, child_, 1));
  JobSpec far = child_;
  far.parent->switch_port = 4;
  EXPECT_THROW(check_job(info, far, 1), Error);
  JobSpec wide = child_;
  wide.parent->slot_base = 0xFFFF;
  EXPECT_THROW(check_job(info, wide, 1), Error);

  // A design without the JOB_PARENT_* registers (unmapped: writes ignored, reads 0) takes no
  // child job: it would answer the members itself.
  class WithoutParentRegisters final : public CsrBus {
   public:
    explicit WithoutParentRegisters(CsrBus& bus) : bus_(bus) {}
    static bool parent_register(std::uint32_t a) {
      return a >= csr::kJobParentId && a <= csr::kJobParentMacHi;
    }
    std::uint32_t read32(std::uint32_t a) override {
      return parent_register(a) ? 0 : bus_.read32(a);
    }
    void write32(std::uint32_t a, std::uint32_t v) override {
      if (!parent_register(a)) bus_.write32(a, v);
    }

   private:
    CsrBus& bus_;
  } old_design(bus_);
  const std::uint64_t commits = model_.csr_read(csr::kCommit) >> 16;
  try {
    program_job(old_design, child_, 2, kAggregator);
    ADD_FAILURE() << "a child job on a design without JOB_PARENT_*";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("JOB_PARENT"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model_.csr_read(csr::kCommit) >> 16, commits + 1 + child_.workers.size())
      << "the entry removed, the workers stored, the job not";
  EXPECT_NO_THROW(program_job(old_design, plain_, 0, kAggregator));
  // Without a MAC or port: derived from the address, port 0.
  JobSpec bare = child_;
  bare.parent->mac.reset();
  bare.parent->switch_port.reset();
  program_job(bus_, bare, 1, kAggregator);
  EXPECT_EQ(model_.csr_read(csr::kJobParentUdpPort), kParentAddress.port);
  EXPECT_EQ(parent_mac(*bare.parent)[0], 0x02);
  EXPECT_EQ(parent_mac(*bare.parent), parent_mac(*bare.parent));
  const auto out = complete(0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 0u);
  EXPECT_EQ(decode_result(out[0]).address.dst_mac, parent_mac(*bare.parent));
}

// The parent's MAC and port in a job description (docs/job-format.md), read and written back.
TEST(JobParent, MacAndSwitchPortAreReadAndWritten) {
  const JobSpec job = parse_job(R"({"job_id": 7, "slots": {"base": 4, "count": 2},
      "elements_per_packet": 8, "workers": [{"rank": 0, "address": "10.0.7.1:30700"}],
      "parent": {"address": "10.0.200.1:40000", "job_id": 40, "rank": 2, "slot_base": 20,
                 "mac": "02:00:00:c8:00:01", "switch_port": 3}})");
  ASSERT_TRUE(job.parent);
  EXPECT_EQ(job.parent->mac, kParentMac);
  EXPECT_EQ(job.parent->switch_port, std::optional<std::uint16_t>(3));
  EXPECT_EQ(parse_job(to_json(job)).parent, job.parent);
  JobSpec bare = job;
  bare.parent->mac.reset();
  bare.parent->switch_port.reset();
  const std::string text = to_json(bare);
  EXPECT_EQ(text.find("switch_port"), std::string::npos);
  EXPECT_EQ(parse_job(text).parent, bare.parent);
  EXPECT_THROW(parse_job(R"({"job_id": 7, "slots": {"base": 4, "count": 2},
      "elements_per_packet": 8, "workers": [{"rank": 0, "address": "10.0.7.1:30700"}],
      "parent": {"address": "10.0.200.1:40000", "rank": 2, "slot_base": 20, "mac": "02:00"}})"),
               Error);
}

}  // namespace
}  // namespace netagg::fpga

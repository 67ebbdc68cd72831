// SPDX-License-Identifier: Apache-2.0
// Every check of an ingress frame: the shared golden vectors (tests/vectors/wire) and one case
// for every drop reason of the CSR map's counters that a single frame can trigger. A dropped
// frame is counted once, under its reason, and touches no slot; it is answered with a notice if
// its sender can act on the reason, else with nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <vector>

#include "fpga_test_util.hpp"
#include "netagg/exact.hpp"
#include "vectors.hpp"

namespace netagg::fpga {
namespace {

using namespace netagg::fpga::testing;  // NOLINT
// csr::Counter, not fpga::Counter (a counter read back by name).
using Counter = csr::Counter;
using netagg::testing::load_vectors;
using netagg::testing::Vector;
using netagg::testing::vectors_dir;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The golden vectors use slots up to 65535; a pool of 1024 holds all but max_count's.
using VectorParams = Params<4, 1024, 16, 8, 32>;
using VectorModel = ReferenceModel<VectorParams>;
using Model = ReferenceModel<>;

std::uint64_t counter_by_name(const VectorModel& m, const std::string& name) {
  for (std::size_t i = 0; i < csr::kCounterCount; ++i)
    if (csr::kCounterNames[i] == name) return m.counter(static_cast<unsigned>(i));
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// Frames dropped, by any reason.
std::uint64_t total_counted(const VectorModel& m) {
  std::uint64_t n = 0;
  for (std::size_t i = csr::index(Counter::kMalformedTruncated);
       i <= csr::index(Counter::kDroppedNoRound); ++i)
    n += m.counter(static_cast<unsigned>(i));
  return n;
}

std::uint32_t parse_ip(const std::string& s) { return Endpoint::parse(s + ":1").ip; }

wire::Mac parse_mac(const std::string& s) {
  wire::Mac m{};
  for (int i = 0; i < 6; ++i)
    m[i] = static_cast<std::uint8_t>(std::stoul(s.substr(3 * i, 2), nullptr, 16));
  return m;
}

// A job that accepts the vector's contribution: its id, its rank's address (the frame's source
// for frame vectors), a slot range around its slot, the largest count.
JobSpec job_for(const Vector& v) {
  const auto rank = static_cast<unsigned>(v.integer("rank"));
  const auto slot = static_cast<std::uint16_t>(v.integer("slot"));
  const unsigned workers = std::min(std::max(rank + 1, 2u), 32u);  // the round stays open
  JobSpec job = make_job(static_cast<std::uint16_t>(v.integer("job_id")), workers,
                         static_cast<std::uint16_t>(slot & ~7u), 8, 1024);
  if (v.at("layer") == "frame") {
    job.workers[rank].address.ip = parse_ip(v.at("frame.src_ip"));
    job.workers[rank].address.port = static_cast<std::uint16_t>(v.integer("frame.src_port"));
    job.workers[rank].mac = parse_mac(v.at("frame.src_mac"));
  }
  return job;
}

class HlsOnVector : public ::testing::TestWithParam<Vector> {};

TEST_P(HlsOnVector, MalformedIsCountedValidIsAggregatedBitForBit) {
  const Vector& v = GetParam();
  VectorModel model;
  ModelBus<VectorModel> bus(model);
  set_aggregator_address(bus, kAggregator);
  const bool valid = v.at("expect") == "ok";
  // Jobs the driver refuses (more elements than a slot holds, slots beyond the pool), so that
  // the device's own checks decide.
  const JobSpec job = valid ? job_for(v) : make_job(1, 4, 0, 8, 1024);
  store_job(bus, job, 0, VectorParams::kNumPorts);

  // Packet vectors travel in a frame from the sender's registered address.
  std::vector<std::byte> frame = v.bytes;
  if (v.at("layer") == "packet") {
    const unsigned rank = valid ? static_cast<unsigned>(v.integer("rank")) : 0;
    frame = frame_from(job.workers[rank], v.bytes);
  }
  const auto out = model.process_frame(1, frame);
  EXPECT_EQ(model.counter(csr::index(Counter::kFramesIn)), 1u);
  if (!valid) {
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(counter_by_name(model, "malformed_" + v.at("expect")), 1u);
    EXPECT_EQ(total_counted(model), 1u);
    return;
  }
  const auto rank = static_cast<std::uint16_t>(v.integer("rank"));
  const auto slot = static_cast<int>(v.integer("slot"));
  if (v.at("type") != "contribution") {
    EXPECT_EQ(model.counter(csr::index(Counter::kDroppedNotContribution)), 1u);
    EXPECT_EQ(total_counted(model), 1u);
    return;
  }
  if (slot >= VectorParams::kSlots) {
    EXPECT_EQ(model.counter(csr::index(Counter::kDroppedSlotOutOfRange)), 1u);
    EXPECT_EQ(total_counted(model), 1u);
    // Answered with a notice, unless a recovery copy (its sender has the result).
    if (v.integer("recovery") != 0)
      EXPECT_TRUE(out.empty());
    else
      EXPECT_THAT(out, ElementsAre(expected_notice(1, frame, wire::NoticeReason::kSlotOutOfRange)));
    return;
  }
  EXPECT_TRUE(out.empty());
  if (v.integer("recovery") != 0) {  // a recovery copy never starts a round
    EXPECT_EQ(model.counter(csr::index(Counter::kDroppedNoRound)), 1u);
    EXPECT_EQ(total_counted(model), 1u);
    return;
  }
  EXPECT_EQ(model.counter(csr::index(Counter::kAggregated)), 1u);
  const auto set = static_cast<int>(v.integer("set"));
  const RoundState& round = model.core().round_state(slot, set);
  EXPECT_TRUE(round.has_round);
  EXPECT_EQ(round.seq, static_cast<std::uint32_t>(v.integer("seq")));
  EXPECT_EQ(round.epoch, static_cast<std::uint32_t>(v.integer("epoch")));
  EXPECT_EQ(round.count, v.integer("count"));
  EXPECT_EQ(round.exponent, v.integer("exponent"));

  // The other workers add the identity (int32 0, fp32/bf16 -0: x + -0 = x for every x here); the
  // result must then carry the vector's own fields and values, byte for byte.
  const wire::DecodedFrame decoded = wire::decode_frame(frame);
  ASSERT_TRUE(decoded);
  const wire::Header& h = decoded.packet.header;
  // Exact fp32: the others send fp32_exact zeros at the vector's scale, announcing none; the
  // result is the vector's elements through a lane, rounded once, as fp32_exact.
  const bool exact =
      h.dtype == wire::DataType::kFp32Exact || h.dtype == wire::DataType::kExactLanes;
  const std::uint32_t zero = h.dtype == wire::DataType::kInt32  ? 0u
                             : h.dtype == wire::DataType::kFp32 ? 0x80000000u
                             : exact                            ? 0u
                                                                : 0x8000u;
  const std::vector<std::uint32_t> identity(h.count, zero);
  std::vector<TxFrame> results;
  for (std::uint16_t r = 0; r < job.workers.size(); ++r) {
    if (r == rank) continue;
    wire::Header other = h;
    other.rank = r;
    other.exponent = wire::kExponentNone;
    if (exact) {
      other.dtype = wire::DataType::kFp32Exact;
      other.exponent = static_cast<std::int16_t>(exact::scale_code(h.exponent) << 8);
    }
    results = model.process_frame(0, frame_from(job.workers[r], encode_packet(other, identity)));
  }
  std::vector<std::uint32_t> values;
  const std::byte* payload = decoded.packet.payload.data();
  const auto scale = exact::from_code(exact::scale_code(h.exponent));
  for (std::size_t i = 0; i < h.count; ++i) {
    if (h.dtype == wire::DataType::kBf16) {
      values.push_back(wire::load_be16(payload + 2 * i));
    } else if (h.dtype == wire::DataType::kExactLanes) {
      const auto v =
          static_cast<std::int64_t>(std::uint64_t{wire::load_be32(payload + 8 * i)} << 32 |
                                    wire::load_be32(payload + 8 * i + 4));
      values.push_back(std::bit_cast<std::uint32_t>(exact::to_fp32(exact::from_wire(v), *scale)));
    } else if (h.dtype == wire::DataType::kFp32Exact) {
      const float x = std::bit_cast<float>(wire::load_be32(payload + 4 * i));
      values.push_back(
          std::bit_cast<std::uint32_t>(exact::to_fp32(exact::to_lane(x, *scale), *scale)));
    } else {
      values.push_back(wire::load_be32(payload + 4 * i));
    }
  }
  wire::Header out_header = h;
  if (exact) out_header.dtype = wire::DataType::kFp32Exact;  // results: rounded to fp32
  EXPECT_EQ(results, expected_multicast(job, out_header, values, decoded.address.ecn));
}

std::string vector_name(const ::testing::TestParamInfo<Vector>& info) {
  return info.param.at("name");
}

INSTANTIATE_TEST_SUITE_P(Wire, HlsOnVector,
                         ::testing::ValuesIn(load_vectors(vectors_dir() / "wire")), vector_name);

// ---- One frame for every drop reason ----------------------------------------------------------

void fix_ip_checksum(std::vector<std::byte>& f) {
  f[24] = f[25] = std::byte{0};
  wire::store_be16(f.data() + 24, wire::ipv4_checksum({f.data() + 14, 20}));
}

struct DropCase {
  std::string name;
  Counter reason;
  std::function<std::vector<std::byte>(const JobSpec&)> frame;
  friend void PrintTo(const DropCase& c, std::ostream* os) { *os << c.name; }
};

// Rank 1's contribution of 4 int32 to slot 5 (job 7, slots [4, 8), 16 elements per packet),
// changed by `edit` on the header and `frame_edit` on the bytes.
std::vector<std::byte> base_frame(const JobSpec& job,
                                  const std::function<void(wire::Header&)>& edit = {},
                                  std::size_t payload_bytes = 16) {
  wire::Header h = contribution_header(job, 1, 1, 4);
  if (edit) edit(h);
  std::vector<std::byte> packet(wire::kHeaderSize + payload_bytes);
  wire::Header encodable = h;
  encodable.count = std::min<std::uint16_t>(h.count, wire::kMaxCount);
  EXPECT_TRUE(wire::encode_header(encodable, packet));
  wire::store_be16(packet.data() + wire::offset::kCount, h.count);
  for (std::size_t i = 0; i < payload_bytes; ++i) packet[wire::kHeaderSize + i] = std::byte(i + 1);
  return frame_from(job.workers[1], packet);
}

std::vector<std::byte> edited(std::vector<std::byte> f, std::size_t at, std::uint8_t value,
                              bool ip_checksum = false) {
  f.at(at) = std::byte{value};
  if (ip_checksum) fix_ip_checksum(f);
  return f;
}

std::vector<DropCase> drop_cases() {
  using H = wire::Header;
  return {
      {"truncated_frame", Counter::kMalformedTruncated,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         f.resize(41);
         return f;
       }},
      {"truncated_packet", Counter::kMalformedTruncated,
       [](const JobSpec& j) {
         std::vector<std::byte> packet(10, std::byte{1});
         return frame_from(j.workers[1], packet);
       }},
      {"empty_frame", Counter::kMalformedTruncated,
       [](const JobSpec&) { return std::vector<std::byte>{}; }},
      {"not_ipv4", Counter::kMalformedNotIpv4,
       [](const JobSpec& j) { return edited(base_frame(j), 12, 0x86); }},
      {"bad_ip_checksum", Counter::kMalformedBadIpHeader,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         f[25] ^= std::byte{0x5A};
         return f;
       }},
      {"bad_ip_ihl", Counter::kMalformedBadIpHeader,
       [](const JobSpec& j) { return edited(base_frame(j), 14, 0x46, true); }},
      {"ip_fragment", Counter::kMalformedBadIpHeader,
       [](const JobSpec& j) { return edited(base_frame(j), 20, 0x60, true); }},  // DF + MF
      {"not_udp", Counter::kMalformedNotUdp,
       [](const JobSpec& j) { return edited(base_frame(j), 23, 6, true); }},
      {"wrong_port", Counter::kMalformedWrongPort,
       [](const JobSpec& j) {
         return frame_from(
             j.workers[1],
             encode_packet(contribution_header(j, 1, 1, 1), std::vector<std::uint32_t>{1}), 0,
             20034);
       }},
      {"ip_length_beyond_frame", Counter::kMalformedIpLengthMismatch,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         wire::store_be16(f.data() + 16, static_cast<std::uint16_t>(f.size() - 14 + 4));
         fix_ip_checksum(f);
         return f;
       }},
      {"ip_length_too_small", Counter::kMalformedIpLengthMismatch,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         wire::store_be16(f.data() + 16, 27);
         fix_ip_checksum(f);
         return f;
       }},
      {"udp_length_mismatch", Counter::kMalformedUdpLengthMismatch,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         wire::store_be16(f.data() + 38, static_cast<std::uint16_t>(f.size() - 34 - 2));
         return f;
       }},
      {"bad_version", Counter::kMalformedBadVersion,
       [](const JobSpec& j) { return edited(base_frame(j), 42, 2); }},
      {"bad_type", Counter::kMalformedBadType,
       [](const JobSpec& j) { return edited(base_frame(j), 43, 4); }},
      {"bad_dtype", Counter::kMalformedBadDtype,
       [](const JobSpec& j) {
         return edited(base_frame(j), 44, static_cast<std::uint8_t>(wire::kDataTypeCount));
       }},
      {"bad_flags", Counter::kMalformedBadFlags,
       [](const JobSpec& j) { return edited(base_frame(j), 45, 0x09); }},
      {"count_too_large", Counter::kMalformedCountTooLarge,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.count = 1025; }); }},
      {"payload_short", Counter::kMalformedLengthMismatch,
       [](const JobSpec& j) { return base_frame(j, {}, 15); }},
      {"payload_long", Counter::kMalformedLengthMismatch,
       [](const JobSpec& j) { return base_frame(j, {}, 20); }},
      {"bf16_length", Counter::kMalformedLengthMismatch,
       [](const JobSpec& j) {
         return base_frame(j, [](H& h) { h.dtype = wire::DataType::kBf16; });
       }},
      {"padded_past_the_stored_beats", Counter::kMalformedLengthMismatch,
       [](const JobSpec& j) {
         auto f = base_frame(j);
         f.resize(64 * 18 + 1, std::byte{0});  // fine padding for decode_frame, not for the FPGA
         return f;
       }},
      {"not_contribution", Counter::kDroppedNotContribution,
       [](const JobSpec& j) {
         return base_frame(j, [](H& h) { h.type = wire::MsgType::kResult; });
       }},
      {"notice", Counter::kDroppedNotContribution,
       [](const JobSpec& j) {
         return base_frame(j, [](H& h) { h.type = wire::MsgType::kNotice; });
       }},
      {"unknown_job", Counter::kDroppedUnknownJob,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.job_id = 99; }); }},
      {"rank_out_of_range", Counter::kDroppedRankOutOfRange,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.rank = 3; }); }},
      {"rank_beyond_bitmap", Counter::kDroppedRankOutOfRange,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.rank = 40; }); }},
      {"foreign_source_ip", Counter::kDroppedForeignSource,
       [](const JobSpec& j) {
         auto f = edited(base_frame(j), 29, 77, true);
         return f;
       }},
      {"foreign_source_port", Counter::kDroppedForeignSource,
       [](const JobSpec& j) { return edited(base_frame(j), 35, 0x99); }},
      {"foreign_source_other_rank", Counter::kDroppedForeignSource,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.rank = 0; }); }},
      {"slot_below_range", Counter::kDroppedSlotOutOfRange,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.slot = 3; }); }},
      {"slot_above_range", Counter::kDroppedSlotOutOfRange,
       [](const JobSpec& j) { return base_frame(j, [](H& h) { h.slot = 8; }); }},
      {"count_above_job", Counter::kDroppedCountTooLargeForJob,
       [](const JobSpec& j) {
         return base_frame(
             j, [](H& h) { h.count = 17; }, 68);
       }},
      {"count_above_slot_memory", Counter::kDroppedCountTooLargeForJob,
       [](const JobSpec& j) {
         // A well-formed frame of 300 elements (20 beats, no padding) to job 8, which allows
         // 1024 elements a packet: more than a slot holds (256), too large, not malformed.
         return base_frame(
             j,
             [](H& h) {
               h.job_id = 8;
               h.count = 300;
               h.slot = 9;
             },
             1200);
       }},
  };
}

class HlsDrops : public ::testing::TestWithParam<DropCase> {};

TEST_P(HlsDrops, CountedUnderItsReasonAndTouchesNothing) {
  Model model;
  ModelBus<Model> bus(model);
  const JobSpec job = make_job(7, 3, 4, 4, 16);
  program_job(bus, job, 0, kAggregator);
  JobSpec wide = make_job(8, 3, 8, 4, 1024);  // same worker addresses as job 7
  wide.workers = job.workers;
  store_job(bus, wide, 1, 4);  // more than a slot holds: refused by the driver's checks
  const auto frame = GetParam().frame(job);
  // Only a drop its sender can act on is answered: with a notice, out of the port it came in on.
  const auto reason = notice_reason(GetParam().reason);
  const auto out = model.process_frame(2, frame);
  if (reason) {
    EXPECT_THAT(out, ElementsAre(expected_notice(2, frame, *reason)));
  } else {
    EXPECT_THAT(out, IsEmpty());
  }
  for (std::size_t i = 0; i < csr::kCounterCount; ++i) {
    bool expected = i == csr::index(Counter::kFramesIn) || i == csr::index(GetParam().reason);
    if (reason)
      expected =
          expected || i == csr::index(Counter::kNotices) || i == csr::index(Counter::kFramesOut);
    EXPECT_EQ(model.counter(static_cast<unsigned>(i)), expected ? 1u : 0u) << csr::kCounterNames[i];
  }
  for (int slot = 0; slot < Model::Core::kSlots; ++slot)
    for (int set = 0; set < 2; ++set) EXPECT_FALSE(model.core().round_state(slot, set).has_round);
}

INSTANTIATE_TEST_SUITE_P(Reasons, HlsDrops, ::testing::ValuesIn(drop_cases()),
                         [](const auto& info) { return info.param.name; });

// A frame that passes is taken: the base of every case above is valid.
TEST(HlsDropsBase, TheUneditedFrameIsAggregated) {
  Model model;
  ModelBus<Model> bus(model);
  const JobSpec job = make_job(7, 3, 4, 4, 16);
  program_job(bus, job, 0, kAggregator);
  model.process_frame(2, base_frame(job));
  EXPECT_EQ(model.counter(csr::index(Counter::kAggregated)), 1u);
  EXPECT_TRUE(model.core().round_state(5, 0).has_round);
  // And its padded variant within the stored beats too (decode_frame's padding rule).
  auto padded = base_frame(job, [](wire::Header& h) { h.slot = 6; });
  padded.resize(64 * 17, std::byte{0});
  model.process_frame(2, padded);
  EXPECT_EQ(model.counter(csr::index(Counter::kAggregated)), 2u);
}

}  // namespace
}  // namespace netagg::fpga

// SPDX-License-Identifier: Apache-2.0
// The frame-level switch pipeline: every conformance vector of tests/vectors/switch replayed
// (exact frames out, outcomes, counters), the simple_switch_CLI parser's errors, a job
// configured from hand-written BMv2 lines of the contract and all-reduced through frames, and
// the replay's own comparison (it must notice a wrong frame).
#include "pipeline.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "netagg/error.hpp"
#include "netagg/wire.hpp"
#include "switch_vectors.hpp"

namespace netagg::sim {

// A failed vector's parameter as GoogleTest prints it: its name, not every byte (found by
// argument-dependent lookup, so in SwitchVector's namespace).
void PrintTo(const SwitchVector& v, std::ostream* os) { *os << v.name; }

namespace {

using ::testing::HasSubstr;

std::filesystem::path switch_vectors_dir() {
  return std::filesystem::path(NETAGG_VECTORS_DIR) / "switch";
}

std::vector<SwitchVector> all_vectors() { return load_switch_vectors(switch_vectors_dir()); }

class SwitchVectorReplay : public ::testing::TestWithParam<SwitchVector> {};

TEST_P(SwitchVectorReplay, PipelineDoesWhatTheVectorSays) {
  const SwitchVector& v = GetParam();
  ModelTarget target;
  const ReplayResult r = replay(v, target);
  EXPECT_EQ(r.steps, v.steps.size());
  for (const auto& f : r.failures) ADD_FAILURE() << v.file.string() << ": " << f;
}

INSTANTIATE_TEST_SUITE_P(Vectors, SwitchVectorReplay, ::testing::ValuesIn(all_vectors()),
                         [](const auto& info) { return info.param.name; });

// The cases of the issue are all there, so that a vector lost by accident fails here.
TEST(SwitchVectors, EveryConformanceCaseIsPresent) {
  std::set<std::string> names;
  for (const auto& v : all_vectors()) names.insert(v.name);
  for (const char* name : {"basic_reduction",
                           "retransmission_after_completion",
                           "other_set",
                           "both_sets",
                           "slot_reuse",
                           "ignored_retransmissions",
                           "retransmission_from_previous_set",
                           "foreign_job",
                           "unknown_source",
                           "slot_out_of_range",
                           "stale_and_ahead",
                           "count_checks",
                           "type_and_dtype",
                           "malformed",
                           "two_jobs",
                           "arp_and_icmp",
                           "l2_forwarding",
                           "rerun",
                           "takeover_unfinished",
                           "foreign_epoch",
                           "fresh_same_epoch",
                           "recovery_copies",
                           "restart_recovery",
                           "restart_recovery_lost",
                           "restart_orphan_round",
                           "ecn_or",
                           "tree_child",
                           "tree_child_rounds",
                           "tree_two_parents",
                           "notices"})
    EXPECT_TRUE(names.count(name)) << name;
}

// The replay must fail when the switch misbehaves: a target that flips one byte of each frame
// out, and one that sends nothing.
class TamperingTarget : public ModelTarget {
 public:
  explicit TamperingTarget(bool swallow) : swallow_(swallow) {}
  std::vector<FrameOut> exchange(std::uint16_t port, std::span<const std::byte> frame,
                                 std::size_t expected) override {
    auto out = ModelTarget::exchange(port, frame, expected);
    if (swallow_) return {};
    for (auto& f : out) f.bytes.back() ^= std::byte{1};
    return out;
  }

 private:
  bool swallow_;
};

TEST(SwitchVectors, ReplayNoticesWrongAndMissingFrames) {
  const SwitchVector v = load_switch_vector(switch_vectors_dir() / "basic_reduction.vec");
  TamperingTarget flip(false), swallow(true);
  const auto flipped = replay(v, flip);
  ASSERT_EQ(flipped.failures.size(), 3u);
  EXPECT_THAT(flipped.failures[0], HasSubstr("first difference at byte"));
  const auto swallowed = replay(v, swallow);
  ASSERT_EQ(swallowed.failures.size(), 3u);
  EXPECT_THAT(swallowed.failures[0], HasSubstr("did not come"));
  // And counters that differ from the vector's.
  SwitchVector wrong = v;
  wrong.counters["completions"] = 2;
  ModelTarget model;
  const auto r = replay(wrong, model);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0], HasSubstr("counter completions = 1, expected 2"));
}

// A switch that sends no notices (the P4 programs) fails the vectors that expect them and passes
// them replayed --without-notices; one that sends them fails --without-notices (frames that no
// step expects).
class NoNoticesTarget : public ModelTarget {
 public:
  std::vector<FrameOut> exchange(std::uint16_t port, std::span<const std::byte> frame,
                                 std::size_t expected) override {
    auto out = ModelTarget::exchange(port, frame, expected);
    std::erase_if(out, [](const FrameOut& f) { return is_notice_frame(f.bytes); });
    return out;
  }
};

TEST(SwitchVectors, ATargetWithoutNoticesIsReplayedWithoutThem) {
  const SwitchVector v = load_switch_vector(switch_vectors_dir() / "notices.vec");
  NoNoticesTarget quiet;
  const auto strict = replay(v, quiet);
  EXPECT_FALSE(strict.ok());
  EXPECT_THAT(strict.failures.at(0), HasSubstr("did not come"));
  NoNoticesTarget quiet2;
  EXPECT_TRUE(replay(v, quiet2, /*notices=*/false).ok());
  ModelTarget model;
  const auto loud = replay(v, model, /*notices=*/false);
  ASSERT_FALSE(loud.ok());
  EXPECT_THAT(loud.failures.at(0), HasSubstr("unexpected frame"));
}

// ---- the simple_switch_CLI lines ------------------------------------------------------------

std::string cli_error(const std::string& text) {
  try {
    parse_bmv2_cli(text, "lines.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Bmv2Cli, ErrorsNameTheLineAndTheProblem) {
  const std::string id =
      "table_set_default NetaggIngress.switch_identity set_switch_identity 02:00:00:00:00:fe "
      "10.0.0.254\n";
  EXPECT_EQ(cli_error(id + "\nregister_write NetaggIngress.bitmap 0 1\n"),
            "lines.txt:3: 'register_write NetaggIngress.bitmap 0 1': unknown command "
            "'register_write' (the contract uses table_add, table_set_default, mc_mgrp_create, "
            "mc_node_create, mc_node_associate, mirroring_add, reset_state)");
  EXPECT_THAT(cli_error("table_add NetaggIngress.jobs set_job 1 => 2 0 4 64 1"),
              HasSubstr("lines.txt:1: 'table_add NetaggIngress.jobs set_job 1 => 2 0 4 64 1': "
                        "unknown table 'NetaggIngress.jobs'"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_jobs 1 => 2 0 4 64 1"),
              HasSubstr("has no action 'set_jobs' (its action is set_job)"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_job 1 => 2 0 4 64"),
              HasSubstr("action set_job takes 5 parameter(s), got 4"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.worker_table set_worker 1 10.0.0.1 => 0"),
              HasSubstr("table NetaggIngress.worker_table takes 3 key(s), got 2"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_job 1 2 0 4 64 1"),
              HasSubstr("missing '=>'"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_job 1 => 256 0 4 64 1"),
              HasSubstr("worker_count 256 does not fit in 8 bits"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:01 => 512"),
              HasSubstr("port 512 does not fit in 9 bits"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.forward set_egress_port 02:00:00:00:01 => 1"),
              HasSubstr("hdr.ethernet.dst_addr: '02:00:00:00:01' is not a MAC"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.worker_table set_worker 1 10.0.0.300 5 => 0"),
              HasSubstr("hdr.ipv4.src_addr: '10.0.0.300' is not an IPv4 address"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_job x1 => 2 0 4 64 1"),
              HasSubstr("hdr.netagg.job_id 'x1' is not a number"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.job_table set_job 1 => 2 0 4 64 1\n"
                        "table_add NetaggIngress.job_table set_job 1 => 3 0 4 64 1"),
              HasSubstr("lines.txt:2: 'table_add NetaggIngress.job_table set_job 1 => 3 0 4 64 "
                        "1': duplicate entry: job 1 is in the job_table already (line 1)"));
  EXPECT_THAT(cli_error("table_set_default NetaggIngress.forward drop"),
              HasSubstr("the contract sets the default action of NetaggIngress.switch_identity "
                        "only"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.switch_identity set_switch_identity => a b"),
              HasSubstr("switch_identity is keyless"));
  EXPECT_THAT(cli_error("mc_mgrp_create 1\nmc_mgrp_create 1"),
              HasSubstr("lines.txt:2: 'mc_mgrp_create 1': multicast group 1 exists already"));
  EXPECT_THAT(cli_error("mc_node_create 1 1\nmc_node_associate 2 0"),
              HasSubstr("multicast group 2 was not created"));
  EXPECT_THAT(cli_error("mc_mgrp_create 1\nmc_node_associate 1 0"),
              HasSubstr("no node handle 0 (nodes created so far: 0)"));
  EXPECT_THAT(cli_error("mc_mgrp_create 1\nmc_node_create 1 1\nmc_node_associate 1 0\n"
                        "mc_node_associate 1 0"),
              HasSubstr("node 0 is associated with group 1 already"));
  EXPECT_THAT(cli_error("# a comment"), HasSubstr("unknown command '#'"));
  // reset_state forgets everything before it, as on BMv2.
  EXPECT_EQ(cli_error("mc_mgrp_create 1\nreset_state\nmc_mgrp_create 1"), "no error");
}

// ---- a job from hand-written BMv2 lines, all-reduced through frames -------------------------

// Job 7: three workers at 10.0.0.1..3, UDP 31000..31002, MACs 02:..:01..03 on ports 4..6;
// slots [16, 20), 8 elements per packet; group 1, rids 1..3 (as the contract numbers them).
constexpr const char* kJob7Lines =
    R"(table_set_default NetaggIngress.switch_identity set_switch_identity 02:00:00:00:00:fe 10.0.0.254
table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:01 => 4
table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:02 => 5
table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:03 => 6
table_add NetaggIngress.job_table set_job 7 => 3 16 4 8 1
table_add NetaggIngress.worker_table set_worker 7 10.0.0.1 31000 => 0
table_add NetaggIngress.worker_table set_worker 7 10.0.0.2 31001 => 1
table_add NetaggIngress.worker_table set_worker 7 10.0.0.3 31002 => 2
table_add NetaggEgress.result_destination set_result_destination 1 => 02:00:00:00:00:01 10.0.0.1 31000 0
table_add NetaggEgress.result_destination set_result_destination 2 => 02:00:00:00:00:02 10.0.0.2 31001 1
table_add NetaggEgress.result_destination set_result_destination 3 => 02:00:00:00:00:03 10.0.0.3 31002 2
mc_mgrp_create 1
mc_node_create 1 4
mc_node_create 2 5
mc_node_create 3 6
mc_node_associate 1 0
mc_node_associate 1 1
mc_node_associate 1 2
)";

struct Worker {
  std::uint16_t rank, port;
  wire::FrameAddress address;  // worker -> switch
};

std::vector<Worker> job7_workers() {
  std::vector<Worker> w;
  for (std::uint16_t r = 0; r < 3; ++r) {
    wire::FrameAddress a;
    a.src_mac = {0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(r + 1)};
    a.dst_mac = {0x02, 0, 0, 0, 0, 0xfe};
    a.src_ip = 0x0A000001u + r;
    a.dst_ip = 0x0A0000FEu;
    a.src_port = static_cast<std::uint16_t>(31000 + r);
    w.push_back({r, static_cast<std::uint16_t>(4 + r), a});
  }
  return w;
}

std::vector<std::byte> contribution_frame(const Worker& w, std::uint32_t packet, std::uint16_t W,
                                          const std::vector<std::int32_t>& values) {
  wire::Header h;
  h.job_id = 7;
  h.rank = w.rank;
  h.slot = static_cast<std::uint16_t>(16 + packet % W);
  h.set = static_cast<std::uint8_t>((packet / W) % 2);
  h.seq = packet;
  h.count = static_cast<std::uint16_t>(values.size());
  std::vector<std::byte> pkt(h.packet_size());
  wire::encode_header(h, pkt);
  for (std::size_t i = 0; i < values.size(); ++i)
    wire::store_be32(pkt.data() + wire::kHeaderSize + 4 * i, std::uint32_t(values[i]));
  std::vector<std::byte> frame(wire::kFrameOverhead + pkt.size());
  frame.resize(wire::encode_frame(w.address, pkt, frame));
  return frame;
}

TEST(SwitchPipelineFromCli, AllReduceThroughFrames) {
  SwitchPipeline sw(parse_bmv2_cli(kJob7Lines, "job7"));
  const auto workers = job7_workers();
  constexpr std::uint16_t kW = 4;
  constexpr std::uint32_t kPackets = 12;  // three passes over the window: both sets, reuse
  auto value = [](std::uint32_t p, std::uint16_t r, std::size_t i) {
    return std::int32_t(p * 1000 + r * 100 + i) * (r == 1 ? -1 : 1);
  };
  for (std::uint32_t p = 0; p < kPackets; ++p) {
    for (const auto& w : workers) {
      std::vector<std::int32_t> values(8);
      for (std::size_t i = 0; i < 8; ++i) values[i] = value(p, w.rank, i);
      const auto& out = sw.process(w.port, contribution_frame(w, p, kW, values));
      if (w.rank < 2) {
        EXPECT_EQ(sw.last_outcome().to_string(), "aggregated") << p;
        EXPECT_TRUE(out.empty());
        continue;
      }
      EXPECT_EQ(sw.last_outcome().to_string(), "completed") << p;
      ASSERT_EQ(out.size(), 3u);
      for (std::size_t k = 0; k < 3; ++k) {
        const auto& dest = workers[k];
        EXPECT_EQ(out[k].port, dest.port);
        const auto f = wire::decode_frame(out[k].bytes, dest.address.src_port);
        ASSERT_TRUE(f) << wire::to_string(f.error);
        EXPECT_EQ(f.address.dst_mac, dest.address.src_mac);
        EXPECT_EQ(f.address.src_mac, dest.address.dst_mac);
        EXPECT_EQ(f.address.dst_ip, dest.address.src_ip);
        EXPECT_EQ(f.address.src_ip, 0x0A0000FEu);
        EXPECT_EQ(f.address.src_port, wire::kUdpPort);
        EXPECT_EQ(f.packet.header.type, wire::MsgType::kResult);
        EXPECT_EQ(f.packet.header.rank, dest.rank);
        EXPECT_EQ(f.packet.header.seq, p);
        EXPECT_EQ(f.packet.header.slot, 16 + p % kW);
        for (std::size_t i = 0; i < 8; ++i)
          EXPECT_EQ(std::int32_t(wire::load_be32(f.packet.payload.data() + 4 * i)),
                    value(p, 0, i) + value(p, 1, i) + value(p, 2, i));
      }
    }
  }
  // A worker's unicast retransmission of the last packet, and its ARP.
  std::vector<std::int32_t> values(8);
  for (std::size_t i = 0; i < 8; ++i) values[i] = value(kPackets - 1, 1, i);
  const auto& out = sw.process(5, contribution_frame(workers[1], kPackets - 1, kW, values));
  EXPECT_EQ(sw.last_outcome().to_string(), "result_resent");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 5);
  std::map<std::string, std::uint64_t> c;
  for (const auto& [name, v] : sw.counters()) c[name] = v;
  EXPECT_EQ(c["completions"], kPackets);
  EXPECT_EQ(c["aggregated"], 3 * kPackets);
  EXPECT_EQ(c["results_resent"], 1u);
  EXPECT_EQ(c["frames_out"], 3 * kPackets + 1);
  EXPECT_EQ(c["dropped_total"], 0u);
}

// Not in the vectors: an interface cannot send a frame shorter than its Ethernet header.
TEST(SwitchPipelineFromCli, RuntIsDroppedAndCounted) {
  SwitchPipeline sw(parse_bmv2_cli(kJob7Lines, "job7"));
  const std::vector<std::byte> runt(13, std::byte{2});
  EXPECT_TRUE(sw.process(4, runt).empty());
  EXPECT_EQ(sw.last_outcome().to_string(), "dropped runt");
  std::map<std::string, std::uint64_t> c;
  for (const auto& [name, v] : sw.counters()) c[name] = v;
  EXPECT_EQ(c["dropped_runt"], 1u);
  EXPECT_EQ(c["frames_in"], 1u);
  EXPECT_EQ(c["packets_in"], 0u);
  EXPECT_EQ(c["dropped_total"], 0u);  // netagg drops only
}

TEST(SwitchPipelineFromCli, TablesMustAgree) {
  auto error = [](const std::string& text) -> std::string {
    try {
      SwitchPipeline sw(parse_bmv2_cli(text, "lines"));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string lines = kJob7Lines;
  auto without = [&](const std::string& line) {
    std::string s = lines;
    auto at = s.find(line);
    EXPECT_NE(at, std::string::npos) << line;
    at = s.rfind('\n', at) + 1;  // the whole line
    s.erase(at, s.find('\n', at) - at + 1);
    return s;
  };
  EXPECT_EQ(error(lines), "no error");
  EXPECT_THAT(error(without("table_set_default")), HasSubstr("no switch identity"));
  EXPECT_THAT(error(without("set_worker 7 10.0.0.2 31001 => 1")),
              HasSubstr("job 7 has no worker_table entry for rank 1"));
  EXPECT_THAT(error(lines + "table_add NetaggIngress.worker_table set_worker 7 10.0.0.9 1 => 1\n"),
              HasSubstr("lines:19: 'table_add NetaggIngress.worker_table set_worker 7 10.0.0.9 1 "
                        "=> 1': job 7 rank 1 has a worker_table entry already (line 7)"));
  EXPECT_THAT(error(lines + "table_add NetaggIngress.worker_table set_worker 7 10.0.0.9 1 => 3\n"),
              HasSubstr("rank 3 is out of range: job 7 has 3 workers (line 5)"));
  EXPECT_THAT(error(lines + "table_add NetaggIngress.worker_table set_worker 8 10.0.0.9 1 => 0\n"),
              HasSubstr("job 8 is not in the job_table"));
  EXPECT_THAT(error(without("mc_mgrp_create 1")), HasSubstr("multicast group 1 was not created"));
  EXPECT_THAT(error(without("set_result_destination 2 =>")),
              HasSubstr("multicast node 1 (rid 2) has no NetaggEgress.result_destination entry"));
  EXPECT_THAT(error(lines + "table_add NetaggIngress.job_table set_job 8 => 1 18 4 8 1\n" +
                    "table_add NetaggIngress.worker_table set_worker 8 10.0.0.9 1 => 0\n"),
              HasSubstr("job 8: slots [18, 22) overlap slots [16, 20) of job 7"));
  std::string too_big = lines;
  too_big.replace(too_big.find("=> 3 16 4 8 1"), 13, "=> 3 16 4 2000 1");
  EXPECT_THAT(error(too_big), HasSubstr("elements_per_packet 2000 is out of range"));
}

// ---- trees: a child switch, its parent elsewhere --------------------------------------------

// Job 7 at this switch: two members at 10.0.0.1..2 on ports 4..5, slots [16, 20), 4 elements;
// its parent at 10.0.9.1:20033 (MAC 02:00:00:00:09:01, port 9) holds the job as job 70, where
// this switch is rank 3 and the job's slots start at 100. Group 1, mirroring session 1.
constexpr const char* kChildLines =
    R"(table_set_default NetaggIngress.switch_identity set_switch_identity 02:00:00:00:00:fe 10.0.0.254
table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:01 => 4
table_add NetaggIngress.forward set_egress_port 02:00:00:00:00:02 => 5
table_add NetaggIngress.forward set_egress_port 02:00:00:00:09:01 => 9
table_add NetaggIngress.job_table set_job 7 => 2 16 4 4 1
table_add NetaggIngress.worker_table set_worker 7 10.0.0.1 31000 => 0
table_add NetaggIngress.worker_table set_worker 7 10.0.0.2 31001 => 1
table_add NetaggEgress.result_destination set_result_destination 1 => 02:00:00:00:00:01 10.0.0.1 31000 0
table_add NetaggEgress.result_destination set_result_destination 2 => 02:00:00:00:00:02 10.0.0.2 31001 1
table_add NetaggIngress.parent_table set_parent 7 => 02:00:00:00:09:01 10.0.9.1 20033 9 70 3 100
table_add NetaggIngress.parent_source set_parent_source 70 10.0.9.1 20033 => 7
mirroring_add 1 9
mc_mgrp_create 1
mc_node_create 1 4
mc_node_create 2 5
mc_node_associate 1 0
mc_node_associate 1 1
)";

constexpr std::uint32_t kTreeEpoch = 0x5EED0001;
const wire::Mac kSwitchMac{0x02, 0, 0, 0, 0, 0xfe};
const wire::Mac kParentMac{0x02, 0, 0, 0, 0x09, 0x01};
constexpr std::uint32_t kParentIp = 0x0A000901;  // 10.0.9.1

std::vector<std::byte> packet_frame(const wire::FrameAddress& a, const wire::Header& h,
                                    const std::vector<std::int32_t>& values) {
  std::vector<std::byte> pkt(h.packet_size());
  wire::encode_header(h, pkt);
  for (std::size_t i = 0; i < values.size(); ++i)
    wire::store_be32(pkt.data() + wire::kHeaderSize + 4 * i, std::uint32_t(values[i]));
  std::vector<std::byte> frame(wire::kFrameOverhead + pkt.size());
  frame.resize(wire::encode_frame(a, pkt, frame));
  return frame;
}

// Member `rank` of job 7 sends seq 0 to slot 16 set 0 (fresh: its first packet there).
std::vector<std::byte> member_frame(std::uint16_t rank, const std::vector<std::int32_t>& values,
                                    std::uint8_t ecn = 0, bool recovery = false) {
  const auto workers = job7_workers();
  wire::FrameAddress a = workers[rank].address;
  a.ecn = ecn;
  wire::Header h;
  h.job_id = 7;
  h.rank = rank;
  h.slot = 16;
  h.count = static_cast<std::uint16_t>(values.size());
  h.exponent = static_cast<std::int16_t>(rank + 1);
  h.epoch = kTreeEpoch;
  h.fresh = 1;
  h.recovery = recovery ? 1 : 0;
  return packet_frame(a, h, values);
}

// The parent's result for this switch (rank 3) of job 70, slot 100 (= 16 here), seq 0.
struct ParentResult {
  std::uint16_t job_id = 70, rank = 3, slot = 100, udp_port = wire::kUdpPort;
  std::uint32_t seq = 0, epoch = kTreeEpoch;
  std::uint8_t ecn = 0;
};
std::vector<std::byte> parent_result_frame(const ParentResult& r,
                                           const std::vector<std::int32_t>& values) {
  wire::FrameAddress a;
  a.src_mac = kParentMac;
  a.dst_mac = kSwitchMac;
  a.src_ip = kParentIp;
  a.dst_ip = 0x0A0000FE;
  a.src_port = r.udp_port;
  a.ecn = r.ecn;
  wire::Header h;
  h.type = wire::MsgType::kResult;
  h.job_id = r.job_id;
  h.rank = r.rank;
  h.slot = r.slot;
  h.count = static_cast<std::uint16_t>(values.size());
  h.exponent = 9;
  h.seq = r.seq;
  h.epoch = r.epoch;
  return packet_frame(a, h, values);
}

std::vector<std::int32_t> payload_of(const wire::DecodedFrame& f) {
  std::vector<std::int32_t> v(f.packet.header.count);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = std::int32_t(wire::load_be32(f.packet.payload.data() + 4 * i));
  return v;
}

// The frame a child sends up: the round's partial sum as rank 3's contribution to job 70.
void expect_partial_sum(const FrameOut& out, const std::vector<std::int32_t>& sum, bool fresh,
                        bool recovery, std::uint8_t ecn, std::int16_t exponent) {
  EXPECT_EQ(out.port, 9);
  const auto f = wire::decode_frame(out.bytes, wire::kUdpPort);
  ASSERT_TRUE(f) << wire::to_string(f.error);
  EXPECT_EQ(f.address.src_mac, kSwitchMac);
  EXPECT_EQ(f.address.dst_mac, kParentMac);
  EXPECT_EQ(f.address.src_ip, 0x0A0000FEu);
  EXPECT_EQ(f.address.dst_ip, kParentIp);
  EXPECT_EQ(f.address.src_port, wire::kUdpPort);
  EXPECT_EQ(f.address.ecn, ecn);
  const wire::Header& h = f.packet.header;
  EXPECT_EQ(h.type, wire::MsgType::kContribution);
  EXPECT_EQ(h.job_id, 70);
  EXPECT_EQ(h.rank, 3);
  EXPECT_EQ(h.slot, 100);
  EXPECT_EQ(h.set, 0);
  EXPECT_EQ(h.seq, 0u);
  EXPECT_EQ(h.epoch, kTreeEpoch);
  EXPECT_EQ(h.exponent, exponent);
  EXPECT_EQ(h.fresh, fresh ? 1 : 0);
  EXPECT_EQ(h.recovery, recovery ? 1 : 0);
  EXPECT_EQ(payload_of(f), sum);
}

std::map<std::string, std::uint64_t> counter_map(const SwitchPipeline& sw) {
  std::map<std::string, std::uint64_t> c;
  for (const auto& [name, v] : sw.counters()) c[name] = v;
  return c;
}

TEST(SwitchPipelineTree, ChildSendsUpResendsAndMulticastsTheParentsResult) {
  SwitchPipeline sw(parse_bmv2_cli(kChildLines, "child"));
  const std::vector<std::int32_t> a{1, 2, 3, 4}, b{10, -20, 30, 2147483647};
  const std::vector<std::int32_t> sum{11, -18, 33, std::int32_t(0x80000003u)};  // wraps
  EXPECT_TRUE(sw.process(4, member_frame(0, a, /*ecn=*/2)).empty());
  EXPECT_EQ(sw.last_outcome().to_string(), "aggregated");

  // The completing packet leaves as ONE frame to the parent, not as results to the members.
  auto out = sw.process(5, member_frame(1, b, /*ecn=*/1));
  EXPECT_EQ(sw.last_outcome().to_string(), "sent_to_parent");
  ASSERT_EQ(out.size(), 1u);
  // exponent: the round's max of the members' 1 and 2
  expect_partial_sum(out[0], sum, /*fresh=*/true, /*recovery=*/false, /*ecn=*/3, 2);
  const auto first_up = out[0].bytes;

  // A member's retransmission while the round waits: the same partial sum again.
  out = sw.process(4, member_frame(0, a));
  EXPECT_EQ(sw.last_outcome().to_string(), "sent_to_parent");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, first_up);

  // Results that are not the parent's answer to the waiting round are dropped.
  const std::vector<std::int32_t> total{100, 200, 300, 400};
  auto drop = [&](const ParentResult& r, const std::string& why,
                  const std::vector<std::int32_t>& values) {
    EXPECT_TRUE(sw.process(9, parent_result_frame(r, values)).empty()) << why;
    EXPECT_EQ(sw.last_outcome().to_string(), why);
  };
  ParentResult r;
  r.udp_port = 20034;  // not the parent's address
  drop(r, "dropped not_contribution", total);
  r = {};
  r.job_id = 71;  // not the job's id at the parent
  drop(r, "dropped not_contribution", total);
  r = {};
  r.rank = 2;  // another member's result
  drop(r, "dropped rank_out_of_range", total);
  r = {};
  r.slot = 104;  // outside the job's slots at the parent
  drop(r, "dropped slot_out_of_range", total);
  r = {};
  r.seq = 4;  // a round this set does not hold
  drop(r, "dropped no_round", total);
  r = {};
  r.seq = 0xFFFFFFFC;  // older
  drop(r, "dropped stale", total);
  r = {};
  r.epoch = 0x0BADCAFE;
  drop(r, "dropped stale_epoch", total);
  r = {};
  drop(r, "dropped count_mismatch", {100, 200, 300});
  r.slot = 101;  // a slot whose sets hold no round
  drop(r, "dropped no_round", total);

  // The parent's result completes the round: multicast to the members with the parent's values
  // and exponent, the job's own id and slot, the ECN bits ORed with the round's.
  r = {};
  r.ecn = 0;
  out = sw.process(9, parent_result_frame(r, total));
  EXPECT_EQ(sw.last_outcome().to_string(), "completed");
  ASSERT_EQ(out.size(), 2u);
  const auto workers = job7_workers();
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(out[k].port, workers[k].port);
    const auto f = wire::decode_frame(out[k].bytes, workers[k].address.src_port);
    ASSERT_TRUE(f) << wire::to_string(f.error);
    EXPECT_EQ(f.address.dst_ip, workers[k].address.src_ip);
    EXPECT_EQ(f.address.src_ip, 0x0A0000FEu);
    EXPECT_EQ(f.address.ecn, 3);
    EXPECT_EQ(f.packet.header.type, wire::MsgType::kResult);
    EXPECT_EQ(f.packet.header.job_id, 7);
    EXPECT_EQ(f.packet.header.rank, k);
    EXPECT_EQ(f.packet.header.slot, 16);
    EXPECT_EQ(f.packet.header.exponent, 9);
    EXPECT_EQ(f.packet.header.fresh, 0);
    EXPECT_EQ(payload_of(f), total);
  }
  drop({}, "dropped duplicate", total);  // the round is answered

  // A retransmission now gets the parent's result; a recovery copy also sends the kept partial
  // sum up again, flagged recovery (a parent that restarted forms the round from it).
  out = sw.process(5, member_frame(1, b));
  EXPECT_EQ(sw.last_outcome().to_string(), "result_resent");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, 5);
  EXPECT_EQ(payload_of(wire::decode_frame(out[0].bytes, 31001)), total);
  out = sw.process(4, member_frame(0, a, 0, /*recovery=*/true));
  EXPECT_EQ(sw.last_outcome().to_string(), "result_resent");
  ASSERT_EQ(out.size(), 2u);
  // (the exponent is the round's stored one: the parent's since its result, which is the max
  // over every member of the parent, this switch's 2 included)
  expect_partial_sum(out[0], sum, /*fresh=*/false, /*recovery=*/true, /*ecn=*/3, 9);
  EXPECT_EQ(out[1].port, 4);
  EXPECT_EQ(payload_of(wire::decode_frame(out[1].bytes, 31000)), total);

  const auto c = counter_map(sw);
  EXPECT_EQ(c.at("sent_to_parent"), 1u);
  EXPECT_EQ(c.at("resent_to_parent"), 2u);
  EXPECT_EQ(c.at("results_from_parent"), 1u);
  EXPECT_EQ(c.at("completions"), 1u);
  EXPECT_EQ(c.at("results_resent"), 2u);
  EXPECT_EQ(c.at("results_multicast"), 2u);
  EXPECT_EQ(c.at("dropped_total"), 10u);
  EXPECT_EQ(c.at("frames_out"), 7u);
}

TEST(SwitchPipelineTree, ParentLinesMustAgree) {
  auto error = [](const std::string& text) -> std::string {
    try {
      SwitchPipeline sw(parse_bmv2_cli(text, "lines"));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string lines = kChildLines;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = lines;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    return s;
  };
  EXPECT_EQ(error(lines), "no error");
  EXPECT_THAT(error(replace("mirroring_add 1 9\n", "")),
              HasSubstr("job 7: no mirroring session 1 (its multicast group's number)"));
  EXPECT_THAT(error(replace("mirroring_add 1 9", "mirroring_add 1 8")),
              HasSubstr("mirroring session 1 goes to port 8, but job 7's parent is on port 9"));
  EXPECT_THAT(error(replace("set_parent_source 70 10.0.9.1 20033 => 7\n",
                            "set_parent_source 70 10.0.9.1 20034 => 7\n")),
              HasSubstr("the key is not job 7's parent"));
  const std::string no_source = replace(
      "table_add NetaggIngress.parent_source set_parent_source 70 10.0.9.1 20033 => 7\n", "");
  EXPECT_THAT(error(no_source),
              HasSubstr("job 7 has no NetaggIngress.parent_source entry for its parent's results "
                        "(key 70 10.0.9.1 20033)"));
  EXPECT_THAT(error(replace("set_parent 7 =>", "set_parent 8 =>")),
              HasSubstr("job 8 is not in the job_table"));
  EXPECT_THAT(error(replace("20033 9 70 3 100", "31000 9 70 3 100")),
              HasSubstr("the key is not job 7's parent"));
  EXPECT_THAT(error(replace("10.0.9.1 20033 9 70 3 100", "10.0.0.1 31000 9 70 3 100")
                        .replace(lines.find("70 10.0.9.1 20033"), 17, "70 10.0.0.1 31000")),
              HasSubstr("job 7: the parent's address 10.0.0.1:31000 is rank 0's too"));
  EXPECT_THAT(error(replace("9 70 3 100", "9 70 3 65534")),
              HasSubstr("the parent's slots [65534, 65538) exceed the 16-bit slot space"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.parent_table set_parent 7 => 02:00:00:00:09:01 "
                        "10.0.9.1 20033 512 70 3 100"),
              HasSubstr("port 512 does not fit in 9 bits"));
  EXPECT_THAT(cli_error("table_add NetaggIngress.parent_table set_parent 7 => 1 2 3"),
              HasSubstr("action set_parent takes 7 parameter(s), got 3"));
  EXPECT_THAT(cli_error("mirroring_add 1 9\nmirroring_add 1 8"),
              HasSubstr("lines.txt:2: 'mirroring_add 1 8': mirroring session 1 exists already"));
  EXPECT_THAT(cli_error("mirroring_add 32768 9"),
              HasSubstr("mirroring session 32768 does not fit in 15 bits"));
}

}  // namespace
}  // namespace netagg::sim

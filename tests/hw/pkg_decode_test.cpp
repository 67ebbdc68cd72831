// SPDX-License-Identifier: Apache-2.0
// netagg_pkg's beat functions, run in Verilator (through tests/hw/netagg_pkg_probe.sv) on beat 0
// of every golden frame and on frames of the C++ encoder, against wire::decode_frame and the
// bytes themselves.
#include <gtest/gtest.h>
#include <verilated.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "Vnetagg_pkg_probe.h"
#include "netagg/wire.hpp"
#include "vectors.hpp"

namespace {

namespace wire = netagg::wire;

std::uint64_t be(std::span<const std::byte> bytes, std::size_t offset, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(bytes[offset + i]);
  return v;
}

class PkgDecode : public ::testing::Test {
 protected:
  // Frame bytes [first, first + 64) on the beat input (byte k in bits 8k+7:8k), zero padded.
  void load_beat(std::span<const std::byte> frame, std::size_t first = 0) {
    for (int w = 0; w < 16; ++w) {
      std::uint32_t word = 0;
      for (int b = 0; b < 4; ++b) {
        const std::size_t k = first + static_cast<std::size_t>(w * 4 + b);
        if (k < frame.size()) word |= std::to_integer<std::uint32_t>(frame[k]) << (8 * b);
      }
      probe_->beat_i[w] = word;
    }
    probe_->eval();
  }
  std::uint8_t out_byte(const VlWide<6>& v, int k) const {
    return static_cast<std::uint8_t>(v[k / 4] >> (8 * (k % 4)));
  }
  std::uint32_t lane32(const VlWide<16>& v, int lane) const { return v[lane]; }
  std::uint16_t lane16(const VlWide<16>& v, int lane) const {
    return static_cast<std::uint16_t>(v[lane / 2] >> (16 * (lane % 2)));
  }

  // Every output against the bytes at wire.hpp's positions (any frame of 64 bytes or more).
  void expect_matches_bytes(std::span<const std::byte> f) {
    const std::size_t h = wire::kFrameOverhead;
    EXPECT_EQ(probe_->eth_dst_o, be(f, 0, 6));
    EXPECT_EQ(probe_->eth_src_o, be(f, 6, 6));
    EXPECT_EQ(probe_->ethertype_o, be(f, 12, 2));
    EXPECT_EQ(probe_->tos_o, be(f, wire::kEthHeaderSize + 1, 1));
    EXPECT_EQ(probe_->ip_src_o, be(f, wire::kEthHeaderSize + 12, 4));
    EXPECT_EQ(probe_->ip_dst_o, be(f, wire::kEthHeaderSize + 16, 4));
    EXPECT_EQ(probe_->udp_src_port_o, be(f, wire::kEthHeaderSize + wire::kIpv4HeaderSize, 2));
    EXPECT_EQ(probe_->udp_dst_port_o, be(f, wire::kEthHeaderSize + wire::kIpv4HeaderSize + 2, 2));
    EXPECT_EQ(probe_->version_o, be(f, h + wire::offset::kVersion, 1));
    EXPECT_EQ(probe_->msg_type_o, be(f, h + wire::offset::kType, 1));
    EXPECT_EQ(probe_->dtype_o, be(f, h + wire::offset::kDtype, 1));
    EXPECT_EQ(probe_->flags_o, be(f, h + wire::offset::kFlags, 1));
    EXPECT_EQ(probe_->job_id_o, be(f, h + wire::offset::kJobId, 2));
    EXPECT_EQ(probe_->rank_o, be(f, h + wire::offset::kRank, 2));
    EXPECT_EQ(probe_->slot_o, be(f, h + wire::offset::kSlot, 2));
    EXPECT_EQ(probe_->count_o, be(f, h + wire::offset::kCount, 2));
    EXPECT_EQ(probe_->exponent_o, be(f, h + wire::offset::kExponent, 2));
    EXPECT_EQ(probe_->seq_o, be(f, h + wire::offset::kSeq, 4));
    EXPECT_EQ(probe_->epoch_o, be(f, h + wire::offset::kEpoch, 4));
    for (int k = 0; k < static_cast<int>(wire::kHeaderSize); ++k) {
      EXPECT_EQ(out_byte(probe_->header_bytes_o, k), std::to_integer<std::uint8_t>(f[h + k]))
          << "header_bytes byte " << k;
    }
  }

  // The decoded header through the package's enums and flag mask.
  void expect_matches_decoder(std::span<const std::byte> f) {
    const auto d = wire::decode_frame(f);
    ASSERT_TRUE(d) << wire::error_id(d.error);
    const auto& hd = d.packet.header;
    EXPECT_EQ(probe_->is_contribution_o, hd.type == wire::MsgType::kContribution);
    EXPECT_EQ(probe_->is_result_o, hd.type == wire::MsgType::kResult);
    EXPECT_EQ(probe_->is_int32_o, hd.dtype == wire::DataType::kInt32);
    EXPECT_EQ(probe_->is_fp32_o, hd.dtype == wire::DataType::kFp32);
    EXPECT_EQ(probe_->is_bf16_o, hd.dtype == wire::DataType::kBf16);
    EXPECT_EQ(probe_->set_o, hd.set);
    EXPECT_EQ(probe_->job_id_o, hd.job_id);
    EXPECT_EQ(probe_->rank_o, hd.rank);
    EXPECT_EQ(probe_->slot_o, hd.slot);
    EXPECT_EQ(probe_->count_o, hd.count);
    EXPECT_EQ(static_cast<std::int16_t>(probe_->exponent_o), hd.exponent);
    EXPECT_EQ(probe_->seq_o, hd.seq);
    EXPECT_EQ(probe_->ip_src_o, d.address.src_ip);
    EXPECT_EQ(probe_->ip_dst_o, d.address.dst_ip);
    EXPECT_EQ(probe_->udp_src_port_o, d.address.src_port);
    EXPECT_EQ(probe_->udp_dst_port_o, d.address.dst_port);
    EXPECT_EQ(probe_->tos_o & 3u, d.address.ecn);
  }

  std::unique_ptr<VerilatedContext> ctx_ = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vnetagg_pkg_probe> probe_ = std::make_unique<Vnetagg_pkg_probe>(ctx_.get());
};

TEST_F(PkgDecode, GoldenFramesBeatZero) {
  int valid = 0, all = 0;
  for (const auto& v : netagg::testing::load_vectors(netagg::testing::vectors_dir() / "wire")) {
    if (v.at("layer") != "frame" || v.bytes.size() < wire::kFramePayloadOffset) continue;
    SCOPED_TRACE(v.file.filename().string());
    load_beat(v.bytes);
    expect_matches_bytes(v.bytes);
    ++all;
    if (v.at("expect") == "ok") {
      expect_matches_decoder(v.bytes);
      ++valid;
    }
  }
  EXPECT_GE(valid, 3);
  EXPECT_GT(all, valid) << "malformed frames are read field by field too";
}

TEST_F(PkgDecode, EncodedFramesAndPayloadLanes) {
  std::mt19937 rng(5);
  for (auto dtype : {wire::DataType::kInt32, wire::DataType::kFp32, wire::DataType::kBf16}) {
    SCOPED_TRACE(std::string(wire::to_string(dtype)));
    wire::Header h;
    h.type = wire::MsgType::kContribution;
    h.dtype = dtype;
    h.set = 1;
    h.job_id = 0xBEEF;
    h.rank = 31;
    h.slot = 0x1234;
    h.count = static_cast<std::uint16_t>(wire::element_size(dtype) == 4 ? 16 : 32);  // one beat
    h.exponent = -32768;
    h.seq = 0x80000001;
    std::vector<std::byte> packet(h.packet_size());
    ASSERT_TRUE(wire::encode_header(h, packet));
    for (std::size_t i = wire::kHeaderSize; i < packet.size(); ++i) packet[i] = std::byte(rng());
    wire::FrameAddress a;
    a.src_mac = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE};
    a.dst_mac = {0x02, 0x01, 0x02, 0x03, 0x04, 0x05};
    a.src_ip = 0xC0A80001;
    a.dst_ip = 0x0A0000FE;
    a.src_port = 50000;
    a.ecn = 2;
    std::vector<std::byte> frame(wire::kFrameOverhead + packet.size());
    ASSERT_EQ(wire::encode_frame(a, packet, frame), frame.size());

    load_beat(frame);
    expect_matches_bytes(frame);
    expect_matches_decoder(frame);

    // Beat 1 is the payload: the lane swaps give the host values of the big-endian elements.
    load_beat(frame, wire::kFramePayloadOffset);
    const std::byte* payload = frame.data() + wire::kFramePayloadOffset;
    for (int lane = 0; lane < 16; ++lane) {
      EXPECT_EQ(lane32(probe_->swapped32_o, lane), wire::load_be32(payload + 4 * lane));
    }
    for (int lane = 0; lane < 32; ++lane) {
      EXPECT_EQ(lane16(probe_->swapped16_o, lane), wire::load_be16(payload + 2 * lane));
    }
  }
}

}  // namespace

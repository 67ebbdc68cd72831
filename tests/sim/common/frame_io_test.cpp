// SPDX-License-Identifier: Apache-2.0
// sim/common's FrameIo, the data path of netagg-switchd --dpdk, on a port of the test's own (no
// DPDK, no root): ARP answered for the served address and the asker learned, datagrams taken out
// of their frames with their source and ECN bits, replies framed to the learned MAC, foreign and
// broken frames counted, an unheard peer asked for by ARP instead of sent to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "datagram_server.hpp"
#include "frame_io.hpp"
#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg::sim {
namespace {

using Bytes = std::vector<std::byte>;

constexpr wire::Mac kOurMac{0x02, 0, 0, 0, 0, 0x01};
constexpr wire::Mac kWorkerMac{0x02, 0, 0, 0, 0, 0x07};
constexpr std::uint32_t kOurIp = 0x0A000001, kWorkerIp = 0x0A000007;  // 10.0.0.1, 10.0.0.7
const Endpoint kServed{kOurIp, 20033};
const Endpoint kWorker{kWorkerIp, 4000};

// What the test feeds in and what FrameIo sent, shared with the port FrameIo owns.
struct Wire {
  std::deque<Bytes> inbound;
  std::vector<Bytes> sent;
};

class TestPort final : public dpdk::FramePort {
 public:
  explicit TestPort(Wire& wire) : wire_(wire) {}
  wire::Mac mac() const override { return kOurMac; }
  std::uint16_t mtu() const override { return 1500; }
  std::span<const std::span<const std::byte>> receive() override {
    held_.clear();
    views_.clear();
    while (!wire_.inbound.empty()) {
      held_.push_back(std::move(wire_.inbound.front()));
      wire_.inbound.pop_front();
    }
    for (const Bytes& f : held_) views_.emplace_back(f.data(), f.size());
    return views_;
  }
  std::size_t send(std::span<const std::span<const std::byte>> frames) override {
    for (const auto f : frames) wire_.sent.emplace_back(f.begin(), f.end());
    return frames.size();
  }
  bool steer(const Endpoint& address) override {
    steered_to = address;
    return false;
  }
  std::string name() const override { return "test port"; }
  std::optional<Endpoint> steered_to;

 private:
  Wire& wire_;
  std::vector<Bytes> held_;
  std::vector<std::span<const std::byte>> views_;
};

std::uint16_t be16(const Bytes& f, std::size_t at) { return wire::load_be16(f.data() + at); }
std::uint32_t be32(const Bytes& f, std::size_t at) {
  return std::uint32_t(be16(f, at)) << 16 | be16(f, at + 2);
}
wire::Mac mac_at(const Bytes& f, std::size_t at) {
  wire::Mac m;
  std::memcpy(m.data(), f.data() + at, 6);
  return m;
}

// An ARP request from the worker for `target`.
Bytes arp_request(std::uint32_t target) {
  Bytes f(42);
  const auto put16 = [&](std::size_t at, std::uint16_t v) {
    f[at] = std::byte(v >> 8);
    f[at + 1] = std::byte(v & 0xFF);
  };
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    put16(at, static_cast<std::uint16_t>(v >> 16));
    put16(at + 2, static_cast<std::uint16_t>(v & 0xFFFF));
  };
  std::fill_n(f.begin(), 6, std::byte{0xFF});
  std::memcpy(f.data() + 6, kWorkerMac.data(), 6);
  put16(12, 0x0806);
  put16(14, 1);
  put16(16, 0x0800);
  f[18] = std::byte{6};
  f[19] = std::byte{4};
  put16(20, 1);  // request
  std::memcpy(f.data() + 22, kWorkerMac.data(), 6);
  put32(28, kWorkerIp);
  put32(38, target);
  return f;
}

// A netagg contribution (valid header, 8 int32 elements) as a UDP payload.
Bytes packet() {
  wire::Header h;
  h.job_id = 3;
  h.rank = 1;
  h.slot = 5;
  h.count = 8;
  h.seq = 42;
  Bytes p(wire::kHeaderSize + 8 * 4, std::byte{0x11});
  EXPECT_TRUE(wire::encode_header(h, p));
  return p;
}

// The packet in a frame from `from` to `to`.
Bytes frame(const Bytes& packet, const wire::Mac& dst_mac, std::uint32_t dst_ip,
            std::uint16_t dst_port, std::uint8_t ecn = 0) {
  wire::FrameAddress a;
  a.src_mac = kWorkerMac;
  a.dst_mac = dst_mac;
  a.src_ip = kWorker.ip;
  a.src_port = kWorker.port;
  a.dst_ip = dst_ip;
  a.dst_port = dst_port;
  a.ecn = ecn;
  Bytes f(wire::kFrameOverhead + packet.size());
  f.resize(wire::encode_frame(a, packet, f));
  return f;
}

class FrameIoTest : public ::testing::Test {
 protected:
  FrameIoTest() : io(std::make_unique<TestPort>(wire), kServed) {}

  std::vector<Datagram> receive() {
    std::vector<Datagram> out;
    io.receive(out);
    return out;
  }

  Wire wire;
  FrameIo io;
};

TEST_F(FrameIoTest, AnArpRequestForTheServedAddressIsAnsweredAndTheAskerLearned) {
  wire.inbound.push_back(arp_request(kOurIp));
  EXPECT_TRUE(receive().empty());
  ASSERT_EQ(wire.sent.size(), 1u);
  const Bytes& reply = wire.sent[0];
  ASSERT_EQ(reply.size(), 42u);
  EXPECT_EQ(mac_at(reply, 0), kWorkerMac);  // to the asker
  EXPECT_EQ(mac_at(reply, 6), kOurMac);
  EXPECT_EQ(be16(reply, 12), 0x0806);
  EXPECT_EQ(be16(reply, 20), 2);  // reply
  EXPECT_EQ(mac_at(reply, 22), kOurMac);
  EXPECT_EQ(be32(reply, 28), kOurIp);
  EXPECT_EQ(mac_at(reply, 32), kWorkerMac);
  EXPECT_EQ(be32(reply, 38), kWorkerIp);
  // The asker is known now: a datagram to it is framed, not held for ARP.
  EXPECT_TRUE(io.queue(kWorker, packet(), 0));
  EXPECT_EQ(io.flush(), 1u);
}

TEST_F(FrameIoTest, ARequestForAnotherAddressIsNotAnswered) {
  wire.inbound.push_back(arp_request(kOurIp + 1));
  EXPECT_TRUE(receive().empty());
  EXPECT_TRUE(wire.sent.empty());
}

TEST_F(FrameIoTest, ADatagramComesOutWithItsSourceAndEcnAndTheReplyGoesToItsMac) {
  const Bytes p = packet();
  wire.inbound.push_back(frame(p, kOurMac, kOurIp, kServed.port, 2));
  const auto got = receive();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].source, kWorker);
  EXPECT_EQ(got[0].destination, kServed);
  EXPECT_EQ(got[0].ecn, 2);
  EXPECT_TRUE(std::equal(got[0].bytes.begin(), got[0].bytes.end(), p.begin(), p.end()));

  ASSERT_TRUE(io.queue(kWorker, p, 1));
  EXPECT_EQ(io.flush(), 1u);
  ASSERT_EQ(wire.sent.size(), 1u);
  const wire::DecodedFrame sent = wire::decode_frame(wire.sent[0], kWorker.port);
  EXPECT_EQ(sent.error, wire::Error::kOk);
  EXPECT_EQ(sent.address.dst_mac, kWorkerMac);
  EXPECT_EQ(sent.address.src_mac, kOurMac);
  EXPECT_EQ(sent.address.src_ip, kOurIp);
  EXPECT_EQ(sent.address.src_port, kServed.port);
  EXPECT_EQ(sent.address.dst_ip, kWorkerIp);
  EXPECT_EQ(sent.address.ecn, 1);
  EXPECT_EQ(sent.packet.header.seq, 42u);
}

TEST_F(FrameIoTest, FramesForOthersAreForeignAndBrokenOnesMalformed) {
  const Bytes p = packet();
  const wire::Mac other{0x02, 0, 0, 0, 0, 0x99};
  wire.inbound.push_back(frame(p, other, kOurIp, kServed.port));        // another station's MAC
  wire.inbound.push_back(frame(p, kOurMac, kOurIp + 1, kServed.port));  // another IP
  wire.inbound.push_back(frame(p, kOurMac, kOurIp, kServed.port + 1));  // another port
  Bytes short_frame(10);
  wire.inbound.push_back(short_frame);  // not even an Ethernet header
  Bytes bad_length = frame(p, kOurMac, kOurIp, kServed.port);
  bad_length[wire::kEthHeaderSize + 3] = std::byte{0xFF};  // IPv4 total length beyond the frame
  wire.inbound.push_back(bad_length);
  EXPECT_TRUE(receive().empty());
  EXPECT_EQ(io.foreign(), 3u);
  EXPECT_EQ(io.malformed(), 2u);
  EXPECT_TRUE(wire.sent.empty());
}

TEST_F(FrameIoTest, APeerNotHeardYetIsAskedForByArpAndNotSentTo) {
  EXPECT_FALSE(io.queue(kWorker, packet(), 0));
  io.flush();
  ASSERT_EQ(wire.sent.size(), 1u);
  const Bytes& request = wire.sent[0];
  EXPECT_EQ(mac_at(request, 0), (wire::Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(be16(request, 12), 0x0806);
  EXPECT_EQ(be16(request, 20), 1);  // request
  EXPECT_EQ(be32(request, 28), kOurIp);
  EXPECT_EQ(be32(request, 38), kWorkerIp);
}

TEST(FrameIo, TheServedAddressMustNameAnIpAndAPort) {
  Wire wire;
  for (const Endpoint bad : {Endpoint{0, 20033}, Endpoint{kOurIp, 0}}) {
    try {
      FrameIo io(std::make_unique<TestPort>(wire), bad);
      ADD_FAILURE() << "accepted " << bad.to_string();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig);
      EXPECT_NE(std::string(e.what()).find("--listen"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace netagg::sim

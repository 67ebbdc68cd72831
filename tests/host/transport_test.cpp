// SPDX-License-Identifier: Apache-2.0
// The kernel UDP transport on loopback (batching, foreign and oversized datagrams, socket
// errors) and the seeded loss decorator.
#include "netagg/transport.hpp"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "netagg/error.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<std::byte>;

// A plain UDP socket on 127.0.0.1, standing in for the aggregator or for a stranger.
class RawSocket {
 public:
  RawSocket() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    timeval tv{5, 0};  // a test that waits for a packet that never comes fails, not hangs
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawSocket() { ::close(fd_); }
  Endpoint endpoint() const { return {0x7F000001, port_}; }
  int fd() const { return fd_; }
  void send_to(const Endpoint& to, const Bytes& b) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(to.ip);
    a.sin_port = htons(to.port);
    ASSERT_EQ(::sendto(fd_, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a),
              static_cast<ssize_t>(b.size()));
  }
  Bytes receive() {
    Bytes b(70000);
    const ssize_t n = ::recv(fd_, b.data(), b.size(), 0);
    EXPECT_GE(n, 0) << std::strerror(errno);
    b.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    return b;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A port nobody uses right now (the socket is closed again before use).
Endpoint free_endpoint() {
  RawSocket s;
  return s.endpoint();
}

Bytes packet(std::size_t size, int tag) {
  Bytes b(size);
  for (std::size_t i = 0; i < size; ++i) b[i] = std::byte(static_cast<unsigned>(tag * 31 + i));
  return b;
}

// Receives until `want` packets arrived (each receive waits up to a second).
std::vector<Bytes> receive_n(Transport& t, std::size_t want) {
  std::vector<Bytes> got;
  for (int tries = 0; got.size() < want && tries < 50; ++tries)
    t.receive(std::chrono::seconds(1),
              [&](std::span<const std::byte> p) { got.emplace_back(p.begin(), p.end()); });
  return got;
}

TEST(UdpTransportTest, SendsBatchesLargerThanOneSyscall) {
  RawSocket aggregator;
  auto t = make_udp_transport(free_endpoint(), aggregator.endpoint());
  std::vector<Bytes> packets;
  for (int i = 0; i < 150; ++i) packets.push_back(packet(100 + i, i));
  std::vector<std::span<const std::byte>> views(packets.begin(), packets.end());
  t->send(views);
  for (int i = 0; i < 150; ++i) ASSERT_EQ(aggregator.receive(), packets[i]) << i;
  EXPECT_EQ(t->counters().sent, 150u);
}

// Sends `packets` from `fd` to `to` as one UDP GSO message (the kernel cuts it at `segment`).
void send_gso(int fd, const Endpoint& to, const std::vector<Bytes>& packets,
              std::uint16_t segment) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(to.ip);
  a.sin_port = htons(to.port);
  std::vector<iovec> iov;
  for (const Bytes& b : packets) iov.push_back({const_cast<std::byte*>(b.data()), b.size()});
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(std::uint16_t))] = {};
  msghdr h{};
  h.msg_name = &a;
  h.msg_namelen = sizeof a;
  h.msg_iov = iov.data();
  h.msg_iovlen = iov.size();
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof segment);
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  ASSERT_GT(::sendmsg(fd, &h, 0), 0) << std::strerror(errno);
}

// Runs of equal sizes leave as GSO messages (with offload): what arrives is every packet, in
// order, byte for byte, as without offload; sizes change within a run and across message limits.
TEST(UdpTransportTest, OffloadOrNotTheWireCarriesEachPacketInOrder) {
  for (const bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "offload" : "no offload");
    RawSocket aggregator;
    auto t = make_udp_transport(free_endpoint(), aggregator.endpoint(), offload);
    // Bursts that each fit the receiver's socket buffer, received before the next is sent.
    std::vector<std::vector<Bytes>> bursts(3);
    int tag = 0;
    for (int i = 0; i < 70; ++i) bursts[0].push_back(packet(1046, tag++));  // > 64 segments
    bursts[1].push_back(packet(500, tag++));  // a shorter last one ends a run
    for (int i = 0; i < 5; ++i) bursts[1].push_back(packet(1046, tag++));
    for (int i = 0; i < 3; ++i) bursts[1].push_back(packet(20, tag++));
    bursts[1].push_back(packet(0, tag++));  // an empty datagram
    bursts[1].push_back(packet(20, tag++));
    // More than 64 KiB in all, within the receiver's buffer.
    const int largest = static_cast<int>((64 * 1024) / wire::kMaxPacketSize) + 2;
    for (int i = 0; i < largest; ++i) bursts[2].push_back(packet(wire::kMaxPacketSize, tag++));
    std::size_t total = 0;
    for (const auto& burst : bursts) {  // (the last: more than 64 KiB, more than one message)
      std::vector<std::span<const std::byte>> views(burst.begin(), burst.end());
      t->send(views);
      for (std::size_t i = 0; i < burst.size(); ++i) ASSERT_EQ(aggregator.receive(), burst[i]) << i;
      total += burst.size();
    }
    EXPECT_EQ(t->counters().sent, total);
  }
}

// Results the kernel coalesced (GRO) are handed over one packet at a time; coalesced datagrams
// from a stranger are all counted foreign.
TEST(UdpTransportTest, CoalescedResultsAreSplitIntoTheirPackets) {
  for (const bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "offload" : "no offload");
    RawSocket aggregator, stranger;
    const Endpoint local = free_endpoint();
    auto t = make_udp_transport(local, aggregator.endpoint(), offload);
    std::vector<Bytes> results;
    for (int i = 0; i < 10; ++i) results.push_back(packet(1046, i));
    results.push_back(packet(300, 10));
    send_gso(stranger.fd(), local, results, 1046);
    send_gso(aggregator.fd(), local, results, 1046);
    const auto got = receive_n(*t, results.size());
    ASSERT_EQ(got.size(), results.size());
    for (std::size_t i = 0; i < results.size(); ++i) EXPECT_EQ(got[i], results[i]) << i;
    EXPECT_EQ(t->counters().received, results.size());
    EXPECT_EQ(t->counters().dropped_foreign, results.size());
  }
}

TEST(UdpTransportTest, ReceivesOnlyFromTheAggregator) {
  RawSocket aggregator, stranger;
  const Endpoint local = free_endpoint();
  auto t = make_udp_transport(local, aggregator.endpoint());
  for (int i = 0; i < 3; ++i) stranger.send_to(local, packet(40, i));
  aggregator.send_to(local, Bytes(wire::kMaxPacketSize + 1));  // one byte too many
  aggregator.send_to(local, Bytes(wire::kMaxPacketSize + 500));
  for (int i = 0; i < 100; ++i) aggregator.send_to(local, packet(wire::kMaxPacketSize - i, i));
  const auto got = receive_n(*t, 100);
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], packet(wire::kMaxPacketSize - i, i)) << i;
  const auto c = t->counters();
  EXPECT_EQ(c.received, 100u);
  EXPECT_EQ(c.dropped_foreign, 3u);
  EXPECT_EQ(c.dropped_malformed, 2u);
}

TEST(UdpTransportTest, ReceiveWithNothingQueuedReturnsZero) {
  RawSocket aggregator;
  auto t = make_udp_transport(free_endpoint(), aggregator.endpoint());
  bool called = false;
  EXPECT_EQ(t->receive(std::chrono::milliseconds(1), [&](auto) { called = true; }), 0u);
  EXPECT_EQ(t->receive(Duration::zero(), [&](auto) { called = true; }), 0u);
  EXPECT_FALSE(called);
  EXPECT_THAT(t->name(), HasSubstr("udp"));
}

// Nothing listens at the aggregator's port: the kernel's ICMP "port unreachable" for each packet
// is counted, and the address named, instead of vanishing in the unconnected socket.
TEST(UdpTransportTest, APortThatRefusesIsCountedAndNamed) {
  const Endpoint nobody = free_endpoint();
  auto t = make_udp_transport(free_endpoint(), nobody);
  const Bytes p = packet(64, 1);
  const std::span<const std::byte> one(p);
  for (int i = 0; i < 20 && t->counters().refused < 3; ++i) {
    t->send(std::span(&one, 1));
    t->receive(std::chrono::milliseconds(50), [](std::span<const std::byte>) {});
  }
  EXPECT_GE(t->counters().refused, 3u);
  ASSERT_TRUE(t->last_refused());
  EXPECT_EQ(*t->last_refused(), nobody);
  // The loss decorator passes both on.
  auto lossy = with_loss(std::move(t), 0.5, 1);
  EXPECT_GE(lossy->counters().refused, 3u);
  EXPECT_EQ(lossy->last_refused(), nobody);
}

TEST(UdpTransportTest, AListeningAggregatorIsNeverCountedAsRefusing) {
  RawSocket aggregator;
  auto t = make_udp_transport(free_endpoint(), aggregator.endpoint());
  const Bytes p = packet(64, 1);
  const std::span<const std::byte> one(p);
  for (int i = 0; i < 5; ++i) {
    t->send(std::span(&one, 1));
    aggregator.receive();
    t->receive(std::chrono::milliseconds(10), [](std::span<const std::byte>) {});
  }
  EXPECT_EQ(t->counters().refused, 0u);
  EXPECT_FALSE(t->last_refused());
}

TEST(UdpTransportTest, SocketErrorsAreTransportErrors) {
  RawSocket taken;
  try {
    make_udp_transport(taken.endpoint(), free_endpoint());
    FAIL() << "bound a port that is in use";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTransport);
    EXPECT_THAT(e.what(), HasSubstr(std::strerror(EADDRINUSE)));
    EXPECT_THAT(e.what(), HasSubstr(taken.endpoint().to_string()));
  }
  // 192.0.2.0/24 is TEST-NET-1: not an address of this host.
  try {
    make_udp_transport(Endpoint::parse("192.0.2.1:4000"), free_endpoint());
    FAIL() << "bound an address that is not ours";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTransport);
    EXPECT_THAT(e.what(), HasSubstr(std::strerror(EADDRNOTAVAIL)));
  }
  EXPECT_THROW(make_udp_transport(free_endpoint(), Endpoint{}), Error);
}

// Records what is sent; hands out a prepared list on receive.
class FakeTransport final : public Transport {
 public:
  void send(std::span<const std::span<const std::byte>> packets) override {
    for (auto p : packets) sent.emplace_back(p.begin(), p.end());
  }
  std::size_t receive(Duration, const PacketHandler& h) override {
    for (const auto& p : inbound) h(p);
    return inbound.size();
  }
  std::string name() const override { return "fake"; }
  TransportCounters counters() const override { return {.sent = sent.size()}; }

  std::vector<Bytes> sent;
  std::vector<Bytes> inbound;
};

// Which of n packets (tagged 0..n-1) survive sending through with_loss(p, seed).
std::vector<int> survivors_of_send(double p, std::uint64_t seed, int n) {
  auto fake = std::make_unique<FakeTransport>();
  auto* raw = fake.get();
  auto t = with_loss(std::move(fake), p, seed);
  std::vector<Bytes> packets;
  for (int i = 0; i < n; ++i) packets.push_back({std::byte(i & 0xFF), std::byte(i >> 8)});
  std::vector<std::span<const std::byte>> views(packets.begin(), packets.end());
  t->send(views);
  std::vector<int> tags;
  for (const auto& b : raw->sent) tags.push_back(int(b[0]) | int(b[1]) << 8);
  EXPECT_EQ(t->counters().injected_drops, static_cast<std::uint64_t>(n) - tags.size());
  return tags;
}

TEST(LossTest, SameSeedSameDropsAndTheRateIsP) {
  const auto a = survivors_of_send(0.1, 42, 20000);
  EXPECT_EQ(a, survivors_of_send(0.1, 42, 20000));
  EXPECT_NE(a, survivors_of_send(0.1, 43, 20000));
  // 20000 draws at p = 0.1: the standard deviation of the drop count is 42; +-600 is 14 sigma
  // (and with a fixed seed the count is the same every run).
  EXPECT_NEAR(static_cast<double>(20000 - a.size()), 2000.0, 600.0);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));  // order is kept
}

TEST(LossTest, DropsReceivedPacketsToo) {
  auto fake = std::make_unique<FakeTransport>();
  for (int i = 0; i < 5000; ++i) fake->inbound.push_back(Bytes{std::byte(i & 0xFF)});
  auto t = with_loss(std::move(fake), 0.5, 7);
  std::size_t handed = 0;
  const std::size_t reported = t->receive(Duration::zero(), [&](auto) { ++handed; });
  EXPECT_EQ(reported, handed);
  EXPECT_NEAR(static_cast<double>(handed), 2500.0, 400.0);
  EXPECT_EQ(t->counters().injected_drops, 5000u - handed);
  EXPECT_THAT(t->name(), HasSubstr("lossy"));
}

TEST(LossTest, ZeroLossIsTheTransportItselfAndBadLossIsRejected) {
  auto fake = std::make_unique<FakeTransport>();
  Transport* raw = fake.get();
  EXPECT_EQ(with_loss(std::move(fake), 0.0, 1).get(), raw);
  EXPECT_EQ(survivors_of_send(1.0, 1, 100).size(), 0u);
  EXPECT_THROW(with_loss(std::make_unique<FakeTransport>(), 1.5, 1), Error);
  EXPECT_THROW(with_loss(std::make_unique<FakeTransport>(), -0.1, 1), Error);
  EXPECT_THROW(with_loss(nullptr, 0.1, 1), Error);
}

}  // namespace
}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
// sim/common's DatagramServer, the UDP side of netagg-switchd and netagg-fpgad: batches with the
// sender's and the local address of each datagram, sends in batches (optionally from a chosen
// local address), the signal loop, and its configuration errors. Loopback only; ports picked by
// the kernel. 127.0.0.2 is a local address on Linux (all of 127/8 is loopback).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "datagram_server.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {
namespace {

using ::testing::HasSubstr;

class Client {
 public:
  explicit Client(std::uint32_t ip = 0x7F000001) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(ip);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
      throw std::runtime_error("cannot bind a loopback UDP socket");
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    local_ = Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
    timeval tv{10, 0};  // a guard: a missing datagram fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() { close(fd_); }
  const Endpoint& local() const { return local_; }
  int fd() const { return fd_; }

  void send_to(const Endpoint& to, std::vector<std::byte> bytes) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(to.ip);
    sa.sin_port = htons(to.port);
    ASSERT_EQ(
        sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)),
        static_cast<ssize_t>(bytes.size()));
  }
  std::optional<std::vector<std::byte>> receive(Endpoint* from) {
    std::vector<std::byte> buf(65536);
    sockaddr_in sa{};
    socklen_t len = sizeof(sa);
    const ssize_t n =
        recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&sa), &len);
    if (n < 0) return std::nullopt;
    *from = Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
    buf.resize(static_cast<std::size_t>(n));
    return buf;
  }

 private:
  int fd_ = -1;
  Endpoint local_;
};

struct Seen {
  Endpoint source, destination;
  std::vector<std::byte> bytes;
};

// Receives batches until `n` datagrams came (loopback delivers at once; the loop only waits for
// the kernel to queue them).
std::vector<Seen> receive_n(DatagramServer& server, std::size_t n) {
  std::vector<Seen> seen;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.size() < n && std::chrono::steady_clock::now() < give_up)
    server.receive_batch([&](std::span<const Datagram> batch) {
      for (const Datagram& d : batch)
        seen.push_back({d.source, d.destination, {d.bytes.begin(), d.bytes.end()}});
    });
  return seen;
}

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}

TEST(DatagramServer, BatchesCarryTheSenderAndTheAddressSentTo) {
  DatagramServer server(Endpoint{0x7F000001, 0});
  EXPECT_EQ(server.address().ip, 0x7F000001u);
  ASSERT_NE(server.address().port, 0);
  Client a, b;
  a.send_to(server.address(), bytes_of({1, 2, 3}));
  b.send_to(server.address(), {});
  a.send_to(server.address(), bytes_of({4}));
  const std::vector<Seen> seen = receive_n(server, 3);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].source, a.local());
  EXPECT_EQ(seen[0].bytes, bytes_of({1, 2, 3}));
  EXPECT_EQ(seen[1].source, b.local());
  EXPECT_TRUE(seen[1].bytes.empty());
  EXPECT_EQ(seen[2].bytes, bytes_of({4}));
  for (const Seen& s : seen) EXPECT_EQ(s.destination, server.address());
}

TEST(DatagramServer, AnOversizedDatagramArrivesCutOneByteBeyondTheLargestPacket) {
  DatagramServer server(Endpoint{0x7F000001, 0});
  Client a;
  a.send_to(server.address(), std::vector<std::byte>(wire::kMaxPacketSize + 500, std::byte(7)));
  const std::vector<Seen> seen = receive_n(server, 1);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].bytes.size(), wire::kMaxPacketSize + 1);
}

// On 0.0.0.0 each datagram says which local address it was sent to, and a reply can leave from
// that address, so a worker that checks its aggregator's address accepts it.
TEST(DatagramServer, AWildcardListenerKnowsAndAnswersFromEachLocalAddress) {
  DatagramServer server(Endpoint{0, 0});
  const std::uint16_t port = server.address().port;
  Client a;
  a.send_to(Endpoint{0x7F000001, port}, bytes_of({1}));
  a.send_to(Endpoint{0x7F000002, port}, bytes_of({2}));
  const std::vector<Seen> seen = receive_n(server, 2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].destination, (Endpoint{0x7F000001, port}));
  EXPECT_EQ(seen[1].destination, (Endpoint{0x7F000002, port}));

  server.send(a.local(), bytes_of({9}), 0x7F000002);
  server.send(a.local(), bytes_of({8}), 0x7F000001);
  server.flush();
  Endpoint from;
  auto r = a.receive(&from);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, bytes_of({9}));
  EXPECT_EQ(from, (Endpoint{0x7F000002, port}));
  r = a.receive(&from);
  ASSERT_TRUE(r);
  EXPECT_EQ(from, (Endpoint{0x7F000001, port}));
}

TEST(DatagramServer, SendsMoreThanABatchAndCountsWhatTheKernelRefuses) {
  DatagramServer server(Endpoint{0x7F000001, 0});
  Client a;
  // A full queue goes out by itself when the next datagram is queued.
  const std::size_t n = DatagramServer::kSendBatch + 3;
  for (std::size_t i = 0; i < n; ++i)
    server.send(a.local(), bytes_of({int(i & 0xFF), int(i >> 8)}));
  EXPECT_EQ(server.counters().datagrams_sent, DatagramServer::kSendBatch);
  server.flush();
  EXPECT_EQ(server.counters().datagrams_sent, n);
  EXPECT_EQ(server.counters().send_errors, 0u);
  // The client's receive buffer may not hold all of them; the first ones arrive, in order.
  for (std::size_t i = 0; i < 64; ++i) {
    Endpoint from;
    const auto r = a.receive(&from);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(*r, bytes_of({int(i & 0xFF), int(i >> 8)}));
    EXPECT_EQ(from, server.address());
  }
  // Port 0 is no destination: the kernel refuses it, the server counts it and goes on.
  Client b;
  server.send(Endpoint{0x7F000001, 0}, bytes_of({1}));
  server.send(b.local(), bytes_of({2}));
  server.flush();
  EXPECT_EQ(server.counters().send_errors, 1u);
  EXPECT_EQ(server.counters().datagrams_sent, n + 1);
  Endpoint from;
  const auto r = b.receive(&from);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, bytes_of({2}));
  EXPECT_THROW(server.send(a.local(), std::vector<std::byte>(wire::kMaxPacketSize + 1)), Error);
}

// With offload, a flush sends each destination's datagrams as GSO messages: every client gets
// its own, in the order queued, byte for byte; without, the same datagrams one per message.
// Datagrams a client coalesced with GSO reach the handler one by one.
TEST(DatagramServer, OffloadOrNotEachDestinationGetsItsDatagramsInOrder) {
  for (const bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "offload" : "no offload");
    DatagramServer server(Endpoint{0x7F000001, 0}, offload);
    Client clients[3];
    auto datagram = [](int c, int i) {
      return std::vector<std::byte>(i % 7 == 6 ? 300 : 1046, std::byte(c * 64 + i));
    };
    for (int i = 0; i < 40; ++i)
      for (int c = 0; c < 3; ++c) server.send(clients[c].local(), datagram(c, i));
    server.flush();
    EXPECT_EQ(server.counters().datagrams_sent, 120u);
    EXPECT_EQ(server.counters().gso_messages > 0, offload);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 40; ++i) {
        Endpoint from;
        const auto r = clients[c].receive(&from);
        ASSERT_TRUE(r) << c << " " << i;
        EXPECT_EQ(*r, datagram(c, i)) << c << " " << i;
      }

    // Five datagrams in one GSO message from a client.
    const int fd = clients[0].fd();
    std::vector<std::vector<std::byte>> sent;
    std::vector<iovec> iov;
    for (int i = 0; i < 5; ++i)
      sent.push_back(std::vector<std::byte>(i == 4 ? 10 : 200, std::byte(i)));
    for (auto& b : sent) iov.push_back({b.data(), b.size()});
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(server.address().ip);
    to.sin_port = htons(server.address().port);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(std::uint16_t))] = {};
    msghdr h{};
    h.msg_name = &to;
    h.msg_namelen = sizeof(to);
    h.msg_iov = iov.data();
    h.msg_iovlen = iov.size();
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
    const std::uint16_t segment = 200;
    std::memcpy(CMSG_DATA(c), &segment, sizeof(segment));
    ASSERT_GT(sendmsg(fd, &h, 0), 0) << std::strerror(errno);
    const std::vector<Seen> seen = receive_n(server, 5);
    ASSERT_EQ(seen.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(seen[i].bytes, sent[i]) << i;
      EXPECT_EQ(seen[i].source, clients[0].local());
    }
  }
}

// serve(): SIGUSR1 goes to the hook, SIGTERM stops it after the queued datagrams are handled,
// and what a batch handler sends leaves when it returns.
TEST(DatagramServer, ServeHandsOverSignalsAndDrainsTheQueueAtStop) {
  DatagramServer server(Endpoint{0x7F000001, 0});
  Client a;
  for (int i = 0; i < 5; ++i) a.send_to(server.address(), bytes_of({i}));
  // Loopback queues them within sendto. Then signal ourselves: the server blocked these
  // signals, so they wait in its signalfd.
  std::vector<int> signals;
  std::vector<std::byte> got;
  DatagramServer::Hooks hooks;
  hooks.on_batch = [&](std::span<const Datagram> batch) {
    for (const Datagram& d : batch) {
      got.push_back(d.bytes[0]);
      server.send(d.source, d.bytes);
    }
  };
  hooks.on_signal = [&](int s) { signals.push_back(s); };
  ::raise(SIGUSR1);
  ::raise(SIGTERM);
  server.serve(hooks);
  EXPECT_THAT(signals, ::testing::ElementsAre(SIGUSR1));
  EXPECT_EQ(got, bytes_of({0, 1, 2, 3, 4}));
  for (int i = 0; i < 5; ++i) {
    Endpoint from;
    const auto r = a.receive(&from);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, bytes_of({i}));
  }
}

// The tick hook runs again and again while nothing arrives; the third one stops the server. A
// watchdog stops it after 60 s if the ticks never come (and the test fails).
TEST(DatagramServer, TicksComeWhileNothingArrives) {
  DatagramServer server(Endpoint{0x7F000001, 0});
  int ticks = 0;
  DatagramServer::Hooks hooks;
  hooks.on_batch = [](std::span<const Datagram>) {};
  hooks.tick_seconds = 0.01;
  hooks.on_tick = [&] {
    if (++ticks == 3) server.request_stop();
  };
  std::atomic<bool> served{false}, watchdog_stopped{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 600 && !served; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!served) {
      watchdog_stopped = true;
      server.request_stop();
    }
  });
  server.serve(hooks);
  served = true;
  watchdog.join();
  EXPECT_FALSE(watchdog_stopped);
  EXPECT_EQ(ticks, 3);
}

TEST(DatagramServer, ConfigurationErrorsNameTheProblem) {
  const auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(parse_listen_address("127.0.0.1:0"), (Endpoint{0x7F000001, 0}));
  EXPECT_EQ(parse_listen_address("0.0.0.0:20033"), (Endpoint{0, 20033}));
  EXPECT_THAT(message([] { parse_listen_address("localhost:1"); }),
              HasSubstr("not an IPv4 address"));
  EXPECT_THAT(message([] { parse_listen_address("1.2.3.4"); }),
              HasSubstr("is not \"a.b.c.d:port\""));
  EXPECT_THAT(message([] { parse_listen_address("1.2.3.4:65536"); }), HasSubstr("not a port"));
  EXPECT_THAT(message([] { parse_listen_address("1.2.3.4:"); }), HasSubstr("not a port"));
  DatagramServer taken(Endpoint{0x7F000001, 0});
  EXPECT_THAT(message([&] { DatagramServer again(taken.address()); }),
              HasSubstr("cannot listen on " + taken.address().to_string()));
}

}  // namespace
}  // namespace netagg::sim

// SPDX-License-Identifier: Apache-2.0
// The cheapest thing a packet can cost: a plain UDP reflector, the peer against which
// scripts/bench/bench-packets.sh measures the packets per CPU second of netagg-switchd and of a
// worker.
//
//   udp_reflector reflect --listen IP:PORT
//       sends every datagram back to where it came from, recvmmsg/sendmmsg batches of up to 64,
//       until SIGTERM or SIGINT; then prints {"packets_in":..,"packets_out":..,"cpu_seconds":..}
//   udp_reflector blast --target IP:PORT --packets N --window W --bytes B
//       keeps W datagrams of B bytes in flight towards the target, one new per reply, until N
//       replies came; prints {"packets":..,"seconds":..,"cpu_seconds":..}
//
// Like netagg's worker it sends a window of packets and one more per answer, and like
// netagg-switchd the reflector answers each datagram once: the two do the system calls and the
// copies a packet needs, nothing else.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "netagg/job.hpp"

namespace {

constexpr int kBatch = 64;
constexpr std::size_t kMaxDatagram = 9000;
volatile std::sig_atomic_t g_stop = 0;

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

sockaddr_in to_sockaddr(const netagg::Endpoint& e) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(e.ip);
  sa.sin_port = htons(e.port);
  return sa;
}

int udp_socket(const netagg::Endpoint& bind_to) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  const int buf = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  sockaddr_in sa = to_sockaddr(bind_to);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
  return fd;
}

// Receive buffers for one batch, their addresses kept for the replies.
struct Batch {
  std::vector<std::array<char, kMaxDatagram>> data =
      std::vector<std::array<char, kMaxDatagram>>(kBatch);
  std::array<sockaddr_in, kBatch> from{};
  std::array<iovec, kBatch> iov{};
  std::array<mmsghdr, kBatch> msg{};
  void arm() {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {data[i].data(), kMaxDatagram};
      msg[i] = {};
      msg[i].msg_hdr.msg_iov = &iov[i];
      msg[i].msg_hdr.msg_iovlen = 1;
      msg[i].msg_hdr.msg_name = &from[i];
      msg[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
  }
};

int reflect(const netagg::Endpoint& listen) {
  const int fd = udp_socket(listen);
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  std::printf(
      "udp_reflector: listening on %s\n",
      netagg::Endpoint{ntohl(bound.sin_addr.s_addr), ntohs(bound.sin_port)}.to_string().c_str());
  std::fflush(stdout);
  Batch b;
  std::uint64_t in = 0, out = 0;
  const double cpu0 = cpu_seconds();
  while (!g_stop) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    b.arm();
    const int n = ::recvmmsg(fd, b.msg.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) continue;
    in += static_cast<std::uint64_t>(n);
    for (int i = 0; i < n; ++i) b.iov[i].iov_len = b.msg[i].msg_len;  // same address, same bytes
    int sent = 0;
    while (sent < n) {
      const int r = ::sendmmsg(fd, b.msg.data() + sent, static_cast<unsigned>(n - sent), 0);
      if (r <= 0) break;
      sent += r;
    }
    out += static_cast<std::uint64_t>(sent);
  }
  std::printf("{\"packets_in\":%llu,\"packets_out\":%llu,\"cpu_seconds\":%.6f}\n",
              static_cast<unsigned long long>(in), static_cast<unsigned long long>(out),
              cpu_seconds() - cpu0);
  return 0;
}

int blast(const netagg::Endpoint& target, std::uint64_t packets, int window, std::size_t bytes) {
  const int fd = udp_socket(netagg::Endpoint{0, 0});
  sockaddr_in to = to_sockaddr(target);
  std::vector<char> payload(bytes, 'x');
  iovec iov{payload.data(), payload.size()};
  std::vector<mmsghdr> send(kBatch);
  for (auto& m : send) {
    m = {};
    m.msg_hdr.msg_iov = &iov;
    m.msg_hdr.msg_iovlen = 1;
    m.msg_hdr.msg_name = &to;
    m.msg_hdr.msg_namelen = sizeof(to);
  }
  const auto send_n = [&](int n) {
    while (n > 0) {
      const int r = ::sendmmsg(fd, send.data(), static_cast<unsigned>(std::min(n, kBatch)), 0);
      if (r <= 0) throw std::runtime_error(std::string("sendmmsg: ") + std::strerror(errno));
      n -= r;
    }
  };
  Batch b;
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t got = 0, sent = 0;
  const auto first = static_cast<int>(std::min<std::uint64_t>(packets, std::uint64_t(window)));
  send_n(first);
  sent = static_cast<std::uint64_t>(first);
  while (got < packets) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) {
      std::fprintf(stderr, "udp_reflector: no reply for 2 s after %llu of %llu\n",
                   static_cast<unsigned long long>(got), static_cast<unsigned long long>(packets));
      return 3;
    }
    b.arm();
    const int n = ::recvmmsg(fd, b.msg.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) continue;
    got += static_cast<std::uint64_t>(n);
    const auto more = static_cast<int>(std::min<std::uint64_t>(packets - sent, std::uint64_t(n)));
    if (more > 0) send_n(more);
    sent += static_cast<std::uint64_t>(more);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"packets\":%llu,\"seconds\":%.6f,\"cpu_seconds\":%.6f}\n",
              static_cast<unsigned long long>(got), seconds, cpu_seconds() - cpu0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"plain UDP reflector and its load, the peer of the packet-cost benchmark"};
  app.require_subcommand(1);
  std::string listen = "127.0.0.1:0", target;
  std::uint64_t packets = 100000;
  int window = 64;
  std::size_t bytes = 1046;  // a netagg packet of 256 int32 or fp32
  auto* r = app.add_subcommand("reflect", "answer every datagram with itself");
  r->add_option("--listen", listen, "IP:PORT to bind")->capture_default_str();
  auto* b = app.add_subcommand("blast", "keep a window of datagrams in flight to a reflector");
  b->add_option("--target", target, "IP:PORT of the reflector")->required();
  b->add_option("--packets", packets, "replies to wait for")->check(CLI::Range(1ull, 1ull << 40));
  b->add_option("--window", window, "datagrams in flight")->check(CLI::Range(1, 4096));
  b->add_option("--bytes", bytes, "datagram size")->check(CLI::Range(std::size_t{1}, kMaxDatagram));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (r->parsed()) {
      // Port 0 (the kernel picks one) is what Endpoint::parse refuses for a peer's address.
      const bool any_port = listen.size() > 2 && listen.compare(listen.size() - 2, 2, ":0") == 0;
      netagg::Endpoint e = netagg::Endpoint::parse(
          any_port ? listen.substr(0, listen.size() - 1) + "1" : listen, "--listen");
      if (any_port) e.port = 0;
      return reflect(e);
    }
    return blast(netagg::Endpoint::parse(target, "--target"), packets, window, bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "udp_reflector: %s\n", e.what());
    return 1;
  }
}

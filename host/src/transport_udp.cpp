// SPDX-License-Identifier: Apache-2.0
// Kernel UDP transport: one non-blocking socket bound to the worker's address, batched
// sendmmsg/recvmmsg. The socket stays unconnected so that datagrams from anyone other than the
// aggregator reach us and can be counted as foreign instead of vanishing in the kernel.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/transport.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

constexpr std::size_t kBatch = 64;
constexpr int kSocketBufferBytes = 4 << 20;
// Room for one byte more than the largest netagg packet, so an oversized datagram shows up as
// such (MSG_TRUNC) instead of being cut to a plausible length.
constexpr std::size_t kReceiveBufferSize = wire::kMaxPacketSize + 64;
// How long send() waits for room in a full socket buffer before it gives the packets up to
// retransmission.
constexpr int kSendStallMs = 200;

sockaddr_in to_sockaddr(const Endpoint& e) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(e.ip);
  a.sin_port = htons(e.port);
  return a;
}

[[noreturn]] void socket_error(std::string_view what, int err) {
  throw Error(Errc::kTransport, fmt::format("udp: {}: {}", what, std::strerror(err)));
}

class UdpTransport final : public Transport {
 public:
  UdpTransport(const Endpoint& local, const Endpoint& aggregator)
      : local_(local), aggregator_(aggregator), peer_(to_sockaddr(aggregator)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) socket_error("socket", errno);
    // Best effort: bursts of a whole window must not overflow the default buffers, but an
    // unprivileged process is capped by net.core.[rw]mem_max and that is fine.
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof kSocketBufferBytes);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof kSocketBufferBytes);
    const sockaddr_in self = to_sockaddr(local);
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&self), sizeof self) != 0) {
      const int err = errno;
      ::close(fd_);
      socket_error(fmt::format("bind {}", local.to_string()), err);
    }
    rx_buffers_.resize(kBatch * kReceiveBufferSize);
    rx_iov_.resize(kBatch);
    rx_msgs_.resize(kBatch);
    rx_from_.resize(kBatch);
    tx_iov_.resize(kBatch);
    tx_msgs_.resize(kBatch);
  }

  ~UdpTransport() override { ::close(fd_); }

  void send(std::span<const std::span<const std::byte>> packets) override {
    std::size_t done = 0;
    while (done < packets.size()) {
      const std::size_t n = std::min(kBatch, packets.size() - done);
      for (std::size_t i = 0; i < n; ++i) {
        auto p = packets[done + i];
        tx_iov_[i].iov_base = const_cast<std::byte*>(p.data());
        tx_iov_[i].iov_len = p.size();
        tx_msgs_[i] = {};
        tx_msgs_[i].msg_hdr.msg_name = &peer_;
        tx_msgs_[i].msg_hdr.msg_namelen = sizeof peer_;
        tx_msgs_[i].msg_hdr.msg_iov = &tx_iov_[i];
        tx_msgs_[i].msg_hdr.msg_iovlen = 1;
      }
      const int sent = ::sendmmsg(fd_, tx_msgs_.data(), static_cast<unsigned>(n), 0);
      if (sent > 0) {
        done += static_cast<std::size_t>(sent);
        counters_.sent += static_cast<std::uint64_t>(sent);
        continue;
      }
      const int err = errno;
      if (sent < 0 && err == EINTR) continue;
      if (sent == 0 || err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
        pollfd pfd{fd_, POLLOUT, 0};
        const int r = ::poll(&pfd, 1, kSendStallMs);
        if (r < 0 && errno != EINTR) socket_error("poll", errno);
        // Still full: the rest goes unsent now; the engine retransmits it on timeout, as it
        // would after a loss in the network.
        if (r == 0) return;
        continue;
      }
      socket_error(fmt::format("sendmmsg to {}", aggregator_.to_string()), err);
    }
  }

  std::size_t receive(Duration timeout, const PacketHandler& on_packet) override {
    int got = receive_batch();
    if (got == 0) {
      if (timeout <= Duration::zero()) return 0;
      pollfd pfd{fd_, POLLIN, 0};
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
      const timespec ts{static_cast<time_t>(ns / 1'000'000'000),
                        static_cast<long>(ns % 1'000'000'000)};
      const int r = ::ppoll(&pfd, 1, &ts, nullptr);
      if (r < 0) {
        if (errno == EINTR) return 0;
        socket_error("ppoll", errno);
      }
      if (r == 0) return 0;
      if (pfd.revents & (POLLERR | POLLNVAL)) socket_error("ppoll", EIO);
      got = receive_batch();
    }
    std::size_t handed = 0;
    for (int i = 0; i < got; ++i) {
      const mmsghdr& m = rx_msgs_[i];
      const sockaddr_in& from = rx_from_[i];
      if (m.msg_hdr.msg_namelen != sizeof(sockaddr_in) || from.sin_family != AF_INET ||
          from.sin_addr.s_addr != peer_.sin_addr.s_addr || from.sin_port != peer_.sin_port) {
        ++counters_.dropped_foreign;
        continue;
      }
      if ((m.msg_hdr.msg_flags & MSG_TRUNC) || m.msg_len > wire::kMaxPacketSize) {
        ++counters_.dropped_malformed;
        continue;
      }
      ++counters_.received;
      ++handed;
      on_packet(std::span<const std::byte>(&rx_buffers_[i * kReceiveBufferSize], m.msg_len));
    }
    return handed;
  }

  std::string name() const override {
    return fmt::format("udp {} -> {}", local_.to_string(), aggregator_.to_string());
  }

  TransportCounters counters() const override { return counters_; }

 private:
  // Takes whatever is queued (up to a batch) without blocking; 0 if nothing is.
  int receive_batch() {
    for (std::size_t i = 0; i < kBatch; ++i) {
      rx_iov_[i].iov_base = &rx_buffers_[i * kReceiveBufferSize];
      rx_iov_[i].iov_len = kReceiveBufferSize;
      rx_msgs_[i] = {};
      rx_msgs_[i].msg_hdr.msg_name = &rx_from_[i];
      rx_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
      rx_msgs_[i].msg_hdr.msg_iovlen = 1;
    }
    for (;;) {
      const int n = ::recvmmsg(fd_, rx_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      // An ICMP error queued on the socket (e.g. port unreachable) is reported once; it says
      // nothing the protocol's timeouts do not already handle.
      if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) return 0;
      socket_error(fmt::format("recvmmsg on {}", local_.to_string()), errno);
    }
  }

  Endpoint local_, aggregator_;
  sockaddr_in peer_;
  int fd_ = -1;
  TransportCounters counters_;
  std::vector<std::byte> rx_buffers_;
  std::vector<iovec> rx_iov_;
  std::vector<mmsghdr> rx_msgs_;
  std::vector<sockaddr_in> rx_from_;
  std::vector<iovec> tx_iov_;
  std::vector<mmsghdr> tx_msgs_;
};

}  // namespace

std::unique_ptr<Transport> make_udp_transport(const Endpoint& local, const Endpoint& aggregator) {
  if (aggregator.port == 0 || aggregator.ip == 0)
    throw Error(Errc::kConfig, fmt::format("udp: aggregator address {} is not a destination",
                                           aggregator.to_string()));
  return std::make_unique<UdpTransport>(local, aggregator);
}

}  // namespace netagg

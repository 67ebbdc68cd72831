// SPDX-License-Identifier: Apache-2.0
// Kernel UDP transport: one non-blocking socket bound to the worker's address, batched
// sendmmsg/recvmmsg. The socket stays unconnected so that datagrams from anyone other than the
// aggregator reach us and can be counted as foreign instead of vanishing in the kernel.
//
// With offload (the default), runs of packets of one size leave as one UDP GSO message each
// (UDP_SEGMENT: the kernel cuts it into datagrams, one pass through the stack for up to 64),
// and the socket takes results coalesced by UDP GRO (UDP_GRO), split here by the segment size
// the kernel reports. The datagrams on the wire are the same either way.
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
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
// GSO: at most 64 segments a message (the kernel's UDP_MAX_SEGMENTS) and the message within one
// IPv4 datagram's payload. GRO: a coalesced datagram is at most 64 KiB.
constexpr std::size_t kMaxSegments = 64;
constexpr std::size_t kMaxGsoBytes = 65507;
constexpr std::size_t kGroBufferSize = 65536;
constexpr std::size_t kRxControl = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int));
constexpr std::size_t kTxControl = CMSG_SPACE(sizeof(std::uint16_t));
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
  UdpTransport(const Endpoint& local, std::span<const Endpoint> aggregators, bool offload,
               bool ecn_capable)
      : local_(local), aggregators_(aggregators.begin(), aggregators.end()), gso_(offload) {
    for (const Endpoint& a : aggregators_) peers_.push_back(to_sockaddr(a));
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
    if (offload) {
      const int on = 1;
      gro_ = ::setsockopt(fd_, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0;
    }
    {
      // ICMP errors for an unconnected socket come only through its error queue: a port that
      // refuses (nothing listens at the aggregator's address) is seen and counted there.
      const int on = 1;
      ::setsockopt(fd_, IPPROTO_IP, IP_RECVERR, &on, sizeof on);
    }
    if (ecn_capable) {  // ECT(0) on every packet, and the ECN bits of what arrives
      const int tos = 0x02, on = 1;
      ::setsockopt(fd_, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
      ::setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &on, sizeof on);
    }
    rx_size_ = gro_ ? kGroBufferSize : kReceiveBufferSize;
    rx_buffers_.resize(kBatch * rx_size_);
    rx_iov_.resize(kBatch);
    rx_msgs_.resize(kBatch);
    rx_from_.resize(kBatch);
    rx_control_.resize(kBatch * kRxControl);
    tx_iov_.resize(kBatch * kMaxSegments);
    tx_msgs_.resize(kBatch);
    tx_control_.resize(kBatch * kTxControl);
    tx_packets_.resize(kBatch);
  }

  ~UdpTransport() override { ::close(fd_); }

  void send(std::span<const std::span<const std::byte>> packets) override { send_to(0, packets); }

  void send_to(std::size_t peer, std::span<const std::span<const std::byte>> packets) override {
    if (peer >= peers_.size())
      throw Error(Errc::kUnsupported, fmt::format("udp: no aggregator {} (this transport has {})",
                                                  peer, peers_.size()));
    peer_ = &peers_[peer];
    std::size_t done = 0;
    while (done < packets.size()) {
      const std::size_t messages = build_messages(packets.subspan(done));
      const int sent = ::sendmmsg(fd_, tx_msgs_.data(), static_cast<unsigned>(messages), 0);
      if (sent > 0) {
        std::size_t n = 0;
        for (int m = 0; m < sent; ++m) n += tx_packets_[static_cast<std::size_t>(m)];
        done += n;
        counters_.sent += n;
        continue;
      }
      const int err = errno;
      if (sent < 0 && err == EINTR) continue;
      if (sent < 0 && (err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH)) {
        // An earlier packet's ICMP error, reported on this call: counted, and sent again.
        drain_errors();
        continue;
      }
      if (sent < 0 && gso_ && (err == EIO || err == EINVAL || err == ENOPROTOOPT)) {
        gso_ = false;  // the kernel or the device cannot segment: one datagram a message
        continue;
      }
      if (sent == 0 || err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
        pollfd pfd{fd_, POLLOUT, 0};
        const int r = ::poll(&pfd, 1, kSendStallMs);
        if (r < 0 && errno != EINTR) socket_error("poll", errno);
        // Still full: the rest goes unsent now; the engine retransmits it on timeout, as it
        // would after a loss in the network.
        if (r == 0) return;
        continue;
      }
      socket_error(fmt::format("sendmmsg to {}", aggregators_[peer].to_string()), err);
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
      if (pfd.revents & POLLNVAL) socket_error("ppoll", EIO);
      if (pfd.revents & POLLERR) drain_errors();
      got = receive_batch();
    }
    std::size_t handed = 0;
    for (int i = 0; i < got; ++i) {
      mmsghdr& m = rx_msgs_[i];
      const sockaddr_in& from = rx_from_[i];
      // Coalesced by GRO: datagrams of `segment` bytes each, the last one possibly shorter.
      std::size_t segment = m.msg_len;
      last_ecn_ = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c != nullptr; c = CMSG_NXTHDR(&m.msg_hdr, c)) {
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
          int size = 0;
          std::memcpy(&size, CMSG_DATA(c), sizeof size);
          if (size > 0) segment = static_cast<std::size_t>(size);
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
          std::uint8_t tos = 0;  // (GRO coalesces only datagrams with equal TOS)
          std::memcpy(&tos, CMSG_DATA(c), sizeof tos);
          last_ecn_ = tos & 3;
        }
      }
      const std::size_t datagrams = segment == 0 ? 1 : (m.msg_len + segment - 1) / segment;
      if (m.msg_hdr.msg_namelen != sizeof(sockaddr_in) || from.sin_family != AF_INET ||
          !is_peer(from)) {
        counters_.dropped_foreign += datagrams;
        continue;
      }
      if ((m.msg_hdr.msg_flags & MSG_TRUNC) || segment > wire::kMaxPacketSize) {
        counters_.dropped_malformed += datagrams;
        continue;
      }
      const std::byte* data = &rx_buffers_[i * rx_size_];
      for (std::size_t at = 0; at < m.msg_len || at == 0; at += segment) {
        ++counters_.received;
        ++handed;
        on_packet(std::span<const std::byte>(data + at, std::min(segment, m.msg_len - at)));
        if (segment == 0) break;
      }
    }
    return handed;
  }

  std::string name() const override {
    std::string to;
    for (const Endpoint& a : aggregators_) to += (to.empty() ? "" : ", ") + a.to_string();
    return fmt::format("udp {} -> {}", local_.to_string(), to);
  }

  TransportCounters counters() const override { return counters_; }
  std::optional<Endpoint> last_refused() const override { return last_refused_; }
  std::uint8_t last_ecn() const override { return last_ecn_; }

 private:
  // Fills tx_msgs_ with up to kBatch messages for the first packets: with GSO, a run of packets
  // of one size (the last may be shorter) in one message; without, one packet a message.
  // tx_packets_[m] is how many packets message m carries. Returns the number of messages.
  std::size_t build_messages(std::span<const std::span<const std::byte>> packets) {
    std::size_t m = 0, p = 0, iov = 0;
    while (m < kBatch && p < packets.size()) {
      const std::size_t first = p, size = packets[p].size();
      std::size_t bytes = size;
      tx_iov_[iov + p - first] = {const_cast<std::byte*>(packets[p].data()), size};
      ++p;
      while (gso_ && size > 0 && p < packets.size() && p - first < kMaxSegments &&
             packets[p].size() <= size && packets[p].size() > 0 &&
             bytes + packets[p].size() <= kMaxGsoBytes) {
        tx_iov_[iov + p - first] = {const_cast<std::byte*>(packets[p].data()), packets[p].size()};
        bytes += packets[p].size();
        ++p;
        if (packets[p - 1].size() < size) break;  // only the last segment may be shorter
      }
      msghdr& h = tx_msgs_[m].msg_hdr;
      tx_msgs_[m] = {};
      h.msg_name = const_cast<sockaddr_in*>(peer_);
      h.msg_namelen = sizeof *peer_;
      h.msg_iov = &tx_iov_[iov];
      h.msg_iovlen = p - first;
      if (p - first > 1) {
        h.msg_control = &tx_control_[m * kTxControl];
        h.msg_controllen = kTxControl;
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
        const auto segment = static_cast<std::uint16_t>(size);
        std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
      }
      tx_packets_[m] = p - first;
      iov += p - first;
      ++m;
    }
    return m;
  }

  // Takes whatever is queued (up to a batch) without blocking; 0 if nothing is.
  int receive_batch() {
    for (std::size_t i = 0; i < kBatch; ++i) {
      rx_iov_[i].iov_base = &rx_buffers_[i * rx_size_];
      rx_iov_[i].iov_len = rx_size_;
      rx_msgs_[i] = {};
      rx_msgs_[i].msg_hdr.msg_name = &rx_from_[i];
      rx_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
      rx_msgs_[i].msg_hdr.msg_iovlen = 1;
      rx_msgs_[i].msg_hdr.msg_control = &rx_control_[i * kRxControl];
      rx_msgs_[i].msg_hdr.msg_controllen = kRxControl;
    }
    for (;;) {
      const int n = ::recvmmsg(fd_, rx_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      // An ICMP error queued on the socket (e.g. port unreachable): counted from the error
      // queue; the protocol's timeouts handle the packet.
      if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) {
        drain_errors();
        return 0;
      }
      socket_error(fmt::format("recvmmsg on {}", local_.to_string()), errno);
    }
  }

  // Reads the socket's error queue: each ICMP "port unreachable" for a packet to an aggregator
  // is a refusal (counted, its address kept); anything else there is let go.
  void drain_errors() {
    for (int i = 0; i < 256; ++i) {
      sockaddr_in to{};
      std::byte data[64];
      alignas(cmsghdr) std::byte control[256];
      iovec iov{data, sizeof data};
      msghdr h{};
      h.msg_name = &to;
      h.msg_namelen = sizeof to;
      h.msg_iov = &iov;
      h.msg_iovlen = 1;
      h.msg_control = control;
      h.msg_controllen = sizeof control;
      if (::recvmsg(fd_, &h, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR) continue;
        sock_extended_err e{};
        std::memcpy(&e, CMSG_DATA(c), sizeof e);
        if (e.ee_origin == SO_EE_ORIGIN_ICMP && e.ee_type == 3 && e.ee_code == 3 &&
            h.msg_namelen >= sizeof(sockaddr_in) && is_peer(to)) {
          ++counters_.refused;
          last_refused_ = Endpoint{ntohl(to.sin_addr.s_addr), ntohs(to.sin_port)};
        }
      }
    }
  }

  bool is_peer(const sockaddr_in& from) const {
    for (const sockaddr_in& p : peers_)
      if (from.sin_addr.s_addr == p.sin_addr.s_addr && from.sin_port == p.sin_port) return true;
    return false;
  }

  Endpoint local_;
  std::vector<Endpoint> aggregators_;
  std::vector<sockaddr_in> peers_;
  const sockaddr_in* peer_ = nullptr;  // where the messages being built go
  int fd_ = -1;
  bool gso_ = false, gro_ = false;
  std::uint8_t last_ecn_ = 0;
  std::optional<Endpoint> last_refused_;
  std::size_t rx_size_ = kReceiveBufferSize;  // bytes per receive buffer
  TransportCounters counters_;
  std::vector<std::byte> rx_buffers_;
  std::vector<iovec> rx_iov_;
  std::vector<mmsghdr> rx_msgs_;
  std::vector<sockaddr_in> rx_from_;
  std::vector<std::byte> rx_control_;
  std::vector<iovec> tx_iov_;  // kBatch messages of up to kMaxSegments packets
  std::vector<mmsghdr> tx_msgs_;
  std::vector<std::byte> tx_control_;
  std::vector<std::size_t> tx_packets_;  // packets in each message
};

}  // namespace

std::unique_ptr<Transport> make_udp_transport(const Endpoint& local, const Endpoint& aggregator,
                                              bool offload, bool ecn_capable) {
  return make_udp_transport(local, std::span<const Endpoint>(&aggregator, 1), offload, ecn_capable);
}

std::unique_ptr<Transport> make_udp_transport(const Endpoint& local,
                                              std::span<const Endpoint> aggregators, bool offload,
                                              bool ecn_capable) {
  if (aggregators.empty()) throw Error(Errc::kConfig, "udp: no aggregator to send to");
  for (const Endpoint& a : aggregators)
    if (a.port == 0 || a.ip == 0)
      throw Error(Errc::kConfig,
                  fmt::format("udp: aggregator address {} is not a destination", a.to_string()));
  return std::make_unique<UdpTransport>(local, aggregators, offload, ecn_capable);
}

void Transport::send_to(std::size_t peer, std::span<const std::span<const std::byte>> packets) {
  if (peer != 0)
    throw Error(Errc::kUnsupported,
                fmt::format("{}: talks to one aggregator, not to aggregator {}", name(), peer));
  send(packets);
}

}  // namespace netagg

// SPDX-License-Identifier: Apache-2.0
#include "datagram_server.hpp"
#include "frame_io.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>

#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "netagg/address.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {
namespace {

constexpr int kSocketBufferBytes = 8 << 20;
constexpr std::size_t kBatchesPerPoll = 16;       // then look at signals again
constexpr std::size_t kMaxDrainAtExit = 1 << 20;  // datagrams processed after SIGTERM
// On a DPDK port: spin this long after the last frame, then nap this long at a time; while
// frames come, look at the daemon's descriptors every this many polls.
constexpr auto kFrameSpin = std::chrono::microseconds(20);
constexpr auto kFrameNap = std::chrono::microseconds(20);
constexpr std::uint64_t kFramePollsPerLook = 256;
constexpr std::size_t kControlSize =
    CMSG_SPACE(sizeof(in_pktinfo)) + CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int));
constexpr std::size_t kMaxSegments = 64;  // the kernel's UDP_MAX_SEGMENTS

// Hooks::on_tick every Hooks::tick_seconds, when both are set.
class Ticker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Ticker(const DatagramServer::Hooks& hooks)
      : on_tick_(hooks.tick_seconds > 0 ? hooks.on_tick : nullptr),
        interval_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(hooks.tick_seconds))),
        next_(Clock::now() + interval_) {}
  bool ticking() const { return static_cast<bool>(on_tick_); }
  Clock::duration left() const { return next_ - Clock::now(); }  // until the next tick
  void tick_if_due() {
    if (!on_tick_ || Clock::now() < next_) return;
    on_tick_();
    next_ += interval_;
    if (next_ < Clock::now()) next_ = Clock::now() + interval_;
  }

 private:
  std::function<void()> on_tick_;
  Clock::duration interval_;
  Clock::time_point next_;
};
constexpr std::size_t kMaxGsoBytes = 65507;  // one IPv4 datagram's payload

sockaddr_in to_sockaddr(const Endpoint& e) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(e.ip);
  sa.sin_port = htons(e.port);
  return sa;
}

}  // namespace

Endpoint parse_listen_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    throw Error(Errc::kConfig, fmt::format("--listen: '{}' is not \"a.b.c.d:port\"", text));
  const std::uint32_t ip = parse_ipv4(text.substr(0, colon), "--listen");
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, port);
  if (first == last || ec != std::errc() || ptr != last || port > 0xFFFF)
    throw Error(Errc::kConfig,
                fmt::format("--listen: '{}' is not a port in 0..65535", std::string(first, last)));
  return Endpoint{ip, static_cast<std::uint16_t>(port)};
}

namespace {
sigset_t daemon_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (const int s : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) sigaddset(&signals, s);
  return signals;
}
}  // namespace

void block_daemon_signals() {
  const sigset_t signals = daemon_signals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
}

DatagramServer::DatagramServer(const Endpoint& listen, const ServerOptions& options)
    : recv_iov_(kRecvBatch),
      recv_addrs_(kRecvBatch),
      recv_msgs_(kRecvBatch),
      recv_control_(kRecvBatch * kControlSize),
      gso_(options.offload),
      send_buffers_(kSendBatch * kMaxSendSize),
      send_sizes_(kSendBatch),
      send_addrs_(kSendBatch),
      send_sources_(kSendBatch),
      send_ecn_(kSendBatch),
      send_order_(kSendBatch),
      send_iov_(kSendBatch),
      send_msgs_(kSendBatch),
      send_counts_(kSendBatch),
      send_control_(kSendBatch * kControlSize) {
  block_daemon_signals();
  die_at_ = options.die_at_datagram;
  const auto fail = [this](const std::string& what) {
    const int err = errno;
    if (fd_ >= 0) close(fd_);
    if (signal_fd_ >= 0) close(signal_fd_);
    if (stop_fd_ >= 0) close(stop_fd_);
    throw Error(Errc::kConfig, fmt::format("{}: {}", what, std::strerror(err)));
  };
  if (options.signals) {
    const sigset_t signals = daemon_signals();
    signal_fd_ = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) fail("signalfd");
  }
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) fail("eventfd");
  if (options.dpdk) {
    if (options.reuse_port)
      throw Error(Errc::kConfig, "a DPDK port is served by one thread (no reuse_port)");
    try {
      frames_ = std::make_unique<FrameIo>(*options.dpdk, listen);
    } catch (...) {
      if (signal_fd_ >= 0) close(signal_fd_);
      close(stop_fd_);
      throw;
    }
    gso_ = false;
    bound_ = listen;
    batch_.reserve(kRecvBatch);
    return;
  }

  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail("socket");
  // Best effort: the kernel caps these at net.core.{r,w}mem_max.
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  const int on = 1;
  setsockopt(fd_, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
  setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &on, sizeof(on));  // the ECN bits of what arrives
  if (options.offload) gro_ = setsockopt(fd_, IPPROTO_UDP, UDP_GRO, &on, sizeof(on)) == 0;
  if (options.reuse_port && setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0)
    fail("SO_REUSEPORT");
  recv_size_ = gro_ ? kGroBufferSize : kRecvBufferSize;
  recv_buffers_.resize(kRecvBatch * recv_size_);
  const sockaddr_in sa = to_sockaddr(listen);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0)
    fail(fmt::format("cannot listen on {}", listen.to_string()));
  sockaddr_in actual{};
  socklen_t len = sizeof(actual);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&actual), &len);
  bound_ = Endpoint{ntohl(actual.sin_addr.s_addr), ntohs(actual.sin_port)};

  for (std::size_t i = 0; i < kRecvBatch; ++i) {
    recv_iov_[i].iov_base = recv_buffers_.data() + i * recv_size_;
    recv_iov_[i].iov_len = recv_size_;
    recv_msgs_[i].msg_hdr.msg_iov = &recv_iov_[i];
    recv_msgs_[i].msg_hdr.msg_iovlen = 1;
    recv_msgs_[i].msg_hdr.msg_name = &recv_addrs_[i];
  }
  batch_.reserve(kRecvBatch * (gro_ ? kMaxSegments : 1));
}

DatagramServer::~DatagramServer() {
  if (fd_ >= 0) close(fd_);
  if (signal_fd_ >= 0) close(signal_fd_);
  close(stop_fd_);
}

void DatagramServer::request_stop() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(stop_fd_, &one, sizeof(one));  // full: already asked
}

void DatagramServer::steer_by_slot(unsigned groups) {
  if (groups < 1 || groups > 0xFFFF || frames_)
    throw Error(Errc::kConfig, fmt::format("steer_by_slot: {} groups{}", groups,
                                           frames_ ? " on a DPDK port" : ""));
  // The program sees the UDP payload from offset 0 (the kernel pulls the UDP header first). An
  // absolute load beyond the datagram ends the program with 0: server 0.
  sock_filter code[] = {
      {BPF_LD | BPF_H | BPF_ABS, 0, 0, static_cast<std::uint32_t>(wire::offset::kSlot)},
      {BPF_ALU | BPF_MOD | BPF_K, 0, 0, groups},
      {BPF_RET | BPF_A, 0, 0, 0},
  };
  sock_fprog program{static_cast<unsigned short>(std::size(code)), code};
  if (setsockopt(fd_, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof(program)) != 0)
    throw Error(Errc::kConfig, fmt::format("SO_ATTACH_REUSEPORT_CBPF: {}", std::strerror(errno)));
}

void DatagramServer::announce(std::string_view daemon) const {
  std::printf("%.*s: listening on %s\n", static_cast<int>(daemon.size()), daemon.data(),
              bound_.to_string().c_str());
  std::fflush(stdout);
}

void DatagramServer::send(const Endpoint& to, std::span<const std::byte> bytes,
                          std::uint32_t source_ip, std::uint8_t ecn) {
  if (bytes.size() > kMaxSendSize)
    throw Error(Errc::kInvalidArgument,
                fmt::format("datagram of {} bytes exceeds {}", bytes.size(), kMaxSendSize));
  if (frames_) {
    if (!frames_->queue(to, bytes, ecn)) ++counters_.send_errors;
    return;
  }
  if (pending_ == kSendBatch) flush();
  std::memcpy(send_buffers_.data() + pending_ * kMaxSendSize, bytes.data(), bytes.size());
  send_sizes_[pending_] = bytes.size();
  send_addrs_[pending_] = to_sockaddr(to);
  send_sources_[pending_] = source_ip;
  send_ecn_[pending_] = ecn & 3;
  ++pending_;
}

// Messages for the queued datagrams send_order_[from..pending_): with GSO, a run of datagrams to
// one destination from one source address, of one size (the last may be shorter), per message.
std::size_t DatagramServer::build_messages(std::size_t from) {
  std::size_t m = 0;
  for (std::size_t i = from; i < pending_; ++m) {
    const std::uint32_t first = send_order_[i];
    const sockaddr_in& to = send_addrs_[first];
    const std::size_t size = send_sizes_[first];
    std::size_t k = i, bytes = 0;
    do {
      const std::uint32_t d = send_order_[k];
      send_iov_[k].iov_base = send_buffers_.data() + std::size_t{d} * kMaxSendSize;
      send_iov_[k].iov_len = send_sizes_[d];
      bytes += send_sizes_[d];
      ++k;
      if (send_sizes_[d] < size) break;  // only the last segment may be shorter
    } while (gso_ && size > 0 && k < pending_ && k - i < kMaxSegments &&
             send_addrs_[send_order_[k]].sin_addr.s_addr == to.sin_addr.s_addr &&
             send_addrs_[send_order_[k]].sin_port == to.sin_port &&
             send_sources_[send_order_[k]] == send_sources_[first] &&
             send_ecn_[send_order_[k]] == send_ecn_[first] && send_sizes_[send_order_[k]] <= size &&
             send_sizes_[send_order_[k]] > 0 &&
             bytes + send_sizes_[send_order_[k]] <= kMaxGsoBytes);
    msghdr& h = send_msgs_[m].msg_hdr;
    send_msgs_[m] = {};
    h.msg_name = &send_addrs_[first];
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = &send_iov_[i];
    h.msg_iovlen = k - i;
    std::byte* control = send_control_.data() + m * kControlSize;
    std::size_t used = 0;
    std::memset(control, 0, kControlSize);  // CMSG_NXTHDR reads the next header's length
    h.msg_control = control;
    h.msg_controllen = kControlSize;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    if (send_sources_[first] != 0) {  // the local address it leaves from
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
      in_pktinfo info{};
      info.ipi_spec_dst.s_addr = htonl(send_sources_[first]);
      std::memcpy(CMSG_DATA(c), &info, sizeof(info));
      used += CMSG_SPACE(sizeof(in_pktinfo));
      c = CMSG_NXTHDR(&h, c);
    }
    if (send_ecn_[first] != 0) {  // the ECN bits of the IPv4 header
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_TOS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      const int tos = send_ecn_[first];
      std::memcpy(CMSG_DATA(c), &tos, sizeof(tos));
      used += CMSG_SPACE(sizeof(int));
      c = CMSG_NXTHDR(&h, c);
    }
    if (k - i > 1) {  // GSO: the kernel cuts it into datagrams of `size` bytes
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      const auto segment = static_cast<std::uint16_t>(size);
      std::memcpy(CMSG_DATA(c), &segment, sizeof(segment));
      used += CMSG_SPACE(sizeof(std::uint16_t));
    }
    h.msg_controllen = used;
    if (used == 0) h.msg_control = nullptr;
    send_counts_[m] = k - i;
    i = k;
  }
  return m;
}

void DatagramServer::flush() {
  if (frames_) {
    counters_.datagrams_sent += frames_->flush();
    return;
  }
  if (pending_ == 0) return;
  // Each destination's datagrams together, in the order they were queued.
  std::iota(send_order_.begin(), send_order_.begin() + static_cast<std::ptrdiff_t>(pending_), 0u);
  if (gso_)
    std::stable_sort(send_order_.begin(),
                     send_order_.begin() + static_cast<std::ptrdiff_t>(pending_),
                     [&](std::uint32_t a, std::uint32_t b) {
                       const sockaddr_in &x = send_addrs_[a], &y = send_addrs_[b];
                       if (x.sin_addr.s_addr != y.sin_addr.s_addr)
                         return x.sin_addr.s_addr < y.sin_addr.s_addr;
                       return x.sin_port < y.sin_port;
                     });
  std::size_t sent_datagrams = 0;  // of send_order_
  std::size_t messages = build_messages(0), done = 0;
  while (done < messages) {
    const int n =
        sendmmsg(fd_, send_msgs_.data() + done, static_cast<unsigned>(messages - done), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (gso_ && send_counts_[done] > 1 && (errno == EIO || errno == EINVAL)) {
        gso_ = false;  // the kernel or the device cannot segment: one datagram a message
        messages = build_messages(sent_datagrams);
        done = 0;
        continue;
      }
      // The first unsent message failed (e.g. unreachable destination): skip it, keep going.
      counters_.send_errors += send_counts_[done];
      sent_datagrams += send_counts_[done];
      ++done;
      continue;
    }
    for (int i = 0; i < n; ++i) {
      counters_.datagrams_sent += send_counts_[done];
      if (send_counts_[done] > 1) ++counters_.gso_messages;
      sent_datagrams += send_counts_[done];
      ++done;
    }
  }
  pending_ = 0;
}

std::size_t DatagramServer::receive_batch(const BatchHandler& handler) {
  batch_.clear();
  if (frames_) {
    const std::size_t frames = frames_->receive(batch_);
    if (batch_.empty()) {
      flush();  // ARP replies
      return frames;
    }
    handle(handler);
    return frames;
  }
  for (std::size_t i = 0; i < kRecvBatch; ++i) {
    recv_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    recv_msgs_[i].msg_hdr.msg_control = recv_control_.data() + i * kControlSize;
    recv_msgs_[i].msg_hdr.msg_controllen = kControlSize;
  }
  const int n = recvmmsg(fd_, recv_msgs_.data(), kRecvBatch, MSG_DONTWAIT, nullptr);
  if (n < 0) {
    // ECONNREFUSED: an ICMP error for an earlier send; it concerns no queued datagram.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNREFUSED)
      return 0;
    throw Error(Errc::kTransport, fmt::format("recvmmsg: {}", std::strerror(errno)));
  }
  for (int i = 0; i < n; ++i) {
    msghdr& h = recv_msgs_[i].msg_hdr;
    Datagram d;
    d.source = Endpoint{ntohl(recv_addrs_[i].sin_addr.s_addr), ntohs(recv_addrs_[i].sin_port)};
    d.destination = bound_;
    std::size_t length = recv_msgs_[i].msg_len, segment = length;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo info;
        std::memcpy(&info, CMSG_DATA(c), sizeof(info));
        d.destination.ip = ntohl(info.ipi_addr.s_addr);
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
        std::uint8_t tos = 0;  // (GRO coalesces only datagrams with equal TOS)
        std::memcpy(&tos, CMSG_DATA(c), sizeof(tos));
        d.ecn = tos & 3;
      } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
        int size = 0;  // coalesced by GRO: datagrams of this size, the last may be shorter
        std::memcpy(&size, CMSG_DATA(c), sizeof(size));
        if (size > 0) segment = static_cast<std::size_t>(size);
      }
    }
    const std::byte* data = recv_buffers_.data() + i * recv_size_;
    std::size_t at = 0;
    do {
      // A datagram longer than any packet is cut one byte beyond the largest, as a socket
      // without GRO buffers would.
      d.bytes = {data + at, std::min({segment, length - at, kRecvBufferSize})};
      batch_.push_back(d);
      at += segment;
    } while (segment > 0 && at < length);
  }
  handle(handler);
  return batch_.size();
}

// Hands batch_ to the handler and sends what it queued; with die_at_datagram, dies at that one.
void DatagramServer::handle(const BatchHandler& handler) {
  if (die_at_ > 0 && received_ + batch_.size() >= die_at_) {
    batch_.resize(static_cast<std::size_t>(die_at_ - received_ - 1));
    handler(batch_);
    flush();
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  received_ += batch_.size();
  handler(batch_);
  flush();
}

bool DatagramServer::take_stop_and_signals(const Hooks& hooks) {
  std::uint64_t stops = 0;
  bool stop = read(stop_fd_, &stops, sizeof(stops)) == static_cast<ssize_t>(sizeof(stops));
  signalfd_siginfo info{};
  while (signal_fd_ >= 0 &&
         read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    const int signo = static_cast<int>(info.ssi_signo);
    if (signo == SIGINT || signo == SIGTERM)
      stop = true;
    else if (hooks.on_signal)
      hooks.on_signal(signo);
  }
  if (stop) {
    // What was queued before the signal is counted.
    for (std::size_t drained = 0; drained < kMaxDrainAtExit;) {
      const std::size_t n = receive_batch(hooks.on_batch);
      if (n == 0) break;
      drained += n;
    }
  }
  return stop;
}

void DatagramServer::serve_frames(const Hooks& hooks) {
  using Clock = Ticker::Clock;
  Ticker ticker(hooks);
  auto last_frame = Clock::now();
  for (std::uint64_t loop = 1;; ++loop) {
    const auto now = Clock::now();
    if (receive_batch(hooks.on_batch) > 0) last_frame = now;
    const bool idle = now - last_frame > kFrameSpin;
    if (!idle && loop % kFramePollsPerLook != 0) continue;
    // The daemon's descriptors: a look without waiting while frames come, else a short nap.
    std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    for (const auto& w : hooks.watches) fds.push_back({w.fd, POLLIN, 0});
    auto nap = idle ? kFrameNap : Clock::duration::zero();
    if (ticker.ticking()) nap = std::clamp(ticker.left(), Clock::duration::zero(), nap);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(nap).count();
    const timespec timeout{0, static_cast<long>(ns)};
    if (ppoll(fds.data(), fds.size(), &timeout, nullptr) < 0 && errno != EINTR)
      throw Error(Errc::kTransport, fmt::format("ppoll: {}", std::strerror(errno)));
    if (take_stop_and_signals(hooks)) return;
    for (std::size_t i = 0; i < hooks.watches.size(); ++i)
      if (fds[2 + i].revents & (POLLIN | POLLERR)) hooks.watches[i].on_readable();
    ticker.tick_if_due();
  }
}

void DatagramServer::serve(const Hooks& hooks) {
  if (frames_) return serve_frames(hooks);
  Ticker ticker(hooks);
  for (;;) {
    int timeout_ms = -1;
    if (ticker.ticking()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(ticker.left());
      timeout_ms = static_cast<int>(std::max<std::int64_t>(0, left.count()));
    }
    std::vector<pollfd> fds = {{fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    for (const auto& w : hooks.watches) fds.push_back({w.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR)
      throw Error(Errc::kTransport, fmt::format("poll: {}", std::strerror(errno)));

    if (take_stop_and_signals(hooks)) return;
    if (fds[0].revents & POLLIN)
      for (std::size_t b = 0; b < kBatchesPerPoll; ++b)
        if (receive_batch(hooks.on_batch) < kRecvBatch) break;

    for (std::size_t i = 0; i < hooks.watches.size(); ++i)
      if (fds[3 + i].revents & (POLLIN | POLLERR)) hooks.watches[i].on_readable();
    ticker.tick_if_due();
  }
}

}  // namespace netagg::sim

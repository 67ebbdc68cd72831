// SPDX-License-Identifier: Apache-2.0
#include "raw_ports.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::sim {

namespace {
constexpr std::size_t kMaxFrame = 65536;
}

PortSpec parse_port_spec(std::string_view text) {
  const auto fail = [&](std::string_view problem) -> PortSpec {
    throw Error(Errc::kConfig, fmt::format("--iface '{}': {}", text, problem));
  };
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return fail("expected PORT=IFNAME");
  PortSpec spec;
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + eq, port);
  if (ec != std::errc() || end != text.data() + eq || eq == 0 || port > 511)
    return fail("PORT must be a switch port number 0..511");
  spec.port = static_cast<std::uint16_t>(port);
  spec.interface = std::string(text.substr(eq + 1));
  if (spec.interface.empty() || spec.interface.size() >= IFNAMSIZ)
    return fail("IFNAME must be an interface name");
  return spec;
}

RawPorts::RawPorts(const std::vector<PortSpec>& ports) : buffer_(kMaxFrame) {
  try {
    for (const auto& spec : ports) {
      for (const auto& p : ports_)
        if (p.spec.port == spec.port)
          throw Error(Errc::kConfig, fmt::format("--iface: port {} given twice", spec.port));
      Port p{spec, -1, static_cast<int>(if_nametoindex(spec.interface.c_str()))};
      if (p.ifindex == 0)
        throw Error(Errc::kConfig,
                    fmt::format("--iface {}={}: no such interface", spec.port, spec.interface));
      p.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
      if (p.fd < 0) {
        const int err = errno;
        throw Error(Errc::kConfig, fmt::format("--iface {}={}: AF_PACKET socket: {}{}", spec.port,
                                               spec.interface, std::strerror(err),
                                               err == EPERM ? " (needs root or CAP_NET_RAW)" : ""));
      }
      ports_.push_back(p);
      sockaddr_ll sa{};
      sa.sll_family = AF_PACKET;
      sa.sll_protocol = htons(ETH_P_ALL);
      sa.sll_ifindex = p.ifindex;
      if (bind(p.fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
        throw Error(Errc::kConfig, fmt::format("--iface {}={}: bind: {}", spec.port, spec.interface,
                                               std::strerror(errno)));
    }
  } catch (...) {
    for (auto& p : ports_) close(p.fd);
    throw;
  }
  // Between socket() and bind() a socket sees every interface's frames: forget them.
  drain();
}

RawPorts::~RawPorts() {
  for (auto& p : ports_) close(p.fd);
}

bool RawPorts::has_port(std::uint16_t port) const {
  for (const auto& p : ports_)
    if (p.spec.port == port) return true;
  return false;
}

void RawPorts::send(std::uint16_t port, std::span<const std::byte> frame) {
  for (const auto& p : ports_) {
    if (p.spec.port != port) continue;
    const ssize_t n = ::send(p.fd, frame.data(), frame.size(), 0);
    if (n != static_cast<ssize_t>(frame.size()))
      throw Error(Errc::kTransport,
                  fmt::format("sending {} bytes out of port {} ({}): {}", frame.size(), port,
                              p.spec.interface, n < 0 ? std::strerror(errno) : "short write"));
    return;
  }
  throw Error(Errc::kConfig,
              fmt::format("no interface for switch port {} (give --iface {}=IFNAME)", port, port));
}

std::optional<FrameOut> RawPorts::read(std::size_t index) {
  const Port& p = ports_.at(index);
  for (;;) {
    sockaddr_ll from{};
    socklen_t len = sizeof(from);
    const ssize_t n = recvfrom(p.fd, buffer_.data(), buffer_.size(), MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
      throw Error(Errc::kTransport, fmt::format("receiving on port {} ({}): {}", p.spec.port,
                                                p.spec.interface, std::strerror(errno)));
    }
    if (from.sll_pkttype == PACKET_OUTGOING) continue;  // our own send, seen on the way out
    const auto size = std::min(static_cast<std::size_t>(n), buffer_.size());
    return FrameOut{p.spec.port, {buffer_.begin(), buffer_.begin() + static_cast<long>(size)}};
  }
}

std::optional<FrameOut> RawPorts::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<pollfd> polls;
  for (const auto& p : ports_) polls.push_back({p.fd, POLLIN, 0});
  for (;;) {
    for (std::size_t i = 0; i < ports_.size(); ++i)
      if (auto f = read(i)) return f;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (poll(polls.data(), polls.size(), static_cast<int>(left.count())) < 0 && errno != EINTR)
      throw Error(Errc::kTransport, fmt::format("poll: {}", std::strerror(errno)));
  }
}

void RawPorts::drain() {
  for (std::size_t i = 0; i < ports_.size(); ++i)
    while (read(i)) {
    }
}

std::vector<int> RawPorts::fds() const {
  std::vector<int> fds;
  for (const auto& p : ports_) fds.push_back(p.fd);
  return fds;
}

}  // namespace netagg::sim

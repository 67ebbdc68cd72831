// SPDX-License-Identifier: Apache-2.0
// Switch ports on Linux network interfaces through AF_PACKET raw sockets: whole Ethernet
// frames out of and into an interface, for netagg-replay --iface (a BMv2 simple_switch or a
// Tofino model behind veths) and netagg-frame-switchd (the frame-level pipeline on interfaces).
// Needs CAP_NET_RAW.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeline.hpp"

namespace netagg::sim {

struct PortSpec {
  std::uint16_t port = 0;  // the switch's port number (BMv2: -i PORT@IFNAME)
  std::string interface;
};

// "PORT=IFNAME"; throws Error(kConfig) "--iface 'TEXT': PROBLEM".
PortSpec parse_port_spec(std::string_view text);

class RawPorts {
 public:
  // Opens and binds one socket per interface. Throws Error(kConfig) naming the interface (no
  // such interface, no permission: "needs root or CAP_NET_RAW"), or a port given twice.
  explicit RawPorts(const std::vector<PortSpec>& ports);
  ~RawPorts();
  RawPorts(const RawPorts&) = delete;
  RawPorts& operator=(const RawPorts&) = delete;

  bool has_port(std::uint16_t port) const;
  // Sends one frame out of the interface of `port`. Throws Error(kIo) on failure.
  void send(std::uint16_t port, std::span<const std::byte> frame);
  // The next frame that arrived on any interface (frames this host sent are skipped), or
  // nullopt when none came within `timeout`.
  std::optional<FrameOut> receive(std::chrono::milliseconds timeout);
  // Discards what is queued now.
  void drain();
  // The descriptors, for a caller's poll() (same order as the ports given).
  std::vector<int> fds() const;
  // Reads one frame from the socket at `index` if one is queued (non-blocking).
  std::optional<FrameOut> read(std::size_t index);

 private:
  struct Port {
    PortSpec spec;
    int fd = -1;
    int ifindex = 0;
  };
  std::vector<Port> ports_;
  std::vector<std::byte> buffer_;
};

}  // namespace netagg::sim

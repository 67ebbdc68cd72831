// SPDX-License-Identifier: Apache-2.0
// The datagram server's data path on a DPDK port instead of a UDP socket (ServerOptions::dpdk,
// netagg-switchd --dpdk): netagg datagrams taken out of Ethernet/IPv4/UDP frames and put into
// them here, ARP requests for the server's address answered, and each peer's MAC learned from the
// frames it sends (a peer always sends before it is answered; a datagram to a peer not heard yet
// is dropped after an ARP request, and its sender retransmits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "netagg/config.hpp"
#include "netagg/dpdk.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg::sim {

struct Datagram;

class FrameIo {
 public:
  static constexpr std::size_t kQueue = 256;  // frames queued before queue() sends them

  // Opens the port of cfg (Error(kConfig/kTransport/kUnsupported) as open_frame_port); `address`
  // is the server's IPv4 address and UDP port (both must be set: no kernel picks them).
  FrameIo(const DpdkConfig& cfg, const Endpoint& address);
  // On a port opened elsewhere (tests give a port of their own).
  FrameIo(std::unique_ptr<dpdk::FramePort> port, const Endpoint& address);

  // One receive burst: appends its netagg datagrams to `out` (their bytes valid until the next
  // call) and answers the ARP requests among its frames. Returns the number of frames taken.
  std::size_t receive(std::vector<Datagram>& out);

  // Queues one datagram as a frame to `to` (sending the queue when full). False, and nothing
  // queued, when `to`'s MAC is not known yet: an ARP request for it goes out instead.
  bool queue(const Endpoint& to, std::span<const std::byte> bytes, std::uint8_t ecn);

  // Sends the queued frames; returns how many of them the port took.
  std::size_t flush();

  std::string name() const { return port_->name(); }
  std::uint64_t foreign() const { return foreign_; }      // frames not for this server
  std::uint64_t malformed() const { return malformed_; }  // broken Ethernet/IPv4/UDP framing

 private:
  void answer_arp(std::span<const std::byte> frame);
  void queue_arp(wire::ArpOp op, const wire::Mac& to_mac, std::uint32_t to_ip);

  std::unique_ptr<dpdk::FramePort> port_;
  Endpoint address_;
  wire::Mac mac_{};
  std::unordered_map<std::uint32_t, wire::Mac> peers_;  // IPv4 address -> MAC, as heard
  std::vector<std::byte> frames_;                       // kQueue frames of kFrameRoom bytes
  std::vector<std::span<const std::byte>> queued_;
  std::uint64_t foreign_ = 0, malformed_ = 0;
};

}  // namespace netagg::sim

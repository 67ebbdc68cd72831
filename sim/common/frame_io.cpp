// SPDX-License-Identifier: Apache-2.0
#include "frame_io.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "datagram_server.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {
namespace {

constexpr std::size_t kFrameRoom = wire::kFrameOverhead + wire::kMaxPacketSize;
// The listen address, checked before a port is opened for it.
const Endpoint& served_address(const Endpoint& address) {
  if (address.ip == 0 || address.port == 0)
    throw Error(Errc::kConfig,
                fmt::format("--listen: {} on a DPDK port must name the IPv4 address and the UDP "
                            "port to serve (no kernel picks them)",
                            address.to_string()));
  return address;
}

// The port for `address`, opened once the address is known to be servable.
std::unique_ptr<dpdk::FramePort> open_port_for(const Endpoint& address, const DpdkConfig& cfg) {
  served_address(address);
  return dpdk::open_frame_port(cfg);
}

}  // namespace

FrameIo::FrameIo(const DpdkConfig& cfg, const Endpoint& address)
    : FrameIo(open_port_for(address, cfg), address) {}

FrameIo::FrameIo(std::unique_ptr<dpdk::FramePort> port, const Endpoint& address)
    : port_(std::move(port)), address_(served_address(address)), frames_(kQueue * kFrameRoom) {
  mac_ = port_->mac();
  port_->steer(address_);
  const std::size_t datagram = wire::kIpv4HeaderSize + wire::kUdpHeaderSize + wire::kHeaderSize;
  if (port_->mtu() < datagram)
    throw Error(Errc::kConfig, fmt::format("{}: MTU {} is below a netagg header's datagram",
                                           port_->name(), port_->mtu()));
  queued_.reserve(kQueue);
}

std::size_t FrameIo::receive(std::vector<Datagram>& out) {
  const auto frames = port_->receive();
  for (const auto frame : frames) {
    if (frame.size() < wire::kEthHeaderSize) {
      ++malformed_;
      continue;
    }
    if (wire::load_be16(frame.data() + 12) == wire::kEtherTypeArp) {
      answer_arp(frame);
      continue;
    }
    if (!std::equal(mac_.begin(), mac_.end(),
                    reinterpret_cast<const std::uint8_t*>(frame.data()))) {
      ++foreign_;  // another station's (the port may see the segment's traffic)
      continue;
    }
    const wire::DecodedFrame f = wire::decode_frame(frame, address_.port);
    using E = wire::Error;
    if (f.error == E::kNotIpv4 || f.error == E::kNotUdp || f.error == E::kWrongPort) {
      ++foreign_;
      continue;
    }
    if (f.error == E::kBadIpHeader || f.error == E::kIpLengthMismatch ||
        f.error == E::kUdpLengthMismatch ||
        (f.error == E::kTruncated && frame.size() < wire::kFrameOverhead)) {
      ++malformed_;
      continue;
    }
    if (f.address.dst_ip != address_.ip) {
      ++foreign_;
      continue;
    }
    // Framing is sound; what is wrong inside the netagg packet is the daemon's to judge (as a
    // datagram from a socket would be).
    const std::size_t ip_len = wire::load_be16(frame.data() + wire::kEthHeaderSize + 2);
    if (ip_len < wire::kIpv4HeaderSize + wire::kUdpHeaderSize) {
      ++malformed_;
      continue;
    }
    const std::size_t length =
        std::min(ip_len - wire::kIpv4HeaderSize - wire::kUdpHeaderSize,
                 std::min(frame.size() - wire::kFrameOverhead, DatagramServer::kRecvBufferSize));
    peers_[f.address.src_ip] = f.address.src_mac;
    Datagram d;
    d.source = Endpoint{f.address.src_ip, f.address.src_port};
    d.destination = address_;
    d.bytes = frame.subspan(wire::kFrameOverhead, length);
    d.ecn = f.address.ecn;
    out.push_back(d);
  }
  return frames.size();
}

bool FrameIo::queue(const Endpoint& to, std::span<const std::byte> bytes, std::uint8_t ecn) {
  const auto peer = peers_.find(to.ip);
  if (peer == peers_.end()) {
    queue_arp(wire::ArpOp::kRequest, wire::Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, to.ip);
    return false;
  }
  if (queued_.size() == kQueue) flush();
  wire::FrameAddress a;
  a.src_mac = mac_;
  a.dst_mac = peer->second;
  a.src_ip = address_.ip;
  a.dst_ip = to.ip;
  a.src_port = address_.port;
  a.dst_port = to.port;
  a.ecn = ecn & 3;
  std::byte* room = frames_.data() + queued_.size() * kFrameRoom;
  const std::size_t len = wire::encode_frame(a, bytes, {room, kFrameRoom});
  if (len == 0) return false;
  queued_.emplace_back(room, len);
  return true;
}

std::size_t FrameIo::flush() {
  if (queued_.empty()) return 0;
  const std::size_t sent = port_->send(queued_);
  queued_.clear();
  return sent;
}

void FrameIo::answer_arp(std::span<const std::byte> frame) {
  const std::optional<wire::Arp> arp = wire::decode_arp_frame(frame);
  if (!arp) return;
  const bool for_us = arp->target_ip == address_.ip;
  if (arp->op == wire::ArpOp::kReply || for_us) peers_[arp->sender_ip] = arp->sender_mac;
  if (arp->op == wire::ArpOp::kRequest && for_us) {
    queue_arp(wire::ArpOp::kReply, arp->sender_mac, arp->sender_ip);
    flush();
  }
}

// An ARP request (to broadcast) or reply (to `to_mac`) about this server's address.
void FrameIo::queue_arp(wire::ArpOp op, const wire::Mac& to_mac, std::uint32_t to_ip) {
  if (queued_.size() == kQueue) flush();
  wire::Arp arp;
  arp.op = op;
  arp.sender_mac = mac_;
  arp.sender_ip = address_.ip;
  if (op == wire::ArpOp::kReply) arp.target_mac = to_mac;
  arp.target_ip = to_ip;
  std::byte* f = frames_.data() + queued_.size() * kFrameRoom;
  queued_.emplace_back(f, wire::encode_arp_frame(to_mac, mac_, arp, {f, kFrameRoom}));
}

}  // namespace netagg::sim

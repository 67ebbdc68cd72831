// SPDX-License-Identifier: Apache-2.0
#include "netagg/wire.hpp"

#include <cstring>

namespace netagg::wire {

bool encode_header(const Header& h, std::span<std::byte> out) {
  if (out.size() < kHeaderSize || !header_encodable(h)) return false;
  store_header(h, out.data());
  return true;
}

Decoded decode(std::span<const std::byte> packet) {
  Decoded d;
  if (packet.size() < kHeaderSize) {
    d.error = Error::kTruncated;
    return d;
  }
  d.error = load_header(packet.data(), d.header);
  if (d.error != Error::kOk) return d;
  if (packet.size() != d.header.packet_size()) {
    d.error = Error::kLengthMismatch;
    return d;
  }
  d.payload = packet.subspan(kHeaderSize, d.header.payload_size());
  return d;
}

std::uint16_t ipv4_checksum(std::span<const std::byte> header) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < header.size(); i += 2) sum += load_be16(header.data() + i);
  if (header.size() % 2) sum += std::uint32_t(header.back()) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

std::size_t encode_notice(const Header& dropped, NoticeReason reason,
                          std::span<const std::uint32_t> waiting, std::span<std::byte> out) {
  if (waiting.size() + 1 > kMaxCount) return 0;
  Header h = dropped;
  h.type = MsgType::kNotice;
  h.dtype = DataType::kInt32;
  h.fresh = false;
  h.recovery = false;
  h.count = static_cast<std::uint16_t>(waiting.size() + 1);
  h.exponent = kExponentNone;
  const std::size_t size = kHeaderSize + std::size_t{h.count} * 4;
  if (out.size() < size || !encode_header(h, out)) return 0;
  std::byte* p = out.data() + kHeaderSize;
  store_be32(p, static_cast<std::uint32_t>(reason));
  for (std::size_t i = 0; i < waiting.size(); ++i) store_be32(p + 4 * (i + 1), waiting[i]);
  return size;
}

bool Notice::waits_for(std::size_t rank) const {
  if (rank / 32 >= waiting.size() / 4) return false;
  return (load_be32(waiting.data() + 4 * (rank / 32)) >> (rank % 32) & 1u) != 0;
}

std::optional<Notice> read_notice(const Decoded& d) {
  if (!d || d.header.type != MsgType::kNotice || d.header.dtype != DataType::kInt32 ||
      d.header.count == 0)
    return std::nullopt;
  const auto reason = static_cast<NoticeReason>(load_be32(d.payload.data()));
  if (!is_valid(reason)) return std::nullopt;
  return Notice{reason, d.payload.subspan(4)};
}

std::size_t encode_frame(const FrameAddress& a, std::span<const std::byte> packet,
                         std::span<std::byte> out) {
  const std::size_t ip_len = kIpv4HeaderSize + kUdpHeaderSize + packet.size();
  const std::size_t len = kEthHeaderSize + ip_len;
  if (out.size() < len || ip_len > 0xFFFF) return 0;
  std::byte* p = out.data();
  for (int i = 0; i < 6; ++i) p[i] = std::byte(a.dst_mac[i]);
  for (int i = 0; i < 6; ++i) p[6 + i] = std::byte(a.src_mac[i]);
  store_be16(p + 12, kEthertypeIpv4);
  std::byte* ip = p + kEthHeaderSize;
  ip[0] = std::byte(kIpVersionIhl);
  ip[1] = std::byte(a.ecn & 0x3);
  store_be16(ip + 2, static_cast<std::uint16_t>(ip_len));
  store_be16(ip + 4, 0);                                // identification
  store_be16(ip + 6, std::uint16_t(kIpFlagsDf << 13));  // DF, no fragment offset
  ip[8] = std::byte(kIpTtl);
  ip[9] = std::byte(kIpProtocolUdp);
  store_be16(ip + 10, 0);
  store_be32(ip + 12, a.src_ip);
  store_be32(ip + 16, a.dst_ip);
  store_be16(ip + 10, ipv4_checksum({ip, kIpv4HeaderSize}));
  std::byte* udp = ip + kIpv4HeaderSize;
  store_be16(udp + 0, a.src_port);
  store_be16(udp + 2, a.dst_port);
  store_be16(udp + 4, static_cast<std::uint16_t>(kUdpHeaderSize + packet.size()));
  store_be16(udp + 6, 0);  // no UDP checksum (allowed over IPv4)
  std::byte* body = udp + kUdpHeaderSize;
  for (std::size_t i = 0; i < packet.size(); ++i) body[i] = packet[i];
  return len;
}

DecodedFrame decode_frame(std::span<const std::byte> frame, std::uint16_t udp_port) {
  DecodedFrame f;
  if (frame.size() < kFrameOverhead) {
    f.error = Error::kTruncated;
    return f;
  }
  const std::byte* p = frame.data();
  for (int i = 0; i < 6; ++i) f.address.dst_mac[i] = std::uint8_t(p[i]);
  for (int i = 0; i < 6; ++i) f.address.src_mac[i] = std::uint8_t(p[6 + i]);
  if (load_be16(p + 12) != kEthertypeIpv4) {
    f.error = Error::kNotIpv4;
    return f;
  }
  const std::byte* ip = p + kEthHeaderSize;
  const auto fragment = load_be16(ip + 6);
  if (std::uint8_t(ip[0]) != kIpVersionIhl || (fragment & kIpFragmentMask) != 0 ||
      ipv4_checksum({ip, kIpv4HeaderSize}) != 0) {
    f.error = Error::kBadIpHeader;
    return f;
  }
  if (std::uint8_t(ip[9]) != kIpProtocolUdp) {
    f.error = Error::kNotUdp;
    return f;
  }
  const std::size_t ip_len = load_be16(ip + 2);
  if (ip_len < kIpv4HeaderSize + kUdpHeaderSize || kEthHeaderSize + ip_len > frame.size()) {
    f.error = Error::kIpLengthMismatch;
    return f;
  }
  f.address.ecn = std::uint8_t(ip[1]) & 0x3;
  f.address.src_ip = load_be32(ip + 12);
  f.address.dst_ip = load_be32(ip + 16);
  const std::byte* udp = ip + kIpv4HeaderSize;
  f.address.src_port = load_be16(udp + 0);
  f.address.dst_port = load_be16(udp + 2);
  if (load_be16(udp + 4) != ip_len - kIpv4HeaderSize) {
    f.error = Error::kUdpLengthMismatch;
    return f;
  }
  if (udp_port != 0 && f.address.dst_port != udp_port) {
    f.error = Error::kWrongPort;
    return f;
  }
  f.packet = decode(frame.subspan(kFrameOverhead, ip_len - kIpv4HeaderSize - kUdpHeaderSize));
  f.error = f.packet.error;
  return f;
}

std::size_t encode_arp_frame(const Mac& eth_dst, const Mac& eth_src, const Arp& arp,
                             std::span<std::byte> out) {
  if (out.size() < kArpFrameSize) return 0;
  std::byte* f = out.data();
  std::memcpy(f, eth_dst.data(), 6);
  std::memcpy(f + 6, eth_src.data(), 6);
  store_be16(f + 12, kEtherTypeArp);
  std::byte* a = f + kEthHeaderSize;
  store_be16(a, 1);           // hardware: Ethernet
  store_be16(a + 2, 0x0800);  // protocol: IPv4
  a[4] = std::byte{6};        // hardware address length
  a[5] = std::byte{4};        // protocol address length
  store_be16(a + 6, static_cast<std::uint16_t>(arp.op));
  std::memcpy(a + 8, arp.sender_mac.data(), 6);
  store_be32(a + 14, arp.sender_ip);
  std::memcpy(a + 18, arp.target_mac.data(), 6);
  store_be32(a + 24, arp.target_ip);
  return kArpFrameSize;
}

std::optional<Arp> decode_arp_frame(std::span<const std::byte> frame) {
  if (frame.size() < kArpFrameSize || load_be16(frame.data() + 12) != kEtherTypeArp)
    return std::nullopt;
  const std::byte* a = frame.data() + kEthHeaderSize;
  if (load_be16(a) != 1 || load_be16(a + 2) != 0x0800 || a[4] != std::byte{6} ||
      a[5] != std::byte{4})
    return std::nullopt;
  const std::uint16_t op = load_be16(a + 6);
  if (op != static_cast<std::uint16_t>(ArpOp::kRequest) &&
      op != static_cast<std::uint16_t>(ArpOp::kReply))
    return std::nullopt;
  Arp arp;
  arp.op = static_cast<ArpOp>(op);
  std::memcpy(arp.sender_mac.data(), a + 8, 6);
  arp.sender_ip = load_be32(a + 14);
  std::memcpy(arp.target_mac.data(), a + 18, 6);
  arp.target_ip = load_be32(a + 24);
  return arp;
}

}  // namespace netagg::wire

#include "netagg/wire.hpp"

namespace netagg::wire {

std::string_view to_string(Error e) {
  switch (e) {
    case Error::kOk: return "ok";
    case Error::kTruncated: return "truncated";
    case Error::kBadVersion: return "bad version";
    case Error::kBadType: return "bad type";
    case Error::kBadDtype: return "bad data type";
    case Error::kBadFlags: return "reserved flag bits set";
    case Error::kReservedNonZero: return "reserved word not zero";
    case Error::kCountTooLarge: return "element count too large";
    case Error::kLengthMismatch: return "length does not match element count";
    case Error::kNotIpv4: return "not IPv4";
    case Error::kBadIpHeader: return "bad IPv4 header";
    case Error::kNotUdp: return "not UDP";
    case Error::kWrongPort: return "wrong UDP port";
    case Error::kIpLengthMismatch: return "IPv4 length mismatch";
    case Error::kUdpLengthMismatch: return "UDP length mismatch";
  }
  return "unknown error";
}

std::string_view error_id(Error e) {
  switch (e) {
    case Error::kOk: return "ok";
    case Error::kTruncated: return "truncated";
    case Error::kBadVersion: return "bad_version";
    case Error::kBadType: return "bad_type";
    case Error::kBadDtype: return "bad_dtype";
    case Error::kBadFlags: return "bad_flags";
    case Error::kReservedNonZero: return "reserved_nonzero";
    case Error::kCountTooLarge: return "count_too_large";
    case Error::kLengthMismatch: return "length_mismatch";
    case Error::kNotIpv4: return "not_ipv4";
    case Error::kBadIpHeader: return "bad_ip_header";
    case Error::kNotUdp: return "not_udp";
    case Error::kWrongPort: return "wrong_port";
    case Error::kIpLengthMismatch: return "ip_length_mismatch";
    case Error::kUdpLengthMismatch: return "udp_length_mismatch";
  }
  return "unknown";
}

std::string_view to_string(MsgType t) {
  switch (t) {
    case MsgType::kContribution: return "contribution";
    case MsgType::kResult: return "result";
  }
  return "unknown";
}

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::kInt32: return "int32";
    case DataType::kFp32: return "fp32";
    case DataType::kBf16: return "bf16";
  }
  return "unknown";
}

bool encode_header(const Header& h, std::span<std::byte> out) {
  if (out.size() < kHeaderSize || h.count > kMaxCount || h.set > 1) return false;
  std::byte* p = out.data();
  p[offset::kVersion] = std::byte(h.version);
  p[offset::kType] = std::byte(h.type);
  p[offset::kDtype] = std::byte(h.dtype);
  p[offset::kFlags] = std::byte(h.set & kFlagSet);
  store_be16(p + offset::kJobId, h.job_id);
  store_be16(p + offset::kRank, h.rank);
  store_be16(p + offset::kSlot, h.slot);
  store_be16(p + offset::kCount, h.count);
  store_be16(p + offset::kExponent, static_cast<std::uint16_t>(h.exponent));
  store_be32(p + offset::kSeq, h.seq);
  store_be32(p + offset::kReserved, 0);
  return true;
}

Decoded decode(std::span<const std::byte> packet) {
  Decoded d;
  if (packet.size() < kHeaderSize) {
    d.error = Error::kTruncated;
    return d;
  }
  const std::byte* p = packet.data();
  Header& h = d.header;
  h.version = std::uint8_t(p[offset::kVersion]);
  if (h.version != kVersion) {
    d.error = Error::kBadVersion;
    return d;
  }
  const auto type = std::uint8_t(p[offset::kType]);
  if (type != std::uint8_t(MsgType::kContribution) && type != std::uint8_t(MsgType::kResult)) {
    d.error = Error::kBadType;
    return d;
  }
  h.type = MsgType(type);
  const auto dtype = std::uint8_t(p[offset::kDtype]);
  if (dtype > std::uint8_t(DataType::kBf16)) {
    d.error = Error::kBadDtype;
    return d;
  }
  h.dtype = DataType(dtype);
  const auto flags = std::uint8_t(p[offset::kFlags]);
  if (flags & kFlagsReservedMask) {
    d.error = Error::kBadFlags;
    return d;
  }
  h.set = flags & kFlagSet;
  h.job_id = load_be16(p + offset::kJobId);
  h.rank = load_be16(p + offset::kRank);
  h.slot = load_be16(p + offset::kSlot);
  h.count = load_be16(p + offset::kCount);
  h.exponent = static_cast<std::int16_t>(load_be16(p + offset::kExponent));
  h.seq = load_be32(p + offset::kSeq);
  if (load_be32(p + offset::kReserved) != 0) {
    d.error = Error::kReservedNonZero;
    return d;
  }
  if (h.count > kMaxCount) {
    d.error = Error::kCountTooLarge;
    return d;
  }
  if (packet.size() != h.packet_size()) {
    d.error = Error::kLengthMismatch;
    return d;
  }
  d.payload = packet.subspan(kHeaderSize, h.payload_size());
  return d;
}

std::uint16_t ipv4_checksum(std::span<const std::byte> header) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < header.size(); i += 2) sum += load_be16(header.data() + i);
  if (header.size() % 2) sum += std::uint32_t(header.back()) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

namespace {
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint8_t kIpProtoUdp = 17;
}  // namespace

std::size_t encode_frame(const FrameAddress& a, std::span<const std::byte> packet,
                         std::span<std::byte> out) {
  const std::size_t ip_len = kIpv4HeaderSize + kUdpHeaderSize + packet.size();
  const std::size_t len = kEthHeaderSize + ip_len;
  if (out.size() < len || ip_len > 0xFFFF) return 0;
  std::byte* p = out.data();
  for (int i = 0; i < 6; ++i) p[i] = std::byte(a.dst_mac[i]);
  for (int i = 0; i < 6; ++i) p[6 + i] = std::byte(a.src_mac[i]);
  store_be16(p + 12, kEtherTypeIpv4);
  std::byte* ip = p + kEthHeaderSize;
  ip[0] = std::byte(0x45);
  ip[1] = std::byte(a.ecn & 0x3);
  store_be16(ip + 2, static_cast<std::uint16_t>(ip_len));
  store_be16(ip + 4, 0);       // identification
  store_be16(ip + 6, 0x4000);  // DF, no fragment offset
  ip[8] = std::byte(64);
  ip[9] = std::byte(kIpProtoUdp);
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
  if (load_be16(p + 12) != kEtherTypeIpv4) {
    f.error = Error::kNotIpv4;
    return f;
  }
  const std::byte* ip = p + kEthHeaderSize;
  const auto fragment = load_be16(ip + 6);
  if (std::uint8_t(ip[0]) != 0x45 || (fragment & 0x3FFF) != 0 ||
      ipv4_checksum({ip, kIpv4HeaderSize}) != 0) {
    f.error = Error::kBadIpHeader;
    return f;
  }
  if (std::uint8_t(ip[9]) != kIpProtoUdp) {
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

}  // namespace netagg::wire

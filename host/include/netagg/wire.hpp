// SPDX-License-Identifier: Apache-2.0
// The netagg wire format's codecs: a netagg packet (header + payload, the UDP payload) and the
// Ethernet/IPv4/UDP frame that carries it. The format itself (constants, enumerations, offsets,
// the Header struct, errors) is netagg/wire_format.hpp, generated from formats/wire.json like
// every other view of it (HLS, SystemVerilog, P4, Wireshark); docs/wire-format.md explains it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "netagg/wire_format.hpp"

namespace netagg::wire {

// Writes the header into out[0..kHeaderSize). Returns false (writing nothing) if out is too
// small or the header is not encodable (count > kMaxCount, set > 1).
bool encode_header(const Header& h, std::span<std::byte> out);

struct Decoded {
  Error error = Error::kOk;
  Header header;
  std::span<const std::byte> payload;  // exactly header.payload_size() bytes when ok
  explicit operator bool() const { return error == Error::kOk; }
};

// Decodes a netagg packet (UDP payload). Never reads past `packet`. The packet must be exactly
// header + payload: trailing or missing bytes are kLengthMismatch.
Decoded decode(std::span<const std::byte> packet);

// ---- Notices -----------------------------------------------------------------------------
// An aggregator answers a contribution it drops for a reason its sender can act on with a
// notice: the dropped packet's header with type notice, dtype int32 and the int32 payload
// [reason, waiting words...]; a `duplicate` notice's waiting words hold the ranks its round waits
// for (rank r: bit r % 32 of word r / 32). docs/wire-format.md, "Notices".

// Whether an aggregator that has dropped `drops_before` packets of one rank (its low 5 bits:
// kNoticeRanks counters) for a reason sends a notice for the next one: the first and then one
// in every kNoticeInterval. Counting by rank keeps one sender's drops from using up another's.
// Duplicates are answered every time: each is a retransmission, paced by its sender's timer.
inline constexpr std::size_t kNoticeRanks = 32;
constexpr bool notice_due(std::uint64_t drops_before) {
  return drops_before % kNoticeInterval == 0;
}

// Writes the notice answering the contribution `dropped` into out. `waiting`: the ranks the round
// waits for, 32 a word (empty for reasons other than kDuplicate). Returns the packet size, or 0
// if out is too small or waiting has more than kMaxCount - 1 words.
std::size_t encode_notice(const Header& dropped, NoticeReason reason,
                          std::span<const std::uint32_t> waiting, std::span<std::byte> out);

struct Notice {
  NoticeReason reason{};
  std::span<const std::byte> waiting;  // big-endian words
  bool waits_for(std::size_t rank) const;
};

// Reads the payload of a decoded notice: nullopt unless the packet is a notice of dtype int32
// with at least one word and a known reason.
std::optional<Notice> read_notice(const Decoded& d);

// ---- Ethernet / IPv4 / UDP framing --------------------------------------------------------
using Mac = std::array<std::uint8_t, 6>;

struct FrameAddress {
  Mac src_mac{}, dst_mac{};
  std::uint32_t src_ip = 0, dst_ip = 0;  // host order
  std::uint16_t src_port = 0, dst_port = kUdpPort;
  std::uint8_t ecn = 0;  // low two bits of the IPv4 TOS byte
  friend bool operator==(const FrameAddress&, const FrameAddress&) = default;
};

// Wraps a netagg packet in Ethernet/IPv4/UDP. IPv4 header checksum filled in, UDP checksum 0,
// DF set, TTL 64. Returns the frame length, or 0 if out is too small.
std::size_t encode_frame(const FrameAddress& a, std::span<const std::byte> packet,
                         std::span<std::byte> out);

struct DecodedFrame {
  Error error = Error::kOk;
  FrameAddress address;
  Decoded packet;  // valid when error == kOk
  explicit operator bool() const { return error == Error::kOk; }
};

// Decodes a whole frame. Ethernet padding after the IP datagram is allowed (short frames are
// padded to 60 bytes). `udp_port` is the destination port expected (0 accepts any).
DecodedFrame decode_frame(std::span<const std::byte> frame, std::uint16_t udp_port = kUdpPort);

std::uint16_t ipv4_checksum(std::span<const std::byte> header);

// ---- ARP for IPv4 over Ethernet (a DPDK port resolves and answers for its address itself) ----
inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::size_t kArpFrameSize = 42;  // Ethernet header + ARP, before padding
enum class ArpOp : std::uint16_t { kRequest = 1, kReply = 2 };

struct Arp {
  ArpOp op = ArpOp::kRequest;
  Mac sender_mac{}, target_mac{};              // target_mac: zero in a request
  std::uint32_t sender_ip = 0, target_ip = 0;  // host order
};

// An ARP frame from `eth_src` to `eth_dst` (broadcast for a request). Returns kArpFrameSize, or
// 0 if out is too small.
std::size_t encode_arp_frame(const Mac& eth_dst, const Mac& eth_src, const Arp& arp,
                             std::span<std::byte> out);

// The ARP packet of an Ethernet frame of type ARP for IPv4 over Ethernet with a known
// operation; nullopt for anything else.
std::optional<Arp> decode_arp_frame(std::span<const std::byte> frame);

}  // namespace netagg::wire

// The netagg wire format: the one definition of the netagg header and of the
// Ethernet/IPv4/UDP frame that carries it. The P4 headers, the SystemVerilog package and the
// HLS structs mirror this file field for field; tests check each mirror against it.
// docs/wire-format.md explains every field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace netagg::wire {

// ---- netagg header -------------------------------------------------------------------------
//
//  offset  size  field      meaning
//  0       1     version    kVersion
//  1       1     type       MsgType
//  2       1     dtype      DataType of the payload elements
//  3       1     flags      bit 0: set (which of the slot's two copies); bits 1..7 zero
//  4       2     job_id     job the packet belongs to
//  6       2     rank       contribution: sender's rank; result: the addressed worker's rank
//  8       2     slot       absolute slot index in the aggregator's pool
//  10      2     count      number of elements in the payload (0 allowed: exponent only)
//  12      2     exponent   int16 block exponent, max-reduced by the aggregator
//  14      4     seq        packet sequence number, echoed in the result
//  18      4     reserved   zero; keeps the payload at frame offset 64 (one 512-bit beat)
//  22      ...   payload    count elements, big-endian
//
// All multi-byte fields are big-endian (network order).

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 22;
inline constexpr std::uint16_t kMaxCount = 1024;  // elements per packet, any dtype
inline constexpr std::uint16_t kUdpPort = 20033;  // well-known aggregator port ("NA")
inline constexpr std::int16_t kExponentNone = INT16_MIN;  // chunk of zeros: identity of max
inline constexpr std::int16_t kExponentNonFinite = INT16_MAX;  // chunk held NaN or Inf

enum class MsgType : std::uint8_t { kContribution = 1, kResult = 2 };
enum class DataType : std::uint8_t { kInt32 = 0, kFp32 = 1, kBf16 = 2 };

inline constexpr std::uint8_t kFlagSet = 0x01;
inline constexpr std::uint8_t kFlagsReservedMask = 0xFE;

constexpr std::size_t element_size(DataType t) { return t == DataType::kBf16 ? 2 : 4; }
inline constexpr std::size_t kMaxPayloadSize = kMaxCount * 4;
inline constexpr std::size_t kMaxPacketSize = kHeaderSize + kMaxPayloadSize;

struct Header {
  std::uint8_t version = kVersion;
  MsgType type = MsgType::kContribution;
  DataType dtype = DataType::kInt32;
  std::uint8_t set = 0;  // 0 or 1; travels as flags bit 0
  std::uint16_t job_id = 0;
  std::uint16_t rank = 0;
  std::uint16_t slot = 0;
  std::uint16_t count = 0;
  std::int16_t exponent = kExponentNone;
  std::uint32_t seq = 0;

  std::size_t payload_size() const { return count * element_size(dtype); }
  std::size_t packet_size() const { return kHeaderSize + payload_size(); }
  friend bool operator==(const Header&, const Header&) = default;
};

// Byte offsets of each field, for the mirrors' tests and for in-place patching.
namespace offset {
inline constexpr std::size_t kVersion = 0, kType = 1, kDtype = 2, kFlags = 3, kJobId = 4,
                             kRank = 6, kSlot = 8, kCount = 10, kExponent = 12, kSeq = 14,
                             kReserved = 18, kPayload = 22;
}
static_assert(offset::kPayload == kHeaderSize);

// Why a packet was rejected. Every decoder reports exactly one reason.
enum class Error : std::uint8_t {
  kOk = 0,
  kTruncated,          // shorter than the header it claims to have
  kBadVersion,         // version != kVersion
  kBadType,            // type not a MsgType
  kBadDtype,           // dtype not a DataType
  kBadFlags,           // reserved flag bits set
  kReservedNonZero,    // reserved header word not zero
  kCountTooLarge,      // count > kMaxCount
  kLengthMismatch,     // bytes after the header != count * element size
  // frame level (Ethernet / IPv4 / UDP)
  kNotIpv4,            // EtherType != 0x0800
  kBadIpHeader,        // IP version/IHL/fragment/checksum wrong
  kNotUdp,             // IP protocol != 17
  kWrongPort,          // UDP destination port is not the one expected
  kIpLengthMismatch,   // IP total length disagrees with the frame
  kUdpLengthMismatch,  // UDP length disagrees with IP
};
inline constexpr std::size_t kErrorCount = static_cast<std::size_t>(Error::kUdpLengthMismatch) + 1;
std::string_view to_string(Error e);  // human words: "bad version"
std::string_view error_id(Error e);   // identifier: "bad_version" (vectors, counters, JSON)
std::string_view to_string(MsgType t);
std::string_view to_string(DataType t);

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

// ---- Ethernet / IPv4 / UDP framing --------------------------------------------------------
inline constexpr std::size_t kEthHeaderSize = 14, kIpv4HeaderSize = 20, kUdpHeaderSize = 8;
inline constexpr std::size_t kFrameOverhead = kEthHeaderSize + kIpv4HeaderSize + kUdpHeaderSize;
inline constexpr std::size_t kFramePayloadOffset = kFrameOverhead + kHeaderSize;
static_assert(kFramePayloadOffset == 64, "payload starts on a 512-bit beat boundary");

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

// Big-endian element access for payloads.
inline void store_be32(std::byte* p, std::uint32_t v) {
  p[0] = std::byte(v >> 24); p[1] = std::byte(v >> 16); p[2] = std::byte(v >> 8); p[3] = std::byte(v);
}
inline std::uint32_t load_be32(const std::byte* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}
inline void store_be16(std::byte* p, std::uint16_t v) { p[0] = std::byte(v >> 8); p[1] = std::byte(v); }
inline std::uint16_t load_be16(const std::byte* p) {
  return std::uint16_t((std::uint16_t(p[0]) << 8) | std::uint16_t(p[1]));
}

}  // namespace netagg::wire

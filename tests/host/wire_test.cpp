// SPDX-License-Identifier: Apache-2.0
#include "netagg/wire.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "vectors.hpp"

namespace netagg::wire {
namespace {

using netagg::testing::load_vectors;
using netagg::testing::Vector;
using netagg::testing::vectors_dir;

std::vector<std::byte> encode_packet(const Header& h, std::span<const std::byte> payload) {
  std::vector<std::byte> out(kHeaderSize + payload.size());
  EXPECT_TRUE(encode_header(h, out));
  std::memcpy(out.data() + kHeaderSize, payload.data(), payload.size());
  return out;
}

MsgType type_from(const std::string& s) {
  if (s == "contribution") return MsgType::kContribution;
  if (s == "result") return MsgType::kResult;
  throw std::runtime_error("unknown type " + s);
}

DataType dtype_from(const std::string& s) {
  if (s == "int32") return DataType::kInt32;
  if (s == "fp32") return DataType::kFp32;
  if (s == "bf16") return DataType::kBf16;
  if (s == "fp32_exact") return DataType::kFp32Exact;
  if (s == "exact_lanes") return DataType::kExactLanes;
  throw std::runtime_error("unknown dtype " + s);
}

Header header_from(const Vector& v) {
  Header h;
  h.version = static_cast<std::uint8_t>(v.integer("version"));
  h.type = type_from(v.at("type"));
  h.dtype = dtype_from(v.at("dtype"));
  h.set = static_cast<std::uint8_t>(v.integer("set"));
  h.fresh = static_cast<std::uint8_t>(v.integer("fresh"));
  h.recovery = static_cast<std::uint8_t>(v.integer("recovery"));
  h.job_id = static_cast<std::uint16_t>(v.integer("job_id"));
  h.rank = static_cast<std::uint16_t>(v.integer("rank"));
  h.slot = static_cast<std::uint16_t>(v.integer("slot"));
  h.count = static_cast<std::uint16_t>(v.integer("count"));
  h.exponent = static_cast<std::int16_t>(v.integer("exponent"));
  h.seq = static_cast<std::uint32_t>(v.integer("seq"));
  h.epoch = static_cast<std::uint32_t>(v.integer("epoch"));
  return h;
}

std::uint32_t ip_from(const std::string& s) {
  unsigned a, b, c, d;
  if (std::sscanf(s.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) throw std::runtime_error(s);
  return (a << 24) | (b << 16) | (c << 8) | d;
}

Mac mac_from(const std::string& s) {
  Mac m{};
  unsigned x[6];
  if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &x[0], &x[1], &x[2], &x[3], &x[4], &x[5]) != 6)
    throw std::runtime_error(s);
  for (int i = 0; i < 6; ++i) m[i] = static_cast<std::uint8_t>(x[i]);
  return m;
}

FrameAddress address_from(const Vector& v) {
  FrameAddress a;
  a.src_mac = mac_from(v.at("frame.src_mac"));
  a.dst_mac = mac_from(v.at("frame.dst_mac"));
  a.src_ip = ip_from(v.at("frame.src_ip"));
  a.dst_ip = ip_from(v.at("frame.dst_ip"));
  a.src_port = static_cast<std::uint16_t>(v.integer("frame.src_port"));
  a.dst_port = static_cast<std::uint16_t>(v.integer("frame.dst_port"));
  a.ecn = static_cast<std::uint8_t>(v.integer("frame.ecn"));
  return a;
}

// The payload the vector's "values" line describes, encoded independently of the codec.
std::vector<std::byte> payload_from(const Vector& v, DataType dtype) {
  std::vector<std::byte> out;
  auto values = v.get("values");
  if (!values) return out;
  std::istringstream in(*values);
  std::string tok;
  while (in >> tok) {
    std::byte b[8];
    if (dtype == DataType::kExactLanes) {
      const auto lane = static_cast<std::uint64_t>(std::stoll(tok));
      store_be32(b, static_cast<std::uint32_t>(lane >> 32));
      store_be32(b + 4, static_cast<std::uint32_t>(lane));
      out.insert(out.end(), b, b + 8);
    } else if (dtype == DataType::kFp32 || dtype == DataType::kFp32Exact) {
      const float f = std::stof(tok);
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      store_be32(b, bits);
      out.insert(out.end(), b, b + 4);
    } else if (dtype == DataType::kBf16) {
      store_be16(b, static_cast<std::uint16_t>(std::stoul(tok)));
      out.insert(out.end(), b, b + 2);
    } else {
      store_be32(b, static_cast<std::uint32_t>(static_cast<std::int32_t>(std::stoll(tok))));
      out.insert(out.end(), b, b + 4);
    }
  }
  return out;
}

class GoldenVector : public ::testing::TestWithParam<Vector> {};

TEST_P(GoldenVector, DecodesToExpectedFieldsOrReason) {
  const Vector& v = GetParam();
  const std::string expect = v.at("expect");
  const bool frame = v.at("layer") == "frame";
  Error err;
  Decoded d;
  if (frame) {
    DecodedFrame f = decode_frame(v.bytes);
    err = f.error;
    d = f.packet;
    if (err == Error::kOk) {
      EXPECT_EQ(f.address, address_from(v));
    }
  } else {
    d = decode(v.bytes);
    err = d.error;
  }
  ASSERT_EQ(error_id(err), expect) << v.description;
  if (err != Error::kOk) return;
  const Header want = header_from(v);
  EXPECT_EQ(d.header, want);
  const auto payload = payload_from(v, want.dtype);
  ASSERT_EQ(d.payload.size(), payload.size());
  EXPECT_EQ(0, std::memcmp(d.payload.data(), payload.data(), payload.size()));
}

class ValidVector : public ::testing::TestWithParam<Vector> {};

TEST_P(ValidVector, EncoderReproducesItByteForByte) {
  const Vector& v = GetParam();
  const Header h = header_from(v);
  const auto packet = encode_packet(h, payload_from(v, h.dtype));
  if (v.at("layer") == "packet") {
    EXPECT_EQ(packet, v.bytes);
    return;
  }
  std::vector<std::byte> out(2048);
  const std::size_t n = encode_frame(address_from(v), packet, out);
  ASSERT_GT(n, 0u);
  out.resize(n);
  // frame_padded carries Ethernet padding the encoder does not add.
  ASSERT_LE(n, v.bytes.size());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), v.bytes.begin()));
}

std::string vector_name(const ::testing::TestParamInfo<Vector>& info) {
  return info.param.at("name");
}

std::vector<Vector> valid_vectors() {
  std::vector<Vector> out;
  for (auto& v : load_vectors(vectors_dir() / "wire"))
    if (v.at("expect") == "ok") out.push_back(v);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Wire, GoldenVector,
                         ::testing::ValuesIn(load_vectors(vectors_dir() / "wire")), vector_name);
INSTANTIATE_TEST_SUITE_P(Wire, ValidVector, ::testing::ValuesIn(valid_vectors()), vector_name);

TEST(Wire, EveryErrorReasonHasAVectorOrAUnitTest) {
  std::set<std::string> covered;
  for (const auto& v : load_vectors(vectors_dir() / "wire")) covered.insert(v.at("expect"));
  for (std::size_t i = 0; i < kErrorCount; ++i)
    EXPECT_TRUE(covered.count(std::string(error_id(Error(i)))))
        << "no golden vector rejects with " << error_id(Error(i));
}

TEST(Wire, RoundTripsRandomHeaders) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    Header h;
    h.type = (rng() & 1) ? MsgType::kContribution : MsgType::kResult;
    h.dtype = DataType(rng() % 3);
    h.set = rng() & 1;
    h.job_id = static_cast<std::uint16_t>(rng());
    h.rank = static_cast<std::uint16_t>(rng());
    h.slot = static_cast<std::uint16_t>(rng());
    h.count = static_cast<std::uint16_t>(rng() % (kMaxCount + 1));
    h.exponent = static_cast<std::int16_t>(rng());
    h.seq = static_cast<std::uint32_t>(rng());
    std::vector<std::byte> payload(h.payload_size());
    for (auto& b : payload) b = std::byte(rng());
    const auto packet = encode_packet(h, payload);
    const Decoded d = decode(packet);
    ASSERT_TRUE(d) << error_id(d.error);
    EXPECT_EQ(d.header, h);
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), d.payload.begin()));
  }
}

TEST(Wire, EveryTruncationOfAValidPacketIsRejected) {
  Header h;
  h.count = 8;
  std::vector<std::byte> payload(h.payload_size(), std::byte{0x5A});
  const auto packet = encode_packet(h, payload);
  for (std::size_t n = 0; n < packet.size(); ++n) {
    const Decoded d = decode(std::span(packet).first(n));
    EXPECT_FALSE(d) << n;
    EXPECT_EQ(d.error, n < kHeaderSize ? Error::kTruncated : Error::kLengthMismatch) << n;
  }
}

TEST(Wire, EveryTruncationOfAValidFrameIsRejected) {
  Header h;
  h.count = 4;
  const auto packet = encode_packet(h, std::vector<std::byte>(h.payload_size()));
  std::vector<std::byte> frame(256);
  frame.resize(encode_frame(FrameAddress{}, packet, frame));
  for (std::size_t n = 0; n < frame.size(); ++n)
    EXPECT_FALSE(decode_frame(std::span(frame).first(n))) << n;
  EXPECT_TRUE(decode_frame(frame));
}

TEST(Wire, DecodeNeverReadsPastTheBuffer) {
  // Random garbage of every length up to a full packet, each in its own exactly sized heap
  // buffer so that AddressSanitizer/valgrind would flag an overread.
  std::mt19937_64 rng(7);
  for (std::size_t n = 0; n < 200; ++n) {
    for (int k = 0; k < 50; ++k) {
      auto buf = std::make_unique<std::byte[]>(n + 1);
      for (std::size_t i = 0; i < n; ++i) buf[i] = std::byte(rng());
      // Make a good fraction pass the first checks.
      if (n >= kHeaderSize && (k & 1)) {
        buf[0] = std::byte(kVersion);
        buf[1] = std::byte(1);
        buf[2] = std::byte(rng() % 3);
        buf[3] = std::byte(rng() % 4);  // set and fresh
      }
      const Decoded d = decode({buf.get(), n});
      if (d) {
        EXPECT_EQ(d.payload.size() + kHeaderSize, n);
      }
      (void)decode_frame({buf.get(), n}, 0);
    }
  }
}

TEST(Wire, EncodeRefusesWhatCannotBeDecoded) {
  std::vector<std::byte> out(kHeaderSize);
  Header h;
  h.count = kMaxCount + 1;
  EXPECT_FALSE(encode_header(h, out));
  h.count = 1;
  h.set = 2;
  EXPECT_FALSE(encode_header(h, out));
  h.set = 1;
  EXPECT_FALSE(encode_header(h, std::span(out).first(kHeaderSize - 1)));
  EXPECT_TRUE(encode_header(h, out));
  std::vector<std::byte> small(kFrameOverhead + kHeaderSize - 1);
  EXPECT_EQ(encode_frame(FrameAddress{}, out, small), 0u);
}

TEST(Wire, ArpFramesRoundTripAndOthersAreNotArp) {
  const Mac broadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ours{2, 0, 0, 0, 0, 1};
  Arp request;
  request.op = ArpOp::kRequest;
  request.sender_mac = ours;
  request.sender_ip = 0x0A000001;
  request.target_ip = 0x0A000007;
  std::vector<std::byte> f(kArpFrameSize);
  ASSERT_EQ(encode_arp_frame(broadcast, ours, request, f), kArpFrameSize);
  EXPECT_EQ(load_be16(f.data() + 12), kEtherTypeArp);
  EXPECT_EQ(load_be16(f.data() + 20), 1);  // the operation's place in a request
  EXPECT_EQ(load_be32(f.data() + 38), 0x0A000007u);
  const auto back = decode_arp_frame(f);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, ArpOp::kRequest);
  EXPECT_EQ(back->sender_mac, ours);
  EXPECT_EQ(back->sender_ip, 0x0A000001u);
  EXPECT_EQ(back->target_ip, 0x0A000007u);
  EXPECT_EQ(encode_arp_frame(broadcast, ours, request, std::span(f).first(41)), 0u);
  EXPECT_FALSE(decode_arp_frame(std::span(f).first(41)));  // cut short
  auto other_op = f;
  other_op[21] = std::byte{3};  // RARP request: not ours to read
  EXPECT_FALSE(decode_arp_frame(other_op));
  auto ipv4 = f;
  ipv4[13] = std::byte{0x00};  // EtherType 0x0800
  EXPECT_FALSE(decode_arp_frame(ipv4));
}

TEST(Wire, FramePayloadStartsOnA512BitBeat) {
  Header h;
  h.count = 1;
  std::vector<std::byte> payload{std::byte{0xAA}, std::byte{0xBB}, std::byte{0xCC},
                                 std::byte{0xDD}};
  const auto packet = encode_packet(h, payload);
  std::vector<std::byte> frame(256);
  frame.resize(encode_frame(FrameAddress{}, packet, frame));
  EXPECT_EQ(frame[64], std::byte{0xAA});
  EXPECT_EQ(frame[67], std::byte{0xDD});
}

TEST(Wire, Ipv4ChecksumOfAKnownHeader) {
  // The classic example header (RFC 1071 style) whose checksum is 0xB861.
  const std::uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(ipv4_checksum({reinterpret_cast<const std::byte*>(hdr), 20}), 0xB861);
}

// ---- the generated field tables (netagg/wire_format.hpp) against the encoder's output ------
std::uint64_t be(std::span<const std::byte> bytes, std::size_t bit_offset, std::size_t bits) {
  std::uint64_t v = 0;
  for (std::size_t b = bit_offset; b < bit_offset + bits; ++b) {
    const auto byte = std::to_integer<unsigned>(bytes[b / 8]);
    v = (v << 1) | ((byte >> (7 - b % 8)) & 1u);
  }
  return v;
}

std::uint64_t field(std::span<const std::byte> header, std::span<const fields::Field> t,
                    std::string_view name) {
  for (const auto& f : t)
    if (f.name == name) return be(header, f.bit_offset, f.bits);
  throw std::runtime_error("no field " + std::string(name));
}

// The frame tables describe what encode_frame writes.
TEST(WireFields, FrameTablesMatchTheEncoder) {
  FrameAddress a;
  a.src_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  a.dst_mac = {0x02, 0x66, 0x77, 0x88, 0x99, 0xaa};
  a.src_ip = 0x0a000001;
  a.dst_ip = 0x0a0000fe;
  a.src_port = 31000;
  a.dst_port = kUdpPort;
  a.ecn = 3;
  Header h;
  h.job_id = 0x1234;
  h.rank = 5;
  h.slot = 0x0102;
  h.count = 2;
  h.exponent = -3;
  h.seq = 0xdeadbeef;
  h.epoch = 0x5eed0001;
  h.set = 1;
  h.fresh = 1;
  std::vector<std::byte> packet(h.packet_size());
  ASSERT_TRUE(encode_header(h, packet));
  std::vector<std::byte> frame(kFrameOverhead + packet.size() + 64);
  const std::size_t n = encode_frame(a, packet, frame);
  ASSERT_EQ(n, kFrameOverhead + packet.size());
  const std::span<const std::byte> all(frame.data(), n);
  const auto eth = all.subspan(0, kEthHeaderSize);
  const auto ip = all.subspan(kEthHeaderSize, kIpv4HeaderSize);
  const auto udp = all.subspan(kEthHeaderSize + kIpv4HeaderSize, kUdpHeaderSize);
  const auto hdr = all.subspan(kFrameOverhead, kHeaderSize);
  namespace f = fields;
  EXPECT_EQ(field(eth, f::kEthernet, "dst_addr"), 0x0266778899aaull);
  EXPECT_EQ(field(eth, f::kEthernet, "src_addr"), 0x021122334455ull);
  EXPECT_EQ(field(eth, f::kEthernet, "ether_type"), 0x0800u);
  EXPECT_EQ(field(ip, f::kIpv4, "version"), 4u);
  EXPECT_EQ(field(ip, f::kIpv4, "ihl"), 5u);
  EXPECT_EQ(field(ip, f::kIpv4, "ecn"), 3u);
  EXPECT_EQ(field(ip, f::kIpv4, "dscp"), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "total_len"), kIpv4HeaderSize + kUdpHeaderSize + packet.size());
  EXPECT_EQ(field(ip, f::kIpv4, "flags"), 2u);  // DF
  EXPECT_EQ(field(ip, f::kIpv4, "frag_offset"), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "ttl"), 64u);
  EXPECT_EQ(field(ip, f::kIpv4, "protocol"), 17u);
  EXPECT_EQ(ipv4_checksum(ip), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "src_addr"), a.src_ip);
  EXPECT_EQ(field(ip, f::kIpv4, "dst_addr"), a.dst_ip);
  EXPECT_EQ(field(udp, f::kUdp, "src_port"), a.src_port);
  EXPECT_EQ(field(udp, f::kUdp, "dst_port"), a.dst_port);
  EXPECT_EQ(field(udp, f::kUdp, "length"), kUdpHeaderSize + packet.size());
  EXPECT_EQ(field(udp, f::kUdp, "checksum"), 0u);
  EXPECT_EQ(field(hdr, f::kNetagg, "version"), kVersion);
  EXPECT_EQ(field(hdr, f::kNetagg, "type"), 1u);
  EXPECT_EQ(field(hdr, f::kNetagg, "flags"), 3u);
  EXPECT_EQ(field(hdr, f::kNetagg, "job_id"), 0x1234u);
  EXPECT_EQ(field(hdr, f::kNetagg, "rank"), 5u);
  EXPECT_EQ(field(hdr, f::kNetagg, "slot"), 0x0102u);
  EXPECT_EQ(field(hdr, f::kNetagg, "count"), 2u);
  EXPECT_EQ(field(hdr, f::kNetagg, "exponent"), 0xfffdu);
  EXPECT_EQ(field(hdr, f::kNetagg, "seq"), 0xdeadbeefu);
  EXPECT_EQ(field(hdr, f::kNetagg, "epoch"), 0x5eed0001u);
}

}  // namespace
}  // namespace netagg::wire

// hw/rtl/netagg_pkg.sv against its one definition, host/include/netagg/wire.hpp: every constant
// by value, the enums by the decoder's behaviour, the frame field positions on the golden frame
// vectors and on frames the C++ encoder writes, and the design defaults against the table in
// docs/fpga-aggregator.md. (tests/hw/pkg_decode_test.cpp runs the package's functions in
// Verilator on the same vectors.)
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "netagg/wire.hpp"
#include "sv_constants.hpp"
#include "vectors.hpp"

namespace {

namespace wire = netagg::wire;
using netagg::testing::SvPackage;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const SvPackage& package() {
  static const SvPackage pkg =
      netagg::testing::load_sv_package(std::string(NETAGG_RTL_DIR) + "/netagg_pkg.sv");
  return pkg;
}

std::uint64_t sv(const std::string& name) {
  const auto& c = package().constants;
  const auto it = c.find(name);
  if (it == c.end()) throw std::runtime_error(name + " is not in netagg_pkg.sv");
  return it->second;
}

// Every constant of the package with the C++ value it mirrors. The last test checks that the
// package has nothing this table and the frame/beat/design checks below do not cover.
std::map<std::string, std::uint64_t> mirrored_constants() {
  std::map<std::string, std::uint64_t> m = {
      {"WIRE_VERSION", wire::kVersion},
      {"HEADER_SIZE", wire::kHeaderSize},
      {"MAX_COUNT", wire::kMaxCount},
      {"UDP_PORT", wire::kUdpPort},
      {"EXPONENT_NONE", static_cast<std::uint16_t>(wire::kExponentNone)},
      {"EXPONENT_NON_FINITE", static_cast<std::uint16_t>(wire::kExponentNonFinite)},
      {"FLAG_SET", wire::kFlagSet},
      {"FLAGS_RESERVED_MASK", wire::kFlagsReservedMask},
      {"MAX_ELEMENT_SIZE", wire::element_size(wire::DataType::kFp32)},
      {"MAX_PAYLOAD_SIZE", wire::kMaxPayloadSize},
      {"MAX_PACKET_SIZE", wire::kMaxPacketSize},
      {"OFF_VERSION", wire::offset::kVersion},
      {"OFF_TYPE", wire::offset::kType},
      {"OFF_DTYPE", wire::offset::kDtype},
      {"OFF_FLAGS", wire::offset::kFlags},
      {"OFF_JOB_ID", wire::offset::kJobId},
      {"OFF_RANK", wire::offset::kRank},
      {"OFF_SLOT", wire::offset::kSlot},
      {"OFF_COUNT", wire::offset::kCount},
      {"OFF_EXPONENT", wire::offset::kExponent},
      {"OFF_SEQ", wire::offset::kSeq},
      {"OFF_RESERVED", wire::offset::kReserved},
      {"OFF_PAYLOAD", wire::offset::kPayload},
      {"ERROR_COUNT", wire::kErrorCount},
      {"ETH_HEADER_SIZE", wire::kEthHeaderSize},
      {"IPV4_HEADER_SIZE", wire::kIpv4HeaderSize},
      {"UDP_HEADER_SIZE", wire::kUdpHeaderSize},
      {"FRAME_OVERHEAD", wire::kFrameOverhead},
      {"FRAME_PAYLOAD_OFFSET", wire::kFramePayloadOffset},
      {"FRM_HEADER", wire::kFrameOverhead},
  };
  for (int t = 0; t < 256; ++t) {
    const auto name = wire::to_string(static_cast<wire::MsgType>(t));
    if (name != "unknown") m["MSG_" + upper(name)] = static_cast<std::uint64_t>(t);
  }
  for (int t = 0; t < 256; ++t) {
    const auto name = wire::to_string(static_cast<wire::DataType>(t));
    if (name != "unknown") m["DTYPE_" + upper(name)] = static_cast<std::uint64_t>(t);
  }
  for (std::size_t e = 0; e < wire::kErrorCount; ++e) {
    m["ERR_" + upper(wire::error_id(static_cast<wire::Error>(e)))] = e;
  }
  return m;
}

TEST(PkgMirror, EveryWireConstantMatchesTheCppDefinition) {
  EXPECT_EQ(package().name, "netagg_pkg");
  for (const auto& [name, value] : mirrored_constants()) {
    const auto& c = package().constants;
    ASSERT_TRUE(c.contains(name)) << name << " is missing from netagg_pkg.sv";
    EXPECT_EQ(c.at(name), value) << name;
  }
}

TEST(PkgMirror, EnumsHoldExactlyTheValuesTheDecoderAccepts) {
  const auto& enums = package().enums;
  ASSERT_TRUE(enums.contains("msg_type_e") && enums.contains("dtype_e") &&
              enums.contains("wire_error_e"));
  std::set<std::uint64_t> types, dtypes;
  for (const auto& [name, value] : enums.at("msg_type_e")) types.insert(value);
  for (const auto& [name, value] : enums.at("dtype_e")) dtypes.insert(value);
  EXPECT_EQ(enums.at("wire_error_e").size(), wire::kErrorCount);

  // A header that decodes; then one field at a time takes every byte value.
  wire::Header h;
  h.type = wire::MsgType::kContribution;
  h.dtype = wire::DataType::kInt32;
  h.count = 0;
  std::vector<std::byte> packet(wire::kHeaderSize);
  ASSERT_TRUE(wire::encode_header(h, packet));
  ASSERT_TRUE(wire::decode(packet));
  for (int v = 0; v < 256; ++v) {
    auto p = packet;
    p[sv("OFF_TYPE")] = std::byte(v);
    EXPECT_EQ(wire::decode(p).error != wire::Error::kBadType, types.contains(v)) << "type " << v;
    p = packet;
    p[sv("OFF_DTYPE")] = std::byte(v);
    EXPECT_EQ(wire::decode(p).error != wire::Error::kBadDtype, dtypes.contains(v)) << "dtype " << v;
    p = packet;
    p[sv("OFF_FLAGS")] = std::byte(v);
    EXPECT_EQ(wire::decode(p).error == wire::Error::kBadFlags, (v & sv("FLAGS_RESERVED_MASK")) != 0)
        << "flags " << v;
    EXPECT_EQ((v & sv("FLAG_SET")) | (v & sv("FLAGS_RESERVED_MASK")), static_cast<unsigned>(v));
    p = packet;
    p[sv("OFF_VERSION")] = std::byte(v);
    EXPECT_EQ(wire::decode(p).error == wire::Error::kBadVersion,
              static_cast<std::uint64_t>(v) != sv("WIRE_VERSION"));
  }
  // MAX_COUNT is the largest count accepted.
  auto p = packet;
  wire::store_be16(&p[sv("OFF_COUNT")], static_cast<std::uint16_t>(sv("MAX_COUNT")));
  EXPECT_NE(wire::decode(p).error, wire::Error::kCountTooLarge);
  wire::store_be16(&p[sv("OFF_COUNT")], static_cast<std::uint16_t>(sv("MAX_COUNT") + 1));
  EXPECT_EQ(wire::decode(p).error, wire::Error::kCountTooLarge);
}

std::uint64_t be(const std::vector<std::byte>& bytes, std::uint64_t offset, int size) {
  std::uint64_t v = 0;
  for (int i = 0; i < size; ++i)
    v = (v << 8) | std::to_integer<std::uint64_t>(bytes.at(offset + i));
  return v;
}

std::uint64_t mac_value(const wire::Mac& mac) {
  std::uint64_t v = 0;
  for (auto b : mac) v = (v << 8) | b;
  return v;
}

// Reads every field of a valid frame at the package's positions and compares with the C++
// decoder's view of the same frame.
void expect_fields_at_package_positions(const std::vector<std::byte>& frame,
                                        const std::string& what) {
  SCOPED_TRACE(what);
  const auto d = wire::decode_frame(frame);
  ASSERT_TRUE(d) << wire::error_id(d.error);
  const auto& a = d.address;
  const auto& h = d.packet.header;
  EXPECT_EQ(be(frame, sv("FRM_ETH_DST"), 6), mac_value(a.dst_mac));
  EXPECT_EQ(be(frame, sv("FRM_ETH_SRC"), 6), mac_value(a.src_mac));
  EXPECT_EQ(be(frame, sv("FRM_ETHERTYPE"), 2), sv("ETHERTYPE_IPV4"));
  EXPECT_EQ(be(frame, sv("FRM_IP_VERSION_IHL"), 1), sv("IP_VERSION_IHL"));
  EXPECT_EQ(be(frame, sv("FRM_IP_TOS"), 1) & sv("IP_ECN_MASK"), a.ecn);
  EXPECT_EQ(be(frame, sv("FRM_IP_TOTAL_LENGTH"), 2),
            sv("IPV4_HEADER_SIZE") + sv("UDP_HEADER_SIZE") + h.packet_size());
  EXPECT_EQ(be(frame, sv("FRM_IP_FLAGS_FRAG"), 2), sv("IP_FLAGS_DF"));
  EXPECT_EQ(be(frame, sv("FRM_IP_TTL"), 1), sv("IP_TTL"));
  EXPECT_EQ(be(frame, sv("FRM_IP_PROTOCOL"), 1), sv("IP_PROTOCOL_UDP"));
  EXPECT_EQ(wire::ipv4_checksum(
                std::span(frame).subspan(sv("FRM_IP_VERSION_IHL"), sv("IPV4_HEADER_SIZE"))),
            0)
      << "the checksum field at FRM_IP_CHECKSUM makes the header sum to zero";
  EXPECT_EQ(be(frame, sv("FRM_IP_SRC"), 4), a.src_ip);
  EXPECT_EQ(be(frame, sv("FRM_IP_DST"), 4), a.dst_ip);
  EXPECT_EQ(be(frame, sv("FRM_UDP_SRC_PORT"), 2), a.src_port);
  EXPECT_EQ(be(frame, sv("FRM_UDP_DST_PORT"), 2), a.dst_port);
  EXPECT_EQ(be(frame, sv("FRM_UDP_LENGTH"), 2), sv("UDP_HEADER_SIZE") + h.packet_size());
  EXPECT_EQ(be(frame, sv("FRM_UDP_CHECKSUM"), 2), 0u);
  EXPECT_EQ(sv("FRM_IP_ID") + 2, sv("FRM_IP_FLAGS_FRAG"));
  EXPECT_EQ(sv("FRM_IP_CHECKSUM") + 2, sv("FRM_IP_SRC"));
  // The ID field is whatever the sender chose; its position is pinned by its neighbours.

  const std::uint64_t hdr = sv("FRM_HEADER");
  EXPECT_EQ(be(frame, hdr + sv("OFF_VERSION"), 1), h.version);
  EXPECT_EQ(be(frame, hdr + sv("OFF_TYPE"), 1), static_cast<std::uint64_t>(h.type));
  EXPECT_EQ(be(frame, hdr + sv("OFF_DTYPE"), 1), static_cast<std::uint64_t>(h.dtype));
  EXPECT_EQ(be(frame, hdr + sv("OFF_FLAGS"), 1) & sv("FLAG_SET"), h.set);
  EXPECT_EQ(be(frame, hdr + sv("OFF_JOB_ID"), 2), h.job_id);
  EXPECT_EQ(be(frame, hdr + sv("OFF_RANK"), 2), h.rank);
  EXPECT_EQ(be(frame, hdr + sv("OFF_SLOT"), 2), h.slot);
  EXPECT_EQ(be(frame, hdr + sv("OFF_COUNT"), 2), h.count);
  EXPECT_EQ(be(frame, hdr + sv("OFF_EXPONENT"), 2), static_cast<std::uint16_t>(h.exponent));
  EXPECT_EQ(be(frame, hdr + sv("OFF_SEQ"), 4), h.seq);
  EXPECT_EQ(be(frame, hdr + sv("OFF_RESERVED"), 4), 0u);
  // The payload starts where the package says, at the second beat.
  ASSERT_EQ(d.packet.payload.data(), frame.data() + sv("FRAME_PAYLOAD_OFFSET"));
  EXPECT_EQ(sv("FRAME_PAYLOAD_OFFSET"), sv("BEAT_BYTES"));
}

TEST(PkgMirror, FieldPositionsReadTheGoldenFrames) {
  int checked = 0;
  for (const auto& v : netagg::testing::load_vectors(netagg::testing::vectors_dir() / "wire")) {
    if (v.at("layer") != "frame" || v.at("expect") != "ok") continue;
    expect_fields_at_package_positions(v.bytes, v.file.filename().string());
    ++checked;
  }
  EXPECT_GE(checked, 3) << "the golden vectors hold fewer valid frames than expected";
}

TEST(PkgMirror, FieldPositionsReadFramesOfTheCppEncoder) {
  for (auto dtype : {wire::DataType::kInt32, wire::DataType::kFp32, wire::DataType::kBf16}) {
    wire::Header h;
    h.type = wire::MsgType::kResult;
    h.dtype = dtype;
    h.set = 1;
    h.job_id = 0xA1B2;
    h.rank = 0x0304;
    h.slot = 0x0506;
    h.count = 37;
    h.exponent = -1234;
    h.seq = 0xDEADBEEF;
    std::vector<std::byte> packet(h.packet_size());
    ASSERT_TRUE(wire::encode_header(h, packet));
    for (std::size_t i = wire::kHeaderSize; i < packet.size(); ++i) packet[i] = std::byte(i * 7);
    wire::FrameAddress a;
    a.src_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    a.dst_mac = {0x02, 0x66, 0x77, 0x88, 0x99, 0xAA};
    a.src_ip = 0x0A000001;
    a.dst_ip = 0xC0A80102;
    a.src_port = 40001;
    a.dst_port = wire::kUdpPort;
    a.ecn = 3;
    std::vector<std::byte> frame(wire::kFrameOverhead + packet.size() + 64);
    frame.resize(wire::encode_frame(a, packet, frame));
    ASSERT_FALSE(frame.empty());
    expect_fields_at_package_positions(frame, std::string(wire::to_string(dtype)));
  }
}

TEST(PkgMirror, BeatGeometry) {
  EXPECT_EQ(sv("BEAT_BITS"), 512u);
  EXPECT_EQ(sv("BEAT_BYTES") * 8, sv("BEAT_BITS"));
  EXPECT_EQ(sv("KEEP_BITS"), sv("BEAT_BYTES"));
  EXPECT_EQ(sv("LANES") * wire::element_size(wire::DataType::kFp32), sv("BEAT_BYTES"));
  EXPECT_EQ(sv("BF16_LANES") * wire::element_size(wire::DataType::kBf16), sv("BEAT_BYTES"));
  EXPECT_LE(sv("FRAME_OVERHEAD") + sv("HEADER_SIZE"), sv("BEAT_BYTES")) << "all headers fit beat 0";
  EXPECT_EQ(sv("MIN_ETH_FRAME"), 60u);
}

TEST(PkgMirror, FloatConstants) {
  EXPECT_EQ(sv("FP32_QUIET_BIT"), 1u << 22);
  EXPECT_EQ(sv("BF16_QUIET_BIT"), 1u << 6);
  EXPECT_EQ(sv("FP32_QUIET_BIT") >> 16, sv("BF16_QUIET_BIT")) << "bf16 is the upper half";
  EXPECT_EQ(sv("FP32_DEFAULT_NAN"), 0xFFC00000u);
}

// The "Parameters" table of docs/fpga-aggregator.md is where the defaults are specified.
TEST(PkgMirror, DesignDefaultsFollowTheSpecification) {
  std::ifstream in(NETAGG_SPEC_MD);
  ASSERT_TRUE(in) << NETAGG_SPEC_MD;
  std::map<std::string, std::uint64_t> spec;
  static const std::regex row(R"(^\|\s*`([A-Z_]+)`\s*\|\s*(\d+)\s*\|)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) spec[m[1]] = std::stoull(m[2]);
  }
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"NUM_PORTS", "NUM_PORTS_DEFAULT"}, {"LANES", "LANES"},
      {"SLOTS", "SLOTS_DEFAULT"},         {"MAX_BEATS", "MAX_BEATS_DEFAULT"},
      {"MAX_JOBS", "MAX_JOBS_DEFAULT"},   {"MAX_WORKERS", "MAX_WORKERS_DEFAULT"},
  };
  for (const auto& [spec_name, sv_name] : pairs) {
    ASSERT_TRUE(spec.contains(spec_name)) << spec_name << " not in the spec's table";
    EXPECT_EQ(sv(sv_name), spec.at(spec_name)) << sv_name;
  }
}

// Everything in the package is checked by one of the tests above.
TEST(PkgMirror, NoUncheckedConstants) {
  std::set<std::string> checked;
  for (const auto& [name, value] : mirrored_constants()) checked.insert(name);
  for (const char* name :
       {"FRM_ETH_DST", "FRM_ETH_SRC", "FRM_ETHERTYPE", "FRM_IP_VERSION_IHL", "FRM_IP_TOS",
        "FRM_IP_TOTAL_LENGTH", "FRM_IP_ID", "FRM_IP_FLAGS_FRAG", "FRM_IP_TTL", "FRM_IP_PROTOCOL",
        "FRM_IP_CHECKSUM", "FRM_IP_SRC", "FRM_IP_DST", "FRM_UDP_SRC_PORT", "FRM_UDP_DST_PORT",
        "FRM_UDP_LENGTH", "FRM_UDP_CHECKSUM", "ETHERTYPE_IPV4", "IP_VERSION_IHL", "IP_PROTOCOL_UDP",
        "IP_TTL", "IP_FLAGS_DF", "IP_ECN_MASK", "MIN_ETH_FRAME", "BEAT_BYTES", "BEAT_BITS", "LANES",
        "BF16_LANES", "KEEP_BITS", "FP32_QUIET_BIT", "FP32_DEFAULT_NAN", "BF16_QUIET_BIT",
        "NUM_PORTS_DEFAULT", "SLOTS_DEFAULT", "MAX_BEATS_DEFAULT", "MAX_JOBS_DEFAULT",
        "MAX_WORKERS_DEFAULT",
        // fp32_add_test measures the default adder's latency against it.
        "FP32_ADD_STAGES_DEFAULT"}) {
    checked.insert(name);
  }
  for (const auto& [name, value] : package().constants) {
    EXPECT_TRUE(checked.contains(name)) << name << " = " << value << " is checked by no test";
  }
}

}  // namespace

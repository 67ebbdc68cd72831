// p4/common/headers.p4 and constants.p4 against their C++ originals: every field of the
// ethernet, ipv4, udp and netagg headers by name, order and width (host/include/netagg/
// wire_fields.hpp, whose netagg table comes from wire::offset and whose frame tables are checked
// here against wire::encode_frame), and every constant (wire.hpp, switch_model.hpp). The checker
// is also run on mutated copies of the text, which it must reject.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "netagg/wire.hpp"
#include "netagg/wire_fields.hpp"
#include "switch_model.hpp"

namespace {

namespace wire = netagg::wire;
namespace sim = netagg::sim;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string headers_text() { return read_file(std::string(NETAGG_P4_DIR) + "/common/headers.p4"); }
std::string constants_text() {
  return read_file(std::string(NETAGG_P4_DIR) + "/common/constants.p4");
}

std::string strip_comments(const std::string& text) {
  static const std::regex block(R"(/\*[\s\S]*?\*/)"), line(R"(//[^\n]*)");
  return std::regex_replace(std::regex_replace(text, block, " "), line, " ");
}

struct P4Field {
  std::string name;
  std::size_t bits;
};

// Every `header NAME { TYPE field; ... }` of the text, TYPE being bit<N> or a typedef of one.
// Throws on a field whose type it cannot resolve.
std::map<std::string, std::vector<P4Field>> parse_headers(const std::string& raw) {
  const std::string text = strip_comments(raw);
  std::map<std::string, std::size_t> typedefs;
  static const std::regex typedef_re(R"(typedef\s+bit\s*<\s*(\d+)\s*>\s+(\w+)\s*;)");
  for (std::sregex_iterator it(text.begin(), text.end(), typedef_re), end; it != end; ++it)
    typedefs[(*it)[2]] = std::stoul((*it)[1]);
  std::map<std::string, std::vector<P4Field>> headers;
  static const std::regex header_re(R"(header\s+(\w+)\s*\{([^}]*)\})");
  static const std::regex field_re(R"(([\w<> ]+?)\s+(\w+)\s*;)");
  static const std::regex bit_re(R"(bit\s*<\s*(\d+)\s*>)");
  for (std::sregex_iterator it(text.begin(), text.end(), header_re), end; it != end; ++it) {
    const std::string name = (*it)[1], body = (*it)[2];
    auto& fields = headers[name];
    for (std::sregex_iterator f(body.begin(), body.end(), field_re); f != end; ++f) {
      std::string type = (*f)[1];
      type.erase(0, type.find_first_not_of(" \n\t"));
      std::smatch m;
      std::size_t bits = 0;
      if (std::regex_match(type, m, bit_re)) {
        bits = std::stoul(m[1]);
      } else if (typedefs.contains(type)) {
        bits = typedefs.at(type);
      } else {
        throw std::runtime_error("header " + name + ": unknown type '" + type + "'");
      }
      fields.push_back({(*f)[2], bits});
    }
  }
  return headers;
}

// C++ field names that are P4 keywords, and their P4 spelling.
std::string p4_name(std::string_view cpp_name) {
  return cpp_name == "type" ? "msg_type" : std::string(cpp_name);
}

// Differences between a P4 header and a C++ field table; empty when they agree.
std::vector<std::string> compare(const std::map<std::string, std::vector<P4Field>>& headers,
                                 const std::string& header,
                                 std::span<const wire::fields::Field> expected) {
  std::vector<std::string> errors;
  const auto it = headers.find(header);
  if (it == headers.end()) return {"header " + header + " is missing"};
  const auto& got = it->second;
  if (got.size() != expected.size())
    errors.push_back(header + ": " + std::to_string(got.size()) + " fields, expected " +
                     std::to_string(expected.size()));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < std::min(got.size(), expected.size()); ++i) {
    const auto& want = expected[i];
    if (got[i].name != p4_name(want.name))
      errors.push_back(header + " field " + std::to_string(i) + ": '" + got[i].name +
                       "', expected '" + p4_name(want.name) + "'");
    if (got[i].bits != want.bits)
      errors.push_back(header + "." + got[i].name + ": " + std::to_string(got[i].bits) +
                       " bits, expected " + std::to_string(want.bits));
    if (offset != want.bit_offset)
      errors.push_back(header + "." + got[i].name + " starts at bit " + std::to_string(offset) +
                       ", expected " + std::to_string(want.bit_offset));
    offset += got[i].bits;
  }
  return errors;
}

std::vector<std::string> check_wire_headers(const std::string& text) {
  const auto headers = parse_headers(text);
  std::vector<std::string> all;
  for (const auto& [name, table] :
       std::vector<std::pair<std::string, std::span<const wire::fields::Field>>>{
           {"ethernet_h", wire::fields::kEthernet},
           {"ipv4_h", wire::fields::kIpv4},
           {"udp_h", wire::fields::kUdp},
           {"netagg_h", wire::fields::kNetagg}}) {
    auto e = compare(headers, name, table);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

TEST(P4Headers, EveryWireFieldHasTheCppNameOrderAndWidth) {
  const auto errors = check_wire_headers(headers_text());
  EXPECT_TRUE(errors.empty()) << join(errors);
  const auto headers = parse_headers(headers_text());
  std::size_t netagg_bits = 0;
  for (const auto& f : headers.at("netagg_h")) netagg_bits += f.bits;
  EXPECT_EQ(netagg_bits, wire::kHeaderSize * 8);
  EXPECT_EQ((wire::kFrameOverhead + netagg_bits / 8), wire::kFramePayloadOffset);
  ASSERT_TRUE(headers.contains("netagg_lane_h"));
  EXPECT_EQ(headers.at("netagg_lane_h").at(0).bits, sim::tofino::kValueBits);
}

// The checker must see each kind of mistake: a renamed field, a changed width, two fields
// swapped, a field removed, a header missing.
TEST(P4Headers, MutatedHeaderTextIsRejected) {
  const std::string good = headers_text();
  ASSERT_TRUE(check_wire_headers(good).empty());
  struct Mutation {
    std::string what, from, to;
  };
  const std::vector<Mutation> mutations = {
      {"rename", "bit<16> job_id;", "bit<16> job;"},
      {"width", "bit<32> seq;", "bit<16> seq;"},
      {"swap", "bit<16> slot;\n    bit<16> count;", "bit<16> count;\n    bit<16> slot;"},
      {"remove", "bit<32> reserved;", ""},
      {"ipv4 width", "bit<13>     frag_offset;", "bit<12>     frag_offset;"},
      {"udp rename", "bit<16> dst_port;", "bit<16> dest_port;"},
      {"ethernet typedef", "typedef bit<48> mac_addr_t;", "typedef bit<47> mac_addr_t;"},
      {"missing header", "header udp_h {", "header udp_hdr_h {"},
  };
  for (const auto& m : mutations) {
    const auto at = good.find(m.from);
    ASSERT_NE(at, std::string::npos) << m.what << ": '" << m.from << "' not in headers.p4";
    std::string bad = good;
    bad.replace(at, m.from.size(), m.to);
    EXPECT_FALSE(check_wire_headers(bad).empty()) << m.what << " was not caught";
  }
}

std::uint64_t be(std::span<const std::byte> bytes, std::size_t bit_offset, std::size_t bits) {
  std::uint64_t v = 0;
  for (std::size_t b = bit_offset; b < bit_offset + bits; ++b) {
    const auto byte = std::to_integer<unsigned>(bytes[b / 8]);
    v = (v << 1) | ((byte >> (7 - b % 8)) & 1u);
  }
  return v;
}

std::uint64_t field(std::span<const std::byte> header, std::span<const wire::fields::Field> t,
                    std::string_view name) {
  for (const auto& f : t)
    if (f.name == name) return be(header, f.bit_offset, f.bits);
  throw std::runtime_error("no field " + std::string(name));
}

// The frame tables describe what wire::encode_frame writes.
TEST(WireFields, FrameTablesMatchTheEncoder) {
  wire::FrameAddress a;
  a.src_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  a.dst_mac = {0x02, 0x66, 0x77, 0x88, 0x99, 0xaa};
  a.src_ip = 0x0a000001;
  a.dst_ip = 0x0a0000fe;
  a.src_port = 31000;
  a.dst_port = wire::kUdpPort;
  a.ecn = 3;
  wire::Header h;
  h.job_id = 0x1234;
  h.rank = 5;
  h.slot = 0x0102;
  h.count = 2;
  h.exponent = -3;
  h.seq = 0xdeadbeef;
  h.set = 1;
  std::vector<std::byte> packet(h.packet_size());
  ASSERT_TRUE(wire::encode_header(h, packet));
  std::vector<std::byte> frame(wire::kFrameOverhead + packet.size() + 64);
  const std::size_t n = wire::encode_frame(a, packet, frame);
  ASSERT_EQ(n, wire::kFrameOverhead + packet.size());
  const std::span<const std::byte> all(frame.data(), n);
  const auto eth = all.subspan(0, wire::kEthHeaderSize);
  const auto ip = all.subspan(wire::kEthHeaderSize, wire::kIpv4HeaderSize);
  const auto udp = all.subspan(wire::kEthHeaderSize + wire::kIpv4HeaderSize, wire::kUdpHeaderSize);
  const auto hdr = all.subspan(wire::kFrameOverhead, wire::kHeaderSize);
  namespace f = wire::fields;
  EXPECT_EQ(field(eth, f::kEthernet, "dst_addr"), 0x0266778899aaull);
  EXPECT_EQ(field(eth, f::kEthernet, "src_addr"), 0x021122334455ull);
  EXPECT_EQ(field(eth, f::kEthernet, "ether_type"), 0x0800u);
  EXPECT_EQ(field(ip, f::kIpv4, "version"), 4u);
  EXPECT_EQ(field(ip, f::kIpv4, "ihl"), 5u);
  EXPECT_EQ(field(ip, f::kIpv4, "ecn"), 3u);
  EXPECT_EQ(field(ip, f::kIpv4, "dscp"), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "total_len"),
            wire::kIpv4HeaderSize + wire::kUdpHeaderSize + packet.size());
  EXPECT_EQ(field(ip, f::kIpv4, "flags"), 2u);  // DF
  EXPECT_EQ(field(ip, f::kIpv4, "frag_offset"), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "ttl"), 64u);
  EXPECT_EQ(field(ip, f::kIpv4, "protocol"), 17u);
  EXPECT_EQ(wire::ipv4_checksum(ip), 0u);
  EXPECT_EQ(field(ip, f::kIpv4, "src_addr"), a.src_ip);
  EXPECT_EQ(field(ip, f::kIpv4, "dst_addr"), a.dst_ip);
  EXPECT_EQ(field(udp, f::kUdp, "src_port"), a.src_port);
  EXPECT_EQ(field(udp, f::kUdp, "dst_port"), a.dst_port);
  EXPECT_EQ(field(udp, f::kUdp, "length"), wire::kUdpHeaderSize + packet.size());
  EXPECT_EQ(field(udp, f::kUdp, "checksum"), 0u);
  EXPECT_EQ(field(hdr, f::kNetagg, "version"), wire::kVersion);
  EXPECT_EQ(field(hdr, f::kNetagg, "type"), 1u);
  EXPECT_EQ(field(hdr, f::kNetagg, "flags"), 1u);
  EXPECT_EQ(field(hdr, f::kNetagg, "job_id"), 0x1234u);
  EXPECT_EQ(field(hdr, f::kNetagg, "rank"), 5u);
  EXPECT_EQ(field(hdr, f::kNetagg, "slot"), 0x0102u);
  EXPECT_EQ(field(hdr, f::kNetagg, "count"), 2u);
  EXPECT_EQ(field(hdr, f::kNetagg, "exponent"), 0xfffdu);
  EXPECT_EQ(field(hdr, f::kNetagg, "seq"), 0xdeadbeefu);
  EXPECT_EQ(field(hdr, f::kNetagg, "reserved"), 0u);
}

std::map<std::string, std::uint64_t> parse_defines(const std::string& raw) {
  const std::string text = strip_comments(raw);
  std::map<std::string, std::uint64_t> out;
  static const std::regex define_re(R"(#define\s+(\w+)\s+(0x[0-9A-Fa-f]+|\d+)\s*\n)");
  for (std::sregex_iterator it(text.begin(), text.end(), define_re), end; it != end; ++it)
    out[(*it)[1]] = std::stoull((*it)[2], nullptr, 0);
  return out;
}

std::map<std::string, std::uint64_t> expected_constants() {
  std::map<std::string, std::uint64_t> m = {
      {"NETAGG_UDP_PORT", wire::kUdpPort},
      {"NETAGG_WIRE_VERSION", wire::kVersion},
      {"NETAGG_HEADER_SIZE", wire::kHeaderSize},
      {"NETAGG_MAX_COUNT", wire::kMaxCount},
      {"NETAGG_MSG_CONTRIBUTION", static_cast<unsigned>(wire::MsgType::kContribution)},
      {"NETAGG_MSG_RESULT", static_cast<unsigned>(wire::MsgType::kResult)},
      {"NETAGG_DTYPE_INT32", static_cast<unsigned>(wire::DataType::kInt32)},
      {"NETAGG_DTYPE_FP32", static_cast<unsigned>(wire::DataType::kFp32)},
      {"NETAGG_DTYPE_BF16", static_cast<unsigned>(wire::DataType::kBf16)},
      {"NETAGG_FLAG_SET", wire::kFlagSet},
      {"NETAGG_FLAGS_RESERVED_MASK", wire::kFlagsReservedMask},
      {"NETAGG_VALUE_BITS", sim::tofino::kValueBits},
      {"NETAGG_BITMAP_BITS", sim::tofino::kBitmapBits},
      {"NETAGG_MAX_WORKERS", sim::kMaxWorkersPerJob},
      {"NETAGG_POOL_SLOTS", sim::tofino::kPoolSlots},
      {"NETAGG_LANES_PER_PASS", sim::tofino::kLanesPerPass},
      {"NETAGG_TOFINO_MAX_PASSES", sim::tofino::kMaxPasses},
      {"NETAGG_BMV2_MAX_PASSES", sim::bmv2::kMaxPasses},
      {"NETAGG_DROP_REASONS", sim::kDropReasonCount},
  };
  for (std::size_t r = 0; r < sim::kDropReasonCount; ++r) {
    std::string name(sim::to_string(static_cast<sim::DropReason>(r)));
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    m["NETAGG_DROP_" + name] = r;
  }
  return m;
}

std::vector<std::string> check_constants(const std::string& text) {
  const auto defines = parse_defines(text);
  std::vector<std::string> errors;
  for (const auto& [name, value] : expected_constants()) {
    if (!defines.contains(name)) {
      errors.push_back(name + " is missing");
    } else if (defines.at(name) != value) {
      errors.push_back(name + " = " + std::to_string(defines.at(name)) + ", C++ has " +
                       std::to_string(value));
    }
  }
  return errors;
}

TEST(P4Constants, EveryConstantMatchesTheCppDefinition) {
  const auto errors = check_constants(constants_text());
  EXPECT_TRUE(errors.empty()) << join(errors);
  EXPECT_EQ(expected_constants().size(), 19u + sim::kDropReasonCount);
}

TEST(P4Constants, MutatedConstantsAreRejected) {
  const std::string good = constants_text();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"NETAGG_UDP_PORT 20033", "NETAGG_UDP_PORT 20034"},
           {"NETAGG_DROP_STALE 10", "NETAGG_DROP_STALE 9"},
           {"NETAGG_LANES_PER_PASS 32", "NETAGG_LANES_PER_PASS 64"},
           {"NETAGG_BITMAP_BITS 32", "NETAGG_BITMAP_WIDTH 32"}}) {
    const auto at = good.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    std::string bad = good;
    bad.replace(at, from.size(), to);
    EXPECT_FALSE(check_constants(bad).empty()) << from << " -> " << to << " was not caught";
  }
}

}  // namespace

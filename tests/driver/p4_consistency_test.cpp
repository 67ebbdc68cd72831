// SPDX-License-Identifier: Apache-2.0
// The control plane against the P4 text: every table, action, action parameter and key that
// driver/p4 writes (p4_schema(), the single list its printers take names from) is declared in
// BOTH p4/bmv2/netagg.p4 and p4/tofino/netagg.p4, in the control the generator names, with the
// same parameter order, keys in the same order and match kind exact, and bit widths wide enough
// for the largest value the generator emits.
//
// This reads the P4 source, it does not compile it: a small reader of P4_16 declarations
// (comments stripped, braces balanced), enough for tables, actions, typedefs, headers and
// structs as the programs write them.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "netagg/p4/control.hpp"

namespace netagg::p4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kP4 = fs::path(NETAGG_SOURCE_DIR) / "p4";
const fs::path kBmv2 = kP4 / "bmv2" / "netagg.p4";
const fs::path kTofino = kP4 / "tofino" / "netagg.p4";
const fs::path kCommon = kP4 / "common";

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Comments out, preprocessor lines kept (constants.p4 may #define).
std::string strip_comments(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (s.compare(i, 2, "/*") == 0) {
      const auto end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      out += ' ';
    } else if (s[i] == '"') {  // strings (annotations) copied whole
      const auto end = s.find('"', i + 1);
      const auto stop = end == std::string::npos ? s.size() : end + 1;
      out.append(s, i, stop - i);
      i = stop;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Text between the '{' at or after `from` and its matching '}'; npos-safe.
std::optional<std::string> braced_after(const std::string& s, std::size_t from) {
  const auto open = s.find('{', from);
  if (open == std::string::npos) return std::nullopt;
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return s.substr(open + 1, i - open - 1);
  }
  return std::nullopt;
}

// Position just after the ')' matching the first '(' at or after `from`.
std::size_t after_parens(const std::string& s, std::size_t from) {
  const auto open = s.find('(', from);
  if (open == std::string::npos) return std::string::npos;
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

// Text between the first '(' at or after `from` and its matching ')'.
std::optional<std::string> parenthesized_after(const std::string& s, std::size_t from) {
  const auto open = s.find('(', from);
  const auto close = after_parens(s, from);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return s.substr(open + 1, close - open - 2);
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;  // commas inside <..> or (..) do not split
  for (char c : s) {
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == sep && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) parts.push_back(trim(cur));
  return parts;
}

std::string without_annotations(const std::string& s, std::string* name = nullptr) {
  static const std::regex annotation(R"(@(\w+)\s*(\(\s*("[^"]*")?[^)]*\))?)");
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), annotation);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    if (name && (*it)[1] == "name" && (*it)[3].matched) {
      const std::string quoted = (*it)[3];
      *name = quoted.substr(1, quoted.size() - 2);
    }
    out.append(s, last, it->position() - last);
    last = it->position() + it->length();
  }
  out.append(s, last);
  return trim(out);
}

struct Param {
  std::string type, name;
};
struct Key {
  std::string expression, match_kind, bfrt_name;
};
struct Table {
  std::vector<Key> keys;
  std::vector<std::string> actions;
};

// One P4 program with the common files it includes, read as declarations.
class P4Program {
 public:
  explicit P4Program(const fs::path& main) {
    text_ = strip_comments(read_text(main));
    all_ = text_;
    if (fs::is_directory(kCommon))
      for (const auto& entry : fs::directory_iterator(kCommon))
        if (entry.path().extension() == ".p4") {
          all_ += '\n';
          all_ += strip_comments(read_text(entry.path()));
        }
  }

  // Body of `control NAME(...) { ... }`.
  std::optional<std::string> control(const std::string& name) const {
    const std::regex re("\\bcontrol\\s+" + name + "\\s*\\(");
    std::smatch m;
    if (!std::regex_search(text_, m, re)) return std::nullopt;
    const auto after = after_parens(text_, m.position());
    if (after == std::string::npos) return std::nullopt;
    return braced_after(text_, after);
  }
  // The type of a control's parameter, e.g. hdr's struct.
  std::optional<std::string> control_param_type(const std::string& control,
                                                const std::string& param) const {
    const std::regex re("\\bcontrol\\s+" + control + "\\s*\\(");
    std::smatch m;
    if (!std::regex_search(text_, m, re)) return std::nullopt;
    for (const auto& p : split(parenthesized_after(text_, m.position()).value_or(""), ',')) {
      const std::regex decl("(?:inout\\s+|in\\s+|out\\s+)?(\\w+)\\s+" + param + "$");
      std::smatch d;
      const std::string clean = without_annotations(p);
      if (std::regex_search(clean, d, decl)) return d[1].str();
    }
    return std::nullopt;
  }

  // An action declared in `scope` (a control body), else at the top level.
  std::optional<std::vector<Param>> action(const std::string& scope,
                                           const std::string& name) const {
    for (const std::string* text : {&scope, &text_}) {
      const std::regex re("\\baction\\s+" + name + "\\s*\\(");
      std::smatch m;
      if (!std::regex_search(*text, m, re)) continue;
      std::vector<Param> params;
      for (const auto& p : split(parenthesized_after(*text, m.position()).value_or(""), ',')) {
        std::string clean = without_annotations(p);
        static const std::regex decl(R"(^(?:(?:in|out|inout)\s+)?(.+?)\s+(\w+)$)");
        std::smatch d;
        if (!std::regex_match(clean, d, decl)) {
          ADD_FAILURE() << "cannot read parameter '" << p << "' of action " << name;
          continue;
        }
        params.push_back({trim(d[1]), d[2]});
      }
      return params;
    }
    return std::nullopt;
  }

  std::optional<Table> table(const std::string& scope, const std::string& name) const {
    const std::regex re("\\btable\\s+" + name + "\\s*\\{");
    std::smatch m;
    if (!std::regex_search(scope, m, re)) return std::nullopt;
    const auto body = braced_after(scope, m.position());
    if (!body) return std::nullopt;
    Table t;
    static const std::regex key_re(R"(\bkey\s*=\s*\{)");
    std::smatch k;
    if (std::regex_search(*body, k, key_re)) {
      const auto keys = braced_after(*body, k.position());
      for (const auto& entry : split(keys.value_or(""), ';')) {
        std::string bfrt_name;
        const std::string clean = without_annotations(entry, &bfrt_name);
        const auto colon = clean.rfind(':');
        if (colon == std::string::npos) continue;
        Key key{trim(clean.substr(0, colon)), trim(clean.substr(colon + 1)), bfrt_name};
        if (key.bfrt_name.empty()) key.bfrt_name = bfrt_key_name(key.expression);
        t.keys.push_back(key);
      }
    }
    static const std::regex actions_re(R"(\bactions\s*=\s*\{)");
    std::smatch a;
    if (std::regex_search(*body, a, actions_re)) {
      const auto list = braced_after(*body, a.position());
      for (const auto& entry : split(list.value_or(""), ';')) {
        std::string clean = without_annotations(entry);
        if (auto paren = clean.find('('); paren != std::string::npos)
          clean = trim(clean.substr(0, paren));
        if (!clean.empty()) t.actions.push_back(clean);
      }
    }
    return t;
  }

  // Width of `bit<N>` or of a typedef of it (searched in the program and p4/common).
  std::optional<unsigned> width(const std::string& type) const {
    static const std::regex bit(R"(^bit\s*<\s*(\d+)\s*>$)");
    std::smatch m;
    if (std::regex_match(type, m, bit)) return std::stoul(m[1]);
    const std::regex td("\\btypedef\\s+(bit\\s*<\\s*\\d+\\s*>|\\w+)\\s+" + type + "\\s*;");
    if (std::regex_search(all_, m, td) && m[1] != type) return width(trim(m[1]));
    return std::nullopt;
  }

  // Type of member `field` of a struct or header type (program and p4/common).
  std::optional<std::string> member_type(const std::string& type, const std::string& field) const {
    const std::regex re("\\b(?:struct|header)\\s+" + type + "\\s*\\{");
    std::smatch m;
    if (!std::regex_search(all_, m, re)) return std::nullopt;
    const auto body = braced_after(all_, m.position());
    for (const auto& decl : split(body.value_or(""), ';')) {
      static const std::regex member(R"(^(.+?)\s+(\w+)$)");
      std::smatch d;
      const std::string clean = without_annotations(decl);
      if (std::regex_match(clean, d, member) && d[2] == field) return trim(d[1]);
    }
    return std::nullopt;
  }

  // Width of a key like hdr.netagg.job_id, following the control's parameter types; the
  // architectures' intrinsic metadata fields by their documented width.
  std::optional<unsigned> key_width(const std::string& control, const std::string& expr) const {
    static const std::map<std::string, unsigned> intrinsic = {{"standard_metadata.egress_rid", 16},
                                                              {"eg_intr_md.egress_rid", 16}};
    if (auto it = intrinsic.find(expr); it != intrinsic.end()) return it->second;
    const auto parts = split(expr, '.');
    if (parts.size() < 2) return std::nullopt;
    auto type = control_param_type(control, parts[0]);
    for (std::size_t i = 1; type && i < parts.size(); ++i) type = member_type(*type, parts[i]);
    return type ? width(*type) : std::nullopt;
  }

 private:
  std::string text_;  // the program itself
  std::string all_;   // plus p4/common/*.p4
};

bool fits(std::uint64_t value, unsigned bits) { return bits >= 64 || value < (1ull << bits); }

void check_program(const fs::path& file, bool tofino) {
  ASSERT_TRUE(fs::exists(file)) << file
                                << " is missing, so the control plane cannot be checked against it";
  const P4Program program(file);
  for (const P4TableUse& use : p4_schema()) {
    const std::string control(tofino ? use.tofino_control : use.bmv2_control);
    const std::string where =
        fmt::format("{}: {}.{}", file.filename().string(), control, use.table);
    const auto body = program.control(control);
    ASSERT_TRUE(body) << file << ": no control " << control;
    const auto table = program.table(*body, std::string(use.table));
    ASSERT_TRUE(table) << where << ": table not declared in control " << control;

    EXPECT_THAT(table->actions, ::testing::Contains(std::string(use.action)))
        << where << ": action " << use.action << " is not in the table's actions";
    const auto& keys = tofino ? use.tofino_keys : use.bmv2_keys;
    ASSERT_EQ(table->keys.size(), keys.size()) << where << ": number of keys";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const Key& key = table->keys[i];
      EXPECT_EQ(key.expression, keys[i].name) << where << ": key " << i;
      EXPECT_EQ(key.match_kind, "exact") << where << ": key " << key.expression;
      if (tofino) {
        EXPECT_EQ(key.bfrt_name, bfrt_key_name(keys[i].name))
            << where << ": bfrt_python names the key " << key.bfrt_name;
      }
      const auto bits = program.key_width(control, key.expression);
      if (!bits) {
        ADD_FAILURE() << where << ": cannot find the width of key " << key.expression;
      } else {
        EXPECT_TRUE(fits(keys[i].max_value, *bits))
            << where << ": key " << key.expression << " is bit<" << *bits << ">, the generator "
            << "writes up to " << keys[i].max_value;
      }
    }

    const auto params = program.action(*body, std::string(use.action));
    ASSERT_TRUE(params) << where << ": action " << use.action << " not declared";
    ASSERT_EQ(params->size(), use.params.size()) << where << ": parameters of " << use.action;
    for (std::size_t i = 0; i < use.params.size(); ++i) {
      const Param& p = (*params)[i];
      EXPECT_EQ(p.name, use.params[i].name) << where << ": parameter " << i << " of " << use.action;
      const auto bits = program.width(p.type);
      if (!bits) {
        ADD_FAILURE() << where << ": cannot read the width of " << p.type << " " << p.name;
      } else {
        EXPECT_TRUE(fits(use.params[i].max_value, *bits))
            << where << ": " << use.action << "(" << p.type << " " << p.name
            << "): the generator writes up to " << use.params[i].max_value;
      }
    }
  }
}

TEST(P4Consistency, Bmv2ProgramDeclaresWhatTheGeneratorWrites) { check_program(kBmv2, false); }

TEST(P4Consistency, TofinoProgramDeclaresWhatTheGeneratorWrites) { check_program(kTofino, true); }

// The check itself must fail on a program that differs from what the generator writes: a
// synthetic Tofino-style program written to the contract passes, and each mutation of it fails.
constexpr const char* kContractProgram = R"(
typedef bit<48> mac_addr_t;
header ethernet_h { mac_addr_t dst_addr; mac_addr_t src_addr; bit<16> ether_type; }
header ipv4_h { bit<8> ttl; bit<32> src_addr; bit<32> dst_addr; }
header udp_h { bit<16> src_port; bit<16> dst_port; }
header netagg_h { bit<16> job_id; bit<8> rank; }
struct headers_t { ethernet_h ethernet; ipv4_h ipv4; udp_h udp; netagg_h netagg; }
control Ingress(inout headers_t hdr, inout ig_metadata_t md) {
  action set_switch_identity(bit<48> mac, bit<32> ip) { }
  table switch_identity { actions = { set_switch_identity; } default_action = set_switch_identity(0, 0); }
  action set_job(bit<8> worker_count, bit<16> slot_base, bit<16> slot_count,
                 bit<16> elements_per_packet, bit<16> mcast_grp) { }
  table job_table { key = { hdr.netagg.job_id : exact; } actions = { set_job; NoAction; } }
  action set_worker(bit<8> rank) { }
  table worker_table {
    key = { hdr.netagg.job_id : exact; hdr.ipv4.src_addr : exact; hdr.udp.src_port : exact; }
    actions = { set_worker; }
  }
  action set_egress_port(bit<9> port) { }
  table forward { key = { hdr.ethernet.dst_addr : exact; } actions = { set_egress_port; } }
  action set_parent(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<9> port, bit<16> job_id,
                    bit<16> rank, bit<16> slot_base) { }
  table parent_table { key = { hdr.netagg.job_id : exact; } actions = { set_parent; } }
  action set_parent_source(bit<16> job_id) { }
  table parent_source {
    key = { hdr.netagg.job_id : exact; hdr.ipv4.src_addr : exact; hdr.udp.src_port : exact; }
    actions = { set_parent_source; }
  }
  apply { }
}
control Egress(inout headers_t hdr, in egress_intrinsic_metadata_t eg_intr_md) {
  action set_result_destination(bit<48> mac, bit<32> ip, bit<16> udp_port, bit<8> rank) { }
  table result_destination { key = { eg_intr_md.egress_rid : exact; } actions = { set_result_destination; } }
  apply { }
}
)";

fs::path g_synthetic;

// Runs check_program on the synthetic file with failures captured, not reported.
std::string failures_of_synthetic() {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    check_program(g_synthetic, true);
  }
  std::string all;
  for (int i = 0; i < results.size(); ++i)
    all += std::string(results.GetTestPartResult(i).message()) + "\n";
  return all;
}

void write_synthetic(const std::string& from, const std::string& to) {
  std::string text = kContractProgram;
  if (!from.empty()) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  // Per process: ctest runs the tests of this file in parallel processes.
  g_synthetic = fs::temp_directory_path() / fmt::format("p4_consistency_synthetic.{}.p4", getpid());
  std::ofstream(g_synthetic) << text;
}

TEST(P4Check, PassesAProgramWrittenToTheContract) {
  write_synthetic("", "");
  EXPECT_EQ(failures_of_synthetic(), "");
  fs::remove(g_synthetic);
}

TEST(P4Check, FailsOnEachDifference) {
  write_synthetic("bit<9> port) { }", "bit<8> port) { }");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("the generator writes up to 511"));
  write_synthetic("bit<16> rank, bit<16> slot_base", "bit<8> rank, bit<16> slot_base");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("set_parent(bit<8> rank): the generator writes "
                                                 "up to 65535"));
  write_synthetic("table parent_source", "table parent_sources");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("Ingress.parent_source: table not declared"));
  write_synthetic("hdr.ipv4.src_addr : exact; hdr.udp.src_port",
                  "hdr.udp.src_port : exact; hdr.ipv4.src_addr");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("key 1"));
  write_synthetic("bit<16> slot_base, bit<16> slot_count", "bit<16> slot_count, bit<16> slot_base");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("parameter 1 of set_job"));
  write_synthetic("bit<16> job_id; bit<8> rank", "bit<8> job_id; bit<8> rank");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("key hdr.netagg.job_id is bit<8>"));
  write_synthetic("hdr.ethernet.dst_addr : exact;", "hdr.ethernet.dst_addr : ternary;");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("ternary"));
  write_synthetic("eg_intr_md.egress_rid : exact;",
                  "eg_intr_md.egress_rid : exact @name(\"rid\");");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("bfrt_python names the key rid"));
  write_synthetic("actions = { set_worker; }", "actions = { NoAction; }");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("is not in the table's actions"));
  write_synthetic("table forward", "table forwarding");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("table not declared"));
  write_synthetic("control Egress(", "control NetaggEgress(");
  EXPECT_THAT(failures_of_synthetic(), HasSubstr("no control Egress"));
  fs::remove(g_synthetic);
}

// The reader itself, on a fixed text, so a failure above is the program's and not the reader's.
TEST(P4Reader, ReadsTablesActionsAndWidths) {
  const fs::path file = fs::temp_directory_path() / fmt::format("p4_reader_test.{}.p4", getpid());
  std::ofstream(file) << R"(
typedef bit<48> mac_t;
header eth_h { mac_t dst_addr; bit<16> ether_type; }
struct headers_t { eth_h ethernet; }
control C(inout headers_t hdr, /* a comment ( */ inout standard_metadata_t standard_metadata) {
  action a(bit<9> port, @name("m") mac_t mac) { }  // a comment }
  table t {
    key = { hdr.ethernet.dst_addr : exact @name("dst"); standard_metadata.egress_rid: exact; }
    actions = { a; @defaultonly NoAction; }
    default_action = NoAction();
  }
  apply { t.apply(); }
})";
  const P4Program program(file);
  fs::remove(file);
  const auto body = program.control("C");
  ASSERT_TRUE(body);
  const auto t = program.table(*body, "t");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->keys.size(), 2u);
  EXPECT_EQ(t->keys[0].expression, "hdr.ethernet.dst_addr");
  EXPECT_EQ(t->keys[0].bfrt_name, "dst");
  EXPECT_EQ(t->keys[1].bfrt_name, "standard_metadata_egress_rid");
  EXPECT_THAT(t->actions, ::testing::ElementsAre("a", "NoAction"));
  EXPECT_EQ(program.key_width("C", "hdr.ethernet.dst_addr"), 48u);
  const auto params = program.action(*body, "a");
  ASSERT_TRUE(params);
  ASSERT_EQ(params->size(), 2u);
  EXPECT_EQ((*params)[1].name, "mac");
  EXPECT_EQ(program.width((*params)[0].type), 9u);
  EXPECT_EQ(program.width((*params)[1].type), 48u);
  EXPECT_FALSE(program.table(*body, "u"));
  EXPECT_TRUE(fits(511, 9));
  EXPECT_FALSE(fits(512, 9));
}

}  // namespace
}  // namespace netagg::p4

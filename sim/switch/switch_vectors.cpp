// SPDX-License-Identifier: Apache-2.0
#include "switch_vectors.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace netagg::sim {

namespace {

constexpr std::size_t kMinEthernetFrame = 60;  // without FCS: what NICs pad short frames to

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

class Reader {
 public:
  Reader(const std::filesystem::path& file, std::size_t line) : file_(file), line_(line) {}
  [[noreturn]] void fail(const std::string& problem) const {
    throw std::runtime_error(fmt::format("{}:{}: {}", file_.string(), line_, problem));
  }

  std::uint64_t number(const std::string& word, std::uint64_t max, std::string_view what) const {
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      v = std::stoull(word, &used, 10);
    } catch (const std::exception&) {
      fail(fmt::format("{} '{}' is not a number", what, word));
    }
    if (used != word.size() || v > max) fail(fmt::format("{} '{}' is out of range", what, word));
    return v;
  }

  // Hex digits with any spaces between byte pairs ("0200 0000 00fe ...").
  std::vector<std::byte> bytes(std::string_view text) const {
    std::vector<std::byte> out;
    std::string digits;
    for (char c : text)
      if (c != ' ' && c != '\t' && c != '\r') digits.push_back(c);
    if (digits.size() % 2) fail("odd number of hex digits");
    for (std::size_t i = 0; i < digits.size(); i += 2) {
      if (!std::isxdigit(static_cast<unsigned char>(digits[i])) ||
          !std::isxdigit(static_cast<unsigned char>(digits[i + 1])))
        fail(fmt::format("bad hex '{}'", digits.substr(i, 2)));
      out.push_back(static_cast<std::byte>(std::stoi(digits.substr(i, 2), nullptr, 16)));
    }
    return out;
  }

  // "PORT HEX..."
  FrameOut port_and_frame(const std::string& value) const {
    const auto space = value.find(' ');
    if (space == std::string::npos) fail("expected 'PORT HEX...'");
    FrameOut f;
    f.port = static_cast<std::uint16_t>(number(value.substr(0, space), 511, "port"));
    f.bytes = bytes(std::string_view(value).substr(space + 1));
    return f;
  }

  wire::Mac mac(const std::string& text) const {
    wire::Mac m{};
    unsigned v[6];
    char tail;
    if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4],
                    &v[5], &tail) != 6)
      fail(fmt::format("'{}' is not a MAC", text));
    for (int i = 0; i < 6; ++i) m[i] = static_cast<std::uint8_t>(v[i]);
    return m;
  }

  std::uint32_t ip(const std::string& text) const {
    unsigned a, b, c, d;
    char tail;
    if (std::sscanf(text.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 ||
        b > 255 || c > 255 || d > 255)
      fail(fmt::format("'{}' is not an IPv4 address", text));
    return (a << 24) | (b << 16) | (c << 8) | d;
  }

 private:
  const std::filesystem::path& file_;
  std::size_t line_;
};

// A received frame matches an expected one if it is equal, or equal followed by zero padding
// up to the Ethernet minimum (a NIC or BMv2 may pad short frames such as ARP replies).
bool matches(const FrameOut& expected, const FrameOut& got) {
  if (expected.port != got.port) return false;
  if (got.bytes.size() == expected.bytes.size()) return got.bytes == expected.bytes;
  if (got.bytes.size() < expected.bytes.size() || got.bytes.size() > kMinEthernetFrame)
    return false;
  if (!std::equal(expected.bytes.begin(), expected.bytes.end(), got.bytes.begin())) return false;
  return std::all_of(got.bytes.begin() + static_cast<std::ptrdiff_t>(expected.bytes.size()),
                     got.bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

// Where two frames first differ, for a message that a person can act on.
std::string first_difference(const FrameOut& a, const FrameOut& b) {
  const std::size_t n = std::min(a.bytes.size(), b.bytes.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a.bytes[i] != b.bytes[i])
      return fmt::format("first difference at byte {} (expected {:02x}, got {:02x})", i,
                         std::uint8_t(a.bytes[i]), std::uint8_t(b.bytes[i]));
  return fmt::format("lengths differ (expected {}, got {})", a.bytes.size(), b.bytes.size());
}

}  // namespace

std::string hex(std::span<const std::byte> bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::byte b : bytes) s += fmt::format("{:02x}", std::uint8_t(b));
  return s;
}

std::vector<std::uint16_t> SwitchVector::ports() const {
  std::set<std::uint16_t> ports;
  for (const auto& s : steps) {
    ports.insert(s.in_port);
    for (const auto& o : s.out) ports.insert(o.port);
  }
  return {ports.begin(), ports.end()};
}

SwitchVector load_switch_vector(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open");
  SwitchVector v;
  v.file = file;
  std::string line;
  std::size_t number = 0;
  bool have_switch = false, have_counters = false;
  while (std::getline(in, line)) {
    ++number;
    const Reader r(file, number);
    if (trim(line).empty()) continue;
    if (line[0] == '#') {
      if (v.description.empty()) v.description = trim(line.substr(1));
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) r.fail(fmt::format("expected 'key: value', got '{}'", line));
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    auto need_step = [&]() -> SwitchVectorStep& {
      if (v.steps.empty()) r.fail(fmt::format("'{}' before the first 'step:'", key));
      return v.steps.back();
    };
    if (key == "name") {
      v.name = value;
    } else if (key == "switch") {
      std::istringstream words(value);
      std::string mac, ip;
      if (!(words >> mac >> ip)) r.fail("expected 'switch: MAC IP'");
      v.switch_mac = r.mac(mac);
      v.switch_ip = r.ip(ip);
      have_switch = true;
    } else if (key == "job") {
      v.jobs_json.push_back(value);
    } else if (key == "bmv2") {
      v.bmv2 += value + "\n";
    } else if (key == "step") {
      if (have_counters) r.fail("'step:' after 'counters:'");
      v.steps.push_back({number, value, 0, {}, "", {}});
    } else if (key == "in") {
      auto& s = need_step();
      if (!s.in.empty()) r.fail("a step has one 'in:'");
      const FrameOut f = r.port_and_frame(value);
      s.in_port = f.port;
      s.in = f.bytes;
      if (s.in.empty()) r.fail("empty frame");
    } else if (key == "expect") {
      need_step().expect = value;
    } else if (key == "out") {
      need_step().out.push_back(r.port_and_frame(value));
    } else if (key == "counters") {
      std::istringstream words(value);
      std::string word;
      while (words >> word) {
        const auto eq = word.find('=');
        if (eq == std::string::npos) r.fail(fmt::format("counter '{}' is not NAME=VALUE", word));
        v.counters[word.substr(0, eq)] = r.number(word.substr(eq + 1), UINT64_MAX, "counter value");
      }
      have_counters = true;
    } else {
      r.fail(fmt::format("unknown key '{}'", key));
    }
  }
  const Reader r(file, number);
  if (v.name.empty()) r.fail("no 'name:'");
  if (!have_switch) r.fail("no 'switch:'");
  if (v.bmv2.empty()) r.fail("no 'bmv2:' lines");
  if (!have_counters) r.fail("no 'counters:'");
  for (const auto& s : v.steps)
    if (s.in.empty() || s.expect.empty())
      Reader(file, s.line).fail("a step needs 'in:' and 'expect:'");
  return v;
}

std::vector<SwitchVector> load_switch_vectors(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return {load_switch_vector(path)};
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(path))
    if (e.path().extension() == ".vec") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error(path.string() + ": no *.vec files");
  std::vector<SwitchVector> out;
  for (const auto& f : files) out.push_back(load_switch_vector(f));
  return out;
}

void ModelTarget::start(const SwitchVector& v) {
  pipeline_.reset();
  pipeline_.emplace(parse_bmv2_cli(v.bmv2, v.file.string() + " (bmv2 lines)"), limits_);
}

std::vector<FrameOut> ModelTarget::exchange(std::uint16_t port, std::span<const std::byte> frame,
                                            std::size_t) {
  return pipeline_->process(port, frame);
}

std::optional<std::string> ModelTarget::last_outcome() {
  return pipeline_->last_outcome().to_string();
}

std::optional<std::vector<std::pair<std::string, std::uint64_t>>> ModelTarget::counters() {
  return pipeline_->counters();
}

bool is_notice_frame(std::span<const std::byte> frame) {
  const wire::DecodedFrame d = wire::decode_frame(frame, 0);
  return d && d.packet.header.type == wire::MsgType::kNotice;
}

ReplayResult replay(const SwitchVector& v, FrameTarget& target, bool notices) {
  ReplayResult result{v.name, 0, {}};
  auto& failures = result.failures;
  try {
    target.start(v);
  } catch (const std::exception& e) {
    failures.push_back(fmt::format("configuring the switch: {}", e.what()));
    return result;
  }
  for (std::size_t i = 0; i < v.steps.size(); ++i) {
    const auto& step = v.steps[i];
    const std::string where = fmt::format("step {} (line {}: {})", i + 1, step.line, step.note);
    std::vector<FrameOut> got;
    try {
      std::size_t expected = 0;
      for (const auto& want : step.out) expected += notices || !is_notice_frame(want.bytes);
      got = target.exchange(step.in_port, step.in, expected);
    } catch (const std::exception& e) {
      failures.push_back(fmt::format("{}: {}", where, e.what()));
      return result;
    }
    ++result.steps;
    if (const auto outcome = target.last_outcome(); outcome && *outcome != step.expect)
      failures.push_back(
          fmt::format("{}: outcome '{}', expected '{}'", where, *outcome, step.expect));
    std::vector<bool> used(got.size(), false);
    std::vector<const FrameOut*> missing;
    for (const auto& want : step.out) {
      if (!notices && is_notice_frame(want.bytes)) continue;
      bool found = false;
      for (std::size_t g = 0; g < got.size() && !found; ++g)
        if (!used[g] && matches(want, got[g])) used[g] = found = true;
      if (!found) missing.push_back(&want);
    }
    for (const FrameOut* want : missing) {
      std::string msg = fmt::format("{}: expected frame out of port {} did not come: {}", where,
                                    want->port, hex(want->bytes));
      for (std::size_t g = 0; g < got.size(); ++g)
        if (!used[g] && got[g].port == want->port) {
          msg += fmt::format("; port {} sent instead {} ({})", got[g].port, hex(got[g].bytes),
                             first_difference(*want, got[g]));
          used[g] = true;
          break;
        }
      failures.push_back(msg);
    }
    for (std::size_t g = 0; g < got.size(); ++g)
      if (!used[g])
        failures.push_back(fmt::format("{}: unexpected frame out of port {}: {}", where,
                                       got[g].port, hex(got[g].bytes)));
  }
  if (const auto counters = notices ? target.counters() : std::nullopt) {
    std::set<std::string> known;
    for (const auto& [name, value] : *counters) {
      known.insert(name);
      const auto it = v.counters.find(name);
      const std::uint64_t want = it == v.counters.end() ? 0 : it->second;
      if (value != want)
        failures.push_back(fmt::format("counter {} = {}, expected {}", name, value, want));
    }
    for (const auto& [name, value] : v.counters)
      if (!known.count(name))
        failures.push_back(
            fmt::format("the vector names counter '{}', which the switch does "
                        "not have",
                        name));
  }
  return result;
}

}  // namespace netagg::sim

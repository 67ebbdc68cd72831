// SPDX-License-Identifier: Apache-2.0
#include "sv_constants.hpp"

#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace netagg::testing {
namespace {

std::string strip_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      const auto end = text.find("*/", i + 2);
      if (end == std::string::npos) throw std::runtime_error("unterminated /* comment");
      i = end + 2;
      out += ' ';
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Recursive descent over one constant expression.
class Expression {
 public:
  Expression(std::string text, const std::map<std::string, std::uint64_t>& names)
      : text_(std::move(text)), names_(names) {}

  std::uint64_t evaluate() {
    const std::uint64_t v = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(why + " in expression '" + text_ + "' at " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::uint64_t sum() {
    std::uint64_t v = product();
    for (;;) {
      if (take('+')) {
        v += product();
      } else if (take('-')) {
        v -= product();
      } else {
        return v;
      }
    }
  }
  std::uint64_t product() {
    std::uint64_t v = primary();
    for (;;) {
      if (take('*')) {
        v *= primary();
      } else if (take('/')) {
        const std::uint64_t d = primary();
        if (d == 0) fail("division by zero");
        v /= d;
      } else {
        return v;
      }
    }
  }
  std::uint64_t primary() {
    skip_space();
    if (take('(')) {
      const std::uint64_t v = sum();
      if (!take(')')) fail("missing )");
      return v;
    }
    if (pos_ >= text_.size()) fail("expression ends early");
    const char c = text_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      const std::string name = text_.substr(start, pos_ - start);
      const auto it = names_.find(name);
      if (it == names_.end()) fail("unknown name " + name);
      return it->second;
    }
    return literal();
  }
  // 42, 8'd1, 16'h8000, 'b1010, 32'hFFC0_0000 (width ignored: the tests compare values).
  std::uint64_t literal() {
    std::size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\'') {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == 's' || text_[pos_] == 'S')) ++pos_;
      if (pos_ >= text_.size()) fail("literal ends early");
      int base = 0;
      switch (std::tolower(static_cast<unsigned char>(text_[pos_]))) {
        case 'd':
          base = 10;
          break;
        case 'h':
          base = 16;
          break;
        case 'b':
          base = 2;
          break;
        case 'o':
          base = 8;
          break;
        default:
          fail("unsupported literal base");
      }
      ++pos_;
      return digits(base);
    }
    if (pos_ == start) fail("expected a value");
    pos_ = start;
    return digits(10);
  }
  std::uint64_t digits(int base) {
    std::uint64_t v = 0;
    std::size_t count = 0;
    while (pos_ < text_.size()) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_])));
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c == '_') {
        ++pos_;
        continue;
      }
      if (d < 0 || d >= base) break;
      v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
      ++pos_;
      ++count;
    }
    if (count == 0) fail("literal without digits");
    return v;
  }

  std::string text_;
  const std::map<std::string, std::uint64_t>& names_;
  std::size_t pos_ = 0;
};

void define(SvPackage& pkg, const std::string& name, std::uint64_t value) {
  if (!pkg.constants.emplace(name, value).second) {
    throw std::runtime_error("name defined twice: " + name);
  }
}

}  // namespace

SvPackage parse_sv_package(const std::string& raw_text) {
  const std::string text = strip_comments(raw_text);
  SvPackage pkg;
  static const std::regex package_re(R"(\bpackage\s+([A-Za-z_]\w*)\s*;)");
  std::smatch m;
  if (!std::regex_search(text, m, package_re)) throw std::runtime_error("no package");
  pkg.name = m[1];

  // localparams and enum typedefs, taken in text order (a value may use earlier names).
  static const std::regex item_re(R"(\blocalparam\s+[^=;]*?\b([A-Za-z_]\w*)\s*=\s*([^;]+);)"
                                  R"(|\btypedef\s+enum\b[^{]*\{([^}]*)\}\s*([A-Za-z_]\w*)\s*;)");
  static const std::regex member_re(R"(^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*$)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), item_re);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& item = *it;
    if (item[1].matched) {
      define(pkg, item[1], Expression(item[2], pkg.constants).evaluate());
      continue;
    }
    auto& members = pkg.enums[item[4]];
    std::stringstream list(item[3]);
    std::string member;
    while (std::getline(list, member, ',')) {
      std::smatch mm;
      if (!std::regex_match(member, mm, member_re)) {
        throw std::runtime_error("enum member without an explicit value: '" + member + "'");
      }
      const std::uint64_t value = Expression(mm[2], pkg.constants).evaluate();
      define(pkg, mm[1], value);
      members[mm[1]] = value;
    }
  }
  return pkg;
}

SvPackage load_sv_package(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_sv_package(buffer.str());
}

}  // namespace netagg::testing

// SPDX-License-Identifier: Apache-2.0
#include "netagg/address.hpp"

#include <arpa/inet.h>

#include <charconv>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg {

wire::Mac parse_mac(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return Error(Errc::kConfig,
                 fmt::format("{}: '{}' is not a MAC (aa:bb:cc:dd:ee:ff)", what, text));
  };
  if (text.size() != 17) throw bad();
  wire::Mac mac{};
  for (std::size_t i = 0; i < 6; ++i) {
    const char* first = text.data() + 3 * i;
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(first, first + 2, v, 16);
    if (ec != std::errc() || ptr != first + 2) throw bad();
    if (i < 5 && text[3 * i + 2] != ':' && text[3 * i + 2] != '-') throw bad();
    mac[i] = static_cast<std::uint8_t>(v);
  }
  return mac;
}

std::uint32_t parse_ipv4(std::string_view text, std::string_view what) {
  in_addr a{};
  const std::string s(text);
  // inet_pton reads a C string: text after a NUL would be ignored, not refused.
  if (s.find('\0') != std::string::npos || inet_pton(AF_INET, s.c_str(), &a) != 1) {
    std::string shown;  // an embedded NUL shown as \0
    for (const char c : s) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    throw Error(Errc::kConfig,
                fmt::format("{}: '{}' is not an IPv4 address (a.b.c.d)", what, shown));
  }
  return ntohl(a.s_addr);
}

std::string format_mac(const wire::Mac& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4],
                     m[5]);
}

std::string format_ipv4(std::uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
}

}  // namespace netagg

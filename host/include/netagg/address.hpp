// SPDX-License-Identifier: Apache-2.0
// Addresses as text, the one parser and formatter of each: MAC addresses ("aa:bb:cc:dd:ee:ff",
// '-' also taken between bytes) and IPv4 addresses ("a.b.c.d"; "a.b.c.d:port" endpoints are
// Endpoint::parse, netagg/job.hpp). A parser names the input it read (`what`: a field, option
// or variable) in its Error(kConfig), and refuses anything else in the text, an embedded NUL
// included.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "netagg/wire.hpp"

namespace netagg {

wire::Mac parse_mac(std::string_view text, std::string_view what);
std::uint32_t parse_ipv4(std::string_view text, std::string_view what);  // host order

std::string format_mac(const wire::Mac& mac);  // aa:bb:cc:dd:ee:ff
std::string format_ipv4(std::uint32_t ip);     // a.b.c.d, from host order

}  // namespace netagg

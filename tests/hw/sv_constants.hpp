// SPDX-License-Identifier: Apache-2.0
// Reads the constants of a SystemVerilog package from its text, for the tests that check the
// generated and hand-written packages (netagg_csr_pkg, netagg_pkg) against their C++ originals.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace netagg::testing {

struct SvPackage {
  std::string name;
  // Every localparam and every enum member, by name, with its value. A value is a literal
  // (42, 8'd1, 16'h8000, 'b101) or an expression of + - * / and parentheses over literals and
  // names defined before it, as the package writes it.
  std::map<std::string, std::uint64_t> constants;
  // Enum members by the enum's type name.
  std::map<std::string, std::map<std::string, std::uint64_t>> enums;
};

// Throws std::runtime_error (with the offending text) on anything it cannot read: a name defined
// twice, an unknown name in an expression, an unsupported literal, no package.
SvPackage parse_sv_package(const std::string& text);
SvPackage load_sv_package(const std::filesystem::path& file);

}  // namespace netagg::testing

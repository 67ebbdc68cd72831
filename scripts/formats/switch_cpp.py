# SPDX-License-Identifier: Apache-2.0
"""C++ (switch): p4/common/switch_format.hpp."""

from .common import WIRE_SOURCE, banner, camel, comment, cpp_string, drops_of, one_line


def render_cpp_switch(w):
    out = []
    a = out.append
    out += banner("// ", WIRE_SOURCE)
    out += comment("The switch pipeline's limits, drop reasons and round states as C++, for the "
                   "register-level model (sim/switch) and the control plane (driver/p4). The P4 "
                   "programs read the same values from p4/common/constants.p4.", "// ")
    a("#pragma once")
    a("")
    a("#include <array>")
    a("#include <cstddef>")
    a("#include <cstdint>")
    a("#include <string_view>")
    a("")
    a("namespace netagg::pipeline {")
    a("")
    out += comment(w["switch_doc"], "// ")
    for c in w["switch"]:
        out += comment(c["doc"], "// ")
        a(f"inline constexpr unsigned k{camel(c['name'])} = {c['value']};")
    a("")
    drops = drops_of(w, "switch")
    a("// Why the switch dropped a packet; the index of the P4 programs' drops counter.")
    a("enum class DropReason : std::uint8_t {")
    for i, d in enumerate(drops):
        a(f"  k{camel(d['name'])} = {i},  // {one_line(d['doc'])}")
    a("};")
    a(f"inline constexpr std::size_t kDropReasonCount = {len(drops)};")
    a("struct DropInfo {")
    a("  std::string_view id;       // \"unknown_job\"")
    a("  std::string_view counter;  // \"dropped_unknown_job\"")
    a("};")
    a("inline constexpr std::array<DropInfo, kDropReasonCount> kDrops = {{")
    for d in drops:
        a(f"    {{{cpp_string(d['name'])}, {cpp_string('dropped_' + d['name'])}}},")
    a("}};")
    a("constexpr std::string_view to_string(DropReason r) {")
    a("  return static_cast<std::size_t>(r) < kDropReasonCount")
    a("             ? kDrops[static_cast<std::size_t>(r)].id")
    a("             : std::string_view(\"unknown\");")
    a("}")
    a("constexpr std::string_view counter_name(DropReason r) {")
    a("  return static_cast<std::size_t>(r) < kDropReasonCount")
    a("             ? kDrops[static_cast<std::size_t>(r)].counter")
    a("             : std::string_view(\"dropped_unknown\");")
    a("}")
    a("")
    a("// has_round register values of a (slot, set) in the P4 programs.")
    a("enum class RoundState : std::uint8_t {")
    for r in w["round_states"]:
        a(f"  k{camel(r['name'])} = {r['value']},  // {one_line(r['doc'])}")
    a("};")
    a("")
    a("}  // namespace netagg::pipeline")
    return "\n".join(out) + "\n"

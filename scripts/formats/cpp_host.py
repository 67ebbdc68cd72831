# SPDX-License-Identifier: Apache-2.0
"""C++ (host): host/include/netagg/wire_format.hpp."""

from .common import (
    WIRE_SOURCE, banner, camel, comment, cpp_string, header_table, hexval, num, one_line, pack,
    uint_type)


def cpp_field_type(w, f):
    if f["enum"]:
        return w["enums"][f["enum"]]["cpp"]
    if f["signed"]:
        return f"std::int{max(8, 1 << (f['bits'] - 1).bit_length())}_t"
    return uint_type(f["bits"])


def cpp_load(f, src):
    n = f["bits"] // 8
    off = f"offset::k{camel(f['name'])}"
    raw = {1: f"std::uint8_t({src}[{off}])", 2: f"load_be16({src} + {off})",
           4: f"load_be32({src} + {off})"}[n]
    return raw


def cpp_store(f, dst, value):
    n = f["bits"] // 8
    off = f"offset::k{camel(f['name'])}"
    return {1: f"{dst}[{off}] = std::byte({value});",
            2: f"store_be16({dst} + {off}, static_cast<std::uint16_t>({value}));",
            4: f"store_be32({dst} + {off}, static_cast<std::uint32_t>({value}));"}[n]


def render_cpp_wire(w):
    na = w["headers"]["netagg"]
    out = []
    a = out.append
    out += banner("// ", WIRE_SOURCE)
    out += comment("The netagg wire format as C++: constants, enumerations, field offsets, the "
                   "header struct, its field codec, decoder errors and the frame's field tables. "
                   "netagg/wire.hpp includes it and adds the packet and frame codecs; "
                   "docs/wire-format.md explains every field.", "// ")
    a("#pragma once")
    a("")
    for inc in ("array", "cstddef", "cstdint", "span", "string_view"):
        a(f"#include <{inc}>")
    a("")
    a("namespace netagg::wire {")
    a("")
    a("// ---- constants ------------------------------------------------------------------------")
    a(f"inline constexpr std::uint8_t kVersion = {w['version']};")
    a(f"inline constexpr std::uint16_t kUdpPort = {w['udp_port']};  // well-known aggregator port")
    for c in w["constants"]:
        t = f"std::int{c['bits']}_t" if c["signed"] else uint_type(c["bits"])
        val = f"{t}({c['value']})" if c["value"] < 0 else str(c["value"])
        a(f"inline constexpr {t} k{camel(c['name'])} = {val};  // {one_line(c['doc'])}")
    a("")
    a("// ---- enumerations ---------------------------------------------------------------------")
    a("template <typename E>")
    a("struct EnumName {")
    a("  E value;")
    a("  std::string_view name;")
    a("};")
    a("// The name of v in table, \"unknown\" if v is not a member.")
    a("template <typename E, std::size_t N>")
    a("constexpr std::string_view name_in(const std::array<EnumName<E>, N>& table, E v) {")
    a("  for (const auto& entry : table)")
    a("    if (entry.value == v) return entry.name;")
    a("  return \"unknown\";")
    a("}")
    a("")
    for e in w["enums"].values():
        out += comment(e["doc"], "// ")
        a(f"enum class {e['cpp']} : {uint_type(e['bits'])} {{")
        for v in e["values"]:
            a(f"  k{camel(v['name'])} = {v['value']},  // {one_line(v['doc'])}")
        a("};")
        a(f"inline constexpr std::size_t k{e['cpp']}Count = {len(e['values'])};")
        a(f"inline constexpr std::array<EnumName<{e['cpp']}>, k{e['cpp']}Count> k{e['cpp']}Names = {{{{")
        for v in e["values"]:
            a(f"    {{{e['cpp']}::k{camel(v['name'])}, {cpp_string(v['name'])}}},")
        a("}};")
        a(f"constexpr std::string_view to_string({e['cpp']} v) {{ return name_in(k{e['cpp']}Names, v); }}")
        a(f"constexpr bool is_valid({e['cpp']} v) {{ return to_string(v) != \"unknown\"; }}")
        a("")
    dt = w["enums"]["dtype"]
    a("// Bytes per payload element.")
    a("constexpr std::size_t element_size(DataType t) {")
    a("  switch (t) {")
    for v in dt["values"]:
        a(f"    case DataType::k{camel(v['name'])}: return {v['size']};")
    a("  }")
    a("  return 0;")
    a("}")
    max_size = max(v["size"] for v in dt["values"])
    a(f"inline constexpr std::size_t kMaxElementSize = {max_size};")
    a("")
    for f in na["fields"]:
        if f["flags"]:
            a(f"// Bits of the {f['name']} field.")
            for fl in f["flags"]:
                a(f"inline constexpr {uint_type(f['bits'])} kFlag{camel(fl['name'])} = "
                  f"{hexval(1 << fl['bit'], f['bits'])};  // {one_line(fl['doc'])}")
            a(f"inline constexpr {uint_type(f['bits'])} k{camel(f['name'])}ReservedMask = "
              f"{hexval(f['reserved_mask'], f['bits'])};")
            a("")
    a("// ---- the netagg header ----------------------------------------------------------------")
    a("//")
    a("//  offset  size  field")
    for off, size, name, doc in header_table(na):
        a(f"//  {off:<6}  {size:<4}  {name:<10} {doc}"[:100].rstrip())
    a(f"//  {na['bytes']:<6}  ...   payload    count elements, big-endian")
    a("//")
    a("// All multi-byte fields are big-endian (network order).")
    a(f"inline constexpr std::size_t kHeaderSize = {na['bytes']};")
    a("inline constexpr std::size_t kMaxPayloadSize = std::size_t{kMaxCount} * kMaxElementSize;")
    a("inline constexpr std::size_t kMaxPacketSize = kHeaderSize + kMaxPayloadSize;")
    a("")
    a("// Byte offsets of the fields in the netagg header.")
    a("namespace offset {")
    for f in na["fields"]:
        a(f"inline constexpr std::size_t k{camel(f['name'])} = {f['bit_offset'] // 8};")
    a(f"inline constexpr std::size_t kPayload = {na['bytes']};")
    a("}  // namespace offset")
    a("")
    a("// The header's fields as values: enumerations typed, flags as their bits, fields that must")
    a("// be zero left out.")
    a("struct Header {")
    for f in na["fields"]:
        if f["check"] and f["check_kind"] == "zero":
            continue
        if f["flags"]:
            for fl in f["flags"]:
                a(f"  std::uint8_t {fl['name']} = 0;  // 0 or 1: {f['name']} bit {fl['bit']}")
            continue
        t = cpp_field_type(w, f)
        if f["check"] and f["check_kind"] == "equals":
            default = f" = k{camel(f['check']['equals'])}"
        elif f["enum"]:
            default = f" = {t}::k{camel(w['enums'][f['enum']]['values'][0]['name'])}"
        elif f["default"]:
            default = f" = k{camel(f['default'])}"
        else:
            default = " = 0"
        a(f"  {t} {f['name']}{default};")
    a("")
    a("  std::size_t payload_size() const { return std::size_t{count} * element_size(dtype); }")
    a("  std::size_t packet_size() const { return kHeaderSize + payload_size(); }")
    a("  friend bool operator==(const Header&, const Header&) = default;")
    a("};")
    a("")
    a("// Why a packet was rejected. Every decoder reports exactly one reason.")
    a("enum class Error : std::uint8_t {")
    for i, e in enumerate(w["errors"]):
        a(f"  k{camel(e['name'])} = {i},  // {one_line(e['doc'])}")
    a("};")
    a(f"inline constexpr std::size_t kErrorCount = {len(w['errors'])};")
    a("struct ErrorInfo {")
    a("  std::string_view id;       // identifier: \"bad_version\" (vectors, counters, JSON)")
    a("  std::string_view text;     // human words: \"bad version\"")
    a("  std::string_view counter;  // aggregators' counter of such packets: \"malformed_bad_version\"")
    a("  bool packet;               // an error of the netagg packet (decode), not of its frame")
    a("};")
    a("inline constexpr std::array<ErrorInfo, kErrorCount> kErrors = {{")
    for e in w["errors"]:
        counter = "malformed_" + e["name"] if e["name"] != "ok" else "ok"
        a(f"    {{{cpp_string(e['name'])}, {cpp_string(e['text'])}, {cpp_string(counter)}, "
          f"{'true' if e['layer'] == 'packet' else 'false'}}},")
    a("}};")
    a("inline constexpr ErrorInfo kUnknownError = {\"unknown\", \"unknown error\", "
      "\"malformed_unknown\", false};")
    a("constexpr const ErrorInfo& info(Error e) {")
    a("  const auto i = static_cast<std::size_t>(e);")
    a("  return i < kErrorCount ? kErrors[i] : kUnknownError;")
    a("}")
    a("constexpr std::string_view error_id(Error e) { return info(e).id; }")
    a("constexpr std::string_view to_string(Error e) { return info(e).text; }")
    a("constexpr std::string_view counter_name(Error e) { return info(e).counter; }")
    a("constexpr bool is_packet_error(Error e) { return info(e).packet; }")
    a("")
    a("// Big-endian access to a header or payload.")
    a("inline void store_be32(std::byte* p, std::uint32_t v) {")
    a("  p[0] = std::byte(v >> 24);")
    a("  p[1] = std::byte(v >> 16);")
    a("  p[2] = std::byte(v >> 8);")
    a("  p[3] = std::byte(v);")
    a("}")
    a("inline std::uint32_t load_be32(const std::byte* p) {")
    a("  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |")
    a("         (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);")
    a("}")
    a("inline void store_be16(std::byte* p, std::uint16_t v) {")
    a("  p[0] = std::byte(v >> 8);")
    a("  p[1] = std::byte(v);")
    a("}")
    a("inline std::uint16_t load_be16(const std::byte* p) {")
    a("  return std::uint16_t((std::uint16_t(p[0]) << 8) | std::uint16_t(p[1]));")
    a("}")
    a("")
    a("// Writes every field of h into p[0..kHeaderSize). The caller checks that h is encodable")
    a("// (header_encodable) and that p has room.")
    a("inline void store_header(const Header& h, std::byte* p) {")
    for f in na["fields"]:
        if f["check"] and f["check_kind"] == "zero":
            a("  " + cpp_store(f, "p", "0"))
        elif f["flags"]:
            parts = " | ".join(f"(h.{fl['name']} ? kFlag{camel(fl['name'])} : 0)"
                               for fl in f["flags"])
            a("  " + cpp_store(f, "p", parts))
        else:
            a("  " + cpp_store(f, "p", f"h.{f['name']}"))
    a("}")
    a("")
    a("// True if every value of h fits its field.")
    a("constexpr bool header_encodable(const Header& h) {")
    conds = []
    for f in na["fields"]:
        if f["flags"]:
            conds += [f"h.{fl['name']} <= 1" for fl in f["flags"]]
        if f["check"] and f["check_kind"] == "at_most":
            conds.append(f"h.{f['name']} <= k{camel(f['check']['at_most'])}")
    a("  return " + " && ".join(conds) + ";")
    a("}")
    a("")
    a("// Reads the header's fields from p[0..kHeaderSize) into h and checks them in the order")
    a("// the decoders agree on; returns the first check that fails, or Error::kOk.")
    a("inline Error load_header(const std::byte* p, Header& h) {")
    for f in na["fields"]:
        raw = cpp_load(f, "p")
        a(f"  const auto raw_{f['name']} = {raw};")
    for name in na["check_order"]:
        f = next(x for x in na["fields"] if x["name"] == name)
        kind, err = f["check_kind"], f"Error::k{camel(f['check']['error'])}"
        rv = f"raw_{name}"
        if kind == "equals":
            cond = f"{rv} != k{camel(f['check']['equals'])}"
        elif kind == "in_enum":
            e = w["enums"][f["enum"]]
            cond = f"!is_valid({e['cpp']}({rv}))"
        elif kind == "reserved_flags_zero":
            cond = f"({rv} & k{camel(f['name'])}ReservedMask) != 0"
        elif kind == "zero":
            cond = f"{rv} != 0"
        else:
            cond = f"{rv} > k{camel(f['check']['at_most'])}"
        a(f"  if ({cond}) return {err};")
    for f in na["fields"]:
        rv = f"raw_{f['name']}"
        if f["check"] and f["check_kind"] == "zero":
            continue
        if f["flags"]:
            for fl in f["flags"]:
                a(f"  h.{fl['name']} = ({rv} & kFlag{camel(fl['name'])}) ? 1 : 0;")
        elif f["enum"] or f["signed"]:
            a(f"  h.{f['name']} = static_cast<{cpp_field_type(w, f)}>({rv});")
        else:
            a(f"  h.{f['name']} = {rv};")
    a("  return Error::kOk;")
    a("}")
    a("")
    a("// ---- the frame: Ethernet / IPv4 / UDP / netagg ---------------------------------------------")
    for fh in w["frame_headers"]:
        h = fh["header"]
        if h["name"] == "netagg":
            continue
        a(f"inline constexpr std::size_t k{camel(h['short'])}HeaderSize = {h['bytes']};")
    a(f"inline constexpr std::size_t kFrameOverhead = {w['frame_payload'] - na['bytes']};")
    a(f"inline constexpr std::size_t kFramePayloadOffset = {w['frame_payload']};")
    a(f"inline constexpr std::size_t kBeatBytes = {w['beat_bytes']};  // a 512-bit AXI4-Stream beat")
    a("static_assert(kFramePayloadOffset % kBeatBytes == 0, \"payload starts on a beat\");")
    for c in w["frame_constants"]:
        doc = f"  // {one_line(c['doc'])}" if c["doc"] else ""
        a(f"inline constexpr {uint_type(c['bits'])} k{camel(c['name'])} = {num(c)};{doc}")
    a("")
    a("// Field tables of every header of the frame: bit offset inside its header (most significant")
    a("// bit first) and width.")
    a("namespace fields {")
    a("struct Field {")
    a("  std::string_view name;")
    a("  std::size_t bit_offset;")
    a("  std::size_t bits;")
    a("};")
    for fh in w["frame_headers"]:
        h = fh["header"]
        a(f"inline constexpr Field k{camel(h['name'])}[] = {{")
        entries = [f"{{{cpp_string(f['name'])}, {f['bit_offset']}, {f['bits']}}}," for f in h["fields"]]
        out.extend(pack(entries, "    "))
        a("};")
    a("}  // namespace fields")
    a("")
    a("}  // namespace netagg::wire")
    return "\n".join(out) + "\n"

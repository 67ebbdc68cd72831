#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes every view of netagg's formats from their one description.

  formats/wire.json  the wire protocol: frame headers, the netagg header, enumerations, flags,
                     decoder errors, aggregator drop reasons, switch pipeline limits
  formats/csr.json   the FPGA aggregator's control/status registers and counters

Each output is either a whole file or a region of a hand-written file between a BEGIN and an
END marker line; the rest of such a file is left as it is. Outputs are checked in (p4c, Vitis
HLS, Vivado and Wireshark read them outside CMake), and `--check` fails naming every stale one.

Usage:
  python3 scripts/gen_formats.py            rewrite every view that differs
  python3 scripts/gen_formats.py --check    exit 1 if any view differs (nothing is written)
  python3 scripts/gen_formats.py --wire F --csr F --root DIR   other inputs / output tree
"""

import argparse
import difflib
import json
import os
import re
import sys
import textwrap

GENERATOR = "scripts/gen_formats.py"
WIRE_SOURCE = "formats/wire.json"
CSR_SOURCE = "formats/csr.json"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
REGISTER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class FormatError(Exception):
    pass


# ---- small helpers ---------------------------------------------------------------------------

def parse_int(value, what):
    if isinstance(value, bool):
        raise FormatError(f"{what}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    raise FormatError(f"{what}: expected an integer or a \"0x...\" string, got {value!r}")


def camel(name):
    """max_count -> MaxCount, AGG_MAC_LO -> AggMacLo."""
    return "".join(p[:1].upper() + p[1:].lower() for p in name.split("_") if p)


def upper(name):
    return name.upper()


def one_line(text):
    return " ".join(str(text).split())


def comment(text, prefix, width=100):
    return textwrap.wrap(one_line(text), width=width, initial_indent=prefix,
                         subsequent_indent=prefix) or [prefix.rstrip()]


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def uint_type(bits):
    for w in (8, 16, 32, 64):
        if bits <= w:
            return f"std::uint{w}_t"
    raise FormatError(f"no integer type holds {bits} bits")


def c14_uint_type(bits):
    return uint_type(bits).replace("std::", "")


def require(obj, keys, where):
    for k in keys:
        if k not in obj:
            raise FormatError(f"{where}: missing \"{k}\"")


def unique_names(items, where, pattern=NAME):
    seen = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "name" not in item:
            raise FormatError(f"{where}[{i}]: expected an object with a \"name\"")
        name = item["name"]
        if not isinstance(name, str) or not pattern.match(name):
            raise FormatError(f"{where}[{i}]: name {name!r} must match {pattern.pattern}")
        if name in seen:
            raise FormatError(f"{where}: {name} appears twice")
        seen.add(name)


def num(c):
    """A constant as the description writes it: hex if given in hex."""
    return hexval(c["value"], c["bits"]) if c.get("hex") else str(c["value"])


def pack(items, indent, width=100):
    """Items joined by spaces into lines of at most `width` columns."""
    lines, line = [], ""
    for item in items:
        if line and len(indent) + len(line) + 1 + len(item) > width:
            lines.append(indent + line)
            line = item
        else:
            line = f"{line} {item}" if line else item
    if line:
        lines.append(indent + line)
    return lines


def hexval(value, bits):
    digits = max(1, (bits + 3) // 4)
    return f"0x{value:0{digits}X}"


# ---- the wire description --------------------------------------------------------------------

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise FormatError(f"cannot read {path}: {e}") from e


def load_wire(path):
    raw = load_json(path)
    require(raw, ("version", "udp_port", "beat_bytes", "constants", "enums", "headers", "frame",
                  "errors", "drops", "switch"), "top level")
    w = {"raw": raw, "description": raw.get("description", "")}
    w["version"] = parse_int(raw["version"], "version")
    w["udp_port"] = parse_int(raw["udp_port"], "udp_port")
    w["beat_bytes"] = parse_int(raw["beat_bytes"], "beat_bytes")
    if not 0 < w["version"] < 256:
        raise FormatError("version must fit the 8-bit version field and not be 0")
    if not 0 < w["udp_port"] < 65536:
        raise FormatError("udp_port outside 1..65535")

    def constants(items, where, default_bits=None):
        unique_names(items, where)
        out = []
        for c in items:
            at = f"{where} {c['name']}"
            require(c, ("value",), at)
            bits = parse_int(c.get("bits", default_bits or 32), f"{at}: bits")
            value = parse_int(c["value"], f"{at}: value")
            signed = bool(c.get("signed", False))
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if not lo <= value <= hi:
                raise FormatError(f"{at}: value {value} does not fit {bits} "
                                  f"{'signed ' if signed else ''}bits")
            out.append({"name": c["name"], "value": value, "bits": bits, "signed": signed,
                        "doc": c.get("doc", ""),
                        "hex": isinstance(c["value"], str) and c["value"].lower().startswith("0x")})
        return out

    w["constants"] = constants(raw["constants"], "constants")
    consts = {c["name"]: c for c in w["constants"]}
    consts["version"] = {"name": "version", "value": w["version"], "bits": 8, "signed": False}

    unique_names(raw["enums"], "enums")
    w["enums"] = {}
    for e in raw["enums"]:
        at = f"enum {e['name']}"
        require(e, ("cpp", "short", "bits", "values"), at)
        bits = parse_int(e["bits"], f"{at}: bits")
        unique_names(e["values"], f"{at} values")
        values, seen = [], set()
        for v in e["values"]:
            value = parse_int(v.get("value"), f"{at} {v['name']}: value")
            if not 0 <= value < (1 << bits):
                raise FormatError(f"{at} {v['name']}: value {value} does not fit {bits} bits")
            if value in seen:
                raise FormatError(f"{at} {v['name']}: value {value} used twice")
            seen.add(value)
            values.append({"name": v["name"], "value": value, "doc": v.get("doc", ""),
                           "size": parse_int(v["size"], f"{at} {v['name']}: size")
                           if "size" in v else None})
        w["enums"][e["name"]] = {"name": e["name"], "cpp": e["cpp"], "short": e["short"],
                                 "bits": bits, "values": values, "doc": e.get("doc", "")}
    if "dtype" not in w["enums"] or any(v["size"] is None for v in w["enums"]["dtype"]["values"]):
        raise FormatError("enum dtype: every value needs a \"size\" (bytes per element)")

    errors = raw["errors"]
    unique_names(errors, "errors")
    if not errors or errors[0]["name"] != "ok":
        raise FormatError("errors: the first entry must be \"ok\"")
    for e in errors:
        require(e, ("text",), f"error {e['name']}")
        if e["name"] != "ok" and e.get("layer") not in ("packet", "frame"):
            raise FormatError(f"error {e['name']}: layer must be \"packet\" or \"frame\"")
    w["errors"] = [{"name": e["name"], "text": e["text"], "layer": e.get("layer", ""),
                    "doc": e.get("doc", "")} for e in errors]
    error_names = {e["name"] for e in w["errors"]}
    for needed in ("truncated", "length_mismatch"):
        if needed not in error_names:
            raise FormatError(f"errors: \"{needed}\" is required (the decoder reports it)")

    unique_names(raw["headers"], "headers")
    w["headers"] = {}
    for h in raw["headers"]:
        at = f"header {h['name']}"
        require(h, ("fields",), at)
        unique_names(h["fields"], f"{at} fields")
        fields, bit = [], 0
        for f in h["fields"]:
            fat = f"{at} field {f['name']}"
            bits = parse_int(f.get("bits"), f"{fat}: bits")
            if bits <= 0:
                raise FormatError(f"{fat}: bits must be positive")
            field = {"name": f["name"], "alias": f.get("alias", f["name"]), "bits": bits,
                     "bit_offset": bit, "doc": f.get("doc", ""), "kind": f.get("kind", ""),
                     "signed": bool(f.get("signed", False)), "enum": f.get("enum"),
                     "flags": [], "check": f.get("check"), "default": f.get("default")}
            if field["enum"] and field["enum"] not in w["enums"]:
                raise FormatError(f"{fat}: unknown enum {field['enum']}")
            if field["enum"] and w["enums"][field["enum"]]["bits"] != bits:
                raise FormatError(f"{fat}: {bits} bits, but enum {field['enum']} has "
                                  f"{w['enums'][field['enum']]['bits']}")
            if field["default"] is not None and field["default"] not in consts:
                raise FormatError(f"{fat}: default {field['default']} is not a constant")
            if "flags" in f:
                unique_names(f["flags"], f"{fat} flags")
                for fl in f["flags"]:
                    b = parse_int(fl.get("bit"), f"{fat} flag {fl['name']}: bit")
                    if not 0 <= b < bits:
                        raise FormatError(f"{fat} flag {fl['name']}: bit {b} outside the field")
                    field["flags"].append({"name": fl["name"], "bit": b, "doc": fl.get("doc", "")})
                used = sum(1 << x["bit"] for x in field["flags"])
                field["reserved_mask"] = ((1 << bits) - 1) & ~used
            chk = field["check"]
            if chk is not None:
                require(chk, ("error",), f"{fat}: check")
                if chk["error"] not in error_names:
                    raise FormatError(f"{fat}: check names unknown error {chk['error']}")
                kinds = [k for k in ("equals", "in_enum", "reserved_flags_zero", "zero", "at_most")
                         if k in chk]
                if len(kinds) != 1:
                    raise FormatError(f"{fat}: a check has exactly one of equals, in_enum, "
                                      "reserved_flags_zero, zero, at_most")
                field["check_kind"] = kinds[0]
                if kinds[0] in ("equals", "at_most") and chk[kinds[0]] not in consts:
                    raise FormatError(f"{fat}: check compares with unknown constant "
                                      f"{chk[kinds[0]]}")
                if kinds[0] == "in_enum" and not field["enum"]:
                    raise FormatError(f"{fat}: in_enum check on a field without an enum")
                if kinds[0] == "reserved_flags_zero" and not field["flags"]:
                    raise FormatError(f"{fat}: reserved_flags_zero check on a field without flags")
            fields.append(field)
            bit += bits
        if bit % 8:
            raise FormatError(f"{at}: {bit} bits is not a whole number of bytes")
        w["headers"][h["name"]] = {"name": h["name"], "short": h.get("short", h["name"]),
                                   "fields": fields, "bytes": bit // 8, "doc": h.get("doc", ""),
                                   "p4_only": bool(h.get("p4_only", False)),
                                   "check_order": h.get("check_order", [])}

    if "netagg" not in w["headers"]:
        raise FormatError("headers: the netagg header is missing")
    na = w["headers"]["netagg"]
    names = {f["name"]: f for f in na["fields"]}
    for needed in ("version", "type", "dtype", "count", "flags"):
        if needed not in names:
            raise FormatError(f"header netagg: field {needed} is required")
    if names["type"]["enum"] != "msg_type" or names["dtype"]["enum"] != "dtype":
        raise FormatError("header netagg: type and dtype must use the msg_type and dtype enums")
    checked = [f["name"] for f in na["fields"] if f["check"]]
    if sorted(checked) != sorted(na["check_order"]):
        raise FormatError("header netagg: check_order must list exactly the fields with a check "
                          f"({', '.join(checked)})")
    for f in na["fields"]:
        if f["bits"] % 8 or f["bit_offset"] % 8 or f["bits"] > 32:
            raise FormatError(f"header netagg field {f['name']}: netagg fields are whole bytes, "
                              "at most 32 bits, byte aligned")

    frame = raw["frame"]
    require(frame, ("headers", "constants"), "frame")
    for hname in frame["headers"]:
        if hname not in w["headers"]:
            raise FormatError(f"frame: unknown header {hname}")
    if frame["headers"][-1] != "netagg":
        raise FormatError("frame: the netagg header comes last")
    w["frame_headers"], at = [], 0
    for hname in frame["headers"]:
        w["frame_headers"].append({"header": w["headers"][hname], "offset": at})
        at += w["headers"][hname]["bytes"]
    w["frame_payload"] = at
    if at % w["beat_bytes"]:
        raise FormatError(f"frame: the payload starts at byte {at}, not on a "
                          f"{w['beat_bytes']}-byte beat boundary")
    w["frame_constants"] = constants(frame["constants"], "frame constants")

    drops = raw["drops"]
    unique_names(drops, "drops")
    w["drops"] = []
    for d in drops:
        aggs = d.get("aggregators", [])
        if not aggs or any(a not in ("switch", "fpga") for a in aggs):
            raise FormatError(f"drop {d['name']}: aggregators must list \"switch\" and/or \"fpga\"")
        w["drops"].append({"name": d["name"], "aggregators": aggs, "doc": d.get("doc", "")})

    sw = raw["switch"]
    require(sw, ("constants", "round_states"), "switch")
    w["switch"] = constants(sw["constants"], "switch constants")
    w["switch_doc"] = sw.get("doc", "")
    w["round_states"] = constants(sw["round_states"], "switch round_states", 8)
    swc = {c["name"]: c["value"] for c in w["switch"]}
    for needed in ("value_bits", "bitmap_bits", "max_workers", "pool_slots", "lanes_per_pass",
                   "tofino_max_passes", "bmv2_max_passes"):
        if needed not in swc:
            raise FormatError(f"switch constants: {needed} is required")
    if swc["max_workers"] > swc["bitmap_bits"]:
        raise FormatError("switch constants: max_workers exceeds the bitmap's bits")
    if swc["lanes_per_pass"] * swc["bmv2_max_passes"] > consts["max_count"]["value"]:
        raise FormatError("switch constants: the v1model program's lanes exceed max_count")
    w["consts"] = consts
    return w


def drops_of(w, aggregator):
    return [d for d in w["drops"] if aggregator in d["aggregators"]]


def container(field):
    """(bytes, shift, mask) of a field inside the big-endian word of whole bytes holding it."""
    first = field["bit_offset"] // 8
    in_byte = field["bit_offset"] % 8
    nbytes = (in_byte + field["bits"] + 7) // 8
    shift = nbytes * 8 - in_byte - field["bits"]
    return first, nbytes, shift, (1 << field["bits"]) - 1


def aligned(field):
    return field["bit_offset"] % 8 == 0 and field["bits"] % 8 == 0


def header_table(h):
    """Text rows: offset, size, field, meaning."""
    rows = []
    for f in h["fields"]:
        rows.append((f["bit_offset"] // 8, f["bits"] // 8, f["name"], one_line(f["doc"])))
    return rows


# ---- C++ (host) ------------------------------------------------------------------------------

def banner(prefix, source, extra=""):
    line = f"{prefix}Generated by {GENERATOR} from {source}. Do not edit: change the description"
    return [f"{prefix}SPDX-License-Identifier: Apache-2.0", line,
            f"{prefix}and run `python3 {GENERATOR}`.{extra}"]


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


# ---- HLS C++ (C++14) -------------------------------------------------------------------------

def render_hls_layout(w):
    """The region of hls/include/netagg_hls/frame.hpp inside namespace netagg::fpga."""
    na = w["headers"]["netagg"]
    out = []
    a = out.append
    a("namespace layout {")
    a(f"constexpr int kBeatBytes = {w['beat_bytes']};")
    a("// Frame byte offset of each header and field; a field that is not whole bytes also has the")
    a("// width of the big-endian word holding it (Bytes), its right shift in it and its mask.")
    for fh in w["frame_headers"]:
        h, base = fh["header"], fh["offset"]
        s = camel(h["short"])
        a(f"constexpr int k{s} = {base}, k{s}HeaderSize = {h['bytes']};")
        for f in h["fields"]:
            first, nbytes, shift, mask = container(f)
            line = f"constexpr int k{s}{camel(f['name'])} = {base + first};"
            if not aligned(f):
                line += (f"  constexpr int k{s}{camel(f['name'])}Bytes = {nbytes}, "
                         f"k{s}{camel(f['name'])}Shift = {shift}; "
                         f"constexpr unsigned k{s}{camel(f['name'])}Mask = {hexval(mask, 8)};")
            a(line)
    a(f"constexpr int kFrameOverhead = {w['frame_payload'] - na['bytes']};")
    a(f"constexpr int kPayload = {w['frame_payload']};  // the payload starts at beat 1")
    a("")
    a(f"constexpr unsigned kVersion = {w['version']};")
    a(f"constexpr unsigned kUdpPort = {w['udp_port']};")
    for c in w["constants"]:
        t = "int" if c["signed"] else "unsigned"
        a(f"constexpr {t} k{camel(c['name'])} = {c['value']};  // {one_line(c['doc'])}")
    for e in w["enums"].values():
        for v in e["values"]:
            a(f"constexpr unsigned k{camel(e['short'])}{camel(v['name'])} = {v['value']};")
    for f in na["fields"]:
        if f["flags"]:
            for fl in f["flags"]:
                a(f"constexpr unsigned kFlag{camel(fl['name'])} = {hexval(1 << fl['bit'], 8)};")
            a(f"constexpr unsigned k{camel(f['name'])}ReservedMask = {hexval(f['reserved_mask'], 8)};")
    for c in w["frame_constants"]:
        a(f"constexpr unsigned k{camel(c['name'])} = {num(c)};")
    a("}  // namespace layout")
    a("")
    a("inline unsigned element_size(unsigned dtype) {")
    a("  switch (dtype) {")
    for v in w["enums"]["dtype"]["values"]:
        a(f"    case layout::kDtype{camel(v['name'])}: return {v['size']}u;")
    a("  }")
    a("  return 0u;")
    a("}")
    return out


# ---- SystemVerilog -----------------------------------------------------------------------------

def sv_literal(value, bits, signed=False):
    if signed and value < 0:
        value += 1 << bits
    return f"{bits}'h{value:0{(bits + 3) // 4}X}" if bits % 4 == 0 else f"{bits}'d{value}"


def render_sv_wire(w):
    """The region of hw/rtl/netagg_pkg.sv: the wire part of the package."""
    na = w["headers"]["netagg"]
    out = []
    a = out.append
    i2 = "  "
    a(f"{i2}// ==== netagg header ========================================================================")
    a(f"{i2}//")
    a(f"{i2}//  offset  size  field")
    for off, size, name, doc in header_table(na):
        a(f"{i2}//  {off:<6}  {size:<4}  {name:<10} {doc}"[:100].rstrip())
    a(f"{i2}//  {na['bytes']:<6}  ...   payload    count elements, big-endian")
    a("")
    a(f"{i2}localparam logic [7:0]  WIRE_VERSION = 8'd{w['version']};")
    a(f"{i2}localparam int unsigned HEADER_SIZE = {na['bytes']};")
    a(f"{i2}localparam logic [15:0] UDP_PORT = 16'd{w['udp_port']};  // well-known aggregator port")
    for c in w["constants"]:
        if c["signed"]:
            a(f"{i2}localparam logic [{c['bits'] - 1}:0] {upper(c['name'])} = "
              f"{sv_literal(c['value'], c['bits'], True)};  // {c['value']}: {one_line(c['doc'])}")
        else:
            a(f"{i2}localparam int unsigned {upper(c['name'])} = {c['value']};  "
              f"// {one_line(c['doc'])}")
    a("")
    for e in w["enums"].values():
        a(f"{i2}// {one_line(e['doc'])}")
        a(f"{i2}typedef enum logic [{e['bits'] - 1}:0] {{")
        items = [f"{i2}  {upper(e['short'])}_{upper(v['name'])} = {e['bits']}'d{v['value']}"
                 for v in e["values"]]
        a(",\n".join(items))
        a(f"{i2}}} {e['name']}_e;")
    a("")
    dt = w["enums"]["dtype"]
    a(f"{i2}//  dtype        element size")
    for v in dt["values"]:
        a(f"{i2}//  DTYPE_{upper(v['name']):<6} {v['size']} bytes")
    for f in na["fields"]:
        if f["flags"]:
            for fl in f["flags"]:
                a(f"{i2}localparam logic [{f['bits'] - 1}:0] FLAG_{upper(fl['name'])} = "
                  f"{sv_literal(1 << fl['bit'], f['bits'])};  // {one_line(fl['doc'])}")
            a(f"{i2}localparam logic [{f['bits'] - 1}:0] {upper(f['name'])}_RESERVED_MASK = "
              f"{sv_literal(f['reserved_mask'], f['bits'])};")
    a("")
    a(f"{i2}localparam int unsigned MAX_ELEMENT_SIZE = {max(v['size'] for v in dt['values'])};")
    a(f"{i2}localparam int unsigned MAX_PAYLOAD_SIZE = MAX_COUNT * MAX_ELEMENT_SIZE;")
    a(f"{i2}localparam int unsigned MAX_PACKET_SIZE  = HEADER_SIZE + MAX_PAYLOAD_SIZE;")
    a("")
    a(f"{i2}// Byte offsets of the fields inside the netagg header.")
    for f in na["fields"]:
        a(f"{i2}localparam int unsigned OFF_{upper(f['name'])} = {f['bit_offset'] // 8};")
    a(f"{i2}localparam int unsigned OFF_PAYLOAD = {na['bytes']};")
    a("")
    ebits = max(1, (len(w["errors"]) - 1).bit_length())
    a(f"{i2}// Why a packet was rejected (wire::Error, same order and values).")
    a(f"{i2}typedef enum logic [{ebits - 1}:0] {{")
    a(",\n".join(f"{i2}  ERR_{upper(e['name'])} = {ebits}'d{i}" for i, e in enumerate(w["errors"])))
    a(f"{i2}}} wire_error_e;")
    a(f"{i2}localparam int unsigned ERROR_COUNT = {len(w['errors'])};")
    a("")
    a(f"{i2}// The header as a packed struct, fields in wire order and host (not byte-swapped) values.")
    a(f"{i2}typedef struct packed {{")
    for f in na["fields"]:
        note = f"  // {f['enum']}_e when valid; kept raw so bad values stay visible" \
            if f["enum"] else ("  // two's complement" if f["signed"] else "")
        a(f"{i2}  logic [{f['bits'] - 1}:0] {f['alias']};{note}")
    a(f"{i2}}} header_t;")
    a("")
    a(f"{i2}// ==== Ethernet / IPv4 / UDP framing =========================================================")
    a(f"{i2}//")
    a(f"{i2}//  frame byte  field")
    for fh in w["frame_headers"]:
        h = fh["header"]
        if h["name"] == "netagg":
            a(f"{i2}//  {fh['offset']:<10}  netagg header ({h['bytes']} bytes)")
            continue
        for f in h["fields"]:
            a(f"{i2}//  {fh['offset'] + f['bit_offset'] // 8:<10}  {h['name']}.{f['name']} "
              f"({f['bits']} bits)")
    a(f"{i2}//  {w['frame_payload']:<10}  payload: beat 1 onwards")
    a("")
    for fh in w["frame_headers"]:
        h = fh["header"]
        if h["name"] != "netagg":
            a(f"{i2}localparam int unsigned {upper(h['short'])}_HEADER_SIZE = {h['bytes']};")
    a(f"{i2}localparam int unsigned FRAME_OVERHEAD = {w['frame_payload'] - na['bytes']};")
    a(f"{i2}localparam int unsigned FRAME_PAYLOAD_OFFSET = {w['frame_payload']};")
    a("")
    a(f"{i2}// Frame byte offset of each header and field; a field that is not whole bytes also has")
    a(f"{i2}// the width of the big-endian word holding it (_BYTES), its right shift and its width.")
    for fh in w["frame_headers"]:
        h, base = fh["header"], fh["offset"]
        s = upper(h["short"])
        a(f"{i2}localparam int unsigned FRM_{s} = {base};")
        if h["name"] == "netagg":
            continue  # its fields: FRM_NETAGG + OFF_<FIELD>
        for f in h["fields"]:
            first, nbytes, shift, _ = container(f)
            name = f"{s}_{upper(f['name'])}"
            line = f"{i2}localparam int unsigned FRM_{name} = {base + first}"
            if not aligned(f):
                line += f", {name}_BYTES = {nbytes}, {name}_SHIFT = {shift}, {name}_BITS = {f['bits']}"
            a(line + ";")
    a("")
    for c in w["frame_constants"]:
        doc = f"  // {one_line(c['doc'])}" if c["doc"] else ""
        a(f"{i2}localparam logic [{c['bits'] - 1}:0] {upper(c['name'])} = "
          f"{sv_literal(c['value'], c['bits'])};{doc}")
    a("")
    a(f"{i2}// ==== 512-bit beats =========================================================================")
    a(f"{i2}localparam int unsigned BEAT_BYTES = {w['beat_bytes']};")
    a(f"{i2}localparam int unsigned BEAT_BITS  = BEAT_BYTES * 8;")
    a(f"{i2}localparam int unsigned KEEP_BITS  = BEAT_BYTES;")
    a("")
    a(f"{i2}// `offset` is the frame byte offset of the field's first byte; it must lie inside the beat.")
    a(f"{i2}function automatic logic [7:0] beat_u8(input logic [BEAT_BITS-1:0] beat,")
    a(f"{i2}                                       input int unsigned offset);")
    a(f"{i2}  beat_u8 = beat[offset*8 +: 8];")
    a(f"{i2}endfunction")
    a("")
    a(f"{i2}function automatic logic [15:0] beat_be16(input logic [BEAT_BITS-1:0] beat,")
    a(f"{i2}                                          input int unsigned offset);")
    a(f"{i2}  beat_be16 = {{beat[offset*8 +: 8], beat[(offset+1)*8 +: 8]}};")
    a(f"{i2}endfunction")
    a("")
    a(f"{i2}function automatic logic [31:0] beat_be32(input logic [BEAT_BITS-1:0] beat,")
    a(f"{i2}                                          input int unsigned offset);")
    a(f"{i2}  beat_be32 = {{beat[offset*8 +: 8], beat[(offset+1)*8 +: 8], beat[(offset+2)*8 +: 8],")
    a(f"{i2}               beat[(offset+3)*8 +: 8]}};")
    a(f"{i2}endfunction")
    a("")
    a(f"{i2}// The netagg header of beat 0 of a frame, as a header_t (assign the result to a header_t")
    a(f"{i2}// variable: yosys 0.23 cannot return structs).")
    a(f"{i2}function automatic logic [HEADER_SIZE*8-1:0] header_from_beat(")
    a(f"{i2}    input logic [BEAT_BITS-1:0] beat);")
    parts = []
    for f in na["fields"]:
        fn = {8: "beat_u8", 16: "beat_be16", 32: "beat_be32"}[f["bits"]]
        parts.append(f"{fn}(beat, FRM_NETAGG + OFF_{upper(f['name'])})")
    a(f"{i2}  header_from_beat = {{" + (",\n" + i2 + "                      ").join(parts) + "};")
    a(f"{i2}endfunction")
    a("")
    a(f"{i2}// A header_t's HEADER_SIZE bytes in frame order (byte 0, the version, in bits 7:0): place")
    a(f"{i2}// the result at beat bits [FRM_NETAGG*8 +: HEADER_SIZE*8].")
    a(f"{i2}function automatic logic [HEADER_SIZE*8-1:0] header_bytes(")
    a(f"{i2}    input logic [HEADER_SIZE*8-1:0] header);")
    a(f"{i2}  logic [HEADER_SIZE*8-1:0] wire_order;")
    a(f"{i2}  // header_t lists the fields in wire order, most significant first: its bytes, last to")
    a(f"{i2}  // first, are the wire bytes first to last.")
    a(f"{i2}  for (int unsigned i = 0; i < HEADER_SIZE; i++) begin")
    a(f"{i2}    wire_order[i*8 +: 8] = header[(HEADER_SIZE-1-i)*8 +: 8];")
    a(f"{i2}  end")
    a(f"{i2}  header_bytes = wire_order;")
    a(f"{i2}endfunction")
    return out


# ---- P4 ---------------------------------------------------------------------------------------

def p4_banner():
    return ["/* SPDX-License-Identifier: Apache-2.0",
            f" * Generated by {GENERATOR} from {WIRE_SOURCE}. Do not edit: change the description",
            f" * and run `python3 {GENERATOR}`.", " *"]


def render_p4_headers(w):
    out = []
    a = out.append
    out += p4_banner()
    a(" * The headers shared by the TNA and the v1model program, field for field as on the wire.")
    a(" * `type` is a P4 keyword: the netagg field is called msg_type here.")
    a(" */")
    a("#ifndef NETAGG_HEADERS_P4")
    a("#define NETAGG_HEADERS_P4")
    a("")
    a('#include "constants.p4"')
    a("")
    a("typedef bit<48> mac_addr_t;")
    a("typedef bit<32> ipv4_addr_t;")
    for h in w["headers"].values():
        a("")
        a(f"header {h['name']}_h {{  /* {one_line(h['doc'])} */"
          if len(h["doc"]) < 70 else f"/* {one_line(h['doc'])} */\nheader {h['name']}_h {{")
        width = max(len(t) for t in ("mac_addr_t", "ipv4_addr_t", "bit<48>"))
        for f in h["fields"]:
            t = {"mac": "mac_addr_t", "ipv4": "ipv4_addr_t"}.get(f["kind"], f"bit<{f['bits']}>")
            doc = f"  /* {one_line(f['doc'])} */" if f["doc"] and len(f["doc"]) < 60 else ""
            a(f"    {t:<{width}} {f['alias']};{doc}")
        a("}")
    a("")
    a("#endif /* NETAGG_HEADERS_P4 */")
    return "\n".join(out) + "\n"


def render_p4_constants(w):
    na = w["headers"]["netagg"]
    out = []
    a = out.append
    out += p4_banner()
    a(" * Plain #defines: both compilers run the C preprocessor, and the values are used where P4")
    a(" * needs compile-time numbers (register sizes, header stack sizes, parser keysets).")
    a(" */")
    a("#ifndef NETAGG_CONSTANTS_P4")
    a("#define NETAGG_CONSTANTS_P4")
    rows = []

    def d(name, value, doc=""):
        rows.append((name, value, doc))

    def flush(title):
        a("")
        a(f"/* ---- {title} " + "-" * max(0, 88 - len(title)) + " */")
        width = max(len(r[0]) for r in rows)
        for name, value, doc in rows:
            line = f"#define {name:<{width}} {value}"
            if doc:
                line += f"  /* {one_line(doc)} */"
            a(line)
        rows.clear()

    d("NETAGG_UDP_PORT", w["udp_port"], "contributions go to this UDP port")
    d("NETAGG_WIRE_VERSION", w["version"])
    d("NETAGG_HEADER_SIZE", na["bytes"], "bytes")
    for c in w["constants"]:
        d(f"NETAGG_{upper(c['name'])}", c["value"], c["doc"])
    for e in w["enums"].values():
        for v in e["values"]:
            d(f"NETAGG_{upper(e['short'])}_{upper(v['name'])}", v["value"], v["doc"])
    for f in na["fields"]:
        if f["flags"]:
            for fl in f["flags"]:
                d(f"NETAGG_FLAG_{upper(fl['name'])}", hexval(1 << fl["bit"], 8), fl["doc"])
            d(f"NETAGG_{upper(f['name'])}_RESERVED_MASK", hexval(f['reserved_mask'], 8))
    flush("wire format")
    for c in w["frame_constants"]:
        d(upper(c["name"]), num(c), c["doc"])
    flush("framing")
    for c in w["switch"]:
        d(f"NETAGG_{upper(c['name'])}", c["value"], c["doc"])
    flush("switch limits")
    drops = drops_of(w, "switch")
    for i, dr in enumerate(drops):
        d(f"NETAGG_DROP_{upper(dr['name'])}", i, dr["doc"])
    d("NETAGG_DROP_REASONS", len(drops), "size of the drops counter")
    flush("drop reasons: the index of the `drops` counter")
    for r in w["round_states"]:
        d(f"NETAGG_ROUND_{upper(r['name'])}", r["value"], r["doc"])
    flush("has_round register values (docs/switch-pipeline.md)")
    a("")
    a("#endif /* NETAGG_CONSTANTS_P4 */")
    return "\n".join(out) + "\n"


# ---- Wireshark (Lua) ----------------------------------------------------------------------------

def lua_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_lua(w):
    na = w["headers"]["netagg"]
    out = []
    a = out.append
    out += banner("-- ", WIRE_SOURCE)
    a("--")
    a("-- A Wireshark dissector for the netagg header and payload on UDP port "
      f"{w['udp_port']}.")
    a("-- Load it with `wireshark -X lua_script:netagg.lua` (or `tshark -X lua_script:...`), or copy")
    a("-- it into ~/.local/lib/wireshark/plugins/. It checks a packet as netagg's decoders do and")
    a("-- shows the first reason it fails in netagg.error.")
    a("")
    a('local netagg = Proto("netagg", "netagg in-network aggregation")')
    a("")
    for e in w["enums"].values():
        a(f"local {e['name']}_names = {{")
        for v in e["values"]:
            a(f"  [{v['value']}] = {lua_string(v['name'])},")
        a("}")
    a("local element_sizes = {")
    for v in w["enums"]["dtype"]["values"]:
        a(f"  [{v['value']}] = {v['size']},")
    a("}")
    a("")
    a("local f = netagg.fields")
    for fld in na["fields"]:
        base = "base.HEX" if fld["flags"] or (fld["check"] and fld["check_kind"] == "zero") \
            else "base.DEC"
        ftype = {8: "uint8", 16: "uint16", 32: "uint32"}[fld["bits"]]
        if fld["signed"]:
            ftype = {8: "int8", 16: "int16", 32: "int32"}[fld["bits"]]
        names = f"{fld['enum']}_names" if fld["enum"] else "nil"
        a(f"f.{fld['name']} = ProtoField.{ftype}(\"netagg.{fld['name']}\", "
          f"{lua_string(fld['name'])}, {base}, {names}, nil, {lua_string(one_line(fld['doc']))})")
        for fl in fld["flags"]:
            a(f"f.{fld['name']}_{fl['name']} = ProtoField.uint{fld['bits']}("
              f"\"netagg.{fl['name']}\", {lua_string(fl['name'])}, base.DEC, nil, "
              f"{hexval(1 << fl['bit'], fld['bits'])}, {lua_string(one_line(fl['doc']))})")
    a('f.error = ProtoField.string("netagg.error", "error", base.ASCII, '
      '"why a decoder rejects the packet")')
    a('f.int32 = ProtoField.int32("netagg.int32", "element")')
    a('f.fp32 = ProtoField.float("netagg.fp32", "element")')
    a('f.bf16 = ProtoField.uint16("netagg.bf16", "element (bf16 bits)", base.HEX)')
    a("")
    a("local checks = {")
    for name in na["check_order"]:
        fld = next(x for x in na["fields"] if x["name"] == name)
        kind = fld["check_kind"]
        if kind == "equals":
            const = w["consts"][fld["check"]["equals"]]["value"]
            cond = f"function(v) return v == {const} end"
        elif kind == "in_enum":
            cond = f"function(v) return {fld['enum']}_names[v] ~= nil end"
        elif kind == "reserved_flags_zero":
            keep = sum(1 << fl["bit"] for fl in fld["flags"])
            cond = f"function(v) return bit.band(v, bit.bnot({keep})) == 0 end"
        elif kind == "zero":
            cond = "function(v) return v == 0 end"
        else:
            const = w["consts"][fld["check"]["at_most"]]["value"]
            cond = f"function(v) return v <= {const} end"
        a(f"  {{ field = {lua_string(name)}, error = {lua_string(fld['check']['error'])}, "
          f"ok = {cond} }},")
    a("}")
    a("")
    a("function netagg.dissector(buffer, pinfo, tree)")
    a("  local length = buffer:len()")
    a("  pinfo.cols.protocol = netagg.name")
    a(f"  local root = tree:add(netagg, buffer(0, math.min(length, {na['bytes']})))")
    a(f"  if length < {na['bytes']} then")
    a('    root:add(f.error, "truncated")')
    a('    pinfo.cols.info = "netagg truncated"')
    a("    return length")
    a("  end")
    a("  local raw = {}")
    for fld in na["fields"]:
        off, n = fld["bit_offset"] // 8, fld["bits"] // 8
        getter = "int" if fld["signed"] else "uint"
        a(f"  raw.{fld['name']} = buffer({off}, {n}):{getter}()")
        a(f"  local item_{fld['name']} = root:add(f.{fld['name']}, buffer({off}, {n}))")
        for fl in fld["flags"]:
            a(f"  item_{fld['name']}:add(f.{fld['name']}_{fl['name']}, buffer({off}, {n}))")
    a("  local err = nil")
    a("  for _, c in ipairs(checks) do")
    a("    if not c.ok(raw[c.field]) then")
    a("      err = c.error")
    a("      break")
    a("    end")
    a("  end")
    a("  if err == nil then")
    a("    local size = element_sizes[raw.dtype]")
    a(f"    if length ~= {na['bytes']} + raw.count * size then")
    a('      err = "length_mismatch"')
    a("    end")
    a("  end")
    a("  if err ~= nil then")
    a("    root:add(f.error, err)")
    a('    pinfo.cols.info = "netagg " .. err')
    a("    return length")
    a("  end")
    a("  local dtype = dtype_names[raw.dtype]")
    a("  local size = element_sizes[raw.dtype]")
    a("  if raw.count > 0 then")
    a(f"    local payload = root:add(buffer({na['bytes']}), "
      "string.format(\"payload: %d %s elements\", raw.count, dtype))")
    a("    for i = 0, raw.count - 1 do")
    a(f"      local at = {na['bytes']} + i * size")
    a('      if dtype == "fp32" then')
    a("        payload:add(f.fp32, buffer(at, 4))")
    a('      elseif dtype == "bf16" then')
    a("        payload:add(f.bf16, buffer(at, 2))")
    a("      else")
    a("        payload:add(f.int32, buffer(at, 4))")
    a("      end")
    a("    end")
    a("  end")
    a('  pinfo.cols.info = string.format("netagg %s job %d rank %d slot %d set %d seq %d count %d %s",')
    a("    msg_type_names[raw.type], raw.job_id, raw.rank, raw.slot,")
    a("    bit.band(raw.flags, 1), raw.seq, raw.count, dtype)")
    a("  return length")
    a("end")
    a("")
    a(f'DissectorTable.get("udp.port"):add({w["udp_port"]}, netagg)')
    return "\n".join(out) + "\n"


# ---- docs ---------------------------------------------------------------------------------------

def render_doc_header(w):
    na = w["headers"]["netagg"]
    out = ["| offset | size | field | values |", "|---|---|---|---|"]
    for f in na["fields"]:
        # A field of flags is its bits: the field's own doc only names them again.
        vals = "" if f["flags"] else one_line(f["doc"])
        if f["enum"]:
            e = w["enums"][f["enum"]]
            vals += ": " + ", ".join(f"{v['value']} {v['name']}" for v in e["values"])
        if f["flags"]:
            used = {fl["bit"] for fl in f["flags"]}
            others = [b for b in range(f["bits"]) if b not in used]
            vals += "; ".join(f"bit {fl['bit']}, **{fl['name']}**: {one_line(fl['doc'])}"
                              for fl in f["flags"])
            if others:
                error = f["check"]["error"] if f["check"] else None
                contiguous = others == list(range(others[0], others[-1] + 1))
                bits = (f"bit {others[0]}" if len(others) == 1
                        else f"bits {others[0]}..{others[-1]}" if contiguous
                        else "bits " + ", ".join(map(str, others)))
                vals += f"; {bits}: 0" + (f" (else `{error}`)" if error else "")
        if f["check"]:
            k = f["check_kind"]
            if k == "equals":
                vals += f" (= {w['consts'][f['check']['equals']]['value']})"
            elif k == "at_most":
                vals += f" (at most {w['consts'][f['check']['at_most']]['value']})"
        out.append(f"| {f['bit_offset'] // 8} | {f['bits'] // 8} | `{f['name']}` | {vals} |")
    out.append(f"| {na['bytes']} | count × element size | payload | the elements "
               f"({', '.join(v['name'] + ': ' + str(v['size']) + ' bytes' for v in w['enums']['dtype']['values'])}) |")
    return out


def render_doc_errors(w):
    out = ["| id | layer | meaning |", "|---|---|---|"]
    for e in w["errors"][1:]:
        out.append(f"| `{e['name']}` | {e['layer']} | {one_line(e['doc'])} |")
    return out


def render_doc_drops(w):
    out = ["| id | switch | FPGA | meaning |", "|---|---|---|---|"]
    for d in w["drops"]:
        sw = "✓" if "switch" in d["aggregators"] else ""
        fp = "✓" if "fpga" in d["aggregators"] else ""
        out.append(f"| `{d['name']}` | {sw} | {fp} | {one_line(d['doc'])} |")
    return out


# ---- the CSR map ------------------------------------------------------------------------------

ACCESS = {"ro": "kReadOnly", "rw": "kReadWrite", "wo": "kWriteOnly"}


def load_csr(path, wire):
    raw = load_json(path)
    for key in ("name", "addr_bits", "registers", "counters"):
        if key not in raw:
            raise FormatError(f"missing top-level key \"{key}\"")
    addr_bits = parse_int(raw["addr_bits"], "addr_bits")
    if not 3 <= addr_bits <= 32:
        raise FormatError(f"addr_bits {addr_bits} outside 3..32")
    registers, names, offsets = [], set(), {}
    for i, reg in enumerate(raw["registers"]):
        for key in ("name", "offset", "access"):
            if key not in reg:
                raise FormatError(f"registers[{i}]: missing \"{key}\"")
        name = reg["name"]
        where = f"register {name}"
        if not isinstance(name, str) or not REGISTER_NAME.match(name):
            raise FormatError(f"{where}: name must match {REGISTER_NAME.pattern}")
        if name in names:
            raise FormatError(f"{where}: name used twice")
        offset = parse_int(reg["offset"], f"{where}: offset")
        if offset % 4:
            raise FormatError(f"{where}: offset {offset:#x} is not 4-byte aligned")
        if not 0 <= offset < (1 << addr_bits):
            raise FormatError(f"{where}: offset {offset:#x} outside the {addr_bits}-bit address space")
        if offset in offsets:
            raise FormatError(f"{where}: offset {offset:#x} already used by {offsets[offset]}")
        if reg["access"] not in ACCESS:
            raise FormatError(f"{where}: access must be one of {sorted(ACCESS)}")
        reset = parse_int(reg.get("reset", 0), f"{where}: reset")
        if not 0 <= reset < (1 << 32):
            raise FormatError(f"{where}: reset value does not fit 32 bits")
        names.add(name)
        offsets[offset] = name
        registers.append({"name": name, "offset": offset, "access": reg["access"], "reset": reset,
                          "has_reset": "reset" in reg, "description": str(reg.get("description", ""))})
    counters = []
    for i, name in enumerate(raw["counters"]):
        if not isinstance(name, str) or not NAME.match(name):
            raise FormatError(f"counters[{i}]: name must match {NAME.pattern}")
        if name in counters:
            raise FormatError(f"counter {name}: name used twice")
        counters.append(name)
    if not counters:
        raise FormatError("no counters")
    values = raw.get("values", [])
    unique_names(values, "values")
    vals = []
    for v in values:
        if v.get("register") not in names:
            raise FormatError(f"value {v['name']}: register {v.get('register')!r} is not in the map")
        vals.append({"name": v["name"], "register": v["register"],
                     "value": parse_int(v.get("value"), f"value {v['name']}"), "doc": v.get("doc", "")})
    if wire is not None:
        for e in wire["errors"][1:]:
            if f"malformed_{e['name']}" not in counters:
                raise FormatError(f"counters: no malformed_{e['name']} for the wire error "
                                  f"{e['name']} ({WIRE_SOURCE})")
        for d in drops_of(wire, "fpga"):
            if f"dropped_{d['name']}" not in counters:
                raise FormatError(f"counters: no dropped_{d['name']} for the FPGA drop reason "
                                  f"{d['name']} ({WIRE_SOURCE})")
        known = {f"malformed_{e['name']}" for e in wire["errors"][1:]} | \
                {f"dropped_{d['name']}" for d in drops_of(wire, "fpga")}
        for c in counters:
            if (c.startswith("malformed_") or c.startswith("dropped_")) and c not in known:
                raise FormatError(f"counter {c}: no such wire error or FPGA drop reason in "
                                  f"{WIRE_SOURCE}")
    params = []
    for i, prm in enumerate(raw.get("parameters", [])):
        name = prm.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise FormatError(f"parameters[{i}]: name must match {NAME.pattern}")
        if any(q["name"] == name for q in params):
            raise FormatError(f"parameter {name}: name used twice")
        params.append({"name": name, "default": parse_int(prm.get("default"), f"parameter {name}"),
                       "doc": str(prm.get("doc", ""))})
    return {"addr_bits": addr_bits, "registers": registers, "counters": counters, "values": vals,
            "params": params, "raw": raw}


def render_csr_hpp(m):
    out = []
    w = out.append
    out += banner("// ", CSR_SOURCE)
    out += comment(m["raw"].get("description", ""), "// ")
    w("#pragma once")
    w("")
    for inc in ("array", "cstddef", "cstdint", "string_view"):
        w(f"#include <{inc}>")
    w("")
    w("namespace netagg::fpga::csr {")
    w("")
    w(f"inline constexpr unsigned kAddrBits = {m['addr_bits']};  // AXI4-Lite byte address width")
    w("")
    w("// Register byte offsets.")
    for r in m["registers"]:
        out += comment(f"{r['access']}: {r['description']}", "// ")
        w(f"inline constexpr std::uint32_t k{camel(r['name'])} = 0x{r['offset']:03X};")
    w("")
    w("// Reset values other than 0.")
    for r in m["registers"]:
        if r["has_reset"]:
            w(f"inline constexpr std::uint32_t k{camel(r['name'])}Reset = {r['reset']};")
    w("")
    w("// Values of register fields (commands, bits).")
    for v in m["values"]:
        w(f"inline constexpr std::uint32_t k{camel(v['name'])} = {hexval(v['value'], 8)};  "
          f"// {v['register']}: {one_line(v['doc'])}")
    w("")
    w("enum class Access : std::uint8_t { kReadOnly, kReadWrite, kWriteOnly };")
    w("")
    w("struct Register {")
    w("  std::string_view name;  // as in the JSON, e.g. \"AGG_MAC_LO\"")
    w("  std::uint32_t offset;")
    w("  Access access;")
    w("  std::uint32_t reset;")
    w("};")
    w("")
    w(f"inline constexpr std::size_t kRegisterCount = {len(m['registers'])};")
    w("inline constexpr std::array<Register, kRegisterCount> kRegisters = {{")
    for r in m["registers"]:
        reset = f"k{camel(r['name'])}Reset" if r["has_reset"] else "0"
        w(f"    {{\"{r['name']}\", k{camel(r['name'])}, Access::{ACCESS[r['access']]}, {reset}}},")
    w("}};")
    w("")
    w("// Counters, read through COUNTER_INDEX / COUNTER_LO / COUNTER_HI. 64 bits each.")
    w("enum class Counter : std::uint32_t {")
    for i, c in enumerate(m["counters"]):
        w(f"  k{camel(c)} = {i},")
    w("};")
    w(f"inline constexpr std::size_t kCounterCount = {len(m['counters'])};")
    w("inline constexpr std::array<std::string_view, kCounterCount> kCounterNames = {")
    for c in m["counters"]:
        w(f"    {cpp_string(c)},")
    w("};")
    w("")
    w("constexpr std::uint32_t index(Counter c) { return static_cast<std::uint32_t>(c); }")
    w("constexpr std::string_view name(Counter c) { return kCounterNames[index(c)]; }")
    w("")
    w("// The design's parameters as built by default (docs/fpga-aggregator.md, \"Parameters\").")
    for prm in m["params"]:
        w(f"constexpr int kDefault{camel(prm['name'])} = {prm['default']};  // {prm['doc']}")
    w("")
    w("}  // namespace netagg::fpga::csr")
    return "\n".join(out) + "\n"


def render_csr_hls(m):
    out = []
    w = out.append
    out += banner("// ", CSR_SOURCE)
    out += comment("The CSR map as the HLS kernel sees it: C++14 (Vitis HLS compiles kernels as "
                   "C++14), with the s_axilite pragmas of the top function's register ports.", "// ")
    w("#ifndef NETAGG_HLS_CSR14_HPP")
    w("#define NETAGG_HLS_CSR14_HPP")
    w("")
    w("namespace netagg {")
    w("namespace fpga {")
    w("namespace csr14 {")
    w("")
    w(f"constexpr unsigned kAddrBits = {m['addr_bits']};")
    w("")
    w("// The design's parameters as built by default (docs/fpga-aggregator.md, \"Parameters\").")
    for prm in m["params"]:
        w(f"constexpr int kDefault{camel(prm['name'])} = {prm['default']};  // {prm['doc']}")
    w("")
    w("// Register byte offsets.")
    for r in m["registers"]:
        w(f"constexpr unsigned k{camel(r['name'])} = 0x{r['offset']:03X};")
    w("")
    for r in m["registers"]:
        if r["has_reset"]:
            w(f"constexpr unsigned k{camel(r['name'])}Reset = {r['reset']};")
    w("")
    w("// Values of register fields (commands, bits).")
    for v in m["values"]:
        w(f"constexpr unsigned k{camel(v['name'])} = {hexval(v['value'], 8)}u;  // {v['register']}")
    w("")
    w("// Counter indices (COUNTER_INDEX).")
    w("enum Counter {")
    out.extend(pack([f"k{camel(m['counters'][0])} = 0,"] +
                    [f"k{camel(c)}," for c in m["counters"][1:]] + ["kCounterCount"], "  "))
    w("};")
    w("")
    w("}  // namespace csr14")
    w("}  // namespace fpga")
    w("}  // namespace netagg")
    w("")
    w("// The s_axilite pragmas of the top's register ports, one per register, port names in lower")
    w("// case. Vitis reserves 0x00-0x0F of the bundle for its own control registers, so CONTROL and")
    w("// the read-only registers (Vitis adds an _ap_vld register after each output) are placed by")
    w("// Vitis: read their offsets from the generated xnetagg_aggregator_hw.h.")
    w("#define NETAGG_HLS_PRAGMA(x) _Pragma(#x)")
    lines = []
    for r in m["registers"]:
        port = r["name"].lower()
        if r["offset"] < 0x10 or r["access"] == "ro":
            lines.append(f"  NETAGG_HLS_PRAGMA(HLS INTERFACE s_axilite port = {port} bundle = control)")
        else:
            lines.append(f"  NETAGG_HLS_PRAGMA(HLS INTERFACE s_axilite port = {port} "
                         f"offset = 0x{r['offset']:03X} bundle = control)")
    w("#define NETAGG_HLS_CSR_INTERFACE \\")
    w(" \\\n".join(lines))
    w("")
    # The top's register ports, and the structs that carry them into the model: the read-write
    # registers are inputs, the read-only ones outputs (pointers), each in map order.
    inputs = [r["name"].lower() for r in m["registers"] if r["access"] != "ro"]
    outputs = [r["name"].lower() for r in m["registers"] if r["access"] == "ro"]
    w("// The top's register ports: the read-write registers as inputs, the read-only ones as")
    w("// outputs, in map order.")
    w("#define NETAGG_HLS_CSR_PORTS \\")
    w(" \\\n".join(pack([f"uint32_t {n}," for n in inputs] +
                        [f"uint32_t* {n}," for n in outputs[:-1]] + [f"uint32_t* {outputs[-1]}"],
                        "  ", 97)))
    w("// The input registers' names: CsrInputs's fields, and its initializer from the ports.")
    w("#define NETAGG_HLS_CSR_INPUT_FIELDS \\")
    w(" \\\n".join(pack([f"{n}," for n in inputs[:-1]] + [inputs[-1]], "  ", 97)))
    w("// The output registers' names: CsrOutputs's fields.")
    w("#define NETAGG_HLS_CSR_OUTPUT_FIELDS \\")
    w(" \\\n".join(pack([f"{n}," for n in outputs[:-1]] + [outputs[-1]], "  ", 97)))
    w("// Stores a CsrOutputs into the top's output ports.")
    w("#define NETAGG_HLS_CSR_STORE_OUTPUTS(out) \\")
    w(" \\\n".join(pack([f"*{n} = (out).{n};" for n in outputs], "  ", 97)))
    w("")
    w("#endif  // NETAGG_HLS_CSR14_HPP")
    return "\n".join(out) + "\n"


def render_sv_params(m):
    """The design parameters' defaults, a region of netagg_pkg.sv."""
    width = max(len(p["name"]) for p in m["params"]) + len("_DEFAULT")
    out = []
    for p in m["params"]:
        name = f"{p['name'].upper()}_DEFAULT"
        value = f"{p['default']};"
        out.append(f"  localparam int unsigned {name:<{width}} = {value:<4} // {p['doc']}")
    return out


def render_csr_sv(m):
    out = []
    w = out.append
    out += banner("// ", CSR_SOURCE)
    out += comment(m["raw"].get("description", ""), "// ")
    w("//")
    w("//  offset  access  register")
    for r in m["registers"]:
        w(f"//  0x{r['offset']:03X}   {r['access']:<6}  {r['name']}")
    w("")
    w("`default_nettype none")
    w("")
    w("package netagg_csr_pkg;")
    w("")
    w("  // A design uses some of these constants, never all of them.")
    w("  /* verilator lint_off UNUSEDPARAM */")
    w("")
    w(f"  localparam int unsigned CSR_ADDR_BITS = {m['addr_bits']};")
    w("  typedef logic [CSR_ADDR_BITS-1:0] csr_addr_t;")
    w("")
    w("  // Register byte offsets.")
    for r in m["registers"]:
        out += comment(f"{r['access']}: {r['description']}", "  // ")
        w(f"  localparam logic [CSR_ADDR_BITS-1:0] CSR_{r['name']} = "
          f"{m['addr_bits']}'h{r['offset']:03X};")
    w("")
    w("  // Reset values other than 0.")
    for r in m["registers"]:
        if r["has_reset"]:
            w(f"  localparam logic [31:0] CSR_{r['name']}_RESET = 32'd{r['reset']};")
    w("")
    w("  // Values of register fields (commands, bits).")
    for v in m["values"]:
        w(f"  localparam logic [31:0] {upper(v['name'])} = 32'h{v['value']:08X};  // {v['register']}")
    w("")
    w("  // Counter indices (COUNTER_INDEX), 64-bit counters.")
    count_bits = max(1, (len(m["counters"]) - 1).bit_length())
    w(f"  localparam int unsigned NUM_COUNTERS = {len(m['counters'])};")
    w(f"  localparam int unsigned COUNTER_INDEX_BITS = {count_bits};")
    cw = max(len(c) for c in m["counters"])
    for i, c in enumerate(m["counters"]):
        w(f"  localparam int unsigned CNT_{c.upper()}{' ' * (cw - len(c))} = {i};")
    w("")
    w("  /* verilator lint_on UNUSEDPARAM */")
    w("")
    w("endpackage")
    w("")
    w("`default_nettype wire")
    return "\n".join(out) + "\n"


# ---- outputs ----------------------------------------------------------------------------------

def region_marker(style, word, key, source):
    text = f"{word} GENERATED [{key}]"
    if word == "BEGIN":
        text += f" from {source} by {GENERATOR}; do not edit"
    return f"<!-- {text} -->" if style == "md" else f"// {text}"


def outputs(wire, csr):
    """(path, kind, text or lines, source) for every view. kind: file | region:<style>:<key>."""
    out = [
        ("host/include/netagg/wire_format.hpp", "file", render_cpp_wire(wire), WIRE_SOURCE),
        ("p4/common/switch_format.hpp", "file", render_cpp_switch(wire), WIRE_SOURCE),
        ("p4/common/headers.p4", "file", render_p4_headers(wire), WIRE_SOURCE),
        ("p4/common/constants.p4", "file", render_p4_constants(wire), WIRE_SOURCE),
        ("formats/wireshark/netagg.lua", "file", render_lua(wire), WIRE_SOURCE),
        ("hls/include/netagg_hls/frame.hpp", "region:cpp:layout",
         ["// clang-format off"] + render_hls_layout(wire) + ["// clang-format on"], WIRE_SOURCE),
        ("hw/rtl/netagg_pkg.sv", "region:cpp:wire", render_sv_wire(wire), WIRE_SOURCE),
        ("docs/wire-format.md", "region:md:header", render_doc_header(wire), WIRE_SOURCE),
        ("docs/wire-format.md", "region:md:errors", render_doc_errors(wire), WIRE_SOURCE),
        ("docs/wire-format.md", "region:md:drops", render_doc_drops(wire), WIRE_SOURCE),
    ]
    if csr is not None:
        out += [
            ("driver/fpga/include/netagg/fpga_csr.hpp", "file", render_csr_hpp(csr), CSR_SOURCE),
            ("hls/include/netagg_hls/csr14.hpp", "file", render_csr_hls(csr), CSR_SOURCE),
            ("hw/rtl/netagg_csr_pkg.sv", "file", render_csr_sv(csr), CSR_SOURCE),
            ("hw/rtl/netagg_pkg.sv", "region:cpp:params", render_sv_params(csr), CSR_SOURCE),
        ]
    return out


def apply_region(text, path, style, key, lines, source):
    """Replaces the lines between the BEGIN and END marker lines of region `key`."""
    begin = re.compile(r"^([ \t]*).*\bBEGIN GENERATED \[" + re.escape(key) + r"\].*$", re.M)
    end = re.compile(r"^[ \t]*.*\bEND GENERATED \[" + re.escape(key) + r"\].*$", re.M)
    b = list(begin.finditer(text))
    e = [m for m in end.finditer(text) if "BEGIN GENERATED" not in m.group(0)]
    if len(b) != 1 or len(e) != 1 or e[0].start() < b[0].end():
        raise FormatError(f"{path}: expected one \"BEGIN GENERATED [{key}]\" line followed by one "
                          f"\"END GENERATED [{key}]\" line (found {len(b)} and {len(e)})")
    indent = b[0].group(1)
    body = "\n".join(lines)
    return (text[:b[0].start()] + indent + region_marker(style, "BEGIN", key, source) + "\n" +
            body + "\n" + indent + region_marker(style, "END", key, source) + text[e[0].end():])


def render_all(root, wire_path, csr_path):
    wire = load_wire(wire_path)
    csr = load_csr(csr_path, wire) if csr_path else None
    files = {}
    for rel, kind, content, source in outputs(wire, csr):
        path = os.path.join(root, rel)
        if kind == "file":
            files[rel] = content
            continue
        _, style, key = kind.split(":")
        if rel not in files:
            try:
                with open(path, encoding="utf-8") as f:
                    files[rel] = f.read()
            except OSError as e:
                raise FormatError(f"{rel}: cannot read the file that holds region [{key}]: {e}")
        files[rel] = apply_region(files[rel], rel, style, key, content, source)
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.dirname(here), help="the source tree")
    parser.add_argument("--wire", help=f"the wire description (default ROOT/{WIRE_SOURCE})")
    parser.add_argument("--csr", help=f"the CSR map (default ROOT/{CSR_SOURCE})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming every view that is out of date")
    parser.add_argument("--diff", action="store_true", help="with --check: show the differences")
    args = parser.parse_args()
    wire_path = args.wire or os.path.join(args.root, WIRE_SOURCE)
    csr_path = args.csr or os.path.join(args.root, CSR_SOURCE)
    try:
        files = render_all(args.root, wire_path, csr_path)
    except FormatError as e:
        print(f"gen_formats.py: {e}", file=sys.stderr)
        return 2
    stale = []
    for rel, text in files.items():
        path = os.path.join(args.root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except OSError:
            old = None
        if old == text:
            continue
        stale.append(rel)
        if args.check:
            if args.diff and old is not None:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), rel, rel + " (generated)"))
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    if args.check:
        if stale:
            print("gen_formats.py: out of date (run `python3 scripts/gen_formats.py`): " +
                  ", ".join(stale), file=sys.stderr)
            return 1
        print(f"gen_formats.py: {len(files)} views up to date")
        return 0
    print(f"gen_formats.py: wrote {len(stale)} of {len(files)} views" +
          (": " + ", ".join(stale) if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

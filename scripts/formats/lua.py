# SPDX-License-Identifier: Apache-2.0
"""Wireshark (Lua): formats/wireshark/netagg.lua."""

from .common import WIRE_SOURCE, FormatError, banner, comment, hexval, one_line

# The element fields of the dtypes Wireshark has a field type for; any other dtype's elements are
# shown as bytes.
ELEMENT_FIELDS = {
    "int32": 'ProtoField.int32("netagg.int32", "element")',
    "fp32": 'ProtoField.float("netagg.fp32", "element")',
    "bf16": 'ProtoField.uint16("netagg.bf16", "element (bf16 bits)", base.HEX)',
    "fp32_exact": 'ProtoField.float("netagg.fp32_exact", "element")',
    "exact_lanes": 'ProtoField.int64("netagg.exact_lanes", "element (lane)")',
}


def lua_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def notice_layout(w):
    """(msg_type notice, dtype int32, notice_reason duplicate) when the format has notices."""
    types = {v["name"]: v["value"] for v in w["enums"]["msg_type"]["values"]}
    if "notice" not in types or "notice_reason" not in w["enums"]:
        return None
    dtypes = {v["name"]: v["value"] for v in w["enums"]["dtype"]["values"]}
    reasons = {v["name"]: v["value"] for v in w["enums"]["notice_reason"]["values"]}
    return types["notice"], dtypes["int32"], reasons["duplicate"]


def render_lua(w):
    na = w["headers"]["netagg"]
    hdr = na["bytes"]
    fields = {x["name"]: x for x in na["fields"]}
    # A packet's length is its header and count elements of its dtype's size: the dtype must be
    # checked (a known dtype) before the length can be.
    if fields["dtype"].get("check_kind") != "in_enum":
        raise FormatError("header netagg: the Wireshark dissector needs an in_enum check on dtype "
                          "(a packet's length depends on its element size)")
    dtypes = w["enums"]["dtype"]["values"]
    # Each dtype's elements are the field netagg.<dtype>, beside the header's and netagg.error.
    taken = {fl["name"] for x in na["fields"] for fl in x["flags"]} | set(fields) | {"error"}
    for v in dtypes:
        if v["name"] in taken:
            raise FormatError(f"enum dtype {v['name']}: the Wireshark field netagg.{v['name']} "
                              "would be a header field's or a flag's too")
    set_flag = next((fl for fl in fields["flags"]["flags"] if fl["name"] == "set"), None)

    out = []
    a = out.append
    out += banner("-- ", WIRE_SOURCE)
    a("--")
    out += comment(
        "A Wireshark dissector for netagg: the header and payload of every packet in a UDP "
        "datagram. Load it with `wireshark -X lua_script:netagg.lua` (or `tshark -X "
        "lua_script:...`), or copy it into ~/.local/lib/wireshark/plugins/. It checks a packet "
        "as netagg's decoders do and shows the first reason it fails in netagg.error.", "-- ")
    a("--")
    out += comment(
        f"UDP port {w['udp_port']} (the aggregators') is netagg's; on any other port a heuristic "
        "takes a datagram that is one or more whole netagg packets, each header passing every "
        "check, and then the rest of its conversation. A datagram merged by UDP GSO (on send) "
        "or GRO (on receive) holds several packets back to back: each is a netagg tree of its "
        "own, and bytes after the last whole packet are one more with the error.", "-- ")
    a("")
    a('local netagg = Proto("netagg", "netagg in-network aggregation")')
    a("")
    for e in w["enums"].values():
        a(f"local {e['name']}_names = {{")
        for v in e["values"]:
            a(f"  [{v['value']}] = {lua_string(v['name'])},")
        a("}")
    a("local element_sizes = {")
    for v in dtypes:
        a(f"  [{v['value']}] = {v['size']},")
    a("}")
    a(f"local header_bytes = {hdr}")
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
    for v in dtypes:
        a(f"f.{v['name']} = " + ELEMENT_FIELDS.get(
            v["name"], f'ProtoField.bytes("netagg.{v["name"]}", "element ({v["name"]})")'))
    a("local element_fields = {")
    for v in dtypes:
        a(f"  [{v['value']}] = f.{v['name']},")
    a("}")
    notice = notice_layout(w)
    if notice is not None:
        a('f.notice_reason = ProtoField.uint32("netagg.notice_reason", "notice reason", base.DEC, '
          f'notice_reason_names, nil, {lua_string(one_line(w["enums"]["notice_reason"]["doc"]))})')
        a('f.notice_waiting = ProtoField.uint32("netagg.notice_waiting", '
          '"ranks the round waits for", base.HEX, nil, nil, '
          '"rank r at bit r % 32 of word 1 + r / 32")')
    a("")
    a("local checks = {")
    for name in na["check_order"]:
        fld = fields[name]
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
    a("-- The header's fields at byte `at` of the datagram.")
    a("local function read_header(buffer, at)")
    a("  return {")
    for fld in na["fields"]:
        off, n = fld["bit_offset"] // 8, fld["bits"] // 8
        getter = "int" if fld["signed"] else "uint"
        a(f"    {fld['name']} = buffer(at + {off}, {n}):{getter}(),")
    a("  }")
    a("end")
    a("")
    out += comment(
        "The datagram cut into packets, in order: each part's offset, length, header and, for "
        "what is not a whole packet, the error. A part that fails ends the list: without a "
        "valid header nothing tells where a next packet would start.", "-- ")
    a("local function split(buffer)")
    a("  local length = buffer:len()")
    a("  local parts = {}")
    a("  local at = 0")
    a("  while at < length do")
    a("    local rest = length - at")
    a("    if rest < header_bytes then")
    a("      -- Bytes after a whole packet, too few for a header: that packet is longer than its")
    a("      -- count says, as a decoder that takes one packet a datagram sees it.")
    a('      local err = #parts == 0 and "truncated" or "length_mismatch"')
    a("      parts[#parts + 1] = { at = at, len = rest, err = err }")
    a("      break")
    a("    end")
    a("    local raw = read_header(buffer, at)")
    a("    local err = nil")
    a("    for _, c in ipairs(checks) do")
    a("      if not c.ok(raw[c.field]) then")
    a("        err = c.error")
    a("        break")
    a("      end")
    a("    end")
    a("    local size = nil")
    a("    if err == nil then")
    a("      size = header_bytes + raw.count * element_sizes[raw.dtype]")
    a("      if size > rest then")
    a('        err = "length_mismatch"')
    a("      end")
    a("    end")
    a("    if err ~= nil then")
    a("      parts[#parts + 1] = { at = at, len = rest, raw = raw, err = err }")
    a("      break")
    a("    end")
    a("    parts[#parts + 1] = { at = at, len = size, raw = raw }")
    a("    at = at + size")
    a("  end")
    a("  return parts")
    a("end")
    a("")
    a("local function summary(raw)")
    if set_flag is not None:
        a('  return string.format("%s job %d rank %d slot %d set %d seq %d count %d %s",')
        a("    msg_type_names[raw.type], raw.job_id, raw.rank, raw.slot,")
        flag = f"bit.band(raw.flags, {1 << set_flag['bit']})"
        if set_flag["bit"]:
            flag = f"bit.rshift({flag}, {set_flag['bit']})"
        a(f"    {flag}, raw.seq, raw.count,")
        a("    dtype_names[raw.dtype])")
    else:
        a('  return string.format("%s job %d rank %d slot %d seq %d count %d %s",')
        a("    msg_type_names[raw.type], raw.job_id, raw.rank, raw.slot, raw.seq, raw.count,")
        a("    dtype_names[raw.dtype])")
    a("end")
    a("")
    out += comment("One part: a netagg tree with the fields of its header (when it has one), "
                   "the payload of a whole packet, or the error.", "-- ")
    a("local function dissect_part(buffer, tree, part)")
    a("  local root = tree:add(netagg, buffer(part.at, math.min(part.len, header_bytes)))")
    a("  if part.raw ~= nil then")
    a("    local at = part.at")
    for fld in na["fields"]:
        off, n = fld["bit_offset"] // 8, fld["bits"] // 8
        if fld["flags"]:
            a(f"    local item_{fld['name']} = root:add(f.{fld['name']}, buffer(at + {off}, {n}))")
            for fl in fld["flags"]:
                a(f"    item_{fld['name']}:add(f.{fld['name']}_{fl['name']}, "
                  f"buffer(at + {off}, {n}))")
        else:
            a(f"    root:add(f.{fld['name']}, buffer(at + {off}, {n}))")
    a("  end")
    a("  if part.err ~= nil then")
    a("    root:add(f.error, part.err)")
    a("    return root")
    a("  end")
    a("  local raw = part.raw")
    a("  if raw.count > 0 then")
    a("    local size = element_sizes[raw.dtype]")
    a("    local field = element_fields[raw.dtype]")
    a("    local payload = root:add(buffer(part.at + header_bytes, raw.count * size),")
    a('      string.format("payload: %d %s elements", raw.count, dtype_names[raw.dtype]))')
    a("    for i = 0, raw.count - 1 do")
    a("      payload:add(field, buffer(part.at + header_bytes + i * size, size))")
    a("    end")
    a("  end")
    if notice is not None:
        notice_type, int32, duplicate = notice
        a("  -- A notice: word 0 its reason, the words after a duplicate's the ranks it waits for.")
        a(f"  if raw.type == {notice_type} and raw.dtype == {int32} and raw.count > 0 then")
        a("    local words = buffer(part.at + header_bytes, 4 * raw.count)")
        a("    root:add(f.notice_reason, words(0, 4))")
        a(f"    if words(0, 4):uint() == {duplicate} then")
        a("      for i = 1, raw.count - 1 do")
        a("        root:add(f.notice_waiting, words(4 * i, 4))")
        a("      end")
        a("    end")
        a('    root:append_text(", " .. (notice_reason_names[words(0, 4):uint()] or "unknown reason"))')
        a("  end")
    a("  return root")
    a("end")
    a("")
    a("local function dissect(buffer, pinfo, tree, parts)")
    a("  pinfo.cols.protocol = netagg.name")
    a("  local whole = #parts")
    a("  local last = parts[#parts]")
    a("  if last.err ~= nil then")
    a("    whole = whole - 1")
    a("  end")
    a("  for i, part in ipairs(parts) do")
    a("    local root = dissect_part(buffer, tree, part)")
    a("    if #parts > 1 then")
    a("      if part.err == nil then")
    a('        root:append_text(string.format(", packet %d of %d", i, whole))')
    a("      else")
    a('        root:append_text(string.format(", %d bytes after packet %d", part.len, whole))')
    a("      end")
    a("    end")
    a("  end")
    a("  if whole == 0 then")
    a('    pinfo.cols.info = "netagg " .. last.err')
    a("  else")
    a('    local info = "netagg " .. summary(parts[1].raw)')
    a("    if whole > 1 then")
    a('      info = string.format("netagg %d packets, first: %s", whole, summary(parts[1].raw))')
    a("    end")
    a("    if last.err ~= nil then")
    a('      info = info .. string.format("; %d bytes more: %s", last.len, last.err)')
    a("    end")
    a("    pinfo.cols.info = info")
    a("  end")
    a("  return buffer:len()")
    a("end")
    a("")
    a("function netagg.dissector(buffer, pinfo, tree)")
    a("  if buffer:len() == 0 then")
    a("    return 0")
    a("  end")
    a("  return dissect(buffer, pinfo, tree, split(buffer))")
    a("end")
    a("")
    a("-- netagg on any other port: strict, so that DNS and the like stay theirs.")
    a("local function heuristic(buffer, pinfo, tree)")
    a("  if buffer:len() < header_bytes then")
    a("    return false")
    a("  end")
    a("  local parts = split(buffer)")
    a("  if parts[#parts].err ~= nil then")
    a("    return false")
    a("  end")
    a("  pinfo.conversation = netagg")
    a("  dissect(buffer, pinfo, tree, parts)")
    a("  return true")
    a("end")
    a("")
    a(f'DissectorTable.get("udp.port"):add({w["udp_port"]}, netagg)')
    a('netagg:register_heuristic("udp", heuristic)')
    return "\n".join(out) + "\n"

# SPDX-License-Identifier: Apache-2.0
"""Wireshark (Lua): formats/wireshark/netagg.lua."""

from .common import WIRE_SOURCE, banner, hexval, one_line


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

# SPDX-License-Identifier: Apache-2.0
"""The two descriptions read and checked: formats/wire.json and formats/csr.json."""

import json

from .common import (
    FormatError, NAME, REGISTER_NAME, WIRE_SOURCE, drops_of, parse_int, require, unique_names)


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
    drop_names = {d["name"] for d in w["drops"]}
    for v in w["enums"].get("notice_reason", {"values": []})["values"]:
        if v["name"] not in drop_names:
            raise FormatError(f"enum notice_reason {v['name']}: not the name of a drop")
    interval = consts.get("notice_interval", {"value": 1})["value"]
    if interval < 1 or interval & (interval - 1):
        raise FormatError(f"constants notice_interval: {interval} is not a power of two")

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

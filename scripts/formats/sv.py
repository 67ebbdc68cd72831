# SPDX-License-Identifier: Apache-2.0
"""SystemVerilog: the wire region of hw/rtl/netagg_pkg.sv."""

from .common import aligned, container, header_table, one_line, upper


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

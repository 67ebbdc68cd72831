# SPDX-License-Identifier: Apache-2.0
"""HLS C++ (C++14): the wire layout region of hls/include/netagg_hls/frame.hpp."""

from .common import aligned, camel, container, hexval, num, one_line


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

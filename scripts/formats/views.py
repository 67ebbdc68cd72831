# SPDX-License-Identifier: Apache-2.0
"""Every view: which renderer writes which file or region, and the regions spliced into
hand-written files."""

import os
import re

from .common import CSR_SOURCE, FormatError, GENERATOR, WIRE_SOURCE
from .load import load_csr, load_wire
from .cpp_host import render_cpp_wire
from .switch_cpp import render_cpp_switch
from .hls import render_hls_layout
from .sv import render_sv_wire
from .p4 import render_p4_constants, render_p4_headers
from .lua import render_lua
from .docs import render_doc_drops, render_doc_errors, render_doc_header, render_doc_notices
from .csr import render_csr_hls, render_csr_hpp, render_csr_sv, render_sv_params


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
        ("docs/wire-format.md", "region:md:notices", render_doc_notices(wire), WIRE_SOURCE),
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

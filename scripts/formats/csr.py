# SPDX-License-Identifier: Apache-2.0
"""The CSR map's views: the driver's C++, the HLS C++14 header, the RTL package and the
design parameters' region of hw/rtl/netagg_pkg.sv."""

from .common import CSR_SOURCE, banner, camel, comment, cpp_string, hexval, one_line, pack, upper
from .load import ACCESS


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

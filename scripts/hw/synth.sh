#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Synthesis check of the RTL with yosys for Xilinx UltraScale+ (`synth_xilinx -family xcup`):
# fails on a latch and on any SystemVerilog yosys 0.23 misreads (a name it would declare
# implicitly, a struct member it turns into a new wire); prints LUT/FF/DSP/BRAM/URAM counts and
# the logic depth between registers; writes them into docs/hardware.md between the
# synth-results markers (one row per top and parameter set, re-runs replace their row).
#
# Usage: scripts/hw/synth.sh [--top MODULE] [-P NAME=VALUE]... [--hier] [--no-doc] [--keep DIR]
#                            [--max-levels N] [--paths N]
#   --top      top module (default netagg_fp32_add)
#   -P         override a parameter of the top
#   --hier     keep the hierarchy: each distinct module (and parameter set) is synthesized and
#              mapped once, the counts are the hierarchy's totals (instances multiplied), the
#              logic depth is measured on the mapped netlist flattened afterwards. What the
#              full aggregator needs (flattened, yosys does not finish it in 15 min / 14 GB)
#   --no-doc   do not touch docs/hardware.md (what the CTest does)
#   --keep     keep the yosys log, statistics and netlist in DIR
#   --max-levels  fail (exit 3) when a path has more than N LUT levels, listing those paths
#                 (the budgets in hw/rtl/depth_budgets.txt, checked by the synth_depth CTests)
#   --paths    list the register-to-register paths of N or more LUT levels
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
top=netagg_fp32_add
params=()
write_doc=1
keep=""
hier=0
max_levels=""
paths=""

while [ $# -gt 0 ]; do
  case "$1" in
    --top) top=$2; shift 2 ;;
    -P) params+=("$2"); shift 2 ;;
    --hier) hier=1; shift ;;
    --no-doc) write_doc=0; shift ;;
    --keep) keep=$2; shift 2 ;;
    --max-levels) max_levels=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "synth: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v yosys >/dev/null || { echo "synth: yosys not found (scripts/install-deps.sh)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=()
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%%#*}
  line=$(echo "$line" | xargs)
  [ -z "$line" ] && continue
  [ -f "$root/hw/rtl/$line" ] || { echo "synth: hw/rtl/files.txt names missing $line" >&2; exit 1; }
  files+=("$root/hw/rtl/$line")
done < "$root/hw/rtl/files.txt"

chparams=""
for p in "${params[@]}"; do
  chparams+="chparam -set ${p%%=*} ${p#*=} $top; "
done

# -noautowire: an undeclared name is an error instead of a new 1-bit wire. The -e patterns turn
# the warnings yosys gives when it misreads SystemVerilog into errors.
# Flat: one netlist optimized as a whole. Hierarchical: every module mapped on its own (no
# optimization across module boundaries), the statistics summed over the instance tree
# (`stat -top`), the mapped netlist flattened only to measure the logic depth across modules.
if [ $hier -eq 1 ]; then
  flatten_opt=""
  stat_cmd="tee -q -o $tmp/stat.txt stat -top $top; flatten; write_json $tmp/netlist.json"
else
  flatten_opt="-flatten"
  stat_cmd="tee -q -o $tmp/stat.txt stat; write_json $tmp/netlist.json"
fi
script="read_verilog -sv -noautowire ${files[*]}; ${chparams}
hierarchy -check -top $top; proc;
select -assert-none t:\$dlatch t:\$adlatch t:\$dlatchsr t:\$_DLATCH_* t:\$_DLATCHSR_*;
synth_xilinx -family xcup -noiopad $flatten_opt -top $top;
select -assert-none t:LDCE t:LDPE t:LDCE_1 t:LDPE_1;
$stat_cmd"
if ! yosys -q -l "$tmp/yosys.log" \
    -e 'is implicitly declared|is assigned in a block|conflicting drivers|Detected logic loop' \
    -p "$script" > /dev/null 2>&1; then
  grep -E 'ERROR|Assertion failed|selection' "$tmp/yosys.log" | head -20 >&2 || true
  echo "synth: yosys failed on $top (log: ${keep:-use --keep DIR to keep it})" >&2
  [ -n "$keep" ] && mkdir -p "$keep" && cp "$tmp"/yosys.log "$keep"/
  exit 1
fi
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  cp "$tmp"/yosys.log "$tmp"/stat.txt "$tmp"/netlist.json "$keep"/
fi

version=$(yosys -V | awk '{print $2}')
param_text=${params[*]:-defaults}
[ $hier -eq 1 ] && param_text+=" (hierarchical)"
doc=""
[ $write_doc -eq 1 ] && doc="$root/docs/hardware.md"

python3 - "$tmp/stat.txt" "$tmp/netlist.json" "$top" "$param_text" "$version" "$doc" \
    "$max_levels" "$paths" <<'PY'
import json, re, sys

stat_path, netlist_path, top, params, version, doc, max_levels, list_from = sys.argv[1:9]

# Flat: one module. Hierarchical: only the "design hierarchy" section (instances multiplied),
# after its list of module instance counts.
lines = open(stat_path).read().splitlines()
if any(l.startswith("=== design hierarchy ===") for l in lines):
    at = next(i for i, l in enumerate(lines) if l.startswith("=== design hierarchy ==="))
    lines = lines[at:]
    at = next(i for i, l in enumerate(lines) if "Number of wires" in l)
    lines = lines[at:]
cells = {}
for line in lines:
    m = re.match(r"^\s+(\S+)\s+(\d+)\s*$", line)
    if m:
        cells[m.group(1)] = cells.get(m.group(1), 0) + int(m.group(2))

def count(names, weights=None):
    return sum(cells.get(n, 0) * (weights or {}).get(n, 1) for n in names)

lut_cells = ["LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "LUT6_2", "INV"]
lutram_weights = {"RAM16X1S": 1, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
                  "RAM16X1D": 2, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM32M": 4,
                  "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "SRL16E": 1, "SRLC16E": 1,
                  "SRLC32E": 1}
ff_cells = ["FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "FDSE_1", "FDCE_1", "FDPE_1"]
row = {
    "LUT": count(lut_cells),
    "LUTRAM/SRL": count(lutram_weights, lutram_weights),
    "FF": count(ff_cells),
    "CARRY": count(["CARRY4", "CARRY8"]),
    "DSP": count(["DSP48E2", "DSP48E1"]),
    "BRAM36": count(["RAMB36E2", "RAMB36E1", "FIFO36E2"]) + 0.5 * count(["RAMB18E2", "RAMB18E1", "FIFO18E2"]),
    "URAM": count(["URAM288"]),
}

# Logic depth: the most LUTs, and separately the most carry cells, on any path between
# registers, memories, DSPs or ports. (MUXF7/8/9 sit behind the LUTs in the same slice and are
# not counted.)
netlist = json.load(open(netlist_path))
module = netlist["modules"][top]
combinational = lambda t: t.startswith(("LUT", "INV", "MUXF", "CARRY"))
driver = {}
for name, cell in module["cells"].items():
    for port, bits in cell["connections"].items():
        if cell.get("port_directions", {}).get(port) == "output":
            for b in bits:
                if isinstance(b, int):
                    driver[b] = cell

# Every path ends at an input of a register, memory or DSP (named by the net the cell drives,
# usually the register's name) or at an output port.
ends = []
for cell in module["cells"].values():
    if not combinational(cell["type"]):
        outs = [b for p, bits in cell["connections"].items()
                if cell.get("port_directions", {}).get(p) == "output" for b in bits]
        ends += [(b, outs[0] if outs else None) for p, bits in cell["connections"].items()
                 if cell.get("port_directions", {}).get(p) == "input" for b in bits]
for name, port in module["ports"].items():
    if port["direction"] == "output":
        ends += [(b, name) for b in port["bits"]]

sys.setrecursionlimit(100000)
def longest(weight):
    memo = {}  # bit -> (depth, the input bit the deepest path comes through)
    def depth(bit):
        if not isinstance(bit, int):
            return (0, None)
        if bit in memo:
            return memo[bit]
        memo[bit] = (0, None)  # breaks a combinational loop instead of recursing forever
        cell = driver.get(bit)
        best = (0, None)
        if cell is not None and combinational(cell["type"]):
            ins = [b for p, bits in cell["connections"].items()
                   if cell["port_directions"].get(p) == "input" for b in bits]
            deepest = max(((depth(b)[0], b) for b in ins if isinstance(b, int)), default=(0, None))
            best = (weight(cell["type"]) + deepest[0], deepest[1])
        memo[bit] = best
        return best
    return max((depth(b)[0] for b, _ in ends), default=0), depth

row["LUT levels"], lut_depth = longest(lambda t: 1 if t.startswith(("LUT", "INV")) else 0)
row["carry cells"], _ = longest(lambda t: 1 if t.startswith("CARRY") else 0)

# Paths by their start (a register's output or an input port) and end, indices dropped (and the
# numbers of yosys' generated names): one line per pair of vectors, with its deepest path and how
# many bits reach that far.
def list_paths(at_least):
    names = {}
    for name, net in module["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if not isinstance(b, int):
                continue
            generated = name.startswith("$")
            old = names.get(b)
            if old is None or (old[0] and not generated) or (old[0] == generated and
                                                            len(name) < len(old[1])):
                names[b] = (generated, name)
    def vector(b):
        if b not in names:
            return "a net without a name"
        generated, name = names[b]
        name = re.sub(r"\[\d+\]", "[]", name)
        return re.sub(r"\d+", "N", name) if generated else name
    groups = {}
    for b, q in ends:
        levels = lut_depth(b)[0]
        if levels < at_least:
            continue
        start = b
        while lut_depth(start)[1] is not None:
            start = lut_depth(start)[1]
        key = (vector(start), q if isinstance(q, str) else vector(q if q is not None else b))
        deepest, count = groups.get(key, (0, 0))
        groups[key] = (max(deepest, levels), count + 1)
    for (start, end), (levels, count) in sorted(groups.items(), key=lambda g: (-g[1][0], g[0])):
        print(f"  {levels:3d}  {start}  ->  {end}  ({count} bits)")

columns = ["LUT", "LUTRAM/SRL", "FF", "CARRY", "DSP", "BRAM36", "URAM", "LUT levels",
           "carry cells"]
fmt = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
print(f"synth: {top} ({params}), yosys {version}, synth_xilinx -family xcup:")
for c in columns:
    print(f"  {c:12} {fmt(row[c])}")
others = {k: v for k, v in sorted(cells.items())
          if k not in lut_cells + ff_cells + list(lutram_weights) and k not in
          ("CARRY4", "CARRY8", "DSP48E2", "RAMB36E2", "RAMB18E2", "URAM288")}
if others:
    print("  other cells: " + ", ".join(f"{k} {v}" for k, v in others.items()))
if list_from:
    print(f"synth: paths of {list_from} or more LUT levels (start -> end):")
    list_paths(int(list_from))
if max_levels and row["LUT levels"] > int(max_levels):
    print(f"synth: {top} ({params}) has {row['LUT levels']} LUT levels, its budget is "
          f"{max_levels}; the paths above it (start -> end):")
    list_paths(int(max_levels) + 1)
    sys.exit(3)

if doc:
    begin, end = "<!-- synth-results:begin -->", "<!-- synth-results:end -->"
    text = open(doc).read()
    if begin not in text or end not in text:
        sys.exit(f"synth: {doc} has no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    table, tail = rest.split(end, 1)
    header = "| top | parameters | " + " | ".join(columns) + " | yosys |"
    rule = "|" + "---|" * (len(columns) + 3)
    rows = {}
    for line in table.strip().splitlines():
        cellsv = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cellsv) == len(columns) + 3 and cellsv[0] not in ("top",) and not set(line) <= set("|-: "):
            rows[(cellsv[0], cellsv[1])] = line.strip()
    key = (f"`{top}`", params)
    rows[key] = "| " + " | ".join([key[0], params] + [fmt(row[c]) for c in columns] + [version]) + " |"
    new_table = "\n".join([header, rule] + [rows[k] for k in sorted(rows)])
    open(doc, "w").write(head + begin + "\n" + new_table + "\n" + end + tail)
    print(f"synth: wrote the row into {doc}")
PY

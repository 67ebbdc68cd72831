# SPDX-License-Identifier: Apache-2.0
"""docs: the generated tables of docs/wire-format.md."""

from .common import one_line


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


def render_doc_notices(w):
    out = ["| code | reason | what the worker learns |", "|---|---|---|"]
    for v in w["enums"]["notice_reason"]["values"]:
        out.append(f"| {v['value']} | `{v['name']}` | {one_line(v['doc'])} |")
    return out

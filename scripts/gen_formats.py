#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes every view of netagg's formats from their one description.

  formats/wire.json  the wire protocol: frame headers, the netagg header, enumerations, flags,
                     decoder errors, aggregator drop reasons, switch pipeline limits
  formats/csr.json   the FPGA aggregator's control/status registers and counters

Each output is either a whole file or a region of a hand-written file between a BEGIN and an
END marker line; the rest of such a file is left as it is. Outputs are checked in (p4c, Vitis
HLS, Vivado and Wireshark read them outside CMake), and `--check` fails naming every stale one.

The descriptions are read and checked, and each view rendered, by the package scripts/formats/
(one module per view; formats/views.py lists which writes what).

Usage:
  python3 scripts/gen_formats.py            rewrite every view that differs
  python3 scripts/gen_formats.py --check    exit 1 if any view differs (nothing is written)
  python3 scripts/gen_formats.py --wire F --csr F --root DIR   other inputs / output tree
"""

import argparse
import difflib
import os
import sys

# The renderers are the package formats/ beside this file; run from the source tree, they leave
# no bytecode in it.
sys.dont_write_bytecode = True

from formats.common import CSR_SOURCE, FormatError, WIRE_SOURCE  # noqa: E402
from formats.views import render_all  # noqa: E402


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

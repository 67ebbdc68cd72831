#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the bytes of every golden vector (tests/vectors/**/*.vec) as a raw file: a seed corpus
for the libFuzzer targets. Usage: vectors_to_corpus.py VECTORS_DIR OUT_DIR"""
import pathlib
import sys

src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
n = 0
for vec in sorted(src.rglob("*.vec")):
    text = vec.read_text().split("\nhex:\n", 1)
    if len(text) != 2:
        sys.exit(f"{vec}: no 'hex:' section")
    (out / vec.stem).write_bytes(bytes.fromhex(" ".join(text[1].split())))
    n += 1
print(f"{n} seeds in {out}")

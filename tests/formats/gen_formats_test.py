#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of scripts/gen_formats.py: it refuses descriptions that break the rules (naming the
problem and writing nothing), it is idempotent, --check finds a stale view, and one edit of the
description (a new header field) reaches every view."""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GEN = os.path.join(ROOT, "scripts", "gen_formats.py")
WIRE = os.path.join(ROOT, "formats", "wire.json")
CSR = os.path.join(ROOT, "formats", "csr.json")

# Every file the generator writes or edits, relative to the tree.
VIEWS = [
    "host/include/netagg/wire_format.hpp",
    "p4/common/switch_format.hpp",
    "p4/common/headers.p4",
    "p4/common/constants.p4",
    "formats/wireshark/netagg.lua",
    "hls/include/netagg_hls/frame.hpp",
    "hw/rtl/netagg_pkg.sv",
    "docs/wire-format.md",
    "driver/fpga/include/netagg/fpga_csr.hpp",
    "hls/include/netagg_hls/csr14.hpp",
    "hw/rtl/netagg_csr_pkg.sv",
]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Tree:
    """A copy of the generator's inputs and views in a temporary folder."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gen_formats_test.")
        for rel in VIEWS + ["formats/wire.json", "formats/csr.json"]:
            os.makedirs(os.path.dirname(os.path.join(self.dir, rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(self.dir, rel))

    def path(self, rel):
        return os.path.join(self.dir, rel)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    def write_json(self, rel, data):
        with open(self.path(rel), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)

    def run(self, *args):
        return subprocess.run([sys.executable, GEN, "--root", self.dir, *args],
                              capture_output=True, text=True)

    def close(self):
        shutil.rmtree(self.dir)


class GeneratorTest(unittest.TestCase):
    def setUp(self):
        self.tree = Tree()
        self.before = {rel: self.tree.read(rel) for rel in VIEWS}

    def tearDown(self):
        self.tree.close()

    def assert_nothing_written(self):
        for rel in VIEWS:
            self.assertEqual(self.tree.read(rel), self.before[rel], rel)

    def rejects(self, name, mutate, message, which="wire"):
        with self.subTest(name):
            data = load(WIRE if which == "wire" else CSR)
            mutate(data)
            self.tree.write_json(f"formats/{which}.json", data)
            r = self.tree.run()
            self.assertEqual(r.returncode, 2, f"{name}: {r.stdout}{r.stderr}")
            self.assertIn(message, r.stderr, name)
            self.assert_nothing_written()
            self.tree.write_json(f"formats/{which}.json", load(WIRE if which == "wire" else CSR))

    def test_the_checked_in_views_are_up_to_date(self):
        r = self.tree.run("--check")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_second_run_changes_nothing(self):
        r = self.tree.run()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote 0 of", r.stdout)
        self.assert_nothing_written()

    def test_check_names_a_stale_view_and_writes_nothing(self):
        with open(self.tree.path("p4/common/constants.p4"), "a", encoding="utf-8") as f:
            f.write("/* edited by hand */\n")
        stale = self.tree.read("p4/common/constants.p4")
        r = self.tree.run("--check")
        self.assertEqual(r.returncode, 1)
        self.assertIn("p4/common/constants.p4", r.stderr)
        self.assertEqual(self.tree.read("p4/common/constants.p4"), stale)

    def test_a_hand_edit_inside_a_region_is_stale_outside_it_is_kept(self):
        pkg = self.tree.read("hw/rtl/netagg_pkg.sv")
        edited = pkg.replace("localparam int unsigned OFF_SLOT = 8;",
                             "localparam int unsigned OFF_SLOT = 9;")
        self.assertNotEqual(edited, pkg)
        edited = edited.replace("package netagg_pkg;", "package netagg_pkg;\n  // a note by hand")
        with open(self.tree.path("hw/rtl/netagg_pkg.sv"), "w", encoding="utf-8") as f:
            f.write(edited)
        self.assertEqual(self.tree.run("--check").returncode, 1)
        self.assertEqual(self.tree.run().returncode, 0)
        again = self.tree.read("hw/rtl/netagg_pkg.sv")
        self.assertIn("OFF_SLOT = 8;", again)
        self.assertIn("// a note by hand", again)

    def test_a_missing_region_is_an_error(self):
        doc = self.tree.read("docs/wire-format.md")
        start = doc.index("<!-- BEGIN GENERATED [errors]")
        with open(self.tree.path("docs/wire-format.md"), "w", encoding="utf-8") as f:
            f.write(doc[:start] + doc[start:].replace("BEGIN GENERATED [errors]", "BEGIN [errors]", 1))
        r = self.tree.run()
        self.assertEqual(r.returncode, 2)
        self.assertIn("[errors]", r.stderr)

    def test_one_new_field_reaches_every_view(self):
        data = load(WIRE)
        netagg = next(h for h in data["headers"] if h["name"] == "netagg")
        # A 16-bit field taken from the epoch word keeps the payload on its beat.
        at = next(i for i, f in enumerate(netagg["fields"]) if f["name"] == "epoch")
        netagg["fields"][at]["bits"] = 16
        netagg["fields"].insert(at, {"name": "tree_id", "bits": 16, "doc": "aggregation tree"})
        self.tree.write_json("formats/wire.json", data)
        r = self.tree.run()
        self.assertEqual(r.returncode, 0, r.stderr)
        expect = {
            "host/include/netagg/wire_format.hpp": ["std::uint16_t tree_id = 0;",
                                                    "inline constexpr std::size_t kTreeId = 18;",
                                                    "store_be16(p + offset::kTreeId"],
            "hls/include/netagg_hls/frame.hpp": ["constexpr int kNetaggTreeId = 60;"],
            "hw/rtl/netagg_pkg.sv": ["logic [15:0] tree_id;", "OFF_TREE_ID = 18",
                                     "beat_be16(beat, FRM_NETAGG + OFF_TREE_ID)"],
            "p4/common/headers.p4": ["bit<16>     tree_id;"],
            "formats/wireshark/netagg.lua": ['f.tree_id = ProtoField.uint16("netagg.tree_id"'],
            "docs/wire-format.md": ["| 18 | 2 | `tree_id` |"],
        }
        for rel, needles in expect.items():
            text = self.tree.read(rel)
            for needle in needles:
                self.assertIn(needle, text, rel)

    def test_the_dissector_takes_its_checks_from_the_description(self):
        data = load(WIRE)
        enums = {e["name"]: e for e in data["enums"]}
        enums["msg_type"]["values"].append({"name": "probe", "value": 9, "doc": "a test"})
        enums["dtype"]["values"].append({"name": "int8", "value": 7, "size": 1, "doc": "a test"})
        data["version"] = 3
        next(c for c in data["constants"] if c["name"] == "max_count")["value"] = 512
        self.tree.write_json("formats/wire.json", data)
        r = self.tree.run()
        self.assertEqual(r.returncode, 0, r.stderr)
        lua = self.tree.read("formats/wireshark/netagg.lua")
        for needle in ['[9] = "probe",', "[7] = 1,", 'f.int8 = ProtoField.bytes("netagg.int8"',
                       "[7] = f.int8,", 'field = "version", error = "bad_version", '
                       "ok = function(v) return v == 3 end",
                       "ok = function(v) return v <= 512 end", 'register_heuristic("udp"']:
            self.assertIn(needle, lua)

    def test_wire_rules(self):
        def netagg(d):
            return next(h for h in d["headers"] if h["name"] == "netagg")

        def enum(d, name):
            return next(e for e in d["enums"] if e["name"] == name)

        def field(d, name):
            return next(f for f in netagg(d)["fields"] if f["name"] == name)

        self.rejects("duplicate field", lambda d: netagg(d)["fields"].append(
            copy.deepcopy(field(d, "slot"))), "slot appears twice")
        self.rejects("payload off its beat", lambda d: field(d, "epoch").update(bits=16),
                     "not on a 64-byte beat boundary")
        self.rejects("not whole bytes", lambda d: field(d, "epoch").update(bits=31),
                     "not a whole number of bytes")
        self.rejects("unknown error", lambda d: field(d, "count")["check"].update(error="nope"),
                     "unknown error nope")
        self.rejects("check not ordered", lambda d: netagg(d)["check_order"].remove("count"),
                     "check_order must list exactly")
        self.rejects("enum value twice", lambda d: d["enums"][0]["values"][1].update(value=1),
                     "used twice")
        self.rejects("enum value too wide", lambda d: d["enums"][0]["values"][1].update(value=256),
                     "does not fit 8 bits")
        self.rejects("dtype without size",
                     lambda d: enum(d, "dtype")["values"][0].pop("size"), "needs a \"size\"")
        self.rejects("notice reason not a drop",
                     lambda d: enum(d, "notice_reason")["values"][0].update(name="lost"),
                     "not the name of a drop")
        self.rejects("notice interval not a power of two",
                     lambda d: next(c for c in d["constants"]
                                    if c["name"] == "notice_interval").update(value=12),
                     "not a power of two")
        self.rejects("flag outside the field", lambda d: field(d, "flags")["flags"][0].update(bit=8),
                     "outside the field")
        self.rejects("constant too wide", lambda d: d["constants"][0].update(value=70000),
                     "does not fit 16 bits")
        self.rejects("drop without aggregator", lambda d: d["drops"][0].update(aggregators=[]),
                     "aggregators must list")
        self.rejects("first error not ok", lambda d: d["errors"].pop(0), "must be \"ok\"")

        def unchecked_dtype(d):
            field(d, "dtype").pop("check")
            netagg(d)["check_order"].remove("dtype")
        self.rejects("dtype unchecked", unchecked_dtype, "needs an in_enum check on dtype")

    def test_csr_rules(self):
        def regs(d):
            return d["registers"]

        self.rejects("duplicate offset", lambda d: regs(d)[1].update(offset=regs(d)[0]["offset"]),
                     "already used", "csr")
        self.rejects("misaligned", lambda d: regs(d)[1].update(offset="0x006"),
                     "not 4-byte aligned", "csr")
        self.rejects("outside", lambda d: regs(d)[1].update(offset="0x1000"),
                     "outside the 12-bit", "csr")
        self.rejects("duplicate name", lambda d: regs(d)[1].update(name=regs(d)[0]["name"]),
                     "name used twice", "csr")
        self.rejects("bad access", lambda d: regs(d)[1].update(access="rx"), "access must be", "csr")
        self.rejects("duplicate counter", lambda d: d["counters"].append(d["counters"][0]),
                     "used twice", "csr")
        self.rejects("wire error without its counter",
                     lambda d: d["counters"].remove("malformed_bad_flags"),
                     "no malformed_bad_flags", "csr")
        self.rejects("counter of no error", lambda d: d["counters"].append("malformed_gremlins"),
                     "no such wire error", "csr")
        self.rejects("value of no register", lambda d: d["values"][0].update(register="NOPE"),
                     "is not in the map", "csr")


if __name__ == "__main__":
    unittest.main()

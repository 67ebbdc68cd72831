# SPDX-License-Identifier: Apache-2.0
"""formats/wire.json for the Python tools (the vector generators): the netagg header's field
table and the protocol's numbers, read from the description at import time, so a change of the
format reaches the generators without an edit here.

The generators stay independent encoders of the C++ code: they share the description, not code.
"""
import json
import pathlib
import struct

_PATH = pathlib.Path(__file__).resolve().parents[2] / "formats" / "wire.json"
_RAW = json.loads(_PATH.read_text(encoding="utf-8"))

VERSION = _RAW["version"]
UDP_PORT = _RAW["udp_port"]
CONSTANTS = {c["name"]: c["value"] for c in _RAW["constants"]}
EXP_NONE = CONSTANTS["exponent_none"]
MAX_COUNT = CONSTANTS["max_count"]
EXACT_CODE_OFFSET = CONSTANTS["exact_code_offset"]
ENUMS = {e["name"]: {v["name"]: v["value"] for v in e["values"]} for e in _RAW["enums"]}
TYPES = ENUMS["msg_type"]
DTYPES = ENUMS["dtype"]
NOTICE_REASONS = ENUMS["notice_reason"]
NOTICE_INTERVAL = CONSTANTS["notice_interval"]
ELEMENT_SIZES = {v["name"]: v["size"] for e in _RAW["enums"] if e["name"] == "dtype"
                 for v in e["values"]}
ERRORS = [e["name"] for e in _RAW["errors"]]
SWITCH_DROPS = [d["name"] for d in _RAW["drops"] if "switch" in d["aggregators"]]

_NETAGG = next(h for h in _RAW["headers"] if h["name"] == "netagg")
# (name, bits, signed) of every netagg header field, in wire order.
FIELDS = [(f["name"], f["bits"], bool(f.get("signed", False))) for f in _NETAGG["fields"]]
HEADER_SIZE = sum(bits for _, bits, _ in FIELDS) // 8
_CODES = {(8, False): "B", (16, False): "H", (32, False): "I",
          (8, True): "b", (16, True): "h", (32, True): "i"}
HEADER_STRUCT = ">" + "".join(_CODES[(bits, signed)] for _, bits, signed in FIELDS)
assert struct.calcsize(HEADER_STRUCT) == HEADER_SIZE


def pack_header(**values):
    """The netagg header with the given raw field values (names as in the description; a field
    not given is 0)."""
    unknown = set(values) - {name for name, _, _ in FIELDS}
    if unknown:
        raise KeyError(f"not netagg header fields: {sorted(unknown)}")
    return struct.pack(HEADER_STRUCT, *(values.get(name, 0) for name, _, _ in FIELDS))

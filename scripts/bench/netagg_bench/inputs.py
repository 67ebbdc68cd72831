# SPDX-License-Identifier: Apache-2.0
"""Files the benchmarks write for the programs they run: a job on loopback, a variant of a fabric
scenario."""
import json
import socket


def free_udp_ports(count, host="127.0.0.1"):
    """COUNT UDP ports of HOST free now, picked by the kernel."""
    ports = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((host, 0))
        ports.append(s.getsockname()[1])
        s.close()
    return ports


def loopback_job(ports, slots=64, elements_per_packet=256):
    """Job 1 (docs/job-format.md) of one worker per port on 127.0.0.1, rank = position."""
    return {"job_id": 1, "slots": {"base": 0, "count": slots},
            "elements_per_packet": elements_per_packet,
            "workers": [{"rank": r, "address": f"127.0.0.1:{p}"} for r, p in enumerate(ports)]}


def set_dotted(document, assignments):
    """DOCUMENT with each "a.b.c=JSON" of ASSIGNMENTS set (objects created on the way)."""
    for assignment in assignments:
        key, value = assignment.split("=", 1)
        node = document
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = json.loads(value)
    return document

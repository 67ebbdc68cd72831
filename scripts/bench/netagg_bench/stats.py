# SPDX-License-Identifier: Apache-2.0
"""Medians, the slowest rank, ratios and shares of a link: the arithmetic of the summaries."""
import statistics


def median(values):
    """The median (the mean of the two middle values of an even count)."""
    return statistics.median(values)


def slowest_per_iteration(seconds_lists):
    """Per iteration, the slowest worker's time: what an all-reduce takes is what its last worker
    waits. One list of per-iteration seconds per worker; as many iterations as the shortest."""
    return [max(t) for t in zip(*seconds_lists)]


def summarize(result, size, warmup_to_drop=0):
    """Median and minimum time of one all-reduce and the goodput, from a report's per-iteration
    times ("seconds_all") after dropping the warm-up; only the verification when it failed or has
    no times. None for no report."""
    if result is None:
        return None
    samples = result.get("seconds_all") or []
    samples = samples[warmup_to_drop:]
    if not samples or result.get("verification") != "ok":
        return {"verification": result.get("verification")}
    seconds_median = median(samples)
    return {"seconds_median": seconds_median, "seconds_min": min(samples),
            "samples": len(samples), "goodput_gbps": size * 8 / seconds_median / 1e9,
            "verification": result["verification"]}


def slowest_rank(workers, warmup):
    """The workers' reports merged as one: per iteration the slowest worker's time (what
    netagg-local reports), warm-up dropped, and their retransmissions and packets summed. When a
    worker did not verify: its verification alone ("mismatch" when any is, else "error")."""
    if not isinstance(workers, list) or not workers:
        return None
    if any(w.get("verification") != "ok" for w in workers):
        return {"verification": "mismatch" if any(w.get("verification") == "mismatch"
                                                  for w in workers) else "error"}
    per_iteration = slowest_per_iteration(w["seconds_all"] for w in workers)[warmup:]
    return {"seconds_all": per_iteration, "verification": "ok",
            "retransmissions": sum(w.get("retransmissions", 0) for w in workers),
            "packets_sent": sum(w.get("packets_sent", 0) for w in workers)}


def packet_rates(workers, switchd_cpu_seconds):
    """What a packet costs: the packets the workers sent (first sends and retransmissions) per
    CPU second of the worker processes inside their timed all-reduces (user + system: engine,
    transport, and the kernel work their system calls do) and per CPU second of the whole
    processes (set-up, input generation and checks included), per second of all-reduce (wall
    clock, every iteration, warm-up included) averaged over the workers; and per CPU second of
    the switch daemon, which took them all in. None when a worker did not verify."""
    if not isinstance(workers, list) or not workers or any(
            w.get("verification") != "ok" for w in workers):
        return None
    packets = sum(w.get("packets_sent", 0) for w in workers)
    cpu = sum(w.get("cpu_seconds", 0) for w in workers)
    allreduce_cpu = sum(w.get("allreduce_cpu_seconds", 0) for w in workers)
    wall = [w.get("packets_sent", 0) / sum(w["seconds_all"]) for w in workers
            if sum(w.get("seconds_all") or [0]) > 0]
    return {
        "worker_packets_per_cpu_second": packets / allreduce_cpu if allreduce_cpu > 0 else None,
        "worker_packets_per_process_cpu_second": packets / cpu if cpu > 0 else None,
        "worker_packets_per_wall_second": sum(wall) / len(wall) if wall else None,
        "switchd_cpu_seconds": switchd_cpu_seconds,
        "switchd_packets_per_cpu_second": (packets / switchd_cpu_seconds
                                           if switchd_cpu_seconds else None),
    }


def time_ratio(ours, peer, key):
    """ours[key] / peer[key] when both summaries have it, else None."""
    if ours and peer and key in ours and key in peer:
        return ours[key] / peer[key]
    return None


def in_network_bound(workers):
    """The fastest in-network time against the ring's, N / (2(N-1)): each worker moves its tensor
    once each way instead of 2(N-1)/N times."""
    return workers / (2 * (workers - 1))


def link_seconds(size, mbit):
    """Seconds one tensor of SIZE bytes takes over one link of MBIT Mbit/s."""
    return size * 8 / (mbit * 1e6)

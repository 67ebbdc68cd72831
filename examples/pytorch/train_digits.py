#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains a small MLP on scikit-learn's digits with DistributedDataParallel, its gradients
all-reduced by netagg (through the switch model or the FPGA aggregator's models) or by Gloo.

    torchrun --standalone --nproc_per_node 4 --redirects 2 --tee 2 \\
        examples/pytorch/train_digits.py --backend netagg --aggregator switch

Every run with the same seed starts from the same weights and sees the same batches in the same
order, whatever the backend: only the all-reduce differs. Rank 0 prints the test accuracy after
each epoch and at the end the training throughput and the time the all-reduce took per step
(examples/pytorch/README.md).
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

AGGREGATORS = ("switch", "fpga-hls", "fpga-rtl")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("netagg", "gloo"), required=True)
    p.add_argument("--aggregator", choices=AGGREGATORS,
                   help="netagg: rank 0 starts this aggregator daemon on this machine "
                        "(NETAGG_LOCAL_AGGREGATOR); without it, the job and aggregator come from "
                        "NETAGG_* as set")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop after this many steps (0: no limit), e.g. a few through the RTL")
    p.add_argument("--batch-size", type=int, default=16, help="samples per rank and step")
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--comm-hook", choices=("timed", "none"), default="timed",
                   help="timed: DDP's all-reduce hook (divide by the world size, all_reduce) with "
                        "its time measured; none: DDP's built-in path, nothing measured")
    p.add_argument("--json", help="rank 0 writes the run's figures and curves here")
    return p.parse_args()


def digits_split():
    """The fixed split: 80 % training, 20 % test, stratified, the same on every rank."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.int64)
    idx_train, idx_test = train_test_split(
        list(range(len(y))), test_size=0.2, random_state=0, stratify=digits.target)
    return (x[idx_train], y[idx_train]), (x[idx_test], y[idx_test])


def make_model(hidden, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden // 2),
                         nn.ReLU(), nn.Linear(hidden // 2, 10))


class AllreduceClock:
    """Seconds from launching each bucket's all-reduce to its completion, summed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seconds = 0.0
        self.buckets = 0

    def add(self, seconds):
        with self.lock:
            self.seconds += seconds
            self.buckets += 1


def timed_allreduce_hook(clock, bucket):
    # What DDP's default hook does (torch.distributed.algorithms.ddp_comm_hooks.default_hooks.
    # allreduce_hook), with a clock around it.
    start = time.perf_counter()
    tensor = bucket.buffer()
    tensor.div_(dist.get_world_size())
    future = dist.all_reduce(tensor, async_op=True).get_future()

    def done(f):  # runs when the all-reduce completes
        clock.add(time.perf_counter() - start)
        return f.value()[0]

    return future.then(done)


def evaluate(model, x, y):
    with torch.no_grad():
        out = model(x)
        loss = F.cross_entropy(out, y).item()
        correct = int((out.argmax(dim=1) == y).sum())
    return loss, correct


def main():
    args = parse_args()
    torch.set_num_threads(1)  # 4 ranks on a small machine: one core's worth each
    if args.backend == "netagg":
        if args.aggregator:
            os.environ.setdefault("NETAGG_LOCAL_AGGREGATOR", args.aggregator)
        import netagg_torch  # noqa: F401  registers the backend
    elif args.aggregator:
        sys.exit("train_digits: --aggregator is for --backend netagg")

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    (x_train, y_train), (x_test, y_test) = digits_split()
    train = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)

    model = make_model(args.hidden, args.seed)
    ddp = DistributedDataParallel(model)
    clock = AllreduceClock()
    if args.comm_hook == "timed":
        ddp.register_comm_hook(clock, timed_allreduce_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    # Cosine decay to 0 over the run, so that the last epochs settle instead of oscillating.
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs * len(loader))
    parameters = sum(p.numel() for p in model.parameters())

    label = args.backend
    if args.backend == "netagg":
        label += f" ({os.environ.get('NETAGG_LOCAL_AGGREGATOR', 'NETAGG_* job')}"
        if float(os.environ.get("NETAGG_LOSS", "0")) > 0:
            label += f", {float(os.environ['NETAGG_LOSS']) * 100:g} % loss"
            if os.environ.get("NETAGG_LOSS_SEED"):
                label += f" (seed {os.environ['NETAGG_LOSS_SEED']})"
        label += ")"
    if rank == 0:
        print(f"train_digits: {label}, {world} ranks, {len(train)} training and {len(y_test)} "
              f"test samples, MLP of {parameters} parameters, batch {args.batch_size} per rank",
              flush=True)

    step_losses, epochs = [], []
    steps, samples, train_seconds = 0, 0, 0.0
    done = False
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        ddp.train()
        start = time.perf_counter()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            schedule.step()
            step_losses.append(loss.item())
            steps += 1
            samples += len(y) * world
            if args.max_steps and steps >= args.max_steps:
                done = True
                break
        train_seconds += time.perf_counter() - start
        # Every rank holds the same weights: rank 0 evaluates on the whole of both sets.
        if rank == 0:
            train_loss, _ = evaluate(model, x_train, y_train)
            test_loss, correct = evaluate(model, x_test, y_test)
            epochs.append({"epoch": epoch + 1, "steps": steps, "train_loss": train_loss,
                           "test_loss": test_loss, "test_accuracy": correct / len(y_test)})
            print(f"epoch {epoch + 1:2d}: train loss {train_loss:.4f}, test accuracy "
                  f"{100 * correct / len(y_test):.2f} % ({correct}/{len(y_test)})", flush=True)
        if done:
            break

    stats = None
    if args.backend == "netagg":
        stats = dist.distributed_c10d._get_default_group().stats()
    dist.barrier()
    if rank == 0:
        # The trained weights' bits: runs whose all-reduces gave the same sums end with the same.
        digest = hashlib.sha256()
        for name, tensor in model.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().contiguous().numpy().tobytes())
        weights_sha256 = digest.hexdigest()
        accuracy = epochs[-1]["test_accuracy"]
        result = {
            "label": label, "backend": args.backend,
            "aggregator": os.environ.get("NETAGG_LOCAL_AGGREGATOR") if args.backend == "netagg"
            else None,
            "loss": float(os.environ.get("NETAGG_LOSS", "0")) if args.backend == "netagg" else 0,
            "world_size": world, "epochs": len(epochs), "steps": steps,
            "batch_size": args.batch_size, "parameters": parameters, "seed": args.seed,
            "test_accuracy": accuracy, "train_seconds": train_seconds,
            "samples_per_second": samples / train_seconds,
            "step_ms": 1000 * train_seconds / steps,
            "allreduce_ms_per_step": 1000 * clock.seconds / steps if clock.buckets else None,
            "buckets_per_step": clock.buckets / steps if clock.buckets else None,
            "netagg_stats": stats, "step_losses": step_losses, "per_epoch": epochs,
            "weights_sha256": weights_sha256,
        }
        print(f"test accuracy: {100 * accuracy:.2f} % after {len(epochs)} epochs ({steps} steps)")
        print(f"weights: sha256 {weights_sha256}")
        print(f"samples/s: {result['samples_per_second']:.0f} (training, all ranks; "
              f"{result['step_ms']:.2f} ms per step)")
        if clock.buckets:
            print(f"all-reduce: {result['allreduce_ms_per_step']:.3f} ms per step "
                  f"({clock.buckets / steps:g} bucket(s) of the {parameters} float32 gradients, "
                  f"launch to completion)")
        if stats:
            print(f"netagg: {stats['packets_sent']} packets sent, {stats['retransmissions']} "
                  f"retransmitted, {stats['injected_drops']} dropped on purpose (rank 0)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs train_digits.py with Gloo and with netagg through the switch model and the FPGA
aggregator's HLS model (also with 1 % injected loss), a few steps through the FPGA's RTL, and
draws the loss curves of all in one PNG.

    /usr/bin/python3 examples/pytorch/run_digits.py --build build --out build/pytorch

Each run is `torchrun --standalone --nproc_per_node N train_digits.py ...` with the same seed,
so every run starts from the same weights and takes the same batches. The check at the end:
netagg's test accuracy (switch model, HLS model, no loss) within --tolerance percentage points
of Gloo's, and the runs with loss ending with the weights of the run without and drawing its loss
curve, bit for bit (a sha256 of the trained weights, every step's loss): the switch model's (it
adds integers) and the HLS model's with three loss seeds (it sums float32 exactly, fp32-exact);
and the steps through the RTL (which sums float32 exactly as well) ending with the HLS model's
losses bit for bit.
Exit status 1 if a check failed, 2 if a run failed.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(SOURCE, "build"),
                   help="the CMake build folder (netagg-torch built)")
    p.add_argument("--out", help="logs, JSON and the PNG (default: BUILD/pytorch)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--nproc", type=int, default=4, help="ranks per run")
    p.add_argument("--rtl-steps", type=int, default=10,
                   help="steps through the RTL in Verilator (0: none)")
    p.add_argument("--loss", type=float, default=0.01, help="injected loss of the lossy runs")
    p.add_argument("--no-loss-runs", action="store_true", help="skip the runs with loss")
    p.add_argument("--tolerance", type=float, default=0.5,
                   help="allowed difference of test accuracy from Gloo's, percentage points")
    return p.parse_args()


def runs(args):
    r = [("gloo", ["--backend", "gloo"], {}),
         ("netagg-switch", ["--backend", "netagg", "--aggregator", "switch"], {}),
         # The switch killed (kill -9) half-way through the training: the workers finish on the
         # hosts over Gloo (docs/fallback.md); the datagram it dies at is set from the run above.
         ("netagg-switch-killed", ["--backend", "netagg", "--aggregator", "switch"], {}),
         ("netagg-fpga-hls", ["--backend", "netagg", "--aggregator", "fpga-hls"], {})]
    if not args.no_loss_runs:
        lossy = {"NETAGG_LOSS": str(args.loss)}
        r += [("netagg-switch-loss", ["--backend", "netagg", "--aggregator", "switch"], lossy)]
        # The HLS model sums float32 exactly (fp32-exact, its default): three loss patterns.
        for seed in (1, 2, 3):
            r.append((f"netagg-fpga-hls-loss{'' if seed == 1 else seed}",
                      ["--backend", "netagg", "--aggregator", "fpga-hls"],
                      dict(lossy, NETAGG_LOSS_SEED=str(seed))))
    if args.rtl_steps:
        r.append(("netagg-fpga-rtl", ["--backend", "netagg", "--aggregator", "fpga-rtl",
                                      "--max-steps", str(args.rtl_steps)], {}))
    return r


def run(name, train_args, extra_env, args, out):
    log_path = os.path.join(out, f"{name}.log")
    json_path = os.path.join(out, f"{name}.json")
    env = dict(os.environ)
    python_path = os.path.join(os.path.abspath(args.build), "torch", "python")
    env["PYTHONPATH"] = python_path + os.pathsep + env.get("PYTHONPATH", "")
    for key in ("NETAGG_LOCAL_AGGREGATOR", "NETAGG_LOSS", "NETAGG_LOSS_SEED", "NETAGG_FLOAT_WIRE",
                "NETAGG_JOB_FILE"):
        env.pop(key, None)
    env.update(extra_env)
    # --redirects 2 --tee 2: stderr through log files and on the console, stdout as it is.
    # Debian's torch 1.13 under Python 3.11 cannot parse the default "0" of these two options.
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node", str(args.nproc), "--redirects", "2", "--tee", "2",
               os.path.join(HERE, "train_digits.py"), "--epochs", str(args.epochs),
               "--json", json_path] + train_args
    shown = " ".join(f"{k}={v}" for k, v in extra_env.items())
    print(f"== {name}: {shown + ' ' if shown else ''}torchrun --standalone --nproc_per_node "
          f"{args.nproc} train_digits.py {' '.join(train_args)} --epochs {args.epochs}",
          flush=True)
    start = time.monotonic()
    with open(log_path, "w") as log:
        status = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    with open(log_path) as log:
        lines = log.read().splitlines()
    for line in lines:
        if line.startswith(("test accuracy:", "weights:", "samples/s:", "all-reduce:", "netagg:")):
            print("   " + line)
    if status != 0 or not os.path.exists(json_path):
        print(f"   FAILED (exit status {status}); the last lines of {log_path}:")
        for line in lines[-15:]:
            print("   | " + line)
        return None
    print(f"   ({time.monotonic() - start:.0f} s; log {log_path})", flush=True)
    with open(json_path) as f:
        return json.load(f)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(13, 5))
    styles = {"gloo": ("black", "-"), "netagg-switch": ("tab:blue", "--"),
              "netagg-fpga-hls": ("tab:red", ":"), "netagg-switch-loss": ("tab:cyan", "-."),
              "netagg-fpga-hls-loss": ("tab:orange", (0, (1, 3))),
              "netagg-fpga-hls-loss2": ("tab:pink", (0, (1, 5))),
              "netagg-fpga-hls-loss3": ("tab:brown", (0, (1, 7))),
              "netagg-fpga-rtl": ("tab:green", "-")}
    for name, r in results.items():
        color, style = styles.get(name, (None, "-"))
        losses = r["step_losses"]
        window = max(1, min(len(losses), r["steps"] // max(1, r["epochs"])))
        smooth = []
        for i in range(len(losses)):
            recent = losses[max(0, i - window + 1):i + 1]
            smooth.append(sum(recent) / len(recent))
        marker = "o" if len(losses) < 30 else None
        ax_loss.plot(range(1, len(losses) + 1), smooth, color=color, linestyle=style,
                     marker=marker, markersize=3, label=r["label"])
        ax_acc.plot([e["epoch"] for e in r["per_epoch"]],
                    [100 * e["test_accuracy"] for e in r["per_epoch"]], color=color,
                    linestyle=style, marker="o" if len(r["per_epoch"]) < 3 else None,
                    label=r["label"])
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("training loss (rank 0's batches, mean over an epoch's steps)")
    ax_loss.grid(True, alpha=0.3)
    ax_loss.legend(fontsize=8)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("test accuracy (%)")
    ax_acc.set_ylim(80, 100)
    ax_acc.grid(True, alpha=0.3)
    ax_acc.legend(fontsize=8)
    fig.suptitle("MLP on scikit-learn's digits, DDP on 4 ranks: Gloo and netagg")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    args = parse_args()
    out = os.path.abspath(args.out or os.path.join(args.build, "pytorch"))
    os.makedirs(out, exist_ok=True)
    results, failed = {}, []
    for name, train_args, extra_env in runs(args):
        if name == "netagg-switch-killed":
            sent = ((results.get("netagg-switch") or {}).get("netagg_stats") or {}).get(
                "packets_sent")
            if not sent:
                print(f"== {name}: skipped (no packet count from netagg-switch)")
                continue
            # Rank 0's packets times the ranks: about what the switch takes in a run; half of it.
            extra_env = {"NETAGG_LOCAL_DIE_AT_DATAGRAM": str(max(1, sent * args.nproc // 2))}
        r = run(name, train_args, extra_env, args, out)
        if r is None:
            failed.append(name)
        else:
            results[name] = r

    print("\n| run | test accuracy | samples/s | all-reduce ms/step | step ms "
          "| retransmissions (rank 0) |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        stats = r.get("netagg_stats") or {}
        print(f"| {name} | {100 * r['test_accuracy']:.2f} % ({r['epochs']} epochs) | "
              f"{r['samples_per_second']:.0f} | {r['allreduce_ms_per_step']:.3f} | "
              f"{r['step_ms']:.2f} | {stats.get('retransmissions', '-')} |")

    checks = []
    gloo = results.get("gloo")
    for name in ("netagg-switch", "netagg-switch-killed", "netagg-fpga-hls"):
        if gloo and name in results:
            diff = 100 * (results[name]["test_accuracy"] - gloo["test_accuracy"])
            checks.append((f"{name}: test accuracy {diff:+.2f} pp from Gloo's "
                           f"(allowed ±{args.tolerance})", abs(diff) <= args.tolerance + 1e-9))
    if "netagg-switch-killed" in results:
        with open(os.path.join(out, "netagg-switch-killed.log")) as f:
            log = f.read()
        checks.append(("netagg-switch-killed: the workers finished on the hosts, and said so",
                       "finishing the all-reduce with the other workers" in log
                       and "all-reduce finished by the workers" in log))
    # The switch path adds integers (block floating point), the HLS model 64-bit lanes (exact
    # fp32): loss changes the order in which contributions arrive, not the sums, so the weights
    # and every step's loss end the same bit for bit.
    for plain, lossy in (("netagg-switch", "netagg-switch-loss"),
                         ("netagg-fpga-hls", "netagg-fpga-hls-loss"),
                         ("netagg-fpga-hls", "netagg-fpga-hls-loss2"),
                         ("netagg-fpga-hls", "netagg-fpga-hls-loss3")):
        if plain in results and lossy in results:
            checks.append((f"{lossy}: the weights of {plain} bit for bit (sha256 "
                           f"{results[lossy]['weights_sha256'][:16]}...)",
                           results[lossy]["weights_sha256"] == results[plain]["weights_sha256"]))
            checks.append((f"{lossy}: the loss curve of {plain}, every step bit for bit",
                           results[lossy]["step_losses"] == results[plain]["step_losses"]))
    if "netagg-fpga-rtl" in results and "netagg-fpga-hls" in results:
        # The RTL sums float32 exactly too (fp32-exact): its steps' losses are the HLS model's.
        rtl = results["netagg-fpga-rtl"]["step_losses"]
        hls = results["netagg-fpga-hls"]["step_losses"][:len(rtl)]
        checks.append((f"netagg-fpga-rtl: its {len(rtl)} step losses are the HLS model's, bit "
                       f"for bit", rtl == hls))
    print()
    for text, ok in checks:
        print(f"{'ok    ' if ok else 'FAILED'} {text}")
    if results:
        png = os.path.join(out, "digits_loss.png")
        plot(results, png)
        print(f"\nloss curves: {png}")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"runs": {n: {k: v for k, v in r.items() if k != "step_losses"}
                            for n, r in results.items()},
                   "failed": failed, "checks": [{"check": t, "ok": ok} for t, ok in checks]},
                  f, indent=1)
    if failed:
        print(f"failed runs: {', '.join(failed)}")
        return 2
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A random-kill campaign: short run_glue trainings per strategy, each SIGKILLed on a random rank
at a random moment of its training loop (a third of the kills wait for a checkpoint save to be
under way, so saves are hit often; ZeRO-3 with NVMe offload swaps every step, so its kills land in swaps too), then
rerun the way a user reruns HF's run_glue (same command: the last complete checkpoint is found
and resumed). Every rerun must end with the uninterrupted run's weights and log bitwise, and
leave no swap folder behind. Python's standard library only.

  kill_campaign.py --run_glue BIN --launch BIN --model DIR --work DIR [--kills N] [--seed S]
                   [--strategies single,ddp,zero1,zero2,zero3,fsdp,zero3_nvme]

Prints one line per kill and a table per strategy: kills, exact resumes, divergences, runs that
finished before the kill came (not counted), leftover swap folders. Exit 1 on any divergence or
leftover.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

STRATEGIES = ["single", "ddp", "zero1", "zero2", "zero3", "fsdp", "zero3_nvme"]


def deepspeed(stage, nvme=None):
    zero = {"stage": stage}
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    if nvme:
        zero["offload_optimizer"] = {"device": "nvme", "nvme_path": nvme, "buffer_count": 2}
        zero["sub_group_size"] = 20000
    return json.dumps({"zero_optimization": zero}, separators=(",", ":"))


def strategy_flags(strategy, nvme):
    return {
        "single": [], "ddp": [], "fsdp": ["--fsdp", "full_shard"],
        "zero1": ["--deepspeed", deepspeed(1)], "zero2": ["--deepspeed", deepspeed(2)],
        "zero3": ["--deepspeed", deepspeed(3)],
        "zero3_nvme": ["--deepspeed", deepspeed(3, nvme), "--optim", "adamw_torch_fused"],
    }[strategy]


class Campaign:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.common = [
            "--model_name_or_path", args.model, "--task_name", "sst2",
            "--data_dir", os.path.join(args.model, "synthetic_data"), "--do_train",
            "--max_seq_length", "32", "--logging_steps", "1", "--report_to", "none",
            "--disable_tqdm", "true", "--seed", "7", "--per_device_train_batch_size", "4",
            "--max_steps", str(args.max_steps), "--save_steps", "2",
            "--logging_dir", os.path.join(args.work, "runs")]

    def command(self, strategy, out):
        nvme = os.path.join(self.args.work, "nvme_" + strategy)
        os.makedirs(nvme, exist_ok=True)
        train = [self.args.run_glue, "--output_dir", out] + self.common + \
            strategy_flags(strategy, nvme)
        if strategy == "single":
            return train
        return [self.args.launch, "--standalone", "--nproc_per_node", "2",
                "--grace_period_s", "2"] + train

    def start(self, strategy, out, log):
        return subprocess.Popen(self.command(strategy, out), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def run(self, strategy, out):
        """Runs to the end; returns the seconds its training loop took."""
        with open(out + ".log", "ab") as log:
            proc = self.start(strategy, out, log)
            training = self.wait_for_training(proc, out)
            code = proc.wait(timeout=600)
        if code != 0 or training is None:
            sys.exit(f"FAIL: {strategy}: run into {out} exited {code}; see {out}.log")
        return time.monotonic() - training

    @staticmethod
    def wait_for_training(proc, out):
        """The moment the training loop starts (its banner in the log), or None if it ends."""
        while proc.poll() is None:
            try:
                if b"***** Running training *****" in open(out + ".log", "rb").read():
                    return time.monotonic()
            except OSError:
                pass
            time.sleep(0.005)
        return None

    @staticmethod
    def rank_pids(proc, strategy):
        if strategy == "single":
            return [proc.pid]
        pids = []
        try:
            children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
        except OSError:
            return pids
        for pid in children:
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            except OSError:
                continue
            if any(e.startswith(b"RANK=") for e in env):
                pids.append(int(pid))
        return pids

    @staticmethod
    def saving(out):
        try:
            return any(n.startswith(".loom-staging") for n in os.listdir(out))
        except OSError:
            return False

    def kill_once(self, strategy, out, duration):
        """Starts a run and SIGKILLs one rank; returns where, or None if it finished first."""
        in_save = self.rng.random() < 1 / 3
        delay = self.rng.uniform(0, duration)
        with open(out + ".log", "ab") as log:
            proc = self.start(strategy, out, log)
            training = self.wait_for_training(proc, out)
            if training is None:
                return None
            deadline = training + (duration * 2 if in_save else delay)
            while time.monotonic() < deadline and proc.poll() is None:
                if in_save and self.saving(out):
                    break
                time.sleep(0.005)
            pids = self.rank_pids(proc, strategy)
            if proc.poll() is not None or not pids:
                proc.wait()
                return None
            victim = self.rng.randrange(len(pids))
            os.kill(pids[victim], signal.SIGKILL)
            proc.wait(timeout=120)
        return (f"rank {victim} " + ("during a save" if in_save and self.saving(out)
                                     else f"{delay:.2f}s into training"))

    def leftover_swap(self, strategy):
        nvme = os.path.join(self.args.work, "nvme_" + strategy)
        return [n for n in os.listdir(nvme)] if os.path.isdir(nvme) else []

    def same(self, ref, out):
        a = open(os.path.join(ref, "model.safetensors"), "rb").read()
        b = open(os.path.join(out, "model.safetensors"), "rb").read()
        # The per-step entries (loss, grad_norm, learning_rate, epoch, step); the last entry's
        # runtime figures differ between any two runs.
        log = lambda d: [e for e in json.load(open(os.path.join(d, "trainer_state.json")))
                         ["log_history"] if "loss" in e]
        return a == b and log(ref) == log(out)

    def strategy(self, strategy):
        ref = os.path.join(self.args.work, strategy, "ref")
        os.makedirs(os.path.dirname(ref), exist_ok=True)
        duration = self.run(strategy, ref)
        counts = {"kills": 0, "exact": 0, "diverged": 0, "finished_first": 0, "leftover": 0}
        i = 0
        while counts["kills"] < self.args.kills:
            i += 1
            out = os.path.join(self.args.work, strategy, f"kill{i}")
            where = self.kill_once(strategy, out, duration)
            if where is None:
                counts["finished_first"] += 1
                shutil.rmtree(out, ignore_errors=True)
                if counts["finished_first"] > 10 * self.args.kills:
                    sys.exit(f"FAIL: {strategy}: runs keep finishing before the kill")
                continue
            counts["kills"] += 1
            self.run(strategy, out)  # the rerun: same command, resumes from the last checkpoint
            exact = self.same(ref, out)
            counts["exact" if exact else "diverged"] += 1
            leftover = self.leftover_swap(strategy)
            counts["leftover"] += len(leftover)
            print(f"{strategy} kill {counts['kills']}: {where}: "
                  f"{'exact' if exact else 'DIVERGED'}; leftover swap folders {leftover}",
                  flush=True)
            if exact and not leftover:
                shutil.rmtree(out, ignore_errors=True)
        return counts

    def main(self):
        results = {s: self.strategy(s) for s in self.args.strategies}
        print(f"{'strategy':<12}{'kills':>7}{'exact':>7}{'diverged':>10}{'finished first':>16}"
              f"{'leftover swap':>15}")
        for s, c in results.items():
            print(f"{s:<12}{c['kills']:>7}{c['exact']:>7}{c['diverged']:>10}"
                  f"{c['finished_first']:>16}{c['leftover']:>15}")
        bad = any(c["diverged"] or c["leftover"] for c in results.values())
        print("kill_campaign: " + ("FAIL" if bad else "PASS"))
        return 1 if bad else 0


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run_glue", required=True)
    p.add_argument("--launch", required=True)
    p.add_argument("--model", required=True, help="run_glue's demo model folder (dropout off)")
    p.add_argument("--work", required=True)
    p.add_argument("--kills", type=int, default=100, help="kills per strategy")
    p.add_argument("--max_steps", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    args = p.parse_args()
    args.strategies = args.strategies.split(",")
    for s in args.strategies:
        if s not in STRATEGIES:
            p.error(f"--strategies: unknown {s!r}; one of {', '.join(STRATEGIES)}")
    for name in ("run_glue", "launch", "model", "work"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    return args


if __name__ == "__main__":
    sys.exit(Campaign(parse()).main())

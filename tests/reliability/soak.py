#!/usr/bin/env python3
"""A soak: one long run of the tiny synthetic workload (run_synthetic) with a checkpoint every
--save_steps and save_total_limit 2, watched from outside through /proc. Python's standard
library only.

  soak.py --run_synthetic BIN --work DIR [--steps 20000] [--save_steps 200] [--logging_steps 1000]

Every 0.02 s it samples the process's resident memory (VmRSS) and open descriptors
(/proc/PID/fd), and it times each logging window from the moment its log line appears. At the
end it checks, and prints with the figures:
  - resident memory flat: the median over the last 10 % of the run within 1 % of the median
    over the 10 %-20 % stretch (after warm-up: the optimizer's states, the allocator's pools);
  - open descriptors flat: between saves, the same count at the end of the run as after
    warm-up;
  - exactly save_total_limit checkpoints left, the last ones, and no staging folder;
  - no slowdown: the CPU time the process spent on a logging window (--logging_steps steps,
    saves included), the fastest of the last three windows within 50 % of the fastest of the
    first three. CPU time (utime + stime from /proc/PID/stat), with one intra-op thread, and
    the fastest of three, because wall time on a machine the rest of the test suite shares
    measures the load: a CI run saw 2.2 ms a step in the first window and 6.4 ms in the last
    with four other tests running beside it. Wall times are printed too.
Exit 1 when a check fails.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def sample(pid):
    try:
        rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status")
                   if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds
    except (OSError, StopIteration):
        return None


def cpu_seconds(pid):
    """utime + stime of PID in seconds (fields 14 and 15 of /proc/PID/stat), or None."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; fields[0] is field 3
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_step_time(a, training, window_ends, failures):
    """The slowdown check of the docstring over the logging windows' (wall, CPU) ends."""
    ends = [training] + window_ends
    if len(window_ends) < 6:
        failures.append(f"{len(window_ends)} logging windows timed (want 6 or more)")
        return
    if any(e[1] is None for e in ends):
        failures.append("the process's CPU time could not be read at a window's end")
        return
    wall = [b[0] - a_[0] for a_, b in zip(ends, ends[1:])]
    cpu = [b[1] - a_[1] for a_, b in zip(ends, ends[1:])]
    if min(cpu) <= 0:
        # Two log lines seen in one poll (the watcher stalled), or windows shorter than a clock
        # tick: nothing was measured.
        failures.append(f"a logging window measured no CPU time ({cpu}); use longer windows "
                        "(--logging_steps)")
        return
    ms = lambda seconds: seconds / a.logging_steps * 1000
    first, last = min(cpu[:3]), min(cpu[-3:])
    print(f"step time (CPU, fastest of 3 windows of {a.logging_steps} steps, saves every "
          f"{a.save_steps} included): {ms(first):.3f} ms in the first three, {ms(last):.3f} ms "
          f"in the last three; wall: {ms(wall[0]):.3f} ms in the first window, "
          f"{ms(wall[-1]):.3f} ms in the last")
    if last > first * 1.5:
        failures.append(f"the last windows took {last / first:.2f}x the CPU time of the first")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run_synthetic", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--save_steps", type=int, default=200)
    p.add_argument("--logging_steps", type=int, default=1000)
    a = p.parse_args()
    out = os.path.join(a.work, "soak")
    log_path = out + ".log"
    cmd = [a.run_synthetic, "--output_dir", out, "--do_train", "--max_steps", str(a.steps),
           "--save_steps", str(a.save_steps), "--save_total_limit", "2",
           "--logging_steps", str(a.logging_steps), "--per_device_train_batch_size", "4",
           "--num_train_examples", "64", "--report_to", "none", "--disable_tqdm", "true",
           "--seed", "7"]
    samples = []  # (steps logged so far, rss kB, fds)
    window_ends = []  # (wall, CPU seconds) when each logging line appeared
    start = time.monotonic()
    training = None  # (wall, CPU seconds) when the training loop's banner appeared
    env = dict(os.environ, OMP_NUM_THREADS="1")  # CPU time that the machine's load leaves alone
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        while proc.poll() is None:
            s = sample(proc.pid)
            text = open(log_path, "rb").read()
            now = (time.monotonic(), cpu_seconds(proc.pid))
            if training is None and b"***** Running training *****" in text:
                training = now
            logged = text.count(b"{'loss'")
            while len(window_ends) < logged:
                window_ends.append(now)
            if s is not None:
                samples.append((logged * a.logging_steps, s[0], s[1]))
            time.sleep(0.02)
    if proc.returncode != 0:
        sys.exit(f"FAIL: run_synthetic exited {proc.returncode}; see {log_path}")
    failures = []

    n = len(samples)
    warm = [s for s in samples[n // 10: n // 5]]
    end = samples[-max(1, n // 10):]
    rss_warm = statistics.median(s[1] for s in warm)
    rss_end = statistics.median(s[1] for s in end)
    growth = rss_end / rss_warm - 1
    print(f"resident memory: {rss_warm / 1024:.1f} MiB after warm-up (10-20 % of the run), "
          f"{rss_end / 1024:.1f} MiB over the last 10 % ({growth * 100:+.2f} %), "
          f"max {max(s[1] for s in samples) / 1024:.1f} MiB; {n} samples")
    if growth > 0.01:
        failures.append(f"resident memory grew {growth * 100:.2f} % (> 1 %)")

    # Between saves (a save holds a file or two open for a moment): the fewest in each stretch.
    fds_warm, fds_end = min(s[2] for s in warm), min(s[2] for s in end)
    print(f"open descriptors between saves: {fds_warm} after warm-up, {fds_end} over the last "
          f"10 %; {min(s[2] for s in samples)}-{max(s[2] for s in samples)} over the run")
    if fds_end != fds_warm:
        failures.append(f"open descriptors went from {fds_warm} to {fds_end}")

    entries = sorted(os.listdir(out))
    checkpoints = sorted((e for e in entries if e.startswith("checkpoint-")),
                         key=lambda e: int(e.split("-")[1]))
    want = [f"checkpoint-{a.steps - a.save_steps}", f"checkpoint-{a.steps}"]
    hidden = [e for e in entries if e.startswith(".")]
    print(f"checkpoints left: {checkpoints}; hidden entries: {hidden}")
    if checkpoints != want or hidden:
        failures.append(f"checkpoints {checkpoints} (want {want}), hidden {hidden}")

    check_step_time(a, training or (start, 0.0), window_ends, failures)
    print(f"total {time.monotonic() - start:.0f} s")

    for f in failures:
        print("FAIL: " + f)
    print("soak: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

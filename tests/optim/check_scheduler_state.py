"""Python half of scheduler_state_interop_test: scheduler.pt written by loom must be what
scheduler.state_dict() holds in the Python torch of the same LibTorch (1.13 or 2.11), load into a Python scheduler and continue its
schedule; Python's own state_dict() must load into loom (checked by the C++ tool).

    check_scheduler_state.py cases DIR    writes DIR/cases.json (the recipes the tool follows)
    check_scheduler_state.py verify DIR   checks DIR/<case>.cpp.pt, writes DIR/<case>.py.pt
                                          and DIR/<case>.next.json (lrs of the next steps)
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import make_golden  # noqa: E402  (HF's schedules transcribed)

NEXT = 3  # steps taken after restoring a state
CASES = [
    {"name": "linear", "type": "linear", "kwargs": {}, "warmup_steps": 2, "total": 10, "steps": 4},
    {"name": "cosine_with_min_lr", "type": "cosine_with_min_lr", "kwargs": {"min_lr_rate": 0.1},
     "warmup_steps": 3, "total": 10, "steps": 6},
    {"name": "constant", "type": "constant", "kwargs": {}, "warmup_steps": 0, "total": 10,
     "steps": 2},
    {"name": "plateau", "type": "reduce_lr_on_plateau",
     "kwargs": {"patience": 1, "factor": 0.5, "cooldown": 1}, "warmup_steps": 0, "total": 10,
     "metrics": [1.0, 1.0, 1.0, 0.5], "next_metrics": [0.5, 0.5, 0.5]},
]


def build(case):
    opt = make_golden.two_group_sgd()
    sched = make_golden.hf_scheduler(case["type"], opt, case["warmup_steps"], case["total"],
                                     case["kwargs"])
    return opt, sched


def advance(case, opt, sched, phase):
    """The steps of `phase` ("first" or "next"); returns the lrs after each."""
    lrs = []
    if "metrics" in case:
        for m in case["metrics"] if phase == "first" else case["next_metrics"]:
            sched.step(m)
            lrs.append(make_golden.group_lrs(opt))
    else:
        for _ in range(case["steps"] if phase == "first" else NEXT):
            opt.step()
            sched.step()
            lrs.append(make_golden.group_lrs(opt))
    return lrs


def same(a, b):
    if isinstance(a, float) and isinstance(b, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    return a == b and type(a) == type(b)


def verify(d):
    failures = []
    for case in CASES:
        name = case["name"]
        opt, sched = build(case)
        advance(case, opt, sched, "first")
        expected_state = sched.state_dict()
        expected_next = advance(case, opt, sched, "next")

        loaded = torch.load(os.path.join(d, name + ".cpp.pt"))
        if not same(loaded, expected_state):
            failures.append("%s: loom's state %r != torch's %r" % (name, loaded, expected_state))
            continue
        # loom's file restores a Python scheduler that continues the same schedule (the
        # optimizer's lrs come back with the optimizer, as in HF's resume).
        opt2, sched2 = build(case)
        for g, lr in zip(opt2.param_groups, loaded.get("_last_lr", make_golden.group_lrs(opt2))):
            g["lr"] = lr
        if "metrics" not in case:
            for g, lr in zip(opt2.param_groups, loaded["base_lrs"]):
                g["initial_lr"] = lr
        sched2.load_state_dict(loaded)
        resumed = advance(case, opt2, sched2, "next")
        if resumed != expected_next:
            failures.append("%s: resumed from loom's state %r, expected %r" %
                            (name, resumed, expected_next))

        # Python's own state for loom to load.
        opt3, sched3 = build(case)
        advance(case, opt3, sched3, "first")
        torch.save(sched3.state_dict(), os.path.join(d, name + ".py.pt"))
        with open(os.path.join(d, name + ".next.json"), "w") as f:
            json.dump({"current": make_golden.group_lrs(opt3), "next": expected_next}, f)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("check_scheduler_state: loom's scheduler states match torch %s" % torch.__version__)


def main():
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "cases":
        cases = []
        for c in CASES:
            c = dict(c)
            c["group_lrs"] = [make_golden.LEARNING_RATE, make_golden.GROUP1_LR]
            c["learning_rate"] = make_golden.LEARNING_RATE
            c["next"] = NEXT
            cases.append(c)
        with open(os.path.join(d, "cases.json"), "w") as f:
            json.dump(cases, f)
    elif mode == "verify":
        verify(d)
    else:
        sys.exit("usage: check_scheduler_state.py cases|verify DIR")


if __name__ == "__main__":
    main()

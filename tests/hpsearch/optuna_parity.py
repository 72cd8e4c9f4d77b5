"""The Python side of //tests/hpsearch:optuna_parity_test: REAL optuna 4.6.0 against //hpsearch.

  optuna_parity.py write DIR     writes DIR/studies.json (the studies) and DIR/pruner_cases.json
  optuna_parity.py compare DIR   runs each study with optuna (TPESampler / RandomSampler /
                                 GridSampler, MedianPruner) and each pruner case with optuna's
                                 MedianPruner, and compares them with DIR/loom_studies.json and
                                 DIR/loom_pruner.json (written by study_runner): states,
                                 categorical and int parameters and grid ids exactly, floats to
                                 1e-12 relative. Exits 1 on any difference, naming it.

The objectives and the pruning schedule are the ones of sequential_study.cc, written with the
same floating-point operations in the same order.
"""

import json
import math
import os
import random
import sys

import numpy as np
import optuna
from optuna.samplers import GridSampler, RandomSampler, TPESampler
from optuna.trial import TrialState

REL_TOL = 1e-12

SPACES = {
    "quadratic_1d": {"x": {"type": "float", "low": -5, "high": 5}},
    "mixed_3d": {
        "lr": {"type": "float", "low": 1e-5, "high": 1e-1, "log": True},
        "layers": {"type": "int", "low": 1, "high": 8},
        "act": {"type": "categorical", "choices": ["relu", "tanh", "gelu"]},
    },
    "all_kinds": {
        "x": {"type": "float", "low": -3, "high": 3},
        "lr": {"type": "float", "low": 1e-4, "high": 1, "log": True},
        "drop": {"type": "float", "low": 0, "high": 0.5, "step": 0.1},
        "n": {"type": "int", "low": 0, "high": 20, "step": 2},
        "units": {"type": "int", "low": 4, "high": 256, "log": True},
        "opt": {"type": "categorical", "choices": ["sgd", "adam", "rmsprop"]},
        "bs": {"type": "categorical", "choices": [16, 32, 64]},
    },
    # Finite, for grid search (5 * 4 * 3 * 2 = 120 points).
    "grid_4d": {
        "drop": {"type": "float", "low": 0, "high": 0.5, "step": 0.125},
        "n": {"type": "int", "low": 0, "high": 6, "step": 2},
        "opt": {"type": "categorical", "choices": ["sgd", "adam", "rmsprop"]},
        "bs": {"type": "categorical", "choices": [16, 32]},
    },
}


def study_list():
    studies = []

    def add(objective, sampler, seed, direction, n_trials, prune="", space=None, journal=None):
        name = f"{objective}-{sampler}-seed{seed}-{direction}-{n_trials}"
        if prune:
            name += "-" + prune
        study = {"name": name, "objective": objective, "sampler": sampler, "seed": seed,
                 "direction": direction, "n_trials": n_trials, "prune": prune,
                 "space": SPACES[space or objective]}
        if journal is not None:
            # loom runs it through hpsearch::Study and its journal file, abandoning trial
            # `journal` (>= 0) as a killed search would and resuming the journal; optuna runs
            # the same study uninterrupted.
            study["name"] += f"-journal{journal}"
            study["via"] = "journal"
            study["interrupt_at"] = journal
        studies.append(study)

    for seed in (0, 1, 42):
        for direction in ("minimize", "maximize"):
            add("quadratic_1d", "tpe", seed, direction, 40)
            add("mixed_3d", "tpe", seed, direction, 40)
            add("quadratic_1d", "random", seed, direction, 30)
            add("mixed_3d", "random", seed, direction, 30)
    add("mixed_3d", "tpe", 3, "minimize", 100)
    add("quadratic_1d", "tpe", 5, "maximize", 100)
    for seed in (0, 7):
        add("all_kinds", "tpe", seed, "minimize", 40)
        add("all_kinds", "tpe", seed, "maximize", 40)
    add("all_kinds", "random", 0, "minimize", 30)
    for seed in (0, 5):
        for direction in ("minimize", "maximize"):
            add("mixed_3d", "tpe", seed, direction, 40, prune="schedule")
            add("quadratic_1d", "tpe", seed, direction, 40, prune="median")
    add("all_kinds", "tpe", 2, "minimize", 50, prune="schedule", space="all_kinds")
    # Through the journal (hpsearch::Study), uninterrupted and killed-and-resumed.
    add("mixed_3d", "tpe", 0, "minimize", 40, journal=-1)
    add("mixed_3d", "tpe", 42, "maximize", 40, journal=15)
    add("mixed_3d", "tpe", 1, "minimize", 30, journal=3)
    add("mixed_3d", "random", 1, "minimize", 30, journal=4)
    add("quadratic_1d", "tpe", 5, "minimize", 40, prune="median", journal=12)
    add("all_kinds", "tpe", 7, "maximize", 40, journal=20)
    add("grid_4d", "grid", 3, "minimize", 200, space="grid_4d", journal=7)
    # Grid search: the whole grid (the study stops when it is exhausted) and a partial one.
    for seed in (0, 3):
        add("grid_4d", "grid", seed, "minimize", 200, space="grid_4d")
    add("grid_4d", "grid", 9, "maximize", 30, space="grid_4d")
    return studies


# --- objectives (sequential_study.cc) ---

COSTS = {"relu": 0.5, "tanh": 0.0, "gelu": 0.25, "sgd": 0.3, "adam": 0.0, "rmsprop": 0.1,
         16: 0.2, 32: 0.0, 64: 0.05}


def suggest(trial, space):
    params = {}
    for name, d in space.items():
        if d["type"] == "float":
            params[name] = trial.suggest_float(name, d["low"], d["high"], log=d.get("log", False),
                                               step=d.get("step"))
        elif d["type"] == "int":
            params[name] = trial.suggest_int(name, d["low"], d["high"], log=d.get("log", False),
                                             step=d.get("step", 1))
        else:
            params[name] = trial.suggest_categorical(name, d["choices"])
    return params


def objective_value(objective, p):
    if objective == "quadratic_1d":
        d = p["x"] - 1.7
        return d * d
    if objective == "mixed_3d":
        t = math.log10(p["lr"]) + 3
        v = t * t
        l = p["layers"] - 4
        v = v + 0.1 * float(l * l)
        return v + COSTS[p["act"]]
    if objective in ("all_kinds", "grid_4d"):
        v = 0.0
        if "x" in p:
            v = p["x"] * p["x"]
        if "lr" in p:
            tl = math.log10(p["lr"]) + 2
            v = v + tl * tl
        d = p["drop"] - 0.2
        v = v + 10.0 * (d * d)
        m = float(p["n"] - 8) / 4.0
        v = v + m * m
        if "units" in p:
            u = math.log(float(p["units"]) / 64.0)
            v = v + 0.1 * (u * u)
        v = v + COSTS[p["opt"]]
        return v + COSTS[p["bs"]]
    raise ValueError(objective)


def make_objective(study_def):
    sign = -1.0 if study_def["direction"] == "maximize" else 1.0
    prune = study_def["prune"]

    def objective(trial):
        f = objective_value(study_def["objective"], suggest(trial, study_def["space"]))
        k = trial.number
        if prune == "schedule":
            if k % 11 == 10:
                raise optuna.TrialPruned()
            prune_at = k % 5 if k % 3 == 2 else -1
            for s in range(5):
                v = sign * (f + 1.0 / float(s + 1))
                if k % 7 == 6 and s == prune_at:
                    v = float("nan")
                trial.report(v, s)
                if s == prune_at:
                    raise optuna.TrialPruned()
        elif prune == "median":
            for s in range(8):
                trial.report(sign * (f + 2.0 / float(s + 1)), s)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        return sign * f

    return objective


def grid_values(d):
    if d["type"] == "categorical":
        return list(d["choices"])
    if d["type"] == "int":
        return list(range(d["low"], d["high"] + 1, d.get("step", 1)))
    n = math.floor((d["high"] - d["low"]) / d["step"] + 1e-8)
    return [min(d["low"] + float(k) * d["step"], float(d["high"])) for k in range(n + 1)]


def run_optuna(study_def):
    seed = study_def["seed"]
    if study_def["sampler"] == "tpe":
        sampler = TPESampler(seed=seed)
    elif study_def["sampler"] == "random":
        sampler = RandomSampler(seed=seed)
    else:
        grid = {name: grid_values(d) for name, d in study_def["space"].items()}
        sampler = GridSampler(grid, seed=seed)
    pruner = optuna.pruners.MedianPruner() if study_def["prune"] == "median" else \
        optuna.pruners.NopPruner()
    study = optuna.create_study(sampler=sampler, pruner=pruner,
                                direction=study_def["direction"])
    study.optimize(make_objective(study_def), n_trials=study_def["n_trials"])
    return study.get_trials(deepcopy=False)


# --- comparison ---

class Diff:
    def __init__(self):
        self.max_rel = {"parameter": (0.0, "-"), "value": (0.0, "-")}
        self.failures = []

    def floats(self, what, ours, theirs, kind="value"):
        if ours is None or theirs is None:
            if not (ours is None and (theirs is None or math.isnan(theirs))):
                self.failures.append(f"{what}: loom {ours!r}, optuna {theirs!r}")
            return
        if math.isnan(theirs) and math.isnan(ours):
            return
        if ours == theirs:
            return
        rel = abs(ours - theirs) / max(abs(theirs), 1e-300)
        if rel > self.max_rel[kind][0]:
            self.max_rel[kind] = (rel, what)
        if rel > REL_TOL:
            self.failures.append(f"{what}: loom {ours!r}, optuna {theirs!r} (relative {rel:.3g})")

    def exact(self, what, ours, theirs):
        if ours != theirs or type(ours) is not type(theirs):
            self.failures.append(f"{what}: loom {ours!r}, optuna {theirs!r}")


def compare_study(name, study_def, ours, theirs, diff):
    if len(ours) != len(theirs):
        diff.failures.append(f"{name}: loom ran {len(ours)} trials, optuna {len(theirs)}")
    for mine, t in zip(ours, theirs):
        where = f"{name} trial {t.number}"
        before = len(diff.failures)
        diff.exact(where + " state", mine["state"], t.state.name)
        for pname, d in study_def["space"].items():
            value = t.params.get(pname)
            if d["type"] == "float":
                diff.floats(f"{where} {pname}", mine["params"].get(pname), value, "parameter")
            else:
                diff.exact(f"{where} {pname}", mine["params"].get(pname), value)
        diff.floats(where + " value", mine["value"], t.value)
        steps = sorted(t.intermediate_values.items())
        if [s for s, _ in steps] != [s for s, _ in mine["intermediate"]]:
            diff.failures.append(f"{where}: intermediate steps differ")
        else:
            for (s, v), (_, w) in zip(steps, mine["intermediate"]):
                diff.floats(f"{where} step {s}", w, v)
        if study_def["sampler"] == "grid":
            diff.exact(where + " grid_id", mine.get("grid_id"), t.system_attrs.get("grid_id"))
            space = {k: list(v) for k, v in t.system_attrs.get("search_space", {}).items()}
            if mine.get("search_space") != space:
                diff.failures.append(f"{where}: search_space loom {mine.get('search_space')} "
                                     f"optuna {space}")
        if len(diff.failures) > before:
            diff.failures[-1] += " (the study's later trials are not compared)"
            return


# --- median pruner cases ---

def pruner_cases():
    rng = random.Random(20251129)
    cases = []
    for i in range(400):
        direction = rng.choice(["minimize", "maximize"])
        options = {"n_startup_trials": rng.choice([0, 1, 3, 5]),
                   "n_warmup_steps": rng.choice([0, 0, 1, 3]),
                   "interval_steps": rng.choice([1, 1, 2, 3]),
                   "n_min_trials": rng.choice([1, 1, 2, 4])}

        def curve(max_steps, nan_rate):
            steps = sorted(rng.sample(range(max_steps), rng.randint(0, max_steps)))
            out = []
            for s in steps:
                v = None if rng.random() < nan_rate else round(rng.gauss(1.0, 0.5), 3)
                out.append([s, v])
            return out

        trials = []
        for _ in range(rng.randint(0, 9)):
            state = rng.choice(["COMPLETE", "COMPLETE", "COMPLETE", "PRUNED", "RUNNING"])
            value = round(rng.gauss(1.0, 0.5), 3) if state == "COMPLETE" else None
            trials.append({"state": state, "value": value, "intermediate": curve(8, 0.1)})
        query = curve(8, 0.25 if i % 4 == 0 else 0.05)
        if i % 10 == 0:  # ties with the completed trials' values
            query = [[s, 1.0] for s in range(rng.randint(1, 6))]
        cases.append({"direction": direction, "options": options, "trials": trials,
                      "query": query})
    return cases


def optuna_prune(case):
    study = optuna.create_study(direction=case["direction"])
    nan = float("nan")
    for t in case["trials"]:
        inter = {s: (nan if v is None else v) for s, v in t["intermediate"]}
        state = TrialState[t["state"]]
        study.add_trial(optuna.trial.create_trial(
            state=state, value=t["value"], intermediate_values=inter))
    query = optuna.trial.create_trial(
        state=TrialState.RUNNING,
        intermediate_values={s: (nan if v is None else v) for s, v in case["query"]})
    pruner = optuna.pruners.MedianPruner(
        n_startup_trials=case["options"]["n_startup_trials"],
        n_warmup_steps=case["options"]["n_warmup_steps"],
        interval_steps=case["options"]["interval_steps"],
        n_min_trials=case["options"]["n_min_trials"])
    return bool(pruner.prune(study, query))


def main(argv):
    if len(argv) != 3 or argv[1] not in ("write", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, folder = argv[1], argv[2]
    if mode == "write":
        with open(os.path.join(folder, "studies.json"), "w") as f:
            json.dump(study_list(), f)
        with open(os.path.join(folder, "pruner_cases.json"), "w") as f:
            json.dump(pruner_cases(), f)
        return 0

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    assert optuna.__version__ == "4.6.0", optuna.__version__
    with open(os.path.join(folder, "loom_studies.json")) as f:
        loom = json.load(f)
    diff = Diff()
    n_trials = 0
    for study_def in study_list():
        trials = run_optuna(study_def)
        n_trials += len(trials)
        compare_study(study_def["name"], study_def, loom[study_def["name"]], trials, diff)
    with open(os.path.join(folder, "loom_pruner.json")) as f:
        loom_decisions = json.load(f)
    cases = pruner_cases()
    n_pruned = 0
    for i, case in enumerate(cases):
        theirs = optuna_prune(case)
        n_pruned += theirs
        if loom_decisions[i] != theirs:
            diff.failures.append(f"pruner case {i}: loom prune={loom_decisions[i]}, optuna "
                                 f"prune={theirs}: {json.dumps(case)}")
    largest = "; ".join(f"{kind}s {rel:.3g} ({at})" for kind, (rel, at) in diff.max_rel.items())
    print(f"optuna_parity: {len(study_list())} studies, {n_trials} trials compared; largest "
          f"relative float differences (tolerance {REL_TOL:g}): {largest}; {len(cases)} "
          f"median-pruner cases ({n_pruned} prune)")
    if diff.failures:
        print("\n".join(diff.failures[:40]), file=sys.stderr)
        print(f"FAIL: {len(diff.failures)} differences from optuna 4.6.0", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

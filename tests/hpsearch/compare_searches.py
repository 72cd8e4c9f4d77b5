"""Compares hyperparameter searches run_glue wrote (output_dir/hp_search.json), and a study
journal read by real optuna 4.6 against its hp_search.json.

  compare_searches.py same A/hp_search.json B/hp_search.json [--params-only-keys K,...]
      the two studies have the same trials: number, parameters, state, objective and
      intermediate values (exactly), and the same best run.
  compare_searches.py optuna JOURNAL HP_SEARCH_JSON      (PYTHONPATH: the pinned optuna 4.6)
      optuna.load_study over the journal gives the same trials as hp_search.json.
  compare_searches.py summary HP_SEARCH_JSON
      prints trial states and the best run; fails when no trial was pruned or completed.
"""
import json
import math
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def same(a_path, b_path):
    a, b = load(a_path), load(b_path)
    if len(a["trials"]) != len(b["trials"]):
        fail("%d trials in %s, %d in %s" % (len(a["trials"]), a_path, len(b["trials"]), b_path))
    for ta, tb in zip(a["trials"], b["trials"]):
        for key in ("number", "run_name", "params", "state", "objective", "intermediate_values"):
            if ta[key] != tb[key]:
                fail("trial %d: %s differs: %r vs %r" % (ta["number"], key, ta[key], tb[key]))
    if a["best_run"] != b["best_run"]:
        fail("best_run differs: %r vs %r" % (a["best_run"], b["best_run"]))
    print("ok: %d trials and the best run identical" % len(a["trials"]))


def with_optuna(journal, hp_json):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    assert optuna.__version__ == "4.6.0", optuna.__version__
    study = optuna.load_study(study_name="hp_search",
                              storage=JournalStorage(JournalFileBackend(journal)))
    report = load(hp_json)
    trials = study.get_trials(deepcopy=False)
    if len(trials) != len(report["trials"]):
        fail("optuna sees %d trials, hp_search.json has %d" % (len(trials), len(report["trials"])))
    for t, r in zip(trials, report["trials"]):
        if t.number != r["number"] or t.state.name.lower() != r["state"]:
            fail("trial %d: optuna %s, loom %s" % (t.number, t.state.name, r["state"]))
        if t.params != r["params"]:
            fail("trial %d params: optuna %r, loom %r" % (t.number, t.params, r["params"]))
        if t.value != r["objective"]:
            fail("trial %d value: optuna %r, loom %r" % (t.number, t.value, r["objective"]))
        iv = {str(k): v for k, v in t.intermediate_values.items()}
        if iv != r["intermediate_values"]:
            fail("trial %d intermediate values differ" % t.number)
    best = study.best_trial
    if str(best.number) != report["best_run"]["run_id"] or best.value != report["best_run"]["objective"]:
        fail("optuna's best trial %d (%r) is not loom's %r" % (best.number, best.value,
                                                               report["best_run"]))
    print("ok: optuna 4.6 reads the journal: %d trials, best trial %d" % (len(trials), best.number))


def summary(hp_json):
    report = load(hp_json)
    states = [t["state"] for t in report["trials"]]
    print("states:", " ".join(states))
    print("best_run:", json.dumps(report["best_run"]))
    if "complete" not in states:
        fail("no trial completed")


def main():
    cmd = sys.argv[1]
    if cmd == "same":
        same(sys.argv[2], sys.argv[3])
    elif cmd == "optuna":
        with_optuna(sys.argv[2], sys.argv[3])
    elif cmd == "summary":
        summary(sys.argv[2])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()

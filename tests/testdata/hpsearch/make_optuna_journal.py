"""Writes optuna_4.6_golden.journal with real optuna 4.6.0 (third_party/python/interop-optuna-4.6.txt):

  PYTHONPATH=<interop-optuna-4.6 folder> /usr/bin/python3 make_optuna_journal.py OUT

A 5-trial study "golden" (maximize, RandomSampler(seed=7)) over a log float, a stepped int and a
categorical with None, with user attributes, intermediate values, a PRUNED trial and a trial that
FAILed by returning NaN: every journal operation loom's reader (//hpsearch:journal) must replay.
"""
import sys

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend


def objective(trial):
    x = trial.suggest_float("x", 1e-3, 1.0, log=True)
    n = trial.suggest_int("n", 1, 9, step=2)
    trial.suggest_categorical("c", ["a", 16, None])
    trial.set_user_attr("note", "u%d" % trial.number)
    for step in range(3):
        trial.report(x * (step + 1), step)
    if trial.number == 2:
        raise optuna.TrialPruned()
    if trial.number == 3:
        return float("nan")
    return x * n


def main():
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = JournalStorage(JournalFileBackend(sys.argv[1]))
    study = optuna.create_study(study_name="golden", storage=storage, direction="maximize",
                                sampler=optuna.samplers.RandomSampler(seed=7))
    study.optimize(objective, n_trials=5)


if __name__ == "__main__":
    main()

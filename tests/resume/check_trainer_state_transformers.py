"""Python half of trainer_state_transformers_test.sh, run by Debian's /usr/bin/python3 with
PYTHONPATH set to the pinned transformers 4.38.2 or 4.41.2 (third_party/python):

    check_trainer_state_transformers.py DIR VERSION

DIR holds trainer_state_layout_tool's runs DIR/4.38 and DIR/4.41 (loom's
--save_for_transformers_version 4.38 and 4.41). With the real transformers VERSION it checks
that
  * TrainerState.load_from_json reads every trainer_state.json written for VERSION or an
    older version (checkpoint-4's and the run's own, from save_state) with the run's values,
    and save_to_json writes the same file back byte for byte;
  * transformers 4.38 refuses the 4.41 layout (TypeError on stateful_callbacks) and 4.41
    reads the 4.38 layout with stateful_callbacks == {};
  * under 4.41, the saved callback states restore through HF's own classes
    (ExportableState.from_state: EarlyStoppingCallback, TrainerControl) and give back the
    same state();
  * transformers.trainer_utils.get_last_checkpoint finds loom's checkpoint-4, and the real
    Trainer._load_rng_state restores Python's, numpy's and torch's CPU generators from its
    rng_state.pth.
Raises (non-zero exit) on the first mismatch.
"""
import json
import os
import random
import sys
import tempfile
import types

import numpy as np
import torch
import transformers
from transformers import Trainer
from transformers.trainer_callback import EarlyStoppingCallback, TrainerControl, TrainerState
from transformers.trainer_utils import get_last_checkpoint
from transformers.training_args import ParallelMode


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def check_values(state, run_dir, final):
    """The run's values: 4 steps, evaluations 0.5, 0.6, 0.55, 0.55, best at checkpoint-2."""
    check(state.global_step == 4, "global_step %r" % state.global_step)
    check(state.max_steps == 15, "max_steps %r" % state.max_steps)
    check(state.eval_steps == 1 and state.save_steps == 1, "eval/save steps")
    check(state.best_metric == 0.6, "best_metric %r" % state.best_metric)
    check(state.best_model_checkpoint == os.path.join(run_dir, "checkpoint-2"),
          "best_model_checkpoint %r" % state.best_model_checkpoint)
    evals = [(e["step"], e["eval_accuracy"]) for e in state.log_history if "eval_accuracy" in e]
    check(evals == [(1, 0.5), (2, 0.6), (3, 0.55), (4, 0.55)], "eval log %r" % evals)
    losses = [e["step"] for e in state.log_history if "loss" in e]
    check(losses == [2, 4], "training loss logged at steps %r" % losses)
    check(any("train_runtime" in e for e in state.log_history) == final,
          "the train summary is in save_state's file only")


def reads_back_exactly(path):
    """load_from_json, then HF's save_to_json gives back the same bytes."""
    state = TrainerState.load_from_json(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        again = os.path.join(tmp, "trainer_state.json")
        state.save_to_json(again)
        with open(again, encoding="utf-8") as f:
            check(f.read() == text, "%s: save_to_json does not give the same text" % path)
    return state


def check_restore_441(states):
    """transformers 4.41's _load_callback_state, with its own classes."""
    check(set(states) == {"EarlyStoppingCallback", "TrainerControl"},
          "stateful_callbacks %r" % sorted(states))
    early = EarlyStoppingCallback.from_state(states["EarlyStoppingCallback"])
    check(early.early_stopping_patience == 3, "patience %r" % early.early_stopping_patience)
    check(early.early_stopping_patience_counter == 2,
          "patience counter %r" % early.early_stopping_patience_counter)
    check(early.state() == states["EarlyStoppingCallback"], "EarlyStoppingCallback.state()")
    control = TrainerControl.from_state(states["TrainerControl"])
    check(control.state() == states["TrainerControl"], "TrainerControl.state()")


def check_rng_state_loads(checkpoint):
    """Trainer._load_rng_state (a single process) on loom's rng_state.pth, through a stand-in
    for the Trainer: the generators then hold the file's states."""
    saved = torch.load(os.path.join(checkpoint, "rng_state.pth"))
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    args = types.SimpleNamespace(world_size=1, process_index=0,
                                 parallel_mode=ParallelMode.NOT_PARALLEL)
    Trainer._load_rng_state(types.SimpleNamespace(args=args), checkpoint)
    check(random.getstate() == saved["python"], "random state not restored")
    numpy_state = np.random.get_state()
    check(numpy_state[0] == saved["numpy"][0] and
          np.array_equal(numpy_state[1], saved["numpy"][1]) and
          tuple(numpy_state[2:]) == tuple(saved["numpy"][2:]), "numpy state not restored")
    check(torch.equal(torch.get_rng_state(), saved["cpu"]), "torch CPU state not restored")


def main(root, version):
    check(transformers.__version__.startswith(version + "."),
          "running transformers %s, expected %s" % (transformers.__version__, version))
    for layout in ("4.38", "4.41"):
        run_dir = os.path.join(root, layout)
        check(get_last_checkpoint(run_dir) == os.path.join(run_dir, "checkpoint-4"),
              "get_last_checkpoint(%s) = %r" % (run_dir, get_last_checkpoint(run_dir)))
        check_rng_state_loads(os.path.join(run_dir, "checkpoint-4"))
        for path, final in [(os.path.join(run_dir, "checkpoint-4", "trainer_state.json"), False),
                            (os.path.join(run_dir, "trainer_state.json"), True)]:
            with open(path, encoding="utf-8") as f:
                keys = set(json.load(f))
            check(("stateful_callbacks" in keys) == (layout == "4.41"),
                  "%s: stateful_callbacks present only in the 4.41 layout" % path)
            if version == "4.38" and layout == "4.41":
                try:
                    TrainerState.load_from_json(path)
                except TypeError as e:
                    check("stateful_callbacks" in str(e), "%s: TypeError %s" % (path, e))
                else:
                    raise AssertionError("transformers 4.38 read the 4.41 layout of " + path)
                continue
            if layout == version:
                state = reads_back_exactly(path)
            else:
                state = TrainerState.load_from_json(path)
            check_values(state, run_dir, final)
            if version == "4.41":
                if layout == "4.38":
                    check(state.stateful_callbacks == {}, "4.41 reads no callbacks as {}")
                elif not final:
                    check_restore_441(state.stateful_callbacks)
    print("transformers %s: trainer_state.json layouts OK" % transformers.__version__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Compares a loom run_glue output folder with hf_trainer_glue.py's.

  usage: compare_hf_trainer_run.py LOOM_OUTPUT_DIR HF_OUTPUT_DIR [FIRST_STEP]
Per training step from FIRST_STEP on (default 1): `loss` equal (both are rounded to 4
decimals), `grad_norm` and `learning_rate` within 1e-5 relative; every evaluation's `eval_loss`
(mid-training ones from the log histories, the final one from loom's eval_results.json and
the Python side's evaluate()) equal; every tensor of the final model.safetensors bit-equal
(both sides run the same torch 1.13 kernels on one CPU process, and match exactly today;
a difference is reported with its size). Prints every step of both sides.
"""

import json
import sys

import torch
from safetensors.torch import load_file

TOL = 1e-5


def close(a, b):
    return abs(a - b) <= TOL * max(abs(a), abs(b), 1e-12)


def main(argv):
    loom_dir, hf_dir = argv[1], argv[2]
    first = int(argv[3]) if len(argv) > 3 else 1
    loom_log = json.load(open(f"{loom_dir}/trainer_state.json"))["log_history"]
    hf = json.load(open(f"{hf_dir}/log_history.json"))
    hf_log = hf["log_history"]
    errors = []

    def steps(log, key):
        return {e["step"]: e for e in log if key in e and e["step"] >= first}

    ls, hs = steps(loom_log, "loss"), steps(hf_log, "loss")
    if sorted(ls) != sorted(hs) or not ls:
        errors.append(f"logged steps differ: loom {sorted(ls)} vs HF {sorted(hs)}")
    for step in sorted(set(ls) & set(hs)):
        a, b = ls[step], hs[step]
        print(f"step {step}: loss loom {a['loss']} HF {b['loss']}; grad_norm loom "
              f"{a['grad_norm']!r} HF {b['grad_norm']!r}; lr loom {a['learning_rate']!r} "
              f"HF {b['learning_rate']!r}")
        if a["loss"] != b["loss"]:
            errors.append(f"step {step}: loss {a['loss']} vs HF {b['loss']}")
        for k in ("grad_norm", "learning_rate"):
            if not close(a[k], b[k]):
                errors.append(f"step {step}: {k} {a[k]!r} vs HF {b[k]!r}")

    le, he = steps(loom_log, "eval_loss"), steps(hf_log, "eval_loss")
    if sorted(le) != sorted(he):
        errors.append(f"evaluated steps differ: loom {sorted(le)} vs HF {sorted(he)}")
    final_loom = json.load(open(f"{loom_dir}/eval_results.json"))["eval_loss"]
    pairs = [(f"step {s}", le[s]["eval_loss"], he[s]["eval_loss"]) for s in sorted(set(le) & set(he))]
    pairs.append(("final evaluate()", final_loom, hf["eval"]["eval_loss"]))
    for what, a, b in pairs:
        print(f"eval_loss ({what}): loom {a!r} HF {b!r}")
        if a != b:
            errors.append(f"eval_loss ({what}): {a!r} vs HF {b!r}")

    wa = load_file(f"{loom_dir}/model.safetensors")
    wb = load_file(f"{hf_dir}/model.safetensors")
    if sorted(wa) != sorted(wb):
        errors.append(f"tensor names differ: {sorted(set(wa) ^ set(wb))}")
    worst, name = 0.0, None
    for k in sorted(set(wa) & set(wb)):
        d = (wa[k].double() - wb[k].double()).abs().max().item() if wa[k].numel() else 0.0
        if d > worst:
            worst, name = d, k
    bit_equal = all(torch.equal(wa[k], wb[k]) for k in set(wa) & set(wb))
    print(f"final weights: {'bit-equal' if bit_equal else f'max abs difference {worst:.3g} ({name})'}")
    if not bit_equal:
        errors.append(f"final weights not bit-equal: {name} differs by {worst:.3g}")
    if errors:
        sys.exit("FAIL: loom vs transformers " + hf["transformers"] + ":\n  " + "\n  ".join(errors))
    print(f"same as transformers {hf['transformers']}: {len(ls)} steps")


if __name__ == "__main__":
    main(sys.argv)

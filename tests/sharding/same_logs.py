"""same_logs.py REF OTHER WHAT [exact | grad_rtol=R]: two runs' trainer_state.json log the same
steps with the same loss and learning_rate, and grad_norm within 1e-6 relative (R with
grad_rtol=R, for runs whose weights drift apart in their last bits, as a 4 x 2 batch's do from
an 8 batch's: later gradients are taken at slightly different weights); with `exact`,
every logged entry is equal. Exits non-zero naming the first difference (prefixed by WHAT)."""
import json
import sys


def steps(path):
    return [e for e in json.load(open(path))["log_history"] if "loss" in e]


a, b, what = steps(sys.argv[1]), steps(sys.argv[2]), sys.argv[3]
exact = len(sys.argv) > 4 and sys.argv[4] in ("exact", "1")
grad_rtol = 1e-6
if len(sys.argv) > 4 and sys.argv[4].startswith("grad_rtol="):
    grad_rtol = float(sys.argv[4].split("=", 1)[1])
if [e["step"] for e in a] != [e["step"] for e in b] or not a:
    sys.exit(f"{what}: logged steps {[e['step'] for e in a]} vs {[e['step'] for e in b]}")
for x, y in zip(a, b):
    if exact and x != y:
        sys.exit(f"{what}: step {x['step']}: {x} vs {y}")
    if x["loss"] != y["loss"] or x["learning_rate"] != y["learning_rate"] or \
            abs(x["grad_norm"] - y["grad_norm"]) > grad_rtol * abs(x["grad_norm"]):
        sys.exit(f"{what}: step {x['step']}: {x} vs {y}")

#!/usr/bin/env bash
# The Python reference T5 (t5_reference.py) against the REAL transformers 4.41.2
# T5ForConditionalGeneration and generate (t5_hf_crosscheck.py): the same logits, loss,
# gradients, cached decoding and 28 generate settings per config, so that the reference
# //tests/models:t5_parity_test holds loom to is itself HF's behaviour. Fails (never skips)
# when Python or the pinned transformers is missing.
#   usage: t5_reference_crosscheck_test.sh CROSSCHECK_PY PATHS_SH
set -euo pipefail
source tests/require_python_transformers.sh "$2" 4.41  # sets python_with_transformers
python_with_transformers 4.41 "$1"

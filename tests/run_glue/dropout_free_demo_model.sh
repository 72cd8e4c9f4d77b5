#!/usr/bin/env bash
# Writes run_glue's demo model (and its synthetic SST-2 data, under OUT/synthetic_data) to OUT,
# with dropout off in its config.json — for tests that compare runs whose dropout draws would
# differ (one process against several, a resumed run against another world size).
#   usage: dropout_free_demo_model.sh RUN_GLUE OUT
set -euo pipefail
bin=$1 out=$2
timeout 120 "$bin" --output_dir "$out" --max_steps 1 --save_strategy no --report_to none \
  --disable_tqdm > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: demo model" >&2; exit 1; }
/usr/bin/python3 - "$out/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["hidden_dropout_prob"] = 0.0
c["attention_probs_dropout_prob"] = 0.0
json.dump(c, open(sys.argv[1], "w"), indent=2)
PYEOF

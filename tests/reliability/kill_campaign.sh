#!/usr/bin/env bash
# Runs kill_campaign.py on run_glue's dropout-free demo model. As a test (//...): one kill per
# strategy. For the numbers:
#   ./bazelw run -c opt //tests/reliability:kill_campaign -- --kills 100 [--strategies ddp,zero2]
#   usage: kill_campaign.sh RUN_GLUE LAUNCH DEMO_MODEL_SH KILL_CAMPAIGN_PY [campaign flags...]
set -euo pipefail
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
bin=$(abs "$1") launch=$(abs "$2") demo_model=$(abs "$3") campaign=$(abs "$4")
shift 4
work="${TEST_TMPDIR:-$(mktemp -d /tmp/loom_kill_campaign.XXXXXX)}"
echo "kill_campaign: working in $work"
"$demo_model" "$bin" "$work/model"
exec /usr/bin/python3 "$campaign" --run_glue "$bin" --launch "$launch" --model "$work/model" \
  --work "$work" "$@"

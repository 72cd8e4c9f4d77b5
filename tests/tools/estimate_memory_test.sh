#!/usr/bin/env bash
# //tools:estimate_memory: the command prints DeepSpeed's table (the golden file's
# first ZeRO-3 and first ZeRO-2 cases, whose inputs are given here in DeepSpeed's float
# notation), counts a saved run_glue folder's parameters as loading the model does (the demo's
# config.json gives the same count without weights), prints JSON, and refuses bad command lines
# with exit 2 and a message.
#   usage: estimate_memory_test.sh ESTIMATE_MEMORY GOLDEN RUN_GLUE
set -euo pipefail
tool=$1 golden=$2 run_glue=$3
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
case_of() {  # the golden printout of the case whose header line is $1
  awk -v h="$1" '$0 == h {on = 1; next} on && $0 == "END" {exit} on {print}' "$golden"
}
"$tool" --stage 3 --total_params 2.851774464e9 --largest_layer_params 32.9e6 \
  --num_gpus_per_node 8 > "$T/z3.txt"
diff <(case_of "CASE 3 2851774464 32900000 8 1 1.5") "$T/z3.txt" || fail "ZeRO-3 table"
"$tool" --stage 2 --total_params 2851774464 --num_gpus_per_node 8 > "$T/z2.txt"
diff <(case_of "CASE 2 2851774464 0 8 1 1.5") "$T/z2.txt" || fail "ZeRO-2 table"
echo "ok: DeepSpeed's tables"

timeout 120 "$run_glue" --output_dir "$T/demo" --max_steps 1 --save_strategy no \
  --report_to none --disable_tqdm > "$T/demo.log" 2>&1 || { cat "$T/demo.log"; fail "demo"; }
"$tool" --model_name_or_path "$T/demo" --format json > "$T/demo.json"
mkdir -p "$T/config_only" && cp "$T/demo/config.json" "$T/config_only/"
"$tool" --model_name_or_path "$T/config_only" --format json > "$T/config.json"
"$PY" - "$T/demo.json" "$T/config.json" "$T/demo/model.safetensors" <<'PYEOF'
import json, struct, sys, math
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
data = open(sys.argv[3], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
params = {k: v for k, v in header.items() if k != "__metadata__" and v["dtype"] != "I64"}
total = sum(math.prod(v["shape"]) for v in params.values())
modules = {}
for k, v in params.items():
    modules[k.rsplit(".", 1)[0]] = modules.get(k.rsplit(".", 1)[0], 0) + math.prod(v["shape"])
assert a["total_params"] == total == b["total_params"], (a["total_params"], total, b["total_params"])
assert a["largest_layer_params"] == max(modules.values()) == b["largest_layer_params"], a
assert [r["offload_param"] for r in a["rows"]] == ["cpu", "cpu", "none", "none", "none", "none"]
print(f"ok: {total} parameters, largest layer {a['largest_layer_params']}")
PYEOF

bad() {  # WANT ARGS...
  local want=$1; shift
  set +e
  "$tool" "$@" > /dev/null 2> "$T/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "$*: exit $rc"
  grep -qF -- "$want" "$T/err.txt" || fail "$*: no '$want': $(cat "$T/err.txt")"
}
bad "--stage must be 2 or 3" --stage 4 --total_params 10
bad "--total_params (a whole number) or --model_name_or_path is needed" --stage 2
bad "--stage 3 needs --largest_layer_params" --stage 3 --total_params 1e9
bad "--total_params (a whole number)" --stage 2 --total_params 1.5
bad "--format must be text or json" --stage 2 --total_params 10 --format yaml
set +e
"$tool" --model_name_or_path "$T/nowhere" > /dev/null 2> "$T/err.txt"
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "holds no model weights" "$T/err.txt" || fail "missing folder: exit $rc"
"$tool" --help > "$T/help.txt" 2>&1 || true
grep -q -- "-largest_layer_params" "$T/help.txt" || fail "--help"
"$tool" --stage 2 --total_params 1e9 --check > "$T/check.txt"
grep -q "  ZeRO-2           measured .* MiB, estimated .* MiB (1.000x)" "$T/check.txt" ||
  { cat "$T/check.txt"; fail "--check"; }
echo "estimate_memory_test: PASS"

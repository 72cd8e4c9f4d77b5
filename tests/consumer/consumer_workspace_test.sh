#!/usr/bin/env bash
# A workspace outside loom that depends on it, as README.md ("Use loom from your own Bazel
# workspace") tells a user to write one:
#   1. README's WORKSPACE and .bazelrc snippets, verbatim (loom's path filled in), in an empty
#      folder under $TEST_TMPDIR, with examples/consumer's BUILD, train_demo.cc and
#      ds_zero2.json; examples/consumer's own WORKSPACE and .bazelrc say the same;
#   2. a nested Bazel (its own output root, loom's shared disk cache, the LibTorch this build
#      uses) builds //:train_demo and every target README lists for outside use;
#   3. `bazel run @loom//tools:zero_to_fp32 -- --help` prints the tool's usage;
#   4. README's commands: train_demo in one process, and under `bazel run @loom//tools:launch`
#      at 2 ranks with ZeRO-2 (ds_zero2.json), plus the same at 2 ranks with DDP as the
#      reference. Checked: each rank's model-state bytes against closed forms, the saved
#      model's tensors, eval accuracy, ZeRO-2's losses equal to DDP's, and the ZeRO-2
#      checkpoint consolidated by zero_to_fp32 equal to the saved model;
#   5. a program launch carries, named by label (`@loom//examples/translation:run_translation`,
#      its demo cut to 2 steps): loom's SentencePiece library found in @loom's runfiles.
#   The nested runs see none of this test's own runfiles variables.
#   usage: consumer_workspace_test.sh README SAFETENSORS_EQUAL_PY PUBLIC [NAME=VALUE ...]
#   (PUBLIC: the BUILD file's comma-separated copy of README's public targets; NAME=VALUE:
#   the LOOM_LIBTORCH / LOOM_PYTHON_CACHE / LOOM_CUDA_HOME of this build)
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

README=$(readlink -f "$1")
EQUAL=$(readlink -f "$2")
BUILD_PUBLIC=$3
shift 3
LIBTORCH_ENV=("$@")
# The test runs unsandboxed (tag "local"): README.md's runfile resolves to loom's own tree.
LOOM=$(dirname "$README")
[[ -f $LOOM/deps.bzl && -f $LOOM/examples/consumer/train_demo.cc ]] ||
  fail "$LOOM is not loom's source tree (no deps.bzl or examples/consumer/train_demo.cc)"

# block NAME: the lines of README's fenced block between <!-- NAME:begin ... --> and
# <!-- NAME:end -->, without the fences.
block() {
  sed -n "/<!-- $1:begin/,/<!-- $1:end -->/p" "$README" | { grep -v -e '^<!--' -e '^```' || true; }
}
# code FILE: FILE's Starlark / rc lines without comments, blank lines or whitespace.
code() {
  grep -v -e '^\s*#' -e '^\s*$' "$1" | tr -d ' \n'
}

echo "== 1. the README's snippets in an empty folder outside loom"
WORK=$TEST_TMPDIR/consumer
mkdir -p "$WORK"
snippet=$(block consumer-workspace)
printf '%s\n' "${snippet//\/path\/to\/loom/"$LOOM"}" >"$WORK/WORKSPACE"
block consumer-bazelrc >"$WORK/.bazelrc"
grep -q "local_repository(name = \"loom\", path = \"$LOOM\")" "$WORK/WORKSPACE" ||
  fail "README's consumer-workspace block has no local_repository line for /path/to/loom"
grep -q "std=c++17" "$WORK/.bazelrc" || fail "README's consumer-bazelrc block has no -std=c++17"
cp "$LOOM"/examples/consumer/{BUILD,train_demo.cc,ds_zero2.json} "$WORK/"
example=$LOOM/examples/consumer
[[ $(code "$example/WORKSPACE" | sed 's/^workspace(name="consumer")//; s#"\.\./\.\."#"/path/to/loom"#') == \
   "$(block consumer-workspace | tr -d ' \n')" ]] ||
  fail "examples/consumer/WORKSPACE no longer says what README.md's snippet says"
[[ $(code "$example/.bazelrc") == "$(block consumer-bazelrc | tr -d ' \n')" ]] ||
  fail "examples/consumer/.bazelrc no longer says what README.md's snippet says"

# Bazel in the consumer workspace: its own output root (a server of its own, shut down at
# the end), the disk cache every clone of loom shares, the LibTorch of this build.
home=$(getent passwd "$(id -u)" | cut -d: -f6)
BAZEL_FLAGS=(--disk_cache="$home/.cache/loom-bazel-disk" --nosandbox_debug --color=no
             --curses=no --show_progress_rate_limit=60)
in_consumer() {
  (cd "$WORK" && env -u TEST_SRCDIR -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE \
     "${LIBTORCH_ENV[@]}" bazel --output_user_root="$TEST_TMPDIR/bazel_root" \
     --max_idle_secs=300 "$@")
}
# At the end: the server stopped and its output root (gigabytes, partly read-only) removed.
cleanup() {
  in_consumer shutdown >/dev/null 2>&1 || true
  chmod -R u+w "$TEST_TMPDIR/bazel_root" 2>/dev/null || true
  rm -rf "$TEST_TMPDIR/bazel_root"
}
trap cleanup EXIT

echo "== 2. build //:train_demo and every target README lists for outside use"
mapfile -t PUBLIC < <(sed -n '/<!-- public:begin/,/<!-- public:end -->/p' "$README" |
                      grep -o '`@loom//[^`]*`' | tr -d '`')
((${#PUBLIC[@]} >= 30)) || fail "README's public list has ${#PUBLIC[@]} targets (markers moved?)"
[[ $(printf '%s\n' "${PUBLIC[@]#@loom}" | sort) == "$(tr , '\n' <<<"$BUILD_PUBLIC" | sort)" ]] ||
  fail "README.md's public targets and tests/consumer/BUILD's PUBLIC_TARGETS differ; make them agree"
start=$SECONDS
in_consumer build "${BAZEL_FLAGS[@]}" //:train_demo "${PUBLIC[@]}" ||
  fail "the consumer workspace does not build //:train_demo and ${PUBLIC[*]}"
echo "ok: built //:train_demo and ${#PUBLIC[@]} public targets in $((SECONDS - start)) s"

echo "== 3. bazel run @loom//tools:zero_to_fp32 -- --help"
help=$(in_consumer run "${BAZEL_FLAGS[@]}" @loom//tools:zero_to_fp32 -- --help 2>"$TEST_TMPDIR/help.err") ||
  { cat "$TEST_TMPDIR/help.err"; fail "zero_to_fp32 --help failed"; }
grep -q '^zero_to_fp32: the fp32 weights of a DeepSpeed ZeRO checkpoint' <<<"$help" ||
  fail "zero_to_fp32 --help printed: $help"
echo "ok: $(head -1 <<<"$help")"

echo "== 4. README's commands"
# --use_cpu: the same runs on a machine with GPUs (one GPU cannot host two ranks).
COMMON=(--do_train --do_eval --num_train_epochs 3 --learning_rate 0.05 --seed 42
        --report_to none --disable_tqdm true --use_cpu true)
OUT=$TEST_TMPDIR/runs
in_consumer run "${BAZEL_FLAGS[@]}" //:train_demo -- --output_dir "$OUT/one" \
  --per_device_train_batch_size 8 "${COMMON[@]}" >"$OUT.one.log" 2>&1 ||
  { cat "$OUT.one.log"; fail "train_demo (one process) failed"; }
launch() {
  local name=$1
  shift
  in_consumer run "${BAZEL_FLAGS[@]}" @loom//tools:launch -- --nproc_per_node 2 \
    bazel-bin/train_demo --output_dir "$OUT/$name" --per_device_train_batch_size 4 \
    "${COMMON[@]}" "$@" >"$OUT.$name.log" 2>&1 ||
    { cat "$OUT.$name.log"; fail "train_demo under @loom//tools:launch ($name) failed"; }
}
launch zero2 --deepspeed ds_zero2.json --save_strategy epoch
launch ddp

# Closed forms. The model: Linear(8, 16) and Linear(16, 4), fp32: P parameters, of which
# DECAY in the weights (HF's weight-decay group) and NODECAY in the biases. torch's AdamW keeps
# two fp32 moments per parameter and a 4-byte step per parameter tensor it steps.
P=$((8 * 16 + 16 + 16 * 4 + 4))
DECAY=$((8 * 16 + 16 * 4))
NODECAY=$((16 + 4))
# One process: every tensor whole; 4 parameter tensors. zero_grad frees the gradients on
# LibTorch 2.x (set_to_none defaults to true) and zeroes them in place on Debian's 1.13.
grads_one=0
[[ " ${LIBTORCH_ENV[*]} " == *" LOOM_LIBTORCH=debian "* ]] && grads_one=$((4 * P))
one="rank 0 of 1: strategy single process; bytes on this rank: parameters $((4 * P)), gradients $grads_one, optimizer_states $((2 * 4 * P + 4 * 4)), master_weights 0"
# ZeRO-2 at 2 ranks: fp32 parameters whole; gradients, fp32 master weights and the moments of
# each group's flat partition halved (both groups split evenly); a step per group (2).
half=$((DECAY / 2 + NODECAY / 2))
zero2="strategy ZeRO-2; bytes on this rank: parameters $((4 * P)), gradients $((4 * half)), optimizer_states $((2 * 4 * half + 2 * 4)), master_weights $((4 * half))"
expect() {
  grep -qF "$2" "$OUT.$1.log" || { cat "$OUT.$1.log"; fail "$1: no line '$2'"; }
  echo "ok: $1: $2"
}
expect one "train_demo: $one"
expect one "train_demo: model.safetensors: 4 tensors, $P elements"
for rank in 0 1; do expect zero2 "train_demo: rank $rank of 2: $zero2"; done
expect zero2 "train_demo: model.safetensors: 4 tensors, $P elements"

# Accuracy (the demo learns its task) and ZeRO-2 against DDP (same global batches).
python3 - "$OUT" <<'EOF' || fail "the runs' metrics (above)"
import json, sys
out = sys.argv[1]
metric = lambda run, split, key: json.load(open(f"{out}/{run}/{split}_results.json"))[key]
ok = True
for run in ["one", "zero2", "ddp"]:
    accuracy = metric(run, "eval", "eval_accuracy")
    print(f"{run}: eval_accuracy {accuracy}")
    ok &= accuracy >= 0.85  # chance: 0.25
for split, key in [("train", "train_loss"), ("eval", "eval_loss")]:
    z, d = metric("zero2", split, key), metric("ddp", split, key)
    print(f"{key}: ZeRO-2 {z!r}, DDP {d!r} (|difference| {abs(z - d):.2e}, limit 1e-6)")
    ok &= abs(z - d) <= 1e-6 * max(1.0, abs(d))
sys.exit(0 if ok else 1)
EOF

# The ZeRO-2 checkpoint of the last step, consolidated by zero_to_fp32, is the saved model.
in_consumer run "${BAZEL_FLAGS[@]}" @loom//tools:zero_to_fp32 -- "$OUT/zero2/checkpoint-96" \
  "$OUT/zero2_fp32.safetensors" >"$OUT.fp32.log" 2>&1 ||
  { cat "$OUT.fp32.log"; fail "zero_to_fp32 on the ZeRO-2 checkpoint failed"; }
python3 "$EQUAL" "$OUT/zero2_fp32.safetensors" "$OUT/zero2/model.safetensors" ||
  fail "zero_to_fp32's consolidation of checkpoint-96 differs from the saved model"

echo "== 5. @loom//tools:launch running a program it carries, by label"
in_consumer run "${BAZEL_FLAGS[@]}" @loom//tools:launch -- --nproc_per_node 1 \
  @loom//examples/translation:run_translation --output_dir "$OUT/translation" --max_steps 2 \
  --use_cpu true >"$OUT.translation.log" 2>&1 ||
  { cat "$OUT.translation.log"; fail "@loom//examples/translation:run_translation by label failed"; }
[[ -s $OUT/translation/spiece.model ]] ||
  { cat "$OUT.translation.log"; fail "run_translation wrote no spiece.model (SentencePiece)"; }
echo "ok: run_translation by label trained its SentencePiece model and 2 steps"
echo "PASS"

#!/usr/bin/env bash
# run_glue --push_to_hub end to end, against two real remotes on this machine: a bare
# repository over file:// (git-lfs's standalone transfer) and an HTTP git server on 127.0.0.1
# (hub/testdata/git_http_server.py: git http-backend, an LFS API, the Hub's create-repo call;
# every request needs the token).
#   1. Every hub_strategy (end, every_save, checkpoint, all_checkpoints) to both remotes: the
#      remote's history is HF's commits in HF's order; its tree has the model files (weights in
#      LFS), last-checkpoint/ or checkpoint-N/ only where the strategy pushes them, no optimizer
#      state outside checkpoints; a fresh clone's weights equal output_dir's bit for bit and it
#      loads in run_glue (--do_eval gives output_dir's accuracy).
#   2. hub_model_id user/name under LOOM_HUB_URL with --hub_private_repo: created private
#      through the create-repo API; a URL remote with --hub_private_repo is refused before work.
#   3. hub_strategy checkpoint: a fresh clone resumes from last-checkpoint (a relative path
#      resolved in output_dir) and ends bit-exactly where the uninterrupted run ends.
#   4. A slow remote: saves during a running push are skipped (training went on meanwhile), or
#      all pushed in order with --hub_always_push; the end-of-training push waited.
#   5. Token leaks: runs with --hub_token and with HF_TOKEN; the token is in no file under
#      output_dir (.git included), the remote, the logs, nor in /proc/*/cmdline sampled while
#      git pushed.
#   6. Failures: the remote going down mid-run (warnings, training completes, the final push is a
#      non-zero exit naming the remote, output_dir complete); a wrong token (the same at the end).
#   7. Two ranks under //tools:launch: the same history as one process; only rank 0 pushes.
#   usage: run_glue_push_test.sh RUN_GLUE SERVER_PY DEMO_MODEL_SH SAME_LOGS_PY LAUNCH
set -euo pipefail
bin=$(realpath "$1") server_py=$(realpath "$2") demo_model=$(realpath "$3")
same_logs=$(realpath "$4") launch=$(realpath "$5")
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
export HOME="$T/home"  # no user token file, a git config of our own
mkdir -p "$HOME"
unset HF_TOKEN HF_HOME LOOM_HUB_URL HF_ENDPOINT
git config --global user.name loom-test
git config --global user.email test@loom
git lfs install --skip-repo > /dev/null
TOKEN="hf_loomTestToken$RANDOM$RANDOM"
# Clones over HTTP get the token from an askpass program (not from a command line).
printf '#!/bin/sh\necho "$CLONE_TOKEN"\n' > "$T/askpass.sh"
chmod +x "$T/askpass.sh"

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --do_eval --max_eval_samples 32 --max_seq_length 32 --logging_steps 1 --report_to none
        --disable_tqdm --seed 7 --per_device_train_batch_size 4 --lr_scheduler_type constant)

SERVER_PID=""
start_server() {  # ROOT [DELAY] [EXIT_AFTER_PUSHES]; sets PORT and SERVER_PID
  rm -f "$1.port"
  GIT_SERVER_TOKEN="$TOKEN" EXIT_AFTER_PUSHES="${3:-0}" "$PY" "$server_py" "$1" "$1.port" \
    "${2:-0}" 2>> "$1.log" &
  SERVER_PID=$!
  for _ in $(seq 100); do [[ -s "$1.port" ]] && break; sleep 0.05; done
  [[ -s "$1.port" ]] || fail "the git server did not start: $(cat "$1.log")"
  PORT=$(cat "$1.port")
}
stop_server() { [[ -z "$SERVER_PID" ]] || kill "$SERVER_PID" 2> /dev/null || true; SERVER_PID=""; }
trap stop_server EXIT

run() {  # OUT [flags...]
  local out=$1; shift
  timeout 300 "$bin" --output_dir "$out" "${COMMON[@]}" "$@" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "$out: run_glue $*"; }
}
history_of() { git --git-dir "$1" log --format=%s main | tac | paste -sd'|'; }
tree_of() { git --git-dir "$1" ls-tree -r --name-only main; }
clone() {  # URL DEST
  CLONE_TOKEN="$TOKEN" GIT_ASKPASS="$T/askpass.sh" GIT_TERMINAL_PROMPT=0 \
    git clone -q -b main "$1" "$2" 2> "$2.log" || { cat "$2.log"; fail "clone $1"; }
}
accuracy() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["eval_accuracy"])' "$1"; }

S="Training in progress, step"
declare -A EXPECTED=(
  [end]="Model save|End of training"
  [every_save]="$S 2|$S 4|Model save|End of training"
  [checkpoint]="$S 2|$S 2, checkpoint|$S 4|$S 4, checkpoint|Model save|End of training"
  [all_checkpoints]="$S 2|$S 2, checkpoint|$S 4|$S 4, checkpoint|Model save|End of training"
)

check_remote() {  # NAME STRATEGY GITDIR URL OUT
  local name=$1 strategy=$2 gitdir=$3 url=$4 out=$5
  local got tree
  got=$(history_of "$gitdir")
  [[ "$got" == "${EXPECTED[$strategy]}" ]] ||
    fail "$name: remote history '$got', expected '${EXPECTED[$strategy]}'"
  tree=$(tree_of "$gitdir")
  for f in model.safetensors config.json README.md training_args.bin vocab.txt .gitattributes \
           .gitignore trainer_state.json all_results.json; do
    grep -qx "$f" <<< "$tree" || fail "$name: $f missing from the remote"
  done
  ! grep -qx "optimizer.pt" <<< "$tree" || fail "$name: optimizer state pushed outside checkpoints"
  ! grep -q "^_\|^tmp-checkpoint" <<< "$tree" || fail "$name: scratch files pushed"
  case $strategy in
    end|every_save)
      ! grep -q "checkpoint" <<< "$tree" || fail "$name: checkpoints pushed" ;;
    checkpoint)
      grep -qx "last-checkpoint/optimizer.pt" <<< "$tree" || fail "$name: no last-checkpoint/"
      ! grep -q "^checkpoint-" <<< "$tree" || fail "$name: checkpoint-N/ pushed" ;;
    all_checkpoints)
      grep -qx "checkpoint-2/optimizer.pt" <<< "$tree" && grep -qx "checkpoint-4/model.safetensors" \
        <<< "$tree" || fail "$name: checkpoint folders missing"
      ! grep -q "^last-checkpoint" <<< "$tree" || fail "$name: last-checkpoint/ pushed" ;;
  esac
  git --git-dir "$gitdir" show main:model.safetensors | head -c 100 |
    grep -q "^version https://git-lfs" || fail "$name: weights not stored with LFS"
  # HF passes the tokenizer to the Trainer: every checkpoint push carries it, checkpoints too.
  if [[ $strategy != end ]]; then
    local first
    first=$(git --git-dir "$gitdir" log --format=%H --grep="^$S 2\$" main)
    git --git-dir "$gitdir" cat-file -e "$first:vocab.txt" ||
      fail "$name: the first checkpoint push has no tokenizer"
  fi
  [[ $strategy != checkpoint ]] || grep -qx "last-checkpoint/vocab.txt" <<< "$tree" ||
    fail "$name: last-checkpoint/ has no tokenizer"
  clone "$url" "$T/clone-$name"
  cmp -s "$T/clone-$name/model.safetensors" "$out/model.safetensors" ||
    fail "$name: the clone's weights differ from output_dir's"
  timeout 120 "$bin" --model_name_or_path "$T/clone-$name" --task_name sst2 \
    --data_dir "$T/m/synthetic_data" --do_eval --max_eval_samples 32 --max_seq_length 32 \
    --report_to none --disable_tqdm --output_dir "$T/eval-$name" > "$T/eval-$name.log" 2>&1 ||
    { cat "$T/eval-$name.log"; fail "$name: the clone does not load"; }
  [[ "$(accuracy "$T/eval-$name/eval_results.json")" == "$(accuracy "$out/eval_results.json")" ]] ||
    fail "$name: the clone evaluates differently"
  echo "ok: $name: history '$got', LFS weights, the clone loads and equals output_dir"
}

# 1a. file:// remotes.
for s in end every_save checkpoint all_checkpoints; do
  git init -q --bare -b main "$T/file-$s.git"
  run "$T/out-file-$s" --max_steps 4 --save_steps 2 --push_to_hub --hub_strategy "$s" \
    --hub_always_push --hub_model_id "file://$T/file-$s.git"
  check_remote "file-$s" "$s" "$T/file-$s.git" "file://$T/file-$s.git" "$T/out-file-$s"
done

# 1b. The HTTP remote, which needs the token.
start_server "$T/srv"
for s in end every_save checkpoint all_checkpoints; do
  url="http://127.0.0.1:$PORT/user/http-$s"
  run "$T/out-http-$s" --max_steps 4 --save_steps 2 --push_to_hub --hub_strategy "$s" \
    --hub_always_push --hub_model_id "$url" --hub_token "$TOKEN"
  check_remote "http-$s" "$s" "$T/srv/user/http-$s.git" "$url" "$T/out-http-$s"
done

# 2. hub_private_repo through the Hub's create-repo API; refused for a plain git URL.
LOOM_HUB_URL="http://127.0.0.1:$PORT" HF_TOKEN="$TOKEN" run "$T/out-private" --max_steps 2 \
  --save_steps 2 --push_to_hub --hub_model_id me/private-model --hub_private_repo
[[ "$(cat "$T/srv/me/private-model.git/loom-visibility")" == private ]] ||
  fail "hub_private_repo: the repository was not created private"
[[ "$(history_of "$T/srv/me/private-model.git")" == "$S 2|Model save|End of training" ]] ||
  fail "private: history $(history_of "$T/srv/me/private-model.git")"
grep -q "Created the private repository me/private-model" "$T/out-private.log" ||
  fail "private: no creation logged"
if timeout 120 "$bin" --output_dir "$T/out-private-url" "${COMMON[@]}" --max_steps 2 --push_to_hub \
    --hub_model_id "file://$T/file-end.git" --hub_private_repo > "$T/private-url.log" 2>&1; then
  fail "--hub_private_repo with a file:// remote was accepted"
fi
grep -q "\-\-hub_private_repo: .*git URL or path" "$T/private-url.log" || {
  cat "$T/private-url.log"; fail "no clear hub_private_repo error"; }
[[ ! -e "$T/out-private-url/checkpoint-2" ]] || fail "hub_private_repo refused after training"
echo "ok: hub_private_repo creates a private repository; refused for a git URL before training"

# 3. Resume from last-checkpoint in a fresh clone, bit-exactly.
run "$T/ref" --max_steps 4 --save_steps 2
git init -q --bare -b main "$T/resume.git"
run "$T/first" --max_steps 2 --save_steps 2 --push_to_hub --hub_strategy checkpoint \
  --hub_model_id "file://$T/resume.git"
clone "file://$T/resume.git" "$T/resumed"
[[ ! -e "$T/resumed/checkpoint-2" && -e "$T/resumed/last-checkpoint/optimizer.pt" ]] ||
  fail "the clone should hold last-checkpoint/ only"
(cd "$T" && run "$T/resumed" --max_steps 4 --save_steps 2 --resume_from_checkpoint \
  last-checkpoint --push_to_hub --hub_strategy checkpoint --hub_model_id "file://$T/resume.git")
grep -q "resuming from $T/resumed/last-checkpoint" "$T/resumed.log" || fail "resume: not resolved"
cmp -s "$T/ref/model.safetensors" "$T/resumed/model.safetensors" ||
  fail "resume from last-checkpoint: weights differ from the uninterrupted run"
"$PY" "$same_logs" "$T/ref/trainer_state.json" "$T/resumed/trainer_state.json" \
  "resume from last-checkpoint" exact
[[ "$(history_of "$T/resume.git")" == "$S 2|$S 2, checkpoint|Model save|End of training|$S 4|$S 4, checkpoint|Model save|End of training" ]] ||
  fail "resume: history $(history_of "$T/resume.git")"
echo "ok: a fresh clone resumes from last-checkpoint bit-exactly and pushes on"
stop_server

# 4. A slow remote (every push request held 1.5 s).
start_server "$T/slow" 1.5
run "$T/out-slow" --max_steps 8 --save_steps 1 --push_to_hub --hub_token "$TOKEN" \
  --hub_model_id "http://127.0.0.1:$PORT/user/slow"
skipped=$(grep -c "Not pushing .*checkpoint-[0-9]*: the previous push is still running" \
  "$T/out-slow.log" || true)
started=$(grep -c "Pushing .*checkpoint-[0-9]* in the background" "$T/out-slow.log" || true)
((skipped > 0 && started > 0 && skipped + started == 8)) ||
  fail "slow remote: $started pushes started and $skipped skipped of 8 saves"
grep -q "Waiting for the current checkpoint push to be finished" "$T/out-slow.log" ||
  fail "slow remote: training did not wait for the running push at its end"
h=$(history_of "$T/slow/user/slow.git")
[[ "$h" == *"|Model save|End of training" && $(grep -o "$S" <<< "$h" | wc -l) -eq $started ]] ||
  fail "slow remote: history '$h' with $started pushes started"
echo "ok: slow remote: $started pushes, $skipped saves skipped while one ran; the last push waited"
run "$T/out-slow-always" --max_steps 4 --save_steps 1 --push_to_hub --hub_token "$TOKEN" \
  --hub_always_push --hub_model_id "http://127.0.0.1:$PORT/user/slow-always"
[[ "$(history_of "$T/slow/user/slow-always.git")" == "$S 1|$S 2|$S 3|$S 4|Model save|End of training" ]] ||
  fail "hub_always_push: history $(history_of "$T/slow/user/slow-always.git")"
echo "ok: hub_always_push queues every save's push, in order"

# 5. Token leaks, with --hub_token and with HF_TOKEN: /proc/*/cmdline sampled during the pushes.
leak_check() {  # NAME OUT [env...] -- [flags...]
  local name=$1 out=$2; shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  : > "$T/cmdlines-$name"
  env "${envs[@]}" "$bin" --output_dir "$out" "${COMMON[@]}" --max_steps 6 --save_steps 1 \
    --push_to_hub --hub_always_push --hub_model_id "http://127.0.0.1:$PORT/user/$name" "$@" \
    > "$out.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do grep -q "Pushing to http" "$out.log" 2> /dev/null && break; sleep 0.05; done
  while kill -0 "$pid" 2> /dev/null; do
    for f in /proc/[0-9]*/cmdline; do
      { tr '\0' ' ' < "$f"; } 2> /dev/null && echo
    done >> "$T/cmdlines-$name"
    sleep 0.05
  done
  wait "$pid" || { cat "$out.log"; fail "$name: run failed"; }
  local pushing
  pushing=$(grep -c "git-remote-http\|git-lfs\| push -q" "$T/cmdlines-$name" || true)
  ((pushing > 0)) || fail "$name: no git push process was sampled"
  ! grep -qF "$TOKEN" "$T/cmdlines-$name" || fail "$name: the token is in a process's cmdline"
  ! grep -rqF "$TOKEN" "$out" || fail "$name: the token is in $(grep -rlF "$TOKEN" "$out")"
  ! grep -rqF "$TOKEN" "$T/slow" || fail "$name: the token is on the remote"
  ! grep -qF "$TOKEN" "$out.log" "$T/slow.log" || fail "$name: the token is in a log"
  echo "ok: $name: the token is in no file, log or sampled cmdline" \
    "($pushing command lines of git pushing sampled)"
}
leak_check leak-flag "$T/out-leak-flag" LEAK=1 -- --hub_token "$TOKEN"
leak_check leak-env "$T/out-leak-env" HF_TOKEN="$TOKEN" --
stop_server

# 6a. The remote goes down mid-run (the server exits after its first push).
start_server "$T/down" 0 1
if timeout 300 "$bin" --output_dir "$T/out-down" "${COMMON[@]}" --max_steps 6 --save_steps 1 \
    --push_to_hub --hub_always_push --hub_token "$TOKEN" \
    --hub_model_id "http://127.0.0.1:$PORT/user/down" > "$T/out-down.log" 2>&1; then
  fail "remote down: the final push failed but run_glue exited 0"
fi
grep -q "Pushing to the hub failed; training goes on: .*127.0.0.1:$PORT/user/down" \
  "$T/out-down.log" || { cat "$T/out-down.log"; fail "remote down: no warning naming the remote"; }
grep -q "train metrics" "$T/out-down.log" || fail "remote down: training did not complete"
grep -q "run_glue: error: .*127.0.0.1:$PORT/user/down" "$T/out-down.log" ||
  fail "remote down: the final error does not name the remote"
for f in model.safetensors config.json README.md train_results.json eval_results.json \
         checkpoint-6/optimizer.pt; do
  [[ -s "$T/out-down/$f" ]] || fail "remote down: output_dir lacks $f"
done
[[ "$(history_of "$T/down/user/down.git")" == "$S 1" ]] ||
  fail "remote down: history $(history_of "$T/down/user/down.git")"
echo "ok: remote down mid-run: warnings, training completed, exit non-zero naming the remote"
stop_server

# 6b. A wrong token: training completes, the final push is a clear error, output_dir intact.
start_server "$T/wrong"
if timeout 300 "$bin" --output_dir "$T/out-wrong" "${COMMON[@]}" --max_steps 2 --save_steps 2 \
    --push_to_hub --hub_token hf_WRONG_TOKEN_123 \
    --hub_model_id "http://127.0.0.1:$PORT/user/wrong" > "$T/out-wrong.log" 2>&1; then
  fail "wrong token: run_glue exited 0"
fi
grep -q "run_glue: error: .*127.0.0.1:$PORT/user/wrong" "$T/out-wrong.log" ||
  { cat "$T/out-wrong.log"; fail "wrong token: no clear final error"; }
! grep -q "hf_WRONG_TOKEN_123" "$T/out-wrong.log" || fail "wrong token: the token is in the log"
[[ -s "$T/out-wrong/model.safetensors" && -s "$T/out-wrong/checkpoint-2/optimizer.pt" ]] ||
  fail "wrong token: output_dir incomplete"
echo "ok: wrong token: a clear error at the final push, exit non-zero, output_dir intact"
stop_server

# 7. Two ranks: rank 0 alone pushes.
git init -q --bare -b main "$T/ranks.git"
timeout 300 "$launch" --standalone --nproc_per_node 2 --prefix_output "$bin" \
  --output_dir "$T/out-ranks" "${COMMON[@]}" --per_device_train_batch_size 2 --max_steps 4 \
  --save_steps 2 --push_to_hub --hub_strategy checkpoint --hub_always_push \
  --hub_model_id "file://$T/ranks.git" > "$T/out-ranks.log" 2>&1 ||
  { cat "$T/out-ranks.log"; fail "2 ranks: run failed"; }
[[ "$(history_of "$T/ranks.git")" == "${EXPECTED[checkpoint]}" ]] ||
  fail "2 ranks: history $(history_of "$T/ranks.git")"
grep -q "^\[rank 0\]:.*Pushing .*checkpoint-2 in the background" "$T/out-ranks.log" ||
  fail "2 ranks: rank 0 did not push"
! grep -q "^\[rank 1\]:.*\(Pushing\|Not pushing\|checkpoint push\)" "$T/out-ranks.log" || fail "2 ranks: rank 1 touched the hub"
echo "ok: 2 ranks: HF's history, pushed by rank 0 only"
echo "PASS"

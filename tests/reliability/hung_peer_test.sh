#!/usr/bin/env bash
# Dead and hung peers under //tools:launch, for DDP, ZeRO-2, ZeRO-3 and FSDP full_shard at 2
# ranks of run_glue with --ddp_timeout 10: a rank stopped with SIGSTOP, or whose TCP
# connections are cut mid-training (cut_connections.py), makes the other rank and the launcher
# exit non-zero within ddp_timeout + 10 s, the errors naming the rank (the surviving rank's
# "rank R did not report the failure" or "the rendezvous store (hosted by rank 0) does not
# answer", the launcher's "rank R ... is stopped" or "rank R ... failed" with the cut-off rank's
# own "or this rank is cut off"), and no rank process is left.
#   usage: hung_peer_test.sh RUN_GLUE LAUNCH DEMO_MODEL_SH CUT_CONNECTIONS_PY
set -euo pipefail
bin=$1 launch=$2 demo_model=$3 cut=$4
T="$TEST_TMPDIR"
PY=/usr/bin/python3
TIMEOUT=10
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --logging_steps 50 --report_to none --disable_tqdm --seed 7
        --per_device_train_batch_size 4 --max_steps 1000000 --save_strategy no
        --ddp_timeout "$TIMEOUT")
strategy_flags() {
  case $1 in
    ddp) ;;
    zero2) echo '--deepspeed {"zero_optimization":{"stage":2}}' ;;
    zero3) echo '--deepspeed {"zero_optimization":{"stage":3}}' ;;
    fsdp) echo '--fsdp full_shard' ;;
  esac
}

rank_pid() {  # LAUNCHER_PID RANK
  local pid
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "RANK=$2"; then echo "$pid"; return; fi
  done
}

# One case: STRATEGY FAULT(stop|cut) VICTIM_RANK
run_case() {
  local strategy=$1 fault=$2 victim=$3 out="$T/$1_$2_$3"
  # shellcheck disable=SC2046
  "$launch" --standalone --nproc_per_node 2 --grace_period_s 3 "$bin" --output_dir "$out" \
    "${COMMON[@]}" $(strategy_flags "$strategy") > "$out.log" 2>&1 &
  local launcher=$!
  for _ in $(seq 1 600); do
    grep -q "Running training" "$out.log" 2>/dev/null && break
    kill -0 "$launcher" 2>/dev/null || { cat "$out.log"; fail "$strategy: launch ended early"; }
    sleep 0.1
  done
  sleep 2  # inside the training loop, collectives running
  local pid ranks; pid=$(rank_pid "$launcher" "$victim")
  [[ -n $pid ]] || { cat "$out.log"; fail "$strategy: rank $victim not found"; }
  ranks=$(pgrep -P "$launcher" | tr '\n' ' ')
  local start; start=$(date +%s.%N)
  if [[ $fault == stop ]]; then kill -STOP "$pid"; else "$PY" "$cut" "$pid" >> "$out.log"; fi
  local code=0
  timeout $((TIMEOUT + 30)) tail --pid="$launcher" -f /dev/null || true
  if kill -0 "$launcher" 2>/dev/null; then
    kill -9 -- -"$launcher" "$launcher" $ranks 2>/dev/null || true
    cat "$out.log"
    fail "$strategy/$fault: launch still running $((TIMEOUT + 30)) s after the fault"
  fi
  wait "$launcher" || code=$?
  local took; took=$("$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
    "$start" "$(date +%s.%N)")
  [[ $code -ne 0 ]] || { cat "$out.log"; fail "$strategy/$fault: launch exited 0"; }
  "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= $TIMEOUT + 10 else 1)" "$took" ||
    { cat "$out.log"; fail "$strategy/$fault: launch took $took s (ddp_timeout $TIMEOUT + 10)"; }
  # Who names the victim: a stopped rank, its peer's error and the launcher ("is stopped"); a
  # cut-off rank fails first itself (its store is cut too: "this rank is cut off"), or its peer
  # names it.
  local named
  if [[ $fault == stop ]]; then
    named="rank $victim did not report the failure"
    [[ $victim == 0 ]] && named="the rendezvous store (hosted by rank 0) does not answer"
    grep -q "launch: rank $victim (local_rank $victim, pid $pid) is stopped" "$out.log" ||
      { cat "$out.log"; fail "$strategy/stop: launch did not name the stopped rank"; }
  elif grep -q "launch: rank $victim (local_rank $victim, pid $pid) failed" "$out.log"; then
    named="or this rank is cut off"
  else
    named="rank $victim did not report the failure"
  fi
  grep -q "$named" "$out.log" || { cat "$out.log"; fail "$strategy/$fault: no error says '$named'"; }
  for p in $ranks; do
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p"; fail "$strategy/$fault: rank process $p left"; fi
  done
  echo "ok: $strategy, $fault rank $victim: launch exited $code after $took s; $(grep -m1 -o "$named[^;]*" "$out.log")"
}

for strategy in ddp zero2 zero3 fsdp; do
  run_case "$strategy" stop 1
  run_case "$strategy" cut 1
done
run_case ddp stop 0
echo "hung_peer_test: PASS"

#!/bin/bash
# //tools:launch --standalone --nproc_per_node N starts N allreduce_rank processes; each reads
# the launcher's torchrun variables through DistributedEnvFromProcess, forms a Gloo group, and
# checks the sum 1 + ... + N. Runs N = 2 and 4; bounded by `timeout`.
set -euo pipefail
LAUNCH="$TEST_SRCDIR/$TEST_WORKSPACE/tools/launch"
RANK_BIN="$TEST_SRCDIR/$TEST_WORKSPACE/tests/distributed/allreduce_rank"

for n in 2 4; do
  out="$TEST_TMPDIR/out_$n.txt"
  timeout 60 "$LAUNCH" --standalone --nproc_per_node "$n" "$RANK_BIN" 20 >"$out" 2>&1 || {
    echo "launch with $n ranks failed:"; cat "$out"; exit 1; }
  want_sum=$(( n * (n + 1) / 2 ))
  gathered=$(seq -s, 0 $(( n - 1 )))
  for (( r = 0; r < n; r++ )); do
    if ! grep -q "rank $r/$n sum $want_sum gathered $gathered\$" "$out"; then
      echo "missing 'rank $r/$n sum $want_sum gathered $gathered' in:"; cat "$out"; exit 1
    fi
  done
  echo "ok: $n ranks"
done

#!/usr/bin/env bash
# The Accelerate tutorial's claim (transformers docs, "Distributed training with 🤗 Accelerate"): the
# distributed loop differs from the single-process one by four changes — the include, creating the
# Accelerator, Prepare in place of the device moves, Backward in place of backward. The changed
# lines of the two example files must be exactly these, plus the evaluation each epoch handing
# the Accelerator over so predictions are gathered across processes (accelerate's
# gather_for_metrics; the tutorial itself does not evaluate).
#   usage: tutorial_diff_test.sh PLAIN_CC ACCELERATED_CC
set -euo pipefail
got=$(diff --unchanged-line-format= --old-line-format='-%L' --new-line-format='+%L' "$1" "$2" || true)
want='+#include "accelerate/accelerator.h"
+  ASSIGN_OR_RETURN(auto accelerator, accelerate::Accelerator::Create());
+  RETURN_IF_ERROR(accelerator->Prepare(train_dataloader, eval_dataloader, model, optimizer));
-  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
-  model->to(device);
-      for (auto& [name, tensor] : *batch) tensor = tensor.to(device);
-      loss.backward();
+      RETURN_IF_ERROR(accelerator->Backward(loss));
-    ASSIGN_OR_RETURN(double accuracy, EvaluateAccuracy(*model, *eval_dataloader));
+    ASSIGN_OR_RETURN(double accuracy, EvaluateAccuracy(*model, *eval_dataloader, accelerator.get()));'
if [[ "$got" != "$want" ]]; then
  echo "FAIL: the tutorial's two versions differ by more (or less) than the four changes:"
  diff <(echo "$want") <(echo "$got") || true
  exit 1
fi
echo "PASS: exactly the four changes and the gathered evaluation"

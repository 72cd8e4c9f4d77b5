#!/usr/bin/env bash
# bundle.sh [OUT] — builds the CUDA configuration of the programs the GPU checks run
# (`./bazelw build -c opt --config=cuda` of //examples/glue:run_glue, //tools:launch,
# //tools:gpu_order, //tests/gpu:cuda_checks_test) and collects them with the shared libraries
# they need into OUT (default gpu/bundle, git-ignored, at most 60 MiB) with
# gpu/collect_bundle.sh; see gpu/README.md for
# carrying it to the GPU machine and running gpu/device_check.sh there.
# LOOM_BUNDLE_CONFIG=torch2 bundles the CPU build instead (for trying the bundle without CUDA).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-gpu/bundle}
config=${LOOM_BUNDLE_CONFIG:-cuda}
targets=(//examples/glue:run_glue //tools:launch //tools:gpu_order //tests/gpu:cuda_checks_test)
flags=(-c opt "--config=$config")

./bazelw build "${flags[@]}" "${targets[@]}"
bin=$(./bazelw info "${flags[@]}" bazel-bin 2>/dev/null)
# LIBTORCH_ROOT of @libtorch: the torch folder this configuration linked.
torch_root=$(sed -n 's/^LIBTORCH_ROOT = ["'"'"']\(.*\)["'"'"']$/\1/p' \
  "$(./bazelw info "${flags[@]}" output_base 2>/dev/null)/external/libtorch/defs.bzl")
[[ -f $torch_root/lib/libc10.so ]] || { echo "bundle.sh: no LibTorch at '$torch_root'" >&2; exit 1; }
commit=$(git rev-parse HEAD)
git diff --quiet HEAD || commit+=" (with uncommitted changes)"

LOOM_TORCH_LIB=$torch_root/lib LOOM_BUNDLE_COMMIT=$commit LOOM_BUNDLE_CONFIG="-c opt --config=$config" \
  gpu/collect_bundle.sh "$out" "$bin/examples/glue/run_glue" "$bin/tools/launch" "$bin/tools/gpu_order" \
  "$bin/tests/gpu/cuda_checks_test"
cat "$out/MANIFEST.txt"

# Sourced by the Python-reference sh_tests (source tests/require_python_torch.sh, with
# //tests:require_python_torch in the test's data): sets `py` to the Python whose torch is the
# LibTorch this build links (@libtorch//:python.sh: Debian's /usr/bin/python3 with
# python3-torch 1.13 under --config=debian; by default the pinned torch 2.11 wheel's virtual
# environment, with LD_LIBRARY_PATH set for it) and exits with a FAIL
# message (never a skip) when it is missing or cannot import torch and numpy.
source external/libtorch/python.sh
py=$LOOM_TORCH_PYTHON
if [[ -n $LOOM_TORCH_PYTHON_LD_LIBRARY_PATH ]]; then
  export LD_LIBRARY_PATH=$LOOM_TORCH_PYTHON_LD_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [[ -z $py ]]; then
  echo "FAIL: this LibTorch (LOOM_LIBTORCH set to a folder) has no matching Python torch to" \
       "compare against; use the default, --config=torch2 or --config=debian." >&2
  exit 1
fi
if [[ ! -x $py ]]; then
  echo "FAIL: $py not found. Debian's python3 with python3-torch and python3-numpy, or the" \
       "pinned torch 2.11 environment, is installed by ./bazelw." >&2
  exit 1
fi
if ! err=$("$py" -c 'import torch, numpy' 2>&1); then
  echo "FAIL: $py cannot import torch and numpy (./bazelw installs them: Debian's python3-torch" \
       "and python3-numpy, or the pinned torch 2.11 environment). Python said: $err" >&2
  exit 1
fi

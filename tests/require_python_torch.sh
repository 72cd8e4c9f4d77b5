# Sourced by the Python-reference sh_tests (source tests/require_python_torch.sh, with
# //tests:require_python_torch.sh in the test's data): sets `py` to Debian's /usr/bin/python3
# and exits with a FAIL message (never a skip) when it is missing or cannot import torch and
# numpy (python3-torch and python3-numpy, both installed by ./bazelw).
py=/usr/bin/python3
if [[ ! -x $py ]]; then
  echo "FAIL: $py not found. This test needs Debian's python3 with python3-torch and" \
       "python3-numpy (installed by ./bazelw)." >&2
  exit 1
fi
if ! err=$("$py" -c 'import torch, numpy' 2>&1); then
  echo "FAIL: $py cannot import torch and numpy. Install Debian's python3-torch and" \
       "python3-numpy (apt-get install python3-torch python3-numpy). Python said: $err" >&2
  exit 1
fi

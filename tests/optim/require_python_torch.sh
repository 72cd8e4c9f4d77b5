# Sourced by the sh_tests of //tests/optim: sets `py` to Debian's /usr/bin/python3 and exits
# with a FAIL message (never a skip) when it is missing or cannot import torch.
py=/usr/bin/python3
if [[ ! -x $py ]]; then
  echo "FAIL: $py not found. This test needs Debian's python3 with python3-torch" \
       "(installed by ./bazelw: apt-get install python3-torch)." >&2
  exit 1
fi
if ! err=$("$py" -c 'import torch' 2>&1); then
  echo "FAIL: $py cannot import torch. Install Debian's python3-torch" \
       "(apt-get install python3-torch). Python said: $err" >&2
  exit 1
fi

# Sourced by the sh_tests that run REAL optuna 4.6.0 (pinned in
# third_party/python/interop-optuna-4.6.txt, installed by ./bazelw into /var/cache/loom/python):
#
#   source tests/hpsearch/require_optuna.sh "$(rootpath @python_interop//:paths.sh)"
#   PYTHONPATH="$optuna_dir" "$py" script.py ...
#
# with //tests/hpsearch:require_optuna.sh and @python_interop//:paths.sh in the test's data.
# Sets `py` (Debian's /usr/bin/python3, whose numpy 1.24.2 optuna uses) and `optuna_dir`, and
# exits with a FAIL message (never a skip) when the folder is missing or does not import
# numpy and optuna 4.6.0.
if [[ $# -lt 1 || ! -f $1 ]]; then
  echo "FAIL: require_optuna.sh needs @python_interop//:paths.sh (got: $*)" >&2
  exit 1
fi
source "$1"
optuna_dir=${LOOM_PY_INTEROP_OPTUNA_4_6:-}
if [[ -z $optuna_dir || ! -d $optuna_dir ]]; then
  echo "FAIL: optuna 4.6's pinned packages are not installed (folder: '$optuna_dir'). Run" \
       "./bazelw, which installs third_party/python/interop-optuna-4.6.txt into" \
       "/var/cache/loom/python." >&2
  exit 1
fi
py=/usr/bin/python3
if ! err=$(PYTHONPATH="$optuna_dir" "$py" -c '
import numpy, optuna
assert optuna.__version__ == "4.6.0", optuna.__version__' 2>&1); then
  echo "FAIL: $py with PYTHONPATH=$optuna_dir cannot import numpy and optuna 4.6.0 (./bazelw" \
       "installs Debian's python3-numpy and python3-yaml, and the pinned optuna; remove the" \
       "folder and run ./bazelw to reinstall it). Python said: $err" >&2
  exit 1
fi

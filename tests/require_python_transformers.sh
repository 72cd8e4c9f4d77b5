# Sourced by the sh_tests that run REAL transformers / accelerate (pinned in
# third_party/python/*.txt, installed by ./bazelw into /var/cache/loom/python):
#
#   source tests/require_python_transformers.sh "$(rootpath @python_interop//:paths.sh)" 4.38 4.41
#   python_with_transformers 4.38 check.py ARGS...   # Debian's python3, PYTHONPATH = 4.38's folder
#
# with //tests:require_python_transformers.sh, //tests:require_python_torch.sh and
# @python_interop//:paths.sh in the test's data. Sets `py` (require_python_torch.sh) and exits
# with a FAIL message (never a skip) when a named version's folder is missing or does not
# import that transformers.
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy
if [[ $# -lt 2 || ! -f $1 ]]; then
  echo "FAIL: require_python_transformers.sh needs @python_interop//:paths.sh and versions" \
       "(got: $*)" >&2
  exit 1
fi
source "$1"
shift

# The folder holding transformers VERSION (4.38 or 4.41) and what it imports.
transformers_folder() {
  local var="LOOM_PY_INTEROP_TRANSFORMERS_${1//./_}"
  echo "${!var:-}"
}

python_with_transformers() {
  local folder
  folder=$(transformers_folder "$1")
  shift
  PYTHONPATH="$folder" "$py" "$@"
}

for version in "$@"; do
  folder=$(transformers_folder "$version")
  if [[ -z $folder || ! -d $folder ]]; then
    echo "FAIL: transformers $version's pinned packages are not installed (folder:" \
         "'${folder}'). Run ./bazelw, which installs third_party/python/interop-transformers-$version.txt" \
         "into /var/cache/loom/python." >&2
    exit 1
  fi
  if ! err=$(python_with_transformers "$version" -c "
import transformers, transformers.trainer_callback, transformers.training_args
assert transformers.__version__.startswith('$version.'), transformers.__version__" 2>&1); then
    echo "FAIL: $py with PYTHONPATH=$folder cannot import transformers $version. Remove" \
         "the folder and run ./bazelw to reinstall it. Python said: $err" >&2
    exit 1
  fi
done

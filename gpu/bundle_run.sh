#!/usr/bin/env bash
# A loom GPU bundle's launcher (gpu/collect_bundle.sh installs it as OUT/run.sh):
#
#   OUT/run.sh NAME ARGS...            runs OUT/bin/NAME ARGS... (gpu_order, launch, run_glue)
#   OUT/run.sh --print-ld-library-path prints the LD_LIBRARY_PATH the binaries run with
#
# The binaries link LibTorch but the bundle does not carry it: torch's libraries come from
# the machine's Python torch, found with `python3 -c 'import torch'` (its torch/lib and the
# nvidia/*/lib folders of the NVIDIA wheels beside it), or from LOOM_TORCH_LIB (a torch/lib
# folder) when set. The torch version must match the one the bundle was built against
# (MANIFEST.txt); LibTorch's C++ ABI changes between releases. LD_LIBRARY_PATH becomes
#   OUT/lib : [OUT/lib/fallback] : torch/lib : nvidia/*/lib : the caller's LD_LIBRARY_PATH
# where OUT/lib/fallback (this bundle's libstdc++) is used only when the machine's libstdc++
# lacks the GLIBCXX version the bundle needs. Libraries stored compressed (NAME.xz) are
# unpacked into OUT/lib (or, when it is read-only, a folder under TMPDIR) on first use (xz,
# else Python's lzma).
set -euo pipefail
shopt -s inherit_errexit

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() {
  echo "run.sh: $*" >&2
  exit 127
}

manifest_value() {
  sed -n "s/^$1: //p" "$bundle/MANIFEST.txt"
}

# Prints torch's lib folder, checking its version against the manifest's.
torch_lib_folder() {
  local lib version want
  want=$(manifest_value torch)
  if [[ -n ${LOOM_TORCH_LIB:-} ]]; then
    lib=$LOOM_TORCH_LIB
    version=$(sed -n "s/^__version__ = '\(.*\)'.*/\1/p" "$lib/../version.py" 2>/dev/null || true)
  else
    command -v python3 >/dev/null || die "no python3 with torch here; set LOOM_TORCH_LIB to a torch/lib folder"
    read -r lib version < <(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"), torch.__version__)') ||
      die "python3 cannot import torch; set LOOM_TORCH_LIB to a torch/lib folder"
  fi
  [[ -f $lib/libc10.so ]] || die "$lib has no libc10.so: not a torch/lib folder"
  # 2.11.0+cu130 and 2.11.0 are the same LibTorch release.
  if [[ ${version%%+*} != "${want%%+*}" ]]; then
    die "this bundle was built against torch $want, but $lib is torch ${version:-of unknown version}"
  fi
  echo "$lib"
}

# The NVIDIA wheels' library folders next to torch (site-packages/nvidia/*/lib).
nvidia_lib_folders() {
  local d
  for d in "$1"/../../nvidia/*/lib; do
    [[ -d $d ]] && printf ':%s' "$(cd "$d" && pwd)"
  done
  return 0
}

# Where compressed libraries are unpacked: OUT/lib, or a folder under TMPDIR when OUT is
# read-only.
unpack_folder() {
  if [[ -w $bundle/lib ]]; then
    echo "$bundle/lib"
  else
    echo "${TMPDIR:-/tmp}/loom-bundle-$(id -u)-$(cksum <<<"$bundle" | cut -d' ' -f1)"
  fi
}

unpack_compressed() {
  local xz_file target folder
  folder=$(unpack_folder)
  mkdir -p "$folder"
  for xz_file in "$bundle"/lib/*.xz; do
    [[ -e $xz_file ]] || continue
    target=$folder/$(basename "${xz_file%.xz}")
    [[ -e $target ]] && continue
    if command -v xz >/dev/null; then
      xz -dc "$xz_file" >"$target.tmp.$$"
    else
      python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' \
        "$xz_file" >"$target.tmp.$$"
    fi
    mv -f "$target.tmp.$$" "$target"
  done
}

system_libstdcxx_is_enough() {
  local want f
  want=$(manifest_value glibcxx_needed)
  [[ -z $want ]] && return 0
  for f in /lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
    /usr/lib64/libstdc++.so.6 /lib64/libstdc++.so.6; do
    [[ -e $f ]] && grep -qa "$want" "$f" && return 0
  done
  return 1
}

ld_library_path() {
  local torch_lib path
  torch_lib=$(torch_lib_folder)
  path=$bundle/lib
  [[ $(unpack_folder) == "$bundle/lib" ]] || path+=:$(unpack_folder)
  system_libstdcxx_is_enough || path+=:$bundle/lib/fallback
  path+=:$torch_lib$(nvidia_lib_folders "$torch_lib")
  [[ -n ${LD_LIBRARY_PATH:-} ]] && path+=:$LD_LIBRARY_PATH
  echo "$path"
}

main() {
  [[ $# -ge 1 ]] || die "usage: run.sh NAME ARGS... | run.sh --print-ld-library-path (NAME: $(ls "$bundle/bin" | tr '\n' ' '))"
  unpack_compressed
  local path
  path=$(ld_library_path)
  if [[ $1 == --print-ld-library-path ]]; then
    echo "$path"
    return 0
  fi
  [[ -x $bundle/bin/$1 ]] || die "no binary $1 in $bundle/bin ($(ls "$bundle/bin" | tr '\n' ' '))"
  local name=$1
  shift
  LD_LIBRARY_PATH=$path exec "$bundle/bin/$name" "$@"
}

main "$@"

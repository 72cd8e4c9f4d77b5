#!/usr/bin/env bash
# cpu_stub_libs.sh SITE_PACKAGES: loader stand-ins that let the PyPI torch wheel (a CUDA
# build: its libtorch_cuda.so is loaded by `import torch` even on a machine without a GPU, and
# by every binary of loom's --config=cuda) load on a CPU-only machine that has the CUDA 13
# toolkit but lacks three of the wheel's NVIDIA dependencies: cuFile (libcufile.so.0),
# cuSPARSELt (libcusparseLt.so.0) and NVSHMEM (libnvshmem_host.so.3). PyPI's mirror here only
# has 0.0.0a0 placeholders for their nvidia-* packages. Each stand-in has the real SONAME, the
# symbol version the wheel's libraries require (NVSHMEM for NVSHMEM) and every symbol the
# wheel imports from it; each of those functions aborts, so a CPU run that somehow reached
# one would stop loudly rather than compute anything.
#
# They go where pip's real packages put those libraries and where the wheel's own DT_RPATH
# ($ORIGIN/../../nvidia/{cu13,cusparselt,nvshmem}/lib) finds them:
#   SITE_PACKAGES/nvidia/cu13/lib/libcufile.so.0
#   SITE_PACKAGES/nvidia/cusparselt/lib/libcusparseLt.so.0
#   SITE_PACKAGES/nvidia/nvshmem/lib/libnvshmem_host.so.3
# so neither Python nor loom's binaries need LD_LIBRARY_PATH for them. The GPU machine has the
# real libraries there; the CUDA runtime, cuBLAS, cuDNN and NCCL come from the CUDA 13 toolkit.
set -euo pipefail
site=$1
lib=$site/torch/lib
[[ -f $lib/libtorch_cuda.so ]] || { echo "cpu_stub_libs.sh: no $lib/libtorch_cuda.so" >&2; exit 1; }

# soname  symbol-prefix  symbol-version (- for none)  folder under SITE_PACKAGES/nvidia
stand_ins=(
  "libcufile.so.0       cuFile      -       cu13"
  "libcusparseLt.so.0   cusparseLt  -       cusparselt"
  "libnvshmem_host.so.3 nvshmem     NVSHMEM nvshmem"
)

for entry in "${stand_ins[@]}"; do
  read -r soname prefix version folder <<<"$entry"
  out=$site/nvidia/$folder/lib
  mkdir -p "$out"
  src=$(mktemp --suffix=.c)
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo "static void loom_stand_in(const char* f) { fprintf(stderr, \"%s: called %s in the CPU-only stand-in for $soname\\n\", __func__, f); abort(); }"
    for so in "$lib"/*.so; do
      readelf --dyn-syms -W "$so" | awk '$7 == "UND" { print $8 }'
    done | sed 's/@.*//' | grep -E "^$prefix" | sort -u | while read -r sym; do
      echo "void $sym(void) { loom_stand_in(\"$sym\"); }"
    done
  } >"$src"
  flags=(-shared -fPIC -o "$out/$soname" -Wl,-soname,"$soname")
  if [[ $version != - ]]; then
    map=$(mktemp)
    echo "$version { global: *; };" >"$map"
    flags+=(-Wl,--version-script="$map")
  fi
  gcc -x c "$src" "${flags[@]}"
  rm -f "$src" ${map:+"$map"}
  unset map
done

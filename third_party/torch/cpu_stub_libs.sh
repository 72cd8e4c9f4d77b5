#!/usr/bin/env bash
# cpu_stub_libs.sh TORCH_LIB OUT: loader stand-ins that let the PyPI torch wheel (a CUDA
# build: its libtorch_cuda.so is loaded by `import torch` even on a machine without a GPU)
# import on a CPU-only machine that has the CUDA 13 toolkit but lacks three of the wheel's
# NVIDIA dependencies: cuFile (libcufile.so.0), cuSPARSELt (libcusparseLt.so.0) and NVSHMEM
# (libnvshmem_host.so.3). PyPI's mirror here only has 0.0.0a0 placeholders for their
# nvidia-* packages. Each stand-in has the real SONAME, the symbol version the wheel's
# libraries require (NVSHMEM for NVSHMEM) and every symbol the wheel imports from it; each of
# those functions aborts, so a CPU run that somehow reached one would stop loudly rather than
# compute anything. They go on LD_LIBRARY_PATH only for the Python reference of the CPU
# tests; the GPU machine has the real libraries, and loom's own CPU binaries link only
# libtorch_cpu.so and libc10.so, which need none of the three.
set -euo pipefail
lib=$1
out=$2
mkdir -p "$out"

# soname  symbol-prefix  symbol-version (- for none)
stand_ins=(
  "libcufile.so.0       cuFile      -"
  "libcusparseLt.so.0   cusparseLt  -"
  "libnvshmem_host.so.3 nvshmem     NVSHMEM"
)

for entry in "${stand_ins[@]}"; do
  read -r soname prefix version <<<"$entry"
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

#!/usr/bin/env bash
# Builds //tools:gpu_order with a bare C++ compiler, for machines without Bazel or the project's
# libraries (the lent GPU machine): the tool and gpu/ need only the C++17 standard library and
# libdl. Usage: gpu/build_standalone.sh OUT_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
srcs=(tools/gpu_order.cc gpu/gpu_order.cc gpu/device_discovery.cc)
# With gflags when the machine has it, else the tool's own reading of its two flags.
"${CXX:-g++}" -std=c++17 -O2 -I. "${srcs[@]}" -lgflags -ldl -o "$1" 2>/dev/null ||
  "${CXX:-g++}" -std=c++17 -O2 -I. -DLOOM_NO_GFLAGS "${srcs[@]}" -ldl -o "$1"

#!/usr/bin/env bash
# collect_bundle.sh OUT BINARY... — gathers built loom binaries and the shared libraries they
# need into one self-contained folder OUT for a machine without Bazel or Debian's libraries
# (the lent GPU machine). gpu/bundle.sh runs it on the `-c opt --config=cuda` build;
# //tests/gpu:bundle_test runs it on binaries from its own runfiles.
#
#   OUT/bin/NAME          each BINARY, stripped
#   OUT/lib/              every library `ldd` resolves for them except the ones the target
#                         machine brings: torch's own (libtorch*, libc10*, libgomp, libshm,
#                         from torch/lib), CUDA and NVIDIA libraries (libcudart, libcublas*,
#                         libcudnn*, libnv*, libnccl, ...), glibc and the dynamic loader;
#                         stripped. One larger than
#                         8 MiB (ICU's data) is stored as NAME.xz and unpacked by run.sh.
#   OUT/lib/fallback/     libstdc++ and libgcc_s from this machine, used by run.sh only when
#                         the target's libstdc++ lacks a GLIBCXX version the bundle needs
#   OUT/run.sh            `OUT/run.sh NAME ARGS...` runs OUT/bin/NAME against the target's
#                         torch (gpu/bundle_run.sh)
#   OUT/MANIFEST.txt      binaries, libraries and sizes, the commit, the torch version
#
# Environment:
#   LOOM_TORCH_LIB        the torch/lib folder the binaries were linked against (required):
#                         its libraries are left out, and ../version.py names the version
#   LOOM_BUNDLE_COMMIT    the source commit for the manifest (default: unknown)
#   LOOM_BUNDLE_CONFIG    the build configuration for the manifest (default: unknown)
# Fails, naming the library, when ldd cannot resolve a library that is not one of torch's or
# NVIDIA's (those may be missing on a CPU-only machine), or when OUT exceeds 60 MiB.
set -euo pipefail
shopt -s inherit_errexit

die() {
  echo "collect_bundle: $*" >&2
  exit 1
}

[[ $# -ge 2 ]] || die "usage: collect_bundle.sh OUT BINARY..."
out=$1
shift
torch_lib=${LOOM_TORCH_LIB:?collect_bundle: set LOOM_TORCH_LIB to the torch/lib folder the binaries link}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
max_bytes=$((60 * 1024 * 1024))
compress_over=$((8 * 1024 * 1024))

# The libraries the GPU machine provides itself, by soname.
provided_by_target() {
  case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libanl.so.* | libnsl.so.* | libmvec.so.*)
      return 0 ;; # glibc
    libtorch*.so* | libc10*.so* | libshm*.so* | libgomp*.so*) return 0 ;; # torch/lib
    libcuda.so* | libcudart.so* | libcublas*.so* | libcufft*.so* | libcurand.so* | \
      libcusparse*.so* | libcusolver*.so* | libcupti.so* | libcufile*.so* | libcudnn*.so* | \
      libnv*.so* | libnccl.so*)
      return 0 ;; # CUDA / NVIDIA (not libcurl)
  esac
  return 1
}

# The toolchain's runtime: taken from the target unless it is too old (run.sh decides).
toolchain_runtime() {
  case $1 in libstdc++.so.* | libgcc_s.so.*) return 0 ;; esac
  return 1
}

# "soname path" for every library ldd resolves for the binaries; fails on an unresolved
# library the target does not provide.
resolved_libraries() {
  local bin line soname path
  for bin in "$@"; do
    ldd "$bin" | while read -r line; do
      soname=${line%% *}
      if [[ $line == *"=> not found"* ]]; then
        provided_by_target "$soname" || die "$bin: ldd cannot find $soname"
        continue
      fi
      path=$(sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' <<<"$line")
      [[ -n $path ]] && echo "$soname $path"
    done
  done | sort -u
}

copy_binaries() {
  local bin
  mkdir -p "$out/bin"
  for bin in "$@"; do
    [[ -x $bin ]] || die "$bin is not an executable"
    strip -o "$out/bin/$(basename "$bin")" "$bin"
  done
}

copy_libraries() {
  local soname path dest resolved
  mkdir -p "$out/lib/fallback"
  resolved=$(resolved_libraries "$@")
  while read -r soname path; do
    provided_by_target "$soname" && continue
    dest=$out/lib
    toolchain_runtime "$soname" && dest=$out/lib/fallback
    strip --strip-unneeded -o "$dest/$soname" "$path"
    if (($(stat -c %s "$dest/$soname") > compress_over)); then
      xz -6 -T1 -f "$dest/$soname"
    fi
  done <<<"$resolved"
}

# The highest GLIBCXX symbol version the bundled files need, for run.sh's fallback choice.
glibcxx_needed() {
  local f
  for f in "$out"/bin/* "$out"/lib/*.so*; do
    [[ $f == *.xz ]] && continue
    objdump -T "$f" 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' || true
  done | sort -uV | tail -1
}

torch_version() {
  sed -n "s/^__version__ = '\(.*\)'.*/\1/p" "$torch_lib/../version.py" 2>/dev/null | head -1
}

write_manifest() {
  local f total
  total=$(du -sb "$out" | cut -f1)
  {
    echo "loom GPU bundle (gpu/collect_bundle.sh)"
    echo "commit: ${LOOM_BUNDLE_COMMIT:-unknown}"
    echo "config: ${LOOM_BUNDLE_CONFIG:-unknown}"
    echo "torch: $(torch_version)"
    echo "torch_lib_at_build: $torch_lib"
    echo "glibcxx_needed: $(glibcxx_needed)"
    echo "total_bytes: $total"
    echo "binaries:"
    for f in "$out"/bin/*; do echo "  $(basename "$f") $(stat -c %s "$f")"; done
    echo "libraries:"
    for f in "$out"/lib/*.so* "$out"/lib/fallback/*.so*; do
      echo "  ${f#"$out"/lib/} $(stat -c %s "$f")"
    done
  } >"$out/MANIFEST.txt"
  ((total <= max_bytes)) || die "$out is $total bytes, over the 60 MiB a device run may carry"
}

main() {
  rm -rf "$out"
  mkdir -p "$out"
  copy_binaries "$@"
  copy_libraries "$@"
  install -m 755 "$here/bundle_run.sh" "$out/run.sh"
  write_manifest
  echo "collect_bundle: $out: $(du -sh "$out" | cut -f1) ($(ls "$out/bin" | wc -l) binaries," \
    "$(ls "$out"/lib/*.so* | wc -l) libraries)"
}

main "$@"

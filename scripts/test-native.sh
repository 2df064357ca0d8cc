#!/usr/bin/env bash
# The C++ tests (native/tests) through CMake and ctest.
#   MD_SANITIZE=ON bash scripts/test-native.sh   # the same under ASan + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize="${MD_SANITIZE:-OFF}"
# The BLAS library of float weights' batches: Accelerate on macOS (what the
# addon links), OpenBLAS elsewhere (the same code, tested); MD_BLAS=OFF for none.
default_blas=OpenBLAS
[ "$(uname -s)" = "Darwin" ] && default_blas=Accelerate
blas="${MD_BLAS:-$default_blas}"
build_dir=build-cmake
[ "$sanitize" = "ON" ] && build_dir=build-cmake-asan

if ! command -v cmake >/dev/null; then
  echo "test-native: cmake is missing. Debian/Ubuntu: apt-get install cmake libgtest-dev; macOS: brew install cmake googletest" >&2
  exit 1
fi
if ! cmake -S . -B "$build_dir" -DMD_SANITIZE="$sanitize" -DMD_BLAS="$blas" >"$build_dir.configure.log" 2>&1; then
  cat "$build_dir.configure.log" >&2
  echo "test-native: configuring failed. GoogleTest or OpenBLAS missing? Debian/Ubuntu: apt-get install libgtest-dev libopenblas-dev; macOS: brew install googletest" >&2
  exit 1
fi
cmake --build "$build_dir" -j"$(nproc 2>/dev/null || echo 2)"
if [ "$(uname -m)" = "x86_64" ]; then
  objects="$build_dir/CMakeFiles/md_core.dir/native/core/quant"
  node scripts/check-isa-symbols.mjs "$objects/dot_avx2.cpp.o:Avx2" "$objects/dot_avx_vnni.cpp.o:AvxVnni" \
    "$objects/dot_avx512.cpp.o:Avx512" "$objects/dot_amx.cpp.o:Amx"
fi
ctest --test-dir "$build_dir" --output-on-failure

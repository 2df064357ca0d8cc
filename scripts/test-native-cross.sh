#!/usr/bin/env bash
# The C++ tests built for aarch64 (64-bit Arm, as on every Apple silicon
# Mac) with Debian's cross compiler and run under qemu-user: the portable
# code paths (the ucontext fibers, the sampler without AVX2) compiled by
# another compiler for another CPU, every kernel test in the shuffled fiber order.
# Needs: apt-get install g++-aarch64-linux-gnu qemu-user libgtest-dev cmake
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in cmake aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ -d /usr/src/googletest ] || missing+=("/usr/src/googletest")
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-native-cross: missing ${missing[*]}. Debian/Ubuntu: apt-get install cmake g++-aarch64-linux-gnu qemu-user libgtest-dev" >&2
  exit 1
fi

build_dir=build-cmake-aarch64
if ! cmake -S . -B "$build_dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake >"$build_dir.configure.log" 2>&1; then
  cat "$build_dir.configure.log" >&2
  echo "test-native-cross: configuring the aarch64 build failed" >&2
  exit 1
fi
cmake --build "$build_dir" -j"$(nproc 2>/dev/null || echo 2)"
echo "== the test binaries are aarch64: $(file -b "$build_dir/md_core_tests" | cut -d, -f1-2)"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"

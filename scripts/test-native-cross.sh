#!/usr/bin/env bash
# The C++ tests built for aarch64 (64-bit Arm, as on every Apple silicon
# Mac) with Debian's cross compiler and run under qemu-user: the portable
# code paths (the ucontext fibers, the sampler without AVX2) compiled by
# another compiler for another CPU, every kernel test in the shuffled fiber order.
# Needs: apt-get install g++-aarch64-linux-gnu qemu-user libgtest-dev cmake clang
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in cmake aarch64-linux-gnu-g++ qemu-aarch64 clang++; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ -d /usr/src/googletest ] || missing+=("/usr/src/googletest")
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-native-cross: missing ${missing[*]}. Debian/Ubuntu: apt-get install cmake g++-aarch64-linux-gnu qemu-user libgtest-dev clang" >&2
  exit 1
fi

jobs=$(nproc 2>/dev/null || echo 2)
# configure DIR MARCH [TOOLCHAIN]: the aarch64 build in DIR for -march=MARCH,
# by GCC's cross compiler or the toolchain file named.
configure() {
  if ! cmake -S . -B "$1" "-DCMAKE_TOOLCHAIN_FILE=${3:-cmake/aarch64-linux-gnu.cmake}" "-DCMAKE_CXX_FLAGS=-march=$2" \
    >"$1.configure.log" 2>&1; then
    cat "$1.configure.log" >&2
    echo "test-native-cross: configuring the aarch64 build ($2) failed" >&2
    exit 1
  fi
}

# Every test, built for what every Apple silicon chip has (the dot product,
# float16 arithmetic), as a Mac's clang builds for apple-m1: the NEON
# kernels take sdot (vdotq_s32).
build_dir=build-cmake-aarch64
configure "$build_dir" armv8.2-a+dotprod+fp16
cmake --build "$build_dir" -j"$jobs"
echo "== the test binaries are aarch64: $(file -b "$build_dir/md_core_tests" | cut -d, -f1-2)"
# Apple's compiler is clang: the NEON files built by clang for arm64 too,
# warnings as errors, at each level (the cross build above is GCC's).
for level in armv8-a armv8.2-a+dotprod+fp16 armv8.2-a+dotprod+i8mm+fp16+fp16fml; do
  for file in dot_neon dot_neon_i8mm dot_neon_fhm; do
    clang++ --target=aarch64-linux-gnu -std=c++17 -O2 -Wall -Wextra -Werror -ffp-contract=off "-march=$level" \
      -Inative/core -Imetal -c "native/core/quant/$file.cpp" -o "$build_dir/$file.clang.o"
  done
done
echo "== clang builds the NEON files for armv8-a, +dotprod and +i8mm"
# The file built for i8mm must share no inline function with the others
# (the linker would keep one copy, maybe the i8mm one, for a CPU without it).
node scripts/check-isa-symbols.mjs "$build_dir/CMakeFiles/md_core.dir/native/core/quant/dot_neon_i8mm.cpp.o:NeonI8mm" \
  "$build_dir/CMakeFiles/md_core.dir/native/core/quant/dot_neon_fhm.cpp.o:NeonFhm"
# qemu's default CPU has the int8 matrix multiply (i8mm, as M2 and later):
# the dot tests see it and take the neon-i8mm table too.
MD_EXPECT_NEON_I8MM=1 ctest --test-dir "$build_dir" --output-on-failure -j"$jobs"

# What one block costs each NEON table's tiles, in instructions executed
# (there is no Arm machine to time them), beside llama.cpp's kernels built
# by the same compiler: as GCC builds them, then as clang does (Apple's
# compiler; the counts differ). --check bounds ours against the sdot tiles
# and against llama.cpp's (count-neon-tiles.mjs says how).
node scripts/count-neon-tiles.mjs "$build_dir" --check
clang_dir=build-cmake-aarch64-clang
configure "$clang_dir" armv8.2-a+dotprod+fp16 cmake/aarch64-linux-gnu-clang.cmake
cmake --build "$clang_dir" -j"$jobs" --target md_tile_instructions
node scripts/count-neon-tiles.mjs "$clang_dir" --check

dot_tests='DotTables.*:RepackedTiles.*:RepackedLayouts.*:WeightedRows.*:Transformer.Repacked*:ActivationQuantizers.*'
# An M1 has the dot product but not i8mm: on such a CPU (a Cortex-A76)
# the detection must say so, and nothing built for i8mm may run.
echo "== the dot tests on a CPU without i8mm (cortex-a76)"
MD_EXPECT_NEON_I8MM=0 qemu-aarch64 -cpu cortex-a76 -L /usr/aarch64-linux-gnu "$build_dir/md_core_tests" \
  --gtest_filter="$dot_tests" --gtest_brief=1

# Arm CPUs without the dot product (Cortex-A72, a Raspberry Pi 4) take the
# widening multiplies in its place (simd_neon.h's dot16): the dot kernels'
# tests again, built for plain armv8-a.
plain_dir=build-cmake-aarch64-armv8
configure "$plain_dir" armv8-a
cmake --build "$plain_dir" -j"$jobs" --target md_core_tests
# Under the default CPU (i8mm tables too), then a Cortex-A72's (neither
# the dot product nor i8mm: no instruction of either may run).
MD_EXPECT_NEON_I8MM=1 qemu-aarch64 -L /usr/aarch64-linux-gnu "$plain_dir/md_core_tests" \
  --gtest_filter="$dot_tests" --gtest_brief=1
echo "== the dot tests built for armv8-a on a CPU with neither (cortex-a72)"
MD_EXPECT_NEON_I8MM=0 qemu-aarch64 -cpu cortex-a72 -L /usr/aarch64-linux-gnu "$plain_dir/md_core_tests" \
  --gtest_filter="$dot_tests" --gtest_brief=1

#!/usr/bin/env bash
# What can be proven about the Metal code without a Mac (DESIGN.md, "Proving
# Metal code without a Mac"). Needs clang and shellcheck (Debian: apt-get
# install clang shellcheck).
#   1. every metal/*.metal compiles with Metal's address spaces mapped to
#      clang's numbered ones; a planted mistake of each kind Metal rejects
#      and C++ would accept is rejected (an address-space mismatch, a
#      threadgroup array outside a kernel, a struct through simd_*, an
#      unknown [[attribute]]), and every attribute is one Metal knows;
#   2. the embedded source the Metal device compiles at run time is
#      self-contained and passes the same check;
#   3. native/metal/metal_device.mm type-checks as Objective-C++ against
#      the project's stub headers (native/metal/stubs): nullability, and
#      availability for macOS 11 and deprecations for macOS 26; every
#      object-returning Metal call is inside an @autoreleasepool; planted
#      mistakes of each kind are rejected;
#   4. the emulator and its kernels build with clang as well as g++;
#   5. the emulator's fibers compile on the ucontext path (macOS's) with
#      the C library in strict POSIX mode, where only the feature macros a
#      file defines itself expose non-POSIX names, as on Darwin;
#   6. the shell scripts pass shellcheck, the Mac-only one included;
#   7. the __METAL_VERSION__ branches of metal/ compile as Metal 3.0 and 3.2
#      (stub <metal_stdlib>: native/metal/stubs/msl), contraction is off in
#      them for a clang that contracts by default, and every feature newer
#      than the oldest supported language is behind a version guard;
#   8. the arithmetic of the matrix-vector kernels' steps, counted from
#      clang's LLVM IR (scripts/count-alu.mjs), is what bench/alu-counts.json
#      records (within 10%: another clang counts a little differently).
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG="${CLANG:-clang++}"
if ! command -v "$CLANG" >/dev/null; then
  echo "check-metal: $CLANG is missing. Debian/Ubuntu: apt-get install clang; macOS: xcode-select --install" >&2
  exit 1
fi
out="build-check-metal"
mkdir -p "$out"
# __fp16 stands in for half in this mode; on x86-64 it needs this flag to be
# a parameter or return type.
check=("$CLANG" -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Xclang -fnative-half-arguments-and-returns
       -DMD_CHECK_ADDRESS_SPACES -Inative/emu -Imetal -x c++)

echo "== address spaces: metal/*.metal"
for f in metal/*.metal; do
  "${check[@]}" "$f"
  echo "   ok  $f"
done

# must_fail FILE WHAT EXPECTED COMMAND...: COMMAND must fail on the planted
# mistake in FILE, with EXPECTED in its output.
must_fail() {
  local file=$1 what=$2 expected=$3
  shift 3
  local log
  log="$out/$(basename "$file").log"
  if "$@" >"$log" 2>&1; then
    echo "check-metal: $file was accepted, but it $what" >&2
    exit 1
  fi
  if ! grep -qF -- "$expected" "$log"; then
    cat "$log" >&2
    echo "check-metal: $file was rejected for another reason than that it $what (expected: $expected)" >&2
    exit 1
  fi
  echo "   ok  rejected $(basename "$file"): $(grep -m1 -F -- "$expected" "$log" | sed 's/.*error: //' | cut -c1-110)"
}

echo "== deliberate mistakes the Metal compiler rejects must be rejected here"
must_fail native/tests/kernels/address_space_error.metal "passes a device pointer as a thread pointer" \
  "cannot pass pointer to address space '1' as a pointer to generic address space" \
  "${check[@]}" native/tests/kernels/address_space_error.metal
must_fail native/tests/kernels/threadgroup_scope_error.metal "declares a threadgroup array outside a kernel" \
  "md_threadgroup_arrays_need_kernel_scope" "${check[@]}" native/tests/kernels/threadgroup_scope_error.metal
must_fail native/tests/kernels/simd_struct_error.metal "passes a struct to simd_shuffle" \
  "simd_* operands must be scalars (or vectors) in Metal, not structs" \
  "${check[@]}" native/tests/kernels/simd_struct_error.metal
must_fail native/tests/kernels/unknown_attribute.metal "misspells an attribute" \
  "[[thread_position_in_grip]] is not a Metal attribute" node scripts/lint-metal.mjs native/tests/kernels/unknown_attribute.metal
echo "== deliberate mistakes Metal accepts and the emulator would run wrongly must be rejected here"
must_fail native/tests/kernels/buffer_order_error.metal "declares its buffers out of order" \
  "the emulator binds arguments by position" node scripts/lint-metal.mjs native/tests/kernels/buffer_order_error.metal

echo "== attributes and buffer order: every [[...]] in metal/ and the test kernels is one Metal knows, buffers in order"
lint_files=(metal/*.metal metal/*.h native/tests/kernels/chain_probe.metal native/tests/kernels/faults.metal
            native/tests/kernels/simdgroup_matrix.metal native/tests/kernels/access_patterns.metal)
node scripts/lint-metal.mjs "${lint_files[@]}"
echo "   ok  ${#lint_files[@]} files"

echo "== the Metal branches: metal/*.metal as Metal 3.0 (macOS 13/14) and 3.2 (macOS 15), against stub headers"
msl=(-std=c++17 -Wall -Wextra -Werror -Xclang -fnative-half-arguments-and-returns -isystem native/metal/stubs/msl
     -Inative/emu -Imetal)
for version in 300 320; do
  # 3.2's METAL pragmas are unknown to clang: which pragmas each version
  # sees is checked on the preprocessed text below instead.
  for f in metal/*.metal; do
    "$CLANG" "${msl[@]}" -Wno-unknown-pragmas -fsyntax-only -D__METAL_VERSION__=$version -x c++ "$f"
  done
  pragmas=$("$CLANG" "${msl[@]}" -E -D__METAL_VERSION__=$version -x c++ metal/probes.metal | grep -E '^#pragma (clang fp|METAL)' | sort -u | tr '\n' ';')
  expected='#pragma clang fp contract(off);'
  [ $version -ge 320 ] && expected='#pragma METAL fp contract(off);#pragma METAL fp math_mode(safe);#pragma clang fp contract(off);'
  if [ "$pragmas" != "$expected" ]; then
    echo "check-metal: as Metal $version the kernels ask for '$pragmas', expected '$expected' (metal/md_exact_float.h)" >&2
    exit 1
  fi
  echo "   ok  $(find metal -name '*.metal' | wc -l) files as __METAL_VERSION__=$version; pragmas: $pragmas"
  # A clang that contracts within statements (Metal's default) and has FMA
  # instructions must still emit none for md_exact_float.h's users.
  "$CLANG" "${msl[@]}" -Wno-unknown-pragmas -O2 -mfma -ffp-contract=on -D__METAL_VERSION__=$version \
    -c native/tests/kernels/metal_branch_contract.cpp -o "$out/metal_branch_contract_$version.o"
  if objdump -d "$out/metal_branch_contract_$version.o" | grep -q vfmadd; then
    echo "check-metal: as Metal $version, a * b + c was fused although md_exact_float.h turns contraction off" >&2
    exit 1
  fi
  echo "   ok  as __METAL_VERSION__=$version no fused multiply-add is emitted"
done
"$CLANG" -std=c++17 -O2 -mfma -ffp-contract=on -DMD_CONTROL_WITHOUT_PRAGMA -c native/tests/kernels/metal_branch_contract.cpp \
  -o "$out/metal_branch_contract_control.o"
if ! objdump -d "$out/metal_branch_contract_control.o" | grep -q vfmadd; then
  echo "check-metal: the control (no pragma) was not fused either, so the check above proves nothing" >&2
  exit 1
fi
echo "   ok  control: without the header the same expression is fused"
must_fail native/tests/kernels/unguarded_pragma.metal "uses a Metal 3.2 pragma without a version guard" \
  "needs Metal 3.2, newer than the 2.3" node scripts/lint-metal.mjs native/tests/kernels/unguarded_pragma.metal
echo "   ok  the kernels need $(node scripts/lint-metal.mjs --min-version) (the oldest language every supported macOS compiles)"

echo "== the embedded kernel source is self-contained"
node scripts/embed-kernels.mjs --metal "$out/md_kernels.metal"
node scripts/embed-kernels.mjs "$out/md_kernel_source.h"
"$CLANG" -std=c++17 -fsyntax-only -Wall -Werror -Xclang -fnative-half-arguments-and-returns \
  -DMD_CHECK_ADDRESS_SPACES -Inative/emu -x c++ "$out/md_kernels.metal"
echo "   ok  $out/md_kernels.metal ($(wc -l <"$out/md_kernels.metal") lines)"

if [ "$(uname -s)" = "Darwin" ]; then
  echo "== metal_device.mm: on macOS the addon build compiles it against the SDK; stubs not used"
else
  echo "== metal_device.mm type-checks against native/metal/stubs"
  mm=(-x objective-c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Wnullable-to-nonnull-conversion -fobjc-arc
      -fblocks -Inative/metal/stubs -Inative/core -I"$out")
  "$CLANG" "${mm[@]}" -fobjc-runtime=macosx-11.0 native/metal/metal_device.mm
  echo "   ok  as Objective-C++ with ARC, nullability checked"
  # Then as a macOS build: availability is checked only for Apple targets.
  # The host's C and C++ headers stand in for the SDK's (the defines make
  # glibc parse under an Apple target); only the stubs' API is at stake.
  macos=("${mm[@]}" -Werror=unguarded-availability -Werror=unguarded-availability-new -Werror=deprecated-declarations
         -U__nonnull -U__nullable -D_GNU_SOURCE -D__linux__ -nostdinc++
         -isystem "/usr/include/c++/$(gcc -dumpversion | cut -d. -f1)"
         -isystem "/usr/include/x86_64-linux-gnu/c++/$(gcc -dumpversion | cut -d. -f1)"
         -isystem /usr/include/x86_64-linux-gnu)
  "$CLANG" "${macos[@]}" -target x86_64-apple-macos11.0 native/metal/metal_device.mm
  echo "   ok  for macOS 11 (the deployment target): no API newer than it without @available"
  "$CLANG" "${macos[@]}" -target x86_64-apple-macos26.0 native/metal/metal_device.mm
  echo "   ok  for macOS 26: no deprecated API outside a marked fallback"
  "$CLANG" "${macos[@]}" -target x86_64-apple-macos11.0 -D__MAC_OS_X_VERSION_MAX_ALLOWED=140000 native/metal/metal_device.mm
  echo "   ok  with the macOS 14 SDK (Xcode 15): no API that SDK lacks"
  # Every object-returning Metal call inside an @autoreleasepool.
  ast=(-Xclang -ast-dump -Xclang -ast-dump-filter -Xclang md::metal -fno-color-diagnostics)
  "$CLANG" "${mm[@]}" -fobjc-runtime=macosx-11.0 "${ast[@]}" native/metal/metal_device.mm >"$out/metal_device.ast"
  echo "   ok  autorelease pools: $(node scripts/check-autorelease.mjs "$out/metal_device.ast")"
  bad=native/tests/metal_host_errors
  "$CLANG" "${mm[@]}" -fobjc-runtime=macosx-11.0 "${ast[@]}" $bad/missing_pool.mm >"$out/missing_pool.ast"
  must_fail $bad/missing_pool.mm "makes a command buffer outside @autoreleasepool" \
    "md_test_next_commands (an entry point) sends object-returning messages outside @autoreleasepool: line 9: [commandBuffer]" \
    node scripts/check-autorelease.mjs "$out/missing_pool.ast"
  must_fail $bad/nullable_source.mm "passes a nullable string where Metal takes none" \
    "implicit conversion from nullable pointer" "$CLANG" "${mm[@]}" -fobjc-runtime=macosx-11.0 $bad/nullable_source.mm
  must_fail $bad/unguarded_math_mode.mm "uses a macOS 15 API without @available" \
    "'setMathMode:' is only available on macOS 15.0 or newer" "$CLANG" "${macos[@]}" -target x86_64-apple-macos11.0 \
    $bad/unguarded_math_mode.mm
  must_fail $bad/deprecated_fast_math.mm "uses a deprecated API" "'fastMathEnabled' is deprecated" \
    "$CLANG" "${macos[@]}" -target x86_64-apple-macos26.0 $bad/deprecated_fast_math.mm
  must_fail $bad/unguarded_math_mode.mm "uses an API the macOS 14 SDK lacks, outside an SDK check" \
    "property 'mathMode' not found on object of type 'MTLCompileOptions *'" "$CLANG" "${macos[@]}" -target x86_64-apple-macos11.0 \
    -D__MAC_OS_X_VERSION_MAX_ALLOWED=140000 $bad/unguarded_math_mode.mm
  echo "== dot_blas.cpp type-checks as a macOS build against native/metal/stubs/Accelerate"
  blas=(-x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Werror=unguarded-availability-new
        -Werror=deprecated-declarations -Inative/metal/stubs -Inative/core -Imetal -DMD_BLAS_ACCELERATE
        "${macos[@]:${#mm[@]}}")
  "$CLANG" "${blas[@]}" -target x86_64-apple-macos11.0 native/core/quant/dot_blas.cpp
  "$CLANG" "${blas[@]}" -target x86_64-apple-macos26.0 native/core/quant/dot_blas.cpp
  echo "   ok  for macOS 11 and 26: Accelerate's classic cblas_sgemm, its deprecation marked"
  must_fail $bad/undeprecated_sgemm.cpp "calls the classic cblas_sgemm, deprecated on macOS 13.3, unmarked" \
    "'cblas_sgemm' is deprecated" "$CLANG" "${blas[@]}" -target x86_64-apple-macos26.0 $bad/undeprecated_sgemm.cpp
fi

echo "== the emulator builds with clang"
for f in native/emu/*.cpp native/core/kernel_sampler.cpp native/core/sampling_launches.cpp; do
  "$CLANG" -std=c++17 -O1 -Wall -Wextra -Werror -ffp-contract=off -Inative/emu -Imetal -c "$f" -o "$out/$(basename "$f").o"
  echo "   ok  $f"
done

echo "== portability: fiber.cpp on ucontext, with only the feature macros it defines itself"
# g++/clang++ on glibc predefine _GNU_SOURCE, which exposes everything; macOS
# exposes non-POSIX names (MAP_ANON) only when asked. Undefining it here
# makes glibc as strict as Darwin's headers.
"$CLANG" -std=c++17 -Wall -Wextra -Werror -U_GNU_SOURCE -DMD_EMU_UCONTEXT -Inative/emu -c native/emu/fiber.cpp \
  -o "$out/fiber-ucontext.o"
echo "   ok  native/emu/fiber.cpp (ucontext, strict feature macros)"

echo "== portability: the x86-64 kernel files with clang (Apple's compiler on Intel Macs), one instruction set each"
isa_flags=(-std=c++17 -O2 -Wall -Wextra -Werror -ffp-contract=off -Inative/core -Imetal)
"$CLANG" "${isa_flags[@]}" -mavx2 -mfma -mf16c -c native/core/quant/dot_avx2.cpp -o "$out/dot_avx2.o"
"$CLANG" "${isa_flags[@]}" -mavx2 -mfma -mf16c -mavxvnni -c native/core/quant/dot_avx_vnni.cpp -o "$out/dot_avx_vnni.o"
"$CLANG" "${isa_flags[@]}" -mavx2 -mfma -mf16c -mavx512f -mavx512vl -mavx512bw -mavx512vnni \
  -c native/core/quant/dot_avx512.cpp -o "$out/dot_avx512.o"
"$CLANG" "${isa_flags[@]}" -mavx2 -mfma -mf16c -mavx512f -mavx512vl -mavx512bw -mavx512vnni -mamx-tile -mamx-int8 \
  -c native/core/quant/dot_amx.cpp -o "$out/dot_amx.o"
node scripts/check-isa-symbols.mjs "$out/dot_avx2.o:Avx2" "$out/dot_avx_vnni.o:AvxVnni" "$out/dot_avx512.o:Avx512" \
  "$out/dot_amx.o:Amx"
"$CLANG" -std=c++17 -O0 -mavx2 -Inative/core -c native/tests/isa/shared_inline_error.cpp -o "$out/shared_inline_error.o"
must_fail native/tests/isa/shared_inline_error.cpp "defines a shared inline function in an AVX2 object" \
  'defines the shared symbol "md::halfToFloat(unsigned short)"' node scripts/check-isa-symbols.mjs "$out/shared_inline_error.o:Avx2"

echo "== the matrix-vector kernels' arithmetic (clang's IR of their steps): bench/alu-counts.json is today's"
CLANG="$CLANG" node scripts/count-alu.mjs --check bench/alu-counts.json | sed 's/^/   ok  /'

echo "== shell scripts: shellcheck (the Mac-only first-run script included)"
if ! command -v shellcheck >/dev/null; then
  echo "check-metal: shellcheck is missing. Debian/Ubuntu: apt-get install shellcheck; macOS: brew install shellcheck" >&2
  exit 1
fi
shellcheck scripts/*.sh .ci/run
echo "   ok  $(find scripts -name '*.sh' | wc -l) scripts and .ci/run"

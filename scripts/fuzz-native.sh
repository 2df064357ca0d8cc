#!/usr/bin/env bash
# The C++ fuzz targets (native/tests/fuzz), built with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, each run for a bounded
# time. npm test runs them briefly; for a long run:
#   FUZZ_SECONDS=3600 bash scripts/fuzz-native.sh
# A finding stops the run with the input saved in build-fuzz/ (reproduce it
# with build-fuzz/<target> <file>).
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG="${CLANG:-clang++}"
seconds="${FUZZ_SECONDS:-20}"
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++17 -g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=all -ffp-contract=off
       -Inative/core -Imetal -Inative/tests)

probe='extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }'
if ! echo "$probe" | "$CLANG" "${flags[@]}" -x c++ - -o "$out/probe" 2>"$out/probe.log"; then
  cat "$out/probe.log" >&2
  echo "fuzz-native: $CLANG cannot build libFuzzer targets. Debian/Ubuntu: apt-get install clang libclang-rt-dev (or libclang-rt-14-dev); macOS: brew install llvm" >&2
  exit 1
fi

# run_fuzzer NAME MAX_LEN SOURCES...: builds native/tests/fuzz/NAME.cpp with the
# sources and runs it for $seconds seconds on its corpus in build-fuzz/.
run_fuzzer() {
  local name=$1 max_len=$2
  shift 2
  "$CLANG" "${flags[@]}" -pthread "native/tests/fuzz/$name.cpp" "$@" -o "$out/$name"
  mkdir -p "$out/${name}_corpus"
  "$out/$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/" "$out/${name}_corpus" 2>"$out/$name.log" || {
    tail -n 40 "$out/$name.log" >&2
    echo "fuzz-native: $name found a problem; the input is in $out/" >&2
    exit 1
  }
  grep -E "^Done|#[0-9]+.*DONE" "$out/$name.log" | tail -1
}

echo "== sampler_fuzz: the C++ sampler against the reference sampler, ${seconds} s"
run_fuzzer sampler_fuzz 40000 native/core/cpu_sampler.cpp native/core/noise_block.cpp native/core/weight_bounds.cpp \
  native/core/quant/cpu_features.cpp

transformer=(native/core/thread_pool.cpp native/core/quant/tensor_types.cpp native/core/quant/convert_rows.cpp
             native/core/quant/cpu_features.cpp native/core/quant/dot.cpp native/core/quant/repack.cpp native/core/transformer/repack_weights.cpp native/core/quant/dot_portable.cpp
             native/core/quant/dot_avx2.cpp native/core/quant/dot_avx_vnni.cpp native/core/quant/dot_avx512.cpp native/core/quant/dot_amx.cpp
             native/core/quant/dot_neon.cpp native/core/quant/dot_neon_i8mm.cpp native/core/quant/dot_neon_fhm.cpp native/core/quant/dot_blas.cpp native/core/graph/forward_graph.cpp native/core/graph/llama_graph.cpp native/core/graph/gemma3_graph.cpp
             native/core/transformer/weights.cpp native/core/transformer/ops.cpp
             native/core/transformer/matmul.cpp native/core/transformer/transformer.cpp native/core/transformer/head_pick.cpp
             native/core/transformer/cache_shift.cpp native/core/transformer/moe_ffn.cpp)
echo "== weights_fuzz: the GGUF tensor binder and a forward pass over what it accepts, ${seconds} s"
run_fuzzer weights_fuzz 8192 "${transformer[@]}"

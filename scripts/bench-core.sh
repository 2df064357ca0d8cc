#!/usr/bin/env bash
# `npm run bench:core`: the C++ sampler alone (no Node.js), float16 and
# float32 logits (float32: what the CPU decode loop samples), median us per
# call. Builds the micro-benchmark with CMake first.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-cmake >/dev/null
cmake --build build-cmake --target md_sampler_bench -j2 >/dev/null
configs=("greedy" "default chain" "topP 0.9" "temperature only")
printf 'logits\tshape\tV\t%-16s\tmedian\n' "config"
for format in ${FORMATS:-f16 f32}; do
  for vocab in ${VOCABS:-32000 128256 151936 262144}; do
    for shape in lm flat; do
      for c in 0 1 2 3; do
        printf '%s\t%s\t%s\t%-16s\t' "$format" "$shape" "$vocab" "${configs[$c]}"
        ./build-cmake/md_sampler_bench "$vocab" "$c" "$shape" "${ITERATIONS:-1000}" "$format" | sed 's/.*median \([0-9.]*\) us.*/\1 us/'
      done
    done
  done
done

#!/usr/bin/env bash
# bench-cpu-level.sh: `bench model` as on a CPU with fewer instruction-set
# extensions than this one, both engines held to them: metal-decode's
# kernels by MD_CPU_ISA, llama.cpp's by hiding the builds of its CPU
# backend (node-llama-cpp's libggml-cpu-<variant>.so, of which ggml loads
# the best this CPU runs) above the level while it runs. So an AMX Xeon
# measures the AVX-512 VNNI CPUs without AMX (level avx512: ggml then
# picks its icelake/cooperlake build) and the AVX2-only ones (level avx2:
# haswell). The hidden files are put back when the script ends, however
# it ends.
#   bash scripts/bench-cpu-level.sh avx512|avx2 FILE.gguf [bench model options...]
set -euo pipefail
level=${1:-}
file=${2:-}
if [[ "$level" != avx512 && "$level" != avx2 ]] || [[ -z "$file" ]]; then
  echo "usage: bash scripts/bench-cpu-level.sh avx512|avx2 FILE.gguf [bench model options...]" >&2
  exit 2
fi
shift 2
cd "$(dirname "$0")/.."
bins=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [[ ! -d "$bins" ]]; then
  echo "bench-cpu-level: $bins is missing (node-llama-cpp's Linux x64 binaries; run npm install)" >&2
  exit 1
fi
# The ggml builds above each level: AMX (sapphirerapids) above avx512;
# every AVX-512 and AVX-VNNI build above avx2.
hide=(sapphirerapids)
if [[ "$level" == avx2 ]]; then
  hide+=(skylakex cannonlake cascadelake cooperlake icelake zen4 alderlake)
fi
aside=$(mktemp -d)
restore() {
  for v in "${hide[@]}"; do
    if [[ -f "$aside/libggml-cpu-$v.so" ]]; then mv "$aside/libggml-cpu-$v.so" "$bins/"; fi
  done
  rmdir "$aside"
}
trap restore EXIT
for v in "${hide[@]}"; do
  if [[ -f "$bins/libggml-cpu-$v.so" ]]; then mv "$bins/libggml-cpu-$v.so" "$aside/"; fi
done
echo "CPU flags: $(grep -m1 -o -w -E 'avx2|avx512f|avx512_vnni|avx_vnni|amx_int8|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "level $level: metal-decode MD_CPU_ISA=$level; llama.cpp without ${hide[*]}"
MD_CPU_ISA=$level node bin/metal-decode.js bench model --model "$file" "$@"

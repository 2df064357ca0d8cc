#!/usr/bin/env bash
# mac-first-run.sh: everything a Mac can prove that Linux cannot, in one
# command, and one report to paste into an issue.
#
#   bash scripts/mac-first-run.sh          # from a checkout, on an Apple silicon Mac
#
# Steps (each runs even if an earlier one failed; the report says which):
#   1. the machine: macOS, chip, GPU, Xcode tools, Node;
#   2. every kernel compiled offline with `xcrun metal` (each file, and the
#      one source the addon compiles at run time), warnings included, as the
#      oldest Metal language the package supports and as the newest;
#   3. the addon built from scratch (npm install), with the compiler's
#      first errors if it fails;
#   4. the backends the package sees (getBackends());
#   5. the whole test suite with the GPU: METAL_DECODE_TEST_METAL=1 npm test
#      (every kernel test on metal too, the 2^23 noise cells, ...);
#   6. the benchmark (npx metal-decode bench), metal against the others;
#   7. the GGUF forward pass on the GPU: a Llama-3.2-1B-shaped Q4_0 file
#      (random weights, written here), bench model --backend metal, with
#      llama.cpp's Metal build on the same file beside it;
#   8. the CPU forward pass on the same file and a Q4_K one (bench model
#      --backend native): which NEON kernels the chip takes (neon-i8mm on
#      M2 and later) and their prompt speed beside llama.cpp's CPU build;
#      and an F16 file's prompt on Accelerate (auto's pick on macOS), then
#      on the NEON tiles alone, beside llama.cpp's (Accelerate too).
# The report goes to stdout and to build-mac/first-run-report.md; the full
# logs stay in build-mac/. Exit 0 only if every step passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

if [ "$(uname -s)" != "Darwin" ]; then
  echo "mac-first-run: this is for macOS on Apple silicon; here it is $(uname -sm). On Linux, npm test runs what can be proven here." >&2
  exit 2
fi

out=build-mac
mkdir -p "$out"
report="$out/first-run-report.md"
failed=0
: >"$report"

say() { printf '%s\n' "$*" | tee -a "$report"; }
# step NAME LOG COMMAND...: runs COMMAND with its output in LOG; reports ok
# or the last lines of LOG.
step() {
  local name=$1 log=$2
  shift 2
  local started=$SECONDS
  if "$@" >"$log" 2>&1; then
    say "- **$name**: ok ($((SECONDS - started)) s)"
    return 0
  fi
  failed=1
  say "- **$name**: FAILED ($((SECONDS - started)) s), last lines of $log:"
  say '```'
  tail -n 25 "$log" | tee -a "$report"
  say '```'
  return 1
}

say "# metal-decode on a Mac: first run"
say ""
say "## Machine"
say "- macOS $(sw_vers -productVersion) ($(sw_vers -buildVersion)), $(uname -m)"
say "- CPU: $(sysctl -n machdep.cpu.brand_string 2>/dev/null), $(sysctl -n hw.physicalcpu) cores, $(($(sysctl -n hw.memsize) / 1073741824)) GiB"
say "- GPU: $(system_profiler SPDisplaysDataType 2>/dev/null | awk -F': ' '/Chipset Model|Total Number of Cores|Metal Support/ {printf "%s; ", $2}')"
say "- Xcode tools: $(xcode-select -p 2>/dev/null || echo 'none (xcode-select --install)'); $(xcrun clang --version 2>/dev/null | head -1)"
say "- Node $(node --version), npm $(npm --version), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say ""

say "## Steps"
# 2. Offline compiles. `xcrun metal` ships with Xcode (or its Metal
# toolchain component); without it the addon still compiles the kernels at
# run time, which step 5 tests.
if xcrun -sdk macosx -f metal >/dev/null 2>&1; then
  node scripts/embed-kernels.mjs --metal "$out/md_kernels.metal"
  # Twice: as the oldest language every supported macOS compiles (what
  # scripts/lint-metal.mjs says the kernels need), and as the SDK's newest
  # (what the addon gets at run time on this Mac).
  oldest=$(node scripts/lint-metal.mjs --min-version)
  for std in "$oldest" newest; do
    std_flag=()  # (expanded with +, which bash 3.2, macOS's, needs for an empty array under set -u)
    [ "$std" != newest ] && std_flag=("-std=$std")
    for f in metal/*.metal "$out/md_kernels.metal"; do
      log="$out/metal-$std-$(basename "$f").log"
      step "xcrun metal ($std): $f" "$log" \
        xcrun -sdk macosx metal ${std_flag[@]+"${std_flag[@]}"} -Wall -Imetal -c "$f" -o "$out/$std-$(basename "$f").air"
      if grep -q "warning:" "$log"; then
        say "  warnings:"
        grep "warning:" "$log" | head -10 | sed 's/^/    /' | tee -a "$report"
      fi
    done
  done
else
  say "- **xcrun metal**: not installed (Xcode's Metal toolchain: \`xcodebuild -downloadComponent MetalToolchain\`); skipped, the run-time compile in the tests covers it"
fi

# 3. The addon, from scratch.
rm -rf build
step "npm install (the addon built from scratch)" "$out/npm-install.log" npm install --foreground-scripts

# 4. What the package sees.
step "getBackends()" "$out/backends.log" node --input-type=module -e "
  import { getBackends } from './dist/lib/index.js';
  for (const b of getBackends()) console.log(\`\${b.available ? 'yes' : 'no '} \${b.name}: \${b.reason}\`);"
sed 's/^/    /' "$out/backends.log" | tee -a "$report"

# 5. Every test, with the GPU.
step "METAL_DECODE_TEST_METAL=1 npm test" "$out/test.log" env METAL_DECODE_TEST_METAL=1 npm test
grep -E "Tests +[0-9]|Test Files|tests passed|FAIL|✗|×" "$out/test.log" | head -20 | sed 's/^/    /' | tee -a "$report"

# 6. The benchmark.
step "npx metal-decode bench" "$out/bench.log" npx metal-decode bench --no-progress --out "$out/bench.html"
say ""
say "## Benchmark"
say '```'
tee -a "$report" <"$out/bench.log"
say '```'

# 7. The forward pass on the GPU, on a file of the shape people run.
model="$out/llama-1b-q4_0.gguf"
step "write a Llama-3.2-1B-shaped Q4_0 file" "$out/make-model.log" \
  node dist/test/gguf/make-model.js --shape llama-3.2-1b --type Q4_0 --out "$model"
step "bench model --backend metal" "$out/bench-model.log" \
  node bin/metal-decode.js bench model --model "$model" --backend metal --compare auto
say ""
say "## The forward pass on the GPU"
say '```'
tee -a "$report" <"$out/bench-model.log"
say '```'

# 8. The CPU forward pass: NEON tiles (smmla where the chip has i8mm) against llama.cpp's.
model_k="$out/llama-1b-q4_k.gguf"
step "write a Llama-3.2-1B-shaped Q4_K file" "$out/make-model-k.log" \
  node dist/test/gguf/make-model.js --shape llama-3.2-1b --type Q4_K --out "$model_k"
: >"$out/bench-cpu.log"
for file in "$model" "$model_k"; do
  step "bench model --backend native ($(basename "$file"))" "$out/bench-cpu-$(basename "$file").log" \
    node bin/metal-decode.js bench model --model "$file" --backend native --compare auto
  cat "$out/bench-cpu-$(basename "$file").log" >>"$out/bench-cpu.log"
done
# The F16 file: float weights' prompts on Accelerate (cpuKernels auto),
# then on the chip's NEON tiles alone (MD_CPU_ISA), which settles what
# bench/README.md's seventh step argues from a published measurement.
model_f16="$out/llama-1b-f16.gguf"
step "write a Llama-3.2-1B-shaped F16 file" "$out/make-model-f16.log" \
  node dist/test/gguf/make-model.js --shape llama-3.2-1b --type F16 --out "$model_f16"
tiles=neon
[ "$(sysctl -n hw.optional.arm.FEAT_I8MM 2>/dev/null)" = 1 ] && tiles=neon-i8mm
step "bench model --backend native (F16, Accelerate)" "$out/bench-cpu-f16-accelerate.log" \
  node bin/metal-decode.js bench model --model "$model_f16" --backend native --compare auto
step "bench model --backend native (F16, $tiles alone)" "$out/bench-cpu-f16-tiles.log" \
  env MD_CPU_ISA="$tiles" node bin/metal-decode.js bench model --model "$model_f16" --backend native --compare none
cat "$out/bench-cpu-f16-accelerate.log" "$out/bench-cpu-f16-tiles.log" >>"$out/bench-cpu.log"
say ""
say "## The forward pass on the CPU"
say '```'
tee -a "$report" <"$out/bench-cpu.log"
say '```'

say ""
if [ "$failed" = 0 ]; then say "All steps passed."; else say "Some steps FAILED: the logs are in $out/."; fi
echo "(report saved to $report)" >&2
exit "$failed"

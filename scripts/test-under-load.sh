#!/usr/bin/env bash
# The test suite on a busy machine: runs a command (by default the vitest
# suite) several times in a row with one CPU-bound process per core beside
# it, and says how many consecutive runs passed. A test that fails here
# measures the weather, not the code (docs/reliability.md, "The tests on a busy machine").
#   bash scripts/test-under-load.sh [runs]              # vitest, 3 runs
#   bash scripts/test-under-load.sh 2 bash .ci/run      # any command
# Each run's vitest report (per-file and per-test times) is kept in
# $MD_LOAD_DIR (default: a new temporary folder), and its slowest files are printed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

runs="${1:-3}"
shift || true
command=("$@")
[ ${#command[@]} -eq 0 ] && command=(npx vitest run)
out="${MD_LOAD_DIR:-$(mktemp -d)}"
mkdir -p "$out"

hogs=()
stop_hogs() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; }
trap stop_hogs EXIT
for _ in $(seq "$(nproc 2>/dev/null || echo 2)"); do
  node -e 'for (;;) {}' &
  hogs+=($!)
done
echo "test-under-load: ${#hogs[@]} busy processes beside '${command[*]}', $runs runs; reports in $out"

green=0
for run in $(seq "$runs"); do
  started=$SECONDS
  MD_TEST_REPORT="$out/run-$run.json" "${command[@]}" >"$out/run-$run.log" 2>&1
  status=$?
  echo "run $run: exit status $status after $((SECONDS - started)) s (log: $out/run-$run.log)"
  node scripts/test-times.mjs "$out/run-$run.json" 5 | sed 's/^/    /'
  if [ $status -ne 0 ]; then
    grep -E 'FAIL|AssertionError|Error:' "$out/run-$run.log" | head -20 | sed 's/^/    /'
    break
  fi
  green=$((green + 1))
done
echo "test-under-load: $green of $runs consecutive runs passed"
[ "$green" -eq "$runs" ]

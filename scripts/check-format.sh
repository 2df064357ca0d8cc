#!/usr/bin/env bash
# The formatters, configured once: Prettier (.prettierrc.json) over the
# TypeScript and JavaScript, clang-format (.clang-format) over the C++ and
# Objective-C++ of native/ (not its stub Apple headers, written as Apple's
# are, nor metal/: clang-format does not know the Metal Shading Language).
# `--write` formats; without it, a file that is not formatted fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is missing. Debian/Ubuntu: apt-get install clang-format; macOS: brew install clang-format" >&2
  exit 1
fi
# Tracked and new (untracked, not ignored) files alike: a new file is
# checked before its first commit, as CI will check it after.
mapfile -t cpp < <(git ls-files --cached --others --exclude-standard 'native/*.cpp' 'native/*.h' 'native/*.mm' |
  grep -v '^native/metal/stubs/' | sort -u)
scripts=(lib test demo bin scripts eslint.config.mjs vitest.config.ts)

if [ "${1:-}" = "--write" ]; then
  npx prettier --log-level warn --write "${scripts[@]}"
  clang-format -i "${cpp[@]}"
  exit 0
fi
npx prettier --log-level warn --check "${scripts[@]}"
clang-format --dry-run --Werror "${cpp[@]}"
echo "check-format: ${#cpp[@]} C++ files and the TypeScript are formatted"

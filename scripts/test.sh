#!/usr/bin/env bash
# Runs every test: lit (dialect, passes, importer), GoogleTest units and the
# end-to-end tests against the pinned PyTorch, then the sanitizer checks
# (scripts/sanitize.sh). Builds first if needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COLO_BUILD:-$root/build}
[ -f "$build/build.ninja" ] || "$root/scripts/setup.sh"
ninja -C "$build"
ctest --test-dir "$build" --output-on-failure "$@"
# The ASan+UBSan build's runtime tests and short fuzzing runs (COLO_SANITIZE=0
# skips them).
if [ "${COLO_SANITIZE:-1}" != 0 ]; then
  "$root/scripts/sanitize.sh"
fi

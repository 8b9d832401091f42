#!/usr/bin/env bash
# Every libFuzzer target (fuzz/), the ONNX importer's and the plan parser's
# too, for SECONDS each (default 600) under ASan+UBSan, from the seed corpus
# of scripts/sanitize.sh; prints each target's executions.
#   bash bench/fuzz_bench.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
COLO_FUZZ_ALL=1 COLO_FUZZ_SECONDS=${1:-600} exec "$root/scripts/sanitize.sh"

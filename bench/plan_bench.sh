#!/usr/bin/env bash
# Planner benchmark (not a test: timings on a shared 2-core machine are noisy):
# search time and result for GPT-3 175B (seq 2048, global batch 1536) on 1024
# A100 80GB (8 per node), run three times: the plan must not change.
# Predictions against published runs, Megatron-LM's included, are
# bench/published_bench.py's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
colo=${COLO:-$root/build/bin/colo}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== search: gpt3-175b, 1024 x a100-80g, global batch 1536"
for i in 1 2 3; do
  start=$(date +%s.%N)
  "$colo" plan gpt3-175b --cluster a100-80g:128x8 --global-batch 1536 --json > "$tmp/run$i.json"
  end=$(date +%s.%N)
  python3 - "$tmp/run$i.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
best = r["plans"][0]
print(f"  {float(sys.argv[3]) - float(sys.argv[2]):6.2f} s  {r['evaluated']} plans  best "
      f"{best['plan']}  MFU {100 * best['mfu']:.1f}%  {best['step_time_s']:.2f} s/step")
PY
done
if cmp -s "$tmp/run1.json" "$tmp/run2.json" && cmp -s "$tmp/run2.json" "$tmp/run3.json"; then
  echo "  deterministic: the three searches printed the same result"
else
  echo "  NOT deterministic: the searches differ"; exit 1
fi


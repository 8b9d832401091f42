#!/usr/bin/env bash
# The sanitizer checks: an ASan+UBSan build (clang) beside ./build, in which
#   - the runtime's unit tests run,
#   - colo refuses each of the 450 hostile files of test/e2e/hostile_corpus.py
#     with one line, and
#   - each libFuzzer target of fuzz/ runs for COLO_FUZZ_SECONDS (default 20)
#     from a seed corpus of files the normal build's colo writes (a program,
#     its state, a checkpoint and its index, a cluster file, .npy/.npz).
# Any sanitizer report, crash, leak, or allocation past the fuzzers' 1 GiB
# malloc limit fails the script. bench/fuzz_bench.sh runs the fuzzers longer.
# Environment: COLO_BUILD (default ./build, must be built),
#              COLO_SAN_BUILD (default ./build-san), COLO_FUZZ_SECONDS,
#              COLO_FUZZ_ALL=1 (also the ONNX and plan targets, which take a
#              longer build: they link the compiler).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COLO_BUILD:-$root/build}
san=${COLO_SAN_BUILD:-$root/build-san}
seconds=${COLO_FUZZ_SECONDS:-20}
venv=${COLO_VENV:-$HOME/.local/share/colo/venv}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/colo/ccache}

if [ ! -f "$san/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$san" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCOLO_SANITIZE=address,undefined -DCOLO_FUZZ=ON \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DPython3_EXECUTABLE="$venv/bin/python" > "$san.configure.log" 2>&1 \
    || { cat "$san.configure.log"; exit 1; }
fi
targets=(npy safetensors program checkpoint-index cluster)
if [ "${COLO_FUZZ_ALL:-0}" = 1 ]; then
  targets+=(onnx plan)
  ninja -C "$san" colo-fuzz-all colo-runtime-tests colo
else
  ninja -C "$san" colo-fuzz colo-runtime-tests colo
fi

# allow_user_poisoning=0: the prebuilt LLVM/MLIR libraries are not
# instrumented, and the poisoning of their inline allocators in our code would
# be reported as use-after-poison.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "== runtime unit tests under ASan+UBSan"
"$san/bin/colo-runtime-tests" --gtest_brief=1

echo "== the hostile files under ASan+UBSan (test/e2e/test_hostile_files.py)"
COLO_BIN="$san/bin" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$root/test/e2e/test_hostile_files.py"

echo "== seed corpus"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
colo=$build/bin/colo
"$colo" model gpt --layers 1 --hidden 16 --heads 2 --vocab 32 --seq 8 --batch 2 \
  --dtype f32 -o "$work/gpt.mlir" > /dev/null
"$colo" compile "$work/gpt.mlir" --train loss=lm,optimizer=adamw --plan dp=2,zero=3 \
  -o "$work/exe" > /dev/null
"$colo" run "$work/exe" --steps 1 --data synthetic --checkpoint-dir "$work/ckpt" \
  -o "$work/w.safetensors" > /dev/null
step=$(ls -d "$work"/ckpt/step-*)
for target in "${targets[@]}"; do
  mkdir -p "$work/seeds-$target"
done
cp "$work/exe/program.pb" "$work/seeds-program/"
cp "$work/w.safetensors" "$step"/rank-*.safetensors "$work/seeds-safetensors/"
cp "$step/index.json" "$work/seeds-checkpoint-index/"
"$colo" cluster show a100-80g --json > "$work/seeds-cluster/a100.json"
"$venv/bin/python" - "$work/seeds-npy" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
np.save(f"{d}/a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
np.savez(f"{d}/b.npz", input_ids=np.arange(16, dtype=np.int64).reshape(2, 8),
         labels=np.ones((2,), np.int32))
np.savez_compressed(f"{d}/c.npz", x=np.zeros((4, 4), np.float16))
EOF

if [ "${COLO_FUZZ_ALL:-0}" = 1 ]; then
  cp "$root"/examples/*.onnx "$work/seeds-onnx/"
  printf '{"mesh": {"dp": 2, "tp": 2, "pp": 2}, "zero": 1, "micro_batches": 4,
    "schedule": "1f1b", "sequence_parallel": true}' > "$work/seeds-plan/plan.json"
  echo "dp=2,tp=2,sp,pp=2,micro=4,schedule=interleaved,v=2" > "$work/seeds-plan/inline"
fi

for target in "${targets[@]}"; do
  echo "== colo-fuzz-$target for $seconds s"
  mkdir -p "$work/corpus-$target"
  "$san/bin/colo-fuzz-$target" "$work/corpus-$target" "$work/seeds-$target" \
    -max_total_time="$seconds" -malloc_limit_mb=1024 -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$work/crash-$target-" \
    > "$work/log-$target" 2>&1 && status=0 || status=$?
  grep -E "^stat::number_of_executed_units|ERROR: |SUMMARY|runtime error" \
    "$work/log-$target" | grep -v libprotobuf || true
  if [ "$status" -ne 0 ] || ls "$work"/crash-"$target"-* > /dev/null 2>&1; then
    tail -40 "$work/log-$target" >&2
    mkdir -p "$root/fuzz-artifacts"
    cp "$work"/crash-"$target"-* "$root/fuzz-artifacts/"
    echo "colo-fuzz-$target found a failing input: fuzz-artifacts/" >&2
    exit 1
  fi
done
echo "sanitizer checks passed"

#!/usr/bin/env bash
# GEMM throughput (single-threaded; THREADS=N for N threads) on the benchmark GPT-2's products (see
# gemm_bench.cpp): OpenBLAS's sgemm against oneDNN's matmul, which colo run
# uses, in f32 (oneDNN / OpenBLAS > 1 where oneDNN is faster) and in bf16.
#
#   bash bench/gemm_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=$(mktemp -d)/gemm_bench
trap 'rm -rf "$(dirname "$exe")"' EXIT
g++ -O2 -std=c++17 "$here/gemm_bench.cpp" -o "$exe" -I/usr/include/x86_64-linux-gnu/openblas-pthread -lopenblas -ldnnl
OPENBLAS_NUM_THREADS=${THREADS:-1} OMP_NUM_THREADS=${THREADS:-1} "$exe"

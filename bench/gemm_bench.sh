#!/usr/bin/env bash
# Single-threaded GEMM throughput, OpenBLAS against oneDNN, on the benchmark
# GPT-2's products (see gemm_bench.cpp): oneDNN / OpenBLAS > 1 where oneDNN
# is faster.
#
#   bash bench/gemm_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=$(mktemp -d)/gemm_bench
trap 'rm -rf "$(dirname "$exe")"' EXIT
g++ -O2 -std=c++17 "$here/gemm_bench.cpp" -o "$exe" -lopenblas -ldnnl
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$exe"

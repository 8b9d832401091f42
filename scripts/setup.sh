#!/usr/bin/env bash
# Sets up everything colo needs on Debian 12 and builds it. Idempotent: a second
# run only rebuilds what changed.
#   - Debian packages (LLVM/MLIR 22, protobuf, OpenBLAS, OpenMPI, GoogleTest,
#     clang with libFuzzer for scripts/sanitize.sh, ...)
#   - a Python virtual environment outside the checkout with the pinned
#     packages of requirements.txt (torch, transformers, onnx, ...)
#   - the CMake build in ./build (ccache's cache outside the checkout)
# Environment: COLO_VENV (default ~/.local/share/colo/venv),
#              COLO_BUILD (default ./build), CCACHE_DIR (default ~/.cache/colo/ccache).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${COLO_VENV:-$HOME/.local/share/colo/venv}
build=${COLO_BUILD:-$root/build}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/colo/ccache}

step() { printf '\n== %s\n' "$*"; }

packages=(
  cmake ninja-build ccache g++ git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler libgtest-dev pybind11-dev
  libopenblas-dev libdnnl-dev nlohmann-json3-dev zlib1g-dev libopenmpi-dev openmpi-bin
  python3-dev python3-venv time
  clang libclang-rt-14-dev libomp-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

step "Python environment in $venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
stamp="$venv/.colo-requirements"
if ! cmp -s "$root/requirements.txt" "$stamp"; then
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$root/requirements.txt"
  cp "$root/requirements.txt" "$stamp"
else
  echo "up to date"
fi

step "building colo in $build"
cmake -G Ninja -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DPython3_EXECUTABLE="$venv/bin/python" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
ninja -C "$build"
echo
echo "colo is built: $build/bin/colo --help"

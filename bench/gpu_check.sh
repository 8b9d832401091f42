#!/usr/bin/env bash
# colo's CUDA target checked on one GPU, in two halves (docs/cuda.md):
#
#   bash bench/gpu_check.sh prepare   # the development machine: compile and pack
#   bash bench/gpu_check.sh           # the GPU machine (one H200 or H100): check
#
# prepare builds colo-run and colo-runtime-tests, compiles GPT-2 small and a
# Llama-style 1B model for CUDA (bench/gpu_check.py prepare: synthetic colo
# models, bf16 mixed precision, AdamW), and packs them with every shared
# library the two programs load except the C library's, the C++ runtime's
# and CUDA's into .gpu-check/bundle.tar.xz. Carry .gpu-check (the device
# tool's `carry`) and bench/ comes with the working tree.
#
# The check unpacks it, runs colo-run with the bundle's libraries and the
# CUDA libraries of the machine's PyTorch (its nvidia wheels: cuBLASLt, cuDNN,
# NCCL), runs the runtime's CUDA tests (the device's GEMMs, convolutions,
# pooling and copies against the CPU's; skipped where no GPU is), then
# trains both models in colo and in PyTorch on the same batches from the
# same weights (bench/gpu_check.py check) and prints loss differences, step
# times against PyTorch eager and torch.compile, and MFU. Exit status: 0 if
# every test passed and the losses agree within 1e-2 relative.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/.gpu-check"

prepare() {
  local build=${BUILD:-$root/build}
  local python=${PYTHON:-$HOME/.local/share/colo/venv/bin/python}
  ninja -C "$build" colo colo-run colo-runtime-tests
  rm -rf "$out" && mkdir -p "$out/stage/bin" "$out/stage/lib"
  "$python" "$root/bench/gpu_check.py" prepare --colo "$build/bin/colo" \
    --out "$out/stage/exes" --target cuda
  cp "$build/bin/colo-run" "$build/bin/colo-runtime-tests" "$out/stage/bin/"
  # The machine has its own C library, C++ runtime (newer than Debian's) and
  # CUDA libraries (PyTorch's); everything else travels.
  for exe in "$out/stage/bin/"*; do ldd "$exe"; done | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda)\.so' |
    while read -r lib; do cp -L "$lib" "$out/stage/lib/"; done
  tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
  rm -rf "$out/stage"
  echo "packed $(du -h "$out/bundle.tar.xz" | cut -f1) into $out/bundle.tar.xz:" \
    "carry .gpu-check and run 'bash bench/gpu_check.sh' on the GPU machine"
}

check() {
  if [ ! -f "$out/bundle.tar.xz" ]; then
    echo "gpu_check: no $out/bundle.tar.xz; run 'bash bench/gpu_check.sh prepare'" \
      "on the development machine first" >&2
    exit 1
  fi
  local python=${PYTHON:-python3}
  local work
  work=$(mktemp -d)
  tar -C "$work" -xJf "$out/bundle.tar.xz"
  # The CUDA libraries of the machine's PyTorch wheels, and the toolkit's.
  local cuda_dirs
  cuda_dirs=$("$python" - <<'EOF'
import pathlib, site
dirs = set()
for base in site.getsitepackages():
    for name in ("libcublasLt.so.*", "libcudnn.so.*", "libnccl.so.*", "libcudart.so.*"):
        dirs.update(str(p.parent) for p in pathlib.Path(base).glob("nvidia/**/" + name))
print(":".join(sorted(dirs)))
EOF
)
  cat > "$work/colo-run" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$work/lib:$cuda_dirs:/usr/local/cuda/lib64:\${LD_LIBRARY_PATH:-}" exec "$work/bin/colo-run" "\$@"
EOF
  chmod +x "$work/colo-run"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  local status=0
  echo "== the runtime's CUDA tests"
  LD_LIBRARY_PATH="$work/lib:$cuda_dirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" \
    "$work/bin/colo-runtime-tests" --gtest_filter='Cuda*:RuntimeCuda*' || status=1
  echo "== training against PyTorch"
  "$python" "$root/bench/gpu_check.py" check --colo-run "$work/colo-run" \
    --exes "$work/exes" --device cuda || status=1
  exit $status
}

case "${1:-check}" in
prepare) prepare ;;
check) check ;;
*)
  echo "usage: bash bench/gpu_check.sh [prepare|check]" >&2
  exit 2
  ;;
esac

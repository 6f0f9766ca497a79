#!/usr/bin/env bash
# Compile throughput on the GPU host (issue 27), in one device call: the CUDA examples built by the
# old path (--fast-build off: load_inline alone) and the new one (on), interleaved over the same
# fresh sources (bench/bench.py build), after the nvcc unit's phases (bench/nvcc_phases.py), then
# the per-translation-unit breakdown of one CPU example (bench/build_phases.py). Results:
# docs/results/2026-12-05-gpu-attacks-compile.md.
# Usage, from the repository root on the GPU machine, after scripts/gpu/device.sh --build-only:
#   scripts/gpu/compile.sh [LIMIT]     LIMIT CUDA sources (default 12) spread over the corpus
# Writes $OUT/nvcc_phases.json, $OUT/build.json (summary: median, p90, max per mode and phase)
# and $OUT/phases.json.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${KBV_PYTHON:-/opt/torch/.venv/bin/python3}
out=${OUT:-$here/build/bench-out}
mkdir -p "$out"
kbv=${KBV_GPU_BUILD:-$here/build-gpu}/kbv
[[ -x $kbv ]] || { echo "compile.sh: no $kbv (run scripts/gpu/device.sh --build-only first)" >&2; exit 2; }
nproc; nvidia-smi --query-gpu=name --format=csv,noheader || true
# First (a few minutes): the nvcc unit's phases, --threads 1 against 2 (bench/nvcc_phases.py).
"$py" "$here/bench/nvcc_phases.py" --python "$py" --arch "${KBV_NVCC_ARCH:-9.0}" --repeats 3 \
  --out "$out/nvcc_phases.json" "$here/examples/level1/19_ReLU/cuda_honest.py"
OUT=$out "$py" "$here/bench/bench.py" build --device cuda --kbv "$kbv" --limit "${1:-12}" --warm-pch \
  --cache-dir "$out/cache"
"$py" "$here/bench/build_phases.py" --python "$py" --repeats 3 --out "$out/phases.json" \
  "$here/examples/level1/19_ReLU/cpu_honest.py"

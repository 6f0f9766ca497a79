#!/usr/bin/env bash
# The whole GPU check of issue 31 in one detached chain, for the device tool (its calls last at
# most 10 minutes and bring back at most 8 files from $OUT):
#   build          cmake + ninja (scripts/gpu/device.sh --build-only)
#   t17            the T17 e2e tests on the CPU device and a plain CPU timing test, with the host's
#                  facts, the records, worker logs and dmesg
#   timing-tests   the GPU timing tests (KBV_TIMING_FILTER, default TimingGpu.*: the L2 flush, the
#                  launch hold, the side stream, skip-large, the honest record), their records kept
#   attacks        issue 25's GPU attacks from the corpus (a rewritten event and host clock, work
#                  skipped after the spot-checked calls), strict and lenient: all must be rejected
#   tf32           bench/tf32.sh: FP32 and TF32 baselines through kbv's own engine
#   clocks         the SM clock spread over honest timed runs (scripts/gpu/clock_spread.py)
#   two-gpu        kbv eval --run over GPUs 0,1 against GPU 0 (scripts/gpu/two_gpu.py); prints
#                  "skipped: 1 GPU" where nvidia-smi shows one
# and stages named only when asked: aa (issue 28's A/A with paired intervals), warm and throughput (issue 26),
# verified (issue 29: --protocol kernelbench-verified on CUDA examples), compile (issue 27), and
# the others of scripts/gpu/device-verify.sh.
# Usage, from the repository root on the GPU machine (carry .deps from scripts/gpu/device-deps.sh):
#   scripts/gpu/check.sh [STAGES...]   copies this tree to $KBV_CHECK_DIR/tree (default
#                                      /tmp/kbv-check; the build goes to $KBV_CHECK_DIR/build-gpu,
#                                      kept while the machine is), starts the stages (default: all
#                                      of the above) in their own session and follows them for
#                                      KBV_WAIT seconds (560)
#   scripts/gpu/check.sh wait [SECONDS]  follows them further (the next call, machine still warm)
# Each call leaves everything the stages wrote so far in $OUT/all.tgz (logs, JSON, records;
# scripts/gpu/device-verify.sh's detach/wait). A chain outlives its call only while the machine
# is held: make the next call within the machine's idle time. Stage settings: device-verify.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
base=${KBV_CHECK_DIR:-/tmp/kbv-check}
export KBV_VERIFY_DIR=${KBV_VERIFY_DIR:-$base/verify}
export KBV_GPU_BUILD=${KBV_GPU_BUILD:-$base/build-gpu}
if [[ ${1:-} == wait ]]; then
  exec "$base/tree/scripts/gpu/device-verify.sh" wait "${2:-560}"
fi
stages=("$@")
((${#stages[@]})) || stages=(build t17 timing-tests attacks tf32 clocks two-gpu)
# The stages run from a copy: a later call that sends the tree again cannot change them midway.
rm -rf "$base/tree" && mkdir -p "$base/tree"
tar cf - -C "$here" --anchored --exclude=./.git --exclude=./build --exclude='./build-*' . | tar xf - -C "$base/tree"
export KBV_TIMING_FILTER=${KBV_TIMING_FILTER:-TimingGpu.*}
exec "$base/tree/scripts/gpu/device-verify.sh" detach "${stages[@]}"

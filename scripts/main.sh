#!/usr/bin/env bash
# README's first command: set up, then evaluate the example solutions on the built-in suite as a
# KernelBench run folder (CUDA examples at GPU sizes when a GPU is present, CPU examples at CPU
# sizes otherwise), print a summary table, then run the self-test on the rest of the corpus
# (cheats, crashes, timeouts; the CUDA entries show as skipped without a GPU).
# Extra arguments go to both `kbv eval` and `kbv selftest` (e.g. --trials 2).
# KBV_DEVICE=cpu|cuda overrides the device choice. KBV_SKIP_SETUP=1 with KBV_BUILD_DIR and
# KBV_PYTHON uses a build made elsewhere (the GPU machine: scripts/gpu/device.sh --build-only).
# It ends with the total time and the command that opens the HTML report of the run it made.
set -euo pipefail
cd "$(dirname "$0")/.."
main_start=$SECONDS
# Only what this job runs: the kbv command and its worker module (scripts/test.sh builds the tests).
[[ -n "${KBV_SKIP_SETUP:-}" ]] || scripts/setup.sh kbv kbv_worker
build=${KBV_BUILD_DIR:-$PWD/build}
device=${KBV_DEVICE:-}
if [[ -z "$device" ]]; then
  device=cpu
  python=${KBV_PYTHON:-$PWD/.venv/bin/python3}
  if [[ -e /dev/nvidiactl ]] && "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    device=cuda
  fi
fi
out=$build/main
run=$out/run-$device
rm -rf "$run"   # fresh seeds every time; compiled extensions stay in the build cache
mkdir -p "$out"
python3 scripts/main_run.py layout --manifest examples/manifest.json --device "$device" --run "$run" \
  --rest "$out/selftest-manifest.json"
rc=0
# The examples are small at their sizes: a forward call that takes 20 s is a hang.
"$build/kbv" eval --problems problems --run "$run" --device "$device" --timeout-call 20 "$@" || rc=1
echo
python3 scripts/main_run.py summary --manifest examples/manifest.json --run "$run" || rc=1
echo
"$build/kbv" selftest --manifest "$out/selftest-manifest.json" --timeout-call 20 --json "$build/selftest.json" "$@" || rc=1
echo
report=$out/report-$device.html
"$build/kbv" report "$run" --out "$report" || rc=1
elapsed=$((SECONDS - main_start))
printf 'main: done in %dm%02ds%s\n' $((elapsed / 60)) $((elapsed % 60)) "$([[ $rc -eq 0 ]] || echo ' (something failed: see above)')"
if [[ -f "$report" ]]; then
  echo "main: the report of this run: xdg-open $report   (or open it in any browser; Markdown: $build/kbv report $run)"
fi
exit $rc

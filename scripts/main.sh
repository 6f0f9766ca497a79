#!/usr/bin/env bash
# README's first command: set up, then evaluate the example solutions on the built-in problems
# (GPU entries when a GPU is present, CPU entries always) and print the confusion matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${KBV_BUILD_DIR:-$PWD/build}
# The examples are small: a forward call that takes 20 s is a hang.
exec "$build/kbv" selftest --manifest examples/manifest.json --timeout-call 20 --json "$build/selftest.json" "$@"

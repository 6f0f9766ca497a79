#!/usr/bin/env bash
# README's second command: set up, build, run every test. GPU tests skip themselves visibly
# (ctest prints them as "Skipped") unless a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${KBV_BUILD_DIR:-$PWD/build}
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"

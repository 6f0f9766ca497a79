#!/usr/bin/env bash
# kbv timing benchmark 'overhead' (bench/README.md). JSON under $OUT (default build/bench-out).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${KBV_PYTHON:-/opt/torch/.venv/bin/python3}" bench/bench.py overhead "$@"

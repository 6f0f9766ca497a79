#!/usr/bin/env bash
# kbv timing benchmark 'protocol' (bench/README.md). JSON under $OUT (default build/bench-out).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${KBV_PYTHON:-/opt/torch/.venv/bin/python3}" bench/bench.py protocol "$@"

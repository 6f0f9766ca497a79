#!/usr/bin/env bash
# On the GPU host (the device tool), after `scripts/device.sh --build-only`: does the sandbox
# (DESIGN.md, "Sandbox") leave CUDA working? Prints what it found; logs and records go to $OUT.
#   1. which layers this host and build can apply (kbv's refusal or best-effort line)
#   2. an honest CUDA example through kbv under --sandbox strict (then best-effort if strict refuses):
#      device nodes, driver libraries, nvcc in the build worker, CUDA IPC between the confined
#      candidate (own PID/IPC/mount namespaces, uid 65534 as root) and its reference
#   3. the same example with --sandbox off, for the time it takes
#   4. the sandbox e2e tests with the attack candidates on the GPU (KBV_SANDBOX_TEST_DEVICE=cuda)
# If CUDA IPC fails across the namespaces, try KBV_SANDBOX_UNAVAILABLE=ipc_namespace (then
# pid_namespace) with --sandbox best-effort to find which one it needs, and report it.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${KBV_BUILD_DIR:-$root/build-gpu}
out=${OUT:-$build/out}
mkdir -p "$out"
export KBV_PYTHON=${KBV_PYTHON:-/opt/torch/.venv/bin/python3}
export KBV_CACHE_DIR=$out/sandbox-cache
kbv=$build/kbv
[[ -x $kbv ]] || { echo "sandbox: no $kbv (run scripts/device.sh --build-only first)"; exit 1; }
echo "== host: uid $(id -u), kernel $(uname -r), LSMs $(cat /sys/kernel/security/lsm 2>/dev/null)"
ls -ld /dev/nvidia* /dev/nvidia-caps 2>&1 | head -12
grep -i seccomp "$build/CMakeCache.txt" | head -3
unreachable=""
for p in "$KBV_PYTHON" "$build" "$root/examples"; do
  setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$p" 2>/dev/null || unreachable+=" $p"
done
[[ -n $unreachable ]] && echo "note: not readable by uid 65534:$unreachable (the uid layer will refuse)"

problem=problems/level1/19_ReLU.py
solution=examples/level1/19_ReLU/cuda_honest.py
run_eval() {  # mode, record name
  local t0=$(date +%s.%N)
  "$kbv" eval --problem "$problem" --solution "$solution" --device cuda --sandbox "$1" \
    --json "$out/sandbox-$2.json" > "$out/sandbox-$2.log" 2>&1
  local rc=$? t1=$(date +%s.%N)
  echo "== --sandbox $1: exit $rc in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s"
  tail -5 "$out/sandbox-$2.log"
  [[ -f $out/sandbox-$2.json ]] && "$KBV_PYTHON" - "$out/sandbox-$2.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict:", r["verdict"], "-", r["message"][:300])
print("sandbox:", json.dumps(r.get("sandbox"), indent=1))
print("phase_seconds:", r.get("phase_seconds"))
PY
  return $rc
}
rm -rf "$KBV_CACHE_DIR"
run_eval strict strict || true
if grep -q "cannot be applied" "$out/sandbox-strict.log"; then
  echo "strict refused on this host (above); trying best-effort"
  run_eval best-effort best-effort || true
fi
run_eval off off || true
echo "== CUDA IPC probes (candidate in its namespaces, reference outside)"
for layer in ipc_namespace pid_namespace; do
  KBV_SANDBOX_UNAVAILABLE=$layer run_eval best-effort "without-$layer" > "$out/sandbox-without-$layer.summary" 2>&1
  echo "without $layer: $(grep -m1 '^verdict' "$out/sandbox-without-$layer.summary")"
done
echo "== sandbox e2e tests on the GPU"
KBV_SANDBOX_TEST_DEVICE=cuda "$build/tests/kbv_e2e_tests" --gtest_filter='Sandbox.*' > "$out/sandbox-e2e.log" 2>&1
e2e=$?
echo "e2e exit $e2e"
grep -E '^\[ +(OK|FAILED) +\]' "$out/sandbox-e2e.log"
grep -B2 -A12 'Failure' "$out/sandbox-e2e.log" | head -80
exit $e2e  # the stage's status is the e2e tests' (the last grep finds no failure when all passed)

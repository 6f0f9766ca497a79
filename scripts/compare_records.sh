#!/usr/bin/env bash
# Equivalence of two kbv builds' records: runs `kbv eval --json` with OLD and NEW on a few
# examples (a correct one, wrong_output, rejected, compile_error, runtime_error; --seed 7) and
# diffs the records after blanking what is measured (seconds, times, memory, samples).
#   scripts/compare_records.sh OLD_KBV NEW_KBV [OUT_DIR]
# Both use the worker module of KBV_WORKER_DIR (or their own build's). Exit 0: no difference.
set -euo pipefail
old=$1 new=$2 out=${3:-$(mktemp -d /tmp/kbv-compare.XXXXXX)}
mkdir -p "$out"  # a given OUT_DIR may not exist yet: the logs are redirected into it
root=$(cd "$(dirname "$0")/.." && pwd)
cases=(
  "problems/level1/19_ReLU.py examples/level1/19_ReLU/cpu_honest.py"
  "problems/level1/19_ReLU.py examples/level1/19_ReLU/cpu_identity.py"
  "problems/level1/19_ReLU.py examples/level1/19_ReLU/cpu_pointer_cache.py"
  "problems/level1/19_ReLU.py examples/level1/19_ReLU/cpu_compile_error.py"
  "problems/level1/19_ReLU.py examples/level1/19_ReLU/cpu_raises.py"
)
status=0
for c in "${cases[@]}"; do
  set -- $c
  name=$(basename "$2" .py)
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    (cd "$root" && "$bin" eval --problem "$1" --solution "$2" --device cpu --seed 7 --time-cap 0.2 \
        --cache-dir "$out/cache-$side" --json "$out/$name.$side.json" >"$out/$name.$side.log" 2>&1) || true
  done
  if python3 - "$out/$name.old.json" "$out/$name.new.json" <<'PY'
import json, sys
# Wall times and measured figures: blanked wholesale where they sit, numbers only inside the
# measured parts (their keys, methods and findings must still agree).
MEASURED = {"seconds", "phase_seconds", "cached", "cpu_ms_after", "window_ms", "stop", "own", "library",
            "math", "samples"}
NUMBERS_ONLY = {"runtime", "runtime_stats", "timing", "memory", "compute", "audit"}
def blank(x, key="", numbers=False):
    if key in MEASURED:
        return "<measured>"
    numbers = numbers or key in NUMBERS_ONLY
    if isinstance(x, dict):
        return {k: blank(v, k, numbers) for k, v in x.items()}
    if isinstance(x, list):
        return [blank(v, "", numbers) for v in x]
    if numbers and isinstance(x, (int, float)) and not isinstance(x, bool):
        return "<n>"
    return x
def load(path):
    # Each side has its own cache folder (both build cold); its path shows in compiler messages.
    r = json.loads(open(path).read().replace("/cache-old/", "/cache-X/").replace("/cache-new/", "/cache-X/"))
    # timing_host_busy says how loaded the host was while timing: the machine's, not kbv's.
    r["findings"] = [f for f in r.get("findings", []) if f.get("rule") != "timing_host_busy"]
    return blank(r)
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print("  differs:", k, json.dumps(a.get(k))[:300], "|", json.dumps(b.get(k))[:300])
    sys.exit(1)
PY
  then echo "$name: same ($(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['verdict'])" "$out/$name.new.json"))"
  else echo "$name: DIFFERENT"; status=1; fi
done
echo "records in $out"
exit $status

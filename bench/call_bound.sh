#!/usr/bin/env bash
# The per-call outside bound and the per-call CPU bound (docs/TIMING.md) on the honest CPU corpus:
# each honest CPU example evaluated idle and beside BUSY busy loops (default 2), its
# timing.call_bound and timing figures printed one line per evaluation, records kept under $OUT
# (default build/bench-out/call_bound).
#   bench/call_bound.sh [KBV] [TIME_CAP]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kbv=${1:-$root/build/kbv}
cap=${2:-0.5}
out=${OUT:-$root/build/bench-out/call_bound}
busy=${BUSY:-2}
mkdir -p "$out"
entries=$(python3 - "$root" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/examples/manifest.json"))
seen = set()
for e in m:
    if e.get("device") == "cpu" and e.get("expected") == "correct" and e.get("cheat") is None \
            and e.get("policy", "strict") == "strict" and e.get("precision", "fp32") == "fp32" \
            and e["solution"] not in seen:
        seen.add(e["solution"])
        print(e["problem"] + " " + e["solution"])
PY
)
summary() {  # $1 record, $2 condition
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing", {})
b = t.get("call_bound", {})
cb = b.get("cpu", {})  # the per-call CPU bound
c = t.get("candidate", {})
print(f"{sys.argv[2]:5} {r['verdict']:9} {r['solution'].split('/')[-2][:28]:28} calls {b.get('checked', '-'):>4} "
      f"short {b.get('short_calls', '-'):>3} waited {b.get('waited_calls', '-'):>3} "
      f"judged {'yes' if b.get('judged', True) else 'no':3} allow {b.get('allowance_ms', 0):.3f} ping {b.get('ping_ms', 0):.3f} "
      f"gap50 {b.get('median_gap_ms', 0):.3f} median {c.get('median_ms', 0):.4f} others {c.get('host_other_cores', '-')} "
      f"sampling {t.get('sampling_s', 0):.2f}s cpu-over {cb.get('over_calls', '-')}/{cb.get('checked', '-')} "
      f"cpu-excess50 {cb.get('median_excess_ms', 0):.3f} cpu-ok {cb.get('ok', '-')}")
PY
}
while read -r problem solution; do
  [[ -n $problem ]] || continue
  name=$(echo "$solution" | tr / _)
  for cond in idle busy; do
    pids=()
    if [[ $cond == busy ]]; then
      for ((i = 0; i < busy; i++)); do (while :; do :; done) & pids+=($!); done
    fi
    "$kbv" eval --problem "$root/$problem" --solution "$root/$solution" --device cpu --trials 2 \
      --time-cap "$cap" --json "$out/$cond-$name.json" > "$out/$cond-$name.log" 2>&1
    for p in "${pids[@]}"; do kill "$p"; done
    summary "$out/$cond-$name.json" "$cond"
  done
done <<< "$entries"

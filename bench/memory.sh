#!/usr/bin/env bash
# The measured memory table (docs/MEMORY.md) on a GPU machine: evaluates the memory examples and
# writes $OUT/memory.json (each figure next to its truth, and whether it is within 1%), plus the
# full records under $OUT/records/. Run from the repository root after scripts/setup.sh:
#   OUT=/tmp/mem bench/memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/build/bench-memory}
kbv=${KBV:-build/kbv}
mkdir -p "$out/records"
python=${KBV_PYTHON:-python3}

# name | problem | solution | policy
cases=(
  "malloc_1gib|problems/level1/19_ReLU.py|examples/level1/19_ReLU/cuda_malloc_1gib.py|strict"
  "keep_512mib|problems/level1/19_ReLU.py|examples/level1/19_ReLU/cuda_keep_512mib.py|strict"
  "leak_64mib|problems/level1/19_ReLU.py|examples/level1/19_ReLU/cuda_leak_64mib.py|strict"
  "inplace_epilogue|problems/level2/12_Gemm_Multiply_LeakyReLU.py|examples/level2/12_Gemm_Multiply_LeakyReLU/cuda_inplace_epilogue.py|strict"
  "honest_relu|problems/level1/19_ReLU.py|examples/level1/19_ReLU/cuda_honest.py|strict"
  "aten_in_wrapper|problems/level1/19_ReLU.py|examples/level1/19_ReLU/cuda_aten_in_wrapper.py|lenient"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name problem solution policy <<<"$c"
  echo "bench/memory.sh: $name" >&2
  "$kbv" eval --problem "$problem" --solution "$solution" --device cuda --trials 1 --policy "$policy" \
    --json "$out/records/$name.json" >"$out/records/$name.log" 2>&1 || echo "  kbv exited $? (see $out/records/$name.log)" >&2
done

"$python" - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
MiB = 1 << 20
def load(name):
    try:
        return json.load(open(os.path.join(out, "records", name + ".json")))
    except Exception as e:
        return {"verdict": "no record: %s" % e}
def cand(r, key):
    return r.get("memory", {}).get("candidate", {}).get(key)
def row(name, figure, got, truth):
    ok = got is not None and truth and abs(got - truth) <= 0.01 * abs(truth)
    return {"case": name, "figure": figure, "measured_bytes": got, "truth_bytes": truth,
            "within_1pct": bool(ok)}
rows, extra = [], {}
r = load("malloc_1gib")
rows.append(row("malloc_1gib", "non_torch_peak_bytes", cand(r, "non_torch_peak_bytes"), 1024 * MiB))
p, t = cand(r, "peak_bytes"), cand(r, "torch_peak_bytes")
rows.append(row("malloc_1gib", "peak_bytes - torch_peak_bytes", None if p is None or t is None else p - t, 1024 * MiB))
r = load("keep_512mib")
rows.append(row("keep_512mib", "persistent_bytes", cand(r, "persistent_bytes"), 512 * MiB))
r = load("leak_64mib")
rows.append(row("leak_64mib", "growth_bytes_per_call", cand(r, "growth_bytes_per_call"), 64 * MiB))
r = load("inplace_epilogue")
b = r.get("memory", {}).get("baselines", {}).get("fp32", {}).get("peak_bytes")
c = cand(r, "peak_bytes")
rows.append(row("inplace_epilogue", "fp32 baseline peak - candidate peak",
                None if b is None or c is None else b - c, 4096 * 8192 * 4))
records = {n: load(n) for n in ["malloc_1gib", "keep_512mib", "leak_64mib", "inplace_epilogue", "honest_relu", "aten_in_wrapper"]}
summary = {n: {"verdict": rec.get("verdict"),
               "memory": rec.get("memory"),
               "compute_own_share": rec.get("compute", {}).get("own_share"),
               "compute_method": rec.get("compute", {}).get("method"),
               "findings": [f.get("rule") for f in rec.get("findings", [])]} for n, rec in records.items()}
table = {"rows": rows, "all_within_1pct": all(x["within_1pct"] for x in rows), "cases": summary}
json.dump(table, open(os.path.join(out, "memory.json"), "w"), indent=2)
print(json.dumps(table, indent=2))
PY

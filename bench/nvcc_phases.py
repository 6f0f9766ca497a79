#!/usr/bin/env python3
"""Where the nvcc translation unit of a fresh load_inline CUDA build spends its time (issue 27).

Builds one CUDA solution once with torch's load_inline (the candidate's path) into a scratch
folder, then re-runs nvcc on the generated cuda.cu with the flags of torch's build.ninja and
`--time`, alternating `--threads 1` (nvcc's default) and `--threads 2` (nvcc runs independent
steps of the trajectory at once: the host front end cudafe++ beside the device front end cicc),
`--repeats` times each. Reports per phase (preprocessing, cudafe++, cicc, ptxas, host gcc) the
median milliseconds, and the command's wall and CPU seconds; checks that the two objects'
disassembly is the same apart from nvcc's temporary file names.
Usage: nvcc_phases.py --python PY [--arch 9.0] [--repeats 3] [--out FILE] SOLUTION.py
Compiles without a GPU (TORCH_CUDA_ARCH_LIST names the arch); importing the built module is not
needed and its failure on a GPU-less host is ignored.
"""
import argparse
import csv
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GEN = r'''
import importlib.util, sys
spec = importlib.util.spec_from_file_location("kbv_candidate", sys.argv[1])
m = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(m)
except Exception as e:  # a GPU-less host cannot load the module: the build is what we want
    print("LOAD_FAILED", type(e).__name__, str(e)[:200])
'''


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def phases(csv_path):
    out = {}
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        if len(row) < 8:
            continue
        name = re.sub(r"\s*\(.*\)", "", row[1].strip()) if "preprocessing" in row[1] else row[1].strip()
        out[name] = out.get(name, 0.0) + float(row[6])
    return out


def disasm(obj):
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True).stdout
    return re.sub(r"tmpxft_[0-9a-f]+_[0-9a-f]+", "tmpxft", "\n".join(text.splitlines()[2:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("solution")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kbv-nvcc-"))
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(work / "ext"), TORCH_CUDA_ARCH_LIST=a.arch, MAX_JOBS="2")
    (work / "gen.py").write_text(GEN)
    t0 = time.time()
    subprocess.run([a.python, str(work / "gen.py"), a.solution], env=env, check=False)
    first_build_s = time.time() - t0
    ninja = next((work / "ext").rglob("build.ninja"), None)
    if ninja is None:
        sys.exit("nvcc_phases: load_inline left no build.ninja under " + str(work / "ext"))
    text = ninja.read_text()
    nvcc = re.search(r"^nvcc = (.*)$", text, re.M).group(1)
    flags = re.search(r"^cuda_cflags = (.*)$", text, re.M).group(1)
    post = re.search(r"^cuda_post_cflags = (.*)$", text, re.M)
    cmd = shlex.split(nvcc) + shlex.split(flags) + (shlex.split(post.group(1)) if post else [])
    src = ninja.parent / "cuda.cu"
    runs = {1: [], 2: []}
    for i in range(a.repeats):
        for t in (1, 2):
            obj, tcsv = work / f"t{t}.o", work / f"t{t}-{i}.csv"
            c0, w0 = children_cpu(), time.time()
            subprocess.run(cmd + ["--threads", str(t), "--time", str(tcsv), "-c", str(src), "-o", str(obj)],
                           cwd=ninja.parent, check=True)
            runs[t].append({"wall_s": time.time() - w0, "cpu_s": children_cpu() - c0, "phases_ms": phases(tcsv)})
            print(f"[{i + 1}/{a.repeats}] --threads {t}: {runs[t][-1]['wall_s']:.1f} s wall, "
                  f"{runs[t][-1]['cpu_s']:.1f} s CPU", flush=True)
    same = disasm(work / "t1.o") == disasm(work / "t2.o")
    summary = {"solution": a.solution, "arch": a.arch, "nproc": os.cpu_count(), "first_build_s": first_build_s,
               "loadavg_end": list(os.getloadavg()), "same_code": same, "command": cmd}
    for t, rs in runs.items():
        names = sorted({k for r in rs for k in r["phases_ms"]})
        summary[f"threads_{t}"] = {
            "wall_s": statistics.median(r["wall_s"] for r in rs),
            "cpu_s": statistics.median(r["cpu_s"] for r in rs),
            "phases_ms": {n: statistics.median(r["phases_ms"].get(n, 0.0) for r in rs) for n in names},
        }
    summary["wall_ratio_t2_over_t1"] = summary["threads_2"]["wall_s"] / summary["threads_1"]["wall_s"]
    print(json.dumps(summary, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps({"summary": summary, "runs": {str(k): v for k, v in runs.items()}}, indent=2))


if __name__ == "__main__":
    main()

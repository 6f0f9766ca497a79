#!/usr/bin/env python3
"""Where a fresh load_inline CPU build's time goes, per translation unit (bench/README.md, `build`).

For each solution: builds it once with torch's load_inline (the path a candidate takes), then
re-runs the compiler on the generated main.cpp with the flags of torch's build.ninja:
  preprocess (-E), parse only (-fsyntax-only), full compile (-c), and the same for a TU holding
  only `#include <torch/extension.h>` (the header's share), for main.cpp without its
  PYBIND11_MODULE block (the candidate's C++) and for the binding block alone; the link with
  ld.bfd, gold and lld; the compile with a precompiled torch/extension.h (built here, timed).
Each step runs `--repeats` times, the median kept. Prints and writes JSON (--out).
Usage: build_phases.py --python PY SOLUTION.py... [--repeats N] [--out FILE]
"""
import argparse
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GEN = r'''
import os, sys, time, importlib.util
t0 = time.time()
spec = importlib.util.spec_from_file_location("kbv_candidate", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print("LOAD_INLINE_SECONDS", time.time() - t0)
'''


CPU = {}  # the CPU seconds (user + system) of the last timed() command, median


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, cwd, repeats):
    """Median wall seconds; the median CPU seconds go to CPU['last'] (on a loaded machine the CPU
    time is the steadier figure: it does not count the time spent waiting for a core)."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0 = children_cpu()
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - t0)
        cpus.append(children_cpu() - c0)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)[:300]}: exit {p.returncode}: {p.stderr[-2000:]}")
    CPU["last"] = statistics.median(cpus)
    return statistics.median(walls)


def ninja_vars(build_ninja):
    v = {}
    for line in build_ninja.read_text().splitlines():
        m = re.match(r"^(\w+) = (.*)$", line)
        if m:
            v[m.group(1)] = m.group(2)
    return v


def phases(python, solution, repeats, work):
    ext = work / "ext"
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(ext), MAX_JOBS="1")
    env.pop("CXX", None)
    t0 = time.perf_counter()
    c0 = children_cpu()
    p = subprocess.run([python, "-c", GEN, str(solution)], env=env, capture_output=True, text=True)
    total = time.perf_counter() - t0
    total_cpu = children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError(f"{solution}: load_inline failed: {p.stderr[-2000:]}")
    inner = float(re.search(r"LOAD_INLINE_SECONDS (\S+)", p.stdout).group(1))
    folder = next(d for d in ext.iterdir() if (d / "build.ninja").exists())
    v = ninja_vars(folder / "build.ninja")
    cxx = v.get("cxx", "c++")
    cflags = shlex.split(v["cflags"]) + shlex.split(v.get("post_cflags", ""))
    ldflags = shlex.split(v["ldflags"])
    main = (folder / "main.cpp").read_text()
    cut = main.index("PYBIND11_MODULE(")
    tus = {
        "main.cpp": main,
        "header_only": "#include <torch/extension.h>\n",
        "candidate_only": main[:cut],
    }
    # binding_only needs the functions' declarations: take them from the candidate's definitions.
    decls = []
    for name in re.findall(r'm\.def\("(\w+)"', main[cut:]):
        d = re.search(r"^[ \t]*([\w:<>, \t\*&]+?)[\s\*&]+" + name + r"\s*\(([^)]*)\)\s*\{", main[:cut], re.M)
        if d:
            decls.append(f"{d.group(1).strip()} {name}({d.group(2)});\n")
    tus["binding_only"] = "#include <torch/extension.h>\n" + "".join(decls) + main[cut:]
    out = {"solution": str(solution), "load_inline_wall_s": total, "load_inline_in_python_s": inner,
           "load_inline_cpu_s": total_cpu,
           "compiler": subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0],
           "cflags": cflags, "tu": {}}
    for name, text in tus.items():
        src = work / f"{name}.cpp"
        src.write_text(text)
        r = {}
        r["preprocess_s"] = timed([cxx, *cflags, "-E", str(src), "-o", str(work / f"{name}.ii")], work, repeats)
        r["preprocess_cpu_s"] = CPU["last"]
        r["preprocessed_lines"] = sum(1 for _ in open(work / f"{name}.ii"))
        r["syntax_only_s"] = timed([cxx, *cflags, "-fsyntax-only", str(src)], work, repeats)
        r["syntax_only_cpu_s"] = CPU["last"]
        r["compile_s"] = timed([cxx, *cflags, "-c", str(src), "-o", str(work / f"{name}.o")], work, repeats)
        r["compile_cpu_s"] = CPU["last"]
        out["tu"][name] = r
    obj = work / "main.cpp.o"
    so = work / "main.so"
    out["link"] = {}
    for ld in ("bfd", "gold", "lld"):
        out["link"][ld] = timed([cxx, str(obj), *ldflags, f"-fuse-ld={ld}", "-o", str(so)], work, repeats)
        out["link"][ld + "_cpu"] = CPU["last"]
    # A precompiled torch/extension.h with the TU's own flags (less the extension's name).
    pch_flags = [f for f in cflags if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    inc = next(Path(cflags[i + 1]) for i, f in enumerate(cflags) if f == "-isystem"
               and (Path(cflags[i + 1]) / "torch" / "extension.h").exists())
    pch_dir = work / "pch" / "torch"
    pch_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(inc / "torch" / "extension.h", pch_dir / "extension.h")  # GCC reads it beside the .gch
    out["pch_build_s"] = timed([cxx, *pch_flags, "-x", "c++-header", str(inc / "torch" / "extension.h"), "-o",
                                str(pch_dir / "extension.h.gch")], work, 1)
    out["pch_build_cpu_s"] = CPU["last"]
    out["pch_size_bytes"] = (pch_dir / "extension.h.gch").stat().st_size
    src = work / "main.cpp.cpp"
    with_pch = [cxx, "-I", str(work / "pch"), "-Winvalid-pch", *cflags]
    chk = subprocess.run([*with_pch, "-H", "-fsyntax-only", str(src)], cwd=work, capture_output=True, text=True)
    out["pch_used"] = "extension.h.gch" in chk.stderr and "not used" not in chk.stderr
    out["pch_compile_s"] = timed([*with_pch, "-c", str(src), "-o", str(work / "main_pch.o")], work, repeats)
    out["pch_compile_cpu_s"] = CPU["last"]
    out["pch_syntax_only_s"] = timed([*with_pch, "-fsyntax-only", str(src)], work, repeats)
    # Same machine code with and without the PCH: the disassembly of both objects.
    dis = [subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(o)], capture_output=True, text=True).stdout
           .split("\n", 3)[-1] for o in (work / "main.cpp.o", work / "main_pch.o")]
    out["pch_same_code"] = dis[0] == dis[1]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("solutions", nargs="+")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for s in args.solutions:
        with tempfile.TemporaryDirectory(prefix="kbv-phases-") as d:
            r = phases(args.python, Path(s).resolve(), args.repeats, Path(d))
        rows.append(r)
        t = r["tu"]
        print(f"{s}: load_inline {r['load_inline_in_python_s']:.1f} s (CPU {r['load_inline_cpu_s']:.1f} s); main.cpp CPU: "
              f"-E {t['main.cpp']['preprocess_cpu_s']:.2f} syntax {t['main.cpp']['syntax_only_cpu_s']:.2f} "
              f"compile {t['main.cpp']['compile_cpu_s']:.2f}; header-only syntax {t['header_only']['syntax_only_cpu_s']:.2f} "
              f"compile {t['header_only']['compile_cpu_s']:.2f}; candidate-only {t['candidate_only']['compile_cpu_s']:.2f}; "
              f"binding-only {t['binding_only']['compile_cpu_s']:.2f}; link bfd {r['link']['bfd_cpu']:.2f} "
              f"lld {r['link']['lld_cpu']:.2f}; pch build {r['pch_build_cpu_s']:.1f}, compile with pch "
              f"{r['pch_compile_cpu_s']:.2f}", flush=True)
        print(f"  wall: main.cpp -E {t['main.cpp']['preprocess_s']:.2f} "
              f"syntax {t['main.cpp']['syntax_only_s']:.2f} compile {t['main.cpp']['compile_s']:.2f}; header-only "
              f"syntax {t['header_only']['syntax_only_s']:.2f} compile {t['header_only']['compile_s']:.2f}; "
              f"candidate-only {t['candidate_only']['compile_s']:.2f}; binding-only {t['binding_only']['compile_s']:.2f}; "
              f"link bfd {r['link']['bfd']:.2f} gold {r['link']['gold']:.2f} lld {r['link']['lld']:.2f}; "
              f"pch build {r['pch_build_s']:.1f} ({r['pch_size_bytes'] >> 20} MiB), used {r['pch_used']}, "
              f"compile with pch {r['pch_compile_s']:.2f}, same code {r['pch_same_code']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"loadavg": os.getloadavg(), "nproc": os.cpu_count(), "rows": rows},
                                             indent=2))


if __name__ == "__main__":
    main()

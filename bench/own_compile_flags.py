#!/usr/bin/env python3
"""What kbv's own compile flags cost (issue 27): compiles a sample of kbv's translation units from
build/compile_commands.json under each flag variant, interleaved (variant order rotated per file so
load drifts hit all of them), and prints the user+system CPU seconds per variant and the ratio to the
first. The object files go to a temporary folder; the build folder is not touched.

Usage: bench/own_compile_flags.py [--build build] [--files N] [--json out.json]
       [--variant '-O2 -g' --variant '-O2 -g1' ...]
A file's own -O/-g flags are removed and the variant's appended; precompiled-header flags are kept
only where the header was built with the same variant, so files that use one compile without it.
"""
import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--files", type=int, default=12, help="this many files, spread over the sorted list")
    ap.add_argument("--variant", action="append", help="flags replacing the file's -O and -g (repeatable)")
    ap.add_argument("--json")
    args = ap.parse_args()
    variants = args.variant or ["-O2 -g", "-O2 -g1", "-O1 -g1"]
    entries = json.loads((Path(args.build) / "compile_commands.json").read_text())
    entries = sorted((e for e in entries if e["file"].endswith(".cc")), key=lambda e: e["file"])
    step = max(1, len(entries) // args.files)
    sample = entries[::step][: args.files]
    cpu = {v: 0.0 for v in variants}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, e in enumerate(sample):
            argv = shlex.split(e["command"])
            # drop the output, the optimisation/debug flags and a precompiled header
            out, keep, skip = [], [], False
            for a in argv:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "-include") :
                    skip = True
                    continue
                if re.fullmatch(r"-O[0-3s]|-g[0-3]?|-Winvalid-pch", a):
                    continue
                keep.append(a)
            row = {"file": os.path.relpath(e["file"], e["directory"] + "/..")}
            order = variants[i % len(variants):] + variants[: i % len(variants)]
            for v in order:
                before = child_cpu()
                t0 = time.monotonic()
                r = subprocess.run(keep + v.split() + ["-o", f"{tmp}/x.o"], cwd=e["directory"],
                                   capture_output=True, text=True)
                if r.returncode:
                    print(f"{row['file']}: {v}: failed: {r.stderr[-400:]}", file=sys.stderr)
                    break
                used = child_cpu() - before
                cpu[v] += used
                row[v] = {"cpu_s": round(used, 2), "wall_s": round(time.monotonic() - t0, 2)}
            rows.append(row)
            print(row["file"], " ".join(f"{v}: {row[v]['cpu_s']:.1f}" for v in variants if v in row), file=sys.stderr, flush=True)
    first = cpu[variants[0]]
    summary = {v: {"cpu_s": round(c, 1), "ratio": round(c / first, 3) if first else None} for v, c in cpu.items()}
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                               "loadavg": os.getloadavg(), "nproc": os.cpu_count(),
                                               "summary": summary, "files": rows}, indent=1))


if __name__ == "__main__":
    main()

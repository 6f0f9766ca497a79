#!/usr/bin/env python3
"""Does it matter which process draws a CPU call's inputs? Measured without kbv (issue 28).

kbv's candidate worker gets each fresh draw from the reference process, which runs get_inputs()
while the candidate waits on a pipe; a baseline draws in its own process. Here one process, one
thread pinned to one CPU, times a 256 KiB ReLU through an nn.Module (19_ReLU's CPU size) after a
64 MiB memset (kbv's CPU cache flush), each call preceded by the same pipe round trip to a helper
process, and by a torch.rand draw of the same size made:

  own            here, before the round trip (the helper only echoes): a baseline's order
  foreign        by the helper, on the same CPU, while this process waits: the candidate's order
  foreign-other  by the helper, on another CPU

On a host where the drawing process does not matter the three rows agree. One JSON object
(--json) or a line per repetition.

  python3 bench/cpu_foreign_draw.py [--cpu 1] [--other-cpu 0] [--calls 400] [--reps 4] [--json]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

MODES = ("own", "foreign", "foreign-other")


def helper(cpu):
    """The helper process: one byte in, one out; 'd' draws first."""
    os.sched_setaffinity(0, {cpu})
    while True:
        b = sys.stdin.buffer.read(1)
        if not b:
            return
        if b == b"d":
            torch.manual_seed(7)
            torch.rand(16, 4096)
        sys.stdout.buffer.write(b"k")
        sys.stdout.buffer.flush()


class ReLU(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def run(mode, a, flush, model, src, x):
    cpu = a.other_cpu if mode == "foreign-other" else a.cpu
    b = subprocess.Popen([sys.executable, __file__, "--helper", str(cpu)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    libc = ctypes.CDLL(None)
    buf = (ctypes.c_char * len(flush)).from_buffer(flush)
    times = []
    try:
        for i in range(a.calls):
            if mode == "own":
                torch.manual_seed(7)
                torch.rand(16, 4096)
                b.stdin.write(b"e")
            else:
                b.stdin.write(b"d")
            if b.stdout.read(1) != b"k":
                raise RuntimeError("the helper process ended")
            x.copy_(src)
            libc.memset(buf, i & 0xFF, len(flush))
            t0 = time.perf_counter_ns()
            y = model(x)
            t1 = time.perf_counter_ns()
            del y
            times.append((t1 - t0) / 1000)
    finally:
        b.stdin.close()
        b.wait()
    return statistics.median(times[a.calls // 8:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="the timed CPU (default: the highest)")
    ap.add_argument("--other-cpu", type=int, default=min(os.sched_getaffinity(0)), help="the helper's CPU in foreign-other")
    ap.add_argument("--calls", type=int, default=400, help="timed calls per mode and repetition (the first eighth dropped)")
    ap.add_argument("--reps", type=int, default=4, help="repetitions of the three modes")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--helper", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.helper is not None:
        return helper(a.helper)
    if a.calls < 16:
        ap.error("--calls must be at least 16")
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {a.cpu})
    flush = bytearray(64 << 20)
    model, src, x = ReLU(), torch.rand(16, 4096), torch.empty(16, 4096)
    rows = []
    for rep in range(a.reps):
        row = {m: round(run(m, a, flush, model, src, x), 1) for m in MODES}
        rows.append(row)
        if not a.json:
            print(f"rep {rep}: " + "  ".join(f"{m} {row[m]} us" for m in MODES), flush=True)
    summary = {m: round(statistics.median(r[m] for r in rows), 1) for m in MODES}
    if a.json:
        print(json.dumps({"cpu": a.cpu, "other_cpu": a.other_cpu, "calls": a.calls, "median_us": summary, "reps": rows}))
    else:
        print("median over reps: " + "  ".join(f"{m} {summary[m]} us" for m in MODES))


if __name__ == "__main__":
    sys.exit(main())

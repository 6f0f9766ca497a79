#!/usr/bin/env python3
"""What a pause before a CPU call costs on this host, measured without kbv (issue 28).

One process, one thread, pinned to one CPU: torch.relu on a 16 x 4096 float tensor (256 KiB in,
256 KiB out: 19_ReLU's CPU size), timed call by call, each call after a pause in which the buffers
are not touched: none, or GAP milliseconds either sleeping (the thread blocks, as kbv's candidate
worker blocks on its reply channel for a fresh draw and for the answer to its start mark) or
spinning in Python (the thread stays on its CPU). On a host where a pause costs nothing every
row is the in-cache time of the call. The output is one JSON object (--json) or a short table.

  python3 bench/cpu_touch_gap.py [--cpu 1] [--gaps-ms 0.2,1,5] [--calls 400] [--json]
"""
import argparse
import json
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)), help="the CPU to pin to (default: the highest)")
    ap.add_argument("--gaps-ms", default="0.2,1,5", help="pauses to try, in ms, comma-separated (0 is always tried)")
    ap.add_argument("--calls", type=int, default=400, help="timed calls per row (the first 20 are dropped)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    a = ap.parse_args()
    if a.calls <= 20:
        ap.error("--calls must be more than 20")
    gaps = sorted({0.0} | {float(g) for g in a.gaps_ms.split(",") if g.strip()})

    import torch

    torch.set_num_threads(1)
    os.sched_setaffinity(0, {a.cpu})
    x = torch.randn(16, 4096)

    def row(gap_ms, spin):
        gap_s = gap_ms / 1000.0
        times = []
        for _ in range(a.calls):
            if gap_s > 0:
                if spin:
                    t = time.perf_counter()
                    while time.perf_counter() - t < gap_s:
                        pass
                else:
                    time.sleep(gap_s)
            t0 = time.perf_counter_ns()
            y = torch.relu(x)
            t1 = time.perf_counter_ns()
            del y
            times.append((t1 - t0) / 1000.0)
        return statistics.median(times[20:])

    rows = []
    for g in gaps:
        for spin in ([False] if g == 0 else [False, True]):
            rows.append({"gap_ms": g, "pause": "none" if g == 0 else ("spin" if spin else "sleep"),
                         "median_us": round(row(g, spin), 2)})
    if a.json:
        print(json.dumps({"cpu": a.cpu, "calls": a.calls, "bytes": 2 * x.numel() * 4, "rows": rows}))
        return
    for r in rows:
        print(f"pause {r['pause']:5} {r['gap_ms']:5.1f} ms  relu {r['median_us']:8.2f} us")


if __name__ == "__main__":
    main()

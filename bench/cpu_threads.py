#!/usr/bin/env python3
"""CPU thread parity, measured without kbv (docs/TIMING.md "Thread parity").

In one process, pinned to the same CPUs and with torch.set_num_threads(N) (the budget kbv gives
both of its workers), times the problem's own Model and a solution's ModelNew on the same input,
interleaved call by call (A, B, A, B, ...), each call after a cache flush of 64 MiB (kbv's CPU
flush) and on a fresh draw of get_inputs() at the problem's KBV_CPU size. Prints the medians and
the ratio Model / ModelNew: the speedup kbv should report for the same pair.

  python3 bench/cpu_threads.py --problem problems/level1/107_Tanh.py \
      --solution examples/level1/107_Tanh/cpu_honest.py --threads 1 [--busy 1] [--calls 300]

--busy K starts K busy loops (Python spinning) beside the measurement, unpinned, and stops them
at the end: the same load a test puts beside kbv. The output is one JSON line.
"""
import argparse
import importlib.util
import json
import multiprocessing
import os
import statistics
import sys
import time


def spin():
    while True:
        pass


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--solution", required=True)
    ap.add_argument("--threads", type=int, default=1, help="CPUs and intra-op threads (0: every CPU)")
    ap.add_argument("--busy", type=int, default=0, help="busy loops beside the measurement")
    ap.add_argument("--calls", type=int, default=300, help="timed calls of each side")
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    allowed = sorted(os.sched_getaffinity(0))
    n = len(allowed) if args.threads <= 0 or args.threads >= len(allowed) else args.threads
    cpus = allowed[-n:]  # kbv's choice: the highest-numbered CPUs it may use
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for p in busy:
        p.start()
    os.sched_setaffinity(0, cpus)  # before torch starts a thread: they inherit it
    os.environ["OMP_NUM_THREADS"] = str(n)
    import torch

    torch.set_num_threads(n)
    problem = load_module(args.problem, "kbv_bench_problem")
    for k, v in getattr(problem, "KBV_CPU", {}).items():
        setattr(problem, k, v)
    solution = load_module(args.solution, "kbv_bench_solution")
    torch.manual_seed(42)
    ref = problem.Model(*problem.get_init_inputs())
    torch.manual_seed(42)
    cand = solution.ModelNew(*problem.get_init_inputs())
    flush = torch.empty(64 << 20, dtype=torch.uint8)

    def timed(model, seed):
        torch.manual_seed(seed)
        inputs = problem.get_inputs()
        flush.fill_(seed & 0xFF)
        t0 = time.perf_counter()
        with torch.no_grad():
            model(*inputs)
        return (time.perf_counter() - t0) * 1000.0

    for i in range(args.warmup):
        timed(ref, i)
        timed(cand, i)
    ref_ms, cand_ms = [], []
    for i in range(args.calls):
        ref_ms.append(timed(ref, 1000 + i))
        cand_ms.append(timed(cand, 1000 + i))
    for p in busy:
        p.kill()
    r, c = statistics.median(ref_ms), statistics.median(cand_ms)
    print(json.dumps({
        "problem": args.problem, "solution": args.solution, "threads": torch.get_num_threads(),
        "cpus": cpus, "busy_loops": args.busy, "calls": args.calls,
        "model_median_ms": round(r, 5), "modelnew_median_ms": round(c, 5), "speedup": round(r / c, 4),
        "torch": torch.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time every built-in problem's reference at its default (GPU) size, eager, TF32 and FP32 strict.

A check of the suite's contract (each TF32 baseline >= 1 ms on the GPU, so that launch overhead
does not dominate), not kbv's timing engine: CUDA events around each call on the current stream,
256 MiB written between calls to flush L2, median of --reps calls (or --budget seconds of them,
at least 5) after --warmup. Inputs are drawn on the GPU.
Usage: python3 bench/suite_times.py [--problems problems] [--json OUT.json] [--skip REGEX]
"""
import argparse, glob, importlib.util, json, os, re, statistics, sys, time

import torch


def load(path):
    spec = importlib.util.spec_from_file_location("kbv_problem", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def set_mode(mode):
    tf32 = mode == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


def time_model(model, inputs, warmup, reps, flush, budget_s):
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        t0 = time.monotonic()
        for i in range(reps):
            if i >= 5 and time.monotonic() - t0 > budget_s:  # slow FP32 calls: at least 5 samples
                break
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default="problems")
    ap.add_argument("--json")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of samples per mode, at least 5 samples")
    ap.add_argument("--skip", help="regex over 'levelN/NAME.py': problems not to time (measured by an earlier run)")
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = []
    files = sorted(glob.glob(os.path.join(args.problems, "level*", "*.py")))
    if args.skip:
        files = [f for f in files if not re.search(args.skip, os.path.relpath(f, args.problems))]
    t_all = time.time()
    for path in files:
        level = os.path.basename(os.path.dirname(path))
        row = {"level": level, "problem": os.path.basename(path)}
        try:
            mod = load(path)
            # Made on the GPU: torch.rand of a multi-GiB input on the host takes seconds; the values
            # do not matter for the time.
            with torch.device(dev):
                torch.manual_seed(42)
                init = mod.get_init_inputs()
                torch.manual_seed(42)
                model = mod.Model(*init).to(dev)
                torch.manual_seed(1)
                inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
            for mode in ("tf32", "fp32"):
                set_mode(mode)
                row[mode + "_ms"] = round(time_model(model, inputs, args.warmup, args.reps, flush, args.budget), 4)
            row["fp32_over_tf32"] = round(row["fp32_ms"] / row["tf32_ms"], 3)
            del model, inputs
        except Exception as e:  # a problem that does not run is a row with its error
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        torch.cuda.empty_cache()
        rows.append(row)
        print(f"{level}/{row['problem']:<48} tf32 {row.get('tf32_ms', '-'):>9} ms  fp32 {row.get('fp32_ms', '-'):>9} ms"
              + (f"  {row['error']}" if "error" in row else ""), flush=True)
        if args.json:  # after every problem: a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump({"summary": {"partial": True, "problems": len(rows)}, "rows": rows}, f, indent=1)
    below = [r for r in rows if r.get("tf32_ms", 1e9) < 1.0]
    summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d"), "problems": len(rows), "below_1ms": [r["problem"] for r in below],
               "errors": [r["problem"] for r in rows if "error" in r], "seconds": round(time.time() - t_all, 1)}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0 if not summary["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The runtime audit on partial replacements and fallbacks at several sizes (issue 29).

Evaluates each candidate of examples/level2/12_Gemm_Multiply_LeakyReLU/ named below on
problems/level2/12 at its CPU size and on the larger copies in tests/data/partial/, with
`kbv eval --device cpu --trials 1 --timing off`, and prints one Markdown row per (size, candidate):
verdict, the no_custom_compute finding's reason, the own calls' replayed share (compute.own_share,
scope), the own calls' part of the forward's CPU time (compute.forward_own_share) and the
ablation's changed output elements. Records are kept under --out.

--device cuda: the CUDA candidates (cuda_* twins of the CPU ones) at GPU sizes (problem L2/12 at
its full size, and copies of it with in_features 512 to 32768 written under --out); the `compute` columns
are then CUPTI's (the own kernels' part of the measured call's GPU time) and the replayed share is
CPU-only. --cache-dir: kbv's cache (scripts/gpu/device-verify.sh's `partial` stage builds the
candidates into it in parallel first).

Usage: bench/partial_audit.py [--kbv build/kbv] [--out build/partial-audit] [--candidates a,b]
       [--sizes S,M,L,XL] [--device cpu|cuda] [--cache-dir DIR]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = {
    "S": ("problems/level2/12_Gemm_Multiply_LeakyReLU.py", "16x256x256"),
    "M": ("tests/data/partial/12_Gemm_Multiply_LeakyReLU_b64_k4096_n1024.py", "64x4096x1024"),
    "L": ("tests/data/partial/12_Gemm_Multiply_LeakyReLU_b64_k16384_n1024.py", "64x16384x1024"),
    "XL": ("tests/data/partial/12_Gemm_Multiply_LeakyReLU_b64_k65536_n1024.py", "64x65536x1024"),
}
# GPU sizes (batch x in x out): the suite's problem is L; the GEMM grows with in_features (the
# module-level constant the GPU evaluates at), the epilogue does not.
GPU_PROBLEM = "problems/level2/12_Gemm_Multiply_LeakyReLU.py"
GPU_IN_FEATURES = {"S": 512, "M": 2048, "L": 8192, "XL": 32768}


def gpu_problem(size, out):
    """The problem at GPU size `size`: the suite's file for L, else a copy with in_features changed."""
    k = GPU_IN_FEATURES[size]
    if k == 8192:
        return ROOT / GPU_PROBLEM, f"4096x{k}x8192"
    text = (ROOT / GPU_PROBLEM).read_text()
    if "in_features = 8192\n" not in text:
        raise SystemExit(f"{GPU_PROBLEM}: no 'in_features = 8192' line to resize")
    path = out / "problems" / f"12_Gemm_Multiply_LeakyReLU_b4096_k{k}_n8192.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace("in_features = 8192\n", f"in_features = {k}\n", 1))
    return path, f"4096x{k}x8192"


CANDIDATES_CUDA = ["cuda_honest_torch_gemm", "cuda_inplace_epilogue", "cuda_dummy_epilogue", "cuda_zero_times_own",
                   "cuda_fnptr_wrapper", "cuda_own_slice", "cuda_token_kernel_wrapper"]
CANDIDATES = ["cpu_honest_torch_gemm", "cpu_dummy_epilogue", "cpu_zero_times_own", "cpu_fnptr_wrapper",
              "cpu_own_slice", "cpu_own_zeros", "cpu_canary_own"]


def row(size, shape, name, record, seconds):
    c = record.get("compute") or {}
    a = (record.get("audit") or {}).get("ablation") or {}
    reasons = [f["message"][:90] for f in record.get("findings", [])
               if f.get("rule") == "no_custom_compute" and f.get("severity") == "reject"]
    outs = a.get("outputs") or []
    reach = (f"{outs[0]['changed']}/{outs[0]['numel']}" if outs else
             ("raised" if "raised" in a else (a.get("reason", "-") if not a.get("ran") else "-")))
    share = c.get("own_share")
    fwd = c.get("forward_own_share")
    if c.get("method") == "cupti":  # the GPU: own kernels' share of the measured call's GPU time
        own = ", ".join(f"{k['name'][:40]} x{k['calls']}" for k in c.get("own", [])) or "no own kernel"
        return (f"| {size} {shape} | {name} | {record.get('verdict')} | "
                f"{'%.2f%%' % (100 * share) if share is not None else '-'} ({c.get('kernels', '-')} kernels; {own}) | "
                f"{c.get('device_ms', 0):.3f} | {reach} | {reasons[0] if reasons else ''} | {seconds:.0f} |")
    return (f"| {size} {shape} | {name} | {record.get('verdict')} | "
            f"{'%.1f%%' % (100 * share) if share is not None else '-'} ({c.get('scope', '-')}, {c.get('samples', '-')} samples) | "
            f"{'%.2f%%' % (100 * fwd) if fwd is not None else '-'} | {reach} | "
            f"{reasons[0] if reasons else ''} | {seconds:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kbv", default=str(ROOT / "build" / "kbv"))
    ap.add_argument("--out", default=str(ROOT / "build" / "partial-audit"))
    ap.add_argument("--candidates", default=None)
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    cuda = args.device == "cuda"
    args.candidates = args.candidates or ",".join(CANDIDATES_CUDA if cuda else CANDIDATES)
    args.sizes = args.sizes or ",".join(GPU_IN_FEATURES if cuda else SIZES)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if cuda:
        print("| size (batch x in x out) | candidate | verdict | own kernels' share of the GPU time (CUPTI) | "
              "GPU ms of the measured call | ablation: output elements changed | no_custom_compute | s |")
    else:
        print("| size (batch x in x out) | candidate | verdict | own share, replayed own calls (scope, samples) | "
              "own calls' part of the forward's CPU time | ablation: output elements changed | no_custom_compute | s |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        if cuda:
            problem, shape = gpu_problem(size, out)
        else:
            problem, shape = SIZES[size]
        for name in args.candidates.split(","):
            rec = out / f"{size}_{name}.json"
            t0 = time.time()
            cmd = [args.kbv, "eval", "--problem", str(ROOT / problem), "--solution",
                   str(ROOT / "examples/level2/12_Gemm_Multiply_LeakyReLU" / f"{name}.py"),
                   "--device", args.device, "--trials", "1", "--timing", "off", "--json", str(rec)]
            if args.cache_dir:
                cmd += ["--cache-dir", args.cache_dir]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0 or not rec.exists():
                print(f"| {size} {shape} | {name} | kbv failed ({p.returncode}): {p.stderr[-200:]!r} |||||||")
                continue
            print(row(size, shape, name, json.loads(rec.read_text()), time.time() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

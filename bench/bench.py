#!/usr/bin/env python3
"""Benchmarks of kbv's timing engine (bench/README.md). Each subcommand writes JSON under $OUT.

Runs on the GPU machine with the Python that has torch (only `protocol` and `overhead` import
torch, for KernelBench's own timing loop); everything else drives the kbv binary.
"""
import argparse
import itertools
import json
import re
import resource
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A/A problems: matmul shapes (square, matrix-vector, tall-skinny, batched, transposed),
# element-wise, softmax, norms, reductions, pooling, convolutions, scans, attention.
AA_PROBLEMS = [
    "1_Square_matrix_multiplication_", "105_Matrix_vector_multiplication", "103_Tall_skinny_matmul",
    "101_Batched_matmul", "104_Matmul_with_transposed_A", "19_ReLU", "26_GELU_", "106_Sigmoid", "23_Softmax",
    "111_LogSoftmax", "113_LayerNorm", "115_RMSNorm", "112_BatchNorm2d", "114_GroupNorm",
    "47_Sum_reduction_over_a_dimension", "117_Max_reduction_over_a_dimension", "120_MaxPool2d", "121_AvgPool3d",
    "123_Conv2d", "124_Conv1d", "127_Depthwise_conv2d", "130_Cumsum", "138_Scaled_dot_product_attention",
    "139_Causal_attention",
]

# The reference as its own candidate, in strict FP32 (the fp32 baseline's settings): A/A.
WRAPPER = '''
# --- kbv bench: the reference submitted as its own candidate (A/A), strict FP32 ---
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


class ModelNew(Model):
    pass
'''


# How the reference-as-candidate is evaluated: it has no kernel of its own, so kbv's runtime audit
# rejects it (no_custom_compute) and its static lint flags it; upstream's protocol has neither and
# times it with the same engine.
REFERENCE_AS_CANDIDATE = ["--policy", "lenient", "--protocol", "kernelbench"]


def out_dir():
    d = Path(os.environ.get("OUT") or ROOT / "build" / "bench-out")
    d.mkdir(parents=True, exist_ok=True)
    return d


def kbv_binary(args):
    if args.kbv:
        return args.kbv
    for b in (ROOT / "build-gpu" / "kbv", ROOT / "build" / "kbv"):
        if b.exists():
            return str(b)
    sys.exit("bench: no kbv binary (build first, or pass --kbv)")


def run(cmd, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], env=env, text=True, capture_output=True)
    if p.returncode not in (0, 1):
        print(p.stdout[-4000:], p.stderr[-4000:], file=sys.stderr)
        sys.exit(f"bench: {cmd[0]} exited {p.returncode}")
    return p, time.monotonic() - t0


def problem_path(name, problems):
    for level in sorted(Path(problems).glob("level*")):
        f = level / (name + ".py")
        if f.exists():
            return f
    sys.exit(f"bench: no problem {name} under {problems}")


def common_flags(args, cache_dir=None):
    flags = ["--device", args.device, "--cache-dir", cache_dir or args.cache_dir]
    if args.time_cap:
        flags += ["--time-cap", str(args.time_cap)]
    if args.launch_hold_us is not None:
        flags += ["--launch-hold-us", str(args.launch_hold_us)]
    if args.rse:
        flags += ["--rse", str(args.rse)]
    if args.timing_pairs is not None:
        flags += ["--timing-pairs", str(args.timing_pairs)]
    return flags


def eval_json(args, problem, solution, extra, name, cache_dir=None, env=None):
    path = out_dir() / "records" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    p, wall = run([kbv_binary(args), "eval", "--problem", problem, "--solution", solution, "--json", path,
                   *common_flags(args, cache_dir), *extra], env)
    rec = json.loads(path.read_text())
    return rec, wall


def write(name, result):
    path = out_dir() / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result.get("summary", result), indent=2))
    print(f"bench: wrote {path}", file=sys.stderr)


# ---- 1. A/A ---------------------------------------------------------------------------------
def aa(args):
    names = args.problems_list.split(",") if args.problems_list else AA_PROBLEMS
    work = out_dir() / "aa"
    data, run_dir = work / "problems", work / "run"
    for d in (data / "level1", run_dir):
        d.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names, start=1):
        src = problem_path(name, args.problems).read_text()
        pid = 1000 + i  # own numbering: the copy keeps its name after the id
        (data / "level1" / f"{pid}_{name}.py").write_text(src)
        for s in range(args.repeats):
            (run_dir / f"level_1_problem_{pid}_sample_{s}_kernel.py").write_text(src + WRAPPER)
    wall = 0.0
    if not args.collect:
        # Only the FP32 baseline: the A/A candidate runs in strict FP32 and is compared with it.
        _, wall = run([kbv_binary(args), "eval", "--problems", data, "--run", run_dir, "--level", "1",
                       *REFERENCE_AS_CANDIDATE, "--trials", "1", "--baselines", "fp32", *common_flags(args)])
    rows = aa_rows(work)
    write("aa", {"summary": aa_summary(rows, args.repeats, wall), "rows": rows})


def aa_rows(work):
    """One row per problem of the A/A run folder under `work`, from the records its store holds
    (all of them, or those a cut-off run stored)."""
    names = {int(f.name.split("_", 1)[0]): f.stem.split("_", 1)[1] for f in (work / "problems" / "level1").glob("*.py")}
    con = sqlite3.connect(work / "run" / "kbv.sqlite")
    records = [json.loads(r[0]) for r in con.execute("SELECT record FROM results")]
    con.close()
    per = {}
    for r in records:
        per.setdefault(r["problem_id"], []).append(r)
    rows = []
    for pid, recs in sorted(per.items()):
        name = names.get(pid, str(pid))
        timed = [r for r in recs if r.get("timing", {}).get("candidate")]
        if len(timed) < 2:
            rows.append({"problem": name, "error": [r.get("message") for r in recs]})
            continue
        med = [r["timing"]["candidate"]["median_ms"] for r in timed]
        sp = [r["timing"]["speedup"].get("fp32") for r in timed]
        # the paired interval of each record (issue 28): [low, high] of the fp32 speedup, its width
        ci = [r["timing"].get("speedup_ci95", {}).get("fp32") for r in timed]
        pair = max(abs(a / b - 1) for a, b in itertools.permutations(med, 2))
        rows.append({"problem": name, "median_ms": med, "speedup_fp32": sp,
                     "worst_abs_speedup_minus_1": max(abs(x - 1) for x in sp if x),
                     "worst_pairwise": pair,
                     "speedup_ci95_fp32": ci, "pairs": [r["timing"].get("pairs") for r in timed],
                     "ci95_width": [c[1] - c[0] if c else None for c in ci],
                     "ci95_contains_1": [bool(c) and c[0] <= 1 <= c[1] for c in ci],
                     "warnings": [[f.get("rule") for f in r.get("findings", []) if f.get("severity") == "warn"]
                                  for r in timed],
                     "rse": [r["timing"]["candidate"]["rse"] for r in timed],
                     "discarded": [r["timing"]["candidate"]["discarded"] for r in timed],
                     "samples": [r["timing"]["candidate"]["samples"] for r in timed],
                     "timing_wall_s": [r["timing"].get("wall_check", {}).get("supervisor_ms", 0) / 1000 for r in timed],
                     "events_host_disagreed": [r["timing"].get("events_host_disagreed", 0) for r in timed],
                     # the host's launch and the samples it outlasted the launch hold in (docs/TIMING.md)
                     "host_call_ms": [r["timing"]["candidate"].get("host_call_ms") for r in timed],
                     "launch_hold_late": [r["timing"].get("launch_hold", {}).get("late") for r in timed],
                     # the SM clock around the samples (NVML): expected, lowest, highest, reason bits
                     "clock": [{k: r["timing"].get("clock", {}).get(k) for k in
                                ("expected_sm_mhz", "sm_mhz_min", "sm_mhz_max", "reasons_seen", "throttled_kept")}
                               for r in timed]})
    return rows


def aa_summary(rows, repeats, wall):
    ok = [r for r in rows if "worst_pairwise" in r]
    summary = {"problems": len(rows), "timed": len(ok), "repeats": repeats, "wall_s": wall}
    if ok:
        pw = [r["worst_pairwise"] for r in ok]
        sv = [r["worst_abs_speedup_minus_1"] for r in ok]
        worst = max(ok, key=lambda r: r["worst_pairwise"])
        summary.update({"median_worst_pairwise": statistics.median(pw), "worst_pairwise": max(pw),
                        "worst_problem": worst["problem"], "median_worst_speedup_vs_fp32": statistics.median(sv),
                        "worst_speedup_vs_fp32": max(sv), "target": "median <= 0.003, worst <= 0.01"})
        widths = [w for r in ok for w in r.get("ci95_width", []) if w is not None]
        inside = [c for r in ok for c in r.get("ci95_contains_1", [])]
        if widths:  # identical kernels: every paired interval should hold 1, and be narrow
            summary.update({"ci95_width_median": statistics.median(widths), "ci95_width_max": max(widths),
                            "ci95_records": len(widths), "ci95_contain_1": sum(inside)})
    return summary


# A/A over more problems than one device call allows: `aa --problems-list` in parts, each writing
# aa.json, then `aa_merge --inputs part1/aa.json,part2/aa.json` for the summary over all rows.
def aa_merge(args):
    rows, repeats, wall = [], None, 0.0
    for path in args.inputs.split(","):
        part = json.loads(Path(path).read_text())
        rows += part["rows"]
        repeats = part["summary"].get("repeats", repeats)
        wall += part["summary"].get("wall_s", 0.0)
    write("aa", {"summary": aa_summary(rows, repeats, wall), "rows": rows, "merged_from": args.inputs.split(",")})


# The A/A candidate and its FP32 baseline run the same code in two workers: on the first H200 run
# (docs/TIMING.md) the candidate's median came out 1-7% above the baseline's on memory-bound
# problems (GELU, matrix-vector) and within 0.5% on the matmuls. aa_diag looks for the cause: each
# variant evaluates the reference as its own candidate with a cache of its own (the baseline timed
# in the same evaluation) and reports candidate / baseline per evaluation.
DIAG_PROBLEMS = ["26_GELU_", "105_Matrix_vector_multiplication", "1_Square_matrix_multiplication_"]
DIAG_VARIANTS = {
    "default": ([], {}),
    "no_cupti": ([], {"KBV_NO_CUPTI": "1"}),           # no CUPTI in either worker (memory, kernel audit)
    "input_sets": (["--timing-inputs", "sets"], {}),     # no fresh draw served between the samples
    # torch's allocator maps 2 MiB pieces in both workers: no level from where a large block lands
    "expandable": ([], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    # no launch hold (by default the GPU is held 500 us before each start event, so the call's
    # launch is queued when the interval begins): the host's launch latency inside the interval
    "no_hold": (["--launch-hold-us", "0"], {}),
    # the hold before it was 500 us, and longer holds, for calls whose launch outlasts it
    "hold_200": (["--launch-hold-us", "200"], {}),
    "hold_500": (["--launch-hold-us", "500"], {}),
    "hold_1000": (["--launch-hold-us", "1000"], {}),
}


def aa_diag(args):
    names = args.problems_list.split(",") if args.problems_list else DIAG_PROBLEMS
    variants = args.variants.split(",") if args.variants else list(DIAG_VARIANTS)
    unknown = [v for v in variants if v not in DIAG_VARIANTS]
    if unknown:
        sys.exit(f"bench: unknown aa_diag variant(s) {', '.join(unknown)} (known: {', '.join(DIAG_VARIANTS)})")
    rows = []
    for name in names:
        prob = problem_path(name, args.problems)
        sol = out_dir() / "aa_diag" / f"{name}.py"
        sol.parent.mkdir(parents=True, exist_ok=True)
        sol.write_text(prob.read_text() + WRAPPER)
        for variant in variants:
            flags, env = DIAG_VARIANTS[variant]
            for i in range(2):
                r, wall = eval_json(args, str(prob), str(sol),
                                    [*REFERENCE_AS_CANDIDATE, "--trials", "1", "--baselines", "fp32", *flags],
                                    f"aa_diag-{variant}-{name}-{i}",
                                    cache_dir=str(out_dir() / "aa_diag" / f"cache-{variant}-{name}-{i}"), env=env)
                t = r.get("timing", {})
                cand, base = t.get("candidate", {}), t.get("baselines", {}).get("fp32", {})
                c, b = cand.get("median_ms"), base.get("median_ms")
                row = {"problem": name, "variant": variant, "run": i, "candidate_ms": c, "baseline_ms": b,
                       "candidate_over_baseline": c / b if c and b else None}
                for key in ("iqr_ms", "min_ms", "host_call_ms"):
                    row[f"candidate_{key}"], row[f"baseline_{key}"] = cand.get(key), base.get(key)
                row.update({"launch_hold": t.get("launch_hold"), "clock": t.get("clock"),
                            "phase_seconds": r.get("phase_seconds"), "wall_s": wall})
                rows.append(row)
                print(f"aa_diag: {name} {variant} {i}: candidate/baseline {rows[-1]['candidate_over_baseline']}",
                      file=sys.stderr, flush=True)
    summary = {}
    for variant in variants:
        r = [x["candidate_over_baseline"] for x in rows if x["variant"] == variant and x["candidate_over_baseline"]]
        summary[variant] = {"median_ratio": statistics.median(r) if r else None, "min_ratio": min(r, default=None),
                            "max_ratio": max(r, default=None)}
    write("aa_diag", {"summary": summary, "rows": rows})


# ---- 2. Repeatability -----------------------------------------------------------------------
def repeat(args):
    sp, recs = [], []
    for i in range(3):
        r, wall = eval_json(args, str(ROOT / args.problem), str(ROOT / args.solution), [], f"repeat-{i}")
        t = r.get("timing", {})
        sp.append(t.get("speedup", {}).get("tf32"))
        recs.append({"verdict": r["verdict"], "median_ms": t.get("candidate", {}).get("median_ms"),
                     "speedup": t.get("speedup"), "wall_s": wall})
    good = [x for x in sp if x]
    spread = (max(good) - min(good)) / statistics.mean(good) if len(good) == 3 else None
    write("repeat", {"summary": {"solution": args.solution, "speedups_tf32": sp, "spread": spread,
                                 "target": "<= 0.01"}, "runs": recs})


# ---- 3. Overhead ----------------------------------------------------------------------------
def bare_events(problem, trials=101, warmup=3):
    """KernelBench's way: CUDA events on the current stream around each call, no flush."""
    import importlib.util
    import torch
    spec = importlib.util.spec_from_file_location("bench_problem", problem)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(42)
    model = mod.Model(*mod.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    times = []
    t0 = time.monotonic()
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(trials):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            model(*inputs)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
    wall = time.monotonic() - t0
    return {"median_ms": statistics.median(times), "mean_ms": statistics.mean(times), "min_ms": min(times),
            "trials": trials, "wall_s": wall}


def overhead(args):
    problem = ROOT / "bench/problems/level1/1_Near_empty_add.py"
    sol = out_dir() / "overhead_candidate.py"
    sol.write_text(problem.read_text() + WRAPPER)
    r, _ = eval_json(args, str(problem), str(sol), REFERENCE_AS_CANDIDATE, "overhead")
    t = r.get("timing", {})
    write("overhead", {"summary": {"kbv_median_ms": t.get("candidate", {}).get("median_ms"),
                                   "kbv_overhead_ms": t.get("candidate", {}).get("overhead_ms"),
                                   "kbv_sync_overhead_ms": t.get("sync_overhead_ms"),
                                   "bare_events": bare_events(str(problem))},
                       "record_timing": t})


# ---- 4. Side stream -------------------------------------------------------------------------
def side_stream(args):
    prob = str(ROOT / "problems/level1/19_ReLU.py")
    honest, _ = eval_json(args, prob, str(ROOT / "examples/level1/19_ReLU/cuda_honest.py"), [], "side-honest")
    side, _ = eval_json(args, prob, str(ROOT / "examples/level1/19_ReLU/cuda_side_stream.py"), ["--policy", "lenient"],
                        "side-stream")
    h = honest.get("timing", {}).get("candidate", {}).get("median_ms")
    s = side.get("timing", {}).get("candidate", {}).get("median_ms")
    write("side_stream", {"summary": {"honest_median_ms": h, "side_stream_median_ms": s,
                                      "ratio": s / h if h and s else None, "target": ">= 0.95",
                                      "events_host_disagreed": side.get("timing", {}).get("events_host_disagreed"),
                                      "side_verdict": side.get("verdict")}})


# ---- 5. Timing-phase wall time against KernelBench's protocol --------------------------------
def protocol(args):
    """kbv's candidate timing request against KernelBench's loop, per problem. With --from-aa the
    kbv side is taken from an A/A run's records (the same evaluation: the reference as candidate,
    --trials 1, timing on), the median over its evaluations; otherwise each problem is evaluated."""
    from_aa = {}
    if args.from_aa:
        from_aa = {r["problem"]: r for r in json.loads(Path(args.from_aa).read_text())["rows"] if "timing_wall_s" in r}
        names = list(from_aa)
    else:
        names = args.problems_list.split(",") if args.problems_list else AA_PROBLEMS
    rows = []
    for name in names:
        prob = problem_path(name, args.problems)
        if name in from_aa:
            a = from_aa[name]
            kbv_s, samples = statistics.median(a["timing_wall_s"]), statistics.median(a["samples"])
            kbv_ms = statistics.median(a["median_ms"])
        else:
            sol = out_dir() / "protocol" / f"{name}.py"
            sol.parent.mkdir(parents=True, exist_ok=True)
            sol.write_text(prob.read_text() + WRAPPER)
            r, _ = eval_json(args, str(prob), str(sol), [*REFERENCE_AS_CANDIDATE, "--trials", "1", "--timing", "on"],
                             f"protocol-{name}")
            t = r.get("timing", {})
            kbv_s = t.get("wall_check", {}).get("supervisor_ms", 0) / 1000
            samples, kbv_ms = t.get("candidate", {}).get("samples"), t.get("candidate", {}).get("median_ms")
        kb = bare_events(str(prob))
        rows.append({"problem": name, "kbv_candidate_timing_s": kbv_s, "kbv_samples": samples, "kbv_median_ms": kbv_ms,
                     "kernelbench_wall_s": kb["wall_s"], "kernelbench_median_ms": kb["median_ms"]})
        print(f"protocol: {name}: kbv {kbv_s:.2f} s, KernelBench {kb['wall_s']:.2f} s", file=sys.stderr, flush=True)
    k = [r["kbv_candidate_timing_s"] for r in rows]
    b = [r["kernelbench_wall_s"] for r in rows]
    write("protocol", {"summary": {"problems": len(rows), "kbv_total_s": sum(k), "kernelbench_total_s": sum(b),
                                   "kbv_median_s": statistics.median(k), "kernelbench_median_s": statistics.median(b),
                                   "kbv_from": args.from_aa or "own evaluations"},
                       "rows": rows})


# ---- 6. TF32 / FP32 baseline ratio ------------------------------------------------------------
def tf32_problem(path):
    """The problems a TF32 switch can change: every level-2 and level-3 problem (GEMM and
    convolution chains, networks) and the level-1 matmuls, convolutions and attention."""
    n = path.name.lower()
    return path.parent.name != "level1" or any(k in n for k in ("matmul", "matrix", "conv", "attention"))


def tf32(args):
    kbv = kbv_binary(args)
    # A dataset of copies of those problems only: the cache keys baselines by content, not by path.
    data = out_dir() / "tf32" / "problems"
    for f in sorted(Path(args.problems).glob("level*/*.py")):
        if tf32_problem(f):
            (data / f.parent.name).mkdir(parents=True, exist_ok=True)
            (data / f.parent.name / f.name).write_text(f.read_text())
    flags = ["--problems", data, *common_flags(args)]
    _, wall = run([kbv, "baseline", *flags, "--baselines", "tf32,fp32"])
    files = {}
    for mode in ("tf32", "fp32"):
        f = out_dir() / f"baselines-{mode}.json"
        run([kbv, "baseline", *flags, "--export", f, "--mode", mode])
        files[mode] = json.loads(f.read_text())
    rows = []
    for level, probs in files["fp32"].items():
        for name, e in probs.items():
            t = files["tf32"].get(level, {}).get(name)
            if t and t.get("median") and e.get("median"):
                rows.append({"level": level, "problem": name, "fp32_ms": e["median"], "tf32_ms": t["median"],
                             "fp32_over_tf32": e["median"] / t["median"]})
    ratios = [r["fp32_over_tf32"] for r in rows]
    write("tf32", {"summary": {"problems": len(rows), "median_ratio": statistics.median(ratios) if ratios else None,
                               "min_ratio": min(ratios, default=None), "max_ratio": max(ratios, default=None),
                               "baseline_wall_s": wall},
                   "rows": rows})


# ---- kbv serve: the API's added latency ----------------------------------------------------
def serve(args):
    """The API's added latency over a direct `kbv eval` of the same cached pair (issue 26: <= 100 ms).
    One `kbv serve` (SQLite queue, one worker) and direct `kbv eval`s share one cache, so the build
    is cached for both. Each repeat evaluates the pair once directly and once through the API with a
    new --seed (a new job: not answered from the store). Overhead = wall - the record's `seconds`
    (the evaluation itself: lint to verdict); added latency = API overhead - direct overhead. Then
    the same pair again through the API: answered from the store (submit + one status call)."""
    problem = Path(args.problem)
    solution = Path(args.solution)
    name = f"{problem.parent.name}/{problem.stem}"
    source = solution.read_text()
    tmp = Path(tempfile.mkdtemp(prefix="kbv-bench-serve-"))
    proc, client = start_serve(args, tmp, problem.parent.parent, ["--workers", "1", "--cache-dir", args.cache_dir])
    try:
        flags = ["--trials", str(args.trials)]
        opts = {"trials": args.trials}
        # Warm-up: the build (cached for both paths), the baselines and the server's reference worker.
        client.evaluate(name, source, seed=1, **opts)
        eval_json(args, problem, solution, flags + ["--seed", "1"], "serve-direct-warm")
        rows = []
        for i in range(args.repeats):
            seed = 1000 + i
            direct, direct_wall = eval_json(args, problem, solution, flags + ["--seed", str(seed)], f"serve-direct-{i}")
            t0 = time.monotonic()
            api = client.evaluate(name, source, seed=seed, **opts)
            api_wall = time.monotonic() - t0
            rows.append({"seed": seed, "direct_wall_s": direct_wall, "direct_seconds": direct["seconds"],
                         "direct_verdict": direct["verdict"], "api_wall_s": api_wall, "api_seconds": api["seconds"],
                         "api_verdict": api["verdict"],
                         "direct_overhead_ms": 1e3 * (direct_wall - direct["seconds"]),
                         "api_overhead_ms": 1e3 * (api_wall - api["seconds"])})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        store = []
        for _ in range(20):
            t0 = time.monotonic()
            st = client.status(client.submit(name, source, seed=1000, **opts))
            store.append(1e3 * (time.monotonic() - t0))
            assert st["status"] == "done", st
        med = statistics.median
        summary = {
            "pair": [str(problem), str(solution)], "device": args.device, "trials": args.trials,
            "repeats": args.repeats, "load_average": os.getloadavg()[0], "cpus": os.cpu_count(),
            "direct_wall_s_median": med(r["direct_wall_s"] for r in rows),
            "api_wall_s_median": med(r["api_wall_s"] for r in rows),
            "direct_overhead_ms_median": med(r["direct_overhead_ms"] for r in rows),
            "api_overhead_ms_median": med(r["api_overhead_ms"] for r in rows),
            "api_overhead_ms_max": max(r["api_overhead_ms"] for r in rows),
            "added_latency_ms_median": med(r["api_overhead_ms"] - r["direct_overhead_ms"] for r in rows),
            "wall_difference_s_median": med(r["api_wall_s"] - r["direct_wall_s"] for r in rows),
            "store_hit_ms_median": med(store), "store_hit_ms_max": max(store),
        }
        write("serve", {"summary": summary, "rows": rows, "store_hit_ms": store})
    finally:
        stop(proc)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_serve(args, tmp, problems, extra):
    """`kbv serve` on a free loopback port with a fresh SQLite queue in `tmp` and a token; the process
    and a kbv_client.Client on it."""
    sys.path.insert(0, str(ROOT / "python" / "kbv_client"))
    from kbv_client import Client

    token = os.urandom(24).hex()
    (tmp / "token").write_text(token + "\n")
    os.chmod(tmp / "token", 0o600)
    err = open(tmp / "serve.err", "w+")
    proc = subprocess.Popen([kbv_binary(args), "serve", "--listen", "127.0.0.1:0", "--queue", f"sqlite:{tmp}/q.db",
                             "--problems", str(problems), "--token-file", str(tmp / "token"),
                             "--device", args.device, *extra], stderr=err, stdout=subprocess.DEVNULL)
    for _ in range(1200):
        err.seek(0)
        m = re.search(r"listening on (http://[0-9.:]+)", err.read())
        if m:
            return proc, Client(m.group(1), token, poll_wait=30)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    err.seek(0)
    stop(proc)
    sys.exit("bench: kbv serve did not start: " + err.read())
def ninja_phases(ext_dir):
    """Compile and link seconds of a load_inline build, from torch's .ninja_log in its folder."""
    out = {"compile_s": 0.0, "link_s": 0.0}
    for log in Path(ext_dir).glob("*/.ninja_log"):
        for line in log.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) < 4 or line.startswith("#"):
                continue
            secs = (int(parts[1]) - int(parts[0])) / 1000
            out["link_s" if parts[3].endswith(".so") else "compile_s"] += secs
    return out


def build(args):
    """Old path (--fast-build off: load_inline as it compiles alone) against the new one (on) over
    the same fresh sources, interleaved, in one run: `kbv build` into an empty cache per run, so
    each source is a fresh build (the precompiled headers of the new path are made by the first
    build that needs them, which pays for it once: it shows in max)."""
    manifest = json.loads((ROOT / "examples" / "manifest.json").read_text())
    seen, sources = set(), []
    for e in manifest:
        s = e["solution"]
        if e.get("device", "cpu") != args.device or s in seen or e.get("lint") or e["expected"] == "compile_error":
            continue
        if "load_inline" not in (ROOT / s).read_text():
            continue
        seen.add(s)
        sources.append(s)
    if args.limit:
        step = max(1, len(sources) // args.limit)
        sources = sources[::step][: args.limit]
    cache = Path(args.cache_dir) / f"build-bench-{os.getpid()}"
    if cache.exists():
        sys.exit(f"bench: {cache} exists")
    rows = []
    warm = None
    if args.warm_pch and len(sources) > 1:
        # Sources built first, not counted, until the new path's precompiled header exists: it is
        # made once per toolchain and flag set (after a few builds asked for it, compile/pch.h), like
        # the toolchain itself; its cost is reported apart.
        warm = {"solutions": [], "wall_s": 0.0}
        while len(sources) > 1 and not list(cache.glob("pch/*/" + "[0-9a-f]" * 64 + "/torch/extension.h.gch")):
            w = sources.pop(0)
            p, wall = run([kbv_binary(args), "build", "--solution", ROOT / w, "--device", args.device,
                           "--cache-dir", cache, "--fast-build", "on"])
            warm["solutions"].append(w)
            warm["wall_s"] += wall
    for i, s in enumerate(sources):
        order = ["off", "on"] if i % 2 == 0 else ["on", "off"]
        row = {"solution": s}
        for mode in order:
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p, wall = run([kbv_binary(args), "build", "--solution", ROOT / s, "--device", args.device,
                           "--cache-dir", cache, "--fast-build", mode])
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            m = re.search(r"built( \(cached\))? in ([0-9.]+) s", p.stderr)
            if p.returncode != 0 or not m:
                sys.exit(f"bench: kbv build {s} --fast-build {mode}: {p.stderr[-2000:]}")
            entry = {"build_s": float(m.group(2)), "cached": bool(m.group(1)), "command_wall_s": wall,
                     "command_cpu_s": (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)}
            row[mode] = entry
            print(f"[{i + 1}/{len(sources)}] {s} --fast-build {mode}: {entry['build_s']:.1f} s "
                  f"(CPU {entry['command_cpu_s']:.1f} s)", file=sys.stderr, flush=True)
        rows.append(row)
    # Per phase: torch's ninja log in each build folder (compile, link); the rest is the build
    # worker's start, Python and torch's import and load_inline's own work.
    by_dir = {}
    for d in (cache / "build").iterdir():
        names = [x.name for x in (d / "ext").iterdir() if x.is_dir()] if (d / "ext").exists() else []
        by_dir[d.name] = (names, ninja_phases(d / "ext"))
    for row in rows:
        # The source's extension names; its two entries (one per mode) differ by the compiler in
        # build.ninja (the fast build's wrapper, kbv-cxx).
        stems = set(re.findall(r'name\s*=\s*"([^"]+)"', (ROOT / row["solution"]).read_text()))
        for key, (names, ph) in by_dir.items():
            if not any(n in stems or n.split("_v")[0] in stems for n in names):
                continue
            ninja = [d / "build.ninja" for d in (cache / "build" / key / "ext").iterdir() if (d / "build.ninja").exists()]
            fast = any("kbv-cxx" in n.read_text() for n in ninja)
            row["on" if fast else "off"].update(ph)
    def stats(mode, field):
        xs = sorted(r[mode][field] for r in rows if field in r[mode])
        if not xs:
            return None
        return {"median": statistics.median(xs), "p90": xs[min(len(xs) - 1, int(0.9 * len(xs)))], "max": xs[-1],
                "n": len(xs)}
    summary = {"device": args.device, "sources": len(rows), "nproc": os.cpu_count(), "loadavg_end": os.getloadavg(),
               "warm_up": warm}
    for mode in ("off", "on"):
        summary[mode] = {f: stats(mode, f) for f in ("build_s", "command_cpu_s", "compile_s", "link_s")}
    if summary["off"]["build_s"] and summary["on"]["build_s"]:
        summary["median_ratio_on_over_off"] = summary["on"]["build_s"]["median"] / summary["off"]["build_s"]["median"]
        summary["cpu_median_ratio_on_over_off"] = (summary["on"]["command_cpu_s"]["median"] /
                                                   summary["off"]["command_cpu_s"]["median"])
    write("build", {"summary": summary, "rows": rows})
    if not args.keep_cache:
        import shutil
        shutil.rmtree(cache, ignore_errors=True)


# ---- warm workers (issue 26) -----------------------------------------------------------------
def warm_runs(args, device="cpu"):
    """The built-in problems' example solutions of `device` that kbv gets correct (strict policy,
    fp32), by (level, problem id): `warm` makes each problem's solutions its samples, `--samples`
    copies of each."""
    manifest = json.loads((ROOT / "examples" / "manifest.json").read_text())
    picked = {}
    for e in manifest:
        if (e.get("device") != device or e.get("expected") != "correct" or e.get("policy", "strict") != "strict"
                or e.get("precision") or e.get("pending")):
            continue
        problem = Path(e["problem"])
        key = (int(problem.parent.name.replace("level", "")), int(problem.stem.split("_")[0]))
        sols = picked.setdefault(key, [])
        if e["solution"] not in sols:
            sols.append(e["solution"])
    if args.problems_list:
        names = set(args.problems_list.split(","))
        picked = {k: v for k, v in picked.items() if any(Path(sol).parent.name in names for sol in v)}
    if args.limit:
        picked = dict(sorted(picked.items())[:args.limit])
    return picked


def warm_fill(run_dir, picked, copies):
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for (level, pid), sols in picked.items():
        for i, sol in enumerate(sols * copies):
            shutil.copy(ROOT / sol, run_dir / f"level_{level}_problem_{pid}_sample_{i}_kernel.py")


def warm(args):
    """Median `load` phase per sample with and without --warm-workers (CPU, --timing off: the load is
    what changes), passes alternating, every build cached by a first pass."""
    picked = warm_runs(args)
    root = out_dir() / "warm"
    counts = [int(n) for n in (args.warm_list or "0,1").split(",")]
    base = [kbv_binary(args), "eval", "--problems", args.problems, "--device", "cpu", "--trials", "1",
            "--timing", "off", "--cache-dir", args.cache_dir]
    prime = root / "prime"
    warm_fill(prime, picked, 1)
    run(base + ["--run", prime, "--warm-workers", "0"])
    rows, walls = [], {n: [] for n in counts}
    for r in range(args.repeats):
        for n in (counts if r % 2 == 0 else counts[::-1]):
            d = root / f"r{r}-w{n}"
            warm_fill(d, picked, args.samples)
            load_before = os.getloadavg()[0]
            _, wall = run(base + ["--run", d, "--warm-workers", str(n)])
            walls[n].append(wall)
            db = sqlite3.connect(d / "kbv.sqlite")
            for (text,) in db.execute("SELECT record FROM results"):
                rec = json.loads(text)
                phases = rec.get("phase_seconds") or {}
                if "load" not in phases:
                    continue
                rows.append({"repeat": r, "warm_workers": n, "level": rec.get("level"),
                             "problem_id": rec.get("problem_id"), "sample_id": rec.get("sample_id"),
                             "load": phases["load"], "seconds": rec.get("seconds"),
                             "warm_worker": rec.get("warm_worker"), "verdict": rec.get("verdict"),
                             "load_average": load_before})
            db.close()

    def med(xs):
        return round(statistics.median(xs), 3) if xs else None

    summary = {"device": "cpu", "date": time.strftime("%Y-%m-%d"), "problems": len(picked),
               "samples_per_problem_copies": args.samples, "repeats": args.repeats, "cores": os.cpu_count()}
    for n in counts:
        mine = [x for x in rows if x["warm_workers"] == n]
        later = [x for x in mine if x["sample_id"] > 0]  # the reference already loaded: the candidate's own load
        summary[f"warm_workers_{n}"] = {
            "samples": len(mine),
            "median_load_s": med([x["load"] for x in mine]),
            "median_load_s_later_samples": med([x["load"] for x in later]),
            "median_load_s_warm_hits": med([x["load"] for x in mine if x["warm_worker"]]),
            "warm_hits": sum(1 for x in mine if x["warm_worker"]),
            "median_seconds": med([x["seconds"] for x in mine if x["seconds"] is not None]),
            "median_run_wall_s": med(walls[n]),
            "verdicts": sorted({x["verdict"] for x in mine}),
        }
    write("warm", {"summary": summary, "rows": rows, "walls": walls})



# ---- throughput of kbv serve (issue 26) ------------------------------------------------------
def tagged(solution, tag):
    """The solution's text with a comment naming `tag`: kbv's build key is the solution's text, so
    the tag makes a fresh build of the same code."""
    return (ROOT / solution).read_text() + f"\n# kbv bench throughput: {tag}\n"


def phase_sums(metrics_text):
    """{phase: (sum, count)} of kbv_phase_seconds in a /metrics text, and of the builders' build
    stages (kbv serve --build-jobs) as phase "build_ahead"."""
    out = {}
    for m in re.finditer(r'^kbv_(phase|build_stage)_seconds_(sum|count)(?:\{phase="([^"]+)"\})? (\S+)$', metrics_text,
                         re.M):
        name = m.group(3) if m.group(1) == "phase" else "build_ahead"
        s, c = out.get(name, (0.0, 0))
        out[name] = (s + float(m.group(4)), c) if m.group(2) == "sum" else (s, c + int(float(m.group(4))))
    return out


def throughput_pass(client, pairs, options, label):
    """Submits `pairs` [(problem, source)] as one batch and waits for every record: the pass's wall,
    candidates per hour, verdicts, the records' median seconds, build seconds and cache hits, and the
    per-phase mean seconds from /metrics (the server's own workers only; None when it has none)."""
    before = phase_sums(client.metrics())
    t0 = time.monotonic()
    records = client.evaluate_many(pairs, timeout=7200, max_workers=32, **options)
    wall = time.monotonic() - t0
    after = phase_sums(client.metrics())
    phases = {}
    for name, (s, c) in after.items():
        s0, c0 = before.get(name, (0.0, 0))
        if c > c0:
            phases[name] = round((s - s0) / (c - c0), 3)
    verdicts = {}
    for r in records:
        v = r.get("verdict", "failed:" + str(r.get("error", ""))[:60])
        verdicts[v] = verdicts.get(v, 0) + 1
    builds = [r["build"] for r in records if isinstance(r.get("build"), dict)]

    def med(xs):
        return round(statistics.median(xs), 3) if xs else None

    row = {"pass": label, "candidates": len(pairs), "wall_s": round(wall, 2),
           "candidates_per_hour": round(3600 * len(pairs) / wall, 1), "verdicts": verdicts,
           "median_record_seconds": med([r["seconds"] for r in records if "seconds" in r]),
           "median_build_seconds": med([b.get("seconds", 0) for b in builds]),
           "build_cache_hits": sum(1 for b in builds if b.get("cached")),
           "phase_mean_s_metrics": phases or None,
           "phase_mean_s_records": {k: med([r["phase_seconds"][k] for r in records
                                            if k in (r.get("phase_seconds") or {})])
                                    for k in sorted({k for r in records for k in (r.get("phase_seconds") or {})})},
           "load_average_end": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def copy_or_link(src, dst):
    """A file of a cache copy: hard-linked when large (precompiled headers, built extensions: written
    once, never changed in place), copied otherwise (databases a worker writes stay its own)."""
    if os.path.getsize(src) > (8 << 20) and not src.endswith((".db", ".sqlite", "-wal", "-shm")):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def throughput(args):
    """Candidates per hour through `kbv serve` (issue 26), on the correct example solutions of
    `--device` (`--limit` problems, each solution `--samples` times; kbv eval's default options unless
    `--options` names some). Part 1, one host: `kbv serve --workers W` (`--gpus 0` on cuda), one
    cache: a warm-up pass (one candidate per problem: the baselines and reference workers, not
    counted), then (unless `--build-jobs-list none`) for each `--build-jobs-list` value (default 0)
    a new server with that `--build-jobs`, a pass of fresh candidates (each solution with a new
    comment: a new build key, so a full build) and a pass of the same sources with a new seed
    (builds cached); per pass the wall, candidates per hour and per-phase mean seconds from
    /metrics. Part 2, scaling
    (`--workers-list`, default 1,2,4): `kbv serve --workers 0` and K `kbv worker` processes, each
    with its own cache (hard-linked copies of part 1's, so baselines and the precompiled header are
    there, as on a host that has run before) standing in for hosts, on a new set of fresh
    candidates; throughput and its ratio to one worker."""
    picked = warm_runs(args, args.device)
    sols = [sol for _, v in sorted(picked.items()) for sol in v]
    if not sols:
        sys.exit(f"bench: no correct {args.device} example solution picked")

    def name_of(sol):
        return f"{Path(sol).parent.parent.name}/{Path(sol).parent.name}"

    options = {"device": args.device, **json.loads(args.options or "{}")}
    root = out_dir() / "throughput"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    run_id = uuid.uuid4().hex[:8]
    host_cache = root / "cache"
    own = ["--gpus", "0"] if args.device == "cuda" else ["--workers", str(args.serve_workers)]
    rows = []
    firsts = [v[0] for _, v in sorted(picked.items())]
    # "none": the warm-up alone (the scaling part copies its cache), no one-host passes.
    only_warm = args.build_jobs_list == "none"
    for b, jobs in enumerate(int(n) for n in ("0" if only_warm else args.build_jobs_list or "0").split(",")):
        d = root / f"host-build-jobs-{jobs}"
        d.mkdir()
        proc, client = start_serve(args, d, args.problems, [*own, "--build-jobs", str(jobs), "--cache-dir", host_cache])
        try:
            if b == 0:  # the baselines and the toolchain's precompiled header, once for the cache
                rows.append(throughput_pass(client, [(name_of(s), tagged(s, f"{run_id} warm")) for s in firsts],
                                            options, "warm_up"))
            if only_warm:
                continue
            fresh = [(name_of(s), tagged(s, f"{run_id} fresh {jobs} {i}")) for i in range(args.samples) for s in sols]
            rows.append(throughput_pass(client, fresh, options, f"fresh_build_jobs_{jobs}"))
            rows.append(throughput_pass(client, fresh, {**options, "seed": 4242}, f"cached_build_jobs_{jobs}"))
        finally:
            stop(proc)
    scaling = []
    counts = [int(n) for n in (args.workers_list or "1,2,4").split(",") if n and int(n) > 0]
    for k in counts:
        d = root / f"workers-{k}"
        d.mkdir()
        workers = []
        proc, client = start_serve(args, d, args.problems, ["--workers", "0", "--cache-dir", d / "serve-cache"])
        try:
            for w in range(k):
                cache = d / f"cache-{w}"
                shutil.copytree(host_cache, cache, copy_function=copy_or_link, symlinks=True,
                                ignore=shutil.ignore_patterns("worker", "*.lock"))
                log = open(d / f"worker-{w}.log", "w")
                workers.append(subprocess.Popen([kbv_binary(args), "worker", "--queue", f"sqlite:{d}/q.db",
                                                 "--problems", args.problems, "--cache-dir", cache],
                                                stdout=log, stderr=subprocess.STDOUT))
            pairs = [(name_of(s), tagged(s, f"{run_id} scale {k} {i}")) for i in range(args.samples) for s in sols]
            row = throughput_pass(client, pairs, options, f"workers_{k}")
            row["workers"] = k
            scaling.append(row)
        finally:
            for wp in workers:
                stop(wp)
            stop(proc)
    one = next((r["candidates_per_hour"] for r in scaling if r["workers"] == 1), None)
    for r in scaling:
        r["ratio_to_one"] = round(r["candidates_per_hour"] / one, 3) if one else None
        r["ratio_over_workers"] = round(r["ratio_to_one"] / r["workers"], 3) if one else None
    summary = {"device": args.device, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
               "problems": len(picked), "candidates_per_pass": len(sols) * args.samples, "options": options,
               "one_host": {r["pass"]: {k: r[k] for k in ("candidates_per_hour", "wall_s", "verdicts",
                                                            "median_build_seconds", "phase_mean_s_metrics")}
                            for r in rows},
               "scaling": [{k: r[k] for k in ("workers", "candidates_per_hour", "ratio_to_one", "ratio_over_workers",
                                              "wall_s", "verdicts")} for r in scaling]}
    write("throughput", {"summary": summary, "passes": rows, "scaling": scaling})

def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["aa", "aa_merge", "aa_diag", "repeat", "overhead", "side_stream", "protocol", "tf32",
                                       "serve", "build", "warm", "throughput"])
    ap.add_argument("--limit", type=int, help="build: this many sources, spread over the corpus (default: all); "
                                              "warm, throughput: this many problems")
    ap.add_argument("--workers-list", help="throughput: comma-separated kbv worker process counts to compare "
                                           "(default 1,2,4; 0: no scaling part)")
    ap.add_argument("--build-jobs-list", help="throughput: comma-separated kbv serve --build-jobs values for the one-host "
                                              "part (default 0; 'none': its warm-up only, which fills the cache the "
                                              "scaling part copies)")
    ap.add_argument("--serve-workers", type=int, default=1,
                    help="throughput: evaluations at once in the one-host part (kbv serve --workers; cuda: --gpus 0)")
    ap.add_argument("--options", help="throughput: JSON of evaluation options beside device (default: kbv eval's)")
    ap.add_argument("--warm-list", help="warm: comma-separated --warm-workers counts to compare (default: 0,1)")
    ap.add_argument("--samples", type=int, default=2,
                    help="warm: copies of each problem's example solutions in a run folder (its samples)")
    ap.add_argument("--keep-cache", action="store_true", help="build: keep the build cache it made")
    ap.add_argument("--warm-pch", action="store_true",
                    help="build: build the first source once before the timed ones (the new path's precompiled "
                         "header; its time is reported as warm_up)")
    ap.add_argument("--inputs", help="aa_merge: comma-separated aa.json files of the parts")
    ap.add_argument("--collect", action="store_true",
                    help="aa: summarise the records already in $OUT/aa/run (a cut-off run) without evaluating")
    ap.add_argument("--from-aa", help="protocol: take kbv's timing walls from this aa.json instead of evaluating")
    ap.add_argument("--kbv", help="the kbv binary (default: build-gpu/kbv or build/kbv)")
    ap.add_argument("--problems", default=str(ROOT / "problems"), help="dataset root")
    ap.add_argument("--problems-list", help="comma-separated problem names (default: the 24 A/A problems; "
                                            "warm: every problem with a correct CPU example)")
    ap.add_argument("--repeats", type=int, default=4, help="A/A: evaluations per problem; serve: pairs of evaluations")
    ap.add_argument("--trials", type=int, default=1, help="serve: --trials of each evaluation")
    ap.add_argument("--variants", help="aa_diag: comma-separated variants (default: all of " +
                    ",".join(DIAG_VARIANTS) + ")")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--time-cap", type=float, help="kbv --time-cap")
    ap.add_argument("--timing-pairs", type=int,
                    help="kbv --timing-pairs (A/A: 6 gives issue 28's paired rounds; default: the protocol's, 0 under kernelbench)")
    ap.add_argument("--rse", type=float, help="kbv --rse (a tiny one: the time cap decides how long each is sampled)")
    ap.add_argument("--launch-hold-us", type=float, help="kbv --launch-hold-us for every evaluation (default: kbv's; not with aa_diag's hold variants)")
    ap.add_argument("--cache-dir", default=str(out_dir() / "cache"), help="kbv cache (baselines, builds)")
    ap.add_argument("--problem", default="problems/level1/1_Square_matrix_multiplication_.py")
    ap.add_argument("--solution", default="examples/level1/1_Square_matrix_multiplication_/cuda_honest.py")
    args = ap.parse_args()
    globals()[args.what](args)


if __name__ == "__main__":
    main()

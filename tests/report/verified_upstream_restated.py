"""KernelBench-Verified's scoring, re-stated for when its code is not at hand (CI has no mirror).

Each function follows one upstream function of facebookresearch/kernel_bench_verified at 3fdf6fe
(named beside it) in behaviour, written anew: same inputs, same outputs, same edge cases.
tests/report/verified_scoring_test.py runs upstream's own functions when the mirror is present
and checks this re-statement against them on the same data; without the mirror it runs this.
"""
import math
from collections import defaultdict


def build_baseline_lookup(baseline_json, level):
    """scripts/benchmark_eval_analysis.py build_baseline_lookup: problem id -> baseline mean;
    entries that are null or lack a mean are left out."""
    out = {}
    for key, entry in baseline_json[f"level{level}"].items():
        if entry is not None and entry.get("mean") is not None:
            out[int(key.split("_")[0])] = entry["mean"]
    return out


def build_baseline_memory_lookup(baseline_json, level):
    """scripts/benchmark_eval_analysis.py build_baseline_memory_lookup: problem id -> baseline
    peak_memory, for entries that have the key."""
    out = {}
    for key, entry in baseline_json[f"level{level}"].items():
        if entry is not None and "peak_memory" in entry:
            out[int(key.split("_")[0])] = entry["peak_memory"]
    return out


def parse_eval_results(eval_results):
    """scripts/benchmark_eval_analysis.py parse_eval_results: "pid_sid" keys -> by_sample[sid][pid]."""
    by_sample = defaultdict(dict)
    pids, sids = set(), set()
    for key, entry in eval_results.items():
        p, s = key.rsplit("_", 1)
        by_sample[int(s)][int(p)] = entry
        pids.add(int(p))
        sids.add(int(s))
    return by_sample, sorted(pids), sorted(sids)


def patch_sample(entries, all_problem_ids):
    """scripts/benchmark_eval_analysis.py patch_sample: a problem without an entry fails."""
    for pid in all_problem_ids:
        entries.setdefault(pid, {"compiled": False, "correctness": False, "runtime": -1.0})
    return entries


def merge_hidden_eval(standard, hidden):
    """scripts/benchmark_eval_analysis.py merge_hidden_eval: every standard entry, its correctness
    from the hidden file (False when the hidden file lacks the key)."""
    merged = {}
    for key, entry in standard.items():
        merged[key] = dict(entry)
        merged[key]["correctness"] = hidden[key].get("correctness", False) if key in hidden else False
    return merged


def _best(by_sample, pid, baseline_lookup, sample_ids):
    """The winner as compute_best_of_n_metrics picks it: correct with runtime > 0, the highest
    baseline/runtime, strictly greater than the best so far (which starts at 0)."""
    baseline = baseline_lookup.get(pid)
    best, best_sid = 0.0, None
    if baseline is None:
        return None, None
    for sid in sample_ids:
        e = by_sample[sid].get(pid)
        if e is None or not e.get("correctness") or not e.get("runtime", -1) > 0:
            continue
        s = baseline / e["runtime"]
        if s > best:
            best, best_sid = s, sid
    return (best, best_sid) if best_sid is not None else (None, None)


def compute_best_of_n_metrics(by_sample, all_problem_ids, baseline_lookup, sample_ids, p_values):
    """scripts/benchmark_eval_analysis.py compute_best_of_n_metrics (with src/score.py's
    geometric_mean_speed_ratio_correct_only and fastp): correctness_rate = winners / n, gmsr =
    geomean of the winners' speedups (0 when none), fast_p_<p> = winners with speedup > p, over n."""
    n = len(all_problem_ids)
    wins = [s for s, _ in (_best(by_sample, pid, baseline_lookup, sample_ids) for pid in all_problem_ids)
            if s is not None]
    out = {"correctness_rate": len(wins) / n if n else float("nan"),
           "gmsr": math.exp(sum(math.log(s) for s in wins) / len(wins)) if wins else 0}
    for p in p_values:
        out[f"fast_p_{p}"] = sum(1 for s in wins if s > p) / n if n else 0
    return out


def compute_per_problem_speedups(by_sample, all_problem_ids, baseline_lookup, sample_ids):
    """scripts/generate_leaderboard.py compute_per_problem_speedups: pid -> (speedup, sid) of the
    winner, (None, None) without one."""
    return {pid: _best(by_sample, pid, baseline_lookup, sample_ids) for pid in all_problem_ids}


def compute_paired_memory_metrics(per_problem_sid, all_problem_ids, mem_by_sample, baseline_memory_lookup):
    """scripts/generate_leaderboard.py compute_paired_memory_metrics: the speed winner's
    baseline/kernel peak memory; correct_mem_ratio = geomean over winners with both memories
    positive (None when none), mem_efficient_pct = those with ratio > 1, over all problems."""
    ratios = []
    for pid in all_problem_ids:
        sid = per_problem_sid.get(pid)
        bm = baseline_memory_lookup.get(pid)
        if sid is None or not bm or bm <= 0:
            continue
        e = mem_by_sample.get(sid, {}).get(pid)
        if e is None or not e.get("peak_memory", -1) > 0:
            continue
        ratios.append(bm / e["peak_memory"])
    n = len(all_problem_ids)
    return {"correct_mem_ratio": math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None,
            "mem_efficient_pct": sum(1 for r in ratios if r > 1) / n if n else 0.0,
            "avg_mem_ratio": None}


# scripts/generate_leaderboard.py assemble_data: problems left out of the metrics.
EXCLUDED_PIDS = {2: {23, 80, 83}}

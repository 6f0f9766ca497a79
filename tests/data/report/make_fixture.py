#!/usr/bin/env python3
"""Writes kbv_records.json: a realistic kbv run (levels 1-3, 3 samples per problem) whose records
carry the timing and memory fields of docs/RECORD.md, for the report tests and the screenshot in
docs/. Deterministic (fixed seed); rerun after changing it:  python3 make_fixture.py
The numbers are made up to look like an H200 run; they are test data, not measurements."""
import json
import math
import os
import random

rng = random.Random(20261202)

PROBLEMS = {
    1: ["1_Square_matrix_multiplication_.py", "2_Standard_matrix_multiplication_.py", "19_ReLU.py", "23_Softmax.py",
        "26_GELU_.py", "33_BatchNorm.py", "40_LayerNorm.py", "47_Sum_reduction_over_a_dimension.py",
        "88_MinGPTNewGelu.py", "95_CrossEntropyLoss.py"],
    2: ["12_Gemm_Multiply_LeakyReLU.py", "17_Conv2d_InstanceNorm_Divide.py", "29_Matmul_Mish_Mish.py",
        "40_Matmul_Scaling_ResidualAdd.py", "76_Gemm_Add_ReLU.py", "99_Matmul_GELU_Softmax.py"],
    3: ["1_MLP.py", "4_LeNet5.py", "28_VisionTransformer.py", "43_MinGPTCausalAttention.py"],
}
MATMUL = ("matrix", "Gemm", "Matmul", "MLP", "Conv", "Transformer", "Attention", "LeNet")
DISTS = [("D1", 1.0), ("D2", 3.0), ("D3", 0.01), ("D4", -1.0)]
TRIALS = 5


def protocol():
    return {"name": "kbv", "trials": TRIALS, "distributions": [{"name": n, "scale": s} for n, s in DISTS],
            "atol": 1e-3, "rtol": 1e-3, "rel_l2": 1e-3, "seed_policy": "secret", "reference_precision": "fp32-strict",
            "construction_seed": 42, "torch_version": "2.11.0+cu130", "python_version": "3.11.2",
            "device_name": "NVIDIA H200", "kbv_version": "0.1.0"}


def stats(median):
    spread = median * rng.uniform(0.005, 0.03)
    return {"median_ms": median, "mean_ms": median * 1.003, "std_ms": spread, "min_ms": median * 0.985,
            "max_ms": median * 1.06, "iqr_ms": spread * 1.3, "samples": rng.randint(40, 200), "discarded": 3,
            "rse": round(spread / median / 10, 5), "overhead_ms": 0.004}


def distributions(fail=None, stop_after=None):
    out = []
    for t in range(TRIALS):
        for name, scale in DISTS:
            if stop_after is not None and len(out) == stop_after:
                return out
            passed = name != fail
            entry = {"trial": t, "distribution": name, "scale": scale, "passed": passed}
            if not passed:
                entry["comparisons"] = [{"numel": 4096, "mismatches": 2048, "max_abs_error": 0.73, "rel_l2_error": 0.5,
                                         "first_bad_index": 0, "expected_value": -0.73, "actual_value": 0.73}]
                entry["reason"] = "output 0: 2048 of 4096 elements differ; first at [0]: expected -0.73, got 0.73"
            out.append(entry)
    return out


def record(level, name, sample, outcome):
    pid = int(name.split("_")[0])
    heavy = any(m in name for m in MATMUL)
    r = {"level": level, "problem_id": pid, "sample_id": sample,
         "problem": f"KernelBench/level{level}/{name}",
         "solution": f"runs/demo/level_{level}_problem_{pid}_sample_{sample}_kernel.py",
         "solution_hash": f"{rng.getrandbits(128):032x}", "source_origin": "file",
         "compiled": outcome != "compile_error", "correctness": outcome == "correct", "verdict": outcome,
         "message": "", "findings": [], "distributions": [], "precision": "fp32",
         "metadata": {"hardware": "NVIDIA H200", "device": "cuda:0"}, "runtime": -1.0, "runtime_stats": {},
         "protocol": protocol(), "seconds": round(rng.uniform(4, 40), 1)}
    if outcome == "compile_error":
        r["message"] = (f"runs/demo/level_{level}_problem_{pid}_sample_{sample}_kernel.py: the extension does not "
                        f"compile:\n  kernel.cu:41:17: error: identifier \"__shfl_down\" is undefined")
        r["metadata"]["compilation_error"] = r["message"]
        return r
    if outcome == "runtime_error":
        r["distributions"] = distributions(stop_after=rng.choice([0, 1, 2]))
        r["message"] = "trial 0 D2 (x3): RuntimeError: CUDA error: an illegal memory access was encountered"
        r["metadata"]["runtime_error"] = r["message"]
        return r
    if outcome == "timeout":
        r["distributions"] = distributions(stop_after=0)
        r["message"] = "trial 0 D1 (x1): no reply within 120 s (the forward call hangs)"
        return r
    if outcome == "rejected":
        cheat = rng.choice([("T8", "input_mutation", "the candidate changed input(s) [0] which the reference leaves "
                                                     "unchanged"),
                            ("T1", "side_stream", "kernels ran on a stream the timing did not cover"),
                            ("T5", "output_cache", "the timed outputs did not match fresh inputs")])
        r["distributions"] = distributions()
        r["findings"] = [{"rule": cheat[1], "severity": "reject", "message": cheat[2], "evidence": "trial 0 D1",
                          "cheat": cheat[0]}]
        r["message"] = cheat[2]
        return r
    fail = None
    if outcome == "wrong_output":
        fail = rng.choice(["D1", "D4", "D4", "D3", "D2"])
        if name == "19_ReLU.py" and sample == 1:
            fail = "D4"  # the identity "ReLU" passes on uniform [0, 1) inputs, fails on negated ones
        r["message"] = (f"trial 0 {fail} (x{dict(DISTS)[fail]:g}): output 0: 2048 of 4096 elements differ; first at "
                        f"[0]: expected -0.73, got 0.73")
        r["metadata"]["correctness_issue"] = r["message"]
    else:
        r["message"] = f"passed {TRIALS * 4} of {TRIALS * 4} checks"
    r["distributions"] = distributions(fail)
    # Timing: the fp32 baseline is slower than tf32 on matmul-heavy problems.
    fp32 = rng.uniform(0.05, 3.0) * (4 if heavy else 1)
    tf32 = fp32 / (rng.uniform(2.0, 4.0) if heavy else 1.0)
    speedup_tf32 = math.exp(rng.gauss(-0.25 if heavy else 0.15, 0.6))
    if outcome == "wrong_output" and fail == "D4" and "ReLU" in name:
        speedup_tf32 = 9.5  # the identity "ReLU": absurdly fast, and wrong on negative inputs
    cand = tf32 / speedup_tf32
    floor = cand * rng.uniform(0.15, 0.9)
    r["runtime"] = round(cand, 5)
    r["runtime_stats"] = {"mean": round(cand * 1.003, 5), "std": round(cand * 0.01, 5), "min": round(cand * 0.985, 5),
                          "max": round(cand * 1.06, 5), "num_trials": 100, "hardware": "NVIDIA H200",
                          "device": "cuda:0", "median": round(cand, 5)}
    r["timing"] = {"method": "cuda-events+host-sync", "candidate": stats(cand),
                   "baselines": {"fp32": stats(fp32), "tf32": stats(tf32)},
                   "speedup": {"fp32": fp32 / cand, "tf32": tf32 / cand}, "floor_ms": floor,
                   "speed_of_light": floor / cand}
    if level == 3 and sample == 2:
        r["memory"] = {"measured": False, "method": "torch allocator + NVML", "reason": "NVML not available in the sandbox"}
    else:
        base_peak = rng.randint(8, 900) * 1 << 20
        ratio = math.exp(rng.gauss(0.2 if level == 1 else -0.1, 0.35))
        cand_peak = int(base_peak / ratio)
        mem = {"torch_peak_bytes": cand_peak, "non_torch_peak_bytes": 0, "peak_bytes": cand_peak,
               "persistent_bytes": cand_peak // 3, "growth_bytes_per_call": 0}
        r["memory"] = {"measured": True, "method": "torch allocator + NVML", "candidate": mem,
                       "baselines": {"tf32": {"peak_bytes": base_peak}, "fp32": {"peak_bytes": base_peak}},
                       "ratio": {"tf32": base_peak / cand_peak, "fp32": base_peak / cand_peak}}
    return r


def main():
    records = []
    weights = [("correct", 55), ("wrong_output", 18), ("compile_error", 10), ("runtime_error", 7), ("rejected", 5),
               ("timeout", 2)]
    for level, names in PROBLEMS.items():
        for name in names:
            for sample in range(3):
                if level == 3 and name.startswith("43_") and sample == 2:
                    continue  # a sample the model never produced: the report counts it as missing
                outcome = rng.choices([w[0] for w in weights], [w[1] for w in weights])[0]
                if name == "19_ReLU.py" and sample == 1:
                    outcome = "wrong_output"
                records.append(record(level, name, sample, outcome))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "kbv_records.json"), "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n]\n")
    print(f"{len(records)} records")


if __name__ == "__main__":
    main()

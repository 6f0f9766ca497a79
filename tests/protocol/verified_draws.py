#!/usr/bin/env python3
"""kbv's draws under --protocol kernelbench-verified against KernelBench-Verified's own hidden-test code.

For a few small CPU problems (written here, named as upstream's files so the per-problem configs
apply), kbv evaluates a candidate that computes the right answer and logs every input it receives.
The same tensors are then drawn the way KernelBench-Verified's harness draws them: the trial seeds
from seed 42, each trial's get_inputs() after seeding with its seed, then upstream's own
hidden_tests/levelN/ID_hidden.py (executed from the KernelBench-Verified checkout, never copied)
right after the last trial's seed, every tensor cast to float32 (_process_input_tensor). Same seeds
must give the same tensors, bit for bit, in the same order: 5 standard trials, then each config.

Usage: verified_draws.py --kbv build/kbv --verified DIR [--python PY]
DIR is a KernelBench-Verified work tree or bare git mirror (facebookresearch/kernel_bench_verified,
3fdf6fe); also read from KBV_VERIFIED_DIR. Exits 77 (skipped) when none is given or found, 1 on a
difference, 0 when every draw matches.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

# (level, upstream file name, problem source at CPU size): one standard problem, the two with
# filtered configs, and L1/100 with its structured D5.
PROBLEMS = {
    (1, "19_ReLU.py"): """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(8, 64)]

def get_init_inputs():
    return []
""",
    (1, "90_cumprod.py"): """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)

def get_inputs():
    return [torch.randn(4, 16)]

def get_init_inputs():
    return []
""",
    (1, "100_HingeLoss.py"): """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))

batch = 16

def get_inputs():
    return [torch.rand(batch, batch), torch.randint(0, 2, (batch,)).float() * 2 - 1]

def get_init_inputs():
    return []
""",
}

# The candidate: the problem's own computation, logging what it receives (one JSON line a call).
CANDIDATE = """
import json
import torch
import torch.nn as nn

OPS = {{
    "19_ReLU.py": lambda x: torch.relu(x),
    "90_cumprod.py": lambda x: torch.cumprod(x, dim=1),
    "100_HingeLoss.py": lambda p, t: torch.mean(torch.clamp(1 - p * t, min=0)),
}}

class ModelNew(nn.Module):
    def forward(self, *args):
        with open({log!r}, "a") as f:
            f.write(json.dumps([[str(a.dtype), list(a.shape), a.flatten().tolist()] for a in args]) + "\\n")
        return OPS[{name!r}](*args)
"""


def upstream_text(verified, path):
    """A file of the KernelBench-Verified checkout: a work tree, or a bare mirror read with git show."""
    if (verified / path).is_file():
        return (verified / path).read_text()
    out = subprocess.run(["git", "-C", str(verified), "show", f"HEAD:{path}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def load_module(path):
    context = {"__file__": str(path), "__name__": "problem"}
    exec(compile(path.read_text(), str(path), "exec"), context)
    return context


def upstream_draws(problem, hidden_source, hidden_file):
    """The tensors KernelBench-Verified's harness passes: 5 standard trials, then the hidden configs."""
    torch.manual_seed(42)  # run_and_check_correctness(seed=42)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    module = load_module(problem)
    draws = []
    for seed in seeds:
        torch.manual_seed(seed)
        draws.append(module["get_inputs"]())
    # get_hidden_inputs() runs right after the last trial seeded the generator (set_seed(trial_seed)
    # before the models move; nothing draws from the CPU generator in between).
    torch.manual_seed(seeds[-1])
    context = {"torch": torch, "__file__": str(hidden_file), "__builtins__": __builtins__}
    exec(compile(hidden_source, str(hidden_file), "exec"), context)
    draws += context["get_hidden_inputs"]()
    cast = [[t.to(dtype=torch.float32) if isinstance(t, torch.Tensor) else t for t in d] for d in draws]
    return seeds, cast


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kbv", required=True)
    ap.add_argument("--verified", default=os.environ.get("KBV_VERIFIED_DIR", ""))
    ap.add_argument("--python", default="")
    args = ap.parse_args()
    verified = Path(args.verified) if args.verified else None
    if verified is None or not verified.exists():
        print("skipped: no KernelBench-Verified checkout (--verified DIR or KBV_VERIFIED_DIR)")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kbv-verified-draws-") as tmp:
        root = Path(tmp)
        for (level, name), source in PROBLEMS.items():
            pid = name.split("_", 1)[0]
            hidden_rel = f"hidden_tests/level{level}/{pid}_hidden.py"
            hidden_source = upstream_text(verified, hidden_rel)
            if hidden_source is None:
                print(f"skipped: {verified} has no {hidden_rel}")
                return 77
            # Upstream's hidden file finds its problem at ../../KernelBench/levelN/NAME.
            problem = root / "KernelBench" / f"level{level}" / name
            problem.parent.mkdir(parents=True, exist_ok=True)
            problem.write_text(source)
            hidden_file = root / hidden_rel
            hidden_file.parent.mkdir(parents=True, exist_ok=True)
            log = root / f"{pid}.calls.jsonl"
            solution = root / f"{pid}_solution.py"
            solution.write_text(CANDIDATE.format(log=str(log), name=name))
            out = root / f"{pid}.json"
            cmd = [args.kbv, "eval", "--problem", str(problem), "--solution", str(solution), "--device", "cpu",
                   "--protocol", "kernelbench-verified", "--timing", "off", "--policy", "lenient",
                   "--sandbox", "off", "--cache-dir", str(root / "cache"), "--json", str(out)]
            if args.python:
                cmd += ["--python", args.python]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if not out.exists():
                print(f"FAIL {name}: kbv wrote no record (exit {run.returncode}): {run.stderr[-2000:]}")
                failures += 1
                continue
            record = json.loads(out.read_text())
            seeds, expected = upstream_draws(problem, hidden_source, hidden_file)
            got_seeds = [d.get("seed") for d in record["distributions"][:5]]
            problems = []
            if record["verdict"] != "correct":
                problems.append(f"verdict {record['verdict']}: {record.get('message')}")
            if got_seeds != seeds:
                problems.append(f"trial seeds {got_seeds}, upstream's {seeds}")
            calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            if len(record["distributions"]) != len(expected):
                problems.append(f"{len(record['distributions'])} checks, upstream draws {len(expected)}")
            for i, draw in enumerate(expected):
                if i >= len(calls):
                    problems.append(f"draw {i}: the candidate was called {len(calls)} times")
                    break
                got = calls[i]
                if len(got) != len(draw):
                    problems.append(f"draw {i}: {len(got)} arguments, upstream {len(draw)}")
                    continue
                for k, (g, e) in enumerate(zip(got, draw)):
                    tensor = torch.tensor(g[2], dtype=torch.float32).reshape(g[1])
                    if g[0] != str(e.dtype) or list(e.shape) != g[1] or not torch.equal(tensor, e):
                        problems.append(f"draw {i} argument {k}: differs from upstream's "
                                        f"({g[0]} {g[1]} against {e.dtype} {list(e.shape)})")
            labels = [d.get("hidden_config") for d in record["distributions"][5:]]
            if labels != [f"config_{i + 1}" for i in range(len(expected) - 5)]:
                problems.append(f"hidden entries labelled {labels}")
            if problems:
                failures += 1
                print(f"FAIL level{level}/{name}:\n  " + "\n  ".join(problems))
            else:
                print(f"ok   level{level}/{name}: 5 trials and {len(expected) - 5} hidden configs, "
                      f"the same tensors as upstream's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

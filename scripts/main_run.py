#!/usr/bin/env python3
"""The main job's two halves around `kbv eval` (scripts/main.sh); standard library only.

  layout  --manifest M --device D --run DIR --rest FILE
      Lays the example solutions for device D that are honest or deliberately wrong (no cheat id;
      expected correct or wrong_output) out as a KernelBench run folder: DIR/level_L_problem_P_sample_S_kernel.py,
      symlinks to the examples, samples numbered per problem in manifest order. An entry with a
      precision other than fp32 is not laid out (the run is evaluated in fp32). Every other entry
      (cheats, crashes, timeouts, other precisions) goes to FILE, a manifest with absolute paths,
      for `kbv selftest`; so do the CUDA entries on the CPU (the self-test shows them skipped), but
      not the CPU entries on a GPU machine (CI runs them; `KBV_DEVICE=cpu scripts/main.sh` here).
  summary --manifest M --run DIR
      Reads DIR/kbv.sqlite and prints a short table: verdict counts per level, then every sample
      whose verdict is not the manifest's expected one, and the deliberately wrong ones' first
      failure. Exit 1 when a verdict differs from the expected one (entries with `pending` excepted).
"""
import argparse
import json
import os
import sqlite3
import sys
from collections import Counter, defaultdict

VERDICTS = ["correct", "wrong_output", "compile_error", "runtime_error", "timeout", "crashed", "rejected",
            "problem_error"]


def repo_root(manifest):
    return os.path.dirname(os.path.dirname(os.path.abspath(manifest)))


def fp32(entry):
    """The run folder is evaluated in fp32; bf16/fp16 entries are the self-test's."""
    return entry.get("precision", "fp32") == "fp32"


def in_run(entry, device):
    return (entry.get("device", "cpu") == device and entry.get("cheat") is None and fp32(entry)
            and entry.get("expected") in ("correct", "wrong_output"))


def level_and_id(problem_path):
    level = int(os.path.basename(os.path.dirname(problem_path))[len("level"):])
    pid = int(os.path.basename(problem_path).split("_", 1)[0])
    return level, pid


def layout(args):
    root = repo_root(args.manifest)
    entries = json.load(open(args.manifest))
    os.makedirs(args.run, exist_ok=True)
    samples = Counter()
    rest = []
    placed = left = 0
    for e in entries:
        if args.device == "cuda" and e.get("device", "cpu") == "cpu":
            left += 1
            continue
        if not in_run(e, args.device):
            e = dict(e, problem=os.path.join(root, e["problem"]), solution=os.path.join(root, e["solution"]))
            rest.append(e)
            continue
        level, pid = level_and_id(e["problem"])
        sample = samples[(level, pid)]
        samples[(level, pid)] += 1
        link = os.path.join(args.run, f"level_{level}_problem_{pid}_sample_{sample}_kernel.py")
        os.symlink(os.path.join(root, e["solution"]), link)
        placed += 1
    with open(args.rest, "w") as f:
        json.dump(rest, f, indent=2)
    print(f"main: {placed} {args.device} example(s) laid out as a run in {args.run}; "
          f"{len(rest)} other entries for the self-test"
          + (f"; the {left} CPU entries are left to CI (KBV_DEVICE=cpu scripts/main.sh runs them)" if left else ""),
          file=sys.stderr)


def summary(args):
    root = repo_root(args.manifest)
    # A solution's bf16/fp16 entries expect other verdicts: only its fp32 ones judge the run.
    by_solution = {os.path.realpath(os.path.join(root, e["solution"])): e for e in json.load(open(args.manifest))
                   if fp32(e)}
    store = os.path.join(args.run, "kbv.sqlite")
    if not os.path.exists(store):
        print(f"main: {store} does not exist: the evaluation stored nothing", file=sys.stderr)
        return 1
    db = sqlite3.connect(store)
    latest = {}
    for level, pid, sample, record in db.execute(
            "SELECT level, problem_id, sample_id, record FROM results ORDER BY rowid"):
        latest[(level, pid, sample)] = json.loads(record)
    counts = defaultdict(Counter)
    surprises, wrong_as_expected = [], []
    for key in sorted(latest):
        r = latest[key]
        solution = os.path.realpath(r.get("solution", ""))
        e = by_solution.get(solution, {})
        got, expected = r.get("verdict", ""), e.get("expected", "?")
        counts[key[0]][got] += 1
        failed = sorted({d["distribution"] for d in r.get("distributions", []) if not d.get("passed", True)})
        name = os.path.relpath(solution, root)
        if got != expected or ("fails_only" in e and got == "wrong_output" and failed != sorted(e["fails_only"])):
            if not e.get("pending"):
                surprises.append((name, got, expected, failed, r.get("message", "")))
        elif expected == "wrong_output":
            wrong_as_expected.append((name, failed, r.get("message", "")))
    cols = [v for v in VERDICTS if any(c[v] for c in counts.values())]
    print(f"{'level':<7}{'samples':>8}" + "".join(f"{v:>15}" for v in cols))
    for level in sorted(counts):
        c = counts[level]
        print(f"{level:<7}{sum(c.values()):>8}" + "".join(f"{c[v]:>15}" for v in cols))
    total = sum(sum(c.values()) for c in counts.values())
    print(f"{total - len(surprises)} of {total} verdicts as the manifest expects")
    for name, failed, message in wrong_as_expected:
        print(f"  expected failure  {name}: fails {','.join(failed)}: {message[:150]}")
    for name, got, expected, failed, message in surprises:
        print(f"  UNEXPECTED        {name}: {got} (expected {expected}; failed {','.join(failed) or '-'}): "
              f"{message[:150]}")
    return 1 if surprises else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("layout")
    a.add_argument("--manifest", required=True)
    a.add_argument("--device", required=True, choices=["cpu", "cuda"])
    a.add_argument("--run", required=True)
    a.add_argument("--rest", required=True)
    s = sub.add_parser("summary")
    s.add_argument("--manifest", required=True)
    s.add_argument("--run", required=True)
    args = p.parse_args()
    if args.command == "layout":
        layout(args)
        return 0
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`kbv eval --run ... --gpus 0,1` against `--gpus 0`, on a machine with two GPUs (issue 31).

  two_gpu.py --kbv build-gpu/kbv --work DIR [--json OUT] [--problems N] [--trials T]

Lays out one run folder of CUDA examples from examples/manifest.json (the first N level-1
problems' fp32 examples expected correct, plus cuda_illegal_access, which loses its CUDA context),
compiles them once into a build cache, and evaluates the same folder twice, each with its own copy
of that cache (so both find the builds made and neither finds the other's baselines): on GPU 0
alone, then on GPUs 0 and 1. Every 0.3 s nvidia-smi lists the processes on each GPU; each kbv
worker's role and CUDA_VISIBLE_DEVICES are read from /proc. Checks, each printed and in the JSON:
  pinned     every worker seen on a GPU is seen on one GPU only, the one its CUDA_VISIBLE_DEVICES
             names, and in the two-GPU run candidate workers ran on both GPUs
  isolated   the crashing sample is `crashed` and every other sample has the verdict the manifest
             expects, the same in both runs (a crash on one GPU left the other's evaluations alone)
  wall       the wall time of each run and their ratio
Exit 0 when every check passes. Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRASH = "examples/level1/19_ReLU/cuda_illegal_access.py"


def pick(manifest, n):
    chosen, problems = [], []
    for e in manifest:
        if (e.get("device") == "cuda" and e.get("expected") == "correct" and e.get("cheat") is None
                and e.get("precision", "fp32") == "fp32" and "/level1/" in e["problem"]):
            if e["problem"] not in problems:
                if len(problems) >= n:
                    continue
                problems.append(e["problem"])
            chosen.append(e)
    crash = [e for e in manifest if e["solution"] == CRASH]
    return chosen + crash


def layout(entries, run):
    run.mkdir(parents=True)
    count, where = {}, {}
    for e in entries:
        name = Path(e["problem"]).name
        level, pid = int(Path(e["problem"]).parent.name[5:]), int(name.split("_", 1)[0])
        s = count.get((level, pid), 0)
        count[(level, pid)] = s + 1
        (run / f"level_{level}_problem_{pid}_sample_{s}_kernel.py").symlink_to(ROOT / e["solution"])
        where[(level, pid, s)] = e
    return where


def gpu_index_of_uuid():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout
    return {u.strip(): int(i) for i, u in (line.split(",") for line in out.splitlines() if "," in line)}


class Sampler:
    """Which processes each GPU holds, read every 0.3 s, with each kbv worker's role and pinning."""

    def __init__(self):
        self.uuid = gpu_index_of_uuid()
        self.seen = {}  # pid -> {"role", "cvd", "gpus"}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                if "," not in line:
                    continue
                pid, uuid = (x.strip() for x in line.split(",", 1))
                if not pid.isdigit():
                    continue
                e = self.seen.get(pid)
                if e is None:
                    try:
                        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                        env = dict(x.split(b"=", 1) for x in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                                   if b"=" in x)
                    except OSError:
                        continue
                    args = [a.decode(errors="replace") for a in argv if a]
                    role = args[-1] if any("kbv_worker" in a for a in args) else "other: " + " ".join(args)[:80]
                    e = self.seen[pid] = {"role": role, "cvd": env.get(b"CUDA_VISIBLE_DEVICES", b"").decode(),
                                          "gpus": set()}
                e["gpus"].add(self.uuid.get(uuid, uuid))
            self.stop.wait(0.3)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def rows(self):
        return [{"pid": int(p), "role": e["role"], "cuda_visible_devices": e["cvd"], "gpus": sorted(e["gpus"])}
                for p, e in sorted(self.seen.items())]


def verdicts(run):
    con = sqlite3.connect(run / "kbv.sqlite")
    out = {}
    for (text,) in con.execute("SELECT record FROM results"):
        r = json.loads(text)
        out[(r["level"], r["problem_id"], r["sample_id"])] = r["verdict"]
    con.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kbv", required=True)
    ap.add_argument("--work", required=True, help="an empty or new folder")
    ap.add_argument("--json")
    ap.add_argument("--problems", type=int, default=6, help="level-1 problems of the manifest (default 6)")
    ap.add_argument("--trials", type=int, default=2)
    args = ap.parse_args()
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    entries = pick(json.loads((ROOT / "examples/manifest.json").read_text()), args.problems)
    print(f"two_gpu: {len(entries)} samples, GPUs {gpu_index_of_uuid()}", flush=True)

    cache = work / "cache"
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        builds = list(pool.map(lambda e: subprocess.run(
            [args.kbv, "build", "--solution", str(ROOT / e["solution"]), "--device", "cuda", "--cache-dir", str(cache)],
            capture_output=True, text=True).returncode, entries))
    print(f"two_gpu: built {len(entries)} in {time.monotonic() - t0:.0f} s (rc {builds})", flush=True)

    result = {"samples": [e["solution"] for e in entries], "runs": {}}
    for name, gpus in (("one", "0"), ("two", "0,1")):
        run = work / f"run-{name}"
        where = layout(entries, run)
        mine = work / f"cache-{name}"
        shutil.copytree(cache, mine, symlinks=True)
        cmd = [args.kbv, "eval", "--problems", str(ROOT / "problems"), "--run", str(run), "--gpus", gpus,
               "--device", "cuda", "--trials", str(args.trials), "--cache-dir", str(mine)]
        print("+", " ".join(cmd), flush=True)
        with Sampler() as s:
            t0 = time.monotonic()
            p = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.monotonic() - t0
        (work / f"eval-{name}.log").write_text(p.stdout + p.stderr)
        got = verdicts(run)
        result["runs"][name] = {"gpus": gpus, "rc": p.returncode, "wall_s": wall, "workers": s.rows(),
                                "verdicts": {f"{k[0]}/{k[1]}/{k[2]} {Path(where[k]['solution']).name}": v
                                             for k, v in sorted(got.items())}}
        print(f"two_gpu: --gpus {gpus}: rc {p.returncode}, {wall:.1f} s, {len(got)} records", flush=True)

    checks = {}
    two = result["runs"]["two"]
    workers = [w for w in two["workers"] if not w["role"].startswith("other")]
    wrong_gpu = [w for w in workers if len(w["gpus"]) != 1 or str(w["gpus"][0]) != w["cuda_visible_devices"]]
    cand_gpus = sorted({g for w in workers if w["role"] == "candidate" for g in w["gpus"]})
    checks["pinned"] = {"ok": not wrong_gpu and cand_gpus == [0, 1], "workers_seen": len(workers),
                        "candidate_gpus": cand_gpus, "off_their_gpu": wrong_gpu}
    one_v, two_v = result["runs"]["one"]["verdicts"], two["verdicts"]
    expected = {}
    for k, e in layout_keys(entries).items():
        expected[k] = e["expected"]
    bad = []
    for k, want in expected.items():
        for run_name, v in (("one", one_v), ("two", two_v)):
            if v.get(k) != want:
                bad.append({"sample": k, "run": run_name, "verdict": v.get(k), "expected": want})
    checks["isolated"] = {"ok": not bad and any(v == "crashed" for v in two_v.values()), "mismatches": bad}
    w1, w2 = result["runs"]["one"]["wall_s"], two["wall_s"]
    checks["wall"] = {"one_gpu_s": w1, "two_gpus_s": w2, "one_over_two": w1 / w2 if w2 else None}
    result["checks"] = checks
    for k, v in checks.items():
        print(f"two_gpu: {k}: {json.dumps(v)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if checks["pinned"]["ok"] and checks["isolated"]["ok"] else 1


def layout_keys(entries):
    count, out = {}, {}
    for e in entries:
        name = Path(e["problem"]).name
        level, pid = int(Path(e["problem"]).parent.name[5:]), int(name.split("_", 1)[0])
        s = count.get((level, pid), 0)
        count[(level, pid)] = s + 1
        out[f"{level}/{pid}/{s} {Path(e['solution']).name}"] = e
    return out


if __name__ == "__main__":
    sys.exit(main())

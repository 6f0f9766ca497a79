#!/usr/bin/env python3
"""Where does the time of one memory-bound call vary on this GPU? (issue 8: the A/A candidate is
1-4% slower than its own FP32 baseline, and a baseline's level moves by about 3% between
evaluations; docs/TIMING.md.)

Pure torch, no kbv: each configuration runs in fresh child processes, and each child times one
element-wise call (GELU, which allocates its output as the problem does, and a multiply into a
fixed output) on several input placements, with an L2 flush before every sample, as kbv does:

  placement   the same call on `--pairs` buffer pairs held at once: does the time depend on where
              the buffers are?
  process     the same measurement in several processes: is there a level per process?
  prequeue    torch.cuda._sleep before the start event, so the host's launch latency is hidden:
              how much of the interval is the host's?
  evict/warm  before each sample's L2 flush, a read of another 6 GiB buffer (the call's address
              translations evicted, as after the candidate's copy from the shared buffer) or a write
              of the call's own output (kept warm, as the baseline's in-process draw may leave it):
              does the TLB state, which no L2 flush resets, move the time?
  drift       `--drift` consecutive samples on one pair, in chunks: does the level move in time?
  peer        a second process idle with `--peer-gib` GiB allocated (as the reference worker is
              while the candidate is timed)
  expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator maps 2 MiB pieces)
  fragmented  the buffers placed after `--fragment-gib` 1 GiB pieces were taken and every other one
              given back (holes in device memory, as in a worker after its checks)

Writes one JSON (`--json`) and prints a short summary.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def quantiles(v):
    s = sorted(v)
    q = statistics.quantiles(s, n=4) if len(s) > 1 else [s[0]] * 3
    return {"median": statistics.median(s), "min": s[0], "max": s[-1], "iqr": q[2] - q[0], "n": len(s)}


def child(args):
    import torch
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(max(2 * props.L2_cache_size, 32 << 20), dtype=torch.uint8, device=dev)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    kept = []  # the pieces that stay allocated around the holes
    if args.fragment_gib:
        # Device memory with holes before the buffers are placed: 1 GiB pieces, every other one
        # given back to the driver (as a worker's memory looks after its checks and memory phase).
        pieces = [torch.empty(1 << 30, dtype=torch.uint8, device=dev) for _ in range(args.fragment_gib)]
        kept = pieces[::2]
        del pieces
        torch.cuda.empty_cache()
    pairs = []
    for _ in range(args.pairs):
        x = torch.rand(args.numel, device=dev)
        pairs.append((x, torch.empty_like(x)))
    # _sleep counts SM cycles: cycles per microsecond measured once.
    torch.cuda._sleep(1000)
    start.record()
    torch.cuda._sleep(2_000_000)
    stop.record()
    torch.cuda.synchronize()
    sleep_cycles = int(args.prequeue_us * 2_000_000 / (start.elapsed_time(stop) * 1e3))

    def sample(fn, k, prequeue, prep=None):
        if prep:
            prep()
        flush.fill_(k & 0xFF)
        torch.cuda.synchronize()
        if prequeue:
            torch.cuda._sleep(sleep_cycles)
        t0 = time.perf_counter()
        start.record()
        out = fn()
        t_ret = time.perf_counter()
        stop.record()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        del out
        return start.elapsed_time(stop), (t_ret - t0) * 1e3, (t1 - t0) * 1e3

    calls = {
        "gelu_alloc": lambda x, y: (lambda: torch.nn.functional.gelu(x)),
        "mul_fixed": lambda x, y: (lambda: torch.mul(x, 1.5, out=y)),
    }
    # What runs before the L2 flush of every sample. The flush evicts the L2, not the address
    # translations: `evict` reads another pair's input (6 GiB of other pages, as the candidate's
    # copy from the reference's shared buffer does), `warm` writes the call's own output buffer
    # (as the baseline's in-process draw leaves its block warm for the output that reuses it).
    other = {p: pairs[(p + 1) % len(pairs)][0] for p in range(len(pairs))}
    variants = [("gelu_alloc", "none", False), ("gelu_alloc", "none", True), ("gelu_alloc", "evict", False),
                ("mul_fixed", "none", False), ("mul_fixed", "none", True), ("mul_fixed", "evict", False),
                ("mul_fixed", "warm", False)]
    rows, k = [], 0
    for rnd in range(args.rounds):
        for p, (x, y) in enumerate(pairs):
            for name, prep_name, prequeue in variants:
                if prep_name == "evict" and len(pairs) < 2:
                    continue
                fn = calls[name](x, y)
                prep = {"none": None, "evict": lambda o=other[p]: o.sum(), "warm": lambda y=y: y.fill_(0.0)}[prep_name]
                for _ in range(3):  # warm-up
                    sample(fn, k, prequeue, prep)
                    k += 1
                ev, hc, host = [], [], []
                for _ in range(args.samples):
                    e, c, h = sample(fn, k, prequeue, prep)
                    k += 1
                    ev.append(e)
                    hc.append(c)
                    host.append(h)
                rows.append({"round": rnd, "pair": p, "call": name, "prep": prep_name, "prequeue": prequeue,
                             "events_ms": quantiles(ev), "host_call_ms": statistics.median(hc),
                             "host_ms": statistics.median(host)})
    drift = []
    if args.drift:
        fn = calls["gelu_alloc"](*pairs[0])
        evs = [sample(fn, k + i, False)[0] for i in range(args.drift)]
        drift = [statistics.median(evs[i:i + 20]) for i in range(0, len(evs), 20)]
    addresses = [[x.data_ptr(), y.data_ptr()] for x, y in pairs]
    print(json.dumps({"rows": rows, "drift_medians_ms": drift, "addresses": addresses,
                      "device": props.name, "torch": torch.__version__}))


def gpu_state():
    try:
        q = "clocks.sm,clocks.mem,temperature.gpu,temperature.memory,power.draw"
        p = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20)
        return p.stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-smi: {e}"


def run_child(args, env_extra=None, peer_gib=0, fragment_gib=0):
    env = dict(os.environ)
    env.update(env_extra or {})
    peer = None
    if peer_gib:
        code = ("import sys, torch; x = torch.empty(int(%d * 2**30), dtype=torch.uint8, device='cuda'); "
                "torch.cuda.synchronize(); print('ready', flush=True); sys.stdin.read()") % peer_gib
        peer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        peer.stdout.readline()
    cmd = [sys.executable, __file__, "--child", "--numel", str(args.numel), "--pairs", str(args.pairs), "--samples",
           str(args.samples), "--rounds", str(args.rounds), "--drift", str(args.drift), "--prequeue-us",
           str(args.prequeue_us), "--fragment-gib", str(fragment_gib)]
    before = gpu_state()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    after = gpu_state()
    if peer:
        peer.stdin.close()
        peer.wait(timeout=60)
    if p.returncode != 0:
        return {"error": p.stderr[-2000:]}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["gpu_before"], out["gpu_after"] = before, after
    return out


def variant_key(row):
    return f"{row['call']}/{row.get('prep', 'none')}{'+prequeue' if row['prequeue'] else ''}"


def level(result, key="gelu_alloc/none"):
    """Per pair, the median over rounds of the events median of one variant."""
    per = {}
    for r in result.get("rows", []):
        if variant_key(r) == key:
            per.setdefault(r["pair"], []).append(r["events_ms"]["median"])
    return [statistics.median(v) for _, v in sorted(per.items())]


def summarise(configs):
    s = {}
    for name, runs in configs.items():
        entry = {}
        keys = sorted({variant_key(r2) for r in runs if "rows" in r for r2 in r["rows"]})
        for key in keys:
            levels = [lv for lv in (level(r, key) for r in runs if "rows" in r) if lv]
            if not levels:
                continue
            flat = [x for lv in levels for x in lv]
            procs = [statistics.median(lv) for lv in levels]
            entry[key] = {
                "per_process_pair_medians_ms": [[round(x, 4) for x in lv] for lv in levels],
                "spread_within_process": max((max(lv) - min(lv)) / min(lv) for lv in levels),
                "spread_between_processes": (max(procs) - min(procs)) / min(procs),
                "median_ms": statistics.median(flat),
                "min_ms": min(flat)}
        hc = [r2["host_call_ms"] for r in runs if "rows" in r for r2 in r["rows"] if not r2["prequeue"]]
        entry["host_call_median_ms"] = statistics.median(hc) if hc else None
        entry["drift_medians_ms"] = [[round(x, 4) for x in r.get("drift_medians_ms", [])] for r in runs]
        entry["gpu_before_after"] = [[r.get("gpu_before"), r.get("gpu_after")] for r in runs]
        entry["errors"] = [r["error"] for r in runs if "error" in r]
        s[name] = entry
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--numel", type=int, default=4096 * 393216, help="elements per buffer (default: 26_GELU_'s input)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--drift", type=int, default=200, help="consecutive samples for the drift series (0: none)")
    ap.add_argument("--prequeue-us", type=float, default=300.0)
    ap.add_argument("--processes", type=int, default=3, help="processes per configuration")
    ap.add_argument("--peer-gib", type=int, default=30)
    ap.add_argument("--fragment-gib", type=int, default=40,
                    help="the fragmented configuration's 1 GiB pieces (a child: 0 for none)")
    ap.add_argument("--configs", default="solo,peer,expandable,fragmented")
    ap.add_argument("--json", default="gpu_probe.json")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    configs = {}
    for name in args.configs.split(","):
        runs = []
        for i in range(args.processes):
            t0 = time.monotonic()
            if name == "solo":
                r = run_child(args)
            elif name == "peer":
                r = run_child(args, peer_gib=args.peer_gib)
            elif name == "fragmented":
                r = run_child(args, fragment_gib=args.fragment_gib)
            elif name == "expandable":
                r = run_child(args, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
            else:
                sys.exit(f"gpu_probe: unknown configuration '{name}' (solo, peer, expandable, fragmented)")
            r["wall_s"] = time.monotonic() - t0
            runs.append(r)
            lv = level(r)
            print(f"gpu_probe: {name} {i}: gelu medians per pair {[round(x, 4) for x in lv]} ms "
                  f"({r['wall_s']:.0f} s){' ERROR ' + r['error'][-300:] if 'error' in r else ''}",
                  file=sys.stderr, flush=True)
        configs[name] = runs
    summary = summarise(configs)
    with open(args.json, "w") as f:
        json.dump({"summary": summary, "configs": configs, "args": vars(args)}, f, indent=1)
    print(json.dumps(summary, indent=1))
    failed = sum(len(e["errors"]) for e in summary.values())
    if failed:
        sys.exit(f"gpu_probe: {failed} child process(es) failed; their errors are in {args.json}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The SM clock over honest timed runs, for the NVML throttle rule's threshold (docs/TIMING.md).

  clock_spread.py [--smi nvidia-smi.csv] [--json OUT] DIR...

Reads every kbv record under the folders (record JSON files, and the records of run folders'
kbv.sqlite) whose timing read the clock through NVML, and per record the drop of the lowest SM
clock read around any sample below the expected clock (1 - sm_mhz_min / expected_sm_mhz), the
samples discarded as throttled and the clocks-event reason bits seen. A sample is discarded when
either of its readings is more than the threshold below the expected clock, so the largest drop
over honest runs is the least threshold that discards none of them. With --smi, the clocks that
`nvidia-smi --query-gpu=timestamp,utilization.gpu,clocks.sm,...,clocks_event_reasons.active
--format=csv -lms 100` read while the GPU was busy (utilization >= 50%). Standard library only.
"""
import argparse
import csv
import json
import sqlite3
import statistics
import sys
from pathlib import Path


def records_under(folder):
    for f in sorted(Path(folder).rglob("*.json")):
        try:
            r = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and "verdict" in r and isinstance(r.get("timing"), dict):
            yield str(f), r
    for db in sorted(Path(folder).rglob("kbv.sqlite")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            rows = con.execute("SELECT record FROM results").fetchall()
            con.close()
        except sqlite3.Error:
            continue
        for i, (text,) in enumerate(rows):
            r = json.loads(text)
            if isinstance(r.get("timing"), dict):
                yield f"{db}#{i}", r


def quantile(v, q):
    v = sorted(v)
    if not v:
        return None
    k = (len(v) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def record_rows(folders):
    rows = []
    for where, r in (x for f in folders for x in records_under(f)):
        t = r["timing"]
        c = t.get("clock", {})
        if c.get("source") != "nvml" or not c.get("expected_sm_mhz"):
            continue
        exp, lo, hi = c["expected_sm_mhz"], c.get("sm_mhz_min", 0), c.get("sm_mhz_max", 0)
        cand = t.get("candidate", {})
        rows.append({"record": where, "problem": Path(str(r.get("problem_path", r.get("problem", "")))).stem or
                     str(r.get("problem_id", "")),
                     "expected_sm_mhz": exp, "sm_mhz_min": lo, "sm_mhz_max": hi,
                     "drop": 1 - lo / exp if lo else None, "samples": cand.get("samples"),
                     "discarded": cand.get("discarded"), "sampling_s": t.get("sampling_s"),
                     "reasons_seen": c.get("reasons_seen", 0), "throttled_kept": c.get("throttled_kept", 0)})
    return rows


def smi_summary(path):
    busy, reasons = [], {}
    with open(path, newline="") as f:
        rd = csv.reader(f)
        head = [h.strip() for h in next(rd, [])]
        for row in rd:
            if len(row) != len(head):
                continue
            d = dict(zip(head, (x.strip() for x in row)))
            try:
                util = float(d["utilization.gpu [%]"].split()[0])
                sm = float(d["clocks.current.sm [MHz]"].split()[0])
            except (KeyError, ValueError):
                continue
            if util >= 50:
                busy.append(sm)
                rs = d.get("clocks_event_reasons.active", "?")
                reasons[rs] = reasons.get(rs, 0) + 1
    if not busy:
        return {"busy_readings": 0}
    top = max(busy)
    return {"busy_readings": len(busy), "sm_mhz_max": top, "sm_mhz_min": min(busy),
            "sm_mhz_p01": quantile(busy, 0.01), "sm_mhz_p05": quantile(busy, 0.05),
            "sm_mhz_median": statistics.median(busy),
            "drop_below_max_p95": 1 - quantile(busy, 0.05) / top, "drop_below_max_worst": 1 - min(busy) / top,
            "reasons": reasons}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--smi", help="nvidia-smi CSV read beside the runs")
    ap.add_argument("--json", help="write rows and summary here")
    args = ap.parse_args()
    rows = record_rows(args.folders)
    drops = [x["drop"] for x in rows if x["drop"] is not None]
    summary = {"records": len(rows)}
    if drops:
        reasons = 0
        for x in rows:
            reasons |= int(x["reasons_seen"] or 0)
        summary.update({"drop_median": statistics.median(drops), "drop_p90": quantile(drops, 0.9),
                        "drop_max": max(drops), "discarded_total": sum(x["discarded"] or 0 for x in rows),
                        "records_with_discards": sum(1 for x in rows if x["discarded"]),
                        "samples_total": sum(x["samples"] or 0 for x in rows),
                        "reasons_seen_or": hex(reasons),
                        "expected_sm_mhz": sorted({x["expected_sm_mhz"] for x in rows})})
    if args.smi:
        summary["nvidia_smi"] = smi_summary(args.smi)
    print(f"{'problem':40} {'expected':>8} {'min':>6} {'max':>6} {'drop':>7} {'kept':>5} {'disc':>5} {'s':>5} reasons")
    for x in sorted(rows, key=lambda x: -(x["drop"] or 0)):
        print(f"{x['problem'][:40]:40} {x['expected_sm_mhz']:8.0f} {x['sm_mhz_min']:6.0f} {x['sm_mhz_max']:6.0f} "
              f"{100 * (x['drop'] or 0):6.2f}% {x['samples'] or 0:5} {x['discarded'] or 0:5} "
              f"{x['sampling_s'] or 0:5.1f} {hex(int(x['reasons_seen'] or 0))}")
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())

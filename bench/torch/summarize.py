#!/usr/bin/python3
"""Summaries for bench/torch_vs_ddp.sh, as one JSON line each.

  summarize.py fabps RUN_DIR TARGET [NAME]
                                      a fabps-launch run directory (NAME:
                                      the system's name, default fabps)
  summarize.py ddp OUTPUT_FILE        the output of ddp_reference.py
  summarize.py table RESULTS_FILE     the median table of all runs

For a fabps run: samples/s is every trainer's training samples over the
longest trainer's time from the end of its initialization to the end of its
last pass (evaluation included, as in ddp_reference.py); the time to TARGET
is the evaluator's elapsed_seconds at the first pass whose test accuracy
reaches it (null when none does).
"""

import glob
import json
import statistics
import sys


def json_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def fabps_run(run_dir, target, name="fabps"):
    samples, end, reached, acc = 0, 0.0, None, None
    files = sorted(glob.glob(f"{run_dir}/trainer-*.metrics"))
    if not files:
        raise SystemExit(f"summarize.py: no metrics files in {run_dir}")
    for path in files:
        passes = [e for e in json_lines(path) if e.get("event") == "pass"]
        for e in passes:
            samples += e["samples"]
            if e.get("test_accuracy") is not None:
                acc = e["test_accuracy"]
                if reached is None and acc >= target:
                    reached = e["elapsed_seconds"]
        if passes:
            end = max(end, passes[-1]["elapsed_seconds"])
    return {"system": name, "samples_per_sec": samples / end,
            "seconds_to_target": reached, "final_accuracy": acc,
            "seconds": end}


def ddp_run(path):
    summary = [e for e in json_lines(path) if e.get("event") == "summary"]
    if not summary:
        raise SystemExit(f"summarize.py: no summary line in {path}")
    s = summary[-1]
    return {"system": "ddp", "samples_per_sec": s["samples_per_sec"],
            "seconds_to_target": s["seconds_to_target"],
            "final_accuracy": s["final_accuracy"], "seconds": s["seconds"]}


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(path):
    runs = json_lines(path)
    rows = {}
    for r in runs:
        rows.setdefault(r["system"], []).append(r)
    fmt = "{:<10} {:>5} {:>14} {:>18} {:>16} {:>10}"
    print(fmt.format("system", "runs", "samples/s", "s to target",
                     "final accuracy", "seconds"))
    med = {}
    for system in rows:
        rs = rows.get(system, [])
        if not rs:
            continue
        m = {k: median_or_none([r[k] for r in rs])
             for k in ("samples_per_sec", "seconds_to_target",
                       "final_accuracy", "seconds")}
        reached = sum(1 for r in rs if r["seconds_to_target"] is not None)
        med[system] = m
        print(fmt.format(
            system, len(rs), f"{m['samples_per_sec']:.0f}",
            (f"{m['seconds_to_target']:.1f}" if m["seconds_to_target"]
             else "-") + f" ({reached}/{len(rs)})",
            f"{m['final_accuracy']:.4f}", f"{m['seconds']:.1f}"))
    d = med.get("ddp")
    for system, f in med.items():
        if system == "ddp" or d is None:
            continue
        print(f"{system}/ddp samples/s: "
              f"{f['samples_per_sec'] / d['samples_per_sec']:.2f}x")
        if f["seconds_to_target"] and d["seconds_to_target"]:
            print(f"{system}/ddp time to target: "
                  f"{f['seconds_to_target'] / d['seconds_to_target']:.2f}x")


def main(argv):
    if len(argv) in (3, 4) and argv[0] == "fabps":
        print(json.dumps(fabps_run(argv[1], float(argv[2]), *argv[3:])))
    elif len(argv) == 2 and argv[0] == "ddp":
        print(json.dumps(ddp_run(argv[1])))
    elif len(argv) == 2 and argv[0] == "table":
        table(argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

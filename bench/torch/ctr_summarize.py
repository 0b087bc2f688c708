#!/usr/bin/python3
"""Results of bench/run_ctr_bench.sh, one JSON line per run, and its table.

  ctr_summarize.py fabps RUN_DIR SYSTEM LOAD   a fabps-launch --model ctr run
  ctr_summarize.py reference OUT SYSTEM LOAD   a bench/torch/ctr_reference.py
                                               run's output
  ctr_summarize.py table RESULTS.jsonl         medians per system, ratios

A fabps run's samples/s is, as in bench/ctr_bench.sh, the sum over its
trainers of training impressions over training time (the "pass" lines'
seconds minus eval_seconds, docs/formats/metrics_line.md); its final AUC is
the last pass line's test_auc. The reference's are its summary line's (the
same definition). LOAD: the 1-minute load average before the run.
"""

import glob
import json
import sys

from summarize import json_lines, median_or_none


def fabps_run(run_dir, system, load):
    files = sorted(glob.glob(f"{run_dir}/trainer-*.metrics"))
    if not files:
        raise SystemExit(f"ctr_summarize.py: no metrics files in {run_dir}")
    rate, auc = 0.0, None
    for path in files:
        samples, secs = 0, 0.0
        for j in json_lines(path):
            if j.get("event") != "pass":
                continue
            samples += j["samples"]
            secs += j["seconds"] - (j.get("eval_seconds") or 0.0)
            if j.get("test_auc") is not None:
                auc = j["test_auc"]
        rate += samples / secs if secs > 0 else 0.0
    return {"system": system, "samples_per_sec": round(rate),
            "final_auc": None if auc is None else round(auc, 6),
            "seconds_to_target": None, "load": load}


def reference_run(path, system, load):
    summary = [j for j in json_lines(path) if j.get("event") == "summary"]
    if not summary:
        raise SystemExit(f"ctr_summarize.py: no summary line in {path}")
    s = summary[-1]
    return {"system": system, "samples_per_sec": s["samples_per_sec"],
            "final_auc": s["final_auc"],
            "seconds_to_target": s["seconds_to_target"], "load": load}


def table(path):
    by_system = {}
    for r in json_lines(path):
        by_system.setdefault(r["system"], []).append(r)
    med = {s: {k: median_or_none([r[k] for r in rs]) for k in
               ("samples_per_sec", "final_auc", "seconds_to_target")}
           for s, rs in by_system.items()}
    refs = [s for s in med if s.startswith("reference")]
    best = max(refs, key=lambda s: med[s]["samples_per_sec"], default=None)
    print("| system | samples/s (runs) | median samples/s | final test AUC "
          "(median) | s to 0.97 planted | / best reference | load before "
          "each run |")
    print("|---|---|---|---|---|---|---|")
    for s, rs in by_system.items():
        m = med[s]
        ratio = "-"
        if best and med[best]["samples_per_sec"]:
            r = m["samples_per_sec"] / med[best]["samples_per_sec"]
            ratio = f"{r:.2f}x"
        auc = "-" if m["final_auc"] is None else f"{m['final_auc']:.4f}"
        if best and m["final_auc"] is not None and \
                med[best]["final_auc"] is not None and s != best:
            auc += f" ({m['final_auc'] - med[best]['final_auc']:+.4f})"
        tt = ("-" if m["seconds_to_target"] is None
              else f"{m['seconds_to_target']:.1f}")
        print(f"| {s}{' (best)' if s == best else ''} | "
              f"{', '.join(str(r['samples_per_sec']) for r in rs)} | "
              f"**{m['samples_per_sec']:.0f}** | {auc} | {tt} | {ratio} | "
              f"{', '.join(str(r['load']) for r in rs)} |")


def main(argv):
    if len(argv) == 4 and argv[0] == "fabps":
        print(json.dumps(fabps_run(*argv[1:])))
    elif len(argv) == 4 and argv[0] == "reference":
        print(json.dumps(reference_run(*argv[1:])))
    elif len(argv) == 2 and argv[0] == "table":
        table(argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

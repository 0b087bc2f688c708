"""Python push+pull against the C++ one, on the same provider.

  PYTHONPATH=build/python /usr/bin/python3 bench/python/python_pushpull.py \
      [--build build] [--providers "tcp;ofi_rxm,shm"] [--repeat 5]

Measures what bench/trainer/pushpull_bench.cc measures for one trainer and
one pserver at 64 MiB (one float32 parameter, SGD with lr 2^-10, blocks of
2^20 elements): steps of push (SendGrads + Wait) then pull (GetParams)
after warm-up steps, push+pull GB/s = 2 x bytes x steps / wall time of the
measured steps. The Python side does it through fabps.PServerClient on
numpy arrays; the C++ side is fabps_pushpull_bench --json. The two run
alternately, --repeat times each, each run on a fresh pserver; the medians
are compared: ratio = Python / C++ (target >= 0.9). Results are verified:
after K pushes of ones every element is exactly -K/1024.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import fabps

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
from pserver_procs import PServerProcs  # noqa: E402 - the tests' helper

MIB = 64
LR = 1.0 / 1024
BLOCK = 1 << 20


def python_run(provider, steps, warmup):
    n = (MIB << 20) // 4
    with tempfile.TemporaryDirectory() as d:
        ps = PServerProcs(provider, 1, d).start_all()
        try:
            with fabps.PServerClient(addresses=ps.addresses,
                                     provider=provider,
                                     rule=fabps.Rule("sgd", lr=LR),
                                     block_elements=BLOCK) as c:
                w = np.zeros(n, np.float32)
                c.init_params({"model": w})
                g = np.ones(n, np.float32)
                for _ in range(warmup):
                    c.push({"model": g}).wait(120)
                    c.pull({"model": w}, 120)
                start = time.perf_counter()
                for _ in range(steps):
                    c.push({"model": g}).wait(120)
                    c.pull({"model": w}, 120)
                wall = time.perf_counter() - start
                want = np.float32(-(steps + warmup) / 1024)
                if not (w == want).all():
                    raise SystemExit(f"verification failed: {w[:4]} != "
                                     f"{want}")
        finally:
            ps.close()
    return 2 * (MIB << 20) * steps / wall / 1e9


def cpp_run(binary, provider, steps, warmup):
    out = subprocess.run(
        [binary, "-p", provider, "--sizes", str(MIB), "--trainers", "1",
         "--pservers", "1", "--steps", str(steps), "--warmup", str(warmup),
         "--block-elements", str(BLOCK), "--apply-threads", "2", "--json"],
        check=True, capture_output=True, text=True, timeout=600).stdout
    rows = [json.loads(line) for line in out.splitlines()
            if line.startswith("{")]
    return rows[-1]["pushpull_GBps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..",
                                                    "build"))
    ap.add_argument("--providers", default="tcp;ofi_rxm,shm")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    os.environ["FABPS_BUILD_DIR"] = os.path.abspath(a.build)
    binary = os.path.join(a.build, "bench", "trainer", "fabps_pushpull_bench")
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"build first: {binary} missing")
    load = open("/proc/loadavg").read().split()[:3]
    print(f"<!-- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load {' '.join(load)}, repeat {a.repeat},"
          f" {a.steps} steps after {a.warmup} -->")
    print("| provider | C++ push+pull GB/s | Python push+pull GB/s | ratio "
          "| target |")
    print("|---|---|---|---|---|")
    for provider in a.providers.split(","):
        cpp, py = [], []
        for _ in range(a.repeat):
            cpp.append(cpp_run(binary, provider, a.steps, a.warmup))
            py.append(python_run(provider, a.steps, a.warmup))
        c, p = statistics.median(cpp), statistics.median(py)
        print(f"| {provider} | {c:.2f} ({' '.join(f'{x:.2f}' for x in cpp)})"
              f" | {p:.2f} ({' '.join(f'{x:.2f}' for x in py)}) | "
              f"{p / c:.2f}x | >= 0.9x |", flush=True)


if __name__ == "__main__":
    main()

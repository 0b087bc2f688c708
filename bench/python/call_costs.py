"""What one training step of a small model costs the Python binding, call by
call: the Fashion-MNIST MLP's six tensors (784-256-128-10, float32, Adam,
blocks of 65536 elements: nine blocks) on two real pservers, pushed per layer
(output layer first, as fabps.torch does during backward) and waited for,
then pulled per layer and waited for. No model runs: what is left is the
binding, the trainer library, the fabric and the pservers.

  PYTHONPATH=build/python /usr/bin/python3 bench/python/call_costs.py \\
      [--provider "tcp;ofi_rxm"] [--steps 2000]

Prints the wall time of a step and the medians of: one push start (the
`push` call itself), the wait for a step's three pushes, one pull start
(`pull_async`) and the wait for the three pulls. The pservers are this
build's (FABPS_BUILD_DIR or ../../build), so a client of another build
(PYTHONPATH) can be compared against the same pservers.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import fabps

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
from pserver_procs import PServerProcs  # noqa: E402 - the tests' helper

SHAPES = {"w1": (256, 784), "b1": (256,), "w2": (128, 256), "b2": (128,),
          "w3": (10, 128), "b3": (10,)}
LAYERS = [("w3", "b3"), ("w2", "b2"), ("w1", "b1")]  # backward order


def run(provider, steps, warmup):
    with tempfile.TemporaryDirectory() as d:
        ps = PServerProcs(provider, 2, d).start_all()
        try:
            with fabps.PServerClient(addresses=ps.addresses, provider=provider,
                                     rule=fabps.Rule("adam", lr=1e-3),
                                     block_elements=65536) as c:
                params = {k: np.zeros(v, np.float32) for k, v in SHAPES.items()}
                grads = {k: np.ones(v, np.float32) for k, v in SHAPES.items()}
                c.init_params(params)
                push_start, push_wait, pull_start, pull_wait = [], [], [], []
                begin = None
                for i in range(warmup + steps):
                    if i == warmup:
                        begin = time.perf_counter()
                    t0 = time.perf_counter()
                    hs = [c.push({n: grads[n] for n in layer})
                          for layer in LAYERS]
                    t1 = time.perf_counter()
                    for h in hs:
                        h.wait(30)
                    t2 = time.perf_counter()
                    hs = [c.pull_async({n: params[n] for n in layer})
                          for layer in reversed(LAYERS)]
                    t3 = time.perf_counter()
                    for h in hs:
                        h.wait(30)
                    t4 = time.perf_counter()
                    if i >= warmup:
                        push_start.append((t1 - t0) / len(LAYERS))
                        push_wait.append(t2 - t1)
                        pull_start.append((t3 - t2) / len(LAYERS))
                        pull_wait.append(t4 - t3)
                wall = time.perf_counter() - begin
        finally:
            ps.close()
    us = lambda xs: statistics.median(xs) * 1e6  # noqa: E731
    return {"provider": provider, "steps": steps,
            "step_us": wall / steps * 1e6,
            "push_start_us": us(push_start), "push_wait_us": us(push_wait),
            "pull_start_us": us(pull_start), "pull_wait_us": us(pull_wait)}


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--provider", default="tcp;ofi_rxm")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=50)
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be >= 1")
    r = run(args.provider, args.steps, args.warmup)
    print("%(provider)s: %(steps)d steps, step %(step_us).0f us; push start "
          "%(push_start_us).0f us, 3 pushes waited %(push_wait_us).0f us; "
          "pull start %(pull_start_us).0f us, 3 pulls waited "
          "%(pull_wait_us).0f us (medians)" % r)


if __name__ == "__main__":
    main()

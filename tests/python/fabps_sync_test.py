"""Sync SGD from Python: fabps.PServerClient.push(..., step=s) against real
fabps-pserver processes in --mode sync (docs/sync.md).

Run from ctest (python.fabps_package), or by hand:
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/fabps_sync_test.py
"""

import threading

import numpy as np
import pytest

import fabps
from pserver_procs import PServerProcs

BLOCK = 1000
LR = 0.25  # with the integer gradients below every value stays exact
STEPS = 4


@pytest.fixture(params=["tcp;ofi_rxm", "shm"])
def sync_cluster(request, tmp_path):
    ps = PServerProcs(request.param, 2, tmp_path,
                      extra=["--mode", "sync", "--num-trainers", "2"]).start_all()
    yield ps
    ps.close()


def client(ps, trainer_id):
    return fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                               trainer_id=trainer_id,
                               rule=fabps.Rule("sgd", lr=LR),
                               block_elements=BLOCK)


def grad(k, s, n):
    return ((np.arange(n) * (k + 2) + s) % 9 - 4).astype(np.float32)


def test_two_trainers_apply_the_sum_of_each_step(sync_cluster):
    n = 3 * BLOCK + 5
    init = np.arange(n, dtype=np.float32)
    a, b = client(sync_cluster, 11), client(sync_cluster, 12)
    try:
        assert a.init_params({"w": init}) is True
        assert a.sync_step() == 0
        seen = {0: [], 1: []}
        errors = []

        def run(c, k):
            try:
                for s in range(STEPS):
                    c.push({"w": grad(k, s, n)}, step=s).wait()
                    w = np.zeros(n, np.float32)
                    c.pull({"w": w})
                    seen[k].append(w)
            except Exception as e:  # reported below, in the test's thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=(c, k))
                   for k, c in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        want = init.copy()
        for s in range(STEPS):
            want = want - np.float32(LR) * (grad(0, s, n) + grad(1, s, n))
            np.testing.assert_array_equal(seen[0][s], want)
            np.testing.assert_array_equal(seen[1][s], want)
        assert b.sync_step() == STEPS
        # A step-less push and a stale step are refused.
        with pytest.raises(fabps.FailedPrecondition):
            a.push({"w": grad(0, 0, n)})
        with pytest.raises(fabps.FailedPrecondition):
            a.push({"w": grad(0, 0, n)}, step=0).wait()
        with pytest.raises(fabps.InvalidArgument):
            a.push({"w": grad(0, 0, n)}, step=-1)
    finally:
        a.close()
        b.close()


def test_two_trainers_apply_the_sum_of_each_steps_rows(sync_cluster):
    # 600 rows x 4 in blocks of BLOCK // 4 = 250 rows: 3 blocks; trainer 1
    # touches block 0 only and sends empty shares of the other two, and
    # nothing at all in the last step.
    rows, dim = 600, 4
    init = np.arange(rows * dim, dtype=np.float32).reshape(rows, dim)
    a, b = client(sync_cluster, 21), client(sync_cluster, 22)
    try:
        assert a.init_params({"emb": init}) is True
        ids = {0: np.array([5, 300, 599, 5, 42], np.int64),
               1: np.array([42, 7, 99], np.int64)}

        def vals(k, s):
            n = len(ids[k])
            return (np.arange(n * dim) % 5 + k + s).astype(
                np.float32).reshape(n, dim)

        errors = []

        def run(c, k):
            try:
                for s in range(STEPS):
                    c.send_rows("emb", ids[k], vals(k, s), step=s).wait()
                # An empty share: nothing of this trainer in step STEPS.
                empty = np.zeros((0, dim), np.float32)
                c.send_rows("emb", np.zeros(0, np.int64) if k else ids[k],
                            empty if k else vals(k, STEPS),
                            step=STEPS).wait()
            except Exception as e:  # reported below, in the test's thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=(c, k))
                   for k, c in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        want = init.copy()
        for s in range(STEPS + 1):
            for k in (0, 1):
                if s == STEPS and k == 1:
                    continue
                np.subtract.at(want, ids[k], np.float32(LR) * vals(k, s))
        got = np.zeros_like(init)
        a.pull({"emb": got})
        np.testing.assert_array_equal(got, want)
        assert b.sync_step() == STEPS + 1
        with pytest.raises(fabps.FailedPrecondition):
            a.send_rows("emb", ids[0], vals(0, 0))  # no step in sync mode
        with pytest.raises(fabps.InvalidArgument):
            a.send_rows("emb", ids[0], vals(0, 0), step=-1)
    finally:
        a.close()
        b.close()

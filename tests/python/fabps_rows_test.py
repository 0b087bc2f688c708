"""fabps.PServerClient.send_rows / get_rows on real fabps-pserver processes.

Run from ctest (python.fabps_package), or by hand:
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/fabps_rows_test.py
"""

import numpy as np
import pytest

import fabps
from pserver_procs import PServerProcs

PROVIDERS = ["tcp;ofi_rxm", "shm"]
DIM = 4
BLOCK = 1000          # elements per block: 250 rows, so the table spans
ROWS = 4 * 250 + 17   # 5 blocks over both pservers
LR = 0.5              # exact in float32 for the values used


@pytest.fixture(params=PROVIDERS)
def ps(request, tmp_path):
    procs = PServerProcs(request.param, 2, tmp_path).start_all()
    yield procs
    procs.close()


def table():
    return (np.arange(ROWS * DIM, dtype=np.float32) / 2).reshape(ROWS, DIM)


def client(ps):
    return fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                               rule=fabps.Rule("sgd", lr=LR),
                               block_elements=BLOCK)


def test_rows_push_and_pull_exact_values(ps):
    init = table()
    with client(ps) as c:
        c.init_params({"emb": init, "b": np.zeros(3, np.float32)})
        # Any order, repeats summed, rows on every block and both pservers.
        ids = np.array([ROWS - 1, 3, 260, 3, 0, 999, 520, 3], np.int64)
        grads = (np.arange(ids.size * DIM) % 5).astype(np.float32)
        grads = grads.reshape(ids.size, DIM)
        c.send_rows("emb", ids, grads).wait()
        want = init.copy()
        np.subtract.at(want, ids, LR * grads)
        # uint64 ids, a flat output, repeats in the pull too.
        pull_ids = np.array([3, ROWS - 1, 3, 1, 520], np.uint64)
        out = np.zeros(pull_ids.size * DIM, np.float32)
        c.get_rows("emb", pull_ids, out)
        np.testing.assert_array_equal(
            out.reshape(-1, DIM), want[pull_ids.astype(np.int64)])
        # The dense pull of the table agrees: no other row was touched.
        whole = np.zeros_like(init)
        c.pull({"emb": whole})
        np.testing.assert_array_equal(whole, want)
        # A list of ids, the async form, an empty call.
        out2 = np.zeros((2, DIM), np.float32)
        h = c.get_rows_async("emb", [0, 999], out2)
        h.wait()
        assert h.done()
        np.testing.assert_array_equal(out2, want[[0, 999]])
        c.send_rows("emb", np.zeros(0, np.int64),
                    np.zeros((0, DIM), np.float32)).wait()


def test_bad_rows_are_refused_and_send_nothing(ps):
    init = table()
    with client(ps) as c:
        c.init_params({"emb": init, "b": np.zeros(3, np.float32)})
        ids = np.array([1, 2], np.int64)
        good = np.ones((2, DIM), np.float32)
        wide = np.ones((2, 2 * DIM), np.float32)
        cases = {
            "int32 ids": (ids.astype(np.int32), good),
            "float ids": (ids.astype(np.float64), good),
            "values dtype": (ids, good.astype(np.float64)),
            "values size": (ids, np.ones((2, DIM - 1), np.float32)),
            "not contiguous": (ids, wide[:, ::2]),
            "ids not contiguous": (np.arange(4, dtype=np.int64)[::2], good),
            "id out of range": (np.array([1, ROWS], np.int64), good),
            "negative id": (np.array([-1, 2], np.int64), good),
        }
        for why, (bad_ids, bad_values) in cases.items():
            with pytest.raises(ValueError, match="emb") as e:
                c.send_rows("emb", bad_ids, bad_values)
            assert isinstance(e.value, fabps.InvalidArgument), why
            with pytest.raises(fabps.InvalidArgument, match="emb"):
                c.get_rows("emb", bad_ids, bad_values)
        with pytest.raises(fabps.InvalidArgument, match="'b'.*rank 1"):
            c.send_rows("b", np.array([0], np.int64), np.ones(1, np.float32))
        with pytest.raises(fabps.NotFound, match="nope"):
            c.send_rows("nope", ids, good)
        ro = np.zeros((2, DIM), np.float32)
        ro.flags.writeable = False
        with pytest.raises(fabps.InvalidArgument, match="read-only"):
            c.get_rows("emb", ids, ro)
        # Nothing of the refused pushes arrived.
        whole = np.zeros_like(init)
        c.pull({"emb": whole})
        np.testing.assert_array_equal(whole, init)

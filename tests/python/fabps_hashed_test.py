"""Hashed embedding tables (fabps.HashedTable, protocol/hashed_table.h) on
real fabps-pserver processes: rows keyed by any 64-bit id, initial rows,
admission at exactly k pushes, eviction by TTL and by budget, recovery from a
checkpoint bit for bit, and the export of a table as ids and values.

Run from ctest (python.fabps_package), or by hand:
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/fabps_hashed_test.py
"""

import json
import struct
import subprocess
import time

import numpy as np
import pytest

import fabps
from pserver_procs import PServerProcs, built_binary

PROVIDERS = ["tcp;ofi_rxm", "shm"]
DIM = 4
LR = 0.5
M64 = (1 << 64) - 1


# --- an independent implementation of the initial rows (the contract in
# protocol/hashed_table.h and docs/formats/hashed_table.md) ---------------

def mix64(x):
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & M64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 31
    return x


def draw(seed, id_, k):
    return mix64(mix64(seed ^ 0x9e3779b97f4a7c15) ^ mix64(id_) ^
                 ((k * 0xd1b54a32d192ed03) & M64))


def uniform_row(seed, scale, id_):
    unit = [(draw(seed, int(id_), j) >> 11) * 2.0 ** -53 for j in range(DIM)]
    return np.array([(2 * u - 1) * scale for u in unit], np.float32)


# --- model files ------------------------------------------------------------

ST_TYPES = {"F32": np.float32, "U64": np.uint64}


def read_safetensors(path):
    """name -> array, and the metadata, straight from the bytes."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], ST_TYPES[t["dtype"]]) \
            .reshape(t["shape"])
    return out, meta


def export(out, *args):
    """fabps-export --checkpoints ARGS... -o OUT."""
    r = subprocess.run([built_binary("cmd/export/fabps-export"),
                        "--checkpoints"] + [str(a) for a in args] +
                       ["-o", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return read_safetensors(out)


# --- fixtures ---------------------------------------------------------------

def procs(request, tmp_path, n=2, extra=()):
    p = PServerProcs(request.param, n, tmp_path,
                     extra=["--evict-period-ms", "50"] + list(extra))
    p.start_all()
    request.addfinalizer(p.close)
    return p


@pytest.fixture(params=PROVIDERS)
def ps(request, tmp_path):
    return procs(request, tmp_path)


def client(ps, **kw):
    return fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                               rule=fabps.Rule("sgd", lr=LR), **kw)


def pull(c, ids):
    out = np.zeros((len(ids), DIM), np.float32)
    c.get_rows("emb", np.asarray(ids, np.uint64), out)
    return out


def stats(c):
    """Per-table totals over the pservers."""
    total = {}
    for t in c.table_stats():
        for k, v in t.items():
            if isinstance(v, int) and k != "pserver":
                total[k] = total.get(k, 0) + v
    return total


def wait_for(what, pred, show=lambda: "", timeout=30.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}: {show()}"
        time.sleep(0.02)


# --- tests -----------------------------------------------------------------

def test_rows_by_any_id_exact(ps):
    table = fabps.HashedTable(dim=DIM, init="uniform", init_scale=0.25,
                              seed=7, buckets=16)
    with client(ps) as c:
        assert c.init_params({"emb": table, "b": np.zeros(3, np.float32)})
        ids = np.array([0, 1, 2**63 + 5, M64, 123456789012345, 1, 0],
                       np.uint64)
        init = np.stack([uniform_row(7, 0.25, i) for i in ids])
        # A read of ids without rows gives their initial rows, stores none.
        np.testing.assert_array_equal(pull(c, ids), init)
        assert stats(c)["rows"] == 0
        grads = (np.arange(ids.size * DIM) % 7 - 3).astype(np.float32)
        grads = grads.reshape(ids.size, DIM)
        c.send_rows("emb", ids, grads).wait()
        summed = {}  # repeated ids add up before the rule applies once
        for k, i in enumerate(ids.tolist()):
            summed[i] = summed.get(i, 0) + grads[k]
        want = {i: uniform_row(7, 0.25, i) - np.float32(LR) * g
                for i, g in summed.items()}
        got = pull(c, ids)
        for k, i in enumerate(ids.tolist()):
            np.testing.assert_array_equal(got[k], want[i])
        s = stats(c)
        assert s["rows"] == len(set(ids.tolist())) == s["admitted"]
        # int64 ids are the same bits.
        np.testing.assert_array_equal(
            pull(c, ids.view(np.int64)), got)


def test_admission_at_exactly_k(ps):
    table = fabps.HashedTable(dim=DIM, admit_after=3)
    with client(ps) as c:
        c.init_params({"emb": table})
        x = [987654321]
        g = np.ones((1, DIM), np.float32)
        for push in range(1, 3):
            c.send_rows("emb", np.array(x, np.uint64), g).wait()
            np.testing.assert_array_equal(pull(c, x), np.zeros((1, DIM)))
            assert stats(c)["not_admitted"] == push
        c.send_rows("emb", np.array(x, np.uint64), 2 * g).wait()
        np.testing.assert_array_equal(pull(c, x), -LR * 2 * g)
        s = stats(c)
        assert (s["rows"], s["admitted"], s["not_admitted"]) == (1, 1, 2)


def test_eviction_by_ttl(ps):
    table = fabps.HashedTable(dim=DIM, ttl_seconds=1)
    with client(ps) as c:
        c.init_params({"emb": table})
        ids = np.arange(1, 41, dtype=np.uint64) * 1000003
        c.send_rows("emb", ids, np.ones((ids.size, DIM), np.float32)).wait()
        assert stats(c)["rows"] == ids.size
        np.testing.assert_array_equal(pull(c, ids), -LR)
        wait_for("TTL eviction", lambda: stats(c)["rows"] == 0)
        assert stats(c)["evicted_ttl"] == ids.size
        np.testing.assert_array_equal(pull(c, ids), 0)  # initial rows again


def test_eviction_by_budget_keeps_the_newest(request, ps, tmp_path):
    # bytes_per_row of this table as a pserver counts it, from another job.
    request.param = ps.provider
    (tmp_path / "probe").mkdir()
    other = procs(request, tmp_path / "probe")
    with client(other) as c:
        c.init_params({"emb": fabps.HashedTable(dim=DIM, buckets=8)})
        per_row = c.table_stats()[0]["bytes_per_row"]
    # This job's table holds at most 12 rows per pserver.
    table = fabps.HashedTable(dim=DIM, buckets=8, budget_bytes=12 * per_row)
    with client(ps) as c:
        c.init_params({"emb": table})
        batches = [np.arange(b * 100, b * 100 + 20, dtype=np.uint64)
                   for b in range(5)]
        for b in batches:
            c.send_rows("emb", b, np.ones((b.size, DIM), np.float32)).wait()
            time.sleep(0.01)  # distinct update times for each batch
        wait_for("budget eviction",
                 lambda: all(t["rows"] <= 12 for t in c.table_stats()),
                 lambda: c.table_stats())
        s = stats(c)
        assert s["evicted_budget"] == 100 - s["rows"]
        logs = "".join(open(ps.log(i)).read() for i in range(2))
        assert "'emb' is over its budget" in logs
        # What is left is the most recently updated: the last batch wins.
        last = pull(c, batches[-1])
        assert (last == -LR).all(axis=1).sum() >= min(20, s["rows"]) - 4
        assert (pull(c, batches[0]) == 0).all()


def test_recovery_and_export_bit_exact(request, tmp_path):
    request.param = "tcp;ofi_rxm"
    ps = procs(request, tmp_path)
    table = fabps.HashedTable(dim=DIM, init="normal", init_scale=0.1, seed=3,
                              buckets=8)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 2**63, 300, dtype=np.int64).astype(np.uint64)
    with fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                             rule=fabps.Rule("adagrad", lr=0.1)) as c:
        c.init_params({"emb": table, "w": np.ones(5, np.float32)})
        for step in range(3):
            g = rng.standard_normal((ids.size, DIM)).astype(np.float32)
            c.send_rows("emb", ids, g).wait()
        before = pull(c, ids)
        rows_before = stats(c)["rows"]
    for i in range(2):
        assert ps.stop(i) == 0  # SIGTERM: a final checkpoint
        ps.start(i)
    with fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                             rule=fabps.Rule("adagrad", lr=0.1)) as c:
        np.testing.assert_array_equal(pull(c, ids), before)
        assert stats(c)["rows"] == rows_before == len(set(ids.tolist()))
        # AdaGrad's state came back too: one more step equals on both.
        g = np.ones((ids.size, DIM), np.float32)
        c.send_rows("emb", ids, g).wait()
        after = pull(c, ids)
    out = tmp_path / "model.safetensors"
    export(out, tmp_path / "ckpt-0", tmp_path / "ckpt-1",
           "--with-optimizer-state", tmp_path / "st")
    tensors, meta = read_safetensors(out)
    got_ids, values = tensors["emb.ids"], tensors["emb.values"]
    assert got_ids.dtype == np.uint64 and int(meta["fabps.reached_ms"]) > 0
    assert list(got_ids) == sorted(set(ids.tolist()))
    # The checkpoints hold the state before the last push (saved at stop).
    index = {int(i): k for k, i in enumerate(got_ids)}
    for k, i in enumerate(ids.tolist()):
        np.testing.assert_array_equal(values[index[i]], before[k])
    assert not np.array_equal(after, before)


def test_a_table_starts_from_an_exported_model(request, tmp_path):
    """A table exported from checkpoints (emb.ids, emb.values) starts a
    job on another pserver count (HashedTable(ids=, values=)): every row
    reads back bit for bit, each is held from the start (a first push
    applies to it, admission or not), and ids read outside it are initial
    rows. Repeated ids and values of the wrong shape are refused."""
    request.param = "tcp;ofi_rxm"
    ps = procs(request, tmp_path)
    rng = np.random.default_rng(9)
    ids = rng.integers(0, 2**64 - 1, 200, dtype=np.uint64)
    with client(ps) as c:
        c.init_params({"emb": fabps.HashedTable(dim=DIM, buckets=8)})
        c.send_rows("emb", ids, rng.standard_normal(
            (ids.size, DIM)).astype(np.float32)).wait()
        trained = pull(c, ids)
    for i in range(2):
        assert ps.stop(i) == 0  # SIGTERM: a final checkpoint
    tensors, _ = export(tmp_path / "m.safetensors", tmp_path / "ckpt-0",
                        tmp_path / "ckpt-1")

    other = tmp_path / "three"
    other.mkdir()
    ps3 = procs(request, other, n=3)
    table = fabps.HashedTable(dim=DIM, buckets=8, admit_after=5,
                              ids=tensors["emb.ids"],
                              values=tensors["emb.values"])
    assert table.rows == len(set(ids.tolist()))
    with client(ps3) as c:
        c.init_params({"emb": table})
        np.testing.assert_array_equal(pull(c, ids), trained)
        s = stats(c)
        assert s["rows"] == s["admitted"] == table.rows
        c.send_rows("emb", ids[:1], np.ones((1, DIM), np.float32)).wait()
        np.testing.assert_array_equal(pull(c, ids[:1]), trained[:1] - LR)
        np.testing.assert_array_equal(pull(c, [12345]), 0)  # zeros: initial
    ps3.close()

    with pytest.raises(ValueError, match="shape"):
        fabps.HashedTable(dim=DIM, ids=[1, 2],
                          values=np.zeros((2, DIM + 1), np.float32))
    again = tmp_path / "again"
    again.mkdir()
    ps1 = procs(request, again, n=1)
    with client(ps1) as c:
        with pytest.raises(fabps.InvalidArgument, match="id 7 is given twice"):
            c.init_params({"emb": fabps.HashedTable(
                dim=DIM, ids=np.array([7, 7], np.int64),
                values=np.zeros((2, DIM), np.float32))})


def test_bad_hashed_calls_are_refused(ps):
    with client(ps) as c:
        c.init_params({"emb": fabps.HashedTable(dim=DIM), "w": np.zeros(2, np.float32)})
        with pytest.raises(fabps.InvalidArgument):
            c.send_rows("emb", np.array([1, 2], np.uint64),
                        np.ones((2, DIM + 1), np.float32))
        with pytest.raises(fabps.InvalidArgument, match="hashed table"):
            c.pull({"emb": np.zeros(DIM, np.float32)})
        with pytest.raises(fabps.NotFound):
            c.send_rows("nope", np.array([1], np.uint64),
                        np.ones((1, DIM), np.float32))
        # The server goes on serving.
        c.send_rows("emb", np.array([5], np.uint64),
                    np.ones((1, DIM), np.float32)).wait()
        np.testing.assert_array_equal(pull(c, [5]), -LR)
    with pytest.raises(ValueError):
        fabps.HashedTable(dim=0)
    with pytest.raises(TypeError):
        fabps.HashedTable(dim=4, dtype="int32")


def test_delta_chain_equals_the_next_full_export(request, tmp_path):
    """fabps-export --since: a full export followed by deltas (rows updated
    and ids evicted since the previous export's reached_ms) rebuilds every
    later full export exactly."""
    request.param = "tcp;ofi_rxm"
    ps = procs(request, tmp_path)
    table = fabps.HashedTable(dim=DIM, ttl_seconds=1, buckets=8,
                              init="uniform", seed=1)
    rounds = [np.arange(1, 31), np.arange(20, 51), np.arange(40, 61)]
    with client(ps) as c:
        c.init_params({"emb": table, "w": np.zeros(3, np.float32)})
        serving, reached = None, None
        for r, live in enumerate(rounds):
            live = (live * 7919).astype(np.uint64)
            g = np.full((live.size, DIM), 0.25, np.float32)
            # Push the live ids until every other row has expired.
            c.send_rows("emb", live, g).wait()
            wait_for("the other rows to expire",
                     lambda: (c.send_rows("emb", live, g).wait() or True) and
                     stats(c)["rows"] == live.size)
            c.save_model(str(tmp_path / f"e{r}"))
            full, meta = export(tmp_path / f"full{r}.st", tmp_path / f"e{r}")
            if serving is None:
                serving = dict(zip(full["emb.ids"].tolist(),
                                   full["emb.values"]))
            else:
                delta, dmeta = export(tmp_path / f"delta{r}.st",
                                      tmp_path / f"e{r}", "--since", reached)
                assert dmeta["fabps.since_ms"] == reached
                assert delta["emb.evicted"].size > 0
                for gone in delta["emb.evicted"].tolist():
                    serving.pop(gone, None)
                serving.update(zip(delta["emb.ids"].tolist(),
                                   delta["emb.values"]))
                np.testing.assert_array_equal(delta["w"], full["w"])
            assert sorted(serving) == full["emb.ids"].tolist()
            for k, i in enumerate(full["emb.ids"].tolist()):
                np.testing.assert_array_equal(serving[i], full["emb.values"][k])
            reached = meta["fabps.reached_ms"]


def test_reshard_2_3_1_bit_identical(request, tmp_path):
    """fabps-reshard moves whole buckets: a job of 2 pservers re-cut for 3,
    then 1, exports the same ids, rows and optimizer state,
    and the resharded pservers serve the same rows."""
    request.param = "tcp;ofi_rxm"
    (tmp_path / "n2").mkdir()
    ps = procs(request, tmp_path / "n2")
    table = fabps.HashedTable(dim=DIM, buckets=16, init="normal", seed=9,
                              ttl_seconds=3600)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 2**63, 500, dtype=np.int64).astype(np.uint64)
    rule = fabps.Rule("adam", lr=0.01)
    with fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                             rule=rule) as c:
        c.init_params({"emb": table, "w": np.ones(7, np.float32)})
        for _ in range(2):
            c.send_rows("emb", ids, rng.standard_normal(
                (ids.size, DIM)).astype(np.float32)).wait()
        before = pull(c, ids)
    for i in range(2):
        assert ps.stop(i) == 0
    dirs = [tmp_path / "n2" / f"ckpt-{i}" for i in range(2)]
    want, _ = export(tmp_path / "n2.st", *dirs, "--with-optimizer-state",
                     tmp_path / "n2.state")
    want_state, _ = read_safetensors(tmp_path / "n2.state")
    for count in (3, 1):
        out = tmp_path / f"n{count}"
        r = subprocess.run([built_binary("cmd/reshard/fabps-reshard"),
                            "--checkpoints"] + [str(d) for d in dirs] +
                           ["--out", str(out), "--num-pservers", str(count)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        dirs = [out / f"ps-{j}" for j in range(count)]
        got, _ = export(tmp_path / f"n{count}.st", *dirs,
                        "--with-optimizer-state", tmp_path / f"n{count}.state")
        got_state, _ = read_safetensors(tmp_path / f"n{count}.state")
        assert sorted(got) == sorted(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], name)
        for name in want_state:
            np.testing.assert_array_equal(got_state[name], want_state[name])
    # The single pserver serves the rows as they were.
    for j in range(1):
        (tmp_path / "n1" / f"ps-{j}").rename(tmp_path / "n1" / f"ckpt-{j}")
    one = PServerProcs(ps.provider, 1, tmp_path / "n1",
                       extra=["--evict-period-ms", "50"]).start_all()
    request.addfinalizer(one.close)
    with fabps.PServerClient(addresses=one.addresses, provider=one.provider,
                             rule=rule) as c:
        np.testing.assert_array_equal(pull(c, ids), before)

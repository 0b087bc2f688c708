"""The fabps Python package on real fabps-pserver processes.

Run from ctest (python.fabps_package), or by hand:
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/fabps_package_test.py
FABPS_BUILD_DIR (default: build/ of this checkout) locates fabps-pserver.
"""

import builtins
import gc
import mmap
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import fabps
from pserver_procs import PServerProcs

PROVIDERS = ["tcp;ofi_rxm", "shm"]
BLOCK = 1000  # elements per block: the parameters below span pservers
LR = 0.25     # exact in float32: w - LR * g is exact for the values used


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param


@pytest.fixture
def cluster(provider, tmp_path):
    procs = {}

    def make(n=2):
        procs["c"] = PServerProcs(provider, n, tmp_path).start_all()
        return procs["c"]

    yield make
    if "c" in procs:
        procs["c"].close()


def client(ps, **kw):
    kw.setdefault("rule", fabps.Rule("sgd", lr=LR))
    kw.setdefault("block_elements", BLOCK)
    return fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                               **kw)


def params():
    # Integers and halves: exactly representable before and after updates.
    return {"w": np.arange(3 * BLOCK + 17, dtype=np.float32) / 2,
            "b": np.full(10, 4.0, np.float32),
            "d": np.linspace(-8, 8, 2 * BLOCK + 1).astype(np.float64).round()}


def test_push_pull_exact_values(cluster):
    ps = cluster(2)
    init = params()
    with client(ps) as c:
        assert c.provider == ps.provider
        assert c.init_params(init) is True
        grads = {k: (np.arange(v.size) % 7).astype(v.dtype) for k, v in
                 init.items()}
        c.push(grads).wait()
        got = {k: np.zeros_like(v) for k, v in init.items()}
        c.pull(got)
        for k in init:
            np.testing.assert_array_equal(got[k], init[k] - LR * grads[k])
        # A list of pairs works too, and a pull may name a subset.
        b = np.zeros(10, np.float32)
        c.pull([("b", b)])
        np.testing.assert_array_equal(b, got["b"])


def test_push_pull_in_one_transfer(cluster):
    ps = cluster(2)
    init = params()
    with client(ps) as c:
        assert c.init_params(init) is True
        want = {k: v.copy() for k, v in init.items()}
        got = {k: np.zeros_like(v) for k, v in init.items()}
        for step in range(3):
            grads = {k: ((np.arange(v.size) + step) % 5).astype(v.dtype)
                     for k, v in init.items()}
            c.push_pull(grads, got).wait()
            for k in init:  # each step's values, read after its apply
                want[k] -= LR * grads[k]
                np.testing.assert_array_equal(got[k], want[k])
        # Pushed only ("d"), pulled only ("b"); bad names move nothing.
        b = np.zeros(10, np.float32)
        w = np.zeros_like(init["w"])
        c.push_pull({"d": np.ones_like(init["d"]), "w": np.ones_like(w)},
                    {"w": w, "b": b}).wait()
        np.testing.assert_array_equal(w, want["w"] - LR)
        np.testing.assert_array_equal(b, want["b"])
        with pytest.raises(fabps.NotFound):
            c.push_pull({"w": np.ones_like(w)}, {"nope": b})
        d = np.zeros_like(init["d"])
        c.pull({"d": d, "w": w})
        np.testing.assert_array_equal(d, want["d"] - LR)
        np.testing.assert_array_equal(w, want["w"] - LR)


def test_torch_tensors_in_place(cluster):
    torch = pytest.importorskip("torch")
    ps = cluster(1)
    w = torch.arange(2 * BLOCK + 3, dtype=torch.float32, requires_grad=True)
    with client(ps) as c:
        assert c.init_params({"w": w})
        g = torch.full_like(w, 2.0)
        c.push({"w": g}).wait()
        out = torch.zeros_like(w)
        ptr = out.data_ptr()
        c.pull({"w": out})
        assert out.data_ptr() == ptr  # filled in place, not replaced
        assert torch.equal(out, w.detach() - LR * 2.0)
        # Pulling into the parameter itself (a leaf that requires grad).
        c.pull({"w": w})
        assert torch.equal(w.detach(), out)


def test_async_handles(cluster):
    ps = cluster(2)
    init = params()
    with client(ps) as c:
        c.init_params(init)
        g = np.ones_like(init["w"])
        handles = [c.push({"w": g}) for _ in range(5)]
        for h in handles:
            h.wait()
            assert h.done()
        handles[0].wait()  # waiting again returns the same result
        out = np.zeros_like(init["w"])
        b = np.zeros_like(init["b"])
        pulls = [c.pull_async({"w": out}), c.pull_async({"b": b})]
        for h in pulls:
            h.wait()
        np.testing.assert_array_equal(out, init["w"] - 5 * LR)
        np.testing.assert_array_equal(b, init["b"])


def test_buffers_are_held_until_the_transfer_is_over(cluster):
    ps = cluster(1)
    init = params()
    with client(ps) as c:
        c.init_params(init)
        c.push({"w": np.zeros_like(init["w"])}).wait()  # registered
        ps.freeze(0)
        g = np.ones_like(init["w"])
        alive = weakref.ref(g)
        h = c.push({"w": g})
        del g, h  # dropped unwaited while the pserver cannot apply it
        gc.collect()
        assert alive() is not None, "freed while the push was in flight"
        assert c._c.in_flight() == 1
        ps.procs[0].send_signal(signal.SIGCONT)
        out = np.zeros_like(init["w"])
        end = time.monotonic() + 30
        while alive() is not None:  # let go once its credit came back
            assert time.monotonic() < end, "never let go"
            c.pull({"w": out})
        assert c._c.in_flight() == 0
        c.pull({"w": out})  # the last pull may have read before the apply
        np.testing.assert_array_equal(out, init["w"] - LR)


@pytest.mark.parametrize("discovery", ["addresses", "store"])
def test_init_election_between_two_trainers(provider, tmp_path, discovery):
    # Without a store pserver 0's init grant decides; with one (the pservers
    # publish their addresses there), the store's election does.
    store = f"local:{tmp_path}/store"
    extra = ["--store", store, "--job", "j"] if discovery == "store" else []
    ps = PServerProcs(provider, 2, tmp_path, extra).start_all()
    mine = params()
    theirs = {k: v + 100 for k, v in params().items()}
    results = {}

    def trainer(tid, values):
        where = ({"store": store, "job": "j"} if discovery == "store" else
                 {"addresses": ps.addresses})
        with fabps.PServerClient(provider=provider, trainer_id=tid,
                                 block_elements=BLOCK, **where) as c:
            results[tid] = (c.init_params(values, timeout=30), values)

    threads = [threading.Thread(target=trainer, args=(1, mine)),
               threading.Thread(target=trainer, args=(2, theirs))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        ps.close()
    assert sorted(r[0] for r in results.values()) == [False, True]
    winner = next(v for won, v in results.values() if won)
    loser = next(v for won, v in results.values() if not won)
    for k in winner:  # the loser's arrays were filled with the winner's
        np.testing.assert_array_equal(loser[k], winner[k])


def test_save_model(cluster, tmp_path):
    ps = cluster(2)
    with client(ps) as c:
        c.init_params(params())
        c.push({"b": np.ones(10, np.float32)}).wait()
        c.save_model(tmp_path / "saved")
    saved = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "saved")
             for f in fs]
    assert saved, "no checkpoint files written"


def test_rule_kinds_are_the_protocols_names():
    assert fabps.Rule.KINDS == ("sgd", "momentum", "nesterov", "adam", "adagrad")
    for kind in fabps.Rule.KINDS:
        assert fabps.Rule(kind).kind == kind
    with pytest.raises(fabps.InvalidArgument, match="adamw.*nesterov"):
        fabps.Rule("adamw")


def test_star_import_keeps_the_builtin_IOError(tmp_path):
    namespace = {"missing": str(tmp_path / "missing")}
    exec("from fabps import *\n"
         "try:\n"
         "    open(missing)\n"
         "except IOError as e:\n"
         "    caught = e\n", namespace)
    assert isinstance(namespace["caught"], FileNotFoundError)
    assert "IOError" not in namespace and "PServerClient" in namespace
    assert not set(fabps.__all__) & set(dir(builtins))
    # The Status code's class is still there, by its name.
    assert fabps.errors.error_class("IOError") is fabps.IOError
    assert issubclass(fabps.IOError, OSError)


@pytest.mark.parametrize("code", ["Unavailable", "TimedOut", "Cancelled",
                                  "IOError"])
def test_a_peer_that_is_gone_or_late_is_one_family(code):
    cls = fabps.errors.error_class(code)  # what the C++ errors raise
    assert cls is getattr(fabps, code)
    with pytest.raises(fabps.PeerError):
        raise cls("from a pserver")


def test_other_errors_are_not_peer_errors():
    for code in ("InvalidArgument", "NotFound", "Corruption", "AlreadyExists",
                 "FailedPrecondition", "Unimplemented", "ResourceExhausted",
                 "PermissionDenied", "SomethingElse"):
        assert not issubclass(fabps.errors.error_class(code), fabps.PeerError)


def test_bad_buffers_are_refused_and_send_nothing(cluster):
    ps = cluster(1)
    init = params()
    with client(ps) as c:
        c.init_params(init)
        good = np.ones_like(init["w"])
        wide = np.ones((init["w"].size, 2), np.float32)
        cases = {
            "not contiguous": wide[:, 0],
            "dtype": np.ones(init["w"].size, np.float64),
            "elements": np.ones(init["w"].size - 1, np.float32),
            "byte order": np.ones(init["w"].size, ">f4"),
            "not a buffer": [1.0] * init["w"].size,
        }
        for why, bad in cases.items():
            with pytest.raises(ValueError, match="'w'") as e:
                c.push([("b", np.ones(10, np.float32)), ("w", bad)])
            assert isinstance(e.value, fabps.InvalidArgument), why
        with pytest.raises(fabps.NotFound, match="'nope'"):
            c.push({"b": np.ones(10, np.float32), "nope": good})
        ro = np.zeros_like(init["w"])
        ro.flags.writeable = False
        with pytest.raises(fabps.InvalidArgument, match="read-only"):
            c.pull({"w": ro})
        with pytest.raises(fabps.InvalidArgument, match="'d'"):
            c.pull({"d": np.zeros(init["d"].size, np.float32)})
        # Nothing of the refused pushes arrived (not even the good "b").
        b = np.zeros(10, np.float32)
        c.pull({"b": b})
        np.testing.assert_array_equal(b, init["b"])
        assert c.registration_stats()["entries"] >= 1


def test_freed_memory_is_forgotten(cluster):
    ps = cluster(1)
    n = 1 << 20  # 4 MiB
    with client(ps) as c:
        c.init_params({"big": np.zeros(n, np.float32),
                       "small": np.zeros(10, np.float32)})

        def mapped(value):
            # Memory of its own mapping: freed (munmap) when the last user
            # goes, and the next mapping of that size lands at its place.
            mm = mmap.mmap(-1, 4 * n)
            a = np.frombuffer(mm, np.float32)
            a[:] = value
            return a

        a = mapped(1.0)
        addr = a.ctypes.data
        c.push({"big": a}).wait()
        before = c.registration_stats()
        del a
        b = mapped(2.0)
        assert b.ctypes.data == addr, "the test needs the address reused"
        c.push({"big": b}).wait()
        after = c.registration_stats()
        # A stale registration would have been a hit at the same address.
        assert after["misses"] == before["misses"] + 1
        assert after["entries"] == before["entries"]
        c.push({"big": b}).wait()  # a live array stays registered
        assert c.registration_stats()["hits"] == after["hits"] + 1
        out = np.zeros(n, np.float32)
        c.pull({"big": out})
        np.testing.assert_array_equal(out, -LR * 5)

        # Memory whose owner cannot be watched (a bytearray) is forgotten
        # as soon as its transfer is over; a numpy array's stays.
        entries = c.registration_stats()["entries"]
        c.push({"small": np.frombuffer(bytearray(40), np.float32)}).wait()
        assert c.registration_stats()["entries"] == entries
        kept = np.ones(10, np.float32)
        c.push({"small": kept}).wait()
        assert c.registration_stats()["entries"] == entries + 1


def test_killed_pserver_errors_then_restart_reconnects(cluster):
    ps = cluster(2)
    init = params()
    with client(ps, rpc_timeout_ms=2000) as c:
        c.init_params(init)
        g = np.ones_like(init["w"])
        c.push({"w": g}).wait()
        ps.kill(1)
        start = time.monotonic()
        with pytest.raises(fabps.Error) as e:
            for _ in range(10):  # a push may still land in a socket buffer
                c.push({"w": g}, timeout=3).wait(timeout=3)
        assert isinstance(e.value, (fabps.Unavailable, fabps.TimedOut)), e
        assert isinstance(e.value, fabps.PeerError), e
        assert time.monotonic() - start < 30
        ps.start(1)  # same port, back from the checkpoint written at init
        c.push({"w": g}, timeout=20).wait(timeout=20)
        out = np.zeros_like(init["w"])
        c.pull({"w": out})
        # Each element saw the steps its block's pserver kept: pserver 0 all
        # of them (at least 2), pserver 1 only the one after the restart.
        steps = (init["w"] - out) / LR
        assert set(np.unique(steps)) <= set(range(1, 13))
        assert steps.min() == 1 and steps.max() >= 2


@pytest.mark.parametrize("mode", ["wait", "call"])
def test_ctrl_c_interrupts_a_blocked_call(provider, tmp_path, mode):
    ps = PServerProcs(provider, 1, tmp_path).start_all()
    child = subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(__file__),
                                      "fabps_child.py"),
         provider, ps.addresses[0], mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        def line(timeout=30):
            ready, _, _ = select.select([child.stdout], [], [], timeout)
            assert ready, "child said nothing"
            return child.stdout.readline().strip()

        if mode == "wait":
            assert line() == "ready"
            ps.freeze(0)
            child.stdin.write("go\n")
            child.stdin.flush()
        assert line() == "blocked"
        time.sleep(0.3)  # into the wait (an earlier SIGINT works as well)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        assert line(10) == "interrupted"
        assert time.monotonic() - sent < 3.0
        if mode == "wait":  # the client goes on once the pserver does
            ps.procs[0].send_signal(signal.SIGCONT)
            child.stdin.write("go\n")
            child.stdin.flush()
            assert line() == "recovered 2"
        assert child.wait(20) == 0
    finally:
        child.kill()
        child.wait()
        ps.close()

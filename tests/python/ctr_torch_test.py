"""The CTR trainer in PyTorch (examples/ctr_torch/) on a real fabps-master
and two fabps-pserver processes, on data from fabps-ctr-gen:

  * one step through fabps.torch.EmbeddingBag over a hashed table gives the
    logits, the rows' gradient and (SGD on the pservers) the new rows of the
    same model over a local torch.nn.EmbeddingBag;
  * the trainer learns: 2 passes over 20000 impressions come within 0.9 of
    the planted model's test AUC, and the hashed table holds the features'
    rows;
  * with --table fixed it is the C++ fabps-ctr-trainer's model (initial
    values, steps, loss and AUC), when that binary is built;
  * its AUC, record parsing and flags.

  FABPS_BUILD_DIR=<build> PYTHONPATH=<build>/python \
      /usr/bin/python3 -m pytest tests/python/ctr_torch_test.py
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import fabps
import fabps.torch
from pserver_procs import PServerProcs, built_binary

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "ctr_torch")
sys.path.insert(0, EXAMPLE)
import ctr_model  # noqa: E402
import trainer as ctr_trainer  # noqa: E402

torch.set_num_threads(1)

PROVIDER = "tcp;ofi_rxm"
FIELDS = 8
VOCAB = 200
TRAIN, TEST = 20000, 5000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """fabps-ctr-gen's shards and planted.json."""
    out = tmp_path_factory.mktemp("ctr")
    subprocess.run([built_binary("cmd/ctr_gen/fabps-ctr-gen"),
                    "--output-dir", str(out), "--train-records", str(TRAIN),
                    "--test-records", str(TEST), "--vocab", str(VOCAB),
                    "--fields", str(FIELDS)],
                   check=True, capture_output=True, timeout=60)
    planted = json.loads((out / "planted.json").read_text())
    return out, planted


class Job:
    """A fabps-master and two pservers on loopback."""

    def __init__(self, tmp_path):
        self.pservers = PServerProcs(PROVIDER, 2, tmp_path)
        self.pservers.start_all()
        port_file = tmp_path / "master.port"
        self.master_log = tmp_path / "master.log"
        with open(self.master_log, "wb") as log:
            self.master = subprocess.Popen(
                [built_binary("master/fabps-master"), "--state-dir",
                 str(tmp_path / "master"), "--port", "0", "--port-file",
                 str(port_file), "--chunks-per-task", "1"],
                stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 30
        while not (port_file.exists() and
                   port_file.read_text().endswith("\n")):
            assert self.master.poll() is None and time.monotonic() < end, \
                self.master_log.read_text()
            time.sleep(0.01)
        self.master_address = f"127.0.0.1:{int(port_file.read_text())}"

    def flags(self, data_dir):
        return ["--master", self.master_address, "--pservers",
                ",".join(self.pservers.addresses), "--provider", PROVIDER,
                "--dataset", str(data_dir / "train" / "*"),
                "--test-data", str(data_dir / "test" / "*"),
                "--timeout-ms", "20000"]

    def client(self, **kw):
        return fabps.PServerClient(addresses=self.pservers.addresses,
                                   provider=PROVIDER, rpc_timeout_ms=20000,
                                   **kw)

    def close(self):
        self.master.kill()
        self.master.wait(10)
        self.pservers.close()


@pytest.fixture
def job(tmp_path):
    j = Job(tmp_path)
    yield j
    j.close()


def run_trainer(argv, metrics_file, timeout=120):
    """Runs a trainer; its pass lines."""
    r = subprocess.run(argv + ["--metrics-file", str(metrics_file)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(t) for t in open(metrics_file)]
    return [e for e in lines if e["event"] == "pass"]


def torch_trainer():
    return [sys.executable, os.path.join(EXAMPLE, "trainer.py")]


def batch_of(data_dir, n):
    shard = sorted((data_dir / "train").iterdir())[0]
    records = fabps.read_records(str(shard))[:n]
    assert all(ctr_model.valid_record(r, FIELDS) for r in records)
    return ctr_model.parse_records(records, FIELDS)


# ---- one step against plain torch ---------------------------------------

class Spy:
    """A client that records the module's rows pushes."""

    def __init__(self, c):
        self.c = c
        self.pushes = []

    def get_rows_async(self, name, ids, out, timeout=None):
        return self.c.get_rows_async(name, ids, out, timeout=timeout)

    def send_rows(self, name, ids, values, timeout=None):
        self.pushes.append((np.array(ids), values.clone()))
        return self.c.send_rows(name, ids, values, timeout=timeout)


def test_one_step_equals_torch_embedding_bag(job, data):
    ids, labels = batch_of(data[0], 64)
    labels = torch.from_numpy(labels)
    hidden, lr = 8, 0.5
    mlp = ctr_model.init_ctr_mlp(5, FIELDS, hidden)
    table = fabps.HashedTable(dim=ctr_model.EMBEDDING_DIM, buckets=16,
                              init="uniform", init_scale=0.25, seed=3)
    with job.client(rule=fabps.Rule("sgd", lr=lr)) as c:
        assert c.init_params([("emb", table)] + list(mlp.items()))
        unique, inverse = np.unique(ids, return_inverse=True)
        start = np.zeros((unique.size, ctr_model.EMBEDDING_DIM), np.float32)
        c.get_rows("emb", unique, start)  # the initial rows: no rows yet
        assert sum(t["rows"] for t in c.table_stats()) == 0

        spy = Spy(c)
        model = ctr_model.CtrModel(
            fabps.torch.EmbeddingBag(spy, "emb", ctr_model.EMBEDDING_DIM,
                                     mode="sum"), FIELDS, hidden)
        reference = ctr_model.CtrModel(
            torch.nn.EmbeddingBag.from_pretrained(
                torch.from_numpy(start.copy()), freeze=False, mode="sum"),
            FIELDS, hidden)
        for m in (model, reference):
            m.load_values(mlp)
        logits = model(ids)
        want = reference(torch.from_numpy(inverse.reshape(ids.shape)))
        torch.testing.assert_close(logits, want, rtol=0, atol=0)
        ctr_model.loss_fn(logits, labels).backward()
        ctr_model.loss_fn(want, labels).backward()
        model.emb.wait()

        # One push of the batch's unique rows: torch's gradient of the
        # table, row for row.
        assert len(spy.pushes) == 1
        pushed_ids, grad = spy.pushes[0]
        np.testing.assert_array_equal(pushed_ids, unique)
        torch.testing.assert_close(grad, reference.emb.weight.grad,
                                   rtol=0, atol=0)
        for name, p in model.named_parameters():
            ref = dict(reference.named_parameters())[name]
            torch.testing.assert_close(p.grad, ref.grad, rtol=0, atol=0)
        # The pservers applied SGD to exactly those rows (admitted now).
        after = np.zeros_like(start)
        c.get_rows("emb", unique, after)
        torch.testing.assert_close(
            torch.from_numpy(after),
            torch.from_numpy(start) - lr * reference.emb.weight.grad)
        assert sum(t["rows"] for t in c.table_stats()) == unique.size


# ---- the trainer ----------------------------------------------------------

def test_trainer_reaches_the_planted_auc(job, data, tmp_path):
    data_dir, planted = data
    passes = run_trainer(torch_trainer() + job.flags(data_dir) +
                         ["--passes", "2"], tmp_path / "metrics")
    assert [p["pass"] for p in passes] == [0, 1]
    for p in passes:
        assert p["samples"] == TRAIN and p["bad_records"] == 0, p
        assert p["test_loss"] > 0 and p["eval_seconds"] >= 0, p
        assert list(p)[-2:] == ["seconds", "elapsed_seconds"], p
    # Measured: 0.973 of it after 2 passes (0.970 after 1).
    assert passes[-1]["test_auc"] >= 0.9 * planted["planted_test_auc"], \
        (passes, planted)
    assert passes[-1]["loss"] < passes[0]["loss"]
    # The hashed table holds a row per feature seen: at most F * vocab.
    with job.client() as c:
        stats = c.table_stats()
    assert {t["name"] for t in stats} == {"emb"} and len(stats) == 2
    rows = sum(t["rows"] for t in stats)
    assert 0 < rows <= FIELDS * VOCAB, stats
    assert all(t["rows"] > 0 for t in stats), stats  # on both pservers
    assert rows == sum(t["admitted"] for t in stats)


def test_fixed_table_is_the_cpp_trainers_model(data, tmp_path):
    """--table fixed --no-prefetch steps as fabps-ctr-trainer does: the
    same initial values, the same updates, so the same loss and AUC up to
    the order of float sums in the matrix products."""
    cpp = built_binary("examples/ctr/fabps-ctr-trainer")
    if not os.path.exists(cpp):
        pytest.skip("fabps-ctr-trainer is not built")
    data_dir, _ = data
    common = ["--passes", "1", "--table", "fixed", "--table-rows", "65536",
              "--seed", "7"]
    got = {}
    for name, argv in (("cpp", [cpp]),
                       ("torch", torch_trainer() + ["--no-prefetch"])):
        (tmp_path / name).mkdir()
        j = Job(tmp_path / name)
        try:
            got[name] = run_trainer(argv + j.flags(data_dir) + common,
                                    tmp_path / name / "metrics")[0]
        finally:
            j.close()
    c, t = got["cpp"], got["torch"]
    assert t["samples"] == c["samples"] == TRAIN
    # Measured: the pass's loss 6e-6 apart, the test loss 1.5e-4, the AUC
    # 4e-6 (float sums in another order, over 79 AdaGrad steps); another
    # --seed moves them by 2.5e-3, 1.1e-3 and 2.4e-4.
    assert t["loss"] == pytest.approx(c["loss"], rel=1e-4), got
    assert t["test_loss"] == pytest.approx(c["test_loss"], rel=5e-4), got
    assert t["test_auc"] == pytest.approx(c["test_auc"], abs=1e-4), got


# ---- pieces ------------------------------------------------------------------

def test_auc_is_mann_whitney_with_ties():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 20, 300).astype(np.float64)  # many ties
    labels = rng.integers(0, 2, 300)
    pos, neg = scores[labels == 1], scores[labels == 0]
    pairs = (pos[:, None] > neg[None, :]).sum() + \
        0.5 * (pos[:, None] == neg[None, :]).sum()
    assert ctr_model.auc(scores, labels) == pytest.approx(
        pairs / (pos.size * neg.size), abs=1e-12)
    assert ctr_model.auc([0.1, 0.9], [0, 1]) == 1.0
    assert np.isnan(ctr_model.auc([0.1, 0.9], [1, 1]))


def test_records_are_checked_and_parsed():
    ids = np.array([[1, 2**64 - 1, 2**63]], np.uint64)
    good = bytes([1, 3]) + ids.astype("<u8").tobytes()
    assert ctr_model.valid_record(good, 3)
    for bad in (good[:-1], bytes([2]) + good[1:], bytes([0, 4]) + good[2:]):
        assert not ctr_model.valid_record(bad, 3)
    assert not ctr_model.valid_record(good, 4)
    got_ids, got_labels = ctr_model.parse_records([good, good], 3)
    np.testing.assert_array_equal(got_ids, np.repeat(ids, 2, axis=0))
    assert got_ids.dtype == np.uint64 and got_labels.tolist() == [1.0, 1.0]


def test_flags(capsys):
    base = ["--master", "h:1", "--pservers", "h:2,h:3", "--dataset", "d/*"]
    c = ctr_trainer.parse_flags(base)
    assert (c.table, c.buckets, c.admit_after, c.ttl_seconds,
            c.table_budget_mb, c.table_init) == ("hashed", 16, 1, 0, 0,
                                                 "uniform")
    assert (c.rule, c.emb_lr, c.lr, c.batch, c.passes, c.hidden,
            c.table_rows, c.block_elements) == ("adagrad", 0.05, 0.02, 256,
                                                3, 32, 1 << 22, 1 << 22)
    assert c.pservers == ["h:2", "h:3"]
    for argv, flag in ((["--mode", "sync"], "--mode"),
                       (["--table-init", "ones"], "--table-init"),
                       (["--table-init-scale", "101"], "--table-init-scale"),
                       (["--log-format", "xml"], "--log-format"),
                       (["--buckets", "0"], "--buckets"),
                       (["--admit-after", "256"], "--admit-after"),
                       (["--fields", "65"], "--fields")):
        with pytest.raises(SystemExit) as e:
            ctr_trainer.parse_flags(base + argv)
        assert e.value.code == 2
        assert flag in capsys.readouterr().err

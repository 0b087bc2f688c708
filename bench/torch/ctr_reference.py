#!/usr/bin/python3
"""The single-process PyTorch reference of bench/run_ctr_bench.sh.

The CTR example's model (examples/ctr, examples/ctr_torch/ctr_model.py)
written as a plain PyTorch user writes it, in one process:
  * F fields (8), each feature id folded into a fixed table by id % --rows
    (2^22, the fixed table's size; the job's hashed table is keyed by the
    raw 64-bit ids, a plain PyTorch user hashes them into a fixed table).
    With the data's 8 x 10000 values per field the fold shares almost no
    rows, so it learns what the hashed table learns;
  * nn.Embedding(rows, 16, sparse=True), uniform in [-0.01, 0.01] (the
    examples' initial scale), the F rows concatenated into
    nn.Linear(F*16, 32) -> ReLU -> nn.Linear(32, 1), weights ~ N(0, 2/in)
    and N(0, 1/32), zero biases (InitCtrMlp's scales), the mean logistic
    loss;
  * torch.optim.Adagrad, sparse gradients for the table: lr 0.05 for the
    table, 0.02 for the MLP, epsilon 1e-8 and a zero start accumulator (the
    pservers' AdaGrad); batches of 256 in the shards' order.

Data: the recordio shards of fabps-ctr-gen (<data-dir>/train, /test),
read with fabps.read_records and parsed (ctr_model.parse_records), ids
folded, all before the clock starts. Test AUC (ctr_model.auc, as the
trainers compute it) after every pass, and --evals-per-pass times a pass
for the time to reach --target x planted_test_auc (<data-dir>/planted.json).
Training time excludes evaluation, as the job's samples/s does (pass seconds
minus eval_seconds).

Prints a "pass" JSON line per pass and a "summary" line last:
  {"event":"pass","pass":0,"samples":1000000,"loss":0.52,"test_auc":0.87,
   "seconds":20.1,"eval_seconds":0.9}
  {"event":"summary","threads":1,"samples_per_sec":50000,"final_auc":0.88,
   "planted_test_auc":0.885,"target_auc":0.859,"seconds_to_target":12.0}
FABPS_BUILD_DIR (default <repo>/build) gives the fabps Python package.
"""

import argparse
import glob
import json
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BUILD = os.environ.get("FABPS_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "ctr_torch"))
import ctr_model  # noqa: E402
import fabps  # noqa: E402

DIM = ctr_model.EMBEDDING_DIM


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir",
                   default=os.path.expanduser("~/.cache/fabps/ctr-1000000"),
                   help="fabps-ctr-gen's output (train/, test/, planted.json)")
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--fields", type=int, default=8)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--rows", type=int, default=1 << 22,
                   help="table rows; feature id -> row id %% rows")
    p.add_argument("--emb-lr", type=float, default=0.05)
    p.add_argument("--lr", type=float, default=0.02, help="the MLP's")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads")
    p.add_argument("--target", type=float, default=0.97,
                   help="fraction of planted_test_auc for seconds_to_target")
    p.add_argument("--evals-per-pass", type=int, default=4,
                   help="test AUC evaluations per pass (the last at its end)")
    a = p.parse_args(argv)
    if min(a.passes, a.batch, a.fields, a.hidden, a.rows, a.threads,
           a.evals_per_pass) < 1:
        p.error("counts must be >= 1")
    return a


class CtrReference(nn.Module):
    def __init__(self, rows, fields, hidden):
        super().__init__()
        self.emb = nn.Embedding(rows, DIM, sparse=True)
        self.fc1 = nn.Linear(fields * DIM, hidden)
        self.fc2 = nn.Linear(hidden, 1)
        with torch.no_grad():
            self.emb.weight.uniform_(-ctr_model.EMBEDDING_INIT_SCALE,
                                     ctr_model.EMBEDDING_INIT_SCALE)
            self.fc1.weight.normal_(0, math.sqrt(2 / (fields * DIM)))
            self.fc2.weight.normal_(0, math.sqrt(1 / hidden))
            self.fc1.bias.zero_()
            self.fc2.bias.zero_()

    def forward(self, rows):  # rows: int64 [B, F]
        x = self.emb(rows).flatten(1)
        return self.fc2(torch.relu(self.fc1(x))).squeeze(1)


def load(files, fields, rows):
    """(rows int64 [n, F], labels float32 [n]) of the shards' records."""
    records = []
    for f in files:
        records += fabps.read_records(f)
    ok = [r for r in records if ctr_model.valid_record(r, fields)]
    if len(ok) != len(records):
        print(f"skipping {len(records) - len(ok)} malformed records",
              file=sys.stderr)
    ids, labels = ctr_model.parse_records(ok, fields)
    folded = (ids % np.uint64(rows)).astype(np.int64)
    return torch.from_numpy(folded), torch.from_numpy(labels)


def shards(data_dir, part):
    files = sorted(f for f in glob.glob(os.path.join(data_dir, part, "*"))
                   if os.path.isfile(f) and not f.endswith(".tmp"))
    if not files:
        raise SystemExit(f"ctr_reference.py: no shards in {data_dir}/{part}")
    return files


def test_auc(model, rows, labels, batch=4096):
    with torch.no_grad():
        logits = torch.cat([model(rows[i:i + batch])
                            for i in range(0, rows.shape[0], batch)])
    return ctr_model.auc(logits.numpy(), labels.numpy())


def main(argv):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(os.path.join(a.data_dir, "planted.json")) as f:
        planted = json.load(f)["planted_test_auc"]
    target = a.target * planted
    train_rows, train_labels = load(shards(a.data_dir, "train"), a.fields,
                                    a.rows)
    test_rows, test_labels = load(shards(a.data_dir, "test"), a.fields,
                                  a.rows)
    model = CtrReference(a.rows, a.fields, a.hidden)
    opt = torch.optim.Adagrad([
        {"params": [model.emb.weight], "lr": a.emb_lr},
        {"params": list(model.fc1.parameters()) +
         list(model.fc2.parameters()), "lr": a.lr},
    ], lr=a.lr, eps=1e-8, initial_accumulator_value=0.0)
    loss_fn = nn.BCEWithLogitsLoss()

    n = train_rows.shape[0]
    batches = (n + a.batch - 1) // a.batch
    # Evaluate after these batch counts (the last one ends the pass).
    eval_at = {round(batches * (k + 1) / a.evals_per_pass)
               for k in range(a.evals_per_pass)}
    train_seconds, to_target, auc = 0.0, None, math.nan
    for p in range(a.passes):
        pass_train, pass_eval, loss_sum = 0.0, 0.0, 0.0
        start = time.perf_counter()
        for b in range(batches):
            x = train_rows[b * a.batch:(b + 1) * a.batch]
            y = train_labels[b * a.batch:(b + 1) * a.batch]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * x.shape[0]
            if b + 1 in eval_at:
                now = time.perf_counter()
                pass_train += now - start
                auc = test_auc(model, test_rows, test_labels)
                start = time.perf_counter()
                pass_eval += start - now
                if to_target is None and auc >= target:
                    to_target = train_seconds + pass_train
        train_seconds += pass_train
        print(json.dumps({"event": "pass", "pass": p, "samples": n,
                          "loss": round(loss_sum / n, 6),
                          "test_auc": round(auc, 6),
                          "seconds": round(pass_train + pass_eval, 3),
                          "eval_seconds": round(pass_eval, 3)}), flush=True)
    print(json.dumps({
        "event": "summary", "threads": a.threads,
        "samples_per_sec": round(a.passes * n / train_seconds),
        "final_auc": round(auc, 6), "planted_test_auc": planted,
        "target_auc": round(target, 6),
        "seconds_to_target": (None if to_target is None
                              else round(to_target, 3))}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/python3
"""fabps-fashion-mnist-torch: the Fashion-MNIST example trainer in PyTorch.

The same job as the C++ fabps-fashion-mnist-trainer (examples/fashion_mnist/
trainer.h), with the same flags and the same JSON lines, so fabps-launch
--trainer torch runs it in its place:
  1. Picks the evaluator: trainer 0, when it has --test-data (the C++
     trainer claims eval/trainer in the store instead: the fabps package
     has no store binding yet).
  2. Sets the job's dataset on the master (the first call wins).
  3. Connects to the pservers; the trainer that wins the init election sends
     the model's initial values (init_mlp_params(--seed), the C++ values) and
     the rule of the flags, the others receive the job's values.
  4. Per pass: start_pass(pass), then per mini-batch of parsed records:
     forward, backward (each layer's gradients pushed as soon as autograd
     has them), step (waits for the pushes, pulls the updated parameters
     overlapped with the next forward). A lost step is skipped, as in C++.
  5. After each pass the evaluator pulls the parameters and measures the
     accuracy on the whole test set.

Output (stdout and appended to --metrics-file), one JSON object a line:
  {"event":"progress","trainer":0,"pass":0,"samples":1280,"loss":0.61,
   "samples_per_sec":2500}
  {"event":"pass","trainer":0,"pass":0,"samples":30016,"loss":0.55,
   "bad_records":0,"test_accuracy":0.83,"test_loss":0.47,"seconds":12.1,
   "elapsed_seconds":14.0}

OPENBLAS_NUM_THREADS defaults to 1 and torch uses --threads threads (1):
one process per core, no spinning BLAS threads fighting over the cores.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import fnmatch  # noqa: E402

import torch  # noqa: E402

import fabps  # noqa: E402
import fabps.log  # noqa: E402
import fabps.torch  # noqa: E402

import data  # noqa: E402
import metrics  # noqa: E402
import trainer_common as common  # noqa: E402
import model as mlp  # noqa: E402

PROGRAM = "fabps-fashion-mnist-torch"
RULES = fabps.Rule.KINDS
MAX_LOST_STEPS_IN_A_ROW = 30
BUCKET_BYTES = 0


def parse_flags(argv):
    """The flags of trainer_flags.cc, validated; exits 2 naming the flag."""
    p = common.Parser(
        prog=PROGRAM,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Trains a 784-256-128-10 MLP on Fashion-MNIST with fabps "
                    "and PyTorch")
    a = p.add_argument
    a("--master", type=common.host_port, default="",
      help="master address (default: master/addr in --store)")
    a("--pservers", type=common.list_of(common.host_port), default=[],
      help="pserver addresses, in index order (default: in --store)")
    a("--provider", default="auto",
      help="fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets")
    a("--interface", default="", help="fabric interface address")
    a("--trainer-id", type=common.ranged(int, 0, 1_000_000), default=0)
    a("--dataset", type=common.list_of(str), required=True,
      help="training shards (glob; several separated by commas)")
    a("--test-data", default="", help="test shards (directory or glob)")
    a("--passes", type=common.ranged(int, 1, 10_000), default=5)
    a("--batch", type=common.ranged(int, 1, 65536), default=64)
    a("--rule", choices=RULES, default="sgd")
    a("--lr", type=common.ranged(float, 1e-9, 100.0), default=0.05)
    a("--momentum", type=common.ranged(float, 0.0, 0.999999), default=0.9)
    a("--lr-final", type=common.ranged(float, 0.0, 100.0), default=-1.0)
    a("--lr-decay-steps", type=common.ranged(int, 0, 1 << 40), default=0)
    a("--seed", type=common.ranged(int, 0, (1 << 64) - 1), default=1)
    a("--block-elements", type=common.ranged(int, 1, 1 << 32), default=65536)
    a("--store", default="", help="coordination store")
    a("--job", default="default")
    a("--metrics-file", default="")
    a("--progress-seconds", type=common.ranged(float, 0.01, 3600.0), default=1.0)
    a("--progress-batches", type=common.ranged(int, 0, 1_000_000_000), default=0)
    a("--eval-batch", type=common.ranged(int, 1, 65536), default=1000)
    a("--timeout-ms", type=common.ranged(int, 100, 3_600_000), default=60_000)
    # Only here (not in the C++ trainer):
    a("--threads", type=common.ranged(int, 1, 256), default=1,
      help="torch.set_num_threads")
    a("--bucket-bytes", type=common.ranged(int, 0, 1 << 40), default=BUCKET_BYTES,
      help="gradients pushed (and parameters pulled) in groups of layers "
           "of at least this many bytes, output layer first; 0: per layer")
    a("--no-overlap-pull", action="store_true",
      help="pull synchronously in step() instead of during the next forward")
    c = p.parse_args(argv)

    def fail(flag, message):
        common.fail(PROGRAM, flag, message)

    common.check_connection_flags(PROGRAM, c)
    if not c.store and c.trainer_id == 0 and not c.test_data:
        fail("--test-data", "required for trainer 0, the evaluator when "
                            "--store is not given")
    if (c.lr_final >= 0) != (c.lr_decay_steps > 0):
        fail("--lr-final" if c.lr_decay_steps > 0 else "--lr-decay-steps",
             "--lr-final and --lr-decay-steps go together")
    try:
        if c.lr_decay_steps > 0:
            c.rule_value = fabps.Rule(kind=c.rule, lr=c.lr,
                                      momentum=c.momentum,
                                      schedule="linear_decay",
                                      final_lr=c.lr_final,
                                      decay_steps=c.lr_decay_steps)
        else:
            c.rule_value = fabps.Rule(kind=c.rule, lr=c.lr,
                                      momentum=c.momentum)
    except fabps.Error as e:
        fail("--rule", str(e))
    return c


def load_test_set(cfg, log):
    files = common.expand_data_files(cfg.test_data)
    for f in files:  # test shards also trained on: a meaningless accuracy
        for g in cfg.dataset:
            if fnmatch.fnmatchcase(f, g):
                raise ValueError(f"--test-data: {f} is also matched by "
                                 f"--dataset {g}")
    records = []
    for f in files:
        records += fabps.read_records(f)
    x, labels, bad = data.records_to_tensors(records)
    if labels.numel() == 0:
        raise ValueError(f"--test-data: no valid record in {cfg.test_data}")
    log.info("evaluating on %d test examples from %d files (%d bad records "
             "skipped)", labels.numel(), len(files), bad)
    return x, labels


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.log = logging.getLogger(PROGRAM)
        self.metrics = metrics.MetricsLog(cfg.metrics_file)
        self.timeout = cfg.timeout_ms / 1000.0
        # The API's trainer id (> 0) of trainer number n: n + 1, one id for
        # the master and the pservers, as the C++ trainer.
        api_id = cfg.trainer_id + 1
        self.evaluator = cfg.trainer_id == 0 and bool(cfg.test_data)
        if self.evaluator:
            self.test_x, self.test_y = load_test_set(cfg, self.log)
        self.master = fabps.MasterReader(
            store=cfg.store or None, job=cfg.job, address=cfg.master or None,
            trainer_id=api_id, rpc_timeout_ms=cfg.timeout_ms)
        self.master.set_dataset(cfg.dataset)
        self.client = fabps.PServerClient(
            store=None if cfg.pservers else cfg.store,  # found there
            job=cfg.job, addresses=cfg.pservers or None,
            provider=cfg.provider, interface=cfg.interface,
            trainer_id=api_id, rule=cfg.rule_value,
            rpc_timeout_ms=cfg.timeout_ms, block_elements=cfg.block_elements)
        self.log.info("connected to the pservers over %s",
                      self.client.provider)
        self.model = mlp.Mlp()
        self.opt = fabps.torch.DistributedOptimizer(
            self.client, self.model.named_parameters(), model=self.model,
            overlap_pull=not cfg.no_overlap_pull, step_timeout=self.timeout,
            bucket_bytes=cfg.bucket_bytes,
            max_lost_steps=MAX_LOST_STEPS_IN_A_ROW)
        # The election's winner sends these values; the others overwrite
        # them with the job's.
        self.model.load_values(mlp.init_mlp_params(cfg.seed))
        if self.opt.init_params():
            self.log.info("initialized the parameters (seed %d, rule %s, "
                          "lr %g)", cfg.seed, cfg.rule, cfg.lr)

    def run(self):
        self.start = time.monotonic()
        for p in range(self.cfg.passes):
            self.run_pass(p)
        self.log.info("done: %d passes in %.1f s (%d steps lost)",
                      self.cfg.passes, time.monotonic() - self.start,
                      self.opt.lost_steps)
        self.opt.close()
        self.client.close()

    def run_pass(self, p):
        cfg = self.cfg
        self.pass_ = p
        pass_start = time.monotonic()
        self.pass_samples = 0
        self.pass_loss = 0.0
        self.reset_interval()
        batch = data.BatchBuilder(cfg.batch)
        self.master.start_pass(p)
        for record in self.master:
            if batch.add(record):
                self.train_batch(*batch.take())
        if batch.rows:
            self.train_batch(*batch.take())
        if batch.bad_records:
            self.log.warning("pass %d: skipped %d malformed records", p,
                             batch.bad_records)
        self.maybe_report_progress(force=self.interval_samples > 0)
        tests = None
        if self.evaluator:
            self.pull_for_evaluation()
            acc, loss = mlp.evaluate(self.model, self.test_x, self.test_y,
                                     cfg.eval_batch)
            tests = {"test_accuracy": acc, "test_loss": loss}
        now = time.monotonic()
        self.metrics.write(metrics.pass_line(
            cfg.trainer_id, p, self.pass_samples,
            self.pass_loss / self.pass_samples if self.pass_samples
            else math.nan, batch.bad_records, tests,
            seconds=now - pass_start, elapsed_seconds=now - self.start))

    def pull_for_evaluation(self):
        """The job's current parameters; retried as the C++ evaluator does
        (the client reconnects if a pserver restarted)."""
        for attempt in range(MAX_LOST_STEPS_IN_A_ROW + 1):
            try:
                self.opt.pull(timeout=self.timeout)
                return
            except fabps.PeerError:
                if attempt == MAX_LOST_STEPS_IN_A_ROW:
                    raise
                time.sleep(0.2)

    def train_batch(self, x, labels):
        self.opt.zero_grad()
        loss = mlp.loss_fn(self.model(x), labels)
        loss.backward()
        if not self.opt.step():
            return  # lost: async SGD loses this update
        n = labels.numel()
        loss = loss.item()
        self.pass_samples += n
        self.pass_loss += loss * n
        self.interval_samples += n
        self.interval_loss += loss * n
        self.interval_batches += 1
        self.maybe_report_progress(force=False)

    def reset_interval(self):
        self.interval_start = time.monotonic()
        self.interval_samples = 0
        self.interval_batches = 0
        self.interval_loss = 0.0

    def maybe_report_progress(self, force):
        secs = time.monotonic() - self.interval_start
        by_batches = (self.cfg.progress_batches > 0 and
                      self.interval_batches >= self.cfg.progress_batches)
        if not force and not by_batches and secs < self.cfg.progress_seconds:
            return
        if self.interval_samples == 0:
            return
        self.metrics.write(metrics.progress_line(
            self.cfg.trainer_id, self.pass_, self.pass_samples,
            self.interval_loss / self.interval_samples,
            self.interval_samples / secs if secs > 0 else 0.0))
        self.reset_interval()


def main(argv):
    cfg = parse_flags(argv)
    fabps.log.setup("trainer", cfg.trainer_id)
    torch.set_num_threads(cfg.threads)
    try:
        Trainer(cfg).run()
    except (fabps.Error, ValueError, OSError) as e:
        print(f"{PROGRAM}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

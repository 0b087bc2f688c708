#!/usr/bin/python3
"""fabps-ctr-torch: the CTR example trainer in PyTorch.

The model of the C++ fabps-ctr-trainer (examples/ctr/): F fields' 16-float
embedding rows concatenated -> MLP F*16 -> hidden (ReLU) -> 1, the mean
logistic loss, written as a PyTorch user would (ctr_model.py) and trained
through fabps:
  * the table "emb" is a fabps.HashedTable (--table hashed, the default:
    keyed by the records' raw 64-bit feature ids, a row created when an id
    is admitted, evicted by --ttl-seconds / --table-budget-mb) or a dense
    [--table-rows, 16] table initialized as the C++ trainer's, the ids
    folded by id % rows (--table fixed, the C++ trainer's table today);
    read and pushed by rows through fabps.torch.EmbeddingBag (mode "sum",
    one bag per (example, field));
  * the MLP's parameters (fc1.w, fc1.b, fc2.w, fc2.b: the C++ names,
    shapes and initial values) through fabps.torch.DistributedOptimizer;
  * the pservers apply --rule (AdaGrad) with --emb-lr to the table and
    --lr to the MLP.

It takes the C++ trainer's flags (same names, ranges and defaults), writes
the same JSON lines (docs/formats/metrics_line.md) and, as trainer 0 with
--test-data, the test AUC at each pass end:
  {"event":"progress","trainer":0,"pass":0,"samples":25600,"loss":0.52,
   "samples_per_sec":21000}
  {"event":"pass","trainer":0,"pass":0,"samples":200000,"loss":0.49,
   "bad_records":0,"test_auc":0.78,"test_loss":0.47,"eval_seconds":0.4,
   "seconds":9.8,"elapsed_seconds":10.5}

Each step: forward (the batch's rows, prefetched during the previous step,
and the MLP pulled after it), the loss, backward (pushes the rows' gradient
with send_rows and the MLP's gradients layer by layer), prefetch of the
next batch's rows, step (waits for the MLP's pushes and starts its pull).
A step that meets a dead or restarting pserver is lost, not fatal, as in
C++.

OPENBLAS_NUM_THREADS defaults to 1 and torch uses --threads threads (1).
"""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _log_format_of(argv):
    """--log-format's value in argv, if any: the C++ library reads
    FABPS_LOG_FORMAT once, when `import fabps` loads it, so the flag is
    applied before that (and validated again by the parser)."""
    for i, arg in enumerate(argv):
        if arg == "--log-format" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--log-format="):
            return arg.split("=", 1)[1]
    return None


if __name__ == "__main__" and _log_format_of(sys.argv) in ("text", "json"):
    os.environ["FABPS_LOG_FORMAT"] = _log_format_of(sys.argv)

import argparse  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fabps  # noqa: E402
import fabps.log  # noqa: E402
import fabps.torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The metrics lines' writer, the dense layer and the flag types are the
# Fashion-MNIST torch example's (the build copies them here too).
sys.path.append(os.path.join(HERE, "..", "fashion_mnist_torch"))
import ctr_model  # noqa: E402
import metrics  # noqa: E402
import trainer_common as common  # noqa: E402

PROGRAM = "fabps-ctr-torch"
MAX_LOST_STEPS_IN_A_ROW = 30
TABLE_INITS = ("zeros", "uniform", "normal")


def parse_flags(argv):
    """The flags of examples/ctr/trainer_flags.cc (and the hashed table's),
    validated; exits 2 naming the flag."""
    p = common.Parser(
        prog=PROGRAM,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Trains a CTR model (hashed-feature embedding table + "
                    "MLP, logistic loss) with fabps and PyTorch")
    a = p.add_argument
    a("--master", type=common.host_port, default="",
      help="master address (default: master/addr in --store)")
    a("--pservers", type=common.list_of(common.host_port), default=[],
      help="pserver addresses, in index order (default: in --store)")
    a("--provider", default="auto",
      help="fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets")
    a("--interface", default="", help="fabric interface address")
    a("--trainer-id", type=common.ranged(int, 0, 1_000_000), default=0,
      help="this trainer's number")
    a("--dataset", type=common.list_of(str), required=True,
      help="training shards of fabps-ctr-gen (glob; several separated by "
           "commas)")
    a("--test-data", default="",
      help="test shards (directory or glob) for the test AUC, computed by "
           "trainer 0")
    a("--passes", type=common.ranged(int, 1, 10_000), default=3)
    a("--batch", type=common.ranged(int, 1, 65536), default=256,
      help="impressions per mini-batch")
    a("--fields", type=common.ranged(int, 1, ctr_model.MAX_FIELDS), default=8,
      help="fields per impression (records with another count are skipped)")
    a("--hidden", type=common.ranged(int, 1, 4096), default=32,
      help="hidden units of the MLP")
    a("--table-rows", type=common.ranged(int, 1, 1 << 28), default=1 << 22,
      help="--table fixed: rows of the embedding table (ids folded by id "
           "%% rows)")
    a("--rule", choices=fabps.Rule.KINDS, default="adagrad",
      help="update rule of every parameter")
    a("--emb-lr", type=common.ranged(float, 1e-9, 100.0), default=0.05,
      help="learning rate of the embedding table")
    a("--lr", type=common.ranged(float, 1e-9, 100.0), default=0.02,
      help="learning rate of the MLP")
    a("--seed", type=common.ranged(int, 0, (1 << 64) - 1), default=1,
      help="seed of the parameter initialization")
    a("--block-elements", type=common.ranged(int, 16, 1 << 28), default=1 << 22,
      help="parameter block size on the pservers, in elements")
    a("--store", default="", help="coordination store")
    a("--job", default="default")
    a("--metrics-file", default="")
    a("--progress-seconds", type=common.ranged(float, 0.01, 3600.0), default=1.0)
    a("--eval-batch", type=common.ranged(int, 1, 65536), default=4096,
      help="impressions per evaluation batch")
    a("--timeout-ms", type=common.ranged(int, 100, 3_600_000), default=60_000,
      help="deadline of each pserver call, ms")
    a("--mode", choices=("async", "sync"), default="async",
      help="async only here (sync: the C++ trainer)")
    a("--step-wait-ms", type=common.ranged(int, 100, 3_600_000), default=120_000,
      help="with --mode sync (not supported here)")
    # The hashed table (the C++ trainer's flags of the same names).
    a("--table", choices=("hashed", "fixed"), default="hashed",
      help="hashed: a fabps.HashedTable keyed by the raw 64-bit feature "
           "ids; fixed: [--table-rows, 16], ids folded by id %% rows")
    a("--buckets", type=common.ranged(int, 1, 1 << 16), default=16,
      help="--table hashed: buckets (spread over the pservers)")
    a("--admit-after", type=common.ranged(int, 1, 255), default=1,
      help="--table hashed: a row is created at an id's N-th push")
    a("--ttl-seconds", type=common.ranged(int, 0, 315_360_000), default=0,
      help="--table hashed: rows not updated this long are dropped (0: "
           "never)")
    a("--table-budget-mb", type=common.ranged(int, 0, 1 << 24), default=0,
      help="--table hashed: MiB of rows per pserver, the least recently "
           "updated dropped past it (0: no budget)")
    a("--table-init", choices=TABLE_INITS, default="uniform",
      help="--table hashed: a new row's values: zeros, uniform in [-scale, "
           "scale) or normal (deviation scale), drawn from --seed and the id "
           "(a fixed table starts as the C++ trainer's: uniform, 0.01)")
    a("--table-init-scale", type=common.ranged(float, 0.0, 100.0),
      default=ctr_model.EMBEDDING_INIT_SCALE,
      help="--table hashed: the scale of --table-init")
    a("--log-format", choices=("text", "json"),
      default=os.environ.get("FABPS_LOG_FORMAT") or "text",
      help="log lines as text or as JSON lines (FABPS_LOG_FORMAT)")
    # Only here (not in the C++ trainer):
    a("--threads", type=common.ranged(int, 1, 256), default=1,
      help="torch.set_num_threads")
    a("--no-prefetch", action="store_true",
      help="read a batch's rows in its forward, not during the previous "
           "step (no staleness, no overlap)")
    c = p.parse_args(argv)

    def fail(flag, message):
        common.fail(PROGRAM, flag, message)

    common.check_connection_flags(PROGRAM, c)
    if c.mode == "sync":
        fail("--mode", "sync is not supported by the PyTorch trainer "
                       "(fabps.torch has no sync steps); use "
                       "fabps-ctr-trainer")
    try:
        c.emb_rule = fabps.Rule(kind=c.rule, lr=c.emb_lr)
        c.mlp_rule = fabps.Rule(kind=c.rule, lr=c.lr)
    except fabps.Error as e:
        fail("--rule", str(e))
    return c


class Batches:
    """Valid records of an iterable, `batch` at a time, as (ids uint64 [B,
    F], labels float32 [B]); the last batch may be smaller. Malformed
    records are counted (the first one logged) and skipped."""

    def __init__(self, records, fields, batch, log):
        self.records = records
        self.fields = fields
        self.batch = batch
        self.log = log
        self.bad_records = 0

    def __iter__(self):
        fields, batch = self.fields, self.batch
        valid = ctr_model.valid_record
        held = []
        for record in self.records:
            if not valid(record, fields):
                if self.bad_records == 0:
                    self.log.warning("skipping a malformed record of %d bytes "
                                     "(further ones are only counted)",
                                     len(record))
                self.bad_records += 1
                continue
            held.append(record)
            if len(held) == batch:
                yield ctr_model.parse_records(held, fields)
                held = []
        if held:
            yield ctr_model.parse_records(held, fields)


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.log = logging.getLogger(PROGRAM)
        self.metrics = metrics.MetricsLog(cfg.metrics_file)
        self.timeout = cfg.timeout_ms / 1000.0
        self.fixed = cfg.table == "fixed"
        # The API's trainer id (> 0) of trainer number n: n + 1, as in C++.
        api_id = cfg.trainer_id + 1
        self.evaluator = cfg.trainer_id == 0 and bool(cfg.test_data)
        if self.evaluator:
            self.load_test_set()
        self.master = fabps.MasterReader(
            store=cfg.store or None, job=cfg.job, address=cfg.master or None,
            trainer_id=api_id, rpc_timeout_ms=cfg.timeout_ms)
        self.master.set_dataset(cfg.dataset)
        self.client = fabps.PServerClient(
            store=None if cfg.pservers else cfg.store,  # found there
            job=cfg.job, addresses=cfg.pservers or None,
            provider=cfg.provider, interface=cfg.interface,
            trainer_id=api_id, rule=cfg.mlp_rule,
            rules={ctr_model.EMBEDDING_NAME: cfg.emb_rule},
            rpc_timeout_ms=cfg.timeout_ms,
            block_elements=cfg.block_elements)
        self.log.info("connected to the pservers over %s",
                      self.client.provider)
        emb = fabps.torch.EmbeddingBag(
            self.client, ctr_model.EMBEDDING_NAME, ctr_model.EMBEDDING_DIM,
            mode="sum", timeout=self.timeout)
        self.model = ctr_model.CtrModel(emb, cfg.fields, cfg.hidden)
        self.opt = fabps.torch.DistributedOptimizer(
            self.client, self.model.named_parameters(), model=self.model,
            step_timeout=self.timeout, timeout=self.timeout,
            max_lost_steps=MAX_LOST_STEPS_IN_A_ROW)
        # The election's winner sends these values; the others receive the
        # job's.
        self.model.load_values(ctr_model.init_ctr_mlp(cfg.seed, cfg.fields,
                                                      cfg.hidden))
        table, table_text = self.table()
        if self.client.init_params([(ctr_model.EMBEDDING_NAME, table)] +
                                   list(self.model.named_parameters())):
            self.log.info("initialized: %s, MLP %d-%d-1, seed %d, rule %s "
                          "(emb lr %g, MLP lr %g)", table_text,
                          cfg.fields * ctr_model.EMBEDDING_DIM, cfg.hidden,
                          cfg.seed, cfg.rule, cfg.emb_lr, cfg.lr)
        self.lost_steps = 0
        self.lost_in_a_row = 0

    def table(self):
        """(what init_params sends for "emb", a description): a
        HashedTable, or the fixed table's values. Every trainer makes them:
        the init election is decided inside init_params, and a trainer that
        loses it pulls the job's table into them once (as init_params does
        for every dense parameter), then drops them."""
        cfg = self.cfg
        if not self.fixed:
            text = (f"hashed table x {ctr_model.EMBEDDING_DIM} "
                    f"({cfg.buckets} buckets, {cfg.table_init} "
                    f"{cfg.table_init_scale:g}, admit after "
                    f"{cfg.admit_after}, ttl {cfg.ttl_seconds} s, budget "
                    f"{cfg.table_budget_mb} MiB)")
            return fabps.HashedTable(
                dim=ctr_model.EMBEDDING_DIM, buckets=cfg.buckets,
                init=cfg.table_init, init_scale=cfg.table_init_scale,
                seed=cfg.seed, admit_after=cfg.admit_after,
                ttl_seconds=cfg.ttl_seconds,
                budget_bytes=cfg.table_budget_mb << 20), text
        text = (f"table {cfg.table_rows} x {ctr_model.EMBEDDING_DIM} "
                f"({cfg.table_rows * 64 >> 20} MiB)")
        return ctr_model.init_embedding(cfg.seed,
                                        ctr_model.EMBEDDING_INIT_SCALE,
                                        cfg.table_rows), text

    def rows(self, ids):
        """The embedding module's ids of raw feature ids [B, F]."""
        if self.fixed:
            return (ids % np.uint64(self.cfg.table_rows)).astype(np.int64)
        return ids

    def load_test_set(self):
        cfg = self.cfg
        files = common.expand_data_files(cfg.test_data)
        records = []
        for f in files:
            records += fabps.read_records(f)
        batches = Batches(records, cfg.fields, max(1, len(records)),
                          self.log)
        parsed = list(batches)
        if not parsed:
            raise ValueError(f"--test-data: no valid record in "
                             f"{cfg.test_data}")
        self.test_ids, self.test_labels = parsed[0]
        self.log.info("evaluating on %d test impressions (%d bad records "
                      "skipped)", self.test_labels.size, batches.bad_records)

    def run(self):
        self.start = time.monotonic()
        for p in range(self.cfg.passes):
            self.run_pass(p)
        self.log.info("done: %d passes in %.1f s (%d steps lost)",
                      self.cfg.passes, time.monotonic() - self.start,
                      self.lost_steps + self.opt.lost_steps)
        self.model.emb.wait()
        self.opt.close()
        self.client.close()

    def run_pass(self, p):
        cfg = self.cfg
        self.pass_ = p
        pass_start = time.monotonic()
        self.pass_samples = 0
        self.pass_loss = 0.0
        self.reset_interval()
        self.master.start_pass(p)
        batches = Batches(self.master, cfg.fields, cfg.batch, self.log)
        it = iter(batches)
        batch = next(it, None)
        while batch is not None:
            # The next batch is read before this one trains: its rows are
            # read while this step runs.
            following = next(it, None)
            self.train_batch(batch, following)
            batch = following
        self.maybe_report_progress(force=self.interval_samples > 0)
        tests = self.evaluate_with_retries() if self.evaluator else None
        now = time.monotonic()
        self.metrics.write(metrics.pass_line(
            cfg.trainer_id, p, self.pass_samples,
            self.pass_loss / self.pass_samples if self.pass_samples
            else math.nan, batches.bad_records, tests,
            seconds=now - pass_start, elapsed_seconds=now - self.start))

    def train_batch(self, batch, following):
        ids, labels = batch
        labels = torch.from_numpy(labels)
        model, opt = self.model, self.opt
        try:
            opt.zero_grad()
            loss = ctr_model.loss_fn(model(self.rows(ids)), labels)
            loss.backward()  # pushes the rows' and the MLP's gradients
            if following is not None and not self.cfg.no_prefetch:
                # After backward, not before: a rows read holds its landing
                # slots (one per block of the table on each pserver) until
                # it is waited for, in the next forward; started before
                # backward it could hold every slot of a pserver and the
                # backward's pushes would wait for them until they time out
                # (README.md, "Prefetch").
                model.prefetch(self.rows(following[0]))
        except fabps.PeerError as e:
            # The rows' read or push met a dead or restarting pserver: the
            # step is lost (the client reconnects on its next call).
            self.lose(e)
            return
        if not opt.step():
            return  # lost: async SGD loses this update
        self.lost_in_a_row = 0
        self.account(labels.numel(), loss.item())

    def lose(self, error):
        self.lost_steps += 1
        self.lost_in_a_row += 1
        if self.lost_in_a_row > MAX_LOST_STEPS_IN_A_ROW:
            raise error
        self.log.warning("step lost (%s: %s); reconnecting",
                         type(error).__name__, error)
        try:
            self.model.emb.wait()  # drops the pushes in flight
        except fabps.Error:
            pass
        time.sleep(0.2)

    def account(self, n, loss):
        self.pass_samples += n
        self.pass_loss += loss * n
        self.interval_samples += n
        self.interval_loss += loss * n
        self.maybe_report_progress(force=False)

    def evaluate_with_retries(self):
        """The test metrics; retried as the C++ evaluator does (the client
        reconnects if a pserver restarted)."""
        for attempt in range(MAX_LOST_STEPS_IN_A_ROW + 1):
            try:
                return self.evaluate()
            except fabps.PeerError as e:
                if attempt == MAX_LOST_STEPS_IN_A_ROW:
                    raise
                self.log.warning("evaluation failed (%s); retrying", e)
                time.sleep(0.2)

    @torch.no_grad()
    def evaluate(self):
        """test_auc, test_loss and eval_seconds of the job's current model
        on the whole test set."""
        start = time.monotonic()
        self.model.emb.wait()
        self.opt.pull(timeout=self.timeout)  # the job's MLP now
        n = self.test_labels.size
        logits = np.empty(n, np.float32)
        step = self.cfg.eval_batch
        for s in range(0, n, step):
            logits[s:s + step] = self.model(
                self.rows(self.test_ids[s:s + step])).numpy()
        return {"test_auc": ctr_model.auc(logits, self.test_labels),
                "test_loss": ctr_model.logistic_loss(logits,
                                                     self.test_labels),
                "eval_seconds": time.monotonic() - start}

    def reset_interval(self):
        self.interval_start = time.monotonic()
        self.interval_samples = 0
        self.interval_loss = 0.0

    def maybe_report_progress(self, force):
        secs = time.monotonic() - self.interval_start
        if not force and secs < self.cfg.progress_seconds:
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
    os.environ["FABPS_LOG_FORMAT"] = cfg.log_format  # for fabps.log
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

"""fabps.MasterReader: this trainer's share of the job's dataset, task by
task, from the master (trainer/master_client.h)."""

from . import _core


class MasterReader:
    """Reads the records of the tasks the master hands this trainer.

        reader = fabps.MasterReader(address="127.0.0.1:7164")
        reader.set_dataset(["/data/train-*"])      # first caller wins
        for p in range(passes):
            reader.start_pass(p)
            for record in reader:                  # bytes
                train(record)

    The master is `address` ("host:port") or, when None, found through the
    coordination store `store` of `job`. Behind the iterator the C++ client
    reads one task ahead and reports each task finished when its last record
    was handed out, or failed when its chunks cannot be read. Records reach
    Python `batch_records` at a time. Errors are fabps exceptions
    (fabps.Unavailable: the master is gone past rpc_retry_ms; fabps.TimedOut:
    no task within wait_for_task_ms); after one, or after a
    KeyboardInterrupt, call start_pass again.
    """

    def __init__(self, store=None, job="default", address=None, trainer_id=0,
                 rpc_timeout_ms=10000, rpc_retry_ms=30000,
                 wait_for_task_ms=600000, batch_records=256):
        self._c = _core.MasterReader(address or "", store or "", job,
                                     int(trainer_id), int(rpc_timeout_ms),
                                     int(rpc_retry_ms), int(wait_for_task_ms))
        self._batch = int(batch_records)

    def set_dataset(self, globs):
        """Sets the job's dataset: glob patterns of recordio files."""
        if isinstance(globs, str):
            globs = [globs]
        self._c.set_dataset(list(globs))

    def start_pass(self, pass_):
        """Starts reading pass `pass_` (0, 1, ...)."""
        self._c.start_pass(int(pass_))

    def __iter__(self):
        while True:
            batch = self._c.next_batch(self._batch)
            if not batch:
                return
            yield from batch

    def request_save_model(self, block_ms):
        """True when this trainer may save the model now (the others are
        refused for block_ms)."""
        return self._c.request_save_model(int(block_ms))

    def status(self):
        """The master's view of the job: pass, task counts, trainers."""
        return self._c.status()

    @property
    def trainer_id(self):
        return self._c.trainer_id

    @property
    def tasks_reported_failed(self):
        return self._c.tasks_reported_failed

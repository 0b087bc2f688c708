"""The trainer's metrics lines in Python: the format of trainer/metrics_line.h
(docs/formats/metrics_line.md), which tests/trainer/metrics_line_test.cc
checks this writer's output against. Each event is one line on stdout and,
with a path, appended to a file opened with O_APPEND and written in one
write(2), so the lines of several trainers sharing the file never
interleave. Non-finite numbers are null."""

import json
import math
import os
import sys


def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def progress_line(trainer, pass_, samples, loss, samples_per_sec):
    """MetricsLine::Progress: a running pass's interval."""
    return {"event": "progress", "trainer": trainer, "pass": pass_,
            "samples": samples, "loss": loss,
            "samples_per_sec": samples_per_sec}


def pass_line(trainer, pass_, samples, loss, bad_records, tests=None, *,
              seconds, elapsed_seconds):
    """MetricsLine::Pass: a pass's end; `tests` ({"test_accuracy": ...,
    "test_loss": ...}, the evaluator's) before the timing."""
    line = {"event": "pass", "trainer": trainer, "pass": pass_,
            "samples": samples, "loss": loss, "bad_records": bad_records}
    line.update(tests or {})
    line.update(seconds=seconds, elapsed_seconds=elapsed_seconds)
    return line


class MetricsLog:
    def __init__(self, path):
        """`path` "": stdout only. OSError when the file cannot be opened."""
        self._fd = -1
        if path:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND |
                               os.O_CLOEXEC, 0o644)
        self._warned = False

    def write(self, event):
        """Prints {key: value} as one line and appends it to the file; a
        failed append is reported once (metrics must not stop training)."""
        text = json.dumps({k: _finite(v) for k, v in event.items()},
                          separators=(",", ":"), allow_nan=False) + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
        if self._fd < 0:
            return
        raw = text.encode()
        try:
            n = os.write(self._fd, raw)
            if n != len(raw):
                raise OSError("short write")
        except OSError as e:
            if not self._warned:
                self._warned = True
                print(f"appending to the metrics file failed: {e}",
                      file=sys.stderr)

"""The trainer's JSON lines, as examples/fashion_mnist/metrics_log.h writes
them: each event is one line on stdout and, with a path, appended to a file
opened with O_APPEND and written in one write(2), so the lines of several
trainers sharing the file never interleave. Non-finite numbers are null."""

import json
import math
import os
import sys


def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


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

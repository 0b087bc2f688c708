"""Log lines of a Python fabps process in the format of the C++ ones.

    import fabps.log
    fabps.log.setup("trainer", 3)   # role and index, as base/log.h names them
    logging.getLogger(__name__).info("connected")

Text (the default):
    I 2026-12-04 14:27:40.394 trainer-3@node7 trainer.py:178] connected
JSON lines when FABPS_LOG_FORMAT=json (as `--log-format json` sets it for the
processes the launcher starts):
    {"time":"2026-12-04T13:27:40.394Z","level":"info","role":"trainer",
     "index":3,"host":"node7","src":"trainer.py:178","msg":"connected"}
So fabps-logs merges and filters a Python trainer's log with the daemons'.
"""

import json
import logging
import os
import socket
import sys
import time

__all__ = ["setup", "Formatter"]

_LETTERS = {logging.DEBUG: "D", logging.INFO: "I", logging.WARNING: "W",
            logging.ERROR: "E", logging.CRITICAL: "E"}
_NAMES = {logging.DEBUG: "debug", logging.INFO: "info",
          logging.WARNING: "warning", logging.ERROR: "error",
          logging.CRITICAL: "error"}


class Formatter(logging.Formatter):
    """base/log.h's line for a record: text, or JSON when `as_json`."""

    def __init__(self, role, index=None, as_json=False):
        super().__init__()
        self.role = role
        self.index = index
        self.as_json = as_json
        self.host = socket.gethostname()

    def format(self, record):
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        src = "%s:%d" % (os.path.basename(record.pathname), record.lineno)
        ms = int(record.msecs)
        if self.as_json:
            when = time.strftime("%Y-%m-%dT%H:%M:%S",
                                 time.gmtime(record.created))
            line = {"time": "%s.%03dZ" % (when, ms),
                    "level": _NAMES.get(record.levelno, "info"),
                    "role": self.role}
            if self.index is not None:
                line["index"] = self.index
            line.update({"host": self.host, "src": src, "msg": msg})
            return json.dumps(line, ensure_ascii=False,
                              separators=(",", ":"))
        when = time.strftime("%Y-%m-%d %H:%M:%S",
                             time.localtime(record.created))
        who = self.role if self.index is None else "%s-%d" % (self.role,
                                                               self.index)
        return "%s %s.%03d %s@%s %s] %s" % (
            _LETTERS.get(record.levelno, "I"), when, ms, who, self.host, src,
            msg)


def setup(role, index=None, level=logging.INFO):
    """Sends the root logger's records to stderr in fabps' format, and names
    the process (role, index) in the C++ library's own lines too."""
    from . import _core  # the compiled part: its lines are base/log.h's
    _core.set_log_role(role, -1 if index is None else index)
    as_json = os.environ.get("FABPS_LOG_FORMAT") == "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Formatter(role, index, as_json))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)

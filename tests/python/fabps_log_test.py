"""fabps.log: a Python process's log lines are base/log.h's (text and JSON),
so fabps-logs parses them like the daemons' (role, index, time)."""
import json
import os
import re
import subprocess
import sys

import pytest

CHILD = r"""
import logging, sys
import fabps.log
fabps.log.setup("trainer", 3)
logging.getLogger("x").info("hello %s", "there")
logging.getLogger("x").warning('quote " and \\ back')
"""

TEXT = re.compile(r"^([DIWE]) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) "
                  r"trainer-3@(\S+) <string>:(\d+)\] (.*)$")


def run_child(tmp_path, fmt):
    env = dict(os.environ)
    env["FABPS_LOG_FORMAT"] = fmt
    log = tmp_path / "trainer-3.log"
    with open(log, "w") as f:
        subprocess.run([sys.executable, "-c", CHILD], env=env, stderr=f,
                       check=True, timeout=60)
    return log, log.read_text().splitlines()


def test_text_lines_are_base_log_lines(tmp_path):
    _, lines = run_child(tmp_path, "text")
    assert len(lines) == 2, lines
    m = TEXT.match(lines[0])
    assert m, lines[0]
    assert m.group(1) == "I" and m.group(5) == "hello there"
    m = TEXT.match(lines[1])
    assert m and m.group(1) == "W", lines[1]


def test_json_lines_have_the_daemons_keys(tmp_path):
    _, lines = run_child(tmp_path, "json")
    assert len(lines) == 2, lines
    first, second = (json.loads(x) for x in lines)
    assert list(first) == ["time", "level", "role", "index", "host", "src",
                           "msg"]
    assert first["level"] == "info" and first["role"] == "trainer"
    assert first["index"] == 3 and first["msg"] == "hello there"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$",
                    first["time"])
    assert second["level"] == "warning"
    assert second["msg"] == 'quote " and \\ back'


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_fabps_logs_reads_them_by_role_and_index(tmp_path, fmt):
    tool = os.path.join(os.environ.get("FABPS_BUILD_DIR", "build"),
                        "cmd/logs/fabps-logs")
    if not os.access(tool, os.X_OK):
        pytest.skip("fabps-logs not built")
    run_child(tmp_path, fmt)
    # A line of another process the filter must leave out.
    (tmp_path / "pserver-0.log").write_text(
        "I 2026-12-04 14:27:40.394 pserver-0@h main.cc:1] other\n")
    out = subprocess.run([tool, "--role", "trainer", "--index", "3",
                          str(tmp_path)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "hello there" in out and "other" not in out, out

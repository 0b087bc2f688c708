"""The Python examples of the top README.md run as printed: each ```sh
block that pipes a script into `PYTHONPATH=build/python /usr/bin/python3 -
<<'PY'` runs against one fresh fabps-pserver (its address in place of the
README's 127.0.0.1:7000) with the build's package, and prints what the
README's comment says it prints.

  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/readme_test.py
"""

import os
import re
import subprocess
import sys

import pytest

from pserver_procs import PServerProcs, built_binary

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
HEREDOC = "PYTHONPATH=build/python /usr/bin/python3 - <<'PY'\n"


def scripts():
    """The README's heredoc scripts, in order."""
    with open(README) as f:
        text = f.read()
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if HEREDOC in block:
            out.append(block.split(HEREDOC, 1)[1].split("\nPY\n", 1)[0])
    return out


# What each script prints, in README order; the README's comment on its
# print line says the same.
EXPECTED = ["[-0.5 -0.5 -0.5]", "loss 0.000, 256 rows held"]


def test_every_script_is_checked():
    assert len(scripts()) == len(EXPECTED), (
        "README.md's heredoc scripts and EXPECTED differ in number: add the "
        "new script's output to EXPECTED")


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_readme_script_runs_as_printed(index, tmp_path):
    code = scripts()[index]
    assert EXPECTED[index] in code, "the README's comment shows the output"
    procs = PServerProcs("tcp;ofi_rxm", 1, tmp_path).start_all()
    try:
        assert '"127.0.0.1:7000"' in code
        code = code.replace('"127.0.0.1:7000"', f'"{procs.addresses[0]}"')
        env = dict(os.environ, PYTHONPATH=built_binary("python"))
        r = subprocess.run([sys.executable, "-"], input=code, text=True,
                           capture_output=True, env=env, timeout=240,
                           cwd=tmp_path)
    finally:
        procs.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].strip() == EXPECTED[index], r.stdout

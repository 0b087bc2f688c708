"""The wheel the build makes (target fabps_wheel, python/make_wheel.py),
installed with pip into a fresh venv and used from there.

A venv of Debian's python3 (--system-site-packages: numpy and torch from
Debian) in this test's own temporary directory gets the wheel with `pip
install --no-index --no-deps`. Its interpreter then runs, from a directory
outside the source and build trees and without PYTHONPATH, the examples of
python/README.md (the numpy "Example" and the PyTorch loop of "Embedding
tables in PyTorch") against fresh fabps-pserver processes on free ports, and
checks what pip installed: the version in the package metadata is CMake's
project version, fabps and fabps._core load from the venv, help(fabps)
names fabps.torch, the extension's shared libraries are the system's, and
the stubs match the extension (mypy's stubtest) and reach a type checker
(py.typed). The wheel itself: its files, its platform tag, and the same bytes
when made again.

Skipped only where python3-venv is missing (tools/setup.sh installs it).

  FABPS_BUILD_DIR=<build> FABPS_VERSION=0.1.0 \
      /usr/bin/python3 -m pytest tests/python/wheel_install_test.py
"""

import glob
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from pserver_procs import PServerProcs, built_binary

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = built_binary("")
WHEEL_DIR = os.environ.get("FABPS_WHEEL_DIR") or built_binary("python/dist")
README = os.path.join(SOURCE_DIR, "python", "README.md")

try:
    import ensurepip  # noqa: F401 - Debian ships it in python3-venv
except ImportError:
    pytest.skip("python3-venv is not installed (tools/setup.sh installs it): "
                "no venv to install the wheel into", allow_module_level=True)


def the_wheel():
    wheels = glob.glob(os.path.join(WHEEL_DIR, "fabps-*.whl"))
    assert len(wheels) == 1, (
        f"expected one wheel in {WHEEL_DIR} (build the target fabps_wheel), "
        f"found {wheels}")
    return wheels[0]


def clean_env():
    """The environment of a user's shell: nothing pointing at the trees."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "FABPS_BUILD_DIR",
                        "FABPS_WHEEL_DIR")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INDEX"] = "1"
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def run(argv, cwd, timeout=300):
    p = subprocess.run(argv, cwd=cwd, env=clean_env(), capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (
        f"{argv} exited {p.returncode}\nstdout:\n{p.stdout}\n"
        f"stderr:\n{p.stderr}")
    return p.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(the venv's python, a working directory outside both trees)."""
    root = tmp_path_factory.mktemp("wheel")
    outside = root / "work"
    outside.mkdir()
    for tree in (SOURCE_DIR, BUILD_DIR):
        assert not str(outside).startswith(tree + os.sep)
    v = root / "venv"
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(v)],
        cwd=outside)
    python = str(v / "bin" / "python")
    run([python, "-m", "pip", "install", "--no-index", "--no-deps",
         the_wheel()], cwd=outside)
    return python, outside


def test_wheel_holds_the_package_and_the_extension():
    with zipfile.ZipFile(the_wheel()) as z:
        names = z.namelist()
        wheel_meta = z.read("fabps-%s.dist-info/WHEEL" %
                            os.environ["FABPS_VERSION"]).decode()
    for name in ["fabps/__init__.py", "fabps/_version.py", "fabps/client.py",
                 "fabps/torch.py", "fabps/embedding.py", "fabps/py.typed",
                 "fabps/_core.pyi"]:
        assert name in names
    cores = [n for n in names if re.fullmatch(r"fabps/_core\..*\.so", n)]
    assert len(cores) == 1, names
    assert {n.split("/")[0] for n in names} == {
        "fabps", "fabps-%s.dist-info" % os.environ["FABPS_VERSION"]}
    assert not any("__pycache__" in n for n in names)
    tag = "cp%d%d-cp%d%d-linux_x86_64" % (sys.version_info[:2] * 2)
    assert f"Tag: {tag}" in wheel_meta
    assert "Root-Is-Purelib: false" in wheel_meta


def test_wheel_is_reproducible(tmp_path):
    """make_wheel.py again over the same built package: the same bytes."""
    run([sys.executable, os.path.join(SOURCE_DIR, "python", "make_wheel.py"),
         "--package", os.path.join(BUILD_DIR, "python", "fabps"),
         "--readme", README, "--version", os.environ["FABPS_VERSION"],
         "--out", str(tmp_path)], cwd=tmp_path)
    again = glob.glob(str(tmp_path / "fabps-*.whl"))
    assert [os.path.basename(w) for w in again] == [
        os.path.basename(the_wheel())]
    with open(the_wheel(), "rb") as a, open(again[0], "rb") as b:
        assert a.read() == b.read(), "the wheel differs when made again"


PROBE = r"""
import importlib.metadata, json, pydoc, sys
import fabps, fabps._core, fabps.torch
print(json.dumps({
    "metadata_version": importlib.metadata.version("fabps"),
    "version": fabps.__version__,
    "prefix": sys.prefix,
    "fabps": fabps.__file__,
    "core": fabps._core.__file__,
    "torch": fabps.torch.__file__,
    "help": pydoc.render_doc(fabps, renderer=pydoc.plaintext),
}))
"""


def test_installed_package(venv):
    python, outside = venv
    got = json.loads(run([python, "-c", PROBE], cwd=outside))
    assert got["metadata_version"] == os.environ["FABPS_VERSION"]
    assert got["version"] == os.environ["FABPS_VERSION"]
    prefix = os.path.dirname(os.path.dirname(python))
    assert got["prefix"] == prefix
    for key in ("fabps", "core", "torch"):
        assert got[key].startswith(prefix + os.sep), (key, got[key])
    for name in ("fabps.torch", "fabps.torch.DistributedOptimizer",
                 "fabps.torch.Embedding", "fabps.torch.EmbeddingBag"):
        assert name in got["help"], name

    # The extension links the project's libraries statically: no RPATH, and
    # every library it loads is a system one.
    dynamic = run(["readelf", "-d", got["core"]], cwd=outside)
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic
    ldd = run(["ldd", got["core"]], cwd=outside)
    assert "not found" not in ldd, ldd
    for path in re.findall(r"=> (\S+)", ldd):
        assert path.startswith(("/lib/", "/usr/lib/", "/lib64/")), ldd
    assert "libfabric.so" in ldd


def readme_block(heading):
    """The first ```python block of python/README.md's section `heading`."""
    with open(README) as f:
        text = f.read()
    section = text.split("\n## " + heading + "\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run_example(venv, heading, tmp_path, checks):
    """Runs the README's example of `heading` with the venv's python
    against one fresh pserver; the example's address 127.0.0.1:7000 is the
    pserver's. Returns its output."""
    python, outside = venv
    procs = PServerProcs("tcp;ofi_rxm", 1, tmp_path).start_all()
    try:
        code = readme_block(heading)
        assert '"127.0.0.1:7000"' in code
        code = code.replace('"127.0.0.1:7000"', f'"{procs.addresses[0]}"')
        script = outside / (re.sub(r"\W+", "_", heading) + ".py")
        script.write_text(code + "\n" + checks)
        return run([python, str(script)], cwd=outside)
    finally:
        procs.close()


def test_readme_example(venv, tmp_path):
    out = run_example(venv, "Example", tmp_path,
                      "assert (w == -0.5).all(), w[:4]\nprint('w ok')\n")
    assert out.split() == ["initialized", "w", "ok"], out


def test_readme_pytorch_loop(venv, tmp_path):
    out = run_example(venv, "Embedding tables in PyTorch", tmp_path, "")
    lines = out.splitlines()
    assert lines[-1] == "1000 rows held", out
    losses = [float(line.split()[1]) for line in lines[:-1]]
    assert len(losses) == 4 and losses[-1] < losses[0], out


def test_stubs_match_the_extension(venv):
    """stubtest compares fabps/_core.pyi with the installed extension: a
    binding missing from the stub (or a stub entry without a binding)
    fails. pybind11's metaclass and Handle's absent constructor are what
    a stub cannot say."""
    python, outside = venv
    p = subprocess.run([python, "-m", "mypy.stubtest", "fabps._core"],
                       cwd=outside, env=clean_env(), capture_output=True,
                       text=True, timeout=300)
    errors = [line for line in p.stdout.splitlines()
              if line.startswith("error:")]
    expected = [line for line in errors
                if line.endswith("is inconsistent, metaclass differs") or
                line.startswith("error: fabps._core.Handle.__init__ is "
                                "inconsistent, stub does not have *args")]
    assert "(checked 1 module)" in p.stdout, p.stdout + p.stderr
    assert errors == expected, p.stdout + p.stderr


def test_types_reach_a_type_checker(venv):
    """py.typed: mypy reads the installed package's types (a wrong one is
    an error), not Any."""
    python, outside = venv
    (outside / "typed.py").write_text(
        "import fabps\n"
        "lr: int = fabps.Rule('sgd').lr\n"
        "ok: float = fabps.Rule('sgd').lr\n")
    p = subprocess.run([python, "-m", "mypy", "--no-incremental",
                        "--follow-imports=silent", "typed.py"],
                       cwd=outside, env=clean_env(), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(r'typed\.py:2: error: Incompatible types in assignment '
                     r'\(expression has type "float", variable has type '
                     r'"int"\)', p.stdout), p.stdout + p.stderr
    assert "Found 1 error in 1 file" in p.stdout, p.stdout + p.stderr

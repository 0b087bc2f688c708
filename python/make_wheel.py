#!/usr/bin/python3
"""Makes the wheel of the package fabps from the build tree, offline.

    /usr/bin/python3 python/make_wheel.py --package <build>/python/fabps \
        --readme python/README.md --version 0.1.0 --out <build>/python/dist

The CMake target fabps_wheel runs it. It stages the built package (the
pure-Python modules, the stubs, py.typed and the extension fabps._core, its
debug sections stripped) beside a generated setup.py and pyproject.toml,
and runs `pip wheel --no-deps --no-build-isolation --no-index` over them with
the interpreter running this script (Debian's setuptools and wheel): nothing
is fetched. The wheel is tagged for that interpreter and platform (e.g.
cp311-cp311-linux_x86_64) because it holds a compiled module.

The same inputs give the same bytes: the staged files get fixed modes, the
archive's times come from SOURCE_DATE_EPOCH (fixed here) and bdist_wheel
writes its entries in sorted order. --out holds only the new wheel afterwards.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

# 1980-01-01T00:00:00Z, the earliest time a zip entry can hold: the wheel's
# bytes do not depend on when or from which checkout it was made.
SOURCE_DATE_EPOCH = "315532800"

# What a file of the built package must match to go into the wheel
# (__pycache__ and anything else a test run left there stays out).
PACKAGE_FILES = ["*.py", "*.pyi", "py.typed", "_core.*.so"]

SETUP_PY = """\
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    # fabps/_core.*.so is prebuilt by CMake: a wheel for this interpreter
    # and platform, not py3-none-any.
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "fabps"
version = "{version}"
description = "Trainer side of the fabps parameter server: numpy and PyTorch over libfabric RMA"
readme = {{file = "README.md", content-type = "text/markdown"}}
requires-python = "=={major_minor}.*"
dependencies = ["numpy"]
classifiers = [
    "Programming Language :: Python :: 3",
    "Programming Language :: C++",
    "Operating System :: POSIX :: Linux",
    "Typing :: Typed",
]

[project.optional-dependencies]
torch = ["torch"]

[tool.setuptools]
packages = ["fabps"]
include-package-data = false
zip-safe = false

[tool.setuptools.package-data]
fabps = ["*.pyi", "py.typed", "_core.*.so"]
"""


def stage_package(package, strip, dest):
    """Copies the files of the built package into dest with fixed modes;
    the extension without its debug sections when `strip` is given."""
    os.makedirs(dest)
    names = sorted({os.path.basename(p) for pattern in PACKAGE_FILES
                    for p in glob.glob(os.path.join(package, pattern))})
    cores = [n for n in names if n.endswith(".so")]
    if len(cores) != 1 or "__init__.py" not in names or "py.typed" not in names:
        sys.exit(f"make_wheel: {package} is not a built fabps package "
                 f"(one _core.*.so, __init__.py, py.typed): {names}")
    for name in names:
        src, dst = os.path.join(package, name), os.path.join(dest, name)
        if name in cores and strip:
            subprocess.run([strip, "--strip-debug", "-o", dst, src], check=True)
        else:
            shutil.copyfile(src, dst)
        os.chmod(dst, 0o755 if name in cores else 0o644)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", required=True,
                    help="the built package folder (<build>/python/fabps)")
    ap.add_argument("--readme", required=True,
                    help="the package's long description (python/README.md)")
    ap.add_argument("--version", required=True,
                    help="the package version (CMake's PROJECT_VERSION)")
    ap.add_argument("--out", required=True, help="folder for the wheel")
    ap.add_argument("--strip", default=shutil.which("strip"),
                    help="strip program for the extension ('' keeps debug info)")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fabps-wheel-") as stage:
        stage_package(args.package, args.strip, os.path.join(stage, "fabps"))
        with open(os.path.join(stage, "setup.py"), "w") as f:
            f.write(SETUP_PY)
        with open(os.path.join(stage, "pyproject.toml"), "w") as f:
            f.write(PYPROJECT.format(
                version=args.version,
                major_minor=f"{sys.version_info[0]}.{sys.version_info[1]}"))
        shutil.copyfile(args.readme, os.path.join(stage, "README.md"))
        built = os.path.join(stage, "dist")
        env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH,
                   PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                   PIP_NO_CACHE_DIR="1", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet",
                        "--no-deps", "--no-build-isolation", "--no-index",
                        "--wheel-dir", built, stage],
                       check=True, env=env, cwd=stage)
        wheels = glob.glob(os.path.join(built, "fabps-*.whl"))
        if len(wheels) != 1:
            sys.exit(f"make_wheel: pip made {wheels}, not one fabps wheel")
        for old in glob.glob(os.path.join(args.out, "fabps-*.whl")):
            os.unlink(old)
        out = os.path.join(args.out, os.path.basename(wheels[0]))
        shutil.copyfile(wheels[0], out)


if __name__ == "__main__":
    main()

"""What the PyTorch example trainers (fabps-fashion-mnist-torch here and
fabps-ctr-torch in examples/ctr_torch, which copies this file) share with
each other and with the C++ trainers' command lines: the flag value types,
a parser that says a bad flag in one line and exits 2, the checks of the
connection flags, and the files --test-data names."""

import argparse
import glob
import os
import re
import sys


def ranged(kind, lo, hi):
    """A flag type: `kind` (int, float) in [lo, hi]."""
    def check(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not a {kind.__name__}")
        if not lo <= v <= hi:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"Value {text} not in range {lo} to {hi}")
        return v
    return check


def host_port(text):
    """A flag type: host:port, or "" (the default)."""
    if text == "":  # the default: argparse converts string defaults too
        return text
    m = re.fullmatch(r"(.+):(\d{1,5})", text)
    if not m or not 1 <= int(m.group(2)) <= 65535:
        raise argparse.ArgumentTypeError(f"'{text}' is not host:port "
                                         "(port in 1..65535)")
    return text


def list_of(check):
    """A flag type: comma-separated values of type `check`."""
    def parse(text):
        return [check(t) for t in text.split(",")]
    return parse


class Parser(argparse.ArgumentParser):
    """One line on a bad flag, as the C++ trainers print (no usage dump)."""

    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def fail(program, flag, message):
    """A flag the checks after parsing refuse: one line, exit 2."""
    print(f"{program}: {flag}: {message}", file=sys.stderr)
    sys.exit(2)


def check_connection_flags(program, c):
    """The checks of --master, --pservers, --job and --dataset that parsing
    cannot make (the C++ trainers' ParseFlags makes the same)."""
    if not c.master and not c.store:
        fail(program, "--master", "required when --store is not given")
    if not c.pservers and not c.store:
        fail(program, "--pservers", "required when --store is not given")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", c.job):
        fail(program, "--job", f"'{c.job}' is not [A-Za-z0-9._-]{{1,64}}")
    if any(not g for g in c.dataset):
        fail(program, "--dataset", "empty glob")


def expand_data_files(dir_or_glob):
    """The files --test-data names, as the C++ ExpandDataFiles: a directory
    means its regular files not starting with '.' nor ending with '.tmp';
    anything else is a glob. Sorted; FileNotFoundError when none."""
    if os.path.isdir(dir_or_glob):
        files = [os.path.join(dir_or_glob, n) for n in os.listdir(dir_or_glob)
                 if n and not n.startswith(".") and not n.endswith(".tmp")]
    else:
        files = glob.glob(dir_or_glob)
    files = sorted(f for f in files if os.path.isfile(f))
    if not files:
        raise FileNotFoundError("no data files match " + dir_or_glob)
    return files

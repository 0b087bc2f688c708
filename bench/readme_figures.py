#!/usr/bin/python3
"""Rewrites the figure table of the top-level README from bench/figures.tsv.

  bench/readme_figures.py            # rewrite README.md between the markers
  bench/readme_figures.py --check    # exit 1 if README.md is not up to date

bench/figures.tsv holds one figure per line, six tab-separated fields (what,
figure, target, machine, date, load) under a header line of the same six
names; lines starting with '#' and blank lines are skipped. The table goes
between the lines `<!-- figures:begin -->` and `<!-- figures:end -->` of
README.md, replacing what is there; nothing else in the file changes. The
output depends only on figures.tsv, so a second run changes nothing.
"""

import argparse
import os
import sys

ROOT = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BEGIN = "<!-- figures:begin -->"
END = "<!-- figures:end -->"
FIELDS = ["what", "figure", "target", "machine", "date (UTC)", "load"]


def read_figures(path):
    rows = []
    header = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != len(FIELDS):
                sys.exit(f"{path}:{n}: {len(fields)} fields, want {len(FIELDS)}"
                         " (tab-separated)")
            if any("|" in x for x in fields):
                sys.exit(f"{path}:{n}: '|' would break the table")
            if header is None:
                if fields != FIELDS:
                    sys.exit(f"{path}:{n}: header must be {FIELDS}")
                header = fields
                continue
            if not fields[1].strip() or not all(x.strip() for x in fields[3:]):
                sys.exit(f"{path}:{n}: a figure needs its machine, date and load")
            rows.append([x.strip() for x in fields])
    if header is None or not rows:
        sys.exit(f"{path}: no header or no figures")
    return header, rows


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def render(readme, lines):
    text = readme.split("\n")
    begins = [i for i, l in enumerate(text) if l.strip() == BEGIN]
    ends = [i for i, l in enumerate(text) if l.strip() == END]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        sys.exit(f"README.md: want one {BEGIN} line before one {END} line")
    return "\n".join(text[:begins[0] + 1] + lines + text[ends[0]:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true",
                   help="exit 1 if README.md differs from what it would write")
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    p.add_argument("--figures",
                   default=os.path.join(ROOT, "bench", "figures.tsv"))
    a = p.parse_args()
    with open(a.readme, encoding="utf-8") as f:
        old = f.read()
    new = render(old, table(*read_figures(a.figures)))
    if new == old:
        return 0
    if a.check:
        print(f"{a.readme} is out of date: run {sys.argv[0]}", file=sys.stderr)
        return 1
    tmp = a.readme + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, a.readme)
    print(f"{a.readme}: figure table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())

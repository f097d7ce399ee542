#!/usr/bin/env python3
"""docs/raw/FIGURES.md is the only way into the kept output. Checked:
  1. every file under docs/raw/ that git tracks is named in FIGURES.md (as
     `raw/<path>`, by its file name alone, in a brace list such as
     `fuzz_{a,b}.txt`, or by its folder as `raw/<folder>/`);
  2. every `raw/...` path FIGURES.md names exists.
Exits 1 naming what is missing. Run by ctest (figures_index).
"""
import fnmatch
import itertools
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = os.path.join(ROOT, "docs", "raw")


def expand(token):
    """`a/{b,c}.txt` -> [a/b.txt, a/c.txt] (any number of brace lists)."""
    parts = re.split(r"(\{[^{}]*\})", token)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*choices)]


def main():
    with open(os.path.join(RAW, "FIGURES.md")) as f:
        text = f.read()
    named = set()  # paths under docs/raw/ (files, or folders ending in /)
    for token in re.findall(r"(?:docs/)?raw/[A-Za-z0-9_.{},*/-]+", text):
        token = token.split("raw/", 1)[1].rstrip(".,")
        named.update(expand(token))
    # A file named without its folder, next to one named with it (`raw/
    # corpus/inprocess.md`, `inprocess.jsonl`): any backticked file name.
    bare = set()
    for token in re.findall(r"`([A-Za-z0-9_.{},*-]+\.[a-z]+)`", text):
        bare.update(expand(token))
    tracked = subprocess.run(["git", "ls-files", "docs/raw"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    problems = []
    for path in tracked:
        rel = os.path.relpath(os.path.join(ROOT, path), RAW)
        if rel == "FIGURES.md":
            continue
        folders, d = set(), os.path.dirname(rel)
        while d:
            folders.add(d + "/")
            d = os.path.dirname(d)
        base = os.path.basename(rel)
        if (rel not in named and not any(fnmatch.fnmatch(base, b) for b in bare)
                and not folders & named):
            problems.append(f"not in FIGURES.md: docs/raw/{rel}")
    for rel in sorted(named):
        if "*" in rel:
            continue
        if not os.path.exists(os.path.join(RAW, rel)):
            problems.append(f"FIGURES.md names a missing file: docs/raw/{rel}")
    for p in problems:
        print(p)
    print(f"check_figures: {len(tracked)} kept files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

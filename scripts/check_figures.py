#!/usr/bin/env python3
"""docs/raw/FIGURES.md is the only way into the kept output. Checked:
  1. every file under docs/raw/ that git tracks is named in FIGURES.md (as
     `raw/<path>`, by its file name alone, in a brace list such as
     `fuzz_{a,b}.txt`, or by its folder as `raw/<folder>/`);
  2. every `raw/...` path FIGURES.md names exists;
  3. every relative link of README.md and docs/*.md (`[x](path#anchor)`)
     and every `raw/...` path they cite points at a file that exists, and
     each `#anchor` at a heading of that file.
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


def slug(heading):
    """GitHub's anchor for a markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", f.read(), re.M)}


def check_links():
    """Relative links and cited kept outputs of README.md and docs/*.md."""
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", n) for n in os.listdir(os.path.join(ROOT, "docs"))
        if n.endswith(".md"))
    problems = []
    for doc in docs:
        base = os.path.dirname(doc)
        name = os.path.relpath(doc, ROOT)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else doc
            if not os.path.exists(full):
                problems.append(f"{name}: link to a missing file: {target}")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                problems.append(f"{name}: link to a missing heading: {target}")
        for token in re.findall(r"(?<![\w/])(?:docs/)?raw/[A-Za-z0-9_./{},-]+", text):
            rel = token.split("raw/", 1)[1].rstrip(".,")
            for one in expand(rel):
                if not os.path.exists(os.path.join(RAW, one)):
                    problems.append(f"{name}: cites a missing kept output: raw/{one}")
    return problems


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
    problems += check_links()
    for p in problems:
        print(p)
    print(f"check_figures: {len(tracked)} kept files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

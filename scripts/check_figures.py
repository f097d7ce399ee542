#!/usr/bin/env python3
"""docs/raw/FIGURES.md is the only way into the kept output. A kept run is
plain files (its summary, its scripts) plus its data in its experiment's
compressed archive, docs/raw/<experiment>/data.tar.xz (scripts/keep_run.sh);
a member is cited as `raw/<experiment>/data.tar.xz:<member>`, a folder of
members as `raw/<experiment>/data.tar.xz:<folder>/`, and stands for the
path `raw/<experiment>/<member>`. This script reads inside the archives
(tarfile). Checked:
  1. every file under docs/raw/ that git tracks, and every member of every
     archive there, is named in FIGURES.md (as `raw/<path>`, as an
     archive's member, by its file name alone, in a brace list such as
     `fuzz_{a,b}.txt`, or by its folder as `raw/<folder>/`);
  2. every `raw/...` path FIGURES.md names exists, as a file or folder or
     as an archive's member or folder of members;
  3. every relative link of README.md and docs/*.md (`[x](path#anchor)`)
     and every `raw/...` path they cite points at a file, folder or member
     that exists, and each `#anchor` at a heading of that file;
  4. every archive reads, and no member is also a plain file;
  5. git tracks at most MAX_FILES files under docs/raw/.
Exits 1 naming what is missing. Run by ctest (figures_index).
"""
import fnmatch
import itertools
import lzma
import os
import re
import subprocess
import sys
import tarfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = os.path.join(ROOT, "docs", "raw")
MAX_FILES = 200
ARCHIVE = r"\.(?:tar\.xz|tar\.gz|tgz)"
# `raw/a/b.txt`, `raw/a/data.tar.xz:run/b.txt` (and `docs/raw/...`).
PATH_CHARS = r"[A-Za-z0-9_./{},*-]"
TOKEN = r"(?:docs/)?raw/" + PATH_CHARS + r"+(?::" + PATH_CHARS + r"+)?"


def expand(token):
    """`a/{b,c}.txt` -> [a/b.txt, a/c.txt] (any number of brace lists)."""
    parts = re.split(r"(\{[^{}]*\})", token)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*choices)]


def raw_paths(text, after=""):
    """The `raw/...` paths a text cites (each after the regex `after`),
    relative to docs/raw/, braces expanded; an archive's member as
    `<archive>:<member>`."""
    out = []
    for token in re.findall(after + TOKEN, text):
        rel = token.split("raw/", 1)[1]
        head, sep, member = rel.partition(":")
        if sep and not re.search(ARCHIVE + "$", head):
            rel = head  # a colon after a plain path is prose
        out += [p.rstrip(".,:") for p in expand(rel.rstrip(".,:"))]
    return out


class Archives:
    """What git tracks under docs/raw/, and the archives there, read once:
    member names by archive."""

    def __init__(self):
        listed = subprocess.run(["git", "ls-files", "docs/raw"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.split()
        self.plain = {os.path.relpath(os.path.join(ROOT, p), RAW) for p in listed
                      if os.path.isfile(os.path.join(ROOT, p))}
        self.members = {}  # archive path relative to docs/raw -> set of names
        self.problems = []

    def names(self, rel):
        if rel not in self.members:
            try:
                with tarfile.open(os.path.join(RAW, rel)) as tar:
                    self.members[rel] = {m.name for m in tar.getmembers() if m.isfile()}
            except (OSError, EOFError, tarfile.TarError, lzma.LZMAError, zlib.error) as e:
                self.problems.append(f"docs/raw/{rel}: unreadable archive: {e}")
                self.members[rel] = set()
        return self.members[rel]

    def exists(self, rel):
        """A path under docs/raw/, or `<archive>:<member>`: a file git tracks
        (and that is there) or a folder holding one, or an archive's member or folder of members
        (`*` matches any characters)."""
        head, sep, member = rel.partition(":")
        if not sep:
            names, path = self.plain, rel.rstrip("/")
        elif head in self.plain:
            names, path = self.names(head), member.rstrip("/")
        else:
            return False
        if not path:
            return bool(names)
        return any(fnmatch.fnmatchcase(n, path) or fnmatch.fnmatchcase(n, path + "/*")
                   for n in names)


def logical(rel):
    """`decay/data.tar.xz:burst/a.txt` -> `decay/burst/a.txt` (the path the
    member stands for); other paths unchanged."""
    head, sep, member = rel.partition(":")
    if not sep:
        return rel
    folder = os.path.dirname(head)
    return f"{folder}/{member}" if folder else member


def slug(heading):
    """GitHub's anchor for a markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", f.read(), re.M)}


def check_links(archives):
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
        for one in raw_paths(text, after=r"(?<![\w/])"):
            if not archives.exists(one):
                problems.append(f"{name}: cites a missing kept output: raw/{one}")
    return problems


def main():
    with open(os.path.join(RAW, "FIGURES.md")) as f:
        text = f.read()
    archives = Archives()
    cited = raw_paths(text)  # as written: plain, or <archive>:<member>
    # What the citations name, as paths under docs/raw/ (files, or folders
    # ending in /); a member stands for the path under its archive's folder,
    # and naming a member names its archive too.
    named = {logical(c) for c in cited} | {c.partition(":")[0] for c in cited}
    # A plain file named without its folder, next to one named with it
    # (`raw/corpus/inprocess.md`, `inprocess.md`): any backticked file name.
    # An archive's member is named by its archive, path or folder.
    bare = set()
    for token in re.findall(r"`([A-Za-z0-9_.{},*-]+\.[a-z]+)`", text):
        bare.update(expand(token))
    plain = archives.plain
    kept = []  # (path under docs/raw/ it stands for, how to cite it)
    for rel in sorted(plain):
        kept.append((rel, rel))
        if re.search(ARCHIVE + "$", rel):
            folder = os.path.dirname(rel)
            for name in sorted(archives.names(rel)):
                path = f"{folder}/{name}" if folder else name
                kept.append((path, f"{rel}:{name}"))
    problems = []
    if len(plain) > MAX_FILES:
        problems.append(f"docs/raw/ holds {len(plain)} files, more than {MAX_FILES}: pack a"
                        " run's data into its experiment's archive (scripts/keep_run.sh)")
    for path, cite in kept:
        if cite == "FIGURES.md":
            continue
        if path != cite and path in plain:
            problems.append(f"both a plain file and in an archive: docs/raw/{cite}")
        folders, d = set(), os.path.dirname(path)
        while d:
            folders.add(d + "/")
            d = os.path.dirname(d)
        base = os.path.basename(path)
        if (not any(fnmatch.fnmatchcase(path, n) for n in named)
                and not (path == cite and any(fnmatch.fnmatchcase(base, b) for b in bare))
                and not folders & named):
            problems.append(f"not in FIGURES.md: docs/raw/{cite}")
    for rel in sorted(set(cited)):
        if not archives.exists(rel):
            problems.append(f"FIGURES.md names a missing file: docs/raw/{rel}")
    problems += check_links(archives)
    problems = archives.problems + problems
    for p in problems:
        print(p)
    members = sum(len(m) for m in archives.members.values())
    print(f"check_figures: {len(plain)} kept files ({len(archives.members)} archives"
          f" of {members} files), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

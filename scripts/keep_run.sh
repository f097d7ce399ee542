#!/usr/bin/env bash
# Packs a kept run's data into its experiment's one compressed file, so that
# docs/raw stays small: a run keeps its summary as a plain file and the rest
# in docs/raw/<experiment>/data.tar.xz, member paths relative to
# docs/raw/<experiment>/ (docs/raw/FIGURES.md cites a member as
# `raw/<experiment>/data.tar.xz:<member>`; scripts/check_figures.py reads
# inside the archive).
#
#   bash scripts/keep_run.sh [--all] DIR [FILE...]
#
# DIR: the run's folder, docs/raw/<experiment>/ or a folder under it.
# FILE...: the files that stay plain (paths relative to DIR), the summary
# the docs link to; default DIR/summary.md if there is one. Scripts (*.sh,
# *.py) stay plain as well, so a run's command stays runnable, and so do the
# files git already tracks there (the kept summaries of earlier runs) unless
# --all is given. Every other file under DIR (a new run's output) goes into
# the archive, added to what it holds (a member of the same path is
# replaced). The archive is written the same way every time
# (GNU tar, sorted names, mtime 0, owner 0, xz), extracted again and compared
# with what went in, each packed file by sha256; only then are the files
# removed (and from git's index, if tracked) and the archive `git add`ed.
# Then cite what the figures need in docs/raw/FIGURES.md and run
# scripts/check_figures.py.
set -euo pipefail
usage() { echo "usage: $0 [--all] DIR [FILE...]   (DIR under docs/raw/<experiment>/)" >&2; exit 2; }
all=0
if [ "${1:-}" = --all ]; then all=1; shift; fi
[ $# -ge 1 ] || usage
root="$(cd "$(dirname "$0")/.." && pwd)"
raw="$root/docs/raw"
[ -d "$1" ] || { echo "keep_run: no folder $1" >&2; exit 2; }
dir="$(realpath -- "$1")"
shift
case "$dir/" in
  "$raw"/?*/*) ;;
  *) echo "keep_run: $dir is not under docs/raw/<experiment>/" >&2; usage ;;
esac
rel="${dir#"$raw"/}"          # decay/burst
exp="${rel%%/*}"              # decay
sub="${rel#"$exp"}"
sub="${sub#/}"                # burst, or empty for the experiment's folder
archive="$raw/$exp/data.tar.xz"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tree" "$tmp/check"
if [ $# -eq 0 ] && [ -f "$dir/summary.md" ]; then set -- summary.md; fi
for f in "$@"; do
  [ -f "$dir/$f" ] || { echo "keep_run: no file $dir/$f to keep" >&2; exit 2; }
done
printf '%s\n' "$@" > "$tmp/keep"
if [ "$all" = 0 ]; then
  (cd "$dir" && git ls-files -- .) >> "$tmp/keep"
fi
(cd "$dir" && find . -type f ! -name '*.sh' ! -name '*.py' ! -path ./data.tar.xz \
   -printf '%P\n') | LC_ALL=C sort | grep -vxF -f "$tmp/keep" > "$tmp/pack" || true
if [ ! -s "$tmp/pack" ]; then
  echo "keep_run: nothing to pack under docs/raw/$rel"
  exit 0
fi

[ ! -e "$archive" ] || tar -xJf "$archive" -C "$tmp/tree"
while IFS= read -r f; do
  member="${sub:+$sub/}$f"
  mkdir -p "$tmp/tree/$(dirname "$member")"
  cp -p -- "$dir/$f" "$tmp/tree/$member"
done < "$tmp/pack"
(cd "$tmp/tree" && find . -type f -printf '%P\n' | LC_ALL=C sort > "$tmp/members"
 tar --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
     --mode='a+r,u+w,go-w' --verbatim-files-from -T "$tmp/members" -cf - \
   | xz -6 -T1 -c) > "$tmp/data.tar.xz"

# What went in is what comes out: every member byte for byte, and each
# packed file against the file it came from.
tar -xJf "$tmp/data.tar.xz" -C "$tmp/check"
diff -r "$tmp/tree" "$tmp/check" > /dev/null \
  || { echo "keep_run: the new archive differs from its input" >&2; exit 1; }
(cd "$dir" && xargs -d '\n' sha256sum -- < "$tmp/pack") > "$tmp/sums"
(cd "$tmp/check/${sub:-.}" && sha256sum --check --quiet "$tmp/sums") \
  || { echo "keep_run: a packed file differs from its member" >&2; exit 1; }

cp "$tmp/data.tar.xz" "$archive"
cd "$dir"
xargs -d '\n' git rm -q --cached --ignore-unmatch -- < "$tmp/pack"
xargs -d '\n' rm -f -- < "$tmp/pack"
find "$dir" -mindepth 1 -type d -empty -delete
git add -- "$archive"
echo "keep_run: packed $(wc -l < "$tmp/pack") file(s) of docs/raw/$rel into" \
     "docs/raw/$exp/data.tar.xz ($(wc -l < "$tmp/members") members," \
     "$(stat -c %s "$archive") bytes)"

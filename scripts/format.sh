#!/usr/bin/env bash
# Formats the tree's C++ with the repo's .clang-format (Debian's
# clang-format 14, so every machine formats alike). --check changes nothing
# and fails on any difference: the CI's format leg.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.h' '*.cc')
else
  mapfile -t files < <(find include src tests bench tools examples \
                         -name '*.h' -o -name '*.cc' | sort)
fi
if [ "${1:-}" = --check ]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format.sh: ${#files[@]} files formatted as .clang-format asks"
else
  clang-format -i "${files[@]}"
fi

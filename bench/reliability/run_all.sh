#!/usr/bin/env bash
# Runs every reliability part (docs/RELIABILITY.md) that is not a unit test:
# each part is bench/reliability/<part>.sh, writing its kept output under
# docs/raw/reliability/. Usage: run_all.sh [part ...] (default: all parts).
set -euo pipefail
cd "$(dirname "$0")/../.."
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then
  for f in bench/reliability/*.sh; do
    name="$(basename "$f" .sh)"
    [ "$name" = run_all ] && continue
    parts+=("$name")
  done
fi
for p in "${parts[@]}"; do
  echo "== reliability: $p"
  bash "bench/reliability/$p.sh"
done

#!/usr/bin/env bash
# Runs every reliability part (docs/MEASURE.md, "Reliability") that is not a unit test:
# each part is bench/reliability/<part>.sh, writing its kept output under
# docs/raw/reliability/, and part "fuzz" is every libFuzzer harness for
# 10 min (scripts/fuzz.sh; ARENARPC_FUZZ_SECONDS overrides). Usage:
# run_all.sh [part ...] (default: all parts).
set -euo pipefail
cd "$(dirname "$0")/../.."
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then
  for f in bench/reliability/*.sh; do
    name="$(basename "$f" .sh)"
    [ "$name" = run_all ] && continue
    parts+=("$name")
  done
  parts+=(fuzz)
fi
for p in "${parts[@]}"; do
  echo "== reliability: $p"
  if [ "$p" = fuzz ]; then
    scripts/fuzz.sh "${ARENARPC_FUZZ_SECONDS:-600}" docs/raw/reliability
  else
    bash "bench/reliability/$p.sh"
  fi
done

#!/usr/bin/env bash
# Section 3 of docs/RELIABILITY.md: every libFuzzer harness (tests/fuzz) for
# 10 minutes, one after the other (ARENARPC_FUZZ_SECONDS overrides), with
# ASan+UBSan; executions and the final coverage line per harness go to
# docs/raw/reliability/fuzz_<harness>.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/fuzz.sh "${ARENARPC_FUZZ_SECONDS:-600}" docs/raw/reliability

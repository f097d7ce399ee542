#!/usr/bin/python3
"""The "one failed call" question (docs/DESIGN_NOTES.md, "The benchmark's failed calls"): for ghz
JSON reports written by bench/rpc/rpc_bench.py, every non-OK call by error text,
when it ended relative to the run's end, and how rpc_bench counts it.

  for i in $(seq 24); do bench/rpc/rpc_bench.py --modes=reuse --duration=4 \\
      --warmup=1 --rounds=1 --no_plot --out=/tmp/cut/$i; done
  bench/reliability/ghz_cutoff.py 4 /tmp/cut/*/ghz_*.json
"""
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rpc"))
from rpc_common import CUT_AT_END, cut_at_end, ghz_time  # noqa: E402

OLD_CUT = CUT_AT_END[:3]  # the list before "transport is closing" was added


def main():
    seconds, paths = float(sys.argv[1]), sys.argv[2:]
    texts = collections.Counter()
    rows = []
    for path in paths:
        with open(path) as f:
            details = json.load(f).get("details") or []
        begin = min(ghz_time(d["timestamp"]) - d["latency"] / 1e9 for d in details)
        bad = [d for d in details if d.get("status") != "OK"]
        for d in bad:
            texts[re.sub(r"[\d.]+:\d+->[\d.]+:\d+", "A->B", d.get("error") or "")] += 1
        old_errors = sum(1 for d in bad if not any(m in (d.get("error") or "") for m in OLD_CUT))
        new_errors = len(bad) - len(cut_at_end(details, seconds))
        ends = [ghz_time(d["timestamp"]) - begin - seconds for d in bad]
        rows.append((os.path.relpath(path, os.path.dirname(os.path.dirname(path))), len(details),
                     len(bad), min(ends) if ends else float("nan"),
                     max(ends) if ends else float("nan"), old_errors, new_errors))
    print("| report | calls | non-OK | first non-OK end vs run end, s | last | errors, old count | "
          "errors, new count |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:+.3f} | {r[4]:+.3f} | {r[5]} | {r[6]} |")
    print()
    print("non-OK calls by error text (addresses elided):")
    for text, n in texts.most_common():
        print(f"  {n:6d}  {text}")
    print(f"runs with errors: old count {sum(1 for r in rows if r[5])} of {len(rows)}, "
          f"new count {sum(1 for r in rows if r[6])} of {len(rows)}")


if __name__ == "__main__":
    main()

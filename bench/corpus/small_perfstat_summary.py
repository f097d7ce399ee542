#!/usr/bin/env python3
"""Medians of a bench/corpus/small_perfstat.sh log, every mode against plain
(`none`) with the same pool bounds: the process's CPU from /proc when the
log has it (`proc_cpu_ms=`), else perf stat's task-clock (the first
version of the script). Runs where the server served nothing in the window
(/proc under 100 ms, or task-clock under 100 ms without /proc) are left out.

  bench/corpus/small_perfstat_summary.py LOG [API]

API (default sync): the pool-bound flags are the sync API's only, so for
callback and async the "default" and "fixed" runs are the same server and
are pooled. "paired": the median (and range) of each round's ratio to
that round's plain run.
"""
import re
import statistics
import sys

LINE = re.compile(r"r(\d+) (\w+) (\w+) calls=(\d+)(?: proc_cpu_ms=(\d+))? ([\d.]+) msec")
api = sys.argv[2] if len(sys.argv) > 2 else "sync"
runs = {}
by_round = {}  # (bounds, round): {mode: cpu}; callback/async: the last run
for line in open(sys.argv[1]):
    m = LINE.match(line)
    if not m:
        continue
    _, bounds, mode, _, proc, task = m.groups()
    if api != "sync":
        bounds = "default"
    cpu = float(proc) if proc is not None else float(task)
    if cpu < 100:
        continue
    runs.setdefault((bounds, mode), []).append((cpu, float(task)))
    by_round.setdefault((bounds, m.group(1)), {})[mode] = cpu
source = "/proc CPU" if any(LINE.match(l) and LINE.match(l).group(5) for l in open(sys.argv[1])) else "perf task-clock"
for bounds in ("default", "fixed"):
    if (bounds, "none") not in runs:
        continue
    base = statistics.median(c for c, _ in runs[(bounds, "none")])
    for mode in ("none", "heap", "arena", "reuse", "auto"):
        v = runs.get((bounds, mode), [])
        if not v:
            continue
        med = statistics.median(c for c, _ in v)
        # The same round's plain run beside it: the paired ratio.
        paired = sorted(r[mode] / r["none"] for (b, _), r in by_round.items()
                        if b == bounds and mode in r and "none" in r)
        pair = (f"  paired x{statistics.median(paired):.3f} ({paired[0]:.2f}-{paired[-1]:.2f})"
                if paired else "")
        print(f"{bounds:8s} {mode:6s} {source} median {med:7.1f} ms  {med / 8:5.1f} us/call  "
              f"x{med / base:.3f} none{pair}  (runs {[c for c, _ in v]})")

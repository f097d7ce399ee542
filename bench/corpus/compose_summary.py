#!/usr/bin/env python3
"""auto beside a preloaded malloc: from a corpus_rpc.py run with
plain+<malloc> and auto+<malloc> configs (and the fixed modes, auto), per
service: each configuration's CPU per call (median of rounds, and the
rounds), then auto+<malloc> / plain+<malloc> (does arenarpc still gain
when the malloc is already there?), auto / plain+<malloc>, and auto /
the best fixed mode, each as the ratio of medians and as the median of
per-round ratios (rounds are interleaved, so a round's ratio cancels what
a slow round does to both).

  bench/corpus/compose_summary.py OUT > OUT/compose.md
"""
import json
import os
import statistics
import sys

MALLOCS = ("mimalloc", "tcmalloc", "jemalloc")


def ratio(rounds, a, b):
    ra, rb = rounds.get(a), rounds.get(b)
    if not ra or not rb:
        return "-"
    per = [x / y for x, y in zip(ra, rb)]
    return f"{statistics.median(ra) / statistics.median(rb):.2f} ({statistics.median(per):.2f})"


def main():
    out = sys.argv[1]
    runs = json.load(open(os.path.join(out, "corpus_rpc.json")))
    services = []
    for r in runs:
        if r["service"] not in services:
            services.append(r["service"])
    print("CPU per call (us), median of interleaved rounds; ratios: of medians (median of per-round ratios)\n")
    for svc in services:
        rounds = {r["config"]: r["cpu_us_rounds"] for r in runs if r["service"] == svc}
        kib = next(r["request_bytes"] for r in runs if r["service"] == svc) / 1024
        print(f"### {svc} ({kib:.0f} KiB)\n")
        print("| configuration | CPU us/call | rounds |")
        print("|---|---:|---|")
        for c, v in rounds.items():
            print(f"| {c} | {statistics.median(v):.0f} | {' '.join(f'{x:.0f}' for x in v)} |")
        fixed = [c for c in ("heap", "arena", "reuse") if c in rounds]
        best = min(fixed, key=lambda c: statistics.median(rounds[c])) if fixed else None
        print()
        print("| malloc | auto+malloc / plain+malloc | auto / plain+malloc | best fixed / plain+malloc |")
        print("|---|---:|---:|---:|")
        for m in MALLOCS:
            if f"plain+{m}" in rounds:
                print(f"| {m} | {ratio(rounds, f'auto+{m}', f'plain+{m}')} | {ratio(rounds, 'auto', f'plain+{m}')} | "
                      f"{ratio(rounds, best, f'plain+{m}') if best else '-'} |")
        if best:
            print(f"\nauto / best fixed ({best}): {ratio(rounds, 'auto', best)}\n")


if __name__ == "__main__":
    main()

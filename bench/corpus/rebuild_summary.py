#!/usr/bin/env python3
"""auto before and after a change of its learner, side by side in one run.

  bench/corpus/rebuild_summary.py OUT_DIR [OUT_DIR ...] > summary.md

Each OUT_DIR is one corpus_rpc.py run with the configurations arena, reuse,
auto (this build) and auto@baseline (--baseline_server: the build before),
interleaved per round. Per service: CPU per call, medians of rounds, of the
best fixed mode (arena or reuse), auto / best and auto@baseline / best;
auto / auto@baseline as the ratio of medians and, in brackets, the median
of the per-round ratios; each learner's measuring share (median of rounds)
and when auto settled (seconds and timed calls, per round).
"""
import json
import os
import re
import statistics
import sys

SETTLE = re.compile(r"after (\d+) samples (\d+) calls ([\d.]+) s; (\d+) decisions")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    print("| API | service | request | best fixed (CPU us/call) | auto / best | before / best "
          "| auto / before (per round) | learning share, auto / before | auto settled (s, calls) |")
    print("|---|---|---:|---|---:|---:|---:|---|---|")
    for d in sys.argv[1:]:
        with open(os.path.join(d, "corpus_rpc.json")) as f:
            results = json.load(f)
        api = os.path.basename(os.path.normpath(d))
        by = {(r["service"], r["config"]): r for r in results}
        for svc in dict.fromkeys(r["service"] for r in results):
            rounds = {c: by[(svc, c)]["cpu_us_rounds"] for c in ("arena", "reuse", "auto", "auto@baseline")
                      if (svc, c) in by}
            if len(rounds) < 4:
                continue
            med = {c: median(v) for c, v in rounds.items()}
            best_mode = min(("arena", "reuse"), key=lambda c: med[c])
            best = med[best_mode]
            per_round = [a / b for a, b in zip(rounds["auto"], rounds["auto@baseline"]) if a and b]
            share = lambda c: median(by[(svc, c)].get("measuring_share_rounds", []))
            settles = [SETTLE.search(l) for l in by[(svc, "auto")].get("auto_log", []) if l.startswith("settle: ")]
            settled = ", ".join(f"{m.group(3)} s / {m.group(2)}" for m in settles if m)
            kib = by[(svc, "auto")].get("request_bytes", 0) / 1024
            fmt = lambda x: f"{100 * x:.1f} %" if x is not None else "?"
            print(f"| {api} | {svc} | {kib:.0f} KiB | {best_mode} {best:.0f} | {med['auto'] / best:.2f} "
                  f"| {med['auto@baseline'] / best:.2f} | {med['auto'] / med['auto@baseline']:.2f} "
                  f"({median(per_round):.2f}) | {fmt(share('auto'))} / {fmt(share('auto@baseline'))} | {settled} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""auto against the best fixed mode and the best preloaded malloc, from
rpc_bench.py runs (rpc_results.json), round by round.

  bench/rpc/auto_summary.py docs/raw/auto_echo/callback docs/raw/auto_echo/sync

Per run: each mode's median CPU per call; the best fixed mode (heap, arena,
reuse) and the best preloaded malloc by those medians; then auto's CPU over
theirs as the ratio of medians and as the median of per-round ratios (the
rounds are interleaved, so a round's ratio compares runs minutes apart at
most); heap over plain; p50/p99/p99.9 of auto over the best fixed mode's.
"""
import json
import os
import statistics
import sys

FIXED = ("heap", "arena", "reuse")


def summarize(run_dir):
    with open(os.path.join(run_dir, "rpc_results.json")) as f:
        results = {r["mode"]: r for r in json.load(f)["results"]}
    cpu = {m: r["cpu_us_per_request"] for m, r in results.items()}
    best = min((m for m in FIXED if m in cpu), key=cpu.get)
    preloaded = [m for m in cpu if m.startswith("plain+")]
    best_pre = min(preloaded, key=cpu.get) if preloaded else None

    def per_round(a, b):
        ra, rb = results[a]["rounds"], results[b]["rounds"]
        ratios = [x["cpu_us_per_request"] / y["cpu_us_per_request"] for x, y in zip(ra, rb)]
        return statistics.median(ratios), ratios

    def row(label, a, b):
        med, ratios = per_round(a, b)
        return (f"| {label} | {a} / {b} | {cpu[a] / cpu[b]:.2f} | {med:.2f} | "
                f"{', '.join(f'{r:.2f}' for r in ratios)} |")

    lines = [f"## {run_dir}", "",
             "| comparison | modes | ratio of medians | median of per-round ratios | per round |",
             "|---|---|---:|---:|---|"]
    lines.append(row("auto / best fixed mode", "auto", best))
    if best_pre:
        lines.append(row("auto / best preloaded malloc", "auto", best_pre))
    lines.append(row("heap / plain", "heap", "plain"))
    lines.append(row("best fixed / plain", best, "plain"))
    lines += ["", "| latency | auto ms | " + best + " ms | auto / " + best + " |", "|---|---:|---:|---:|"]
    for k, name in (("p50_ms", "p50"), ("p99_ms", "p99"), ("p999_ms", "p99.9")):
        a, b = results["auto"][k], results[best][k]
        lines.append(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
    a, b = results["auto"]["peak_rss_mib"], results[best]["peak_rss_mib"]
    lines += ["", f"peak RSS: auto {a:.0f} MiB, {best} {b:.0f} MiB: {a / b:.2f}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n".join(summarize(d) for d in sys.argv[1:]))

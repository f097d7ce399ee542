#!/usr/bin/env python3
"""The floor's summary: corpus_rpc.py's run with plain+floor beside the modes,
and floor_perf.py's attribution of plain's CPU, side by side.

  bench/floor/floor_summary.py CORPUS_OUT PERF_OUT > summary.md

CORPUS_OUT holds corpus_rpc.json, PERF_OUT floor_perf.json.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus"))
import corpus_rpc  # noqa: E402


def main():
    corpus_dir, perf_dir = sys.argv[1:3]
    with open(os.path.join(corpus_dir, "corpus_rpc.json")) as f:
        results = json.load(f)
    perf = {}
    if os.path.exists(os.path.join(perf_dir, "floor_perf.json")):
        with open(os.path.join(perf_dir, "floor_perf.json")) as f:
            perf = {r["service"]: r for r in json.load(f)}
    configs = list(dict.fromkeys(r["config"] for r in results))
    by = {(r["service"], r["config"]): r for r in results}
    names = list(dict.fromkeys(r["service"] for r in results))
    out = ["## Each mode against the floor (medians of the rounds; range over rounds, runs paired)", "",
           corpus_rpc.floor_table(by, names, configs), "",
           "## Two methods: the floor's cut of plain's CPU, measured and attributed", "",
           "| service | (plain - floor) / plain, measured | perf: allocator + page faults | "
           "perf: + message ctor/dtor | perf samples |", "|---|---:|---:|---:|---:|"]
    for n in names:
        if (n, "plain+floor") not in by:
            continue
        plain, floor = by[(n, "plain")]["cpu_us_per_call"], by[(n, "plain+floor")]["cpu_us_per_call"]
        p = perf.get(n)
        cut = p["shares"]["allocator"] + p["shares"]["page faults"] if p else float("nan")
        dtor = cut + p["shares"]["ctor/dtor"] if p else float("nan")
        out.append(f"| {n} | {(plain - floor) / plain:.1%} | {cut:.1%} | {dtor:.1%} | "
                   f"{p['samples'] if p else ''} |")
    # The same shares against perf's floor: plain x (1 - allocator and page
    # faults' share of plain's samples).
    modes = [c for c in configs if c not in ("plain", "plain+floor") and not c.endswith("+floor")]
    out += ["", "Each mode's share removed against perf's floor instead, (plain - mode) / (plain x cut):", "",
            "| service | perf's floor CPU us | " + " | ".join(modes) + " |", "|---|---:|" + "---:|" * len(modes)]
    for n in names:
        if n not in perf or (n, "plain") not in by:
            continue
        plain = by[(n, "plain")]["cpu_us_per_call"]
        cut = perf[n]["shares"]["allocator"] + perf[n]["shares"]["page faults"]
        out.append(f"| {n} | {plain * (1 - cut):.0f} | " + " | ".join(
            f"{(plain - by[(n, c)]['cpu_us_per_call']) / (plain * cut):.0%}" if (n, c) in by else ""
            for c in modes) + " |")
    out += ["", "## Memory under the floor (it only grows)", "",
            "| service | config | MiB used per run (rounds) | peak RSS MiB (median) | minor faults per call |",
            "|---|---|---|---:|---:|"]
    for n in names:
        for c in configs:
            r = by.get((n, c))
            if not r or not (c.endswith("+floor") or c == "plain"):
                continue
            used = [re.search(r"used (\d+) MiB", l).group(1) for l in r.get("floor_malloc_rounds", [])]
            out.append(f"| {n} | {c} | {', '.join(used) or '-'} | {r['peak_rss_mib']:.0f} | "
                       f"{r.get('minor_faults_per_call', float('nan')):.1f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()

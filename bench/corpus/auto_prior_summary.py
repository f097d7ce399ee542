#!/usr/bin/env python3
"""Summary of corpus_rpc.py runs for auto's prior and decisions file.

  bench/corpus/auto_prior_summary.py OUT_DIR [OUT_DIR ...] > summary.md

Per service and API (each OUT_DIR one run of corpus_rpc.py, its
corpus_rpc.json): CPU per call (medians over rounds) of the best fixed mode
(arena, reuse, heap where run), auto, auto with the prior off
(auto+noprior), auto with a decisions file loaded (auto+loaded), async
auto without the user's lines (auto+nolines), and the
best preloaded malloc; auto's peak RSS against the chosen mode's; auto's
measuring share (medians of rounds). Then latency (p50, p99, p99.9 where
the run recorded it) of auto and auto+loaded against the best fixed mode,
and per round what auto's learning did (timed calls, calls lost to a
thread change, side-thread samples, a fall-back to the side thread) and
auto's CPU against the same round's run of the fixed mode it chose.
"""
import json
import os
import re
import sys

SETTLE = re.compile(r"after (\d+) samples (\d+) calls ([\d.]+) s; (\d+) decisions")
# Older runs also name side samples and a fall-back to the side thread.
LEARN = re.compile(r"(\d+) timed calls, (\d+) lost, (?:(\d+) failed)?(?:, (\d+) side samples)?"
                   r"(, fell back|.*, untimed)?")


def main():
    rows = []
    for d in sys.argv[1:]:
        with open(os.path.join(d, "corpus_rpc.json")) as f:
            results = json.load(f)
        api = "?"
        for r in results:
            cmd = r.get("ghz_command", "")
            api = os.path.basename(os.path.normpath(d))
        by = {(r["service"], r["config"]): r for r in results}
        for svc in dict.fromkeys(r["service"] for r in results):
            cpu = lambda c: by[(svc, c)]["cpu_us_per_call"] if (svc, c) in by else None
            fixed = {c: cpu(c) for c in ("heap", "arena", "reuse") if cpu(c) is not None}
            best_name = min(fixed, key=fixed.get)
            best = fixed[best_name]
            pre = {c: cpu(c) for c in ("plain+mimalloc", "plain+tcmalloc", "plain+jemalloc")
                   if cpu(c) is not None}
            best_pre = min(pre.values()) if pre else None
            pre_name = min(pre, key=pre.get).split("+")[1] if pre else ""
            auto = by.get((svc, "auto"), {})
            chose = (auto.get("auto_chose") or "").split("/")
            chosen = chose[0] if len(chose) == 1 and chose[0] in fixed else best_name
            rss = auto.get("peak_rss_mib", 0) / by[(svc, chosen)]["peak_rss_mib"] if auto else None

            def ratio(c, base):
                v = cpu(c)
                return f"{v / base:.2f}" if v is not None and base else ""
            share = auto.get("measuring_share_rounds") or []
            rows.append(
                f"| {svc} | {api} | {by[(svc, best_name)].get('request_bytes', 0) / 1024:.0f} | "
                f"{best_name} {best:.0f} | {cpu('auto') or 0:.0f} | {ratio('auto', best)} | "
                f"{ratio('auto+loaded', best)} | {ratio('auto+noprior', best)} | "
                f"{ratio('auto+nolines', best)} | "
                f"{ratio('auto', best_pre)} {pre_name} | {ratio('plain', best)} | "
                f"{auto.get('auto_chose', '')} | {rss:.2f} | "
                + ", ".join(f"{100 * x:.2f} %" for x in share) + " |")
    print_table(rows)
    print()
    latency(sys.argv[1:])
    print()
    print("First decision per round (samples, calls, seconds of traffic; `decisions` 0: none taken "
          "within the run) and where the running decision came from:")
    print()
    for d in sys.argv[1:]:
        with open(os.path.join(d, "corpus_rpc.json")) as f:
            results = json.load(f)
        for r in results:
            if not r["config"].startswith("auto"):
                continue
            settles = [SETTLE.search(l) for l in r.get("auto_log", []) if l.startswith("settle: ")]
            sources = [l.split(" source ")[1].split()[0] for l in r.get("auto_log", [])
                       if l.startswith("decision: ")]
            text = "; ".join(f"{m.group(3)} s ({m.group(1)} samples, {m.group(2)} calls, "
                             f"{m.group(4)} decisions)" for m in settles if m)
            learn = [LEARN.search(l) for l in r.get("auto_log", []) if l.startswith("settle: ")]
            calls = "; ".join(f"{m.group(1)} timed, {m.group(2)} lost, {m.group(3) or 0} failed, "
                              f"{m.group(4) or 0} side" + (m.group(5) and ", stopped" or "")
                              for m in learn if m)
            # Against the mode it ran in, round by round (the same round's
            # run of that fixed mode): what is left once rounds drift.
            chose = [l.split(" chose ")[1].split()[0] for l in r.get("auto_log", [])
                     if l.startswith("auto: ") and " chose " in l]
            by = {(x["service"], x["config"]): x for x in results}
            paired = [f"{cpu / by[(r['service'], m)]['cpu_us_rounds'][i]:.2f} {m}"
                      for i, (cpu, m) in enumerate(zip(r.get("cpu_us_rounds", []), chose))
                      if (r["service"], m) in by and i < len(by[(r["service"], m)]["cpu_us_rounds"])]
            print(f"- {os.path.basename(os.path.normpath(d))} {r['service']} {r['config']}: {text}; "
                  f"source {', '.join(sources)}" + (f"; calls {calls}" if calls else "")
                  + (f"; CPU / that round's fixed mode it ran: {', '.join(paired)}" if paired else ""))


def latency(dirs):
    """p50 / p99 / p99.9 of auto and auto+loaded over the best fixed mode's
    (the one cheapest in CPU), and the best preloaded malloc named."""
    print("| service | run | best fixed p50 / p99 / p99.9 ms | auto / best: p50, p99, p99.9 | "
          "auto+loaded / best: p50, p99, p99.9 | best preloaded (CPU) | its p99 ms | auto p99 / its |")
    print("|---|---|---|---|---|---|---:|---:|")
    for d in dirs:
        with open(os.path.join(d, "corpus_rpc.json")) as f:
            results = json.load(f)
        by = {(r["service"], r["config"]): r for r in results}
        for svc in dict.fromkeys(r["service"] for r in results):
            fixed = [c for c in ("heap", "arena", "reuse") if (svc, c) in by]
            best = min(fixed, key=lambda c: by[(svc, c)]["cpu_us_per_call"])
            keys = ("p50_ms", "p99_ms", "p999_ms")

            def ms(c):
                return " / ".join(f"{by[(svc, c)].get(k, float('nan')):.2f}" for k in keys)

            def ratios(c):
                if (svc, c) not in by:
                    return ""
                return ", ".join(f"{by[(svc, c)].get(k, float('nan')) / by[(svc, best)].get(k, float('nan')):.2f}"
                                 for k in keys)
            pre = [c for c in ("plain+mimalloc", "plain+tcmalloc", "plain+jemalloc") if (svc, c) in by]
            bp = min(pre, key=lambda c: by[(svc, c)]["cpu_us_per_call"]) if pre else None
            auto_p99 = by.get((svc, "auto"), {}).get("p99_ms")
            pre_cols = ["", "", ""]
            if bp and auto_p99:
                pre_p99 = by[(svc, bp)]["p99_ms"]
                pre_cols = [bp.split("+")[1], f"{pre_p99:.2f}", f"{auto_p99 / pre_p99:.2f}"]
            print(f"| {svc} | {os.path.basename(os.path.normpath(d))} | {best} {ms(best)} | "
                  f"{ratios('auto')} | {ratios('auto+loaded')} | " + " | ".join(pre_cols) + " |")


def print_table(rows):
    print("| service | run | request KiB | best fixed, CPU us/call | auto | auto / best | "
          "auto+loaded / best | auto+noprior / best | auto+nolines / best | "
          "auto / best preloaded | plain / best | "
          "auto chose | auto peak RSS / chosen's | auto measuring share (rounds) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()

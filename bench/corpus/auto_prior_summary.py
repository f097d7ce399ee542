#!/usr/bin/env python3
"""Summary of corpus_rpc.py runs for auto's prior and decisions file.

  bench/corpus/auto_prior_summary.py OUT_DIR [OUT_DIR ...] > summary.md

Per service and API (each OUT_DIR one run of corpus_rpc.py, its
corpus_rpc.json): CPU per call (medians over rounds) of the best fixed mode
(arena, reuse, heap where run), auto, auto with the prior off
(auto+noprior), auto with a decisions file loaded (auto+loaded), async
auto without the user's lines (auto+nolines), and the
best preloaded malloc; auto's peak RSS against the chosen mode's; auto's
measuring share (medians of rounds).
"""
import json
import os
import re
import sys

SETTLE = re.compile(r"after (\d+) samples (\d+) calls ([\d.]+) s; (\d+) decisions")
# How it learned: calls timed on the real calls, lost, failed (newer
# servers), samples of the side thread.
LEARNED = re.compile(r"(\d+) timed calls, (\d+) lost, (?:(\d+) failed, )?(\d+) side samples")


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
                f"{ratio('auto', best_pre)} | {ratio('plain', best)} | "
                f"{auto.get('auto_chose', '')} | {rss:.2f} | "
                + ", ".join(f"{100 * x:.2f} %" for x in share) + " |")
    print_table(rows)
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
            learned = [LEARNED.search(l) for l in r.get("auto_log", []) if l.startswith("settle: ")]
            if any(learned):
                text += "; learned on " + ", ".join(
                    f"{m.group(1)} timed ({m.group(2)} lost, {m.group(3) or 0} failed) + "
                    f"{m.group(4)} side" for m in learned if m)
            print(f"- {os.path.basename(os.path.normpath(d))} {r['service']} {r['config']}: {text}; "
                  f"source {', '.join(sources)}")


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

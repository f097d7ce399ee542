"""Summarizes a corpus_rpc.py run for issue 25: auto against the best fixed mode."""
import json, statistics, sys
res = json.load(open(sys.argv[1]))
by = {(r["service"], r["config"]): r for r in res}
names = list(dict.fromkeys(r["service"] for r in res))
out = ["| service | request KiB | calls/s | heap | arena | reuse | best fixed | auto | auto / best | auto@baseline / best | auto chose | auto peak RSS / chosen mode's | measuring share auto (rounds) | measuring share baseline (rounds) |",
       "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---|---|"]
for n in names:
    g = lambda c: by[(n, c)]["cpu_us_per_call"]
    fixed = {c: g(c) for c in ("heap", "arena", "reuse")}
    best = min(fixed, key=fixed.get)
    a = by[(n, "auto")]; b = by[(n, "auto@baseline")]
    chose = a["auto_chose"] or "arena (unsettled)"
    modes = [m for m in chose.split("/") if m in fixed] or ["arena"]
    rss_ref = max(by[(n, m)]["peak_rss_mib"] for m in modes)
    out.append(f"| {n} | {a.get('request_bytes', 0)/1024:.1f} | {a['rps']} | " +
               " | ".join(f"{fixed[c]:.0f}" for c in ("heap", "arena", "reuse")) +
               f" | {best} | {g('auto'):.0f} | {g('auto')/fixed[best]:.2f} | {g('auto@baseline')/fixed[best]:.2f} | {chose} | "
               f"{a['peak_rss_mib']/rss_ref:.2f} | {', '.join(f'{x:.4f}' for x in a['measuring_share_rounds'])} | "
               f"{', '.join(f'{x:.4f}' for x in b['measuring_share_rounds'])} |")
out += ["", "CPU us per call (medians of the rounds; every round's value in brackets):", ""]
for n in names:
    out.append(f"- {n}: " + "; ".join(f"{c} {by[(n, c)]['cpu_us_per_call']:.0f} {by[(n, c)]['cpu_us_rounds']}"
                                      for c in ("plain", "heap", "arena", "reuse", "auto", "auto@baseline") if (n, c) in by))
out += ["", "Peak RSS MiB (medians): " ]
for n in names:
    out.append(f"- {n}: " + "; ".join(f"{c} {by[(n, c)]['peak_rss_mib']:.0f}"
                                      for c in ("plain", "heap", "arena", "reuse", "auto", "auto@baseline") if (n, c) in by))
out += ["", "auto's own lines at exit (every round):", "", "```"]
for n in names:
    out += by[(n, "auto")]["auto_log"]
out += ["```", "", "auto@baseline (before issue 25) at exit:", "", "```"]
for n in names:
    out += by[(n, "auto@baseline")]["auto_log"]
out += ["```"]
print("\n".join(out))

"""Summarizes a corpus_rpc.py run for the learners' comparison: auto
learning on a side thread (auto) and on the real calls (auto+real) against
the best fixed mode and plain, side by side in one run."""
import json, re, sys
res = json.load(open(sys.argv[1]))
by = {(r["service"], r["config"]): r for r in res}
names = list(dict.fromkeys(r["service"] for r in res))
autos = [c for c in ("auto", "auto+real", "auto+side", "auto+confirm", "auto+noconfirm", "auto@baseline")
         if any(k[1] == c for k in by)]
g = lambda n, c: by[(n, c)]["cpu_us_per_call"] if (n, c) in by else float("nan")
out = ["| service | request KiB | calls/s | plain | arena | reuse | best fixed | " +
       " | ".join(f"{a} | {a} / best | {a} / plain | {a} chose | {a} peak RSS / chosen's | {a} measuring share (rounds)" for a in autos) + " |",
       "|---|---:|---:|---:|---:|---:|---|" + "---:|---:|---:|---|---:|---|" * len(autos)]
for n in names:
    fixed = {c: g(n, c) for c in ("heap", "arena", "reuse") if (n, c) in by}
    best = min(fixed, key=fixed.get)
    row = f"| {n} | {by[(n, best)].get('request_bytes', 0) / 1024:.1f} | {by[(n, best)]['rps']} | {g(n, 'plain'):.0f} | " + \
          " | ".join(f"{fixed[c]:.0f}" if c in fixed else "" for c in ("arena", "reuse")) + f" | {best} |"
    for a in autos:
        r = by[(n, a)]
        chose = r["auto_chose"] or "arena (unsettled)"
        modes = [m for m in chose.split("/") if m in fixed] or ["arena"]
        rss_ref = max(by[(n, m)]["peak_rss_mib"] for m in modes)
        row += (f" {g(n, a):.0f} | {g(n, a) / fixed[best]:.2f} | {g(n, a) / g(n, 'plain'):.2f} | {chose} | "
                f"{r['peak_rss_mib'] / rss_ref:.2f} | {', '.join(f'{100 * x:.2f} %' for x in r['measuring_share_rounds'])} |")
    out.append(row)
out += ["", "Time to settle (first decision; every round: samples, calls, seconds of traffic):", ""]
for n in names:
    for a in autos:
        s = [l for l in by[(n, a)]["auto_log"] if l.startswith("settle:")]
        txt = "; ".join(re.sub(r"^settle: \S+ ", "", l) for l in s)
        # Timed calls lost to a thread change (callback API).
        lost = [re.search(r"(\d+) timed calls, (\d+) lost", l) for l in s]
        lost = [f"{int(m[2]) / max(int(m[1]) + int(m[2]), 1):.1%}" for m in lost if m]
        if lost:
            txt += f" [lost to a thread change: {', '.join(lost)}]"
        out.append(f"- {n} {a}: {txt}")
out += ["", "CPU us per call (medians; every round in brackets) and peak RSS MiB (medians):", ""]
for n in names:
    out.append(f"- {n}: " + "; ".join(f"{c} {g(n, c):.0f} {by[(n, c)]['cpu_us_rounds']} {by[(n, c)]['peak_rss_mib']:.0f} MiB"
                                      for c in ("plain", "heap", "arena", "reuse") + tuple(autos) if (n, c) in by))
out += ["", "auto's own lines at exit (every round):", "", "```"]
for n in names:
    for a in autos:
        out += [f"[{a}] " + l for l in by[(n, a)]["auto_log"] if not l.startswith("settle:")]
out += ["```"]
print("\n".join(out))

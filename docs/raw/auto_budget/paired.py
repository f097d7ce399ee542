"""Per-round ratios of a corpus_rpc.py run: each config over the same
round's best fixed mode (heap, arena, reuse), beside the ratio of the
medians. Usage: paired.py corpus_rpc.json > paired.txt"""
import json, sys, statistics as st
d=json.load(open(sys.argv[1]))
by={(r['service'],r['config']):r for r in d}
svcs=list(dict.fromkeys(r['service'] for r in d))
cfgs=list(dict.fromkeys(r['config'] for r in d))
for s in svcs:
    rounds={c:by[(s,c)]['cpu_us_rounds'] for c in cfgs if (s,c) in by}
    fixed=[c for c in ('heap','arena','reuse') if c in rounds]
    n=len(next(iter(rounds.values())))
    print(s, {c:round(st.median(v)) for c,v in rounds.items()}, "rss", {c:round(by[(s,c)]['peak_rss_mib'],1) for c in cfgs if (s,c) in by})
    for c in cfgs:
        if c in fixed: continue
        per=[rounds[c][i]/min(rounds[f][i] for f in fixed) for i in range(n)]
        med_ratio=st.median(rounds[c])/min(st.median(rounds[f]) for f in fixed)
        print(f"   {c}: ratio of medians {med_ratio:.3f}; per round vs that round's best fixed {[round(x,3) for x in per]} median {st.median(per):.3f}; chose {by[(s,c)]['auto_chose']}")

"""Summary of the large-idle-instance A/B (ab.sh): per target, API, mode and
build, peak RSS of the measured step by round and its median, the pool's
retained bytes (highest memory-trace sample, Cortex), server CPU per call
and p99 (medians), then the new / old ratios of the medians."""
import glob, json, os, re, statistics as st, sys

D = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(D, "*_r[0-9]", "light_*.json")):
    name = os.path.basename(os.path.dirname(f))
    m = re.match(r"(echo|out)_(callback|sync|async)_(old|new)_(reuse|auto)_r(\d)", name)
    tgt = "echo" if m.group(1) == "echo" else "cortex_push"
    api, build, mode, rnd = m.group(2), m.group(3), m.group(4), int(m.group(5))
    x = json.load(open(f))["results"][0]
    retained = idle = None
    trace = os.path.join(D, f"{api}_{build}_{mode}_r{rnd}.txt")
    if tgt == "cortex_push" and os.path.exists(trace):
        cols = [l.split() for l in open(trace) if not l.startswith("#") and len(l.split()) > 15]
        retained = max(int(c[15]) for c in cols) / 1024 if cols else None
        idle = max(int(c[14]) for c in cols) if cols else None
        # pool idle instances after the warm-up (5 s) and at the end: a rise
        # between is a burst of calls in flight at once whose instances stayed
        early = [int(c[14]) for c in cols if float(c[0]) >= 5.0][:1]
        idle = f"{early[0] if early else '?'}->{int(cols[-1][14])} (max {idle})"
    rows.setdefault((tgt, api, mode, build), []).append(
        (rnd, x["peak_rss_mib"], x["server_cpu_us_per_call"], x["p99_us"] / 1000, retained, idle))

print("| target, rate, API | mode | build | peak RSS MiB by round | median | pool idle instances after warm-up -> at the end (max) / retained MiB (max), by round | server CPU us/call | p99 ms |")
print("|---|---|---|---|---:|---|---:|---:|")
for k in sorted(rows):
    v = sorted(rows[k])
    rate = "150/s" if k[0] == "cortex_push" else "600/s"
    ret = "; ".join(f"{x[5]} / {x[4]:.0f}" for x in v) if v[0][4] is not None else ""
    print(f"| {k[0]}, {rate}, {k[1]} | {k[2]} | {'main' if k[3] == 'old' else 'one per thread'} "
          f"| {' '.join(f'{x[1]:.0f}' for x in v)} | {st.median([x[1] for x in v]):.1f} | {ret} "
          f"| {st.median([x[2] for x in v]):.0f} | {st.median([x[3] for x in v]):.2f} |")
print()
print("| target, API | mode | peak RSS new / main | CPU per call new / main | p99 new / main |")
print("|---|---|---:|---:|---:|")
for k in sorted(rows):
    if k[3] != "new" or (k[0], k[1], k[2], "old") not in rows:
        continue
    n, o = rows[k], rows[(k[0], k[1], k[2], "old")]
    r = lambda i: st.median([x[i] for x in n]) / st.median([x[i] for x in o])
    print(f"| {k[0]}, {k[1]} | {k[2]} | {r(1):.2f} | {r(2):.2f} | {r(3):.2f} |")

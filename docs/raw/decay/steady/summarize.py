"""Summary of the decay A/B (ab.sh): per API, mode and build, the measured
step's peak RSS by round and its median, RSS at the step's end, the memory
trace's largest pool idle count, page-pool bytes held and RSS over the whole
run (warm-up included), server CPU per call and p99 (medians), then the
new / old ratios of the medians."""
import glob, json, os, re, statistics as st, sys

D = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(D, "out_*_r[0-9]", "light_*.json")):
    name = os.path.basename(os.path.dirname(f))
    api, build, mode, rnd = re.match(r"out_(sync|async|callback)_(old|new)_(reuse|auto|arena)_r(\d)", name).groups()
    x = json.load(open(f))["results"][0]
    trace = os.path.join(D, f"{api}_{build}_{mode}_r{rnd}.txt")
    cols = [l.split() for l in open(trace) if not l.startswith("#") and len(l.split()) > 15]
    idle_max = max(int(c[14]) for c in cols)
    idle_end = int(cols[-1][14])
    held_max = max(int(c[9]) for c in cols) / 1024
    held_end = int(cols[-1][9]) / 1024
    rows.setdefault((api, mode, build), []).append(
        dict(rnd=int(rnd), peak=x["peak_rss_mib"], end=x["rss_mib"], cpu=x["server_cpu_us_per_call"],
             p99=x["p99_us"] / 1000, p999=x["p99.9_us"] / 1000, idle=f"{idle_end} (max {idle_max})",
             held=f"{held_end:.0f} (max {held_max:.0f})"))

med = lambda v, k: st.median([x[k] for x in v])
peaks = lambda v: " ".join("%.0f" % x["peak"] for x in v)
print("| API, rate | mode | build | peak RSS MiB by round | median | RSS at the end, median | pool idle instances at the end (max), by round | page pool MiB held at the end (max), by round | server CPU us/call | p99 ms | p99.9 ms |")
print("|---|---|---|---|---:|---:|---|---|---:|---:|---:|")
for k in sorted(rows):
    v = sorted(rows[k], key=lambda x: x["rnd"])
    rate = "300/s" if k[0] == "sync" else "250/s"
    print(f"| {k[0]}, {rate} | {k[1]} | {'decay' if k[2] == 'new' else 'no decay'} "
          f"| {peaks(v)} | {med(v, 'peak'):.1f} | {med(v, 'end'):.1f} "
          f"| {'; '.join(x['idle'] for x in v)} | {'; '.join(x['held'] for x in v)} "
          f"| {med(v, 'cpu'):.0f} | {med(v, 'p99'):.2f} | {med(v, 'p999'):.2f} |")
print()
print("| API | mode | peak RSS decay / none | RSS at the end | CPU per call | p99 | p99.9 |")
print("|---|---|---:|---:|---:|---:|---:|")
for api, mode in sorted({(k[0], k[1]) for k in rows}):
    n, o = rows.get((api, mode, "new")), rows.get((api, mode, "old"))
    if not n or not o:
        continue
    print(f"| {api} | {mode} | " + " | ".join(f"{med(n, key) / med(o, key):.2f}" for key in ("peak", "end", "cpu", "p99", "p999")) + " |")

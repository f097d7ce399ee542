"""Summary of an A/B of stack trimming (burst.sh, steady_async.sh): per mode and
build, medians over rounds of the burst step's peak RSS (when there was one), the
measured step's peak RSS and RSS at its end, from the memory trace's last sample
the pools' idle instances and retained MiB and the page pool's MiB held; server
CPU per call and p50/p99 of the measured step; then new / old ratios of the
medians. Usage: python3 summarize.py DIR"""
import glob, json, os, re, statistics as st, sys

D = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(D, "out_*_r[0-9]", "light_*.json")):
    build, mode, rnd = re.match(r"out_(old|new)_(\w+)_r(\d)", os.path.basename(os.path.dirname(f))).groups()
    x = json.load(open(f))["results"][0]
    cols = [l.split() for l in open(os.path.join(D, f"{build}_{mode}_r{rnd}.txt"))
            if not l.startswith("#") and len(l.split()) > 15]
    last = cols[-1]
    rows.setdefault((mode, build), []).append(dict(
        burst_peak=x.get("burst", {}).get("peak_rss_mib", float("nan")),
        peak=x["peak_rss_mib"], end=x["rss_mib"], idle=int(last[14]), retained=int(last[15]) / 1024,
        held=int(last[9]) / 1024, cpu=x["server_cpu_us_per_call"], p50=x["p50_us"] / 1000,
        p99=x["p99_us"] / 1000, faults=x.get("server_minor_faults_per_call") or 0))

med = lambda v, k: st.median([x[k] for x in v])
keys = ("burst_peak", "peak", "end", "idle", "retained", "held", "cpu", "p50", "p99", "faults")
print("| mode | build | rounds | " + " | ".join(keys) + " |")
print("|---|---|---:|" + "---:|" * len(keys))
for k in sorted(rows):
    v = rows[k]
    print(f"| {k[0]} | {'trim' if k[1] == 'new' else 'main'} | {len(v)} | " +
          " | ".join(f"{med(v, key):.1f}" if key not in ("p50", "p99") else f"{med(v, key):.2f}" for key in keys) + " |")
print()
print("| mode | " + " | ".join(f"{k} trim / main" for k in keys) + " |")
print("|---|" + "---:|" * len(keys))
for mode in sorted({m for m, _ in rows}):
    if (mode, "new") in rows and (mode, "old") in rows:
        n, o = rows[(mode, "new")], rows[(mode, "old")]
        print(f"| {mode} | " + " | ".join(
            f"{med(n, k) / med(o, k):.2f}" if med(o, k) else "-" for k in keys) + " |")

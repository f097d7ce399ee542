"""Summary of the after-a-burst A/B (burst.sh): per mode and build, medians
over rounds of the burst step's peak RSS, the measured step's (after the
burst, at the light rate) peak RSS, RSS at its end, and from the memory
trace's last sample the pool's idle instances and retained MiB, the page
pool's MiB held and glibc's free MiB; server CPU per call and p99 of the
measured step; then decay / none ratios of the medians."""
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
        burst_peak=x["burst"]["peak_rss_mib"], burst_ok=x["burst"]["ok"], burst_failed=x["burst"]["failed"],
        peak=x["peak_rss_mib"], end=x["rss_mib"], idle=int(last[14]), retained=int(last[15]) / 1024,
        held=int(last[9]) / 1024, glibc_free=int(last[7]) / 1024,
        cpu=x["server_cpu_us_per_call"], p99=x["p99_us"] / 1000))

med = lambda v, k: st.median([x[k] for x in v])
keys = ("burst_peak", "peak", "end", "idle", "retained", "held", "glibc_free", "cpu", "p99")
print("| mode | build | rounds | burst: calls ok / failed (median) | " + " | ".join(keys) + " |")
print("|---|---|---:|---|" + "---:|" * len(keys))
for k in sorted(rows):
    v = rows[k]
    print(f"| {k[0]} | {'decay' if k[1] == 'new' else 'no decay'} | {len(v)} | {med(v, 'burst_ok'):.0f} / "
          f"{med(v, 'burst_failed'):.0f} | " + " | ".join(f"{med(v, key):.1f}" for key in keys) + " |")
print()
print("| mode | " + " | ".join(f"{key} decay / none" for key in ("peak", "end", "cpu", "p99")) + " |")
print("|---|---:|---:|---:|---:|")
for mode in sorted({k[0] for k in rows}):
    n, o = rows.get((mode, "new")), rows.get((mode, "old"))
    if n and o:
        print(f"| {mode} | " + " | ".join(f"{med(n, key) / med(o, key):.2f}" for key in ("peak", "end", "cpu", "p99")) + " |")

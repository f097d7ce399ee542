"""Summary of the reuse-straggler A/B (ab.sh): per service, build and round,
the mode auto ran at the end, the reuse pool's idle instances and retained
MiB at the end of the run (memory trace), peak RSS of the measured step and
server CPU per call; then medians by build over the rounds auto ended in
arena (where the change acts)."""
import glob, json, os, re, statistics as st, sys

D = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(D, "out_*_r[0-9]", "light_*.json"))):
    m = re.match(r"out_(\w+?)_(old|new)_r(\d)", os.path.basename(os.path.dirname(f)))
    tgt, build, rnd = m.group(1), m.group(2), int(m.group(3))
    x = json.load(open(f))["results"][0]
    cols = [l.split() for l in open(os.path.join(D, f"{tgt}_{build}_r{rnd}.txt"))
            if not l.startswith("#") and len(l.split()) > 19]
    last = cols[-1]
    rows.append((tgt, build, rnd, last[-4], int(last[14]), int(last[15]) / 1024,
                 x["peak_rss_mib"], x["server_cpu_us_per_call"]))
print("| service | build | round | auto ran | pool idle at the end | retained MiB | peak RSS MiB | server CPU us/call |")
print("|---|---|---:|---|---:|---:|---:|---:|")
for r in sorted(rows):
    print(f"| {r[0]} | {'main' if r[1] == 'old' else 'change'} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.0f} | {r[6]:.0f} | {r[7]:.0f} |")
print()
print("| service | build | rounds ending in arena | pool idle (median) | retained MiB | peak RSS MiB | CPU us/call |")
print("|---|---|---:|---:|---:|---:|---:|")
for tgt in sorted({r[0] for r in rows}):
    for b in ("old", "new"):
        a = [r for r in rows if r[0] == tgt and r[1] == b and r[3] == "arena"]
        n = len([r for r in rows if r[0] == tgt and r[1] == b])
        if not a:
            print(f"| {tgt} | {'main' if b == 'old' else 'change'} | 0 of {n} | | | | |")
            continue
        print(f"| {tgt} | {'main' if b == 'old' else 'change'} | {len(a)} of {n} | {st.median([r[4] for r in a]):.0f} "
              f"| {st.median([r[5] for r in a]):.0f} | {st.median([r[6] for r in a]):.1f} | {st.median([r[7] for r in a]):.0f} |")

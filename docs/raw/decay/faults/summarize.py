"""Summary of faults.sh: reuse's server CPU per call, minor page faults per
call and p99 by build (idle decay or none) and burst, by round and median."""
import glob, json, os, re, statistics as st, sys

D = sys.argv[1]
rows = {}
for f in glob.glob(D + '/out_*/light_*.json'):
    v, b, r = re.match(r'out_(old|new)_burst(\d+)_r(\d)', os.path.basename(os.path.dirname(f))).groups()
    x = json.load(open(f))['results'][0]
    rows.setdefault((b, v), []).append((int(r), x['server_cpu_us_per_call'], x['server_minor_faults_per_call'], x['p99_us'] / 1000))
print("Reuse on Cortex sync at 150 calls/s for 20 s (after 5 s warm-up; burst 700: 3 s at 700 calls/s before), "
      "idle decay (ab8e1a6) vs none (43aeae0), 3 interleaved rounds: server CPU us/call, minor page faults per call, p99 ms")
print()
print("| burst | build | CPU us/call by round | median | faults/call by round | median | p99 ms by round | median |")
print("|---|---|---|---:|---|---:|---|---:|")
for k in sorted(rows):
    v = sorted(rows[k])
    print(f"| {'none' if k[0] == '0' else '3 s at ' + k[0] + '/s'} | {'decay' if k[1] == 'new' else 'no decay'} "
          f"| {' '.join('%.0f' % x[1] for x in v)} | {st.median(x[1] for x in v):.0f} "
          f"| {' '.join('%.1f' % x[2] for x in v)} | {st.median(x[2] for x in v):.1f} "
          f"| {' '.join('%.2f' % x[3] for x in v)} | {st.median(x[3] for x in v):.2f} |")
print()
for b in ('0', '700'):
    n, o = rows[(b, 'new')], rows[(b, 'old')]
    print(f"burst {b}: CPU decay / none {st.median(x[1] for x in n) / st.median(x[1] for x in o):.2f}, "
          f"p99 {st.median(x[3] for x in n) / st.median(x[3] for x in o):.2f}")

"""Steps in the reuse pool's idle instances in memory traces: runs where
pool_idle (column 15) rose by 3 or more within one sample, after the
first 5 s. Prints each such step (instances and RSS before -> after, MiB
rounded) and the count of runs with one, by build, per folder given."""
import glob, os, re, sys

for d in sys.argv[1:]:
    counts = {}
    for f in sorted(glob.glob(os.path.join(d, "**", "*_r[0-9].txt"), recursive=True)):
        build = re.search(r"_(old|new2|new)_", os.path.basename(f)).group(1)
        build = "main" if build == "old" else "change"
        cols = [l.split() for l in open(f) if not l.startswith("#") and len(l.split()) > 15]
        steps = [(float(b[0]), int(a[14]), int(b[14]), int(a[1]) / 1024, int(b[1]) / 1024)
                 for a, b in zip(cols, cols[1:]) if float(b[0]) >= 5 and int(b[14]) - int(a[14]) >= 3]
        n, k = counts.get(build, (0, 0))
        counts[build] = (n + 1, k + (1 if steps else 0))
        for t, i0, i1, r0, r1 in steps:
            print(f"{os.path.relpath(f, d)}: at {t:.1f} s idle {i0} -> {i1}, RSS {r0:.0f} -> {r1:.0f} MiB")
    print(d + ": " + "; ".join(f"{b}: {k} of {n} runs with a step" for b, (n, k) in sorted(counts.items())))

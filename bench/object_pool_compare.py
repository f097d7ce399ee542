#!/usr/bin/python3
"""Runs bench/object_pool_bench.cc for every competitor side by side.

    /usr/bin/python3 bench/object_pool_compare.py          # ~2-3 min on 2 cores
    /usr/bin/python3 bench/object_pool_compare.py --full   # the issue's parameters

Competitors: the pointer-stack floor, arenarpc::ObjectPool, a naive
thread-local linked free list, Boost.Pool singleton_pool,
std::pmr::synchronized_pool_resource (all in-process), and malloc/free from
glibc, jemalloc, tcmalloc, mimalloc and oneTBB's scalable allocator (the same
binary under LD_PRELOAD). Reps are interleaved (rep 1 of everyone, then rep 2,
...) so that drift on a shared machine hits all competitors alike; the tables
show medians. Prints markdown tables and writes a PNG plot (time vs threads).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
from collections import defaultdict

LIBDIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"]


def find_lib(patterns):
    for d in LIBDIRS:
        for p in patterns:
            hits = sorted(glob.glob(os.path.join(d, p)))
            if hits:
                return hits[0]
    return None


def competitors():
    # (label, --alloc, LD_PRELOAD patterns or None, expected malloc)
    table = [
        ("floor", "floor", None, "glibc"),
        ("ObjectPool", "pool", None, "glibc"),
        ("naive-list", "naive", None, "glibc"),
        ("boost-pool", "boost", None, "glibc"),
        ("pmr-sync", "pmr", None, "glibc"),
        ("glibc", "malloc", None, "glibc"),
        ("jemalloc", "malloc", ["libjemalloc.so.2"], "jemalloc"),
        ("tcmalloc", "malloc", ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"], "tcmalloc"),
        ("mimalloc", "malloc", ["libmimalloc.so.2", "libmimalloc.so"], "mimalloc"),
        ("tbbmalloc", "malloc", ["libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"], "tbbmalloc"),
    ]
    out = []
    for label, alloc, pats, expect in table:
        lib = None
        if pats:
            lib = find_lib(pats)
            if lib is None:
                print(f"note: {label} skipped (none of {pats} found)", file=sys.stderr)
                continue
        out.append((label, alloc, lib, expect))
    return out


def run(binary, label, alloc, lib, expect, args):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    cmd = [binary, f"--alloc={alloc}", f"--label={label}"] + args
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"warning: {label}: {' '.join(cmd)} failed: {res.stderr.strip()}", file=sys.stderr)
        return []
    lines = res.stdout.splitlines()
    if lines and lines[0].startswith("malloc ") and lines[0].split()[1] != expect:
        print(f"warning: {label}: expected {expect}, running {lines[0].split()[1]}", file=sys.stderr)
        return []
    return lines[1:]


def fmt(x):
    return "-" if x is None else (f"{x:.1f}" if x >= 10 else f"{x:.2f}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(root, "build", "op-rel"))
    ap.add_argument("--full", action="store_true",
                    help="issue parameters: 50 rounds, 5 reps, all sizes at all thread counts")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--objects", type=int, default=100000)
    ap.add_argument("--prodcons-objects", type=int, default=10_000_000)
    ap.add_argument("--only", help="comma-separated competitor labels")
    ap.add_argument("--skip-memory", action="store_true", help="no RSS / producer-consumer runs")
    ap.add_argument("--plot", default=os.path.join(root, "docs", "object_pool_threads.png"))
    a = ap.parse_args()
    reps = a.reps or (5 if a.full else 3)
    rounds = a.rounds or (50 if a.full else 5)
    threads = [int(t) for t in a.threads.split(",")]
    small_threads = threads if a.full else [t for t in threads if t <= 2]
    binary = os.path.join(a.build_dir, "bench", "object_pool_bench")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build it with cmake -DCMAKE_BUILD_TYPE=Release first")
    comps = competitors()
    if a.only:
        keep = set(a.only.split(","))
        comps = [c for c in comps if c[0] in keep]

    print(f"# object_pool_bench: {a.objects} objects/thread, {rounds} rounds, "
          f"{reps} reps (median), threads {threads}; sizes 16/256 at threads {small_threads}")
    times = defaultdict(list)  # (label, size, threads) -> [ns]
    for rep in range(reps):
        for label, alloc, lib, expect in comps:
            for size, ts in ((64, threads), (16, small_threads), (256, small_threads)):
                args = [f"--size={size}", f"--threads={','.join(map(str, ts))}",
                        f"--objects={a.objects}", f"--rounds={rounds}"]
                for line in run(binary, label, alloc, lib, expect, args):
                    f = line.split()
                    if f[0] == "time":
                        times[(f[1], int(f[2]), int(f[3]))].append(float(f[4]))
        print(f"  rep {rep + 1}/{reps} done", file=sys.stderr)

    def med(label, size, t):
        v = times.get((label, size, t))
        return statistics.median(v) if v else None

    labels = [c[0] for c in comps]
    for size, ts in ((64, threads), (16, small_threads), (256, small_threads)):
        print(f"\n## {size}-byte objects: ns per alloc+free pair (median of {reps})\n")
        print("| allocator | " + " | ".join(f"{t} thr" for t in ts) + " |")
        print("|---|" + "---:|" * len(ts))
        for label in labels:
            print(f"| {label} | " + " | ".join(fmt(med(label, size, t)) for t in ts) + " |")
        print("\nratios (lower is better for ObjectPool):\n")
        print("| ratio | " + " | ".join(f"{t} thr" for t in ts) + " |")
        print("|---|" + "---:|" * len(ts))
        for other in ("floor", "mimalloc"):
            row = []
            for t in ts:
                p, o = med("ObjectPool", size, t), med(other, size, t)
                row.append(f"{p / o:.2f}x" if p and o else "-")
            print(f"| ObjectPool / {other} | " + " | ".join(row) + " |")

    if not a.skip_memory:
        print(f"\n## Memory: {threads[-1]} threads x {a.objects} live 64-byte objects\n")
        print("| allocator | RSS growth MB | payload MB | overhead | after free MB | after trim MB |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, alloc, lib, expect in comps:
            if alloc == "floor":
                continue
            for line in run(binary, label, alloc, lib, expect,
                            ["--mode=rss", f"--threads={threads[-1]}", f"--objects={a.objects}", "--size=64"]):
                f = line.split()
                kv = dict(x.split("=") for x in f[4:])
                print(f"| {label} | {kv['live_mb']} | {kv['payload_mb']} | {kv['overhead_pct']} % "
                      f"| {kv['after_free_mb']} | {kv['after_trim_mb']} |")
        print(f"\n## Producer/consumer: {a.prodcons_objects} objects, one thread allocates, "
              "another frees (<= 4096 in flight)\n")
        print("| allocator | peak RSS growth MB | seconds |")
        print("|---|---:|---:|")
        for label, alloc, lib, expect in comps:
            if alloc == "floor":
                continue
            for line in run(binary, label, alloc, lib, expect,
                            ["--mode=prodcons", f"--objects={a.prodcons_objects}"]):
                f = line.split()
                kv = dict(x.split("=") for x in f[3:])
                print(f"| {label} | {kv['peak_rss_growth_mb']} | {kv['seconds']} |")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib missing: no plot)")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for label in labels:
        ys = [med(label, 64, t) for t in threads]
        if any(y is None for y in ys):
            continue
        style = {"linewidth": 3} if label == "ObjectPool" else {"linestyle": "--" if label == "floor" else "-"}
        ax.plot(threads, ys, marker="o", label=label, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(threads)
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("threads (2 cores)")
    ax.set_ylabel("ns per alloc+free pair (wall / total pairs)")
    ax.set_title(f"64-byte objects, {a.objects} per thread, shuffled frees, {rounds} rounds, median of {reps}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.plot), exist_ok=True)
    fig.savefig(a.plot, dpi=110)
    print(f"\nplot: {os.path.relpath(a.plot, root)}")


if __name__ == "__main__":
    main()

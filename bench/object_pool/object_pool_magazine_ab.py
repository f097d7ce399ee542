#!/usr/bin/python3
"""Side-by-side A/B runs of bench/object_pool/object_pool_bench.cc, interleaved.

    # Does a per-thread cache that holds the whole working set help?
    /usr/bin/python3 bench/object_pool/object_pool_magazine_ab.py --reps=15 --rounds=20 \
        --raw docs/raw/object_pool/magazine_ab_raw.txt
    # This tree against an earlier build of the same benchmark:
    /usr/bin/python3 bench/object_pool/object_pool_magazine_ab.py \
        --before=build/base/bench/object_pool_bench \
        --variants=floor,Default,Default-before,instance,instance-before,mimalloc
    /usr/bin/python3 bench/object_pool/object_pool_magazine_ab.py --mode=prodcons \
        --before=build/base/bench/object_pool_bench --variants=Default,Default-before

Seed workload (64 B, 100k objects per thread) by default: the floor,
ObjectPool<T>::Default() and ObjectPool<T> instances, the last with
magazines of 256, 4096 and 131072 pointers (with 131072 one magazine holds a
thread's whole working set: after the warm-up round no operation leaves the
contiguous per-thread array). With --before, the same variants of an
earlier build ("-before"); mimalloc, jemalloc and tcmalloc are the directly
linked builds (object_pool_bench_<name> --alloc=direct). Reps interleaved,
order rotated per rep; medians of wall and CPU ns per alloc+free pair and
ratios to the floor (--mode=time), or ns per object and peak RSS growth at
1:1, 1:4 and 4:1 producers:consumers (--mode=prodcons).
"""
import argparse
import os
import statistics
import subprocess
from collections import defaultdict


def variants(bench, before, before_name="before"):
    d = os.path.dirname(bench)
    v = {
        "floor": (bench, ["--alloc=floor"]),
        "Default": (bench, ["--alloc=pool"]),
        "instance": (bench, ["--alloc=pool-instance"]),
        "instance-256": (bench, ["--alloc=pool-instance", "--magazine=256"]),
        "instance-4096": (bench, ["--alloc=pool-instance", "--magazine=4096"]),
        "instance-131072": (bench, ["--alloc=pool-instance", "--magazine=131072"]),
        # The 2-thread gap: each thread's warm-up carved alone (its
        # objects contiguous, not interleaved with the other thread's);
        # spare magazines kept instead of freed and re-made every round; one
        # depot shard for all threads (contention made worse on purpose).
        "Default-serialwarm": (bench, ["--alloc=pool", "--serial_warmup"]),
        "instance-empty4096": (bench, ["--alloc=pool-instance", "--empty_magazines=4096"]),
        "instance-shards1": (bench, ["--alloc=pool-instance", "--shards=1"]),
    }
    for name in ("mimalloc", "jemalloc", "tcmalloc"):
        v[name] = (os.path.join(d, f"object_pool_bench_{name}"), ["--alloc=direct"])
    if before:
        v[f"Default-{before_name}"] = (before, ["--alloc=pool"])
        v[f"instance-{before_name}"] = (before, ["--alloc=pool-instance"])
    return v


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=os.path.join(root, "build", "release", "bench",
                                                    "object_pool_bench"))
    ap.add_argument("--before", help="object_pool_bench of an earlier build")
    ap.add_argument("--before-name", default="before",
                    help="suffix of that build's variants (Default-<name>, instance-<name>)")
    ap.add_argument("--variants",
                    default="floor,Default,instance-256,instance-4096,instance-131072")
    ap.add_argument("--mode", default="time", choices=["time", "prodcons"])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--size", default="64")
    ap.add_argument("--objects", type=int, default=100000, help="per thread (time mode)")
    ap.add_argument("--prodcons-objects", type=int, default=2_000_000)
    ap.add_argument("--separate", action="store_true",
                    help="each thread count in its own process (default: one process "
                         "runs them in turn, later counts after earlier ones)")
    ap.add_argument("--raw", default=os.devnull)
    args = ap.parse_args()
    table = variants(args.bench, args.before, args.before_name)
    chosen = [(name, *table[name]) for name in args.variants.split(",")]
    if args.mode == "time":
        thread_sets = args.threads.split(",") if args.separate else [args.threads]
        configs = [[f"--threads={t}", f"--rounds={args.rounds}",
                    f"--size={args.size}", f"--objects={args.objects}"]
                   for t in thread_sets]
    else:
        configs = [["--mode=prodcons", f"--objects={args.prodcons_objects}",
                    f"--producers={p}", f"--consumers={c}"]
                   for p, c in ((1, 1), (1, 4), (4, 1))]
    first, second, peak = defaultdict(list), defaultdict(list), defaultdict(list)
    thread_max = defaultdict(list)  # the most loaded thread's own CPU ns per pair
    with open(args.raw, "w") as raw:
        for rep in range(args.reps):
            k = rep % len(chosen)
            for label, binary, flags in chosen[k:] + chosen[:k]:
                for config in configs:
                    cmd = [binary, *flags, *config, f"--label={label}"]
                    out = subprocess.run(cmd, check=True, capture_output=True,
                                         text=True).stdout
                    raw.write("$ " + " ".join(cmd) + "\n" + out)
                    for line in out.splitlines():
                        f = line.split()
                        kv = dict(x.split("=", 1) for x in f if "=" in x)
                        if f and f[0] == "time":
                            first[(label, f[3])].append(float(f[4]))
                            second[(label, f[3])].append(float(kv["cpu_ns"]))
                            if "thread_cpu_ns" in kv:
                                thread_max[(label, f[3])].append(
                                    float(kv["thread_cpu_ns"].split("/")[1]))
                        elif f and f[0] == "prodcons":
                            first[(label, f[2])].append(float(kv["ns_per_pair"]))
                            second[(label, f[2])].append(float(kv.get("cpu_ns", "nan")))
                            peak[(label, f[2])].append(float(kv["peak_rss_growth_mb"]))
    med = statistics.median
    if args.mode == "time":
        cols = args.threads.split(",")
        print(f"# {args.reps} reps, {args.rounds} rounds, {args.size} B, {args.objects} objects "
              "per thread; medians, ns per alloc+free pair (wall / CPU); ratio to the "
              "floor if measured")
        print("| variant | " + " | ".join(
            f"{t} thr wall | {t} thr cpu | /floor wall | /floor cpu" for t in cols) + " |")
        print("|---" * (1 + 4 * len(cols)) + "|")
        for label, _, _ in chosen:
            cells = []
            for t in cols:
                w, c = med(first[(label, t)]), med(second[(label, t)])
                cells += [f"{w:.2f}", f"{c:.2f}"]
                if ("floor", t) in first:
                    cells += [f"{w / med(first[('floor', t)]):.2f}",
                              f"{c / med(second[('floor', t)]):.2f}"]
                else:
                    cells += ["-", "-"]
            print(f"| {label} | " + " | ".join(cells) + " |")
        if thread_max:
            print("\nThe most loaded thread's own CPU ns per pair (median), ratio to the "
                  "floor's:\n")
            print("| variant | " + " | ".join(f"{t} thr | /floor" for t in cols) + " |")
            print("|---" * (1 + 2 * len(cols)) + "|")
            for label, _, _ in chosen:
                cells = []
                for t in cols:
                    v = thread_max.get((label, t))
                    fl = thread_max.get(("floor", t))
                    cells += [f"{med(v):.2f}" if v else "-",
                              f"{med(v) / med(fl):.2f}" if v and fl else "-"]
                print(f"| {label} | " + " | ".join(cells) + " |")
    else:
        cols = ["1:1", "1:4", "4:1"]
        print(f"# {args.reps} reps, {args.prodcons_objects} objects; medians of wall ns "
              "per object, process CPU ns per object (nan: a build without cpu_ns) "
              "and peak RSS growth MB")
        print("| variant | " + " | ".join(f"{c} ns | {c} cpu ns | {c} peak MB"
                                          for c in cols) + " |")
        print("|---" * (1 + 3 * len(cols)) + "|")
        for label, _, _ in chosen:
            cells = []
            for c in cols:
                cells += [f"{med(first[(label, c)]):.2f}", f"{med(second[(label, c)]):.2f}",
                          f"{med(peak[(label, c)]):.1f}"]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

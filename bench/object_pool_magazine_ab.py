#!/usr/bin/python3
"""Does a per-thread cache that holds the whole working set help? An A/B.

    /usr/bin/python3 bench/object_pool_magazine_ab.py --reps=15 --rounds=20 \
        --raw docs/raw/object_pool/magazine_ab_raw.txt

Runs bench/object_pool_bench.cc (seed workload, 64 B, 100k objects per
thread) for the floor, ObjectPool<T>::Default() and ObjectPool<T> instances
with magazines of 256 (the default: 390 depot round trips per thread and
phase), 4096 and 131072 pointers. With 131072 one magazine holds a thread's
whole working set: after the warm-up round no operation leaves the
contiguous per-thread array, which is the steady state of a cache that grows
to the working set. Reps interleaved, order rotated per rep; medians of wall
and CPU ns per alloc+free pair, and ratios to the floor from the same run.
"""
import argparse
import os
import statistics
import subprocess
from collections import defaultdict

VARIANTS = [
    ("floor", ["--alloc=floor"]),
    ("Default", ["--alloc=pool"]),
    ("instance-256", ["--alloc=pool-instance", "--magazine=256"]),
    ("instance-4096", ["--alloc=pool-instance", "--magazine=4096"]),
    ("instance-131072", ["--alloc=pool-instance", "--magazine=131072"]),
]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=os.path.join(root, "build", "release", "bench",
                                                    "object_pool_bench"))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--raw", default=os.devnull)
    args = ap.parse_args()
    wall, cpu = defaultdict(list), defaultdict(list)
    with open(args.raw, "w") as raw:
        for rep in range(args.reps):
            k = rep % len(VARIANTS)
            for label, flags in VARIANTS[k:] + VARIANTS[:k]:
                cmd = [args.bench, *flags, f"--threads={args.threads}",
                       f"--rounds={args.rounds}", f"--label={label}"]
                out = subprocess.run(cmd, check=True, capture_output=True,
                                     text=True).stdout
                raw.write("$ " + " ".join(cmd) + "\n" + out)
                for line in out.splitlines():
                    f = line.split()
                    if f and f[0] == "time":
                        wall[(label, int(f[3]))].append(float(f[4]))
                        cpu[(label, int(f[3]))].append(float(f[5].split("=")[1]))
    threads = [int(t) for t in args.threads.split(",")]
    print(f"# {args.reps} reps, {args.rounds} rounds, 64 B, 100000 objects per thread;"
          " medians, ns per alloc+free pair (wall / CPU); ratio to the floor")
    print("| variant | " + " | ".join(f"{t} thr wall | {t} thr cpu | /floor wall | /floor cpu"
                                      for t in threads) + " |")
    print("|---" * (1 + 4 * len(threads)) + "|")
    for label, _ in VARIANTS:
        cells = []
        for t in threads:
            w, c = statistics.median(wall[(label, t)]), statistics.median(cpu[(label, t)])
            fw = statistics.median(wall[("floor", t)])
            fc = statistics.median(cpu[("floor", t)])
            cells += [f"{w:.2f}", f"{c:.2f}", f"{w / fw:.2f}", f"{c / fc:.2f}"]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Runs bench/object_pool/object_pool_bench.cc for every competitor side by side.

    /usr/bin/python3 bench/object_pool/object_pool_compare.py --raw docs/raw/object_pool/run.txt
    /usr/bin/python3 bench/object_pool/object_pool_compare.py --full   # + boost, pmr, tbbmalloc

The workload (the object pool article's, as a user would write it): each
thread allocates --objects objects and writes one byte of each, shuffles the
pointers, frees them all, --rounds times; ns per alloc+free pair, harness
included. Sizes 16/48/64/200/256 B, threads 1..16 (above 2 they
oversubscribe a 2-core machine).

Competitors: the pointer-stack floor; ObjectPool<T>::Default() and an
ObjectPool<T> instance; a naive thread_local free list; glibc malloc/free;
mimalloc, jemalloc and tcmalloc linked and called directly (mi_malloc/mi_free,
mallocx/sdallocx, tc_malloc/tc_free_sized: the object_pool_bench_<name>
builds of the same source); the same three under LD_PRELOAD. Reps are
interleaved (rep 1 of everyone, then rep 2, ..., competitor order rotated
per rep) so that drift on a shared machine hits all alike; tables show
medians, ratios are medians from the same run. Then memory (16 threads x
100k live 64 B objects, after free, after trim) and producer/consumer at
1:1, 1:4, 4:1. Every output line of every run goes to --raw.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
from collections import defaultdict

LIBDIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"]
DIRECT = ("mimalloc", "jemalloc", "tcmalloc")
POOL, INSTANCE = "ObjectPool", "ObjectPool-instance"


def find_lib(patterns):
    for d in LIBDIRS:
        for p in patterns:
            hits = sorted(glob.glob(os.path.join(d, p)))
            if hits:
                return hits[0]
    return None


def competitors(bench_dir, full):
    """(label, binary, --alloc, LD_PRELOAD lib or None, expected malloc)."""
    main = os.path.join(bench_dir, "object_pool_bench")
    table = [
        ("floor", main, "floor", None, "glibc"),
        (POOL, main, "pool", None, "glibc"),
        (INSTANCE, main, "pool-instance", None, "glibc"),
        ("naive-list", main, "naive", None, "glibc"),
        ("glibc", main, "malloc", None, "glibc"),
    ]
    for name in DIRECT:
        table.append((name, os.path.join(bench_dir, f"object_pool_bench_{name}"),
                      "direct", None, name))
    preload = [
        ("jemalloc-preload", ["libjemalloc.so.2"], "jemalloc"),
        ("tcmalloc-preload", ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"], "tcmalloc"),
        ("mimalloc-preload", ["libmimalloc.so.2", "libmimalloc.so"], "mimalloc"),
    ]
    if full:
        table += [("boost-pool", main, "boost", None, "glibc"),
                  ("pmr-sync", main, "pmr", None, "glibc")]
        preload.append(("tbbmalloc-preload",
                        ["libtbbmalloc_proxy.so.2", "libtbbmalloc_proxy.so"], "tbbmalloc"))
    for label, pats, expect in preload:
        lib = find_lib(pats)
        if lib is None:
            print(f"note: {label} skipped (none of {pats} found)", file=sys.stderr)
            continue
        table.append((label, main, "malloc", lib, expect))
    out = []
    for c in table:
        if not os.path.exists(c[1]):
            print(f"note: {c[0]} skipped ({c[1]} not built)", file=sys.stderr)
            continue
        out.append(c)
    return out


class Runner:
    def __init__(self, raw, replay=None):
        self.raw = raw
        # --replay: each command's output from an earlier --raw file, in order.
        self.replay = None
        if replay:
            self.replay = defaultdict(list)
            cur = None
            for line in open(replay):
                line = line.rstrip("\n")
                if line.startswith("$ "):
                    cur = line[2:]
                    self.replay[cur].append([])
                elif cur is not None:
                    self.replay[cur][-1].append(line)

    def run(self, comp, args):
        label, binary, alloc, lib, expect = comp
        if self.replay is not None:
            cmd = [binary, f"--alloc={alloc}", f"--label={label}"] + args
            shown = (f"LD_PRELOAD={lib} " if lib else "") + " ".join(cmd)
            outputs = self.replay.get(shown)
            return outputs.pop(0)[1:] if outputs else []
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if lib:
            env["LD_PRELOAD"] = lib
        cmd = ["nice", binary, f"--alloc={alloc}", f"--label={label}"] + args
        shown = (f"LD_PRELOAD={lib} " if lib else "") + " ".join(cmd[1:])
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        self.raw.write(f"$ {shown}\n{res.stdout}")
        self.raw.flush()
        if res.returncode != 0:
            print(f"warning: {label}: {shown} failed: {res.stderr.strip()}", file=sys.stderr)
            return []
        lines = res.stdout.splitlines()
        if lines and lines[0].startswith("malloc ") and lines[0].split()[1] != expect:
            print(f"warning: {label}: expected {expect}, running {lines[0].split()[1]}",
                  file=sys.stderr)
            return []
        return lines[1:]


def fmt(x):
    return "-" if x is None else (f"{x:.1f}" if x >= 10 else f"{x:.2f}")


def kv_of(fields):
    return dict(x.split("=", 1) for x in fields if "=" in x)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(root, "build", "release"))
    ap.add_argument("--full", action="store_true", help="also boost, pmr, tbbmalloc")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--sizes", default="16,48,64,200,256")
    ap.add_argument("--objects", type=int, default=100000)
    ap.add_argument("--prodcons-objects", type=int, default=2_000_000)
    ap.add_argument("--only", help="comma-separated competitor labels")
    ap.add_argument("--skip-time", action="store_true")
    ap.add_argument("--skip-memory", action="store_true", help="no RSS / producer-consumer runs")
    ap.add_argument("--raw", default=os.devnull, help="every command and its output")
    ap.add_argument("--replay", help="tabulate and plot an earlier --raw file instead of "
                    "running (same flags as that run)")
    ap.add_argument("--plot", default=os.path.join(root, "docs", "object_pool_threads.png"),
                    help="both panels: 64 B time per thread count, speedup per size")
    ap.add_argument("--plot-threads", help="also the first panel alone (e.g. "
                    "docs/object_pool_threads.png beside --plot docs/object_pool_grid.png)")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    sizes = [int(s) for s in a.sizes.split(",")]
    comps = competitors(os.path.join(a.build_dir, "bench"), a.full)
    if a.only:
        keep = set(a.only.split(","))
        comps = [c for c in comps if c[0] in keep]
    labels = [c[0] for c in comps]
    os.makedirs(os.path.dirname(os.path.abspath(a.raw)), exist_ok=True)
    runner = Runner(open(a.raw, "w"), a.replay)

    print(f"# object_pool_bench: {a.objects} objects/thread, one byte written each, "
          f"shuffled frees, {a.rounds} rounds, median of {a.reps} interleaved reps; "
          f"threads {threads} ({os.cpu_count()} CPUs: above {os.cpu_count()} oversubscribed)")
    times = defaultdict(list)  # (label, size, threads) -> [wall ns per pair]
    cpu_times = defaultdict(list)  # the same, process CPU time per pair
    if not a.skip_time:
        for rep in range(a.reps):
            order = comps[rep % len(comps):] + comps[:rep % len(comps)]
            for size in sizes:
                for comp in order:
                    args = [f"--size={size}", f"--threads={','.join(map(str, threads))}",
                            f"--objects={a.objects}", f"--rounds={a.rounds}"]
                    for line in runner.run(comp, args):
                        f = line.split()
                        if f[0] == "time":
                            key = (f[1], int(f[2]), int(f[3]))
                            times[key].append(float(f[4]))
                            cpu_times[key].append(float(kv_of(f[5:])["cpu_ns"]))
            print(f"  rep {rep + 1}/{a.reps} done", file=sys.stderr)

    def med(label, size, t, table=times):
        v = table.get((label, size, t))
        return statistics.median(v) if v else None

    def best_direct(size, t, table=times):
        cands = [(med(n, size, t, table), n) for n in DIRECT if med(n, size, t, table)]
        return min(cands) if cands else (None, None)

    def ratio_table(table, what):
        print(f"\n## Ratios of {what} (medians of the same run)\n")
        print("pool/floor: lower is better (target <= 1.15 at 64 B, 1-2 threads); "
              "best direct/pool: how many times faster the pool is than the fastest "
              "directly linked mimalloc/jemalloc/tcmalloc in that cell (target >= 1.3).\n")
        print("| size | ratio | " + " | ".join(f"{t} thr" for t in threads) + " |")
        print("|---:|---|" + "---:|" * len(threads))
        for size in sizes:
            for name in (POOL, INSTANCE):
                row = []
                for t in threads:
                    p, fl = med(name, size, t, table), med("floor", size, t, table)
                    row.append(f"{p / fl:.2f}" if p and fl else "-")
                print(f"| {size} | {name} / floor | " + " | ".join(row) + " |")
            for name in (POOL, INSTANCE):
                row = []
                for t in threads:
                    b, bn = best_direct(size, t, table)
                    p = med(name, size, t, table)
                    row.append(f"{b / p:.2f} ({bn[:2]})" if b and p else "-")
                print(f"| {size} | best direct / {name} | " + " | ".join(row) + " |")
        print("\n(best direct: mi = mimalloc, je = jemalloc, tc = tcmalloc)")

    if times:
        for size in sizes:
            print(f"\n## {size}-byte objects: ns per alloc+free pair (median of {a.reps})\n")
            print("| allocator | " + " | ".join(f"{t} thr" for t in threads) + " |")
            print("|---|" + "---:|" * len(threads))
            for label in labels:
                print(f"| {label} | " + " | ".join(fmt(med(label, size, t)) for t in threads) + " |")
        ratio_table(times, "wall time")
        ratio_table(cpu_times, "process CPU time (less sensitive to other load)")

    if not a.skip_memory:
        mem_comps = [c for c in comps if c[2] != "floor" and c[0] not in
                     ("boost-pool", "pmr-sync") and "preload" not in c[0]]
        t_max = threads[-1]
        print(f"\n## Memory: {t_max} threads x {a.objects} live 64-byte objects (median of 3)\n")
        print("| allocator | RSS growth MB | payload MB | overhead | after free MB "
              "| after trim MB | after trim / live |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        rss = defaultdict(list)
        for rep in range(3):
            for comp in mem_comps:
                for line in runner.run(comp, ["--mode=rss", f"--threads={t_max}",
                                              f"--objects={a.objects}", "--size=64"]):
                    f = line.split()
                    if f[0] == "rss":
                        rss[f[1]].append({k: float(v) for k, v in kv_of(f[4:]).items()})
        for comp in mem_comps:
            runs = rss.get(comp[0])
            if not runs:
                continue
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(f"| {comp[0]} | {m['live_mb']:.1f} | {m['payload_mb']:.1f} | "
                  f"{m['overhead_pct']:.2f} % | {m['after_free_mb']:.1f} | "
                  f"{m['after_trim_mb']:.1f} | {100 * m['after_trim_mb'] / m['live_mb']:.1f} % |")

        ratios = [(1, 1), (1, 4), (4, 1)]
        print(f"\n## Producer/consumer: {a.prodcons_objects} objects, P producers allocate "
              f"(and write a byte), C consumers free; <= 16384 in flight "
              f"(median of {a.reps})\n")
        pc = defaultdict(list)  # (label, ratio) -> [(ns, peak_mb)]
        bound_lines = []
        for rep in range(a.reps):
            for p, c in ratios:
                for comp in mem_comps:
                    for line in runner.run(comp, ["--mode=prodcons", f"--producers={p}",
                                                  f"--consumers={c}",
                                                  f"--objects={a.prodcons_objects}"]):
                        f = line.split()
                        if f[0] != "prodcons":
                            continue
                        kv = kv_of(f[4:])
                        pc[(f[1], f[2])].append((float(kv["ns_per_pair"]),
                                                 float(kv["peak_rss_growth_mb"])))
                        if "bound_mb" in kv:
                            bound_lines.append((f[1], f[2], kv))
        hdr = " | ".join(f"{p}:{c} ns | {p}:{c} peak MB" for p, c in ratios)
        print(f"| allocator | {hdr} |")
        print("|---|" + "---:|" * (2 * len(ratios)))
        for comp in mem_comps:
            cells = []
            for p, c in ratios:
                v = pc.get((comp[0], f"{p}:{c}"))
                if v:
                    cells += [fmt(statistics.median(x[0] for x in v)),
                              fmt(statistics.median(x[1] for x in v))]
                else:
                    cells += ["-", "-"]
            print(f"| {comp[0]} | " + " | ".join(cells) + " |")
        print("\nPool bound (bytes held at the end = the peak, no Trim during the run; "
              "bound = blocks for in-flight + batches in hand + 2 magazines per thread "
              "+ one carved magazine per producer):\n")
        print("| pool | P:C | max held MB | bound MB | all runs within |")
        print("|---|---|---:|---:|---|")
        for name in (POOL, INSTANCE):
            for p, c in ratios:
                rows = [kv for l, r, kv in bound_lines if l == name and r == f"{p}:{c}"]
                if rows:
                    print(f"| {name} | {p}:{c} | {max(float(k['pool_held_mb']) for k in rows):.2f} "
                          f"| {float(rows[0]['bound_mb']):.2f} | "
                          f"{'yes' if all(k['within'] == '1' for k in rows) else 'NO'} |")

    if not times:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib missing: no plot)")
        return
    def draw_threads(ax):
        for label in labels:
            ys = [med(label, 64, t) for t in threads]
            if any(y is None for y in ys) or label in ("boost-pool", "pmr-sync"):
                continue
            style = {"linewidth": 3} if label == POOL else {
                "linestyle": "--" if label == "floor" or "preload" in label else "-"}
            ax.plot(threads, ys, marker="o", label=label, **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_xlabel(f"threads ({os.cpu_count()} CPUs)")
        ax.set_ylabel("ns per alloc+free pair (wall / total pairs)")
        ax.set_title(f"64 B, {a.objects}/thread, byte write, shuffled frees, "
                     f"{a.rounds} rounds, median of {a.reps}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    draw_threads(ax)
    for size in sizes:
        ys = []
        for t in threads:
            b, _ = best_direct(size, t)
            p = med(POOL, size, t)
            ys.append(b / p if b and p else None)
        if all(y is not None for y in ys):
            ax2.plot(threads, ys, marker="o", label=f"{size} B")
    ax2.axhline(1.3, color="red", linestyle=":", label="target 1.3x")
    ax2.axhline(1.0, color="gray", linestyle="-", linewidth=0.5)
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(threads)
    ax2.set_xticklabels([str(t) for t in threads])
    ax2.set_xlabel("threads")
    ax2.set_ylabel("best directly linked allocator's time / ObjectPool::Default's")
    ax2.set_title("speedup over the fastest of mimalloc/jemalloc/tcmalloc (linked)", fontsize=9)
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.plot), exist_ok=True)
    fig.savefig(a.plot, dpi=100)
    if a.plot_threads:  # the left panel alone
        fig1, ax1 = plt.subplots(figsize=(7, 5))
        draw_threads(ax1)
        fig1.tight_layout()
        fig1.savefig(a.plot_threads, dpi=100)
        print(f"\nplot: {os.path.relpath(a.plot_threads, root)}")
    print(f"\nplot: {os.path.relpath(a.plot, root)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs reuse_skew_bench in every mode (one process per mode, so resident
memory can be compared) and writes a markdown table and an RSS-over-time
plot.

  /usr/bin/python3 bench/message_pool/reuse_skew.py --bin build/release/bench/reuse_skew_bench \
      --out docs/raw/reuse_skew --plot docs/reuse_rss.png

Part 1 (shape=request): 99 % ~10 KB / 1 % ~2 MB requests, 4 threads x 32 in
flight, heap vs ScopedArena vs naive Clear-and-reuse vs MessagePool.
Part 2 (shape=envelope): the same requests wrapped in a proto3 field without
has-bit (the reuse trap), incl. naive reuse on long-lived arenas.

--builds compares protobuf builds instead: reuse (pool and its
variants) against a fresh arena per use (scoped) on each build, both shapes,
rounds interleaved, medians; writes summary.md and rounds.jsonl to --out:

  /usr/bin/python3 bench/message_pool/reuse_skew.py \
      --builds 3.21=build/release/bench/reuse_skew_bench \
      --builds 35.1=build/release-modern/bench/reuse_skew_bench \
      --requests 60000 --reps 3 --out docs/raw/reuse_skew/protobuf35
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(binary, mode, shape, requests, extra):
    cmd = [binary, f"--mode={mode}", f"--shape={shape}", f"--requests={requests}"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(results, baseline_speed, baseline_rss):
    by = {r["mode"]: r for r in results}
    lines = ["| mode | wall s | vs heap (speed) | peak RSS MiB | vs scoped (RSS) | final RSS MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        speed = by[baseline_speed]["wall_ms"] / r["wall_ms"] if baseline_speed in by else float("nan")
        rss = r["peak_rss_mib"] / by[baseline_rss]["peak_rss_mib"] if baseline_rss in by else float("nan")
        lines.append(f"| {r['mode']} | {r['wall_ms'] / 1000:.2f} | {speed:.2f}x | "
                     f"{r['peak_rss_mib']:.0f} | {rss:.2f}x | {r['final_rss_mib']:.0f} |")
    return "\n".join(lines)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


# Modes per build: pool_inplace and pool_arena only differ from pool where
# the pool puts instances on the heap (protobuf v22+); on 3.21 pool is both.
COMPARE_MODES = ["scoped", "pool", "pool_protobuf", "pool_protobuf_off", "pool_inplace", "pool_arena"]


def compare_builds(args):
    builds = [b.split("=", 1) for b in args.builds]
    # name=binary+--flag: the binary run with that flag (e.g.
    # --force_heap_instances: 3.21 with v22+'s heap instances).
    extra = {name: binary.split("+")[1:] for name, binary in builds}
    builds = [(name, binary.split("+")[0]) for name, binary in builds]
    os.makedirs(args.out, exist_ok=True)
    rows = []  # (round, build, shape, mode, result)
    load_before = loadavg()
    with open(os.path.join(args.out, "rounds.jsonl"), "w") as log:
        for rep in range(args.reps):
            for name, binary in (builds if rep % 2 == 0 else builds[::-1]):
                legacy = name.startswith("3.") and not extra[name]
                modes = ["scoped", "pool", "pool_protobuf"] if legacy else COMPARE_MODES
                modes = [m for m in modes if m in args.modes.split(",")]
                for shape in args.shapes.split(","):
                    for mode in (modes if rep % 2 == 0 else modes[::-1]):
                        r = run(binary, mode, shape, args.requests, extra[name])
                        r.pop("samples", None)
                        r["build"], r["round"] = name, rep
                        log.write(json.dumps(r) + "\n")
                        log.flush()
                        rows.append((rep, name, shape, mode, r))
                        print(name, shape, mode, r["wall_ms"], r["peak_rss_mib"],
                              file=sys.stderr)
    load_after = loadavg()
    med = {}
    for _, name, shape, mode, r in rows:
        med.setdefault((name, shape, mode), []).append(r)
    r0 = rows[0][4]
    text = [f"# reuse vs a fresh arena per use, by protobuf build", "",
            f"{r0['requests']} requests per run, {r0['threads']} threads x 32 in flight; "
            f"99 % {r0['small_bytes']} B, 1 % {r0['large_bytes']} B; medians of "
            f"{args.reps} interleaved rounds.", "",
            f"loadavg before: {load_before}", f"loadavg after: {load_after}", "",
            "| build | shape | mode | wall s (median) | rounds, s | / scoped | CPU s (median) | CPU / scoped (median of per-round ratios) | peak RSS MiB | / scoped | pool stats (last round) |",
            "|---|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for name, _ in builds:
        for shape in args.shapes.split(","):
            base = med.get((name, shape, "scoped"))
            if not base:
                continue
            bw = statistics.median(r["wall_ms"] for r in base)
            br = statistics.median(r["peak_rss_mib"] for r in base)
            for mode in COMPARE_MODES:
                rs = med.get((name, shape, mode))
                if not rs:
                    continue
                w = statistics.median(r["wall_ms"] for r in rs)
                rss = statistics.median(r["peak_rss_mib"] for r in rs)
                rounds = ", ".join(f"{r['wall_ms'] / 1000:.2f}" for r in rs)
                cpu, cpu_ratio = "", ""
                if all("cpu_ms" in r for r in rs + base):
                    by_round = {r["round"]: r["cpu_ms"] for r in base}
                    ratios = [r["cpu_ms"] / by_round[r["round"]] for r in rs if r["round"] in by_round]
                    cpu = f"{statistics.median(r['cpu_ms'] for r in rs) / 1000:.2f}"
                    cpu_ratio = (f"{statistics.median(ratios):.2f} ("
                                 + ", ".join(f"{x:.2f}" for x in ratios) + ")")
                pool = rs[-1].get("pool", {})
                keep = {k: pool[k] for k in ["evicted_by_guard", "large_on_arena",
                                             "rebuilt_garbage", "fresh_arena_returns", "unrouted_large",
                                             "kept_percent"] if k in pool}
                text.append(f"| {name} | {shape} | {mode} | {w / 1000:.2f} | {rounds} | "
                            f"{w / bw:.2f} | {cpu} | {cpu_ratio} | {rss:.0f} | {rss / br:.2f} | "
                            f"{json.dumps(keep) if keep else ''} |")
    report = "\n".join(text) + "\n"
    print(report)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(report)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", default="build/release/bench/reuse_skew_bench")
    ap.add_argument("--out", default="docs/raw/reuse_skew", help="where reuse_skew_results.md goes")
    ap.add_argument("--plot", default="docs/reuse_rss.png")
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--trap_requests", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=1, help="runs per mode; medians reported")
    ap.add_argument("--no_plot", action="store_true")
    ap.add_argument("--modes", default=",".join(COMPARE_MODES),
                    help="--builds: the modes to run (scoped is the baseline)")
    ap.add_argument("--shapes", default="envelope,request", help="--builds: the shapes to run")
    ap.add_argument("--builds", action="append", default=[],
                    help="name=binary; compare builds (see above)")
    args = ap.parse_args()
    if args.builds:
        return compare_builds(args)

    def median_run(mode, shape, requests):
        runs = [run(args.bin, mode, shape, requests, []) for _ in range(args.reps)]
        runs.sort(key=lambda r: r["wall_ms"])
        best = runs[len(runs) // 2]
        best["wall_ms"] = statistics.median(r["wall_ms"] for r in runs)
        best["peak_rss_mib"] = statistics.median(r["peak_rss_mib"] for r in runs)
        return best

    part1 = [median_run(m, "request", args.requests) for m in ["heap", "scoped", "naive", "pool"]]
    part2 = [median_run(m, "envelope", args.trap_requests)
             for m in ["heap", "scoped", "naive", "pool", "arena_naive"]]
    r0 = part1[0]
    text = [f"## Skewed sizes ({r0['requests']} requests, {r0['threads']} threads x 32 in flight; "
            f"99 % {r0['small_bytes']} B, 1 % {r0['large_bytes']} B; median of {args.reps})", "",
            table(part1, "heap", "scoped"), ""]
    pool = part1[-1].get("pool", {})
    text += [f"MessagePool stats: {json.dumps(pool)}", ""]
    t0 = part2[0]
    text += [f"## The proto3 trap: RequestEnvelope.body without has-bit "
             f"({t0['requests']} requests, same sizes)", "", table(part2, "heap", "scoped"), ""]
    for r in part2:
        if "arena_space_allocated_mib" in r:
            text.append(f"arena_naive: arenas hold {r['arena_space_allocated_mib']:.0f} MiB at the end "
                        "(abandoned bodies accumulate until the arena is destroyed).")
    report = "\n".join(text) + "\n"
    print(report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "reuse_skew_results.md"), "w") as f:
        f.write(report)

    if not args.no_plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for r in part1:
            xs = [s[0] / 1000 for s in r["samples"]]
            ys = [s[1] for s in r["samples"]]
            ax.plot(xs, ys, label=f"{r['mode']} (peak {r['peak_rss_mib']:.0f} MiB, "
                                  f"{r['wall_ms'] / 1000:.1f} s)")
        ax.set_xlabel("seconds")
        ax.set_ylabel("resident memory, MiB")
        ax.set_yscale("log")
        ax.set_title("RSS over time: 99% ~10 KB / 1% ~2 MB requests, 128 in flight")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        path = args.plot
        fig.savefig(path, dpi=110)
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

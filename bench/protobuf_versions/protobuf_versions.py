#!/usr/bin/env python3
"""The same benchmarks on several protobuf builds, side by side in one run
(docs/PROTOBUF_VERSIONS.md, "Measured").

  protobuf_versions.py --build 3.21=build/release \\
      --build 33.6=build/release-modern \\
      --build "33.6 MicroString=build/release-modern-micro" \\
      --rounds 3 --out docs/raw/versions

Per round, for each build in turn (the order rotates): the corpus in-process
benchmark (parse + handler walk + destroy per request; heap, arena, reuse,
clear) and, where the build has it, the tRPC build benchmark (and its
MicroString variant). Reports the median over rounds of each build's
medians; ratios are taken within one build (same binary, same round), so
machine drift between builds does not enter them. Raw JSON lines of every
run are kept in --out.

With --preloads (names of rpc_common.PRELOADS) each build's corpus
benchmark also runs with each malloc preloaded, the allocators' order
rotating too, and a second table compares each mode under glibc with heap
under the best preloaded malloc. Modes with the suffix _sliced parse
through the benchmark's SlicedInput (gRPC's deserializer, --slice_bytes
pieces) instead of a flat buffer:

  protobuf_versions.py --build 35.1=build/rel-pb35 \\
      --build "35.1 MicroString=build/rel-pb35-micro" --services otlp_logs \\
      --modes heap,pb_arena,arena,heap_sliced,pb_arena_sliced,arena_sliced \\
      --preloads mimalloc,tcmalloc,jemalloc --slice_bytes 8192 --no_trpc \\
      --rounds 5 --out OUT
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rpc"))
import rpc_common  # noqa: E402  (PRELOADS, LIBDIR)

CORPUS = "bench/corpus/arenarpc_corpus_bench"
TRPC = [("strings", "bench/trpc_build_bench"),
        ("MicroString", "bench/trpc_build_bench_microstring")]
CORPUS_MODES = "heap,pb_arena,arena,reuse,reuse_arena,clear"
TRPC_MODES = "heap,arena,scoped,pool"


def run(cmd, log, preload=None):
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = os.path.join(rpc_common.LIBDIR, rpc_common.PRELOADS[preload])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    log.write(out)
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def alloc_table(by_alloc, builds, allocs, sizes, args):
    """Per build and service: heap under each malloc, and each other mode
    under glibc against heap under glibc and under the best preloaded
    malloc (the lowest median heap ns of the preloads)."""
    med = {k: statistics.median(v) for k, v in by_alloc.items()}
    modes = args.modes.split(",")
    preloads = allocs[1:]
    lines = [f"Corpus in-process, ns per request, median of {args.rounds} interleaved rounds "
             f"(builds and mallocs rotating) x {args.inner_rounds} inner rounds; _sliced = parsed "
             f"through SlicedInput in {args.slice_bytes or 8192}-byte slices (gRPC's "
             "ProtoBufferReader path), else from one flat buffer. best = the preloaded malloc "
             "whose heap median is lowest for that build, service and input.", ""]
    for stream in ("", "_sliced"):
        others = [m for m in modes if m.endswith("_sliced") == bool(stream)
                  and m != "heap" + stream]
        if "heap" + stream not in modes:
            continue
        lines += [f"#### {'sliced' if stream else 'flat buffer'}", "",
                  "| build | service | request | heap ns (glibc) | "
                  + "".join(f"heap+{a}/heap | " for a in preloads)
                  + "".join(f"{m} ns | {m}/heap | {m}/best heap (which) | " for m in others),
                  "|---|---|---:|---:|" + "---:|" * len(preloads) + "---:|---:|---|" * len(others)]
        for label, _ in builds:
            for s in sorted({k[2] for k in med if k[0] == label}, key=lambda x: -sizes[x]):
                h = med.get((label, "glibc", s, "heap" + stream))
                if h is None:
                    continue
                heaps = {a: med[(label, a, s, "heap" + stream)] for a in preloads}
                best = min(heaps, key=heaps.get) if heaps else "glibc"
                bh = heaps.get(best, h)
                row = f"| {label} | {s} | {sizes[s] / 1000:.1f} KB | {h:.0f} | "
                row += "".join(f"{heaps[a] / h:.2f} | " for a in preloads)
                for m in others:
                    v = med[(label, "glibc", s, m)]
                    row += f"{v:.0f} | {v / h:.2f} | {v / bh:.2f} ({best}) | "
                lines.append(row.rstrip())
        lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="LABEL=BUILD_DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inner_rounds", type=int, default=5, help="corpus_bench --rounds")
    ap.add_argument("--trpc_reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="tRPC benchmark threads")
    ap.add_argument("--services", default="", help="corpus services (default: all)")
    ap.add_argument("--modes", default=CORPUS_MODES, help="corpus_bench --modes")
    ap.add_argument("--preloads", default="", help="mallocs to preload too (rpc_common.PRELOADS)")
    ap.add_argument("--slice_bytes", type=int, default=0, help="corpus_bench --slice_bytes")
    ap.add_argument("--no_trpc", action="store_true", help="skip the tRPC build benchmark")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    allocs = ["glibc"] + [a for a in args.preloads.split(",") if a]
    os.makedirs(args.out, exist_ok=True)

    corpus = collections.defaultdict(list)  # (build, service, mode) -> [ns], glibc
    by_alloc = collections.defaultdict(list)  # (build, alloc, service, mode) -> [ns]
    trpc = collections.defaultdict(list)    # (build, variant, case, mode) -> [ms]
    sizes = {}
    info = {}  # (build, service) -> (reuse limit, kept percent) of the reuse pool
    for r in range(args.rounds):
        order = builds[r % len(builds):] + builds[:r % len(builds)]
        for label, d in order:
            safe = label.replace(" ", "_")
            for alloc in allocs[r % len(allocs):] + allocs[:r % len(allocs)]:
                name = f"{safe}_r{r + 1}.jsonl" if alloc == "glibc" else f"{safe}_{alloc}_r{r + 1}.jsonl"
                with open(os.path.join(args.out, name), "w") as log:
                    cmd = [os.path.join(d, CORPUS), f"--rounds={args.inner_rounds}",
                           f"--modes={args.modes}",
                           f"--label={label}" + ("" if alloc == "glibc" else f" {alloc}")]
                    if args.services:
                        cmd.append(f"--services={args.services}")
                    if args.slice_bytes:
                        cmd.append(f"--slice_bytes={args.slice_bytes}")
                    for row in run(cmd, log, None if alloc == "glibc" else alloc):
                        by_alloc[(label, alloc, row["service"], row["mode"])].append(
                            row["ns_per_request"])
                        if alloc == "glibc":
                            corpus[(label, row["service"], row["mode"])].append(row["ns_per_request"])
                        sizes[row["service"]] = row["mean_request_bytes"]
                        info[(label, row["service"])] = (row.get("reuse_limit", ""),
                                                         row.get("kept_percent", 100))
                    if alloc != "glibc" or args.no_trpc:
                        continue
                    for variant, binary in TRPC:
                        path = os.path.join(d, binary)
                        if not os.path.exists(path):
                            continue
                        cmd = [path, "--json", f"--reps={args.trpc_reps}", f"--threads={args.threads}",
                               f"--modes={TRPC_MODES}", f"--label={label} {variant}"]
                        for row in run(cmd, log):
                            for mode, ms in row["median_ms"].items():
                                trpc[(label, variant, row["case"], mode)].append(ms)
            print(f"round {r + 1}: {label} done", file=sys.stderr)

    med = {k: statistics.median(v) for k, v in corpus.items()}
    full = set(CORPUS_MODES.split(",")) <= set(args.modes.split(","))
    lines = [] if full else alloc_table(by_alloc, builds, allocs, sizes, args)
    lines += [] if not full else [f"Corpus in-process, ns per request (median of {args.rounds} rounds x "
             f"{args.inner_rounds} inner rounds); ratios against heap of the same build.", ""]
    services = sorted({k[1] for k in med}, key=lambda s: -sizes[s])
    for label, _ in builds if full else []:
        lines += [f"### {label}", "",
                  "| service | request | heap ns | pb_arena/heap | arena/heap | reuse/heap | "
                  "reuse_arena/heap | clear/heap | reuse/arena | reuse limit | kept |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
        for s in services:
            h = med.get((label, s, "heap"))
            if h is None:
                continue
            pa, a, u, ua, c = (med[(label, s, m)]
                               for m in ("pb_arena", "arena", "reuse", "reuse_arena", "clear"))
            limit, kept = info[(label, s)]
            lines.append(f"| {s} | {sizes[s] / 1000:.1f} KB | {h:.0f} | {pa / h:.2f} | {a / h:.2f} | "
                         f"{u / h:.2f} | {ua / h:.2f} | {c / h:.2f} | {u / a:.2f} | "
                         f"{limit or '-'} | {kept}% |")
        lines.append("")
    if full and len(allocs) > 1:
        lines += alloc_table(by_alloc, builds, allocs, sizes, args)
    if trpc:
        tmed = {k: statistics.median(v) for k, v in trpc.items()}
        lines += [f"tRPC build benchmark, {args.threads} threads, glibc, ms (median of {args.rounds} "
                  f"rounds x {args.trpc_reps} reps); speed-up = heap / mode of the same binary.", "",
                  "| build | strings | case | heap ms | arena | scoped | pool | scoped vs arena |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for (label, variant, case) in sorted({k[:3] for k in tmed}):
            h = tmed[(label, variant, case, "heap")]
            a, s_, p = (tmed[(label, variant, case, m)] for m in ("arena", "scoped", "pool"))
            lines.append(f"| {label} | {variant} | {case} | {h:.0f} | {h / a:.2f}x | {h / s_:.2f}x | "
                         f"{h / p:.2f}x | {a / s_:.2f}x |")
        lines.append("")
    text = "\n".join(lines)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()

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
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

CORPUS = "bench/corpus/arenarpc_corpus_bench"
TRPC = [("strings", "bench/trpc_build_bench"),
        ("MicroString", "bench/trpc_build_bench_microstring")]
CORPUS_MODES = "heap,pb_arena,arena,reuse,reuse_arena,clear"
TRPC_MODES = "heap,arena,scoped,pool"


def run(cmd, log):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    log.write(out)
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="LABEL=BUILD_DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inner_rounds", type=int, default=5, help="corpus_bench --rounds")
    ap.add_argument("--trpc_reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="tRPC benchmark threads")
    ap.add_argument("--services", default="", help="corpus services (default: all)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    os.makedirs(args.out, exist_ok=True)

    corpus = collections.defaultdict(list)  # (build, service, mode) -> [ns]
    trpc = collections.defaultdict(list)    # (build, variant, case, mode) -> [ms]
    sizes = {}
    info = {}  # (build, service) -> (reuse limit, kept percent) of the reuse pool
    for r in range(args.rounds):
        order = builds[r % len(builds):] + builds[:r % len(builds)]
        for label, d in order:
            safe = label.replace(" ", "_")
            with open(os.path.join(args.out, f"{safe}_r{r + 1}.jsonl"), "w") as log:
                cmd = [os.path.join(d, CORPUS), f"--rounds={args.inner_rounds}",
                       f"--modes={CORPUS_MODES}", f"--label={label}"]
                if args.services:
                    cmd.append(f"--services={args.services}")
                for row in run(cmd, log):
                    corpus[(label, row["service"], row["mode"])].append(row["ns_per_request"])
                    sizes[row["service"]] = row["mean_request_bytes"]
                    info[(label, row["service"])] = (row.get("reuse_limit", ""),
                                                     row.get("kept_percent", 100))
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
    lines = [f"Corpus in-process, ns per request (median of {args.rounds} rounds x "
             f"{args.inner_rounds} inner rounds); ratios against heap of the same build.", ""]
    services = sorted({k[1] for k in med}, key=lambda s: -sizes[s])
    for label, _ in builds:
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

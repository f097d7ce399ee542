#!/usr/bin/python3
"""Every corpus service, every mode, against plain gRPC: one command.

  bench/corpus/corpus.py                       # full: in-process + gRPC, ~60 min
  bench/corpus/corpus.py --quick               # ~6 min, coarse (smoke-sized rounds)
  bench/corpus/corpus.py --skip-rpc            # in-process only

1. In-process (bench/corpus/corpus_bench.cc): parse + the handler's walk + destroy
   of each service's request mix, per mode (heap = what gRPC does with no
   allocator installed; arena; reuse with the caller parsing, as gRPC does;
   reuse with PooledMessage::ParseFrom; clear = hand-written Clear() reuse),
   with glibc, linked tcmalloc and linked mimalloc. The three binaries run
   alternately, --rounds times; the median per cell is reported.
2. Through gRPC (bench/corpus/corpus_rpc.py): ghz at a fixed rate against
   arenarpc_corpus_server, plain (no allocator; glibc, mimalloc, tcmalloc
   preloaded) and every mode; server CPU per call from /proc, p50/p99, peak
   RSS; medians over rounds.

Writes OUT/inprocess.jsonl, OUT/inprocess.md, OUT/rpc/ (corpus_rpc.json,
corpus_rpc.md, ghz summaries) and the plots docs/corpus_inprocess.png,
docs/corpus_rpc.png. Builds build/release first if needed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALLOCS = [("glibc", "arenarpc_corpus_bench"), ("tcmalloc", "arenarpc_corpus_bench_tcmalloc"),
          ("mimalloc", "arenarpc_corpus_bench_mimalloc")]
MODES = ["heap", "arena", "reuse", "reuse_parsefrom", "clear"]


def size(n):
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n:.0f} B"


def inprocess(build, rounds, inner, out):
    rows = []
    for r in range(rounds):
        order = ALLOCS[r % 3:] + ALLOCS[:r % 3]
        for label, binary in order:
            text = subprocess.run([os.path.join(build, "bench", "corpus", binary), f"--rounds={inner}",
                                   f"--label={label}", f"--modes={','.join(MODES)}"],
                                  check=True, capture_output=True, text=True).stdout
            for line in text.splitlines():
                row = json.loads(line)
                row["outer_round"] = r
                rows.append(row)
            print(f"in-process round {r} {label}: done", flush=True)
    with open(os.path.join(out, "inprocess.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    cells = {}
    for row in rows:
        cells.setdefault((row["service"], row["alloc"], row["mode"]), []).append(row["ns_per_request"])
    med = {k: statistics.median(v) for k, v in cells.items()}
    services = list(dict.fromkeys(row["service"] for row in rows))
    sizes = {row["service"]: row["mean_request_bytes"] for row in rows}
    lines = [
        "In-process: parse + walk + destroy per request of each service's mix, median of "
        f"{rounds} run{'s' if rounds > 1 else ''} x {inner} rounds. `plain` = heap parse under glibc (what gRPC does with "
        "no allocator); every other cell is a ratio to it (lower is better).", "",
        "| service (mean request) | plain us | plain+tcmalloc | plain+mimalloc | arena | reuse | "
        "reuse ParseFrom | hand Clear() | arena+mimalloc | reuse / arena |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in services:
        base = med[(s, "glibc", "heap")]
        g = lambda a, m: med[(s, a, m)] / base
        lines.append(
            f"| {s} ({size(sizes[s])}) | {base / 1000:.2f} | {g('tcmalloc', 'heap'):.2f} | "
            f"{g('mimalloc', 'heap'):.2f} | {g('glibc', 'arena'):.2f} | {g('glibc', 'reuse'):.2f} | "
            f"{g('glibc', 'reuse_parsefrom'):.2f} | {g('glibc', 'clear'):.2f} | "
            f"{g('mimalloc', 'arena'):.2f} | {med[(s, 'glibc', 'reuse')] / med[(s, 'glibc', 'arena')]:.2f} |")
    text = "\n".join(lines)
    with open(os.path.join(out, "inprocess.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return med, services


def plot_inprocess(med, services, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bars = [("plain", "glibc", "heap"), ("plain+tcmalloc", "tcmalloc", "heap"),
            ("plain+mimalloc", "mimalloc", "heap"), ("arena", "glibc", "arena"),
            ("reuse", "glibc", "reuse"), ("reuse ParseFrom", "glibc", "reuse_parsefrom")]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(bars)
    for i, (name, alloc, mode) in enumerate(bars):
        ys = [med[(s, alloc, mode)] / med[(s, "glibc", "heap")] for s in services]
        ax.bar([x + i * width for x in range(len(services))], ys, width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(services))])
    ax.set_xticklabels(services, rotation=20)
    ax.set_ylabel("CPU per request / plain (glibc heap)")
    ax.set_title("Corpus, in-process: parse + walk + destroy (lower is better)")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_rpc(results_json, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(results_json) as f:
        results = json.load(f)
    by = {(r["service"], r["config"]): r for r in results}
    services = list(dict.fromkeys(r["service"] for r in results))
    configs = list(dict.fromkeys(r["config"] for r in results))
    fig, axes = plt.subplots(2, 1, figsize=(11, 8))
    width = 0.8 / len(configs)
    for ax, key, label in [(axes[0], "cpu_us_per_call", "server CPU per call / plain"),
                           (axes[1], "peak_rss_mib", "peak RSS / plain")]:
        for i, c in enumerate(configs):
            ys = [by[(s, c)][key] / by[(s, "plain")][key] if (s, c) in by else 0 for s in services]
            ax.bar([x + i * width for x in range(len(services))], ys, width, label=c)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(services))])
        ax.set_xticklabels(services, rotation=20)
        ax.set_ylabel(label)
        ax.legend(fontsize=7, ncol=4)
    axes[0].set_title("Corpus through gRPC (ghz, fixed rate): lower is better")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "corpus"))
    p.add_argument("--docs", default=os.path.join(ROOT, "docs"), help="where the plots go")
    p.add_argument("--rounds", type=int, help="in-process runs per allocator (default 5; 1 with --quick)")
    p.add_argument("--rpc-rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--skip-rpc", action="store_true")
    p.add_argument("--skip-inprocess", action="store_true")
    p.add_argument("--services", default="")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not os.path.exists(os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")):
        subprocess.run(["cmake", "-S", ROOT, "-B", args.build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                       check=True)
    subprocess.run(["cmake", "--build", args.build, "-j2", "--target", "arenarpc_corpus_server",
                    "arenarpc_corpus_payload"] + [b for _, b in ALLOCS], check=True)
    rc = 0
    if not args.skip_inprocess:
        rounds = args.rounds or (1 if args.quick else 5)
        med, services = inprocess(args.build, rounds, 2 if args.quick else 5,
                                  args.out)
        plot_inprocess(med, services, os.path.join(args.docs, "corpus_inprocess.png"))
    if not args.skip_rpc:
        cmd = [sys.executable, os.path.join(ROOT, "bench", "corpus", "corpus_rpc.py"), f"--build={args.build}",
               f"--out={os.path.join(args.out, 'rpc')}", f"--rounds={args.rpc_rounds}"]
        if args.quick:
            cmd += ["--rounds=1", "--duration=3", "--warmup=1"]
        if args.services:
            cmd += [f"--services={args.services}"]
        rc = subprocess.run(cmd).returncode
        plot_rpc(os.path.join(args.out, "rpc", "corpus_rpc.json"), os.path.join(args.docs, "corpus_rpc.png"))
    return rc


if __name__ == "__main__":
    sys.exit(main())

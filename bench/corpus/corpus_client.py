#!/usr/bin/env python3
"""Client CPU per call on a corpus service: etcd_range (large responses,
the default) or health (--service health: requests and responses < 1 KB).

One plain corpus server (callback API, no allocator) answers; the client
(arenarpc_corpus_client) runs each configuration in turn, every round, so
the ratios compare runs made side by side:

  {sync,async}/plain            ClientContext and messages on the heap
  {sync,async}/plain+<malloc>   the same with mimalloc, tcmalloc or jemalloc
                                preloaded into the client
  {sync,async}/plain+glibc_tuned  the same with glibc's malloc tuned by
                                GLIBC_TUNABLES (GLIBC_TUNED below)
  {sync,async}/plain+tuned_by_arenarpc  the same glibc setting applied by
                                the client itself: arenarpc::TuneGlibcMalloc()
                                (arenarpc_corpus_client --tune_malloc)
  {sync,async}/arena            arenarpc::ClientCall (pooled arena)
  {sync,async}/reuse            ClientCall over MessagePools
  {sync,async}/<arena|reuse>+glibc_tuned, +tuned_by_arenarpc  both

  bench/corpus/corpus_client.py --rounds 5 --out docs/raw/corpus_client
  bench/corpus/corpus_client.py --service health --calls 5000 --warmup 500
  bench/corpus/corpus_client.py --smoke
Prints and writes corpus_client.md (medians of CPU per call, ratios to
the same stub's plain, and of the client's peak RSS; then each round's
ratio to the same round's plain) and corpus_client.json (every run), with
the load average before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_rpc  # noqa: E402  (GLIBC_TUNED)
import rpc_common  # noqa: E402  (Server, PRELOADS, LIBDIR; on corpus_rpc's path)

ROOT = rpc_common.ROOT
FLAVOURS = ["plain", "plain+jemalloc", "plain+glibc_tuned", "plain+tuned_by_arenarpc",
            "arena", "arena+glibc_tuned", "arena+tuned_by_arenarpc",
            "reuse", "reuse+tuned_by_arenarpc"]
# Also accepted: plain+mimalloc, plain+tcmalloc, reuse+glibc_tuned.
# glibc's malloc told to keep what it frees: corpus_rpc.GLIBC_TUNED.
GLIBC_TUNED = corpus_rpc.GLIBC_TUNED
# What the summary calls each service the client knows.
SERVICES = {"etcd_range": "etcd_range (Kubernetes lists)",
            "health": "health (grpc.health.v1.Health/Check, requests 0-53 B, responses 2 B)"}


def run_client(binary, port, stub, flavour, args):
    messages, _, extra = flavour.partition("+")
    env = dict(os.environ)
    cmd = [binary, f"--target=127.0.0.1:{port}", f"--service={args.service}",
           f"--stub={stub}", f"--messages={messages}",
           f"--calls={args.calls}", f"--warmup={args.warmup}", f"--concurrency={args.concurrency}"]
    if extra == "glibc_tuned":
        env["GLIBC_TUNABLES"] = GLIBC_TUNED
    elif extra == "tuned_by_arenarpc":
        cmd.append("--tune_malloc")
    elif extra:
        env["LD_PRELOAD"] = os.path.join(rpc_common.LIBDIR, rpc_common.PRELOADS[extra])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}{out.stderr}")
    fields = out.stdout.split()
    return (float(fields[fields.index("cpu_us_per_call") + 1]),
            int(fields[fields.index("peak_rss_kib") + 1]) / 1024.0)


def per_round_ratios(runs, flavours):
    """Summary lines: each round's CPU per call over the same round's plain."""
    lines = ["", "Per round: CPU per call / the same round's plain, same stub (round 0, 1, ...; min-max)",
             "", "| stub | flavour | per round | min-max |", "|---|---|---|---|"]
    for stub in ("sync", "async"):
        base = runs[f"{stub}/plain"]
        for f in flavours[1:]:
            ratios = [us / b for us, b in zip(runs[f"{stub}/{f}"], base)]
            lines.append(f"| {stub} | {f} | " + ", ".join(f"{r:.2f}" for r in ratios) +
                         f" | {min(ratios):.2f}-{max(ratios):.2f} |")
    return lines


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "corpus_client"))
    p.add_argument("--service", default="etcd_range", help=" or ".join(SERVICES))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--server_api", default="callback")
    p.add_argument("--flavours", default=",".join(FLAVOURS), help="any of " + ",".join(FLAVOURS))
    p.add_argument("--smoke", action="store_true", help="1 round of a few calls")
    args = p.parse_args()
    flavours = args.flavours.split(",")
    if args.smoke:
        args.rounds, args.calls, args.warmup = 1, 10, 2
    server_bin = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    client_bin = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_client")
    os.makedirs(args.out, exist_ok=True)
    server = rpc_common.Server(server_bin, "none", None, [f"--api={args.server_api}"])
    runs = {}  # "stub/flavour" -> [cpu us per call per round]
    rss = {}  # "stub/flavour" -> [client peak RSS MiB per round]
    load_before = loadavg()
    try:
        for r in range(args.rounds):
            for stub in ("sync", "async"):
                for flavour in flavours:
                    us, mib = run_client(client_bin, server.port, stub, flavour, args)
                    runs.setdefault(f"{stub}/{flavour}", []).append(us)
                    rss.setdefault(f"{stub}/{flavour}", []).append(mib)
                    print(f"round {r} {stub:>5} {flavour:>23}: {us:9.1f} us/call "
                          f"{mib:7.1f} MiB peak RSS", flush=True)
    finally:
        server.stop()
    load_after = loadavg()
    med = {k: statistics.median(v) for k, v in runs.items()}
    med_rss = {k: statistics.median(v) for k, v in rss.items()}
    lines = [f"Client CPU per call, {SERVICES.get(args.service, args.service)}, {args.rounds} rounds of "
             f"{args.calls} calls, {args.concurrency} in flight; medians; ratio to the same stub's plain",
             f"loadavg before: {load_before}; after: {load_after}",
             "", "| stub | " + " | ".join(flavours) + " | " +
             " | ".join(f"{f} / plain" for f in flavours[1:]) + " |",
             "|---|" + "---:|" * (2 * len(flavours) - 1)]
    for stub in ("sync", "async"):
        base = med[f"{stub}/plain"]
        lines.append(f"| {stub} | " + " | ".join(f"{med[f'{stub}/{f}']:.0f}" for f in flavours) + " | " +
                     " | ".join(f"{med[f'{stub}/{f}'] / base:.2f}" for f in flavours[1:]) + " |")
    lines += ["", "Client peak RSS, MiB (ru_maxrss over the whole run, warmup included); medians",
              "", "| stub | " + " | ".join(flavours) + " |", "|---|" + "---:|" * len(flavours)]
    for stub in ("sync", "async"):
        lines.append(f"| {stub} | " + " | ".join(f"{med_rss[f'{stub}/{f}']:.0f}" for f in flavours) + " |")
    lines += per_round_ratios(runs, flavours)
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(args.out, "corpus_client.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "corpus_client.json"), "w") as f:
        json.dump({"args": vars(args), "loadavg": [load_before, load_after],
                   "runs_us_per_call": runs, "medians": med,
                   "runs_peak_rss_mib": rss, "medians_peak_rss_mib": med_rss}, f, indent=1)


if __name__ == "__main__":
    main()

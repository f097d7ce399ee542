#!/usr/bin/env python3
"""Where a corpus service's peak RSS comes from, mode by mode.

Runs arenarpc_corpus_server with --memory_trace_ms (memory_trace.h) in each
configuration asked for, loads it with ghz as bench/corpus/corpus_rpc.py
does (same rate, warm-up, window, pinning), and writes per run:
  trace_<service>_<config>_r<round>.txt   every 250 ms of the trace, and
                                          every line within 1 s of the peak
and a summary (summary.md): the peak, when it happened (seconds after the
first call, and against the learner's state then), and what each part
held at the peak: glibc's heap (sys/used/free/mmapped), the page pool
(held, in use, cached), the message pools' idle instances.

  /usr/bin/python3 bench/corpus/peak_rss_trace.py --api sync \\
    --services cortex_push,horaedb_write --configs reuse,auto \\
    --out docs/raw/auto_budget/peak_rss/trace
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_rpc  # noqa: E402
import rpc_common  # noqa: E402  (corpus_rpc put bench/rpc on the path)

COLS = ("t rss hwm anon threads msys mused mfree mmap pheld pused pcached pdepot aidle "
        "pool_idle pool_kib heap arena reuse").split()


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            row = dict(zip(COLS, [float(x) for x in parts[:len(COLS)]]))
            rest = parts[len(COLS):]
            row["auto"] = rest[:5] if len(rest) >= 5 else None
            row["line"] = line.rstrip("\n")
            rows.append(row)
    return rows


def describe(rows, config):
    calls = lambda r: r["heap"] + r["arena"] + r["reuse"]
    first = next((r for r in rows if calls(r) > 0), rows[0])
    peak = max(rows, key=lambda r: r["rss"])
    base = first["rss"]
    mib = lambda kib: kib / 1024.0
    out = [f"- {config}: peak RSS {mib(peak['rss']):.1f} MiB at {peak['t'] - first['t']:.2f} s "
           f"after the first call (RSS before it {mib(base):.1f} MiB); at the peak: glibc sys "
           f"{mib(peak['msys']):.1f} used {mib(peak['mused']):.1f} free {mib(peak['mfree']):.1f} "
           f"mmapped {mib(peak['mmap']):.1f} MiB; page pool held {mib(peak['pheld']):.1f} MiB "
           f"({peak['pused']:.0f} pages in use, {peak['pcached']:.0f} cached, {peak['pdepot']:.0f} "
           f"in the depot), {peak['aidle']:.0f} idle arenas; message pools {peak['pool_idle']:.0f} "
           f"idle instances, {mib(peak['pool_kib']):.1f} MiB; calls so far heap {peak['heap']:.0f} "
           f"arena {peak['arena']:.0f} reuse {peak['reuse']:.0f}"]
    if peak["auto"]:
        m = peak["auto"]
        out[-1] += f"; auto running {m[1]}, settled {m[2]}, {m[3]} samples, {m[4]} dropped"
    # The learner's milestones: a mode's last call (it stopped being tried
    # or running), settling.
    if config.startswith("auto"):
        for mode in ("heap", "arena", "reuse"):
            last = rows[-1][mode]
            at = next((r for r in rows if r[mode] >= last), None)
            if at is not None and last > 0:
                out.append(f"  - {mode}: {last:.0f} calls, the last by {at['t'] - first['t']:.2f} s")
        settled = next((r for r in rows if r["auto"] and r["auto"][2] == "1"), None)
        if settled is not None:
            out.append(f"  - settled on {settled['auto'][1]} by {settled['t'] - first['t']:.2f} s "
                       f"(RSS then {mib(settled['rss']):.1f} MiB)")
    return out, peak


def keep(rows, peak, path):
    kept = []
    last = -1e9
    for r in rows:
        if r["t"] - last >= 0.25 or abs(r["t"] - peak["t"]) <= 1.0:
            kept.append(r["line"])
            last = r["t"]
    with open(path, "w") as f:
        f.write("# " + " ".join(COLS) + " [method mode settled samples dropped]\n")
        f.write("\n".join(kept) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(rpc_common.ROOT, "build", "release"))
    p.add_argument("--out", required=True)
    p.add_argument("--services", default="cortex_push,horaedb_write")
    p.add_argument("--configs", default="reuse,auto")
    p.add_argument("--api", default="sync", choices=["callback", "sync"])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--duration", type=float, default=15)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--period_ms", type=int, default=50)
    args = p.parse_args()
    server = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    ghz = rpc_common.find_ghz()
    os.makedirs(args.out, exist_ok=True)
    summary = [f"# Peak RSS traces ({args.api} API, {args.duration:g} s after {args.warmup:g} s "
               f"warm-up)", "", f"loadavg before: {open('/proc/loadavg').read().strip()}", ""]
    svcs = {s["name"]: s for s in corpus_rpc.services(args.build)}
    for rnd in range(args.rounds):
        for name in args.services.split(","):
            svc = svcs[name]
            tmp = tempfile.mkdtemp(prefix="arenarpc_peak_")
            pf, size, response_size = corpus_rpc.payload(args.build, name, tmp)
            pb = corpus_rpc.protoset(svc["proto"], tmp)
            rps = corpus_rpc.rate_for(max(size, response_size))
            summary.append(f"## {name} ({size / 1024:.0f} KiB, {rps} calls/s), round {rnd}")
            for config in args.configs.split(","):
                mode, _, extra = corpus_rpc.CONFIGS[config]
                trace = os.path.join(tmp, f"{config}.trace")
                srv = rpc_common.start_server(server, mode, 1, extra + [
                    f"--api={args.api}", f"--memory_trace_ms={args.period_ms}",
                    f"--memory_trace_file={trace}"])
                call = svc["method"].lstrip("/").replace("/", ".")
                try:
                    subprocess.run(rpc_common.pin(0, [
                        ghz, "--insecure", "--async", f"--rps={rps}",
                        f"--duration={args.warmup + args.duration:g}s", "--connections=1",
                        "--concurrency=8", "--cpus=1", "--timeout=20s", f"--protoset={pb}",
                        f"--call={call}", f"--binary-file={pf}", "--format=json",
                        f"--output={os.path.join(tmp, 'ghz.json')}", f"127.0.0.1:{srv.port}"]),
                        check=True, capture_output=True)
                    hwm = rpc_common.status_kib(srv.proc.pid, "VmHWM") / 1024.0
                finally:
                    srv.stop()
                time.sleep(0.2)
                rows = parse(trace)
                lines, peak = describe(rows, config)
                summary += lines
                summary.append(f"  - VmHWM at the end {hwm:.1f} MiB")
                method = svc["method"].lstrip("/") + " "
                summary += ["  - " + l.strip() for l in srv.log
                            if l.startswith(("auto: " + method, "settle: " + method))]
                keep(rows, peak, os.path.join(args.out, f"trace_{name}_{config}_r{rnd}.txt"))
                print("\n".join(lines), flush=True)
            summary.append("")
    summary.append(f"loadavg after: {open('/proc/loadavg').read().strip()}")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The babylon RPC experiment on gRPC: the echo server in each allocation mode
(plain gRPC with no allocator, heap, arena, reuse, auto), driven by ghz at a fixed request rate.

For each mode: start `arenarpc_echo_server --port=0 --mode=M` (pinned to one
core), warm it up, then run ghz --async --rps R for a fixed duration (pinned
to the other core) and record latency p50/p90/p99/p99.9 (from ghz's per-call
details), server CPU seconds per request (utime+stime of the server process
over the measured window, from /proc/PID/stat), peak and steady RSS (VmHWM,
median VmRSS sampled every 100 ms) and errors. The payload is one serialized
EchoRequest written by `arenarpc_echo_payload`, so anyone can replay the
load with their own ghz command line (printed).

  bench/rpc/rpc_bench.py                  # short run, results under out/rpc/
  bench/rpc/rpc_bench.py --full           # long run, regenerates docs/raw/rpc/ and the plots
  bench/rpc/rpc_bench.py --smoke          # a few seconds per mode (tests)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_common import (HEADER, PRELOADS, ROOT, cpu_seconds, cut_at_end,  # noqa: E402
                        find_ghz, percentile, pin, start_server, status_kib, summary_line)


def ghz_cmd(ghz, port, payload, rps, seconds, args, out_json):
    return [ghz, "--insecure", "--async", f"--rps={rps}", f"--duration={seconds}s",
            f"--connections={args.connections}", f"--concurrency={args.concurrency}",
            "--cpus=1", "--timeout=10s", "--call=arenarpc.echo.EchoService.Echo",
            f"--binary-file={payload}", "--format=json", f"--output={out_json}",
            f"127.0.0.1:{port}"]


def combine(rounds):
    """Median of each figure over rounds; counts are summed."""
    out = dict(rounds[0])
    for key in ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "cpu_us_per_request", "steady_rss_mib",
                "achieved_rps"]:
        out[key] = statistics.median(r[key] for r in rounds)
    for key in ["requests", "ok", "errors", "cut_at_end"]:
        out[key] = sum(r[key] for r in rounds)
    out["cpu_seconds"] = sum(r["cpu_seconds"] for r in rounds)
    out["peak_rss_mib"] = max(r["peak_rss_mib"] for r in rounds)
    out["server_exit_code"] = max(abs(r["server_exit_code"]) for r in rounds)
    out["rounds"] = [{k: v for k, v in r.items() if k != "rss_samples"} for r in rounds]
    samples, offset = [], 0.0  # the rounds' windows, end to end
    for r in rounds:
        samples += [(t + offset, v) for t, v in r["rss_samples"]]
        offset = samples[-1][0] if samples else offset
    out["rss_samples"] = samples
    return out


def run_mode(mode, args, ghz, payload, outdir, tag):
    server_core, load_core = (1, 0) if os.cpu_count() >= 2 else (None, None)
    preload = PRELOADS[mode.split("+", 1)[1]] if mode.startswith("plain+") else None
    server = start_server(args.server, "none" if mode.startswith("plain") else mode, server_core,
                          args.server_args, preload)
    try:
        warm = os.path.join(tempfile.gettempdir(), f"arenarpc_ghz_{os.getpid()}_warmup.json")
        subprocess.run(pin(load_core, ghz_cmd(ghz, server.port, payload, args.rps, args.warmup, args, warm)),
                       check=True, capture_output=True)
        samples = []  # (seconds since start, RSS MiB)
        stop = threading.Event()
        t0 = time.time()

        def sample():
            while not stop.is_set():
                samples.append((time.time() - t0, status_kib(server.proc.pid, "VmRSS") / 1024.0))
                stop.wait(0.1)

        sampler = threading.Thread(target=sample)
        cpu0 = cpu_seconds(server.proc.pid)
        sampler.start()
        report_path = os.path.join(outdir, f"ghz_{tag}.json")
        cmd = pin(load_core, ghz_cmd(ghz, server.port, payload, args.rps, args.duration, args, report_path))
        subprocess.run(cmd, check=True, capture_output=True)
        cpu1 = cpu_seconds(server.proc.pid)
        stop.set()
        sampler.join()
        peak_rss = status_kib(server.proc.pid, "VmHWM") / 1024.0
    finally:
        rc = server.stop()
    with open(report_path) as f:
        report = json.load(f)
    details = report.get("details") or []
    ok = sorted(d["latency"] / 1e6 for d in details if d.get("status") == "OK")  # ms
    # ghz stops at --duration by closing its connections: calls still in
    # flight then fail on the client side. Those are not server errors.
    cut = cut_at_end(details, args.duration)
    errors = len(details) - len(ok) - len(cut)
    requests = len(details) - len(cut)
    steady = statistics.median(s[1] for s in samples) if samples else float("nan")
    return {
        "mode": mode, "rps_target": args.rps, "seconds": args.duration, "requests": requests,
        "ok": len(ok), "errors": errors, "cut_at_end": len(cut),
        "achieved_rps": report.get("rps", 0.0),
        "p50_ms": percentile(ok, 50), "p90_ms": percentile(ok, 90),
        "p99_ms": percentile(ok, 99), "p999_ms": percentile(ok, 99.9),
        "cpu_seconds": cpu1 - cpu0, "cpu_us_per_request": (cpu1 - cpu0) / max(requests, 1) * 1e6,
        "peak_rss_mib": peak_rss, "steady_rss_mib": steady, "rss_samples": samples,
        "server_exit_code": rc, "ghz_command": " ".join(cmd),
    }


def well_formed(r):
    """Complete results: calls made, none failed, ordered finite percentiles,
    CPU and memory measured, server exited cleanly."""
    import math
    lat = [r["p50_ms"], r["p90_ms"], r["p99_ms"], r["p999_ms"]]
    return (r["requests"] > 0 and r["errors"] == 0 and r["ok"] == r["requests"]
            and all(math.isfinite(x) and x > 0 for x in lat) and lat == sorted(lat)
            and r["cpu_seconds"] > 0 and r["peak_rss_mib"] > 0 and r["steady_rss_mib"] > 0
            and len(r["rss_samples"]) > 0 and r["server_exit_code"] == 0)


def table(results):
    base = results[0]
    lines = ["| mode | req | errors | p50 ms | p90 ms | p99 ms | p99.9 ms | CPU us/req | CPU vs first | "
             "p99 vs first | peak RSS MiB | steady RSS MiB | RSS vs first |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r['mode']} | {r['requests']} | {r['errors']} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['p999_ms']:.2f} | {r['cpu_us_per_request']:.0f} | "
            f"{r['cpu_us_per_request'] / base['cpu_us_per_request']:.2f}x | "
            f"{r['p99_ms'] / base['p99_ms']:.2f}x | {r['peak_rss_mib']:.0f} | {r['steady_rss_mib']:.0f} | "
            f"{r['steady_rss_mib'] / base['steady_rss_mib']:.2f}x |")
    return "\n".join(lines)


def plot(results, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = [r["mode"] for r in results]
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4))
    keys = [("p50_ms", "p50"), ("p90_ms", "p90"), ("p99_ms", "p99"), ("p999_ms", "p99.9")]
    width = 0.8 / len(modes)
    for i, r in enumerate(results):
        xs = [k + i * width for k in range(len(keys))]
        ax.bar(xs, [r[k] for k, _ in keys], width, label=r["mode"])
    ax.set_xticks([k + width * (len(modes) - 1) / 2 for k in range(len(keys))])
    ax.set_xticklabels([n for _, n in keys])
    ax.set_ylabel("latency, ms")
    ax.set_title(f"Echo latency at {results[0]['rps_target']} req/s (ghz --async)")
    ax.legend()
    fig.tight_layout()
    paths.append(os.path.join(outdir, "rpc_latency.png"))
    fig.savefig(paths[-1], dpi=110)

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.bar(modes, [r["cpu_us_per_request"] for r in results], color=[f"C{i}" for i in range(len(modes))])
    ax.set_ylabel("server CPU, us per request")
    ax.set_title("Server CPU per request")
    fig.tight_layout()
    paths.append(os.path.join(outdir, "rpc_cpu.png"))
    fig.savefig(paths[-1], dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        ax.plot([s[0] for s in r["rss_samples"]], [s[1] for s in r["rss_samples"]], label=r["mode"])
    ax.set_xlabel("seconds (measured windows of all rounds, end to end)")
    ax.set_ylabel("server RSS, MiB")
    ax.set_title("Server resident memory over time")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(os.path.join(outdir, "rpc_rss.png"))
    fig.savefig(paths[-1], dpi=110)
    plt.close("all")
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--server", help="arenarpc_echo_server binary")
    ap.add_argument("--payload_tool", help="arenarpc_echo_payload binary")
    ap.add_argument("--modes", default="plain,heap,arena,reuse,auto",
                    # also plain+mimalloc, plain+tcmalloc, plain+jemalloc
                    help="plain = no allocator installed (the baseline ratios are quoted against)")
    ap.add_argument("--rps", type=int, default=60,
                    help="fixed request rate; 60 keeps the heap server near 25%% of its core here")
    ap.add_argument("--duration", type=int, default=20, help="measured seconds per mode and round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians reported")
    ap.add_argument("--warmup", type=int, default=5, help="seconds per mode before measuring")
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--server_args", default="", help="extra server flags, space separated")
    ap.add_argument("--out", help="output directory (default out/rpc, docs/raw/rpc with --full)")
    ap.add_argument("--plot_dir", help="where the plots go (default --out; docs with --full)")
    ap.add_argument("--full", action="store_true", help="5 interleaved rounds x (5 s warm-up + 20 s) per mode, writes docs/")
    ap.add_argument("--smoke", action="store_true", help="a few seconds per mode at low rate")
    ap.add_argument("--no_plot", action="store_true")
    args = ap.parse_args()
    if args.full:
        args.duration, args.warmup, args.rounds = 20, 5, 5
    if args.smoke:
        args.rps, args.duration, args.warmup, args.scale, args.rounds = 50, 3, 1, 10, 1
        args.connections, args.concurrency = 2, 8
    args.server = args.server or os.path.join(args.build, "examples", "arenarpc_echo_server")
    args.payload_tool = args.payload_tool or os.path.join(args.build, "examples", "arenarpc_echo_payload")
    args.server_args = args.server_args.split()
    # --full: the docs' kept output in docs/raw/rpc/, the plots in docs/;
    # the payload (arenarpc_echo_payload makes it again) stays out of docs/.
    outdir = args.out or (os.path.join(ROOT, "docs", "raw", "rpc") if args.full
                          else os.path.join(ROOT, "out", "rpc"))
    raw = outdir
    plot_dir = args.plot_dir or (os.path.join(ROOT, "docs") if args.full and not args.out else outdir)
    payload_dir = os.path.join(ROOT, "out", "rpc") if args.full else outdir
    for d in (outdir, plot_dir, payload_dir):
        os.makedirs(d, exist_ok=True)
    ghz = find_ghz()

    payload = os.path.join(payload_dir, f"echo_request_scale{args.scale}_seed{args.seed}.bin")
    subprocess.run([args.payload_tool, f"--scale={args.scale}", f"--seed={args.seed}", f"--out={payload}"],
                   check=True)
    # Rounds interleave the modes, so that a slow spell of this shared
    # machine hits every mode alike; each figure is the median over rounds.
    modes = args.modes.split(",")
    per_round = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes:
            print(f"[rpc_bench] round {r + 1}/{args.rounds} {mode}: {args.warmup}s warm-up + "
                  f"{args.duration}s at {args.rps} req/s", file=sys.stderr, flush=True)
            per_round[mode].append(run_mode(mode, args, ghz, payload, raw, tag=f"{mode}_r{r + 1}"))
    results = [combine(per_round[m]) for m in modes]
    # ghz's per-call reports (~110 KB a round) become one small text file;
    # with --full (the docs' kept output) only that file stays.
    reports = [os.path.join(raw, f"ghz_{m}_r{r + 1}.json") for m in modes for r in range(args.rounds)]
    with open(os.path.join(raw, "ghz_rounds.txt"), "w") as f:
        f.write("\n".join([HEADER] + [summary_line(p) for p in reports]) + "\n")
    if args.full:
        for p in reports:
            os.remove(p)
    size = os.path.getsize(payload)
    header = (f"Echo of a {size} B request (scale {args.scale}), {args.rps} req/s, {args.rounds} rounds x "
              f"{args.duration} s per mode (modes interleaved, each after {args.warmup} s warm-up), "
              f"ghz --async, {args.connections} connections; server and ghz pinned to different "
              f"cores. Figures are medians over rounds (peak RSS: max); ratios are vs the first mode (plain: no allocator installed)."
              + (f" Server flags: {' '.join(args.server_args)}." if args.server_args else ""))
    text = header + "\n\n" + table(results) + "\n"
    print(text)
    with open(os.path.join(outdir, "rpc_results.json"), "w") as f:
        json.dump({"payload_bytes": size, "results": results}, f, indent=1)
    with open(os.path.join(outdir, "rpc_results.md"), "w") as f:
        f.write(text + "\nReplay one mode's load:\n\n```sh\n" + results[0]["ghz_command"] + "\n```\n")
    if not args.no_plot:
        paths = plot(results, plot_dir)
        missing = [p for p in paths if not os.path.isfile(p) or os.path.getsize(p) == 0]
        if missing or len(paths) != 3:
            print(f"[rpc_bench] plots missing or empty: {missing or paths}", file=sys.stderr)
            return 1
        print("plots written to: " + ", ".join(os.path.relpath(p, ROOT) for p in paths))
    bad = [r["mode"] for r in results if not well_formed(r)]
    if bad:
        print(f"[rpc_bench] incomplete results, errors or unclean exit in: {bad}", file=sys.stderr)
        return 1
    print(f"[rpc_bench] complete: {len(results)} modes, 0 errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

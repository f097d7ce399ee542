#!/usr/bin/env python3
"""Streaming benchmark driver (README.md): server CPU per streamed message,
plain gRPC vs StreamMessages' modes, and RSS over a long stream.

  stream_bench.py cpu --build build/release --rounds 3 --api sync \
      --out docs/raw/stream/cpu_sync.md
  stream_bench.py rss --build build/release --seconds 600 --mode auto \
      --out docs/raw/stream/rss_auto_sync.txt   # then plot with --png

cpu: per round, each config in turn (order rotated per round): a fresh
server, one warm-up call, then --calls calls of --messages messages; the
server's CPU (utime + stime from /proc) over the measured calls divided by
the messages. plain+X: plain with allocator X preloaded (LD_PRELOAD) in
the server alone. Ratios are to plain in the same round; the table shows
medians over rounds.
rss: one server, one call streaming for --seconds; the server's VmRSS every
second.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

LIBDIR = "/usr/lib/x86_64-linux-gnu"  # as bench/rpc/rpc_common.py
PRELOADS = {"mimalloc": "libmimalloc.so.2", "tcmalloc": "libtcmalloc.so.4",
            "jemalloc": "libjemalloc.so.2"}
CONFIGS = ["plain", "plain+mimalloc", "plain+tcmalloc", "plain+jemalloc",
           "heap", "arena", "reuse", "auto"]
TICK = os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, build, config, api):
        mode, _, alloc = config.partition("+")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if alloc:
            env["LD_PRELOAD"] = os.path.join(LIBDIR, PRELOADS[alloc])
        binary = os.path.join(build, "bench", "stream", "arenarpc_stream_server")
        self.proc = subprocess.Popen([binary, "--port=0", f"--mode={mode}", f"--api={api}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"server {config}: {line!r} {self.proc.stderr.read()}")
        self.target = line.split()[-1]

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def client(build, target, *flags):
    binary = os.path.join(build, "bench", "stream", "arenarpc_stream_client")
    out = subprocess.run([binary, f"--target={target}", *flags], check=True,
                         capture_output=True, text=True).stdout
    words = out.split()
    return {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def cpu(args):
    size = [f"--min_bytes={args.min_bytes}", f"--max_bytes={args.max_bytes}"]
    if args.small:
        size.append("--small")
    per_round = []  # {config: us per message}
    mean_bytes = 0
    for r in range(args.rounds):
        order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
        row = {}
        for config in order:
            s = Server(args.build, config, args.api)
            try:
                client(args.build, s.target, "--calls=1", "--messages=200", *size)
                before = s.cpu_s()
                res = client(args.build, s.target, f"--calls={args.calls}",
                             f"--messages={args.messages}", *size)
                used = s.cpu_s() - before
            finally:
                err = s.stop()
            row[config] = used / res["messages"] * 1e6
            mean_bytes = res["mean_bytes"]
            print(f"round {r} {config}: {row[config]:.1f} us/message "
                  f"({res['messages']:.0f} messages) {err.strip()}", file=sys.stderr)
        per_round.append(row)
    lines = [f"# Streaming server CPU per message, {args.api} API",
             "",
             f"`{' '.join(sys.argv)}`",
             "",
             f"Client-streaming OTLP metrics requests (corpus otlp_metrics"
             f"{', each cut to its first metric' if args.small else ''}, "
             f"{args.min_bytes}-{args.max_bytes} B, mean {mean_bytes:.0f} B), "
             f"{args.calls} calls x {args.messages} messages per config and round, "
             f"{args.rounds} rounds; server CPU (utime+stime) / messages.",
             "",
             "| config | " + " | ".join(f"round {i}" for i in range(args.rounds))
             + " | median us/msg | median ratio to plain |",
             "|---|" + "---|" * args.rounds + "---|---|"]
    for config in CONFIGS:
        vals = [row[config] for row in per_round]
        ratios = [row[config] / row["plain"] for row in per_round]
        lines.append(f"| {config} | " + " | ".join(f"{v:.1f}" for v in vals)
                     + f" | {statistics.median(vals):.1f} | {statistics.median(ratios):.3f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


def rss(args):
    s = Server(args.build, args.mode, args.api)
    samples = []
    try:
        binary = os.path.join(args.build, "bench", "stream", "arenarpc_stream_client")
        c = subprocess.Popen([binary, f"--target={s.target}", f"--seconds={args.seconds}",
                              f"--min_bytes={args.min_bytes}", f"--max_bytes={args.max_bytes}"],
                             stdout=subprocess.PIPE, text=True)
        start = time.monotonic()
        while c.poll() is None:
            samples.append((time.monotonic() - start, s.rss_kib()))
            time.sleep(1)
        summary = c.stdout.read().strip()
        if c.returncode != 0:
            raise RuntimeError(f"client failed: {c.returncode}")
    finally:
        err = s.stop()
    steady = [k for t, k in samples if t >= args.settle]
    med = statistics.median(steady)
    lines = [f"# {' '.join(sys.argv)}",
             f"# client: {summary}",
             *[f"# server: {l}" for l in err.strip().splitlines()],
             f"# after {args.settle} s: median {med} KiB, min {min(steady)} KiB "
             f"({(min(steady) / med - 1) * 100:+.1f} %), max {max(steady)} KiB "
             f"({(max(steady) / med - 1) * 100:+.1f} %), {len(steady)} samples",
             "# seconds rss_kib"]
    lines += [f"{t:.1f} {k}" for t, k in samples]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(l for l in lines if l.startswith("#")))


def plot(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts = [l.split() for l in open(args.out) if not l.startswith("#")]
    t = [float(a) for a, _ in pts]
    mib = [int(b) / 1024 for _, b in pts]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t, mib, lw=1)
    ax.set_xlabel("seconds into the stream")
    ax.set_ylabel("server RSS (MiB)")
    ax.set_ylim(0, max(mib) * 1.2)
    ax.set_title(os.path.basename(args.out))
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["cpu", "rss", "plot"])
    p.add_argument("--build", default="build/release")
    p.add_argument("--api", default="sync", choices=["sync", "callback"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--min_bytes", type=int, default=80000)
    p.add_argument("--max_bytes", type=int, default=130000)
    p.add_argument("--mode", default="auto", help="rss: the server's mode")
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--settle", type=float, default=30,
                   help="rss: seconds of warm-up left out of the bounds")
    p.add_argument("--small", action="store_true",
                   help="cpu: each request cut to its first metric (small messages)")
    p.add_argument("--out", default="")
    p.add_argument("--png", default="")
    args = p.parse_args()
    {"cpu": cpu, "rss": rss, "plot": plot}[args.what](args)


if __name__ == "__main__":
    main()

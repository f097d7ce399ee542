#!/usr/bin/env python3
"""Streaming benchmark driver (README.md): server CPU per streamed message,
plain gRPC vs StreamMessages' modes, and RSS over a long stream.

  stream_bench.py cpu --build build/release --rounds 3 --api sync \
      --out docs/raw/stream/cpu_sync.md
  stream_bench.py rss --build build/release --seconds 600 --mode auto \
      --out docs/raw/stream/rss_auto_sync.txt   # then plot with --png
  stream_bench.py rss --modes plain,arena,reuse,auto --rate 100 \
      --seconds 600 --settle 30 --interval 2 --out docs/raw/stream/rss_rate.txt

cpu: per round, each config in turn (order rotated per round): a fresh
server, one warm-up call, then --calls calls of --messages messages; the
server's CPU (utime + stime from /proc) over the measured calls divided by
the messages. plain+X: plain with allocator X preloaded (LD_PRELOAD) in
the server alone. Ratios are to plain in the same round; the table shows
medians over rounds.
rss: one server per mode (--modes, side by side), one call each streaming
for --seconds, at most --rate messages/s if given; the servers' VmRSS every
--interval seconds, and per mode the median, min and max after --settle.
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
    """One server per mode, side by side, each with its own client streaming
    one call for --seconds (at --rate messages/s if > 0); every --interval
    seconds the VmRSS of each server. Bounds per mode after --settle."""
    modes = args.modes.split(",") if args.modes else [args.mode]
    servers, clients = {}, {}
    samples = []  # (seconds, [kib per mode])
    binary = os.path.join(args.build, "bench", "stream", "arenarpc_stream_client")
    load_before = open("/proc/loadavg").read().strip()
    try:
        for m in modes:
            servers[m] = Server(args.build, m, args.api)
        for m in modes:
            flags = [f"--target={servers[m].target}", f"--seconds={args.seconds}",
                     f"--min_bytes={args.min_bytes}", f"--max_bytes={args.max_bytes}"]
            if args.rate > 0:
                flags.append(f"--rate={args.rate}")
            clients[m] = subprocess.Popen([binary, *flags], stdout=subprocess.PIPE,
                                          text=True)
        start = time.monotonic()
        while any(c.poll() is None for c in clients.values()):
            samples.append((time.monotonic() - start,
                            [servers[m].rss_kib() for m in modes]))
            time.sleep(args.interval)
        summaries = {m: c.stdout.read().strip() for m, c in clients.items()}
        failed = [m for m, c in clients.items() if c.returncode != 0]
        if failed:
            raise RuntimeError(f"client failed: {failed}")
        if args.rate > 0:  # the limit held
            for m, text in summaries.items():
                words = text.split()
                sent = int(words[words.index("messages") + 1])
                if sent > args.rate * args.seconds * 1.05 + 2:
                    raise RuntimeError(f"{m}: {sent} messages in {args.seconds} s "
                                       f"at --rate {args.rate}")
    finally:
        for c in clients.values():
            if c.poll() is None:
                c.kill()
        errs = {m: s.stop() for m, s in servers.items()}
    load_after = open("/proc/loadavg").read().strip()
    lines = [f"# {' '.join(sys.argv)}",
             f"# loadavg before: {load_before}; after: {load_after}",
             f"# {len(modes)} servers side by side, {args.api} API, a client each: one "
             f"client-streaming call of {args.seconds:.0f} s, "
             + (f"{args.rate:g} messages/s" if args.rate > 0 else "unthrottled")
             + f", messages {args.min_bytes}-{args.max_bytes} B; VmRSS every "
             f"{args.interval:g} s; bounds over the samples after {args.settle:g} s"]
    for i, m in enumerate(modes):
        lines.append(f"# {m} client: {summaries[m]}")
        lines += [f"# {m} server: {l}" for l in errs[m].strip().splitlines()]
        steady = [k[i] for t, k in samples if t >= args.settle]
        med = statistics.median(steady)
        lo, hi = min(steady), max(steady)
        worst = max(hi / med - 1, 1 - lo / med) * 100
        lines.append(
            f"# {m}: median {med:.0f} KiB, min {lo} KiB ({(lo / med - 1) * 100:+.1f} %), "
            f"max {hi} KiB ({(hi / med - 1) * 100:+.1f} %), {len(steady)} samples; "
            f"+-5 %: {'met' if worst <= 5 else 'missed'} ({worst:.1f} %)")
    lines.append("# seconds " + " ".join(f"{m}_kib" for m in modes))
    lines += [f"{t:.1f} " + " ".join(str(k) for k in ks) for t, ks in samples]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(l for l in lines if l.startswith("#")))


def plot(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = ["rss"]
    pts = []
    for l in open(args.out):
        if l.startswith("# seconds "):
            names = [n.replace("_kib", "") for n in l.split()[2:]]
        elif not l.startswith("#"):
            pts.append([float(x) for x in l.split()])
    t = [p[0] for p in pts]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    top = 0
    for i, name in enumerate(names):
        mib = [p[1 + i] / 1024 for p in pts]
        top = max(top, max(mib))
        ax.plot(t, mib, lw=1, label=name)
    if len(names) > 1:
        ax.legend(loc="lower right")
    ax.set_xlabel("seconds into the stream")
    ax.set_ylabel("server RSS (MiB)")
    ax.set_ylim(0, top * 1.2)
    ax.set_title(os.path.basename(args.out))
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)


def bounds(args):
    """Reads an rss output (--out): per mode, the samples after --settle
    within +-5 % of the median, p1 and p99, the samples outside (with their
    times: a spike every server shares is the machine, not a mode), and the
    medians of the two halves (growth)."""
    names, pts = ["rss"], []
    for l in open(args.out):
        if l.startswith("# seconds "):
            names = [n.replace("_kib", "") for n in l.split()[2:]]
        elif not l.startswith("#"):
            pts.append([float(x) for x in l.split()])
    steady = [p for p in pts if p[0] >= args.settle]
    mid = (steady[0][0] + steady[-1][0]) / 2
    lines = [f"# stream_bench.py bounds --out {args.out} --settle {args.settle:g}"]
    for i, n in enumerate(names):
        v = [p[1 + i] for p in steady]
        med = statistics.median(v)
        s = sorted(v)
        p1, p99 = s[int(len(s) * 0.01)], s[int(len(s) * 0.99) - 1]
        out = [f"{p[0]:.0f} s {(p[1 + i] / med - 1) * 100:+.1f} %" for p in steady
               if abs(p[1 + i] / med - 1) > 0.05]
        a = statistics.median([p[1 + i] for p in steady if p[0] < mid])
        b = statistics.median([p[1 + i] for p in steady if p[0] >= mid])
        lines.append(
            f"{n}: median {med:.0f} KiB; within +-5 %: {len(v) - len(out)} of {len(v)} "
            f"samples; p1 {(p1 / med - 1) * 100:+.1f} %, p99 {(p99 / med - 1) * 100:+.1f} %; "
            f"outside: {', '.join(out) if out else 'none'}; median of the first half "
            f"{a:.0f} KiB, second half {b:.0f} KiB ({(b / a - 1) * 100:+.1f} %)")
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["cpu", "rss", "plot", "bounds"])
    p.add_argument("--build", default="build/release")
    p.add_argument("--api", default="sync", choices=["sync", "callback"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--min_bytes", type=int, default=80000)
    p.add_argument("--max_bytes", type=int, default=130000)
    p.add_argument("--mode", default="auto", help="rss: the server's mode")
    p.add_argument("--modes", default="",
                   help="rss: comma-separated modes, one server each, side by side "
                        "(overrides --mode)")
    p.add_argument("--rate", type=float, default=0,
                   help="rss: messages per second per client (0: unthrottled)")
    p.add_argument("--interval", type=float, default=1,
                   help="rss: seconds between RSS samples")
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--settle", type=float, default=30,
                   help="rss: seconds of warm-up left out of the bounds")
    p.add_argument("--small", action="store_true",
                   help="cpu: each request cut to its first metric (small messages)")
    p.add_argument("--out", default="")
    p.add_argument("--png", default="")
    args = p.parse_args()
    {"cpu": cpu, "rss": rss, "plot": plot, "bounds": bounds}[args.what](args)


if __name__ == "__main__":
    main()

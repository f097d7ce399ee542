#!/usr/bin/python3
"""Overload and soak runs of arenarpc_echo_server as shipped (docs/OPERATE.md
"Overload", docs/MEASURE.md "Reliability"), driven by arenarpc_reliability_load (bench/reliability/
load_client.cc: deadlines, skewed sizes, every call's status counted).

  serve_load.py overload [--modes heap,arena,reuse,auto] [--burst 60] [--idle 30]
  serve_load.py soak [--modes ...] [--minutes 10] [--rps 100]

Server RSS (/proc/PID/status VmRSS) is sampled every 0.5 s. Writes a small
text table and the RSS samples (one line per second) under
docs/raw/reliability/, and an RSS-over-time PNG under docs/.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAW = os.path.join(ROOT, "docs", "raw", "reliability")
MIX = "90:1,9:30,1:2900"  # ~1.3 KB, ~38 KB, ~3.6 MB requests


def rss_mib(pid, key="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


class Server:
    def __init__(self, binary, mode, extra=()):
        self.cmd = [binary, "--port=0", f"--mode={mode}"] + list(extra)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.out = []
        line = self.proc.stdout.readline()
        while line and not line.startswith("listening on"):
            self.out.append(line)
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("server did not start: " + "".join(self.out))
        self.port = int(line.split()[-1])
        self.reader = threading.Thread(target=lambda: self.out.extend(self.proc.stdout), daemon=True)
        self.reader.start()
        self.samples = []  # (t, MiB)
        self.t0 = time.time()
        self._stop = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()

    def _sample(self):
        while not self._stop.is_set() and self.proc.poll() is None:
            self.samples.append((time.time() - self.t0, rss_mib(self.proc.pid)))
            self._stop.wait(0.5)

    def now(self):
        return time.time() - self.t0

    def rss(self):
        return rss_mib(self.proc.pid)

    def stop(self):
        """SIGTERM; returns (exit code, stats lines printed at exit)."""
        self._stop.set()
        self.sampler.join()
        alive = self.proc.poll() is None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = -9
        self.reader.join(timeout=5)
        stats = {}
        for line in self.out:
            m = re.match(r"(arenarpc_grpc_(?:over_cap_heap_calls|over_cap_trims|idle_trims)_total) (\d+)",
                         line)
            if m:
                stats[m.group(1)] = int(m.group(2))
        return (rc if alive else f"died({self.proc.returncode})"), stats


GAUGES = ["arenarpc_page_pool_bytes_held", "arenarpc_page_pool_pages_cached",
          "arenarpc_page_pool_pages_in_depot", "arenarpc_arena_idle", "arenarpc_message_pool_idle",
          "arenarpc_message_pool_retained_bytes", "arenarpc_object_pool_bytes_held",
          "arenarpc_grpc_calls_in_flight"]


def smaps_rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Anonymous", "Private_Dirty"):
                    out[k] = int(v.split()[0]) / 1024.0
    except OSError:
        pass
    return out


def thread_arena_tops(pid):
    """MiB in the top chunk of each glibc thread arena (x86-64, glibc 2.26+):
    malloc_trim(0) releases free chunks in every arena but trims the top of
    the main arena only; a thread arena's top shrinks on a free() in that
    arena once it exceeds M_TRIM_THRESHOLD, which glibc raises up to 64 MiB
    after large blocks were freed. Read from /proc/PID/mem: each heap (a
    64 MiB-aligned mapping) starts with its arena's address; the arena's
    top pointer follows its mutex, flags and 10 fastbins (offset 96)."""
    import struct
    tops = []
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        maps = [l for l in maps if len(l.split()) <= 5]  # anonymous only
        with open(f"/proc/{pid}/mem", "rb") as mem:
            def word(addr):
                mem.seek(addr)
                return struct.unpack("<Q", mem.read(8))[0]
            for line in maps:
                f = line.split()
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                if f[1] != "rw-p" or lo % (64 << 20) != 0:
                    continue
                arena = word(lo)  # heap_info.ar_ptr
                if arena >> 47 or arena < 4096:
                    continue
                try:
                    top = word(arena + 96)
                except (OSError, struct.error):
                    continue
                if not lo <= top < lo + (64 << 20):
                    continue  # the arena's top is in another of its heaps
                tops.append((word(top + 8) & ~7) / 2**20)
    except (OSError, struct.error):
        pass
    return tops


def dirty_by_class(pid):
    """Private_Dirty MiB of: the main heap, glibc thread heaps (64 MiB-aligned
    anonymous mappings), other anonymous mappings (glibc's mmapped blocks,
    the page pool, thread stacks), files."""
    out = {"main heap": 0.0, "thread heaps": 0.0, "other anonymous": 0.0, "files": 0.0}
    cls = None
    try:
        for line in open(f"/proc/{pid}/smaps"):
            f = line.split()
            if "-" in f[0] and ":" not in f[0]:
                lo = int(f[0].split("-")[0], 16)
                if len(f) > 5 and f[5] == "[heap]":
                    cls = "main heap"
                elif len(f) > 5 and not f[5].startswith("["):
                    cls = "files"
                elif lo % (64 << 20) == 0 and len(f) == 5:
                    cls = "thread heaps"
                else:
                    cls = "other anonymous"
            elif f[0] == "Private_Dirty:" and cls:
                out[cls] += int(f[1]) / 1024.0
    except OSError:
        pass
    return out


def inspect(s):
    """What the server holds at this point: arenarpc's gauges (SIGUSR1 makes
    the echo server print its stats), the kernel's view, glibc's per-arena
    view (malloc_stats() through gdb), and RSS once more after one extra
    malloc_trim(0) (what glibc held free but had not given back)."""
    pid = s.proc.pid
    r = {"threads": int(rss_mib(pid, "Threads") * 1024), "smaps": smaps_rollup(pid)}
    mark = len(s.out)
    s.proc.send_signal(signal.SIGUSR1)
    for _ in range(100):
        if any(l.startswith("# end of stats") for l in s.out[mark:]):
            break
        time.sleep(0.05)
    gauges = {}
    for line in s.out[mark:]:
        m = re.match(r"(arenarpc_[a-z_]+)(\{[^}]*\})? ([0-9.e+]+)$", line.strip())
        if m and m.group(1) in GAUGES:
            gauges[m.group(1)] = gauges.get(m.group(1), 0) + float(m.group(3))
    r["gauges"] = gauges
    mark = len(s.out)
    g = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "call (void)malloc_stats()",
                        "-ex", "call (int)malloc_trim(0)"], capture_output=True, text=True)
    time.sleep(0.5)
    arenas, total, in_total = [], None, False
    for line in s.out[mark:]:
        if line.startswith("Total"):
            in_total, total = True, [0.0, 0.0]
        m = re.match(r"(system|in use) bytes\s*=\s*(\d+)", line.strip())
        if not m:
            continue
        mib = int(m.group(2)) / 2**20
        if in_total:
            total[0 if m.group(1) == "system" else 1] = mib
        elif m.group(1) == "system":
            arenas.append([mib, 0.0])
        elif arenas:
            arenas[-1][1] = mib
    r["arenas"] = arenas
    r["malloc_total"] = total
    r["gdb_rc"] = g.returncode
    r["tops"] = thread_arena_tops(pid)
    r["dirty"] = dirty_by_class(pid)
    r["after_extra_trim"] = s.rss()
    return r


def inspect_text(mode, i):
    sm = i["smaps"]
    ar = " ".join(f"{sys_:.1f}/{use:.1f}" for sys_, use in i["arenas"])
    tot = i["malloc_total"]
    return (f"{mode}: threads {i['threads']}; smaps Rss {sm.get('Rss', 0):.1f} Anonymous "
            f"{sm.get('Anonymous', 0):.1f} Private_Dirty {sm.get('Private_Dirty', 0):.1f} MiB; "
            f"glibc arenas system/in-use MiB [{ar}]"
            + (f", total {tot[0]:.1f}/{tot[1]:.1f}" if tot else "")
            + f"; thread-arena tops MiB [{' '.join(f'{t:.1f}' for t in i.get('tops', []))}]"
            + f" (sum {sum(i.get('tops', [])):.1f})"
            + "; Private_Dirty MiB: " + ", ".join(f"{k} {v:.1f}" for k, v in i.get("dirty", {}).items())
            + f"; RSS after one more malloc_trim(0) {i['after_extra_trim']:.1f} MiB; arenarpc gauges "
            + ", ".join(f"{k.replace('arenarpc_', '')} {v:.0f}" for k, v in sorted(i["gauges"].items())))


def load(load_bin, port, args):
    cmd = [load_bin, f"--target=127.0.0.1:{port}"] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = {"cmd": " ".join(cmd[:1] + ["--target=127.0.0.1:PORT"] + args), "status": {},
           "minutes": {}, "rc": p.returncode, "sizes": []}
    for line in p.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "status":
            out["status"][int(f[1])] = int(f[2])
        elif f[0] == "minute":
            out["minutes"][int(f[1])] = (int(f[3]), float(f[5]), float(f[7]))
        elif f[0] == "all":
            out["p50_ms"], out["p99_ms"] = float(f[4]), float(f[6])
        elif f[0] == "size_class":
            out["sizes"].append(dict(kv.split("=") for kv in f[1:]))
        elif len(f) == 2:
            out[f[0]] = float(f[1])
    if p.returncode != 0:
        sys.exit(f"load client failed ({p.returncode}): {p.stderr[-2000:]}")
    return out


STATUS_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 4: "DEADLINE_EXCEEDED", 8: "RESOURCE_EXHAUSTED",
                13: "INTERNAL", 14: "UNAVAILABLE"}


def status_text(status):
    return ", ".join(f"{STATUS_NAMES.get(c, c)} {n}" for c, n in sorted(status.items()))


def write_samples(path, runs):
    """One line per second and mode: t MiB (the run's 0.5 s samples, every other)."""
    with open(path, "w") as f:
        f.write("# mode t_s rss_mib (every other 0.5 s sample)\n")
        for mode, r in runs.items():
            for t, v in r["samples"][::2]:
                f.write(f"{mode} {t:.1f} {v:.1f}\n")


def plot(path, runs, title, marks):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for mode, r in runs.items():
        ax.plot([s[0] for s in r["samples"]], [s[1] for s in r["samples"]], label=mode)
    for mode, r in runs.items():
        for name, t in marks(r):
            ax.axvline(t, color="gray", lw=0.6, ls=":")
        break
    ax.set_xlabel("seconds since server start")
    ax.set_ylabel("server RSS, MiB")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def overload(a):
    runs = {}
    for mode in a.modes.split(","):
        print(f"== overload {mode}", file=sys.stderr, flush=True)
        s = Server(a.server, mode, a.server_args)
        r = {"mode": mode, "fresh_rss": s.rss()}
        # Capacity: closed loop, 64 calls in flight (also the warm-up).
        cap = load(a.load, s.port, [f"--mix={MIX}", "--rps=0", "--concurrency=64",
                                     f"--seconds={a.probe}", "--deadline_ms=10000"])
        r["capacity"] = cap["ok_per_s"]
        r["probe_status"] = cap["status"]
        r["sizes"] = cap["sizes"]
        time.sleep(a.settle)
        r["before"] = s.rss()
        r["burst_start"] = s.now()
        offered = round(3 * r["capacity"])
        burst = load(a.load, s.port, [f"--mix={MIX}", f"--rps={offered}", f"--seconds={a.burst}",
                                      f"--deadline_ms={a.deadline_ms}", "--connections=4"])
        r["burst_end"] = s.now()
        r["burst"] = burst
        r["peak"] = max(v for t, v in s.samples if t >= r["burst_start"])
        time.sleep(a.idle)
        r["after"] = s.rss()
        r["after_t"] = s.now()
        if a.inspect:
            try:
                r["inspect"] = inspect(s)
            except Exception as e:  # never lose the run to the probe
                print(f"inspect failed: {e!r}", file=sys.stderr)
        r["rc"], r["stats"] = s.stop()
        r["samples"] = s.samples
        runs[mode] = r
        print(f"   capacity {r['capacity']:.0f}/s before {r['before']:.1f} peak {r['peak']:.1f} "
              f"after {r['after']:.1f} MiB, {status_text(burst['status'])}", file=sys.stderr, flush=True)
    report_overload(a, runs)


def bound_mib(a, sizes):
    """Server memory bound from the shipped options (docs/OPERATE.md, "Memory")."""
    big = max(sizes, key=lambda s: int(s["bytes"]))
    wire = int(big["bytes"]) / 2**20
    parsed = int(big["space_used"]) / 2**20
    per_call = 2 * parsed + 2 * wire  # request+response parsed, their wire bytes
    calls = a.connections * a.max_streams
    return {"per_call": per_call, "calls": calls, "quota": a.quota_mb, "pooled": a.pooled_mb,
            "total": a.base_mib + a.quota_mb + a.pooled_mb + calls * per_call}


def report_overload(a, runs):
    os.makedirs(RAW, exist_ok=True)
    lines = [f"# serve_load.py overload: {a.burst} s at 3x capacity, then {a.idle} s idle",
             f"# server: {os.path.basename(a.server)} (as shipped) {' '.join(a.server_args)}",
             f"# mix {MIX} (weight:scale), deadline {a.deadline_ms} ms, 4 connections",
             "| mode | capacity calls/s | offered calls/s | OK calls/s | statuses | RSS before MiB | "
             "peak MiB | 30 s after MiB | target (1.1 x before + 10) | recovered | bound MiB | "
             "under bound | only OK/RE/DE | server exit |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---|---|---|"]
    for mode, r in runs.items():
        b = r["burst"]
        target = 1.1 * r["before"] + 10
        bd = bound_mib(a, r["sizes"])
        allowed = set(b["status"]) <= {0, 4, 8}
        lines.append(
            f"| {mode} | {r['capacity']:.0f} | {b['offered_per_s']:.0f} | {b['ok_per_s']:.0f} | "
            f"{status_text(b['status'])} | {r['before']:.1f} | {r['peak']:.1f} | {r['after']:.1f} | "
            f"{target:.1f} | {'yes' if r['after'] <= target else 'NO'} | {bd['total']:.0f} | "
            f"{'yes' if r['peak'] <= bd['total'] else 'NO'} | {'yes' if allowed else 'NO'} | {r['rc']} |")
    r0 = next(iter(runs.values()))
    bd = bound_mib(a, r0["sizes"])
    lines += ["",
              f"bound = base {a.base_mib} + resource_quota {bd['quota']} + max_pooled {bd['pooled']} + "
              f"connections x max_concurrent_streams ({bd['calls']}) x per-call {bd['per_call']:.1f} MiB "
              f"(largest request: 2 x parsed + 2 x wire) = {bd['total']:.0f} MiB",
              "sizes: " + "; ".join(f"scale {s['scale']}: {s['bytes']} B wire, {s['space_used']} B parsed"
                                    for s in r0["sizes"]),
              "load command: " + r0["burst"]["cmd"],
              "server counters at exit: " + "; ".join(f"{m}: {r['stats']}" for m, r in runs.items()),
              "fresh-start RSS MiB: " + ", ".join(f"{m} {r['fresh_rss']:.1f}" for m, r in runs.items())]
    if a.inspect:
        lines += ["", f"at the {a.idle:.0f} s point (--inspect):"]
        lines += [inspect_text(m, r["inspect"]) for m, r in runs.items() if "inspect" in r]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(RAW, f"{a.out}.txt"), "w") as f:
        f.write(text)
    write_samples(os.path.join(RAW, f"{a.out}_rss.txt"), runs)
    plot(os.path.join(ROOT, "docs", f"reliability_{a.out}_rss.png"), runs,
         f"Overload: {a.burst} s at 3x capacity, then {a.idle} s idle (one server per mode)",
         lambda r: [("burst", r["burst_start"]), ("end", r["burst_end"])])
    print(text)


def soak(a):
    runs = {}
    for mode in a.modes.split(","):
        print(f"== soak {mode}", file=sys.stderr, flush=True)
        s = Server(a.server, mode, a.server_args)
        r = {"mode": mode}
        res = load(a.load, s.port, [f"--mix={MIX}", f"--rps={a.rps}", f"--seconds={a.minutes * 60}",
                                    f"--deadline_ms={a.deadline_ms}", "--connections=4"])
        r["load"] = res
        r["rc"], r["stats"] = s.stop()
        r["samples"] = s.samples
        runs[mode] = r
    report_soak(a, runs)


def report_soak(a, runs):
    os.makedirs(RAW, exist_ok=True)
    warm = a.warmup_s
    lines = [f"# serve_load.py soak: {a.minutes} min per mode at {a.rps} calls/s, mix {MIX}, "
             f"deadline {a.deadline_ms} ms; warm-up = first {warm} s",
             f"# server: {os.path.basename(a.server)} (as shipped) {' '.join(a.server_args)}",
             "| mode | calls | errors (non-OK) | RSS after warm-up min / median / max MiB | samples' max "
             "deviation from median | per-minute medians' max deviation | flat (+-5 %, per-minute) | "
             "p99 first min ms | p99 last min ms | p50 all ms | server exit |",
             "|---|---:|---:|---|---:|---:|---|---:|---:|---:|---|"]
    for mode, r in runs.items():
        res = r["load"]
        rss = [v for t, v in r["samples"] if t >= warm]
        med = statistics.median(rss)
        dev = max(abs(max(rss) - med), abs(med - min(rss))) / med
        # A sample is one instant: it moves with the huge calls in flight.
        # Growth shows in the per-minute medians.
        by_min = {}
        for t, v in r["samples"]:
            if t >= warm:
                by_min.setdefault(int((t - warm) // 60), []).append(v)
        meds = [statistics.median(v) for _, v in sorted(by_min.items())]
        r["minute_medians"] = meds
        mdev = max(abs(m - med) for m in meds) / med
        errors = sum(n for c, n in res["status"].items() if c != 0) + int(res.get("not_started", 0))
        mins = res["minutes"]
        first, last = mins.get(0, (0, 0, 0)), mins.get(max(mins), (0, 0, 0))
        lines.append(
            f"| {mode} | {int(res['started'])} | {errors} | {min(rss):.1f} / {med:.1f} / {max(rss):.1f} | "
            f"{100 * dev:.1f} % | {100 * mdev:.1f} % | {'yes' if mdev <= 0.05 else 'NO'} | "
            f"{first[2]:.2f} | {last[2]:.2f} | "
            f"{res['p50_ms']:.2f} | {r['rc']} |")
    lines.append("")
    lines.append("per-minute OK calls and p99 ms: " + "; ".join(
        f"{m}: " + " ".join(f"{v[2]:.1f}" for _, v in sorted(r["load"]["minutes"].items()))
        for m, r in runs.items()))
    lines.append("per-minute RSS medians after warm-up, MiB: " + "; ".join(
        f"{m}: " + " ".join(f"{v:.1f}" for v in r["minute_medians"]) for m, r in runs.items()))
    lines.append("load command: " + next(iter(runs.values()))["load"]["cmd"])
    text = "\n".join(lines) + "\n"
    suffix = "" if a.minutes >= 10 else f"_{a.minutes}min"
    with open(os.path.join(RAW, f"soak{suffix}.txt"), "w") as f:
        f.write(text)
    write_samples(os.path.join(RAW, f"soak_rss{suffix}.txt"), runs)
    plot(os.path.join(ROOT, "docs", f"reliability_soak_rss{suffix}.png"), runs,
         f"Soak: {a.minutes} min per mode at {a.rps} calls/s (one server per mode)",
         lambda r: [("warm-up", warm)])
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["overload", "soak"])
    build = os.path.join(ROOT, "build", "release")
    ap.add_argument("--server", default=os.path.join(build, "examples", "arenarpc_echo_server"))
    ap.add_argument("--load", default=os.path.join(build, "bench", "arenarpc_reliability_load"))
    ap.add_argument("--server_args", nargs="*", default=[], help="extra server flags (none: as shipped)")
    ap.add_argument("--modes", default="heap,arena,reuse,auto")
    ap.add_argument("--deadline_ms", type=int, default=1000)
    # overload
    ap.add_argument("--probe", type=int, default=10, help="capacity probe seconds")
    ap.add_argument("--settle", type=float, default=5, help="idle seconds before 'before'")
    ap.add_argument("--burst", type=int, default=60)
    ap.add_argument("--idle", type=float, default=30)
    ap.add_argument("--inspect", action="store_true",
                    help="at the after point: gauges, smaps_rollup, glibc arenas (gdb)")
    ap.add_argument("--out", default="overload", help="kept output's name under docs/raw/reliability/")
    # the shipped options (examples/echo_server.cc defaults), for the bound
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--max_streams", type=int, default=32)
    ap.add_argument("--quota_mb", type=int, default=256)
    ap.add_argument("--pooled_mb", type=int, default=128)
    ap.add_argument("--base_mib", type=int, default=64, help="process baseline allowance")
    # soak
    ap.add_argument("--minutes", type=int, default=10)
    ap.add_argument("--rps", type=int, default=100)
    ap.add_argument("--warmup_s", type=float, default=60)
    a = ap.parse_args()
    overload(a) if a.part == "overload" else soak(a)


if __name__ == "__main__":
    main()

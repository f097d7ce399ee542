"""What the RPC drivers share: running a server under test, reading its CPU
and memory from /proc, ghz's reports (percentiles, the calls it cuts off at
--duration, the one-line summary the docs keep).

Imported by bench/rpc/rpc_bench.py, bench/rpc/ghz_summary.py,
bench/corpus/corpus_rpc.py, bench/advise/advise_check.py and
bench/reliability/ghz_cutoff.py; it imports none of them.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

# The source tree (bench/rpc/ is two levels down).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HZ = os.sysconf("SC_CLK_TCK")
# ghz's client-side errors for calls in flight when it closes its connections
# at --duration. "transport is closing" is grpc-go's ErrConnClosing: a call
# still sending its request (or just starting) when its own connection
# closed; it was the "one failed call" now and then (docs/DESIGN_NOTES.md, "The benchmark's failed calls").
CUT_AT_END = ("use of closed network connection", "context canceled",
              "the client connection is closing", "transport is closing")


def ghz_time(stamp):
    """ghz's RFC 3339 timestamp (ns digits) as seconds since the epoch."""
    import datetime
    base, _, frac = stamp.rstrip("Z").partition(".")
    return (datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc).timestamp()
            + float("0." + (frac or "0")))


def cut_at_end(details, seconds):
    """The non-OK calls ghz cut off at --duration: a cut-off error text, and
    the call ended (ghz's timestamp is the end) no earlier than 0.5 s before
    the run's end. A cut-off text earlier than that is a real failure."""
    if not details:
        return []
    begin = min(ghz_time(d["timestamp"]) - d["latency"] / 1e9 for d in details)
    return [d for d in details if d.get("status") != "OK"
            and any(m in (d.get("error") or "") for m in CUT_AT_END)
            and ghz_time(d["timestamp"]) >= begin + seconds - 0.5]


def find_ghz():
    for c in [shutil.which("ghz"), os.path.expanduser("~/go/bin/ghz"), "/root/go/bin/ghz"]:
        if c and os.path.exists(c):
            return c
    sys.exit("ghz not found: go install github.com/bojand/ghz/cmd/ghz@v0.121.0")


def pin(core, cmd):
    """Prefix `cmd` with taskset when the machine has a core to spare."""
    if core is not None and shutil.which("taskset"):
        return ["taskset", "-c", str(core)] + cmd
    return cmd


def _process_cpu_clock():
    """clock_gettime on another process's CPU-time clock (glibc's
    clock_getcpuclockid), or None where it cannot be had."""
    import ctypes

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        getclock, gettime = libc.clock_getcpuclockid, libc.clock_gettime
    except (OSError, AttributeError):
        return None

    def read(pid):
        clock, ts = ctypes.c_int(), Timespec()
        if getclock(int(pid), ctypes.byref(clock)) != 0 or gettime(clock, ctypes.byref(ts)) != 0:
            return None
        return ts.tv_sec + ts.tv_nsec / 1e9
    return read


_CPU_CLOCK = _process_cpu_clock()


def thread_cpu_ticks(pid):
    """CPU clock ticks (user + system) per thread name of a live process,
    from /proc/<pid>/task/*/stat: which threads a window's CPU went to
    (threads that exit in between are not counted)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


def minor_faults(pid):
    """The process's minor page faults so far (every thread, exited ones
    included: /proc/<pid>/stat's minflt); None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return None


def cpu_seconds(pid):
    """The process's CPU time (user + system, every thread, exited ones
    included), in seconds. From its CPU-time clock, to the nanosecond:
    /proc/<pid>/stat counts in clock ticks (1/HZ = 10 ms here), which over a
    15 s window of a few hundred calls is 3-4 % of a call's CPU: the size
    of the differences being measured (auto against the best fixed mode).
    /proc's ticks where the clock cannot be read."""
    if _CPU_CLOCK is not None:
        seconds = _CPU_CLOCK(pid)
        if seconds is not None:
            return seconds
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ  # utime + stime


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


class Server:
    def __init__(self, binary, mode, core, extra):
        cmd = pin(core, [binary, "--port=0", f"--mode={mode}"] + extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = None
        deadline = time.time() + 30
        self.log = []
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.log.append(line)
            if line.startswith("listening on"):
                self.port = int(line.split()[-1].rsplit(":", 1)[-1])
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.log))
        # Keep draining its output so it never blocks on a full pipe.
        threading.Thread(target=lambda: [self.log.append(l) for l in self.proc.stdout], daemon=True).start()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


# The zero-code alternatives: plain gRPC with a better malloc preloaded
# (Debian's libraries), as "plain+<name>" modes.
LIBDIR = "/usr/lib/x86_64-linux-gnu"
PRELOADS = {"mimalloc": "libmimalloc.so.2", "tcmalloc": "libtcmalloc.so.4",
            "jemalloc": "libjemalloc.so.2"}


def start_server(binary, mode, core, extra, preload=None):
    """Server with LD_PRELOAD=`preload` (a PRELOADS value) for it alone."""
    env_before = os.environ.get("LD_PRELOAD")
    if preload:
        os.environ["LD_PRELOAD"] = os.path.join(LIBDIR, preload)
    try:
        return Server(binary, mode, core, extra)
    finally:
        if env_before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = env_before


# One line per ghz JSON report (bench/rpc/ghz_summary.py, rpc_bench.py,
# corpus_rpc.py): ghz's report carries every call (~110 KB per 20 s
# round); the docs keep this line instead.
HEADER = ("# report calls ok fastest_ms slowest_ms average_ms "
          "p50_ms p90_ms p99_ms p99.9_ms rps")


def summary_of(name, report):
    """The summary line of a ghz report (a dict). Percentiles over the OK
    calls' details (percentile() above); a report whose details were dropped
    gives ghz's own latencyDistribution instead, which has no p99.9 (nan)."""
    details = report.get("details")
    if details:
        ok = sorted(d["latency"] / 1e6 for d in details if d.get("status") == "OK")
        calls, n_ok = len(details), len(ok)
        pct = [percentile(ok, p) for p in (50, 90, 99, 99.9)]
    else:
        dist = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
        calls = report.get("count", 0)
        n_ok = (report.get("statusCodeDistribution") or {}).get("OK", 0)
        pct = [dist.get(p, float("nan")) for p in (50, 90, 99, 99.9)]
    cols = [name, str(calls), str(n_ok),
            f"{report.get('fastest', 0) / 1e6:.2f}",
            f"{report.get('slowest', 0) / 1e6:.2f}",
            f"{report.get('average', 0) / 1e6:.2f}"]
    cols += [f"{v:.2f}" for v in pct]
    cols.append(f"{report.get('rps', 0.0):.2f}")
    return " ".join(cols)


def summary_line(path):
    with open(path) as f:
        return summary_of(os.path.basename(path), json.load(f))

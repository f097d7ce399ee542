#!/usr/bin/python3
"""Capacity at a latency objective: the highest call rate each mode sustains.

For each target (a corpus service, or the echo demo, on gRPC's callback,
sync or async API) and each mode (plain gRPC; plain with mimalloc, tcmalloc
or jemalloc preloaded; arenarpc's heap, arena, reuse, auto; MODE+MALLOC,
e.g. auto+mimalloc, when named), the server
(pinned to one core) is driven by arenarpc_capacity_client (pinned to the
other: open loop, pre-serialized requests, latency from the intended send
time) in short steps of a fixed rate, and the rate is stepped up until p99
exceeds the objective. Two objectives: 5x the mode's own unloaded p50, and
a fixed --objective_ms. A step passes an objective when no call failed and
p99 <= the objective. The search: a warm-up, an unloaded step (p50), then a
ladder up (first step at half the rate the server's CPU per call allows,
then x1.25 or faster while the server's core is far from busy) until a step
fails the looser objective, then --bisect geometric bisections per
objective between the highest pass and the lowest failure above it. Then
one step at 50 % of plain's capacity at the fixed objective (plain's in
the first round: one rate for every mode and round), on a fresh server
after a warm-up at that rate. Modes run interleaved (rotated each round),
--rounds rounds; medians over rounds. Peak RSS per step: VmHWM after
resetting it (/proc/PID/clear_refs) at the step's start; server CPU share
from its CPU clock; the client's own CPU share from its getrusage.

  bench/capacity/capacity.py --targets otlp_logs --api callback \
      --out docs/raw/capacity --plot_dir docs             # one service, all modes
  bench/capacity/capacity.py --targets echo --quick        # 1 round of 3 s steps
  bench/capacity/capacity.py --targets echo --light 100    # the tail at one light rate
  bench/capacity/capacity.py --smoke                       # tests: tiny steps

Output in --out: capacity_<target>_<api>.json (every step, small) and .md
(the table); plot <plot_dir>/capacity_<target>_<api>.png (p99 and p50 vs
offered rate, per mode). Exit 1 if a server or the client failed to run, or
(--smoke) if any call failed.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import signal
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "rpc"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "corpus"))
import corpus_rpc  # noqa: E402  (services(), payload())
import rpc_common  # noqa: E402  (start_server, cpu_seconds, status_kib, pin, PRELOADS)
from tables import brief_table, fmt, light_table, med  # noqa: E402

ROOT = rpc_common.ROOT
MODES = {  # name: (--mode, LD_PRELOAD)
    "plain": ("none", None),
    "plain+mimalloc": ("none", rpc_common.PRELOADS["mimalloc"]),
    "plain+tcmalloc": ("none", rpc_common.PRELOADS["tcmalloc"]),
    "plain+jemalloc": ("none", rpc_common.PRELOADS["jemalloc"]),
    "heap": ("heap", None),
    "arena": ("arena", None),
    "reuse": ("reuse", None),
    "auto": ("auto", None),
}
# arenarpc with a malloc preloaded beside it (what a user who already
# preloads one gets); not in the default run: name them in --modes.
COMPOSED = {f"{m}+{a}": (m, rpc_common.PRELOADS[a])
            for m in ("heap", "arena", "reuse", "auto") for a in ("mimalloc", "tcmalloc", "jemalloc")}
KNOWN = {**MODES, **COMPOSED}
# MODE@baseline: the same mode of another build (--baseline_build), run side
# by side with this one's (before and after a change, in one run).
KNOWN.update({f"{m}@baseline": v for m, v in KNOWN.items()})
BUILDS = {}  # "build" and "baseline": set by main()


def server_binary(target, mode):
    """The target's server, or its twin in --baseline_build for MODE@baseline."""
    if not mode.endswith("@baseline"):
        return target[0]
    return os.path.join(BUILDS["baseline"], os.path.relpath(target[0], BUILDS["build"]))
ECHO_METHOD = "/arenarpc.echo.EchoService/Echo"
SERVER_CORE, CLIENT_CORE = (1, 0) if os.cpu_count() >= 2 else (None, None)


def log(*a):
    print(*a, flush=True)


def make_target(args, name):
    """(server binary, server flags, method, request file, request bytes)."""
    payloads = os.path.join(ROOT, "out", "capacity", "payloads")  # regenerated: never under docs/
    os.makedirs(payloads, exist_ok=True)
    if name == "echo":
        path = os.path.join(payloads, f"echo_scale{args.echo_scale}.bin")
        subprocess.run([os.path.join(args.build, "examples", "arenarpc_echo_payload"),
                        f"--scale={args.echo_scale}", "--seed=7", f"--out={path}"],
                       check=True, capture_output=True)
        if args.api == "async":  # the async echo is its own example (no --api)
            server = os.path.join(args.build, "examples", "arenarpc_echo_async_server")
            return server, [], ECHO_METHOD, path, os.path.getsize(path)
        server = os.path.join(args.build, "examples", "arenarpc_echo_server")
        return server, [f"--api={args.api}"], ECHO_METHOD, path, os.path.getsize(path)
    svc = [s for s in corpus_rpc.services(args.build) if s["name"] == name]
    if not svc:
        sys.exit(f"--targets: no corpus service {name}")
    path, size, _ = corpus_rpc.payload(args.build, name, payloads)
    server = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    return server, [f"--api={args.api}", *args.server_args.split()], svc[0]["method"], path, size


def reset_peak(pid):
    """Resets VmHWM to the current RSS (Linux: 5 > clear_refs); False where refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_delays(pid):
    """{tid: ns} the process's live threads waited on a run queue
    (schedstat's second field): behind each other on the server's one core,
    or behind the machine's other work."""
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    out[tid] = int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        pass
    return out


def run_delay_s(before, after):
    """Seconds waited between two run_delays(): threads that ended in between
    take their waits with them (gRPC's sync API starts and ends threads under
    load), so a lower bound, never negative as a difference of sums was."""
    return sum(ns - before.get(t, 0) if ns >= before.get(t, 0) else ns for t, ns in after.items()) / 1e9


def core_busy_s(core):
    """Seconds the core ran anything but interrupts (/proc/stat: user, nice,
    system, steal); None without a pinned core."""
    if core is None:
        return None
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{core} "):
                v = [int(x) for x in line.split()[1:9]]
                return (v[0] + v[1] + v[2] + v[7]) / os.sysconf("SC_CLK_TCK")
    return None


def step(args, server, target, rate, seconds, warmup):
    """One fixed-rate step; returns the client's result plus the server's figures."""
    _, _, method, request, _ = target
    pid = server.proc.pid
    peak_reset = reset_peak(pid)
    cpu0, wait0, core0, t0 = rpc_common.cpu_seconds(pid), run_delays(pid), core_busy_s(SERVER_CORE), time.time()
    faults0 = rpc_common.minor_faults(pid)
    cmd = rpc_common.pin(CLIENT_CORE, [
        args.client, f"--target=127.0.0.1:{server.port}", f"--method={method}",
        f"--request={request}", f"--rate={rate:.2f}", f"--seconds={seconds}",
        f"--warmup_s={warmup}", f"--channels={args.channels}",
        f"--deadline_ms={args.deadline_ms}", "--quiet"])
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    cpu1, wait1, core1 = rpc_common.cpu_seconds(pid), run_delays(pid), core_busy_s(SERVER_CORE)
    faults1 = rpc_common.minor_faults(pid)
    lines = [l for l in p.stdout.splitlines() if l.startswith("result ")]
    if not lines or p.returncode not in (0, 1):
        raise RuntimeError(f"client failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    r = json.loads(lines[-1][len("result "):])
    r.update(rate=round(rate, 2), server_cpu_share=round((cpu1 - cpu0) / wall, 3),
             server_run_delay_share=round(run_delay_s(wait0, wait1) / wall, 3),
             # What else ran on the server's core (its CPU less the server's):
             # the machine's other work, which its waits alone do not tell.
             server_core_other_share=(round((core1 - core0 - (cpu1 - cpu0)) / wall, 3)
                                      if core0 is not None and core1 is not None else None),
             # Over every call of the step, its warm-up's too (all were due).
             server_cpu_us_per_call=round((cpu1 - cpu0) / max(rate * (seconds + warmup), 1) * 1e6, 1),
             # Page faults per call (fresh pages: the kernel zeroes each on first touch).
             server_minor_faults_per_call=(round((faults1 - faults0) / max(rate * (seconds + warmup), 1), 1)
                                           if faults0 is not None and faults1 is not None else None),
             peak_rss_mib=round(rpc_common.status_kib(pid, "VmHWM") / 1024, 1),
             rss_mib=round(rpc_common.status_kib(pid, "VmRSS") / 1024, 1), peak_reset=peak_reset)
    return r


def passes(r, objective_ms):
    return r["failed"] == 0 and r["not_started"] == 0 and r["p99_us"] <= objective_ms * 1000


def capacity(steps, objective_ms):
    """(highest passing rate below the lowest failing one, that failure's rate or None)."""
    fails = [s["rate"] for s in steps if not passes(s, objective_ms)]
    first_fail = min(fails) if fails else None
    ok = [s["rate"] for s in steps if passes(s, objective_ms) and (first_fail is None or s["rate"] < first_fail)]
    return (max(ok) if ok else 0.0), first_fail


class Served:
    """The server under test; restart() gives a fresh one (after an overload,
    whose backlog and grown heap would weigh on the next steps)."""

    def __init__(self, target, mode):
        self.flag, self.preload = KNOWN[mode]
        self.binary, self.flags = server_binary(target, mode), target[1]
        self.exit_codes = []
        self.server = self._start()

    def _start(self):
        return rpc_common.start_server(self.binary, self.flag, SERVER_CORE, self.flags, self.preload)

    def restart(self):
        self.exit_codes.append(self.server.stop())
        self.server = self._start()

    def stop(self):
        self.exit_codes.append(self.server.stop())
        return max(abs(c) for c in self.exit_codes)


def client_starved(r):
    """The client started calls late (over 5 % of them more than 2 ms after
    their time) or its threads waited on a run queue over 35 % of the step."""
    return r["late"] > 0.05 * max(r["sent"], 1) or r.get("client_run_delay_share", 0) > 0.35


def search(args, served, target, objectives, start, tag):
    steps, steps_starved, steps_stalled = [], [], []

    def fresh_server(rate):  # warmed at half the rate
        served.restart()
        step(args, served.server, target, rate / 2, args.warmup_s / 2, 0)

    def measured(rate, kind):
        for attempt in range(3):
            r = step(args, served.server, target, rate, args.step_s, args.step_warmup_s)
            r["kind"] = kind
            if passes(r, max(objectives)) or not client_starved(r):
                break
            # The client, not the server, fell behind: the machine's other work
            # took its core. Not a measurement of the server: again, fresh.
            log(f"  {tag} {kind:>6} {rate:8.1f}/s: client starved (late {r['late']} of {r['sent']}, "
                f"waited {r['client_run_delay_share']:.2f}): again")
            r["kind"] = kind + "_starved"
            steps_starved.append(r)
            fresh_server(rate)
        return r

    def run(rate, kind):
        r = measured(rate, kind)
        if (not passes(r, max(objectives)) and not client_starved(r)
                and r["server_cpu_share"] < args.stall_cpu_share):
            # Failed with the server's core far from busy: a stall (a fresh
            # server's first page faults, the machine's other work) can end
            # the ladder far below the cliff, and the search never goes back
            # above a failed step. Once more on a fresh server; the second
            # result counts, the first is kept. A server that is not
            # CPU-bound fails again.
            log(f"  {tag} {kind:>6} {rate:8.1f}/s: failed at {r['server_cpu_share']:.2f} of a core "
                f"(p99 {r['p99_us'] / 1000:.2f} ms): again, fresh")
            r["kind"] = kind + "_stalled"
            steps_stalled.append(r)
            fresh_server(rate)
            r = measured(rate, kind)
        steps.append(r)
        if not passes(r, max(objectives)):  # overloaded: the next step gets a fresh server
            fresh_server(rate)
        log(f"  {tag} {kind:>6} {rate:8.1f}/s: ok {r['ok']:6d} failed {r['failed']:4d} late {r['late']:4d} "
            f"p50 {r['p50_us'] / 1000:7.2f} p99 {r['p99_us'] / 1000:8.2f} ms  server cpu "
            f"{r['server_cpu_share']:.2f} (waited {r['server_run_delay_share']:.2f}, other work on its core "
            f"{r.get('server_core_other_share') or 0:.2f}) client cpu "
            f"{r['client_cpu_share']:.2f} (waited {r.get('client_run_delay_share', 0):.2f})  peak {r['peak_rss_mib']:.0f} MiB")
        return r

    loose = max(objectives)
    rate = start
    r = run(rate, "ladder")
    if passes(r, loose):
        while rate < args.max_rate and len(steps) < args.max_steps:
            # Far from a busy core: larger strides (at most x2).
            share = max(r["server_cpu_share"], 0.05)
            rate *= min(2.0, max(args.factor, 0.85 / share)) if share < 0.6 else args.factor
            r = run(rate, "ladder")
            if not passes(r, loose):
                break
    else:
        for _ in range(4):
            rate /= args.factor ** 2
            r = run(rate, "down")
            if passes(r, loose):
                break
    for objective in sorted(objectives):
        for _ in range(args.bisect):
            lo, hi = capacity(steps, objective)
            if hi is None:
                break
            mid = math.sqrt(lo * hi) if lo > 0 else hi / args.factor ** 2
            if hi / max(mid, 1e-9) < 1.03:
                break
            run(mid, "bisect")
    return steps, steps_starved, steps_stalled


def run_mode(args, target, mode, rnd, state):
    served = Served(target, mode)
    server = served.server
    tag = f"r{rnd} {mode:>14}"
    try:
        prior = state["caps"].get(mode)
        warm_rate = 0.5 * statistics.median(prior) if prior else args.unloaded_rate * 2
        step(args, server, target, warm_rate, args.warmup_s, 0)  # warm-up (auto learns), not kept
        idle = step(args, server, target, args.unloaded_rate, args.unloaded_s, 0.5)
        cpu_per_call = idle["server_cpu_share"] * idle["wall_s"] / max(idle["ok"], 1)
        p50_ms = idle["p50_us"] / 1000
        objectives = [round(5 * p50_ms, 3), args.objective_ms]
        if prior:
            start = 0.8 * statistics.median(prior)
        else:
            start = args.start_rate or max(args.unloaded_rate, 0.5 / max(cpu_per_call, 1e-6))
        start = min(start, args.max_rate)
        log(f"  {tag} unloaded p50 {p50_ms:.2f} ms (objectives {objectives[0]:.2f} and {objectives[1]} ms), "
            f"start {start:.0f}/s")
        steps, starved, stalled = search(args, served, target, objectives, start, tag)
        caps = {f"{o}": capacity(steps, o)[0] for o in objectives}
        result = {"mode": mode, "round": rnd, "unloaded": idle, "objectives_ms": objectives,
                  "cap_rel": caps[f"{objectives[0]}"], "cap_fixed": caps[f"{objectives[1]}"], "steps": steps,
                  "steps_client_starved": starved, "steps_stalled": stalled}
        state["caps"].setdefault(mode, []).append(max(result["cap_rel"], result["cap_fixed"]))
        result["client_cpu_share_max"] = max(s["client_cpu_share"] for s in steps)
        result["late_max"] = max(s["late"] for s in steps)
        result["peak_rss_at_cap_mib"] = None
        log(f"  {tag} capacity {result['cap_rel']:.0f}/s at {objectives[0]:.2f} ms, "
            f"{result['cap_fixed']:.0f}/s at {objectives[1]} ms")
    finally:
        rc = served.stop()
    # On a fresh server (no overload behind it): the mode's capacity again
    # (its step's peak RSS is the one reported), then 50 % of plain's.
    served = Served(target, mode)
    server = served.server
    try:
        step(args, server, target, max(result["cap_fixed"] / 2, args.unloaded_rate), args.warmup_s, 0)
        # Confirmed on the fresh server: a capacity at the edge of the cliff
        # that collapses when run again is not sustained; 10 % lower, up to 3 times.
        # A starved client's failure says nothing of the server: the same rate
        # once more, then lower anyway (near the cliff an overloaded server
        # also makes the client late).
        rate = result["cap_fixed"]
        starved_here = 0
        tries = 4 if rate else 0
        for i in range(tries):
            c = step(args, served.server, target, rate, args.step_s, args.step_warmup_s)
            log(f"  {tag}    cap {c['rate']:8.1f}/s: p50 {c['p50_us'] / 1000:.2f} p99 {c['p99_us'] / 1000:.2f} ms "
                f"failed {c['failed']} peak {c['peak_rss_mib']:.0f} MiB (fresh server)")
            result.setdefault("confirm_steps", []).append(c)
            if passes(c, args.objective_ms):
                result["at_cap"] = c
                result["peak_rss_at_cap_mib"] = c["peak_rss_mib"]
                break
            if i == tries - 1 and (args.half_fresh or not args.half_load):
                break  # no try follows, and the half step gets a server of its own
            served.restart()
            step(args, served.server, target, rate / 2, args.warmup_s / 2, 0)
            starved_here = starved_here + 1 if client_starved(c) else 0
            if starved_here != 1:  # not starved, or starved a second time here
                rate /= 1.1
                starved_here = 0
        result["cap_confirmed"] = result["at_cap"]["rate"] if "at_cap" in result else 0.0
        if mode == "plain":
            state["plain_fixed"].append(result["cap_confirmed"])
        # One rate for every mode and round: half of the run's first plain
        # capacity (plain runs first in round 0), so the column compares like with like.
        half = 0.5 * next((c for c in state["plain_fixed"] if c), 0)
        if half and args.half_load:
            if args.half_fresh:
                # On a fresh server: the tail at half load should not carry
                # what the confirmation near the cliff left (memory not yet
                # given back, queues); its warm-up is at the half rate.
                served.restart()
                step(args, served.server, target, half, args.warmup_s, 0)
            h = step(args, served.server, target, half, args.step_s, args.step_warmup_s)
            log(f"  {tag}   half {half:8.1f}/s: p50 {h['p50_us'] / 1000:.2f} p99 {h['p99_us'] / 1000:.2f} ms "
                f"failed {h['failed']}")
            result["half"] = h
    finally:
        rc = max(abs(rc), served.stop())
    result["server_exit_code"] = rc
    return result


def run_light(args, target, mode, rnd):
    """--light: one fixed light-load step after the warm-up (the tail at light load);
    with --burst_rate, after a burst at that rate."""
    flag, preload = KNOWN[mode]
    server_bin, server_args = server_binary(target, mode), target[1]
    server = rpc_common.start_server(server_bin, flag, SERVER_CORE, server_args, preload)
    try:
        step(args, server, target, args.light, args.warmup_s, 0)
        burst = None
        if args.burst_rate:
            # What a burst leaves behind under the load that follows it: the
            # measured step's peak and final RSS.
            burst = step(args, server, target, args.burst_rate, args.burst_s, 0)
        r = step(args, server, target, args.light, args.step_s, args.step_warmup_s)
        if burst:
            r["burst"] = {k: burst[k] for k in ("rate", "ok", "failed", "p99_us", "peak_rss_mib", "rss_mib")}
        r["server_cpu_us_per_call"] = round(r["server_cpu_share"] * r["wall_s"] / max(r["ok"], 1) * 1e6, 1)
    finally:
        rc = server.stop()
    r.update(mode=mode, round=rnd, server_exit_code=rc,
             # What auto chose and when (the corpus server's "auto:" lines; the echo
             # server's Prometheus stats at exit).
             auto_log=[l.strip() for l in server.log if l.startswith(("auto:", "settle:")) or (
                 not l.startswith("#") and ("auto" in l or "method_" in l))][:60])
    log(f"  r{rnd} {mode:>14} {args.light:.0f}/s: ok {r['ok']} failed {r['failed']} p50 {r['p50_us'] / 1000:.2f} "
        f"p90 {r['p90_us'] / 1000:.2f} p99 {r['p99_us'] / 1000:.2f} p99.9 {r['p99.9_us'] / 1000:.2f} ms, "
        f"server {r['server_cpu_us_per_call']:.0f} us/call, {r['server_minor_faults_per_call']} page faults/call")
    return r


def unconfirmed_by_old_rule(r):
    """A round of a run before the confirmation lowered its rate after a
    second starved try: every try at one rate, none passed. The server was
    never shown a lower rate, so the round measured nothing; left out."""
    tries = r.get("confirm_steps", [])
    return r.get("cap_confirmed") == 0 and len(tries) > 1 and len({c["rate"] for c in tries}) == 1


def summarize(results, modes):
    by = {m: [r for r in results if r["mode"] == m and not unconfirmed_by_old_rule(r)] for m in modes}
    plain_by_round = {r["round"]: r for r in by.get("plain", [])}
    rows = {}
    for m, rs in by.items():
        if not rs:
            continue
        # Each round's capacity over plain's of the same round: the machine's
        # load moved the absolute figures between rounds (load 4 to 13 here).
        in_round = [r["cap_confirmed"] / plain_by_round[r["round"]]["cap_confirmed"] for r in rs
                    if r["round"] in plain_by_round and plain_by_round[r["round"]]["cap_confirmed"]]
        rows[m] = {
            "cap_ratio_in_round": med(in_round),
            "cap_ratio_rounds": [round(x, 2) for x in in_round],
            "unloaded_p50_ms": med([r["unloaded"]["p50_us"] / 1000 for r in rs]),
            "objective_rel_ms": med([r["objectives_ms"][0] for r in rs]),
            "cap_rel": med([r["cap_rel"] for r in rs]),
            "cap_fixed": med([r["cap_fixed"] for r in rs]),
            "cap_fixed_rounds": [round(r["cap_fixed"]) for r in rs],
            "cap_confirmed": med([r["cap_confirmed"] for r in rs]),
            "cap_confirmed_rounds": [round(r["cap_confirmed"]) for r in rs],
            "server_cpu_us_per_call_at_cap": med([r["at_cap"].get("server_cpu_us_per_call") for r in rs
                                                  if "at_cap" in r]),
            "server_waited_at_cap": med([r["at_cap"].get("server_run_delay_share") for r in rs if "at_cap" in r]),
            "server_core_other_at_cap": med([r["at_cap"].get("server_core_other_share") for r in rs if "at_cap" in r]),
            "half_p99_ms": med([r["half"]["p99_us"] / 1000 for r in rs if "half" in r]),
            "half_rate": med([r["half"]["rate"] for r in rs if "half" in r]),
            "peak_rss_at_cap_mib": med([r["peak_rss_at_cap_mib"] for r in rs]),
            "half_peak_rss_mib": med([r["half"].get("peak_rss_mib") for r in rs if "half" in r]),
            "client_cpu_share_max": max(r["client_cpu_share_max"] for r in rs),
            "late_max": max(r["late_max"] for r in rs),
            "steps_client_starved": sum(len(r.get("steps_client_starved", [])) for r in rs),
            "steps_stalled": sum(len(r.get("steps_stalled", [])) for r in rs),
            "steps": sum(len(r["steps"]) for r in rs),
            "server_cpu_at_cap": med([r["at_cap"]["server_cpu_share"] for r in rs if "at_cap" in r]),
            "client_cpu_at_cap": med([r["at_cap"]["client_cpu_share"] for r in rs if "at_cap" in r]),
            "p99_at_cap_fresh_ms": med([r["at_cap"]["p99_us"] / 1000 for r in rs if "at_cap" in r]),
        }
    return rows


def table(rows, title, objective_ms, half_first_plain=True, stall_cpu_share=0.0, half_fresh=False):
    half_rule = ("The 50 % step runs at half of plain's capacity in the run's first round, one rate for every "
                 "mode and round." if half_first_plain else
                 "The 50 % step runs at half of plain's median capacity measured so far in the run, so a round's "
                 "modes may run it at different rates (the json keeps each step's rate).")
    half_rule += (" It runs on a fresh server after a warm-up at its rate." if half_fresh else
                  " It runs on the server that has just run the confirmation at capacity.")
    stall_rule = (f" A step that failed with the server under {stall_cpu_share:g} of its core is run once more "
                  "on a fresh server (a stall, not the cliff, may have failed it), and the second result counts."
                  if stall_cpu_share else "")
    plain = rows.get("plain")
    pre = [m for m in rows if m.startswith("plain+")]
    best_pre = max(pre, key=lambda m: rows[m]["cap_confirmed"]) if pre else None

    def ratio(a, b):
        return f"{a / b:.2f}" if b and b == b and a == a else ""

    def other(r):  # not in runs before it was recorded
        v = r.get("server_core_other_at_cap", float("nan"))
        return f"; {v:.2f}" if v == v else ""

    def of(m, k):  # a run without plain (or a preload) has no ratio to it
        return rows[m][k] if m in rows else float("nan")
    lines = [title, "",
             f"| mode | capacity at p99 <= {objective_ms:g} ms (calls/s) | / plain | / {best_pre or 'best preload'} "
             f"| by round | / plain in the same round (median; by round) | at p99 <= 5x unloaded p50 | / plain | unloaded p50 ms "
             f"| p99 at 50 % of plain's capacity (ms) | / plain | peak RSS at capacity (MiB) | / plain "
             f"| peak RSS at 50 % of plain's capacity (MiB) | / plain "
             f"| server CPU at capacity (waited; other work on its core) | server CPU us/call there | / plain | client CPU at capacity (max) | steps redone: client starved{', stalled' if stall_cpu_share else ''} |",
             "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|"]
    for m, r in rows.items():
        stalled = r["steps_stalled"]
        lines.append(
            f"| {m} | {r['cap_confirmed']:.0f} | {ratio(r['cap_confirmed'], of('plain', 'cap_confirmed'))} "
            f"| {ratio(r['cap_confirmed'], of(best_pre, 'cap_confirmed'))} "
            f"| {' '.join(str(x) for x in r['cap_confirmed_rounds'])} "
            f"| {fmt(r['cap_ratio_in_round'], '.2f')} ({' '.join(f'{x:.2f}' for x in r['cap_ratio_rounds'])}) "
            f"| {r['cap_rel']:.0f} | {ratio(r['cap_rel'], of('plain', 'cap_rel'))} | {r['unloaded_p50_ms']:.2f} "
            f"| {fmt(r['half_p99_ms'], '.2f')} | {ratio(r['half_p99_ms'], of('plain', 'half_p99_ms'))} "
            f"| {fmt(r['peak_rss_at_cap_mib'], '.0f')} | {ratio(r['peak_rss_at_cap_mib'], of('plain', 'peak_rss_at_cap_mib'))} "
            f"| {fmt(r['half_peak_rss_mib'], '.0f')} | {ratio(r['half_peak_rss_mib'], of('plain', 'half_peak_rss_mib'))} "
            f"| {fmt(r['server_cpu_at_cap'], '.2f')} ({fmt(r['server_waited_at_cap'], '.2f')}{other(r)}) "
            f"| {fmt(r['server_cpu_us_per_call_at_cap'], '.0f')} "
            f"| {ratio(r['server_cpu_us_per_call_at_cap'], of('plain', 'server_cpu_us_per_call_at_cap'))} "
            f"| {fmt(r['client_cpu_at_cap'], '.2f')} ({r['client_cpu_share_max']:.2f}) "
            f"| {r['steps_client_starved']}{f', {stalled}' if stall_cpu_share else ''} of "
            f"{r['steps'] + r['steps_client_starved'] + stalled} |")
    lines += ["", f"Capacity: the highest rate whose {objective_ms:g} ms objective held in the search and again "
              "on a fresh server (else 10 % lower, up to 3 times; a try the client was starved in is repeated once "
              "at its rate); medians over rounds. CPU as a share of one "
              "core over a step; waited: the share of the step the server's threads spent on a run queue "
              "(behind each other on its one core, or behind other work; other work on its core: the core's "
              "CPU less the server's, interrupts aside); CPU us/call: the server's CPU over the calls of the confirmed "
              "step (warm-up included), whose inverse bounds the capacity on a core of its own. Peak RSS: the "
              "step's high-water mark; at capacity it includes the calls queued near the cliff. " + half_rule + " A step the client fell behind in (over 5 % of calls started "
              "over 2 ms late, or its threads waiting on a run queue over 35 % of the step) is redone on a fresh "
              "server, up to twice." + stall_rule]
    return "\n".join(lines)


def plot(results, modes, path, title, objective_ms):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, m in enumerate(modes):
        pts = sorted((s["rate"], s["p99_us"] / 1000, s["p50_us"] / 1000)
                     for r in results if r["mode"] == m for s in r["steps"] if s["ok"])
        if not pts:
            continue
        style = "--" if m.startswith("plain+") else (":" if "+" in m else "-")
        for ax, k in ((axes[0], 1), (axes[1], 2)):
            ax.plot([p[0] for p in pts], [p[k] for p in pts], style, marker=".", color=f"C{i}", label=m,
                    linewidth=1, markersize=4)
    for ax, name in ((axes[0], "p99"), (axes[1], "p50")):
        ax.set_yscale("log")
        ax.set_xlabel("offered rate (calls/s, open loop)")
        ax.set_ylabel(f"{name} latency from intended send (ms)")
        ax.axhline(objective_ms, color="black", linewidth=0.8, linestyle=":")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# The same in every step of a run (in the json's args and request_bytes) or
# derived from the kept fields: not stored per step.
STEP_CONSTANTS = ("seconds", "warmup_s", "channels", "request_bytes", "ok_per_s", "response_bytes")


def compact(results):
    """The results without each step's constant fields (a smaller json)."""
    def strip(s):
        return {k: v for k, v in s.items() if k not in STEP_CONSTANTS and not (k == "failed_by_code" and not v)}

    out = []
    for r in results:
        r = dict(r)
        for k in ("unloaded", "at_cap", "half"):
            if k in r:
                r[k] = strip(r[k])
        for k in ("steps", "confirm_steps", "steps_client_starved", "steps_stalled"):
            if k in r:
                r[k] = [strip(s) for s in r[k]]
        out.append(r)
    return out


def _interrupted(signum, frame):
    raise KeyboardInterrupt  # the servers under test are stopped on the way out


def main():
    signal.signal(signal.SIGTERM, _interrupted)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--baseline_build", default="",
                   help="the build MODE@baseline modes run (e.g. a Release build of an older commit)")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "capacity"))
    p.add_argument("--plot_dir", default="", help="where the PNGs go (default --out)")
    p.add_argument("--targets", default="otlp_logs", help="corpus service names and/or echo, comma-separated")
    p.add_argument("--api", default="callback", choices=["callback", "sync", "async"])
    p.add_argument("--modes", default=",".join(MODES),
                   help="the default run; also MODE+MALLOC (arenarpc with a malloc preloaded, e.g. auto+mimalloc)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--objective_ms", type=float, default=20.0, help="the fixed p99 objective")
    p.add_argument("--step_s", type=float, default=4.0, help="measured seconds per step")
    p.add_argument("--step_warmup_s", type=float, default=1.0, help="seconds at the step's rate before it")
    p.add_argument("--warmup_s", type=float, default=2.0, help="warm-up of each fresh server")
    p.add_argument("--unloaded_rate", type=float, default=20.0)
    p.add_argument("--unloaded_s", type=float, default=3.0)
    p.add_argument("--start_rate", type=float, default=0, help="first ladder step (0: from the server's CPU per call)")
    p.add_argument("--factor", type=float, default=1.25, help="ladder step near saturation")
    p.add_argument("--bisect", type=int, default=2, help="bisections per objective")
    p.add_argument("--max_rate", type=float, default=20000)
    p.add_argument("--max_steps", type=int, default=10)
    p.add_argument("--stall_cpu_share", type=float, default=0.6,
                   help="a failed step whose server used under this share of its core is run once more "
                        "on a fresh server (0: never)")
    p.add_argument("--channels", type=int, default=4)
    p.add_argument("--deadline_ms", type=int, default=2000)
    p.add_argument("--server_args", default="",
                   help="extra corpus server flags, space separated (e.g. --async_pending=1)")
    p.add_argument("--echo_scale", type=int, default=100, help="echo request scale (100: ~130 KB)")
    p.add_argument("--no_half_load", dest="half_load", action="store_false")
    p.add_argument("--light", type=float, default=0,
                   help="no search: each mode at this one rate (the tail at light load), --step_s long")
    p.add_argument("--burst_rate", type=float, default=0,
                   help="with --light: a step at this rate (an overload) between the warm-up and the measured step")
    p.add_argument("--burst_s", type=float, default=5, help="the --burst_rate step's seconds")
    p.add_argument("--resume", action="store_true",
                   help="keep the rounds already in --out's json and run the next ones")
    p.add_argument("--table_only", action="store_true",
                   help="with --resume: no run, the table and plot again from --out's json")
    p.add_argument("--rounds_now", type=int, default=1000, help="with --resume: run at most this many rounds now")
    p.add_argument("--quick", action="store_true", help="1 round of 3 s steps, 1 bisection")
    p.add_argument("--brief", action="store_true",
                   help="print the one-screen table (the .md keeps every column)")
    p.add_argument("--smoke", action="store_true", help="tiny steps on echo and health, plain and arena")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.step_s, args.step_warmup_s, args.bisect, args.warmup_s = 1, 3, 1, 1, 1
    if args.smoke:
        args.targets, args.modes, args.rounds = "echo,otlp_logs", "plain,arena,auto", 1
        args.step_s, args.step_warmup_s, args.warmup_s, args.unloaded_s = 1, 0.2, 0.5, 1
        args.start_rate, args.max_steps, args.bisect, args.echo_scale = 30, 2, 0, 10
        args.objective_ms = 5000
        args.brief = True
    args.client = os.path.join(args.build, "bench", "capacity", "arenarpc_capacity_client")
    os.makedirs(args.out, exist_ok=True)
    plot_dir = args.plot_dir or args.out
    os.makedirs(plot_dir, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in KNOWN]
    if bad:
        sys.exit(f"--modes: unknown {bad}; any of {','.join(KNOWN)}")
    BUILDS.update(build=args.build, baseline=args.baseline_build)
    if any(m.endswith("@baseline") for m in modes) and not args.baseline_build:
        sys.exit("--modes: MODE@baseline needs --baseline_build")
    status = 0
    stall_cpu_share = args.stall_cpu_share  # a resumed target's older rule must not reach the next
    for name in [t for t in args.targets.split(",") if t]:
        target = make_target(args, name)
        log(f"[capacity] {name} on the {args.api} API: {target[4]} B request, modes {','.join(modes)}, "
            f"{args.rounds} rounds")
        if args.light:
            results = []
            for rnd in range(args.rounds):
                order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                for mode in order:
                    results.append(run_light(args, target, mode, rnd))
            stem = f"light_{name}_{args.api}_{args.light:g}"
            title = (f"{name} ({target[4] / 1024:.0f} KiB request), {args.api} API, {args.light:g} calls/s open "
                     f"loop: medians of {args.rounds} interleaved rounds of {args.step_s:g} s after "
                     f"{args.warmup_s:g} s warm-up")
            if args.burst_rate:
                stem += f"_after_{args.burst_rate:g}"
                title += f" and a {args.burst_s:g} s burst at {args.burst_rate:g} calls/s"
            text = light_table(results, modes, title)
            with open(os.path.join(args.out, stem + ".json"), "w") as f:
                json.dump({"target": name, "api": args.api, "results": results}, f, separators=(",", ":"))
            with open(os.path.join(args.out, stem + ".md"), "w") as f:
                f.write(text + "\n")
            log(text)
            status |= any(r["server_exit_code"] for r in results)
            continue
        state = {"caps": {}, "plain_fixed": []}
        results = []
        stem = f"capacity_{name}_{args.api}"
        json_path = os.path.join(args.out, stem + ".json")
        args.half_fresh = True
        args.stall_cpu_share = stall_cpu_share
        run_args = dict(vars(args), half_first_plain=True)
        if args.resume and os.path.exists(json_path):
            # Earlier rounds (each run of this one held the lock for a round
            # or two): their capacities seed the ladders and the half load.
            with open(json_path) as f:
                kept = json.load(f)
            results = [r for r in kept["results"] if r["mode"] in modes]
            if args.table_only:  # the json keeps the arguments its rounds ran with
                run_args = kept.get("args", dict(run_args, half_first_plain=False, half_fresh=False))
            elif results and not kept.get("args", {}).get("half_first_plain"):
                run_args["half_first_plain"] = False  # earlier rounds ran the older rule
            if results and not args.table_only and not kept.get("args", {}).get("half_fresh"):
                args.half_fresh = run_args["half_fresh"] = False  # nor ran the half step on a fresh server
            if results and not args.table_only and "stall_cpu_share" not in kept.get("args", {}):
                args.stall_cpu_share = run_args["stall_cpu_share"] = 0  # nor re-ran stalled steps
            for r in sorted(results, key=lambda r: (r["round"], r["mode"] != "plain")):
                if unconfirmed_by_old_rule(r):
                    continue
                state["caps"].setdefault(r["mode"], []).append(max(r["cap_rel"], r["cap_fixed"]))
                if r["mode"] == "plain":
                    state["plain_fixed"].append(r["cap_confirmed"])
        first = 1 + max((r["round"] for r in results), default=-1)
        t0 = time.time()
        for rnd in range(first, min(args.rounds, first + args.rounds_now) if not args.table_only else first):
            order = modes[rnd % len(modes):] + modes[:rnd % len(modes)] if rnd else modes
            for mode in order:
                results.append(run_mode(args, target, mode, rnd, state))
        log(f"[capacity] {name} on the {args.api} API: rounds from {first} took {time.time() - t0:.0f} s")
        rows = summarize(results, modes)
        title = (f"{name} ({target[4] / 1024:.0f} KiB request), {args.api} API: capacity at p99 objectives, "
                 f"medians of {1 + max(r['round'] for r in results)} rounds ({args.step_s:g} s steps)")
        text = table(rows, title, args.objective_ms, run_args.get("half_first_plain", False),
                     run_args.get("stall_cpu_share", 0), run_args.get("half_fresh", False))
        left_out = [f"{r['mode']} round {r['round']}" for r in results if unconfirmed_by_old_rule(r)]
        if left_out:
            text += ("\n\nLeft out of the medians (a run before a second starved confirmation try lowered the "
                     "rate: every try at one rate, none passed, no lower rate tried): "
                     + ", ".join(left_out) + ".")
        with open(json_path, "w") as f:
            json.dump({"target": name, "api": args.api, "request_bytes": target[4], "args": run_args,
                       "rows": rows, "results": compact(results)}, f, indent=None, separators=(",", ":"))
        with open(os.path.join(args.out, stem + ".md"), "w") as f:
            f.write(text + "\n")
        plot(results, modes, os.path.join(plot_dir, stem + ".png"),
             f"{name}, {args.api} API: open-loop latency vs offered rate (every step of every round)",
             args.objective_ms)
        log(brief_table(results, rows, title, args.objective_ms, os.path.join(args.out, stem + ".md"))
            if args.brief else text)
        for r in results:
            if r["server_exit_code"]:
                log(f"FAILED: {name} {r['mode']} round {r['round']}: server exit {r['server_exit_code']}")
                status = 1
            if args.smoke:
                for s in r["steps"] + [r["unloaded"]] + ([r["half"]] if "half" in r else []):
                    if s["failed"] or s["not_started"] or s["ok"] == 0:
                        log(f"FAILED: {name} {r['mode']}: {s['failed']} failed, {s['not_started']} not started, "
                            f"{s['ok']} ok at {s['rate']}/s")
                        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

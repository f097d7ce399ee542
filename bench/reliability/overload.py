#!/usr/bin/python3
"""Overload: goodput when a server is offered more than its capacity.

Per target (the echo demo or a corpus service, on the sync or callback
API) and configuration (plain gRPC; plain gRPC with its own admission knobs
tuned, plain+knobs; arenarpc's heap, arena, reuse, auto; MODE+knobs and
MODE+limit, arenarpc's ServerOptions::max_calls_in_flight, and +quota, a
gRPC ResourceQuota on its buffers, when named), each round: the configuration's capacity (a capacity search at
--objective_ms, capacity.py's ladder and bisection; or --capacity_from an
earlier run's json, capacity.py's or this script's), then offered load at
--loads times that capacity and at one absolute rate for all (2x plain's
capacity: its first round's, or its median in --capacity_from), each on a
fresh server warmed at half the capacity, --burst_s measured after
--burst_warmup_s at the rate, every call with a --deadline_ms deadline.
Load from bench/capacity/arenarpc_capacity_client (open loop,
pre-serialized requests, latency from the intended send time), server and
client pinned to separate cores, as capacity.py runs them.

Per load: goodput (OK calls within the deadline of their intended send
time, per second) and goodput / capacity, p50/p99 of OK calls, failed calls
per second by status code, calls shed by the server
(arenarpc_grpc_shed_calls_total, read on SIGUSR1 before and after the
load: over its warm-up and measured seconds), peak RSS (VmHWM reset at the
load's start) against the same configuration's at 1x, the server's CPU
share, the client's own CPU share and late starts (a starved client shows
there). Medians over rounds; configurations interleaved, rotated each
round.

  bench/reliability/overload.py --build build/rel --targets echo --api sync \\
      --out DIR            # 6 configurations, 3 rounds: 18.5 min here
  tar -xJf docs/raw/capacity/data.tar.xz -C /tmp/cap    # capacity.py's runs
  bench/reliability/overload.py --targets otlp_logs,horaedb_write --api callback \\
      --capacity_from '/tmp/cap/capacity_{target}_{api}.json'
  bench/reliability/overload.py --smoke           # tests: tiny steps

Output in --out: overload_<target>_<api>.json (every step), .md (the
table and the issue's targets checked), .png (goodput against offered load).
Exit 1 if a server exited non-zero or the client failed to run; with
--smoke also if a load at 1x had no OK call or the shed counters could not
be read.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "capacity"))
import capacity as cap  # noqa: E402  (make_target, step, search, Served, ...)

ROOT = cap.ROOT
CONFIGS = ["plain", "plain+knobs", "heap", "arena", "reuse", "auto"]
ARENARPC = ("heap", "arena", "reuse", "auto")
CODES = {1: "CANCELLED", 4: "DEADLINE_EXCEEDED", 8: "RESOURCE_EXHAUSTED", 13: "INTERNAL", 14: "UNAVAILABLE"}
STATS_SERVERS = ("arenarpc_echo_server", "arenarpc_corpus_server")  # print stats on SIGUSR1
log = cap.log


def base_mode(config):
    """plain+knobs, arena+limit -> plain, arena: the capacity.py mode a
    configuration runs."""
    return config.split("+")[0]


def config_target(args, target, config):
    """The target with the configuration's server flags: gRPC's defaults
    (the echo server ships with a stream limit and a memory quota: off
    here, as in a server nobody tuned), and the knobs for MODE+knobs."""
    binary, flags, method, request, size = target
    flags = list(flags)
    if os.path.basename(binary) == "arenarpc_echo_server":
        flags += ["--max_concurrent_streams=0", "--resource_quota_mb=0"]
    suffixes = config.split("+")[1:]
    if "knobs" in suffixes:
        flags.append(f"--max_concurrent_streams={args.knob_streams}")
        if args.api == "sync":
            flags.append(f"--max_threads={args.knob_threads}")
    if "limit" in suffixes:
        flags.append(f"--max_calls_in_flight={args.limit}")
    if "quota" in suffixes:
        flags.append(f"--resource_quota_mb={args.quota_mb}")
    return binary, flags, method, request, size


def shed_calls(server, timeout=5.0):
    """The server's arenarpc_grpc_shed_calls_total over every method, read
    from the stats it prints on SIGUSR1; None if it printed none in time
    (or has no such counter: plain gRPC)."""
    start = len(server.log)
    server.proc.send_signal(signal.SIGUSR1)
    end = time.time() + timeout
    while time.time() < end:
        lines = server.log[start:]
        if any(l.startswith("# end of stats") for l in lines):
            samples = [l for l in lines if l.startswith("arenarpc_grpc_shed_calls_total{")]
            return sum(float(l.split()[-1]) for l in samples) if samples else None
        time.sleep(0.02)
    return None


def load_capacities(path):
    """{config: {round: capacity}} from capacity.py's json (cap_confirmed)
    or this script's (capacity)."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for r in data["results"]:
        name = r.get("config", r.get("mode"))
        value = r["capacity"] if "capacity" in r else r.get("cap_confirmed")
        if value:
            out.setdefault(name, {})[r["round"]] = value
    return out


def capacity_from_file(caps, config, rnd):
    """(capacity, source): the round's, else the median over the file's
    rounds; MODE+knobs without its own takes MODE's."""
    for name in (config, base_mode(config)):
        if name in caps:
            by_round = caps[name]
            src = f"file: {name}" + ("" if rnd in by_round else ", median")
            return (by_round[rnd] if rnd in by_round else statistics.median(by_round.values())), src
    sys.exit(f"--capacity_from: no capacity of {config} (nor {base_mode(config)})")


def search_capacity(args, target, config, rnd, prior):
    """The highest rate whose p99 stayed within --objective_ms (capacity.py's
    ladder and bisection, without its confirmation: the 1x load is that)."""
    served = cap.Served(target, base_mode(config))
    tag = f"r{rnd} {config:>12}"
    try:
        if prior:
            start = 0.8 * statistics.median(prior)
            cap.step(args, served.server, target, start / 2, args.warmup_s, 0)
        else:
            cap.step(args, served.server, target, args.unloaded_rate * 2, args.warmup_s, 0)
            idle = cap.step(args, served.server, target, args.unloaded_rate, args.unloaded_s, 0.5)
            cpu_per_call = idle["server_cpu_share"] * idle["wall_s"] / max(idle["ok"], 1)
            start = args.start_rate or max(args.unloaded_rate, 0.5 / max(cpu_per_call, 1e-6))
        steps, starved, stalled = cap.search(args, served, target, [args.objective_ms],
                                             min(start, args.max_rate), tag)
    finally:
        rc = served.stop()
    return cap.capacity(steps, args.objective_ms)[0], {
        "search_steps": steps, "search_steps_client_starved": starved, "search_steps_stalled": stalled,
        "search_exit_code": rc}


def burst(args, target, config, rate, capacity, label, rnd):
    """One load on a fresh server warmed at half the capacity."""
    served = cap.Served(target, base_mode(config))
    stats = os.path.basename(served.binary) in STATS_SERVERS and not args.no_stats
    try:
        cap.step(args, served.server, target, max(capacity / 2, 1), args.warmup_s, 0)
        shed0 = shed_calls(served.server) if stats else None
        r = cap.step(args, served.server, target, rate, args.burst_s, args.burst_warmup_s)
        shed1 = shed_calls(served.server) if stats else None
    finally:
        rc = served.stop()
    s = args.burst_s
    r.update(load=label, capacity=capacity, server_exit_code=rc,
             goodput_per_s=round(r["ok_in_deadline"] / s, 2),
             goodput_share=round(r["ok_in_deadline"] / s / capacity, 3) if capacity else None,
             failed_per_s={CODES.get(int(c), c): round(n / s, 2) for c, n in r["failed_by_code"].items()},
             shed=None if shed0 is None or shed1 is None else shed1 - shed0)
    r["shed_per_s"] = None if r["shed"] is None else round(r["shed"] / (s + args.burst_warmup_s), 2)
    failed = " ".join(f"{k} {v:.0f}/s" for k, v in r["failed_per_s"].items()) or "none"
    log(f"  r{rnd} {config:>12} {label:>4} {rate:8.1f}/s: goodput {r['goodput_per_s']:8.1f}/s "
        f"({r['goodput_share'] or 0:.2f} of capacity) p50 {r['p50_us'] / 1000:7.2f} p99 {r['p99_us'] / 1000:7.2f} ms "
        f"failed {failed}, shed {r['shed_per_s']}/s, peak {r['peak_rss_mib']:.0f} MiB, server cpu "
        f"{r['server_cpu_share']:.2f}, client cpu {r['client_cpu_share']:.2f} "
        f"(waited {r['client_run_delay_share']:.2f}, late {r['late']} of {r['sent']})")
    return r


def run_config(args, target, config, rnd, state):
    t = config_target(args, target, config)
    if state["file"] is not None:
        capacity, source = capacity_from_file(state["file"], config, rnd)
        result = {"capacity_source": source}
    else:
        capacity, result = search_capacity(args, t, config, rnd, state["caps"].get(config))
        result["capacity_source"] = "search"
        state["caps"].setdefault(config, []).append(capacity)
    result.update(config=config, round=rnd, capacity=round(capacity, 2), server_flags=t[1], loads=[])
    log(f"  r{rnd} {config:>12} capacity {capacity:.0f}/s ({result['capacity_source']})")
    if config == "plain" and state["abs_rate"] is None and capacity:
        state["abs_rate"] = args.abs_of_plain * capacity  # one rate for every round
    levels = [(f"{m:g}x", m * capacity) for m in args.loads if capacity]
    if state["abs_rate"]:
        levels.append(("abs", state["abs_rate"]))
    for label, rate in levels:
        result["loads"].append(burst(args, t, config, rate, capacity, label, rnd))
    result["server_exit_code"] = max([abs(r["server_exit_code"]) for r in result["loads"]]
                                     + [abs(result.get("search_exit_code", 0))])
    return result


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(results, configs):
    """{config: {"capacity", "loads": {label: medians}}}."""
    rows = {}
    for c in configs:
        rs = [r for r in results if r["config"] == c]
        if not rs:
            continue
        at_1x = {r["round"]: next((l for l in r["loads"] if l["load"] == "1x"), None) for r in rs}
        loads = {}
        for label in dict.fromkeys(l["load"] for r in rs for l in r["loads"]):
            ls = [(r["round"], l) for r in rs for l in r["loads"] if l["load"] == label]
            codes = sorted({k for _, l in ls for k in l["failed_per_s"]})
            loads[label] = {
                "rate": med([l["rate"] for _, l in ls]),
                "goodput": med([l["goodput_per_s"] for _, l in ls]),
                "goodput_share": med([l["goodput_share"] for _, l in ls]),
                "goodput_rounds": [round(l["goodput_per_s"]) for _, l in ls],
                "p50_ms": med([l["p50_us"] / 1000 if l["ok"] else None for _, l in ls]),
                "p99_ms": med([l["p99_us"] / 1000 if l["ok"] else None for _, l in ls]),
                "failed_per_s": {k: med([l["failed_per_s"].get(k, 0) for _, l in ls]) for k in codes},
                "shed_per_s": med([l["shed_per_s"] for _, l in ls]),
                "peak_rss_mib": med([l["peak_rss_mib"] for _, l in ls]),
                "peak_vs_1x": med([l["peak_rss_mib"] / at_1x[n]["peak_rss_mib"] for n, l in ls
                                   if at_1x.get(n) and at_1x[n]["peak_rss_mib"]]),
                "server_cpu": med([l["server_cpu_share"] for _, l in ls]),
                "client_cpu_max": max(l["client_cpu_share"] for _, l in ls),
                "client_waited_max": max(l.get("client_run_delay_share", 0) for _, l in ls),
                "late_share_max": max(l["late"] / max(l["sent"], 1) for _, l in ls),
            }
        rows[c] = {"capacity": med([r["capacity"] for r in rs]),
                   "capacity_rounds": [round(r["capacity"]) for r in rs], "loads": loads}
    return rows


def fmt(v, spec=".2f", none="—"):
    return none if v is None else format(v, spec)


def table(rows, title, args):
    short = {"DEADLINE_EXCEEDED": "DE", "RESOURCE_EXHAUSTED": "RE", "CANCELLED": "CA", "UNAVAILABLE": "UN",
             "INTERNAL": "IN"}
    lines = [title, "",
             "| config | capacity calls/s (by round) | load | offered calls/s | goodput calls/s | / capacity "
             "| p50 ms | p99 ms | failed/s by code | shed/s | peak RSS MiB | / at 1x | server CPU "
             "| client CPU (max; waited max) | late starts (max) |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|"]
    for c, row in rows.items():
        first = True
        for label, l in row["loads"].items():
            failed = ", ".join(f"{short.get(k, k)} {v:.0f}" for k, v in l["failed_per_s"].items() if v) or "0"
            head = (f"| {c} | {row['capacity']:.0f} ({' '.join(str(x) for x in row['capacity_rounds'])}) "
                    if first else "| | ")
            first = False
            lines.append(
                f"{head}| {label} | {l['rate']:.0f} | {l['goodput']:.0f} | {fmt(l['goodput_share'])} "
                f"| {fmt(l['p50_ms'])} | {fmt(l['p99_ms'])} | {failed} | {fmt(l['shed_per_s'], '.0f')} "
                f"| {l['peak_rss_mib']:.0f} | {fmt(l['peak_vs_1x'])} | {l['server_cpu']:.2f} "
                f"| {l['client_cpu_max']:.2f}; {l['client_waited_max']:.2f} | {100 * l['late_share_max']:.1f} % |")
    knobs = (f"+knobs: GRPC_ARG_MAX_CONCURRENT_STREAMS={args['knob_streams']} per connection "
             f"({args['channels']} connections)" + (f" and a ResourceQuota of {args['knob_threads']} threads"
                                                    if args["api"] == "sync" else "") + ". "
             + (f"+limit: ServerOptions::max_calls_in_flight={args['limit']} (per method). "
                if any("+limit" in c for c in rows) else "")
             + (f"+quota: a ResourceQuota of {args.get('quota_mb')} MiB on gRPC's buffers. "
                if any("+quota" in c for c in rows) else ""))
    lines += ["", f"Each load {args['burst_s']:g} s measured after {args['burst_warmup_s']:g} s at its rate, on a fresh "
              f"server warmed {args['warmup_s']:g} s at half the capacity; every call with a {args['deadline_ms']} ms "
              "deadline. Goodput: OK calls within the deadline of their intended send time, per measured second; "
              "/ capacity: the median of each round's ratio. abs: one rate for every configuration, "
              f"{args['abs_of_plain']:g}x plain's capacity. Failed by code (DE DEADLINE_EXCEEDED, RE "
              "RESOURCE_EXHAUSTED, CA CANCELLED, UN UNAVAILABLE). Shed/s: arenarpc_grpc_shed_calls_total over the "
              "load's warm-up and measured seconds (— where the server has none: plain gRPC). Peak RSS: VmHWM "
              "reset at the load's start; / at 1x: against the same configuration's at its capacity, same round. "
              "CPU as a share of one core; waited: the client's threads on a run queue; late: calls the client "
              "started over 2 ms after their time. " + knobs + "The others run with gRPC's defaults (no "
              "stream limit, no quota; the echo server's own are turned off)."]
    return "\n".join(lines)


def targets_check(rows, deadline_ms):
    """The overload targets, held or missed, in lines."""
    out = []

    def load(c, label):
        return rows.get(c, {}).get("loads", {}).get(label)

    for label, floor in (("2x", 0.8), ("3x", 0.6)):
        for c in [c for c in rows if base_mode(c) in ("arena", "reuse", "auto")]:
            l = load(c, label)
            if l and l["goodput_share"] is not None:
                out.append(f"- {c} at {label} its capacity: goodput {l['goodput_share']:.2f}x capacity "
                           f"(target >= {floor}): {'holds' if l['goodput_share'] >= floor else 'misses'}")
    plain, knobs = load("plain", "abs"), load("plain+knobs", "abs")
    for c in [c for c in rows if base_mode(c) in ARENARPC]:
        l = load(c, "abs")
        if not l or not plain:
            continue
        verdict = "holds" if l["goodput"] >= 2 * plain["goodput"] else "misses"
        if verdict == "misses" and 2 * plain["goodput"] > l["rate"]:
            # Goodput cannot exceed the offered rate: the target needs plain
            # below half of it.
            verdict = ("cannot hold here: 2x plain's is more than was offered"
                       + (", and every offered call was served" if l["goodput"] >= 0.99 * l["rate"] else ""))
        line = (f"- {c} at the absolute rate ({l['rate']:.0f}/s): goodput {l['goodput']:.0f}/s, "
                f"{l['goodput'] / max(plain['goodput'], 1e-9):.2f}x plain's {plain['goodput']:.0f} (target >= 2x): "
                + verdict)
        if knobs:
            line += (f"; plain+knobs {knobs['goodput']:.0f}/s (target >=): "
                     f"{'holds' if l['goodput'] >= knobs['goodput'] else 'misses'}")
        out.append(line)
    over = [f"{c} {label} {l['peak_vs_1x']:.2f}x" for c, row in rows.items() for label, l in row["loads"].items()
            if label != "1x" and l["peak_vs_1x"] is not None and l["peak_vs_1x"] > 1.3]
    out.append("- peak RSS in the burst <= 1.3x the same configuration's at capacity: "
               + (f"misses in {', '.join(over)}" if over else "holds in every configuration and load"))
    slow = [f"{c} {label} {l['p99_ms']:.0f} ms" for c, row in rows.items() for label, l in row["loads"].items()
            if l["p99_ms"] is not None and l["p99_ms"] > deadline_ms]
    if slow:
        out.append("- p99 of OK calls over the deadline: " + ", ".join(slow))
    return out


def plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    top = 0
    for i, (c, row) in enumerate(rows.items()):
        style = "--" if c.startswith("plain") else "-"
        pts = sorted((l["rate"], l["goodput"]) for l in row["loads"].values())
        top = max([top] + [p[0] for p in pts])
        axes[0].plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", color=f"C{i}", label=c,
                     linewidth=1, markersize=4)
        rel = sorted((float(k[:-1]), l["goodput_share"]) for k, l in row["loads"].items()
                     if k.endswith("x") and l["goodput_share"] is not None)
        axes[1].plot([p[0] for p in rel], [p[1] for p in rel], style, marker="o", color=f"C{i}", label=c,
                     linewidth=1, markersize=4)
    axes[0].plot([0, top], [0, top], color="gray", linewidth=0.6, linestyle=":")
    axes[0].set_xlabel("offered load (calls/s, open loop)")
    axes[0].set_ylabel("goodput (OK within deadline, calls/s)")
    axes[1].set_xlabel("offered load / the configuration's capacity")
    axes[1].set_ylabel("goodput / capacity")
    axes[1].axhline(1.0, color="gray", linewidth=0.6, linestyle=":")
    for ax in axes:
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def compact(results):
    def strip(s):
        return {k: v for k, v in s.items() if k not in cap.STEP_CONSTANTS and not (k == "failed_by_code" and not v)}
    out = []
    for r in results:
        r = dict(r)
        for k in ("loads", "search_steps", "search_steps_client_starved", "search_steps_stalled"):
            if k in r:
                r[k] = [strip(s) for s in r[k]]
        out.append(r)
    return out


def smoke_failures(results):
    bad = []
    for r in results:
        one = next((l for l in r["loads"] if l["load"] == "1x"), None)
        if not r["capacity"] or one is None or one["ok"] == 0:
            bad.append(f"{r['config']}: capacity {r['capacity']}, no OK call at 1x")
        if base_mode(r["config"]) in ARENARPC and any(l["shed"] is None for l in r["loads"]):
            bad.append(f"{r['config']}: shed counters not read")
    return bad


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "overload"))
    p.add_argument("--plot_dir", default="", help="where the PNGs go (default --out)")
    p.add_argument("--targets", default="echo", help="echo and/or corpus service names, comma-separated")
    p.add_argument("--api", default="sync", choices=["callback", "sync"])
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help="capacity.py modes, each also as MODE+knobs (gRPC's admission knobs on)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--loads", default="1,1.5,2,3", help="multiples of each configuration's capacity")
    p.add_argument("--abs_of_plain", type=float, default=2.0, help="the absolute load: this times plain's capacity")
    p.add_argument("--abs_rate", type=float, default=0, help="the absolute load in calls/s (0: --abs_of_plain)")
    p.add_argument("--burst_s", type=float, default=4, help="measured seconds per load")
    p.add_argument("--burst_warmup_s", type=float, default=1, help="seconds at the load's rate before them")
    p.add_argument("--warmup_s", type=float, default=2, help="each fresh server's warm-up, at half the capacity")
    p.add_argument("--deadline_ms", type=int, default=1000)
    p.add_argument("--capacity_from", default="",
                   help="capacity.py's or this script's json ({target} and {api} replaced): no search")
    p.add_argument("--knob_streams", type=int, default=16, help="plain+knobs: max concurrent streams per connection")
    p.add_argument("--knob_threads", type=int, default=16, help="plain+knobs on sync: the ResourceQuota's threads")
    p.add_argument("--quota_mb", type=int, default=32,
                   help="MODE+quota: a ResourceQuota of this many MiB on gRPC's buffers")
    p.add_argument("--limit", type=int, default=16, help="MODE+limit: ServerOptions::max_calls_in_flight")
    p.add_argument("--no_stats", action="store_true", help="never send SIGUSR1 (a server without the handler)")
    # The capacity search: capacity.py's flags, shorter steps by default.
    for name, default in (("objective_ms", 20.0), ("step_s", 2.0), ("step_warmup_s", 1.0), ("unloaded_rate", 20.0),
                          ("unloaded_s", 2.0), ("start_rate", 0.0), ("factor", 1.25), ("bisect", 1),
                          ("max_rate", 20000.0), ("max_steps", 10), ("stall_cpu_share", 0.6)):
        p.add_argument(f"--{name}", type=type(default), default=default, help="capacity.py's")
    p.add_argument("--channels", type=int, default=4)
    p.add_argument("--server_args", default="", help="extra corpus server flags, space separated")
    p.add_argument("--echo_scale", type=int, default=100)
    p.add_argument("--table_only", action="store_true", help="no run: the table and plot again from --out's json")
    p.add_argument("--smoke", action="store_true", help="tiny steps: echo, 3 configurations, 1 round")
    args = p.parse_args()
    if args.smoke:
        args.targets, args.rounds, args.loads, args.echo_scale = "echo", 1, "1,3", 10
        if not args.capacity_from:
            args.configs = "plain,plain+knobs,auto"
        args.burst_s, args.burst_warmup_s, args.warmup_s, args.unloaded_s = 1, 0.3, 0.5, 1
        args.step_s, args.step_warmup_s, args.start_rate, args.max_steps, args.bisect = 1, 0.2, 30, 2, 0
        args.objective_ms = 5000
    args.loads = [float(x) for x in args.loads.split(",") if x]
    args.client = os.path.join(args.build, "bench", "capacity", "arenarpc_capacity_client")
    return args


def run_target(args, name, configs):
    target = cap.make_target(args, name)
    stem = f"overload_{name}_{args.api}"
    json_path = os.path.join(args.out, stem + ".json")
    if args.table_only:
        with open(json_path) as f:
            kept = json.load(f)
        results, run_args = kept["results"], kept["args"]
    else:
        state = {"caps": {}, "abs_rate": args.abs_rate or None,
                 "file": (load_capacities(args.capacity_from.format(target=name, api=args.api))
                          if args.capacity_from else None)}
        if state["file"] is not None and not state["abs_rate"] and "plain" in state["file"]:
            state["abs_rate"] = args.abs_of_plain * statistics.median(state["file"]["plain"].values())
        log(f"[overload] {name} on the {args.api} API: {target[4]} B request, {','.join(configs)}, "
            f"{args.rounds} rounds")
        results, t0 = [], time.time()
        load0 = os.getloadavg()
        for rnd in range(args.rounds):
            # plain first in round 0: its capacity sets the absolute load.
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)] if rnd else configs
            for config in order:
                results.append(run_config(args, target, config, rnd, state))
        run_args = dict(vars(args), request_bytes=target[4], took_s=round(time.time() - t0),
                        loadavg_before=load0, loadavg_after=os.getloadavg(),
                        commit=subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                              text=True).stdout.strip())
    rows = summarize(results, configs)
    rounds = 1 + max(r["round"] for r in results)
    title = (f"{name} ({target[4] / 1024:.0f} KiB request), {args.api} API: goodput under overload, "
             f"medians of {rounds} rounds")
    text = table(rows, title, run_args) + "\n\nTargets:\n\n" + "\n".join(targets_check(rows, run_args["deadline_ms"]))
    with open(json_path, "w") as f:
        json.dump({"target": name, "api": args.api, "args": run_args, "rows": rows,
                   "results": compact(results)}, f, separators=(",", ":"))
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write(text + "\n")
    plot(rows, os.path.join(args.plot_dir or args.out, stem + ".png"),
         f"{name}, {args.api} API: goodput against offered load ({run_args['deadline_ms']} ms deadline, "
         f"medians of {rounds} rounds)")
    log(text)
    status = 0
    for r in results:
        if r["server_exit_code"]:
            log(f"FAILED: {name} {r['config']} round {r['round']}: server exit {r['server_exit_code']}")
            status = 1
    if args.smoke:
        for line in smoke_failures(results):
            log(f"FAILED: {name} {line}")
            status = 1
    return status


def main():
    signal.signal(signal.SIGTERM, cap._interrupted)
    args = parse_args()
    configs = [c for c in args.configs.split(",") if c]
    bad = [c for c in configs if base_mode(c) not in cap.KNOWN or "@" in c]
    if bad:
        sys.exit(f"--configs: unknown {bad}")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.plot_dir or args.out, exist_ok=True)
    status = 0
    for name in [t for t in args.targets.split(",") if t]:
        status |= run_target(args, name, configs)
    return status


if __name__ == "__main__":
    sys.exit(main())

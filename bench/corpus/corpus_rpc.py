#!/usr/bin/env python3
"""Every corpus service through real gRPC, in every configuration a user has.

For each service of bench/corpus (third-party .proto files, realistic
payloads), `arenarpc_corpus_server` runs in each configuration:
  plain            no allocator installed (what gRPC users have today), glibc
  plain+mimalloc   the same with mimalloc preloaded (the zero-code alternative)
  plain+tcmalloc   the same with tcmalloc preloaded
  plain+jemalloc   the same with jemalloc preloaded
  heap, arena, reuse, auto   arenarpc's modes (glibc)
  plain+floor      the floor: bench/floor's malloc that never frees preloaded
                   (auto+floor, arena+floor, reuse+floor: a mode on it)
driven by ghz at a fixed rate (pinned to the other core) with the service's
typical request. Recorded per run: server CPU per call (utime+stime from
/proc over the measured window, measuring thread included), p50/p99/p99.9
latency (p99.9 of a 15 s round at 20-80 calls/s is its slowest calls),
peak RSS (VmHWM), errors. Configurations run interleaved, round by round;
medians over rounds are reported, with every ratio against `plain` in the
same round set.

  bench/corpus/corpus_rpc.py --rounds 3 --out docs/raw/corpus_rpc     # full
  bench/corpus/corpus_rpc.py --smoke                                     # tests
  bench/corpus/corpus_rpc.py --api sync ...     # the same services on gRPC's sync API
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rpc"))
import rpc_common  # noqa: E402  (Server, cpu_seconds, pin, percentile, ...)

ROOT = rpc_common.ROOT
PROTOS = os.path.join(ROOT, "bench", "corpus", "protos")
CONFIGS = {  # name: (--mode, LD_PRELOAD, extra server flags)
    "plain": ("none", None, []),
    "plain+mimalloc": ("none", rpc_common.PRELOADS["mimalloc"], []),
    "plain+tcmalloc": ("none", rpc_common.PRELOADS["tcmalloc"], []),
    "plain+jemalloc": ("none", rpc_common.PRELOADS["jemalloc"], []),
    "heap": ("heap", None, []),
    "arena": ("arena", None, []),
    "reuse": ("reuse", None, []),
    "auto": ("auto", None, []),
    # --api async without the user's lines (plain cq->Next, no Arrived /
    # Answered): auto stays on arena.
    "auto+nolines": ("auto", None, ["--async_lines=false"]),
    # auto without the prior by message size (AutoOptions::prior.min_bytes 0:
    # heap measured on every method, as before the prior).
    "auto+noprior": ("auto", None, ["--auto_prior_min_bytes=0"]),
    # auto started with the decisions file the last `auto` run of the same
    # service saved (AutoOptions::decisions_path): settled from the first
    # call. `auto` saves its decisions to a fresh file per run (nothing to
    # load), copied to OUT/decisions_<service>.json after the run.
    "auto+loaded": ("auto", None, []),
    # The same, served by the binary of --baseline_server (an older build):
    # the before/after of a change to auto, side by side in one run.
    "auto@baseline": ("auto", None, []),
    # Another build's server in the same modes (e.g. against another gRPC
    # release: scripts/grpc_leg.sh's build as --build, Debian's as baseline).
    "plain@baseline": ("none", None, []),
    "arena@baseline": ("arena", None, []),
    "reuse@baseline": ("reuse", None, []),
    # Shadow measurement's own cost: arena with 1 call in 100 measured.
    "arena+shadow": ("arena", None, ["--shadow_sample_one_in=100"]),
    # glibc's malloc told to keep what it frees (GLIBC_TUNED): zero code,
    # like a preload; and with arenarpc's auto.
    "plain+glibc_tuned": ("none", "glibc_tuned", []),
    "auto+glibc_tuned": ("auto", "glibc_tuned", []),
    # The same and glibc's per-thread cache of freed small blocks made
    # deeper, fastbins off (no malloc_consolidate when a large block is
    # freed): GLIBC_CACHED.
    "plain+glibc_cached": ("none", "glibc_cached", []),
    "auto+glibc_cached": ("auto", "glibc_cached", []),
    # Each half of GLIBC_CACHED alone (with GLIBC_TUNED's thresholds).
    "auto+glibc_nofast": ("auto", "glibc_nofast", []),
    "auto+glibc_tcache": ("auto", "glibc_tcache", []),
    # auto with a malloc preloaded beside it: they compose (arenarpc's pages
    # and messages; the malloc's string buffers and gRPC's own buffers).
    "auto+mimalloc": ("auto", rpc_common.PRELOADS["mimalloc"], []),
    "auto+tcmalloc": ("auto", rpc_common.PRELOADS["tcmalloc"], []),
    "auto+jemalloc": ("auto", rpc_common.PRELOADS["jemalloc"], []),
    "auto+mimalloc@baseline": ("auto", rpc_common.PRELOADS["mimalloc"], []),
    "auto+tcmalloc@baseline": ("auto", rpc_common.PRELOADS["tcmalloc"], []),
    # The floor: a malloc that never frees (bench/floor/README.md) under
    # plain gRPC, the CPU per call with the allocator's work taken away;
    # and modes on it (what they cost besides malloc and free).
    "plain+floor": ("none", "floor", []),
    "arena+floor": ("arena", "floor", []),
    "reuse+floor": ("reuse", "floor", []),
    "auto+floor": ("auto", "floor", []),
}
# No mmap per large buffer (glibc's dynamic threshold drops back) and no
# trimming of the heap top after each call (bench/corpus/corpus_client.py too).
GLIBC_TUNED = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"
GLIBC_CACHED = GLIBC_TUNED + ":glibc.malloc.tcache_count=1024:glibc.malloc.mxfast=0"
GLIBC_ENV = {"glibc_tuned": GLIBC_TUNED, "glibc_cached": GLIBC_CACHED,
             "glibc_nofast": GLIBC_TUNED + ":glibc.malloc.mxfast=0",
             "glibc_tcache": GLIBC_TUNED + ":glibc.malloc.tcache_count=1024"}
FLOOR_SO = os.path.join("bench", "floor", "libarenarpc_floor_malloc.so")
DEFAULT_CONFIGS = ["plain", "plain+mimalloc", "plain+tcmalloc", "plain+jemalloc", "heap", "arena", "reuse", "auto"]


def div(a, b):
    """a / b; NaN (printed "nan") where a smoke round measured no CPU."""
    return a / b if b else float("nan")


def services(build):
    out = subprocess.run([os.path.join(build, "bench", "corpus", "arenarpc_corpus_payload"), "--list_json"],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def payload(build, name, outdir):
    """The service's typical request: the median-size one of its mix."""
    d = os.path.join(outdir, "payload_" + name)
    os.makedirs(d, exist_ok=True)
    out = subprocess.run([os.path.join(build, "bench", "corpus", "arenarpc_corpus_payload"),
                          f"--service={name}", "--seed=1", "--count=100", f"--out={d}",
                          "--print_response_sizes"],
                         check=True, capture_output=True, text=True).stdout
    response_bytes = {l.split()[1]: int(l.split()[2]) for l in out.splitlines() if l.startswith("response ")}
    files = sorted((os.path.getsize(os.path.join(d, f)), f) for f in os.listdir(d) if f.endswith(".bin"))
    size, f = files[len(files) // 2]
    return os.path.join(d, f), size, response_bytes.get(f, 0)


def protoset(proto, outdir):
    out = os.path.join(outdir, os.path.basename(proto) + ".protoset")
    subprocess.run(["protoc", f"-I{PROTOS}", "--include_imports", f"--descriptor_set_out={out}",
                    os.path.join(PROTOS, proto)], check=True)
    return out


def rate_for(size):
    """Calls/s: ghz's Go client marshals each request (~0.3 us/byte of
    dynamic message here), so large requests get lower rates."""
    return int(min(1000, max(20, 6e6 / max(size, 1))))


def cores():
    """(server core, load core): one each on 2 or more cores, else unpinned."""
    return (1, 0) if os.cpu_count() >= 2 else (None, None)


def ghz_command(ghz, load_core, rps, seconds, pb, call, payload_file, port, out_json):
    """ghz at a fixed rate on `load_core`, the service's request, JSON report to `out_json`."""
    return rpc_common.pin(load_core, [
        ghz, "--insecure", "--async", f"--rps={rps}", f"--duration={seconds}s",
        "--connections=1", "--concurrency=8", "--cpus=1", "--timeout=20s",
        f"--protoset={pb}", f"--call={call}",
        # ghz refuses an empty --binary-file; an empty message as JSON is the same bytes.
        f"--binary-file={payload_file}" if os.path.getsize(payload_file) else "--data={}",
        "--format=json", f"--output={out_json}", f"127.0.0.1:{port}"])


def run_one(args, svc, config, pb, payload_file, rps, outdir, tag):
    mode, preload, extra = CONFIGS[config]
    decisions = os.path.join(outdir, f"decisions_{svc['name']}.json")
    learned = os.path.join(outdir, f"learned_{tag}.json")
    if config == "auto":
        extra = extra + [f"--auto_decisions={learned}"]
    elif config == "auto+loaded":
        extra = extra + [f"--auto_decisions={decisions}"]
    server_core, load_core = cores()
    binary = args.baseline_server if config.endswith("@baseline") else args.server
    if preload in GLIBC_ENV:
        os.environ["GLIBC_TUNABLES"] = GLIBC_ENV[preload]
        try:
            server = rpc_common.start_server(binary, mode, server_core, extra + [f"--api={args.api}"])
        finally:
            os.environ.pop("GLIBC_TUNABLES", None)
    elif preload == "floor":
        # Memory only grows: made resident at start (no page fault in the
        # window) and capped (the server aborts past the cap).
        os.environ["FLOOR_MALLOC_PREFAULT_MIB"] = str(args.floor_prefault_mib)
        os.environ["FLOOR_MALLOC_LIMIT_MIB"] = str(args.floor_limit_mib)
        try:
            server = rpc_common.start_server(binary, mode, server_core, extra + [f"--api={args.api}"],
                                             os.path.abspath(os.path.join(args.build, FLOOR_SO)))
        finally:
            os.environ.pop("FLOOR_MALLOC_PREFAULT_MIB", None)
            os.environ.pop("FLOOR_MALLOC_LIMIT_MIB", None)
    else:
        server = rpc_common.start_server(binary, mode, server_core, extra + [f"--api={args.api}"],
                                        preload)
    call = svc["method"].lstrip("/").replace("/", ".")
    # Every configuration gets the same warm-up: auto's learning is part of
    # what it costs (--auto_warmup gives it more, as runs of the older learner did).
    warmup = max(args.warmup, args.auto_warmup_calls / rps) if config.startswith("auto") else args.warmup

    def ghz(seconds, out_json):
        return ghz_command(args.ghz, load_core, rps, seconds, pb, call, payload_file, server.port, out_json)
    try:
        warm = os.path.join(tempfile.gettempdir(), f"arenarpc_corpus_warm_{os.getpid()}.json")
        subprocess.run(ghz(round(warmup, 1), warm), check=True, capture_output=True)
        cpu0 = rpc_common.cpu_seconds(server.proc.pid)
        threads0 = rpc_common.thread_cpu_ticks(server.proc.pid)
        faults0 = minor_faults(server.proc.pid)
        report_path = os.path.join(outdir, f"ghz_{tag}.json")
        cmd = ghz(args.duration, report_path)
        subprocess.run(cmd, check=True, capture_output=True)
        cpu1 = rpc_common.cpu_seconds(server.proc.pid)
        threads1 = rpc_common.thread_cpu_ticks(server.proc.pid)
        faults1 = minor_faults(server.proc.pid)
        peak = rpc_common.status_kib(server.proc.pid, "VmHWM") / 1024.0
    finally:
        rc = server.stop()
    if config == "auto" and os.path.exists(learned):
        os.replace(learned, decisions)
    # The server prints kAuto's choices at exit: "auto: <method> chose <mode> ...".
    time.sleep(0.2)
    # kAuto measures each method on its own, labelled by its gRPC name.
    prefix = f"auto: {svc['method'].lstrip('/')} "
    chose = [l.split(" chose ")[1].split()[0] for l in server.log if l.startswith(prefix) and " chose " in l]
    auto_line = [l.strip() for l in server.log if l.startswith(prefix)]
    settle_prefix = f"settle: {svc['method'].lstrip('/')} "
    auto_line += [l.strip() for l in server.log if l.startswith(settle_prefix)]
    auto_line += [l.strip() for l in server.log
                  if l.startswith(f"decision: {svc['method'].lstrip('/')} ") or "auto decisions" in l
                  or l.startswith("measuring cost:")]
    # With measuring on: "measuring cost: thread T s sampling S s process P s share X".
    cost = [l.split() for l in server.log if l.startswith("measuring cost:")]
    measuring_share = float(cost[-1][-1]) if cost else None
    # bench/floor's malloc at exit: "floor_malloc: used U MiB of L MiB ...".
    floor_line = [l.strip() for l in server.log if l.startswith("floor_malloc: used ")]
    if preload == "floor" and not floor_line:
        raise RuntimeError(f"{config}: floor_malloc was not loaded:\n" + "".join(server.log))
    if floor_line and "past the prefaulted" in floor_line[-1]:
        print(f"warning: {tag}: {floor_line[-1]} (raise --floor_prefault_mib)", file=sys.stderr)
    with open(report_path) as f:
        report = json.load(f)
    # Keep only a summary line (ghz_rounds.txt): the report's per-call
    # details would make the kept raw output large.
    with open(os.path.join(outdir, "ghz_rounds.txt"), "a") as f:
        if f.tell() == 0:
            f.write(rpc_common.HEADER + "\n")
        f.write(rpc_common.summary_of(os.path.basename(report_path), report) + "\n")
    os.remove(report_path)
    details = report.get("details") or []
    ok = sorted(d["latency"] / 1e6 for d in details if d.get("status") == "OK")
    cut = [d for d in details if d.get("status") != "OK" and any(
        m in (d.get("error") or "") for m in rpc_common.CUT_AT_END)]
    requests = len(details) - len(cut)
    return {
        "service": svc["name"], "config": config, "rps": rps, "requests": requests,
        "errors": requests - len(ok), "cpu_us_per_call": (cpu1 - cpu0) / max(requests, 1) * 1e6,
        "p50_ms": rpc_common.percentile(ok, 50), "p99_ms": rpc_common.percentile(ok, 99),
        "p999_ms": rpc_common.percentile(ok, 99.9),
        "peak_rss_mib": peak, "server_exit_code": rc, "ghz_command": " ".join(cmd),
        "auto_chose": ",".join(chose), "auto_log": auto_line,
        "measuring_share": measuring_share,
        "minor_faults_per_call": (faults1 - faults0) / max(requests, 1),
        "floor_malloc": floor_line[-1] if floor_line else None,
        # The window's CPU by thread name, in clock ticks (10 ms here).
        "thread_ticks": {k: v - threads0.get(k, 0) for k, v in threads1.items()
                         if v != threads0.get(k, 0)},
    }


def minor_faults(pid):
    """The process's minor page faults so far (/proc/PID/stat field 10)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def combine(runs):
    out = dict(runs[0])
    for k in ["cpu_us_per_call", "p50_ms", "p99_ms", "p999_ms", "peak_rss_mib"]:
        out[k] = statistics.median(r[k] for r in runs)
    out["requests"] = sum(r["requests"] for r in runs)
    out["errors"] = sum(r["errors"] for r in runs)
    out["server_exit_code"] = max(abs(r["server_exit_code"]) for r in runs)
    out["cpu_us_rounds"] = [round(r["cpu_us_per_call"], 1) for r in runs]
    out["auto_chose"] = "/".join(sorted(set(r["auto_chose"] for r in runs if r["auto_chose"])))
    out["auto_log"] = [l for r in runs for l in r["auto_log"]]
    shares = [r["measuring_share"] for r in runs if r.get("measuring_share") is not None]
    out["measuring_share"] = statistics.median(shares) if shares else None
    out["measuring_share_rounds"] = shares
    out["thread_ticks_rounds"] = [r.get("thread_ticks", {}) for r in runs]
    out["minor_faults_per_call"] = statistics.median(r.get("minor_faults_per_call", 0) for r in runs)
    out["floor_malloc_rounds"] = [r["floor_malloc"] for r in runs if r.get("floor_malloc")]
    return out


def table(results, configs):
    by = {(r["service"], r["config"]): r for r in results}
    names = list(dict.fromkeys(r["service"] for r in results))
    lines = ["| service | request | " + " | ".join(f"{c} CPU us" for c in configs) +
             " | arena / plain | arena / plain+mimalloc | reuse / arena | auto / best fixed | "
             "auto chose |",
             "|---|---:|" + "---:|" * len(configs) + "---:|---:|---:|---:|---|"]
    for n in names:
        row = [by[(n, c)]["cpu_us_per_call"] if (n, c) in by else float("nan") for c in configs]
        get = lambda c: by[(n, c)]["cpu_us_per_call"] if (n, c) in by else float("nan")
        best = min(get(c) for c in ("heap", "arena", "reuse") if (n, c) in by) if any(
            (n, c) in by for c in ("heap", "arena", "reuse")) else float("nan")
        size = by[(n, configs[0])].get("request_bytes", 0)
        chose = by.get((n, "auto"), {}).get("auto_chose", "")
        lines.append(f"| {n} | {size / 1024:.1f} KiB | " + " | ".join(f"{v:.0f}" for v in row) +
                     f" | {div(get('arena'), get('plain')):.2f} | {div(get('arena'), get('plain+mimalloc')):.2f}"
                     f" | {div(get('reuse'), get('arena')):.2f} | {div(get('auto'), best):.2f} | {chose} |")
    lines += ["", "| service | " + " | ".join(f"{c} peak RSS MiB" for c in configs) + " | " +
              " | ".join(f"{c} p99 ms" for c in configs) + " |",
              "|---|" + "---:|" * (2 * len(configs))]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(
            f"{by[(n, c)]['peak_rss_mib']:.0f}" if (n, c) in by else "" for c in configs) + " | " +
            " | ".join(f"{by[(n, c)]['p99_ms']:.2f}" if (n, c) in by else "" for c in configs) + " |")
    # Latency per configuration (medians of the rounds' percentiles; older
    # JSON has no p99.9).
    lines += ["", "| service | " + " | ".join(f"{c} p50 / p99 / p99.9 ms" for c in configs) + " |",
              "|---|" + "---:|" * len(configs)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(
            f"{by[(n, c)]['p50_ms']:.2f} / {by[(n, c)]['p99_ms']:.2f} / "
            f"{by[(n, c)].get('p999_ms', float('nan')):.2f}" if (n, c) in by else ""
            for c in configs) + " |")
    # Every configuration against plain gRPC on the same API (ratios of the
    # medians), and auto against the best preloaded malloc.
    pre = [c for c in configs if c.startswith("plain+")]
    others = [c for c in configs if c != "plain"]
    lines += ["", "| service | " + " | ".join(f"{c} CPU / plain" for c in others) +
              (" | auto / best preloaded |" if pre and "auto" in configs else " |") +
              " arenarpc modes' max peak RSS / plain |",
              "|---|" + "---:|" * (len(others) + (2 if pre and "auto" in configs else 1))]
    for n in names:
        if (n, "plain") not in by:
            continue
        base = by[(n, "plain")]
        row = [f"{div(by[(n, c)]['cpu_us_per_call'], base['cpu_us_per_call']):.2f}" if (n, c) in by else ""
               for c in others]
        if pre and "auto" in configs and (n, "auto") in by:
            best_pre = min(by[(n, c)]["cpu_us_per_call"] for c in pre if (n, c) in by)
            row.append(f"{div(by[(n, 'auto')]['cpu_us_per_call'], best_pre):.2f}")
        modes = [c for c in others if not c.startswith("plain") and (n, c) in by]
        rss = div(max(by[(n, c)]["peak_rss_mib"] for c in modes), base["peak_rss_mib"]) if modes else float("nan")
        row.append(f"{rss:.2f}")
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    if "plain" in configs and "plain+floor" in configs:
        lines += ["", floor_table(by, names, configs)]
    return "\n".join(lines)


def share_removed(plain, floor, mode):
    """The share of the removable cost (plain - floor) a mode removes:
    (plain - mode) / (plain - floor); its distance to the floor,
    (mode - floor) / (plain - floor), is 1 minus it."""
    return (plain - mode) / (plain - floor) if plain != floor else float("nan")


def floor_table(by, names, configs):
    """Each mode against the floor (plain+floor): the share of the removable
    cost it removes, from the medians (and its range over rounds, each
    round's runs paired); modes on the floor against the floor."""
    modes = [c for c in configs if c not in ("plain", "plain+floor") and not c.endswith("+floor")]
    on_floor = [c for c in configs if c.endswith("+floor") and c != "plain+floor"]
    head = (["plain CPU us", "floor CPU us", "floor / plain"] + [f"{c}: share removed" for c in modes] +
            [f"{c} / floor" for c in on_floor] + ["floor minor faults per call"])
    lines = ["| service | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for n in names:
        if (n, "plain") not in by or (n, "plain+floor") not in by:
            continue
        plain, floor = by[(n, "plain")], by[(n, "plain+floor")]
        row = [f"{plain['cpu_us_per_call']:.0f}", f"{floor['cpu_us_per_call']:.0f}",
               f"{div(floor['cpu_us_per_call'], plain['cpu_us_per_call']):.2f}"]
        for c in modes:
            if (n, c) not in by:
                row.append("")
                continue
            med = share_removed(plain["cpu_us_per_call"], floor["cpu_us_per_call"], by[(n, c)]["cpu_us_per_call"])
            rounds = [share_removed(p, f, m) for p, f, m in zip(
                plain["cpu_us_rounds"], floor["cpu_us_rounds"], by[(n, c)]["cpu_us_rounds"])]
            row.append(f"{med:.0%} ({min(rounds):.0%} to {max(rounds):.0%})" if rounds else f"{med:.0%}")
        row += [f"{div(by[(n, c)]['cpu_us_per_call'], floor['cpu_us_per_call']):.2f}" if (n, c) in by else ""
                for c in on_floor]
        row.append(f"{floor.get('minor_faults_per_call', float('nan')):.1f}")
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot(results, configs, path, title):
    """CPU per call of each configuration / plain, per service (bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by = {(r["service"], r["config"]): r for r in results}
    names = [n for n in dict.fromkeys(r["service"] for r in results) if (n, "plain") in by]
    others = [c for c in configs if c != "plain"]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(names)), 4))
    width = 0.8 / max(len(others), 1)
    for i, c in enumerate(others):
        ys = [div(by[(n, c)]["cpu_us_per_call"], by[(n, "plain")]["cpu_us_per_call"]) if (n, c) in by else 0
              for n in names]
        ax.bar([x + i * width for x in range(len(names))], ys, width, label=c)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("server CPU per call / plain gRPC")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "corpus_rpc"))
    p.add_argument("--services", default="", help="comma-separated (default: all)")
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                   help="any of " + ",".join(CONFIGS))
    p.add_argument("--api", default="callback", choices=["callback", "sync", "async"],
                   help="server API of the services (the baseline is plain gRPC on the same API)")
    p.add_argument("--plot", default="", help="write a PNG of the CPU ratios here")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=8)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--smoke", action="store_true", help="1 round of 1 s per configuration")
    p.add_argument("--floor_prefault_mib", type=int, default=2048,
                   help="*+floor: memory made resident at the server's start (the window's must fit)")
    p.add_argument("--floor_limit_mib", type=int, default=8192,
                   help="*+floor: the server aborts past this much (memory only grows)")
    p.add_argument("--server", default="",
                   help="the server binary (default: --build's; e.g. a frozen copy while that build changes)")
    p.add_argument("--baseline_server", default="",
                   help="corpus server binary for the *@baseline configurations")
    p.add_argument("--auto_warmup_calls", type=float, default=0,
                   help="auto's warm-up lasts at least this many calls (300 in the older learner's runs)")
    args = p.parse_args()
    if args.smoke:
        args.rounds, args.duration, args.warmup = 1, 1, 0.5
        args.floor_prefault_mib = min(args.floor_prefault_mib, 256)
    args.server = args.server or os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    args.ghz = rpc_common.find_ghz()
    os.makedirs(args.out, exist_ok=True)
    rounds_file = os.path.join(args.out, "ghz_rounds.txt")  # this run's lines only
    if os.path.exists(rounds_file):
        os.remove(rounds_file)
    configs = [c for c in args.configs.split(",") if c]
    wanted = [s for s in args.services.split(",") if s]
    svcs = [s for s in services(args.build) if not wanted or s["name"] in wanted]
    runs = {}
    for rnd in range(args.rounds):
        for svc in svcs:
            pf, size, response_size = payload(args.build, svc["name"], args.out)
            pb = protoset(svc["proto"], args.out)
            # Large responses cost the load generator and the server as
            # large requests do (etcd_range: 70 B asks for ~355 KB).
            rps = rate_for(max(size, response_size))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            for config in order:
                tag = f"{svc['name']}_{config.replace('+', '_')}_r{rnd}"
                r = run_one(args, svc, config, pb, pf, rps, args.out, tag)
                r["request_bytes"] = size
                runs.setdefault((svc["name"], config), []).append(r)
                print(f"round {rnd} {svc['name']:>14} {config:>15}: {r['cpu_us_per_call']:9.1f} us/call "
                      f"p50 {r['p50_ms']:7.2f} p99 {r['p99_ms']:7.2f} p99.9 {r['p999_ms']:7.2f} ms peak {r['peak_rss_mib']:6.0f} MiB errors {r['errors']}",
                      flush=True)
    results = [combine(v) for v in runs.values()]
    with open(os.path.join(args.out, "corpus_rpc.json"), "w") as f:
        json.dump(results, f, indent=1)
    text = table(results, configs)
    with open(os.path.join(args.out, "corpus_rpc.md"), "w") as f:
        f.write(text + "\n")
    if args.plot:
        plot(results, configs, args.plot,
             f"Corpus through gRPC's {args.api} API: CPU per call vs plain (medians)")
    print(text)
    bad = [r for r in results if r["errors"] or r["server_exit_code"] or r["requests"] == 0]
    for r in bad:
        print(f"FAILED: {r['service']} {r['config']}: {r['errors']} errors, exit {r['server_exit_code']}, "
              f"{r['requests']} calls", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

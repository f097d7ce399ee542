#!/usr/bin/env python3
"""Server CPU per call of echo server configurations side by side: ghz at a
fixed rate against each configuration in turn (order reversed every other
round), per call the server's CPU (its CPU-time clock), minor page faults
and context switches over the measured window; per configuration the median
over rounds and the median of its per-round ratios to the first one.

  flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/rpc/paired_cpu.py \\
      --configs plain=none:sync,heap=heap:sync,plain_cb=none:callback,heap_cb=heap:callback \\
      --ratio_to heap_cb=plain_cb --rounds 5 --out docs/raw/heap_mode/run.txt

A configuration is name=mode:api[:build]; build: another build directory
(e.g. the commit before a change, side by side); --ratio_to name=other sets
the configuration a ratio is to (default: the first); mode is the server's --mode (none: plain
gRPC), api is sync or callback (arenarpc_echo_server --api) or async
(arenarpc_echo_async_server). The payload is arenarpc_echo_payload's
(--scale, --seed), as bench/rpc/rpc_bench.py sends it.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_common import ROOT, cpu_seconds, find_ghz, pin, start_server  # noqa: E402


def minor_faults(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def context_switches(pid):
    n = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as f:
                n += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        except OSError:
            pass  # a thread that ended
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--configs", required=True, help="name=mode:api,... (the first is the baseline)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=8, help="measured seconds per config and round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rps", type=int, default=60)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ratio_to", default="", help="name=baseline,...")
    ap.add_argument("--out", help="also write the report here")
    a = ap.parse_args()
    ghz = find_ghz()
    examples = os.path.join(a.build, "examples")
    payload = os.path.join(tempfile.gettempdir(), f"arenarpc_paired_{os.getpid()}.bin")
    subprocess.run([os.path.join(examples, "arenarpc_echo_payload"), f"--scale={a.scale}",
                    f"--seed={a.seed}", f"--out={payload}"], check=True, capture_output=True)
    configs = [c.split("=", 1) for c in a.configs.split(",")]
    baseline = dict(r.split("=", 1) for r in a.ratio_to.split(",") if r)
    first = configs[0][0]
    rows = {name: [] for name, _ in configs}
    lines = [f"# {' '.join(sys.argv)}", f"load before: {open('/proc/loadavg').read().strip()}"]
    print(lines[-1], flush=True)
    for r in range(a.rounds):
        for name, spec in (configs if r % 2 == 0 else configs[::-1]):
            mode, api, build = (spec.split(":", 2) + [a.build])[:3]
            bins = os.path.join(build, "examples")
            if api == "async":
                server = start_server(os.path.join(bins, "arenarpc_echo_async_server"), mode, 1, [])
            else:
                server = start_server(os.path.join(bins, "arenarpc_echo_server"), mode, 1,
                                      [f"--api={api}"])
            report = os.path.join(tempfile.gettempdir(), f"arenarpc_paired_{os.getpid()}.json")

            def ghz_run(seconds):
                subprocess.run(pin(0, [
                    ghz, "--insecure", "--async", f"--rps={a.rps}", f"--duration={seconds}s",
                    "--connections=4", "--concurrency=64", "--cpus=1", "--timeout=10s",
                    "--call=arenarpc.echo.EchoService.Echo", f"--binary-file={payload}",
                    "--format=json", f"--output={report}", f"127.0.0.1:{server.port}"]),
                    check=True, capture_output=True)
                with open(report) as f:
                    return json.load(f)
            try:
                ghz_run(a.warmup)
                pid = server.proc.pid
                c0, f0, s0 = cpu_seconds(pid), minor_faults(pid), context_switches(pid)
                rep = ghz_run(a.duration)
                c1, f1, s1 = cpu_seconds(pid), minor_faults(pid), context_switches(pid)
            finally:
                server.stop()
                if os.path.exists(report):
                    os.unlink(report)
            n = rep["count"]
            errors = sum(v for k, v in rep.get("statusCodeDistribution", {}).items() if k != "OK")
            row = {"cpu_us": (c1 - c0) / n * 1e6, "minflt": (f1 - f0) / n, "ctxsw": (s1 - s0) / n,
                   "calls": n, "errors": errors}
            rows[name].append(row)
            lines.append(f"round {r} {name} " + json.dumps({k: round(v, 2) for k, v in row.items()}))
            print(lines[-1], flush=True)
    os.unlink(payload)
    lines.append(f"load after: {open('/proc/loadavg').read().strip()}")
    lines.append("| config | CPU us/call (median) | baseline | / baseline (median of per-round "
                 "ratios) | per-round ratios | minor faults/call | ctx switches/call |")
    lines.append("|---|---:|---|---:|---|---:|---:|")
    for name, _ in configs:
        base = baseline.get(name, first)
        med = {k: statistics.median(x[k] for x in rows[name]) for k in ["cpu_us", "minflt", "ctxsw"]}
        ratios = [x["cpu_us"] / b["cpu_us"] for x, b in zip(rows[name], rows[base])]
        lines.append(f"| {name} | {med['cpu_us']:.0f} | {base} | {statistics.median(ratios):.3f} | "
                     f"{', '.join(f'{x:.3f}' for x in ratios)} | {med['minflt']:.1f} | {med['ctxsw']:.1f} |")
    print("\n".join(lines[-len(configs) - 3:]))
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

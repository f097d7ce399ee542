#!/usr/bin/env python3
"""Does arenarpc_advise predict what switching really saves? For every
corpus service, the walk-through of docs/ADVISE.md, then the check:

  1. capture: arenarpc_corpus_server in heap mode with shadow measurement
     writing sampled requests (--capture_dir), driven by ghz with the
     service's typical request, until 200 are captured;
  2. predict: arenarpc_advise on the capture (generated code, --json), with
     the server CPU per call of plain gRPC measured in step 3 as
     --baseline_cpu_us (what a user reads off their dashboard);
  3. measure: bench/corpus/corpus_rpc.py's end-to-end run through gRPC, server CPU
     per call, configs plain, heap (arenarpc's heap holder), arena, reuse
     (and arena+shadow: the cost of shadow measurement at 1 in 100), medians
     over rounds. Every mode's saving is measured, heap's too: a prediction
     of "about 0" for heap is checked like any other.

Saving of a mode = 1 - CPU(mode) / CPU(plain). A prediction holds when it
is within 15 % of the measured saving or 0.05, whichever is larger.

  bench/advise/advise_check.py --rounds 5 --out docs/raw/advise
  bench/advise/advise_check.py --measured docs/raw/advise/corpus_rpc.json   # reuse a run
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

_BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(_BENCH, "corpus"), os.path.join(_BENCH, "rpc")]
import corpus_rpc  # noqa: E402
import rpc_common  # noqa: E402

ROOT = corpus_rpc.ROOT


def capture(args, svc, pb, payload_file, size, outdir):
    """Step 1: 200 requests captured by the server's shadow measurement."""
    cap = os.path.join(outdir, "capture_" + svc["name"])
    shutil.rmtree(cap, ignore_errors=True)
    server = rpc_common.Server(args.server, "heap", None, [
        "--shadow_sample_one_in=1", "--shadow_max_cpu_share=0", f"--capture_dir={cap}",
        f"--capture_max_files={args.samples}", f"--capture_max_bytes={1 << 30}"])
    call = svc["method"].lstrip("/").replace("/", ".")
    method_dir = os.path.join(cap, svc["method"].lstrip("/").replace("/", "."))
    try:
        for _ in range(10):
            subprocess.run([args.ghz, "--insecure", f"--rps={corpus_rpc.rate_for(size) * 2}",
                            f"--total={args.samples}", "--connections=1", "--concurrency=4",
                            f"--protoset={pb}", f"--call={call}",
                            f"--binary-file={payload_file}" if size else "--data={}",
                            f"127.0.0.1:{server.port}"], check=True, capture_output=True)
            time.sleep(0.5)
            n = len([f for f in os.listdir(method_dir) if f.endswith(".bin")]) \
                if os.path.isdir(method_dir) else 0
            if n >= args.samples:
                break
    finally:
        server.stop()
    return method_dir, n


def advise(args, svc, pb, samples, baseline):
    cmd = [args.advise, f"--descriptor_set={pb}", f"--type={svc['request']}",
           f"--samples={samples}", "--json"]
    if baseline:
        cmd.append(f"--baseline_cpu_us={baseline:.1f}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), " ".join(cmd)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "advise_check"))
    p.add_argument("--services", default="")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=float, default=8)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--measured", default="", help="corpus_rpc.json of an earlier step 3")
    args = p.parse_args()
    args.server = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    args.advise = os.path.join(args.build, "tools", "advise", "arenarpc_advise")
    args.ghz = rpc_common.find_ghz()
    os.makedirs(args.out, exist_ok=True)
    wanted = [s for s in args.services.split(",") if s]
    svcs = [s for s in corpus_rpc.services(args.build) if not wanted or s["name"] in wanted]
    configs = ["plain", "heap", "arena", "reuse", "arena+shadow"]

    inputs = {}
    for svc in svcs:
        pf, size = corpus_rpc.payload(args.build, svc["name"], args.out)
        pb = corpus_rpc.protoset(svc["proto"], args.out)
        samples, n = capture(args, svc, pb, pf, size, args.out)
        print(f"{svc['name']}: captured {n} requests in {samples}", flush=True)
        inputs[svc["name"]] = (pf, size, pb, samples)

    if args.measured:
        with open(args.measured) as f:
            measured = json.load(f)
    else:
        runs = {}
        for rnd in range(args.rounds):
            for svc in svcs:
                pf, size, pb, _ = inputs[svc["name"]]
                order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
                for config in order:
                    tag = f"{svc['name']}_{config.replace('+', '_')}_r{rnd}"
                    r = corpus_rpc.run_one(args, svc, config, pb, pf, corpus_rpc.rate_for(size),
                                           args.out, tag)
                    r["request_bytes"] = size
                    runs.setdefault((svc["name"], config), []).append(r)
                    print(f"round {rnd} {svc['name']:>14} {config:>13}: "
                          f"{r['cpu_us_per_call']:9.1f} us/call errors {r['errors']}", flush=True)
        measured = [corpus_rpc.combine(v) for v in runs.values()]
        with open(os.path.join(args.out, "corpus_rpc.json"), "w") as f:
            json.dump(measured, f, indent=1)
    cpu = {(r["service"], r["config"]): r["cpu_us_per_call"] for r in measured}
    missing = [(s["name"], c) for s in svcs for c in configs if (s["name"], c) not in cpu]
    if missing:
        sys.exit(f"--measured lacks configs (measure them in the same run): {missing}")
    rounds = {(r["service"], r["config"]): r.get("cpu_us_rounds", []) for r in measured}

    rows, failures = [], 0
    lines = ["| service | request | plain CPU us/call | advise: recommended (auto) | "
             "predicted saving heap | measured | "
             "predicted saving arena | measured | predicted saving reuse | measured | "
             "recommended: predicted vs measured | holds | shadow 1/100: measuring share | "
             "arena+shadow / arena CPU |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for svc in svcs:
        n = svc["name"]
        pf, size, pb, samples = inputs[n]
        plain = cpu[(n, "plain")]
        adv, cmd = advise(args, svc, pb, samples, plain)
        meas = {m: 1 - cpu[(n, m)] / plain for m in ("heap", "arena", "reuse")}
        pred = {m: adv["modes"][m]["saving_share"] for m in ("heap", "arena", "reuse")}
        rec = adv["recommended"]
        err = abs(pred[rec] - meas[rec])
        tol = max(0.15 * abs(meas[rec]), 0.05)
        ok = err <= tol
        failures += 0 if ok else 1
        # Shadow's cost: what the server itself counted (measuring thread +
        # sampling) over its process CPU, in the same run; the CPU ratio of
        # two runs is quoted beside it but carries the machine's noise.
        shadow_share = next((r.get("measuring_share") for r in measured
                             if r["service"] == n and r["config"] == "arena+shadow"), None)
        shadow = cpu[(n, "arena+shadow")] / cpu[(n, "arena")] - 1
        rows.append({"service": n, "request_bytes": size, "plain_cpu_us": plain,
                     "cpu_us_rounds": {c: rounds[(n, c)] for c in configs},
                     "advise": adv, "advise_command": cmd, "measured_saving": meas,
                     "predicted_saving": pred, "error": err, "tolerance": tol, "holds": ok,
                     "shadow_cpu_overhead": shadow, "shadow_measuring_share": shadow_share})
        lines.append(f"| {n} | {size / 1024:.1f} KiB | {plain:.0f} | {rec} ({adv['auto']}) | "
                     f"{pred['heap']:+.2f} | {meas['heap']:+.2f} | "
                     f"{pred['arena']:+.2f} | {meas['arena']:+.2f} | {pred['reuse']:+.2f} | "
                     f"{meas['reuse']:+.2f} | {pred[rec]:+.2f} vs {meas[rec]:+.2f} "
                     f"(tolerance {tol:.2f}) | {'yes' if ok else 'NO'} | "
                     f"{'' if shadow_share is None else f'{shadow_share * 100:.2f} %'} | "
                     f"{shadow * 100:+.1f} % |")
    text = "\n".join(lines)
    with open(os.path.join(args.out, "advise_check.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "advise_check.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(text)
    overhead = statistics.median(r["shadow_cpu_overhead"] for r in rows) if rows else 0
    print(f"\n{len(rows) - failures}/{len(rows)} predictions hold; "
          f"median shadow overhead {overhead * 100:+.1f} %")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

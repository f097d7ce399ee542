#!/usr/bin/env python3
"""A perf profile of the corpus server in given configurations, one after
another, under the load corpus_rpc.py applies (ghz at a fixed rate, server
and ghz pinned to a core each). Prints each configuration's server CPU per
call over the profiled window and its samples by shared object; writes the
perf data to --out (large: not kept) and the report to --out/profile.txt.

  flock /tmp/arenarpc-bench.lock bench/corpus/profile_rpc.py --service otlp_logs \\
      --api callback --configs reuse,plain+mimalloc --rps 250 --out /tmp/prof

One round: for where the CPU goes, not for ratios (corpus_rpc.py for those).

--split prints each configuration's CPU per call split by phase, from the
samples' call chains (inclusive time of the outermost frame of each phase):
receive (gRPC's HTTP/2 read, with the call's creation), parse (gRPC's
Deserialize), handle (the corpus handler), destroy (the request's
destructor, or its arena's reset), answer (gRPC's Serialize of the
response) and the rest (polling, threads, send): what shedding a call
before its parse can save (parse, handle, destroy, answer) and what it
cannot (receive). Phases under 0.3 % of the samples read 0.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_rpc  # noqa: E402
import rpc_common  # noqa: E402  (corpus_rpc put bench/rpc on the path)


# Phase: regular expressions on demangled frames whose inclusive time is the phase's.
PHASES = {"receive": r"^grpc_chttp2_perform_read$",
          "parse": r"GenericDeserialize<|::Deserialize$",
          "handle": r"^\(anonymous namespace\)::(\w+(Sync|Impl)::\w+|Handle(Sync)?)$",
          "destroy": r"::~\w+Request$|ScopedArena::~ScopedArena|Arena::Reset$",
          "answer": r"SerializationTraits<.*>::Serialize$|GenericSerialize<"}


def split(data, us_per_call):
    """{phase: us per call} from perf's inclusive (children) share per frame:
    the largest share among a phase's frames (its outermost)."""
    text = subprocess.run(["perf", "report", "-i", data, "--children", "-g", "none", "--sort", "sym",
                           "--stdio", "--percent-limit", "0.3"], capture_output=True, text=True).stdout
    share = {k: 0.0 for k in PHASES}
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+[\d.]+%\s+\[.\]\s+(.*)$", line)
        for phase, pattern in PHASES.items():
            if m and re.search(pattern, m.group(2).strip()):
                share[phase] = max(share[phase], float(m.group(1)))
    out = {k: us_per_call * v / 100 for k, v in share.items()}
    out["rest"] = us_per_call - sum(out.values())
    return out


GLIBC_MALLOC = ("malloc", "_int_malloc", "malloc_consolidate", "_int_free", "cfree@GLIBC_2.2.5",
                "unlink_chunk.constprop.0")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/release")
    p.add_argument("--service", required=True)
    p.add_argument("--api", default="callback", choices=["callback", "sync", "async"])
    p.add_argument("--configs", required=True)
    p.add_argument("--rps", type=int, default=0, help="0: corpus_rpc.py's rate for the size")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--out", required=True)
    p.add_argument("--split", action="store_true", help="CPU per call by phase (receive, parse, handle, destroy, answer, rest)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    svc = next(s for s in corpus_rpc.services(a.build) if s["name"] == a.service)
    pf, size, response_size = corpus_rpc.payload(a.build, a.service, a.out)
    pb = corpus_rpc.protoset(svc["proto"], a.out)
    rps = a.rps or corpus_rpc.rate_for(max(size, response_size))
    ghz_bin = rpc_common.find_ghz()
    binary = os.path.join(a.build, "bench", "corpus", "arenarpc_corpus_server")
    call = svc["method"].lstrip("/").replace("/", ".")
    report = [f"{a.service}, {a.api} API, request {size} bytes, {rps} calls/s, {a.seconds:g} s profiled after 3 s"]
    server_core, load_core = corpus_rpc.cores()
    for config in a.configs.split(","):
        mode, preload, extra = corpus_rpc.CONFIGS[config]
        server = rpc_common.start_server(binary, mode, server_core, extra + [f"--api={a.api}"], preload)

        def ghz(seconds, out_json):
            return corpus_rpc.ghz_command(ghz_bin, load_core, rps, seconds, pb, call, pf, server.port, out_json)
        data = os.path.join(a.out, f"{config}.data")
        try:
            subprocess.run(ghz(3, os.path.join(a.out, "warm.json")), check=True, capture_output=True)
            cpu0 = rpc_common.cpu_seconds(server.proc.pid)
            perf = subprocess.Popen(["perf", "record", "-F", "1999", "--call-graph", "dwarf,16384", "-o", data,
                                     "-p", str(server.proc.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            measured = os.path.join(a.out, f"{config}.json")
            subprocess.run(ghz(a.seconds, measured), check=True, capture_output=True)
            perf.send_signal(2)
            perf.wait()
            cpu1 = rpc_common.cpu_seconds(server.proc.pid)
        finally:
            server.stop()
        calls = json.load(open(measured))["count"]
        by_dso = subprocess.run(["perf", "report", "-i", data, "--no-children", "-g", "none", "--sort", "dso",
                                 "--stdio"], capture_output=True, text=True).stdout
        lines = [l.strip() for l in by_dso.splitlines() if l.strip() and not l.startswith("#")][:8]
        report.append(f"\n{config}: {(cpu1 - cpu0) / calls * 1e6:.0f} us/call over {calls} calls; samples by object:")
        report += ["  " + l for l in lines]
        if a.split:
            us = split(data, (cpu1 - cpu0) / calls * 1e6)
            report.append(f"{config}: split us/call: " + ", ".join(f"{k} {v:.0f}" for k, v in us.items()))
        if preload is None and not a.split:
            # Who calls glibc's malloc and free: their callers, nearest
            # first (branches of 0.5 % of the samples or more).
            callers = subprocess.run(
                ["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "graph,0.5,callee",
                 "--max-stack", "9", "--sort", "sym", "--percent-limit", "0.5", "-S", ",".join(GLIBC_MALLOC)],
                capture_output=True, text=True).stdout
            kept = [l.rstrip() for l in callers.splitlines()
                    if l.strip() and not l.startswith("#") and l.strip() != "|"]
            report.append(f"{config}: glibc malloc/free samples and their callers:")
            report += ["  " + l for l in kept[:120]]
    text = "\n".join(report) + "\n"
    print(text, end="")
    with open(os.path.join(a.out, "profile.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

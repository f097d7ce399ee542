#!/usr/bin/env python3
"""The floor measured a second way: perf attribution of plain gRPC's server CPU.

For each corpus service, `arenarpc_corpus_server --mode=none` runs under
the load corpus_rpc.py applies (ghz at the service's rate, server and ghz
pinned to a core each) while `perf record` samples the whole server with
call chains (DWARF). Each sample is put in one class, nearest frame first:
  allocator   malloc, free, calloc, realloc, the aligned ones, operator new
              and delete, and everything below them (glibc's internals, the
              kernel's page faults and munmap they cause)
  page faults the kernel's page faults outside malloc (first touches of
              blocks glibc took from mmap)
  ctor/dtor   message constructors and destructors (generated and
              protobuf's: SharedCtor/SharedDtor, ~T, T::T, Arena's
              CreateMaybeMessage, RepeatedPtrField and string Destroy)
  other       the rest (parse, serialize, handler, transport, kernel)
Allocator and page faults are what the floor (plain+floor in
corpus_rpc.py: no allocator work, memory resident beforehand) should
remove: (plain - floor) / plain; adding ctor/dtor gives the most a mode
that also skips destructors could remove.

  flock /tmp/arenarpc-bench.lock bench/floor/floor_perf.py --build build/rel --api sync \\
      --services otlp_metrics,otlp_logs,otlp_trace,horaedb_write,cortex_push --out OUT

Writes OUT/floor_perf.md (the table) and OUT/floor_perf.json; perf's data
files are removed once read (large).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus"))
import corpus_rpc  # noqa: E402
import rpc_common  # noqa: E402  (corpus_rpc put bench/rpc on the path)

ALLOCATOR = re.compile(
    r"^(__libc_)?(malloc|free|cfree|calloc|realloc|reallocarray|memalign|posix_memalign|aligned_alloc|"
    r"valloc|pvalloc)(@.*)?$|^(__)?(_int_malloc|_int_free|_int_realloc|_int_memalign|malloc_consolidate|"
    r"sysmalloc|tcache_get|tcache_put|unlink_chunk.*|_mid_memalign|__munmap|munmap_chunk|systrim|"
    r"__libc_(malloc|free|calloc|realloc|memalign))$|^operator (new|delete)")
# Messages' namespaces (the corpus's and protobuf's own): gRPC's and the
# standard library's constructors and destructors are not messages'.
MESSAGES = (r"^(opentelemetry::proto|google::protobuf|storage::|prometheus::|cortexpb::|distributor::|"
            r"etcdserverpb::|mvccpb::|authpb::|google::logging|google::pubsub|google::api::|google::rpc::|"
            r"grpc::health::)")
CTOR_DTOR = re.compile(MESSAGES + r".*(::~\w+$|::(\w+)::\3$|::SharedCtor$|::SharedDtor$|CreateMaybeMessage|"
                       r"::Destroy(<.*>)?$|::New$|::Delete$)")
PAGE_FAULT = re.compile(r"^(asm_)?exc_page_fault$")


CLASSES = ("allocator", "page faults", "ctor/dtor", "other")


def classify(frames):
    """frames: symbol names, leaf first. The class of the sample."""
    for sym in frames:
        if ALLOCATOR.search(sym):
            return "allocator"
        if PAGE_FAULT.search(sym):
            return "page faults"
        if CTOR_DTOR.search(sym):
            return "ctor/dtor"
    return "other"


def samples(script_text):
    """Yields each sample's frames (symbols, leaf first) from `perf script`."""
    frames = []
    for line in script_text.splitlines():
        if not line.strip():
            if frames:
                yield frames
            frames = []
        elif line.startswith((" ", "\t")):
            # "\t    7f01234 symbol+0x12 (/path/dso)"
            parts = line.strip().split(" ", 1)
            sym = parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else "[unknown]"
            frames.append(re.sub(r"\+0x[0-9a-f]+$", "", sym))
    if frames:
        yield frames


def profile(args, svc, outdir):
    pf, size, response_size = corpus_rpc.payload(args.build, svc["name"], outdir)
    pb = corpus_rpc.protoset(svc["proto"], outdir)
    rps = corpus_rpc.rate_for(max(size, response_size))
    call = svc["method"].lstrip("/").replace("/", ".")
    server_core, load_core = corpus_rpc.cores()
    binary = os.path.join(args.build, "bench", "corpus", "arenarpc_corpus_server")
    server = rpc_common.start_server(binary, "none", server_core, [f"--api={args.api}"])
    data = os.path.join(outdir, f"perf_{svc['name']}.data")

    def ghz(seconds, out_json):
        return corpus_rpc.ghz_command(args.ghz, load_core, rps, seconds, pb, call, pf, server.port, out_json)
    try:
        subprocess.run(ghz(args.warmup, os.path.join(outdir, "warm.json")), check=True, capture_output=True)
        cpu0 = rpc_common.cpu_seconds(server.proc.pid)
        perf = subprocess.Popen(["perf", "record", "-F", str(args.freq), "--call-graph", "dwarf,8192",
                                 "-o", data, "-p", str(server.proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        measured = os.path.join(outdir, f"ghz_{svc['name']}.json")
        subprocess.run(ghz(args.duration, measured), check=True, capture_output=True)
        perf.send_signal(2)
        perf.wait()
        cpu1 = rpc_common.cpu_seconds(server.proc.pid)
    finally:
        server.stop()
    with open(measured) as f:
        calls = json.load(f)["count"]
    os.remove(measured)
    text = subprocess.run(["perf", "script", "-i", data, "--no-inline", "-F", "ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    os.remove(data)
    counts = collections.Counter()
    leaves = collections.Counter()
    for frames in samples(text):
        c = classify(frames)
        counts[c] += 1
        if c != "other":
            leaves[(c, frames[0])] += 1
    total = sum(counts.values())
    return {"service": svc["name"], "api": args.api, "rps": rps, "request_bytes": size, "calls": calls,
            "cpu_us_per_call_profiled": (cpu1 - cpu0) / max(calls, 1) * 1e6, "samples": total,
            "shares": {c: counts[c] / max(total, 1) for c in CLASSES},
            "top_leaves": [[c, sym, n] for (c, sym), n in leaves.most_common(15)]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(rpc_common.ROOT, "build", "release"))
    p.add_argument("--services", required=True, help="comma-separated")
    p.add_argument("--api", default="sync", choices=["callback", "sync", "async"])
    p.add_argument("--duration", type=float, default=8)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--freq", type=int, default=3999, help="perf samples per second")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    args.ghz = rpc_common.find_ghz()
    os.makedirs(args.out, exist_ok=True)
    wanted = args.services.split(",")
    results = [profile(args, s, args.out) for s in corpus_rpc.services(args.build) if s["name"] in wanted]
    with open(os.path.join(args.out, "floor_perf.json"), "w") as f:
        json.dump(results, f, indent=1)
    lines = [f"perf attribution of plain gRPC's server CPU ({args.api} API, {args.duration:g} s "
             f"at {args.freq} Hz after {args.warmup:g} s)", "",
             "| service | samples | CPU us per call (profiled) | allocator | page faults | ctor/dtor | "
             "allocator + faults (the floor's cut) | + ctor/dtor | other |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        s = r["shares"]
        cut = s["allocator"] + s["page faults"]
        lines.append(f"| {r['service']} | {r['samples']} | {r['cpu_us_per_call_profiled']:.0f} | "
                     f"{s['allocator']:.1%} | {s['page faults']:.1%} | {s['ctor/dtor']:.1%} | {cut:.1%} | "
                     f"{cut + s['ctor/dtor']:.1%} | {s['other']:.1%} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "floor_perf.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0 if all(r["samples"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

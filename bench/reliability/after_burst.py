#!/usr/bin/python3
"""Where a server's memory is after a burst (docs/OPERATE.md, "Memory"):
a diagnostic, not a benchmark. For each build and mode: the echo server as
shipped, a fixed-rate burst with 1 s deadlines (arenarpc_reliability_load),
then idle; at the end serve_load.py's --inspect view (arenarpc's gauges,
smaps_rollup, Private_Dirty by kind of mapping, glibc's arenas and the tops
of its thread arenas, RSS after one more malloc_trim(0)).

  after_burst.py --builds base=DIR,fix=DIR --modes reuse,auto --rounds 2

DIR holds examples/arenarpc_echo_server and bench/arenarpc_reliability_load.
Server and load run at nice 19 (they only ask where memory is; on a shared
machine the burst is what the other work leaves). Prints to stdout.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_load as sl  # noqa: E402


def one(build, mode, a):
    s = sl.Server(os.path.join(build, "examples", "arenarpc_echo_server"), mode)
    sl.time.sleep(1)
    before = s.rss()
    subprocess.run([os.path.join(build, "bench", "arenarpc_reliability_load"),
                    f"--target=127.0.0.1:{s.port}", f"--rps={a.rps}", f"--deadline_ms={a.deadline_ms}",
                    f"--seconds={a.burst}", "--connections=4"], capture_output=True)
    peak = max(v for _, v in s.samples)
    sl.time.sleep(a.idle)
    i = sl.inspect(s)
    _, stats = s.stop()
    print(f"{mode}: before {before:.1f} peak {peak:.1f} after {i['smaps'].get('Rss', 0):.1f}; {stats}")
    print("  " + sl.inspect_text(mode, i), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", required=True, help="name=DIR,...")
    ap.add_argument("--modes", default="reuse,auto")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--rps", type=int, default=5000)
    ap.add_argument("--deadline_ms", type=int, default=1000)
    ap.add_argument("--burst", type=int, default=30)
    ap.add_argument("--idle", type=float, default=10)
    a = ap.parse_args()
    os.nice(19)
    builds = [b.split("=", 1) for b in a.builds.split(",")]
    print(f"# after_burst.py {' '.join(sys.argv[1:])}")
    print(f"# loadavg before: {open('/proc/loadavg').read().strip()}")
    for _ in range(a.rounds):
        for name, build in builds:  # interleaved: builds see the same machine
            for mode in a.modes.split(","):
                print(f"== build {name}")
                one(build, mode, a)
    print(f"# loadavg after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One line per ghz JSON report: the figures quoted from it, as small text.

ghz's --format=json report carries every call (~110 KB per 20 s round); the
docs keep this summary instead (docs/raw/ghz_rounds.txt). Percentiles are
rpc_bench.py's (linear interpolation over the OK calls).

  python3 bench/ghz_summary.py REPORT.json... > ghz_rounds.txt
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_bench import percentile  # noqa: E402

HEADER = ("# report calls ok fastest_ms slowest_ms average_ms "
          "p50_ms p90_ms p99_ms p99.9_ms rps")


def summary_line(path):
    with open(path) as f:
        report = json.load(f)
    details = report.get("details") or []
    ok = sorted(d["latency"] / 1e6 for d in details if d.get("status") == "OK")
    cols = [os.path.basename(path), str(len(details)), str(len(ok)),
            f"{report.get('fastest', 0) / 1e6:.2f}",
            f"{report.get('slowest', 0) / 1e6:.2f}",
            f"{report.get('average', 0) / 1e6:.2f}"]
    cols += [f"{percentile(ok, p):.2f}" for p in (50, 90, 99, 99.9)]
    cols.append(f"{report.get('rps', 0.0):.2f}")
    return " ".join(cols)


def main(paths):
    print(HEADER)
    for p in paths:
        print(summary_line(p))


if __name__ == "__main__":
    main(sys.argv[1:])

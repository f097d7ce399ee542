#!/usr/bin/env python3
"""One line per ghz JSON report: the figures quoted from it, as small text.

ghz's --format=json report carries every call (~110 KB per 20 s round); the
docs keep this summary instead (docs/raw/rpc/data.tar.xz:ghz_rounds.txt,
docs/raw/corpus/data.tar.xz:ghz_rounds.txt). Percentiles are
rpc_common.percentile's (linear interpolation over the OK calls).

  python3 bench/rpc/ghz_summary.py REPORT.json... > ghz_rounds.txt
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_common import HEADER, summary_line  # noqa: E402


def main(paths):
    print(HEADER)
    for p in paths:
        print(summary_line(p))


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Fails when an #include points the wrong way (docs/ARCHITECTURE.md).

Arrows point one way: adapter -> core, public -> internal, library -> nothing
of tests, benchmarks, tools or examples. Checked:
  1. the core (include/arenarpc/ outside grpc/, src/ outside grpc/) includes
     no gRPC header and no arenarpc/grpc/ header;
  2. public headers (include/) include no private header (src/...);
  3. the library (include/, src/) includes nothing from tests/, bench/,
     tools/ or examples/.
Prints each offending line; exit 1 if any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def files(*dirs):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(ROOT, d)):
            for n in names:
                if n.endswith((".h", ".cc")):
                    yield os.path.relpath(os.path.join(base, n), ROOT)


def main():
    bad = []
    for path in files("include", "src"):
        in_grpc = path.startswith(("include/arenarpc/grpc/", "src/grpc/"))
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                why = None
                if not in_grpc and (inc.startswith(("grpc/", "grpcpp/", "arenarpc/grpc/"))):
                    why = "the core includes gRPC or the gRPC adapters"
                elif path.startswith("include/") and inc.startswith("src/"):
                    why = "a public header includes a private one"
                elif inc.split("/")[0] in ("tests", "bench", "tools", "examples"):
                    why = "the library includes tests, benchmarks, tools or examples"
                if why:
                    bad.append(f"{path}:{no}: {line.strip()}  <- {why}")
    for b in bad:
        print(b)
    print(f"check_includes: {len(bad)} include(s) pointing the wrong way")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

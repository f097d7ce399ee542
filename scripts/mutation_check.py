#!/usr/bin/env python3
"""One-line mutation check: apply a mutation to a source file, build a test
target in an existing build directory, run the given tests, restore the
file, and append CAUGHT (the tests failed) or MISSED to a results file.

  scripts/mutation_check.py NAME FILE OLD NEW TARGET 'ctest -R REGEX' \\
      [--build build/asan] [--out results.txt]

OLD must occur exactly once in FILE. The file is restored even when the
build fails (reported as BUILD FAILED, not counted). Kept results:
docs/raw/mutations.txt.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for a in ("name", "file", "old", "new", "target", "test"):
        p.add_argument(a)
    p.add_argument("--build", default="build/asan")
    p.add_argument("--out", default="mutation_results.txt")
    args = p.parse_args()
    path = os.path.join(ROOT, args.file)
    src = open(path).read()
    if src.count(args.old) != 1:
        sys.exit(f"{args.name}: the mutation's text occurs {src.count(args.old)} times")
    open(path, "w").write(src.replace(args.old, args.new))
    try:
        b = subprocess.run(["nice", "-n", "10", "cmake", "--build", args.build, "-j2",
                            "--target", args.target], cwd=ROOT, capture_output=True, text=True)
        if b.returncode != 0:
            print(f"{args.name}: BUILD FAILED\n{b.stdout[-2000:]}")
            return 2
        t = subprocess.run(args.test, shell=True, cwd=os.path.join(ROOT, args.build),
                           capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        verdict = "CAUGHT" if t.returncode != 0 else "MISSED"
        with open(args.out, "a") as f:
            f.write(f"{verdict}\t{args.name}\t{args.file}: {args.old.strip()[:70]!r} -> "
                    f"{args.new.strip()[:70]!r}\t{args.test}\n")
        print(f"{args.name}: {verdict}")
        failed = [l for l in (t.stdout + t.stderr).splitlines() if "***" in l]
        print("\n".join(failed[:6]))
        return 0
    finally:
        open(path, "w").write(src)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Builds abseil + protobuf (libprotobuf, libprotoc, protoc) into a cache and
# prints the install prefix (the last line of stdout). The tests and
# benchmarks use it to check arenarpc's core against a modern protobuf
# (docs/PROTOBUF_VERSIONS.md); it is a test fixture, never part of the
# library.
#
#   scripts/protobuf_fixture.sh [asan|protoc|release]
#
# The sources: the source distribution of the Python package grpcio-tools,
# pinned below and checked by its sha256, fetched with pip (the package
# registry's client) once and kept in the cache. It carries protobuf's and
# abseil's C++ sources without their top-level CMake files:
# scripts/protobuf_fixture/CMakeLists.txt builds them.
#
# ARENARPC_CACHE_DIR    where sources and prefixes are kept (default
#                       ~/.cache/arenarpc)
#
# The cache key is the sdist's sha256, the build recipe (`recipe` below and
# the files in scripts/protobuf_fixture/), the variant and the compiler: a warm cache is reused as
# is, anything else builds afresh (docs/PROTOBUF_VERSIONS.md has the times).
# ARENARPC_FIXTURE_CCACHE=1 compiles through ccache (for work on the recipe;
# off by default, so the fixture's objects do not evict the CI's).
# Exit code 3 (and a message) when the sources cannot be had (no pip, no
# registry).
set -euo pipefail
fixture_name=protobuf_fixture fixture_nice=10
source "$(dirname "$0")/fixture_lib.sh"
variant="${1:-release}"
# asan: everything instrumented, protoc too (protobuf's inline code poisons
# arena memory and abseil's containers change layout under ASan, so the
# runtime and its users must agree), -O1 as ASan builds usually are.
# protoc: to run protoc only, built quickly (-O1). release: -O3, for
# benchmarks (cold, on 2 shared cores: about 11 minutes wall, 9.5 minutes of
# CPU; docs/PROTOBUF_VERSIONS.md).
case "$variant" in
  asan) flags="-fsanitize=address -fno-omit-frame-pointer"; opt="-O1" ;;
  protoc) flags=""; opt="-O1" ;;
  release) flags=""; opt="-O3" ;;
  *) echo "usage: $0 [asan|protoc|release]" >&2; exit 2 ;;
esac

# The package, its sha256 (pip's --require-hashes checks it on download,
# sha256sum again on every use) and the protobuf release it carries.
package=grpcio-tools
package_version=1.85.1
package_sha256=d6f1ee213a07de9462c90ee5debe4a78dff20306a0fb394a65d48b2f94fe31a1
protobuf_release=35.1

repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${ARENARPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc}"
sdist="$cache/sources/grpcio_tools-$package_version.tar.gz"

# Bump `recipe` when the build below changes.
recipe=1
if fixture_prefix "protobuf-$protobuf_release-$variant" \
    "$package_sha256 $recipe $variant $flags $opt" "$repo"/scripts/protobuf_fixture/*; then
  echo "$prefix"
  exit 0
fi

mkdir -p "$cache/sources"
fixture_pip_sdist "$package" "$package_version" "$package_sha256" "$sdist" || exit $?
fixture_check_sha256 "$package_sha256" "$sdist" || exit 1

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "protobuf_fixture: building protobuf $protobuf_release ($variant, from" \
     "$package $package_version) into $prefix" >&2
start=$SECONDS
tar -xzf "$sdist" -C "$work"
src="$work/grpcio_tools-$package_version"
fixture_check_protobuf "$src" "$protobuf_release" || exit 1
stage="$work/prefix"
jobs="$(nproc)"
[ "$jobs" -gt 2 ] || jobs=2
fixture_launcher "$work"
# protoc runs in users' builds; under ASan its exit-time leaks are not ours.
export ASAN_OPTIONS=detect_leaks=0
fixture_build "$repo/scripts/protobuf_fixture" -DSDIST="$src" || exit 1
# The protoc must run (it generates every test's code).
"$stage/bin/protoc" --version >> "$work/build.log" 2>&1 || { fixture_failed; exit 1; }
rm -rf "$prefix"
mv "$stage" "$prefix"
touch "$prefix/.complete"
echo "protobuf_fixture: built in $((SECONDS - start)) s" >&2
echo "$prefix"

#!/usr/bin/env bash
# Builds gRPC 1.56.2 with the abseil and protobuf (23.1) of its release into
# a cache and prints the install prefix (the last line of stdout): CMake
# packages absl, protobuf and gRPC (grpc++, grpc_cpp_plugin), for building
# arenarpc's gRPC adapters against a gRPC other than the system's (the grpc156
# leg of scripts/test.sh, scripts/grpc_leg.sh). A test fixture, never part of
# the library.
#
#   scripts/grpc_fixture.sh [release]
#
# The sources, each from a package registry by its ordinary client, pinned by
# version and checked by sha256, fetched once and kept in the cache:
# - gRPC: the Rust package grpcio-sys, whose crate carries gRPC's complete
#   sources (C++ layer, CMake build, abseil, c-ares, re2, upb; no protobuf,
#   no BoringSSL), fetched with cargo (a throwaway project depending on
#   exactly that version; Cargo.lock's checksum and sha256sum both check it);
# - abseil + protobuf: the source distribution of the Python package
#   grpcio-tools of the same gRPC release, fetched with pip, as
#   scripts/protobuf_fixture.sh does.
# OpenSSL and zlib are the system's (Debian's libssl-dev, zlib1g-dev).
# scripts/grpc_fixture/CMakeLists.txt builds them.
#
# ARENARPC_CACHE_DIR    where sources and prefixes are kept (default
#                       ~/.cache/arenarpc)
#
# The cache key is both packages' sha256, the build recipe (`recipe` below,
# the files in scripts/grpc_fixture/ and scripts/protobuf_fixture/), the
# variant and the compiler: a warm cache is reused as is, anything else
# builds afresh. ARENARPC_FIXTURE_CCACHE=1 compiles through ccache (for work
# on the recipe). Exit code 3 (and a message) when the sources cannot be had
# (no pip or cargo, no registry).
set -euo pipefail
fixture_name=grpc_fixture fixture_nice=15
source "$(dirname "$0")/fixture_lib.sh"
variant="${1:-release}"
case "$variant" in
  # -O2, as distributions build gRPC (Debian's 1.51 is the other release
  # the adapters are tested against).
  release) flags=""; opt="-O2" ;;
  *) echo "usage: $0 [release]" >&2; exit 2 ;;
esac

grpc_release=1.56.2
crate=grpcio-sys
crate_version=0.13.0+1.56.2-patched
crate_sha256=b3dae9132320ae1b03ea55b5ddc88ca72a31fb85fa631a241a40157f5feffe43
package=grpcio-tools
package_version=1.56.2
package_sha256=82af2f4040084141a732f0ef1ecf3f14fdf629923d74d850415e4d09a077e77a
protobuf_release=23.1

repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${ARENARPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc}"
crate_file="$cache/sources/$crate-$crate_version.crate"
sdist="$cache/sources/grpcio-tools-$package_version.tar.gz"

# Bump `recipe` when the build below changes.
recipe=2
if fixture_prefix "grpc-$grpc_release-$variant" \
    "$crate_sha256 $package_sha256 $recipe $variant $flags $opt" \
    "$repo"/scripts/grpc_fixture/* "$repo"/scripts/protobuf_fixture/*; then
  echo "$prefix"
  exit 0
fi

mkdir -p "$cache/sources"
if [ ! -f "$crate_file" ]; then
  # cargo fetches by name and version into its own cache (CARGO_HOME), with
  # the registry's checksum written to Cargo.lock.
  fetch="$(mktemp -d "$cache/sources/cargo.XXXXXX")"
  mkdir -p "$fetch/src"
  : > "$fetch/src/lib.rs"
  printf '[package]\nname = "arenarpc-grpc-fixture-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' \
    "$crate" "$crate_version" > "$fetch/Cargo.toml"
  echo "grpc_fixture: cargo fetch $crate $crate_version" >&2
  if ! (cd "$fetch" && cargo fetch --target x86_64-unknown-linux-gnu >&2); then
    rm -rf "$fetch"
    echo "grpc_fixture: could not fetch $crate $crate_version with cargo" >&2
    exit 3
  fi
  if ! grep -A3 "^name = \"$crate\"" "$fetch/Cargo.lock" |
      grep -q "^checksum = \"$crate_sha256\""; then
    rm -rf "$fetch"
    echo "grpc_fixture: the registry's $crate $crate_version is not the pinned one" >&2
    exit 1
  fi
  rm -rf "$fetch"
  found="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$crate-$crate_version.crate" | head -n1)"
  cp "$found" "$crate_file.tmp"
  mv "$crate_file.tmp" "$crate_file"
fi
# pip prepares the sdist's metadata, running its setup.py, which imports
# pkg_resources: setuptools 81 dropped it.
fixture_pip_sdist "$package" "$package_version" "$package_sha256" "$sdist" \
  'setuptools<81' || exit $?
fixture_check_sha256 "$crate_sha256" "$crate_file" || exit 1
fixture_check_sha256 "$package_sha256" "$sdist" || exit 1

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "grpc_fixture: building gRPC $grpc_release + protobuf $protobuf_release" \
     "($variant, from $crate $crate_version and $package $package_version)" \
     "into $prefix" >&2
start=$SECONDS
tar -xzf "$crate_file" -C "$work"
tar -xzf "$sdist" -C "$work"
grpc_src="$work/$crate-$crate_version/grpc"
src="$work/grpcio-tools-$package_version"
if ! grep -q "^set(gRPC_CPP_VERSION *\"$grpc_release\")" "$grpc_src/CMakeLists.txt"; then
  echo "grpc_fixture: $crate $crate_version does not carry gRPC $grpc_release" >&2
  exit 1
fi
fixture_check_protobuf "$src" "$protobuf_release" || exit 1
# This sdist keeps utf8_range beside protobuf, not under it as later ones
# do (where the protobuf fixture's recipe looks), and protobuf 23 needs only
# its C++ half (utf8_validity.cc, which scripts/grpc_fixture/CMakeLists.txt
# builds): the recipe's C library (utf8_range.c, since protobuf 27) is left
# empty.
utf8="$src/third_party/protobuf/third_party/utf8_range"
mkdir -p "$utf8"
for f in utf8_validity.h utf8_validity.cc utf8_range.h; do
  ln -s "$src/third_party/utf8_range/$f" "$utf8/$f"
done
echo '/* Not in this release: protobuf 23 uses utf8_validity.cc. */' > "$utf8/utf8_range.c"
stage="$work/prefix"
jobs="$(nproc)"
[ "$jobs" -gt 2 ] || jobs=2
fixture_launcher "$work"
fixture_build "$repo/scripts/grpc_fixture" -DSDIST="$src" -DGRPC_SOURCE="$grpc_src" ||
  exit 1
# The plugin and protoc must run (they generate the tests' code).
{
  "$stage/bin/protoc" --version &&
  "$stage/bin/protoc" --plugin=protoc-gen-grpc="$stage/bin/grpc_cpp_plugin" \
    --grpc_out="$work" -I "$grpc_src/src/proto/grpc/health/v1" health.proto
} >> "$work/build.log" 2>&1 || { fixture_failed; exit 1; }
rm -rf "$prefix"
mv "$stage" "$prefix"
touch "$prefix/.complete"
echo "grpc_fixture: built in $((SECONDS - start)) s" >&2
echo "$prefix"

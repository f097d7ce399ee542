#!/usr/bin/env bash
# Builds abseil + protobuf from unmodified source tarballs into a cache and
# prints the install prefix (the last line of stdout). The tests and
# benchmarks use it to check arenarpc's core against a modern protobuf
# (docs/PROTOBUF_VERSIONS.md); it is a test fixture, never part of the
# library.
#
#   scripts/protobuf_fixture.sh [asan|protoc|release]
#
# ARENARPC_THIRD_PARTY  directory with protobuf-*-src.tar.gz,
#                       abseil-cpp-*-src.tar.gz and SHA256SUMS
#                       (default: ../shared/third_party next to the repo)
# ARENARPC_CACHE_DIR    where prefixes are kept (default ~/.cache/arenarpc)
#
# The cache key is the tarballs' sha256 (from SHA256SUMS, checked), the
# variant and the compiler: a warm cache is reused as is, anything else
# builds afresh (docs/PROTOBUF_VERSIONS.md has the times).
# Exit code 3 (and a message) when the tarballs are not there.
set -euo pipefail
variant="${1:-release}"
# asan: everything instrumented (protobuf's inline code poisons arena memory
# and abseil's containers change layout under ASan, so the runtime and its
# users must agree), -O1 as ASan builds usually are, no protoc (the protoc
# variant's generates its code). protoc: to run protoc only, built quickly
# (-O1; libprotoc needs upb). release: -O3, for benchmarks.
case "$variant" in
  asan) flags="-fsanitize=address -fno-omit-frame-pointer"; opt="-O1" ;;
  protoc) flags=""; opt="-O1" ;;
  release) flags=""; opt="-O3" ;;
  *) echo "usage: $0 [asan|protoc|release]" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
src="${ARENARPC_THIRD_PARTY:-$repo/../shared/third_party}"
cache="${ARENARPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc}"

shopt -s nullglob
pb_tar=("$src"/protobuf-*-src.tar.gz)
absl_tar=("$src"/abseil-cpp-*-src.tar.gz)
shopt -u nullglob
if [ ${#pb_tar[@]} -ne 1 ] || [ ${#absl_tar[@]} -ne 1 ] || [ ! -f "$src/SHA256SUMS" ]; then
  echo "protobuf_fixture: no protobuf/abseil source tarballs in $src" >&2
  exit 3
fi
(cd "$src" && sha256sum --quiet -c SHA256SUMS) >&2 || {
  echo "protobuf_fixture: $src does not match its SHA256SUMS" >&2
  exit 1
}

cxx="${CXX:-c++}"
# Bump `recipe` when the build below changes.
recipe=5
key_text="$(cat "$src/SHA256SUMS"; echo "$recipe $variant $flags $opt";
            "$cxx" --version | head -n1)"
key="$(printf '%s' "$key_text" | sha256sum | cut -c1-16)"
pb_name="$(basename "${pb_tar[0]}" -src.tar.gz)"
prefix="$cache/$pb_name-$variant-$key"
# The prefix is built in a temporary directory and moved: its pkg-config
# files name the temporary one (CMake's config files are relocatable).
# Idempotent, so a prefix cached before this fix is repaired on use.
fix_pc_files() {
  local pc
  for pc in "$prefix"/lib/pkgconfig/*.pc; do
    [ -f "$pc" ] || continue
    sed -i -E "s#$cache/build\.[A-Za-z0-9]+/prefix#$prefix#g" "$pc"
  done
}
if [ -f "$prefix/.complete" ]; then
  fix_pc_files
  echo "protobuf_fixture: cached $prefix" >&2
  echo "$prefix"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "protobuf_fixture: building $pb_name ($variant) into $prefix" >&2
start=$SECONDS
tar -xzf "${absl_tar[0]}" -C "$work"
tar -xzf "${pb_tar[0]}" -C "$work"
absl_dir=("$work"/abseil-cpp-*)
pb_dir=("$work"/protobuf-*)
stage="$work/prefix"
jobs="$(nproc)"
# protoc runs during the build; under ASan its exit-time leaks are not ours.
export ASAN_OPTIONS=detect_leaks=0
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON
        "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags"
        "-DCMAKE_C_FLAGS_RELEASE=$opt -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=$opt -DNDEBUG"
        "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags"
        -DCMAKE_INSTALL_PREFIX="$stage" -DCMAKE_PREFIX_PATH="$stage")
pb_common=("${common[@]}")
if [ "$variant" = asan ]; then
  # The runtime only: protoc from the release variant generates the code
  # (an ASan libprotobuf under an uninstrumented libprotoc crashes: abseil's
  # containers change layout under ASan).
  pb_common+=(-Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_BUILD_LIBUPB=OFF)
fi
# One && chain: `set -e` does not apply inside a list followed by ||.
{
  cmake -S "${absl_dir[0]}" -B "$work/absl-build" "${common[@]}" \
    -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON &&
  cmake --build "$work/absl-build" -j "$jobs" &&
  cmake --install "$work/absl-build" &&
  cmake -S "${pb_dir[0]}" -B "$work/pb-build" "${pb_common[@]}" \
    -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_LOCAL_DEPENDENCIES_ONLY=ON &&
  cmake --build "$work/pb-build" -j "$jobs" &&
  cmake --install "$work/pb-build"
} > "$work/build.log" 2>&1 || {
  tail -n 60 "$work/build.log" >&2
  echo "protobuf_fixture: build failed (log above)" >&2
  exit 1
}
rm -rf "$prefix"
mv "$stage" "$prefix"
fix_pc_files
touch "$prefix/.complete"
echo "protobuf_fixture: built in $((SECONDS - start)) s" >&2
echo "$prefix"

# What the test fixtures' scripts share (scripts/protobuf_fixture.sh,
# scripts/grpc_fixture.sh): sourced, never run. Each function reports on
# stderr, prefixed with $fixture_name.

# fixture_pip_sdist PACKAGE VERSION SHA256 DEST [BUILD_CONSTRAINT]
# The source distribution of a Python package, fetched once with pip (the
# registry's client; --require-hashes checks it on download) into DEST.
# BUILD_CONSTRAINT, if given, constrains what pip installs to prepare the
# sdist's metadata. Returns 3 when pip cannot fetch it.
fixture_pip_sdist() {
  local package="$1" version="$2" sha256="$3" dest="$4" constraint="${5:-}"
  [ ! -f "$dest" ] || return 0
  local download
  download="$(mktemp -d "$(dirname "$dest")/download.XXXXXX")"
  printf '%s==%s --hash=sha256:%s\n' "$package" "$version" "$sha256" \
    > "$download/requirements.txt"
  local env=()
  if [ -n "$constraint" ]; then
    echo "$constraint" > "$download/build-constraints.txt"
    env=("PIP_CONSTRAINT=$download/build-constraints.txt")
  fi
  echo "$fixture_name: pip download $package==$version (sdist)" >&2
  if ! env "${env[@]}" python3 -m pip download --no-deps --no-binary :all: \
      --require-hashes -r "$download/requirements.txt" -d "$download" >&2; then
    rm -rf "$download"
    echo "$fixture_name: could not fetch $package==$version with pip" >&2
    return 3
  fi
  mv "$download"/*.tar.gz "$dest"
  rm -rf "$download"
}

# fixture_check_sha256 SHA256 FILE: fails (1) unless FILE has that sha256.
fixture_check_sha256() {
  echo "$1  $2" | sha256sum --quiet -c >&2 || {
    echo "$fixture_name: $2 does not have the pinned sha256" >&2
    return 1
  }
}

# fixture_launcher WORK: sets the array `launcher` to the CMake arguments
# that compile through ccache when ARENARPC_FIXTURE_CCACHE=1 (for work on a
# recipe; off by default, so the fixture's objects do not evict the CI's).
# Paths under WORK are hashed relative, so each temporary directory hits.
fixture_launcher() {
  launcher=()
  if [ "${ARENARPC_FIXTURE_CCACHE:-0}" = 1 ]; then
    export CCACHE_BASEDIR="$1" CCACHE_NOHASHDIR=1
    export CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}"
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
}

# fixture_check_protobuf SRC RELEASE: fails (1) unless the unpacked
# grpcio-tools sdist SRC carries protobuf RELEASE (35.1 is C++ runtime
# 7.35.1, GOOGLE_PROTOBUF_VERSION 7035001; 23.1 is 4.23.1, 4023001).
fixture_check_protobuf() {
  local digits
  digits="$(printf '%03d%03d' "${2%.*}" "${2#*.}")"
  grep -Eq "GOOGLE_PROTOBUF_VERSION [0-9]+$digits\$" \
      "$1/third_party/protobuf/src/google/protobuf/stubs/common.h" || {
    echo "$fixture_name: $(basename "$1") does not carry protobuf $2" >&2
    return 1
  }
}

# fixture_build RECIPE_DIR [CMAKE_ARGS...]: configures the recipe
# (scripts/<fixture>/CMakeLists.txt) in $work/build with the variant's
# $flags and $opt and the $launcher, builds it with $jobs jobs under
# `nice -n $fixture_nice`, and installs it into $stage; the output goes to
# $work/build.log, whose end is shown on failure (1).
fixture_build() {
  local recipe="$1"
  shift
  {
    nice -n "$fixture_nice" cmake -S "$recipe" -B "$work/build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" \
      "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
      "-DCMAKE_C_FLAGS_RELEASE=$opt -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=$opt -DNDEBUG" \
      "-DCMAKE_EXE_LINKER_FLAGS=$flags" -DCMAKE_INSTALL_PREFIX="$stage" &&
    nice -n "$fixture_nice" cmake --build "$work/build" -j "$jobs" &&
    cmake --install "$work/build"
  } > "$work/build.log" 2>&1 || fixture_failed
}

# fixture_failed: the end of $work/build.log and a message; returns 1.
fixture_failed() {
  tail -n 60 "$work/build.log" >&2
  echo "$fixture_name: build failed (log above)" >&2
  return 1
}

# fixture_prefix NAME KEY_WORDS RECIPE_FILES...: sets `prefix` to
# $cache/NAME-<key>, the key hashing KEY_WORDS (the pinned sha256s, the
# recipe's number, the variant and its flags), the recipe's files and the
# compiler's version; returns 0 (and says so) when that prefix is complete.
fixture_prefix() {
  local name="$1" words="$2" key_text
  shift 2
  key_text="$(echo "$words"; cat "$@"; "${CXX:-c++}" --version | head -n1)"
  prefix="$cache/$name-$(printf '%s' "$key_text" | sha256sum | cut -c1-16)"
  if [ ! -f "$prefix/.complete" ]; then
    # One build of a key at a time (two checkouts' test runs at once): the
    # lock is held until this script exits; a second run waits, then finds
    # the first one's prefix.
    mkdir -p "$cache"
    exec 9> "$prefix.lock"
    if ! flock -n 9; then
      echo "$fixture_name: waiting for another build of $prefix" >&2
      flock 9
    fi
    [ -f "$prefix/.complete" ] || return 1
  fi
  echo "$fixture_name: cached $prefix" >&2
}

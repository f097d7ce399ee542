#!/usr/bin/env bash
# Provenance of bench/corpus/protos: downloads the packages the corpus protos
# were copied from, with each registry's own client, and checks that every
# committed file is byte-for-byte the file inside its package (sha256).
#
#   bench/corpus/fetch_protos.sh            # verify (exit 1 on any mismatch)
#   bench/corpus/fetch_protos.sh --copy     # verify the packages, then copy
#                                           # their files into protos/
#
# Not run by the build: the protos are committed. Needs apt-get (Debian 12),
# pip, npm, cargo, go (the Go module proxy's client) and network access to their
# registries. Everything is downloaded into a temporary directory that is
# removed at exit.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dest="${here}/protos"
copy=0
[[ "${1:-}" == "--copy" ]] && copy=1

# registry | package | version | path inside the package | path under protos/ | sha256
manifest=$(cat <<'EOF'
debian|grpc-proto|0.0~git20230110.6956c0e-1|usr/share/grpc-proto/grpc/health/v1/health.proto|grpc/health/v1/health.proto|8d44f54645557c1e10ba0da377883fd4d24ad994aff4f2139d61b7e9f0ece511
debian|golang-etcd-server-dev|3.4.23-4|usr/share/gocode/src/go.etcd.io/etcd/etcdserver/etcdserverpb/rpc.proto|etcd/etcdserver/etcdserverpb/rpc.proto|a470c957a2aff910febf79379aff13bbcf970b7815a3ec0bfe0d621d9278c478
debian|golang-etcd-server-dev|3.4.23-4|usr/share/gocode/src/go.etcd.io/etcd/mvcc/mvccpb/kv.proto|etcd/mvcc/mvccpb/kv.proto|76b0d596ecc8dd1b535be683777910a5b4fe0705fb57baccacfcc7d98d11821e
debian|golang-etcd-server-dev|3.4.23-4|usr/share/gocode/src/go.etcd.io/etcd/auth/authpb/auth.proto|etcd/auth/authpb/auth.proto|443e661f9e423d3376d513e76446e957ae0132c6f63fff4510fde3c7a587be05
debian|golang-github-gogo-protobuf-dev|1.3.2-3|usr/share/gocode/src/github.com/gogo/protobuf/gogoproto/gogo.proto|gogoproto/gogo.proto|f2f77edf7de807ded7884813d851656f4ccb18262db717a8f31061995f3e7324
pypi|googleapis-common-protos|1.76.0|google/api/annotations.proto|google/api/annotations.proto|e79ea741cb605a65e78ca322174764a4af9fde1962c1631e12b84c4934ba9a6c
pypi|googleapis-common-protos|1.76.0|google/api/http.proto|google/api/http.proto|ead99129aa15dd5f6233942030c72eec33bc0d7b1c7c260dc143293ef66c5b78
pypi|googleapis-common-protos|1.76.0|google/api/client.proto|google/api/client.proto|5e9fc117290fe7d3472791543c979bec7cf4497f3fe6ffaf9de9ae99cc4f1804
pypi|googleapis-common-protos|1.76.0|google/api/field_behavior.proto|google/api/field_behavior.proto|e2a1ac88c49909d4579bacbb18519085e82da32c2c7bb15c31037f3be19f667f
pypi|googleapis-common-protos|1.76.0|google/api/resource.proto|google/api/resource.proto|815d51eada4341bf01672b474b5ec0abbea190e8df9f4aa26a0c96dbdad2993b
pypi|googleapis-common-protos|1.76.0|google/api/launch_stage.proto|google/api/launch_stage.proto|68e22c9821227b4e84c7029569fce1055c21e6ccab991e0986bc75f12ef4dd82
pypi|googleapis-common-protos|1.76.0|google/api/monitored_resource.proto|google/api/monitored_resource.proto|cf7d64333f5b6287adb0eb8bdbe552bc38813a85ce8134c39cbe1c56be7e9cd2
pypi|googleapis-common-protos|1.76.0|google/api/label.proto|google/api/label.proto|dadfde6d5ecce36b7e3232e2439a0d5ac83357500732a2b7760e89cc66111806
pypi|googleapis-common-protos|1.76.0|google/rpc/status.proto|google/rpc/status.proto|f5bfd262e6705c7ae73f32e0ad8ee20ce8c0a2578df8c4f76ebf76b572f295ed
pypi|googleapis-common-protos|1.76.0|google/logging/type/http_request.proto|google/logging/type/http_request.proto|cf16052273c8732143ad6418c0de059aa49a3b2f402f62e6a7c63491436cc465
pypi|googleapis-common-protos|1.76.0|google/logging/type/log_severity.proto|google/logging/type/log_severity.proto|cea9c15d29125773c61b4b018ddbc9b3d7f088a2f737d6a74e38f1b607dda51e
npm|google-proto-files|5.0.3|package/google/pubsub/v1/pubsub.proto|google/pubsub/v1/pubsub.proto|6ca4f42af1fc90eb21237984d6044e0ae8fa24d907372c9b44315fa353be2136
npm|google-proto-files|5.0.3|package/google/pubsub/v1/schema.proto|google/pubsub/v1/schema.proto|f926c4262d82c2bc8b60645a69f37f8581866db68f9016c30634639dd8c95450
npm|google-proto-files|5.0.3|package/google/logging/v2/logging.proto|google/logging/v2/logging.proto|5dfa5e74fc92503ba5e9d5e9764ada4a97f72663aff025ac39176e722c161df8
npm|google-proto-files|5.0.3|package/google/logging/v2/log_entry.proto|google/logging/v2/log_entry.proto|5e30c10f4150d0ff2099bbe259616913ab63ca8d3c4a99365e7942d2c54d825a
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/common/v1/common.proto|opentelemetry/proto/common/v1/common.proto|833db934b8b08be193940aa412f26a9ed8c564dfa8ea3517dc583f5064142731
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/resource/v1/resource.proto|opentelemetry/proto/resource/v1/resource.proto|e0a7cdc0ffcfeffaa2606e8611839735ebffaa2d6acdf33e9356f2c48ae692d3
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/trace/v1/trace.proto|opentelemetry/proto/trace/v1/trace.proto|c3fb1385c90b8bc08a2a462e28b5d0c422c7b524a839f75f75e3cd9f64f36956
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/metrics/v1/metrics.proto|opentelemetry/proto/metrics/v1/metrics.proto|d0a53dda45ad100edbf25675f5b339ce8bf689bdc51816f8cf19b0d51464e1a4
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/logs/v1/logs.proto|opentelemetry/proto/logs/v1/logs.proto|6b2e1eba0c01ae2da47927c63eabfaf3f151ee7ad846f2cdf3b2b71fb61004fe
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/collector/trace/v1/trace_service.proto|opentelemetry/proto/collector/trace/v1/trace_service.proto|03c8cc4e3e101087d884392d6eda32152ad5cd696e6344f50deaa59804a75c7a
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/collector/metrics/v1/metrics_service.proto|opentelemetry/proto/collector/metrics/v1/metrics_service.proto|2bb3c6adee5f7609c8a32c5e4b1ec57057320015e298e9cf136699a42abc24d7
crates|opentelemetry-proto|0.33.1|src/proto/opentelemetry-proto/opentelemetry/proto/collector/logs/v1/logs_service.proto|opentelemetry/proto/collector/logs/v1/logs_service.proto|0252687fc8f59d139ced709d383e83678e9bd4957bdbe76077242f1c32363fa5
crates|horaedbproto|2.0.0|protos/storage.proto|storage.proto|c32cd73e9782e7fe62510066c96d25682459886f584ff90c557e160b8860255c
crates|horaedbproto|2.0.0|protos/common.proto|common.proto|df72b01dd5e4cf37ad3aecafcefe398c0abb036f3c9436677de7757192fab1ea
crates|horaedbproto|2.0.0|protos/prometheus.proto|prometheus.proto|1f143e123c6e8413249f14342a2b2150e212c0f463d9af21aeeae6c09fbdd0c3
goproxy|github.com/cortexproject/cortex|v1.19.0|github.com/cortexproject/cortex@v1.19.0/pkg/cortexpb/cortex.proto|github.com/cortexproject/cortex/pkg/cortexpb/cortex.proto|63e16ea39e8e6822a09ae7acbcc97515232a0df3d13eb86faf9ed4df3cf1138a
goproxy|github.com/cortexproject/cortex|v1.19.0|github.com/cortexproject/cortex@v1.19.0/pkg/distributor/distributorpb/distributor.proto|github.com/cortexproject/cortex/pkg/distributor/distributorpb/distributor.proto|c7da08f6849f7054acc581adf23ad476be274ace1b03d4b1e1762d8a9069db60
EOF
)

die() { echo "fetch_protos: $*" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# Downloads and unpacks one package into ${work}/<registry>/<package>-<version>
# (once), and prints that directory.
unpack() {
  local registry="$1" package="$2" version="$3"
  local dir="${work}/${registry}/${package}-${version}"
  if [[ -d "${dir}" ]]; then echo "${dir}"; return; fi
  mkdir -p "${dir}" "${work}/dl"
  case "${registry}" in
    debian)
      (cd "${work}/dl" && apt-get download -q "${package}=${version}" >&2) ||
        die "apt-get download ${package}=${version} (run apt-get update first?)"
      dpkg-deb -x "${work}/dl/${package}_${version//[:]/%3a}_"*.deb "${dir}"
      ;;
    pypi)
      pip download -q --no-deps --only-binary=:all: -d "${work}/dl" \
        "${package}==${version}" >&2
      local wheel
      wheel="$(ls "${work}/dl/"*.whl | grep -i "/${package//-/_}-${version}-")"
      (cd "${dir}" && python3 -m zipfile -e "${wheel}" .)
      ;;
    npm)
      (cd "${work}/dl" && npm pack --silent "${package}@${version}" >/dev/null)
      tar -xzf "${work}/dl/${package}-${version}.tgz" -C "${dir}"
      ;;
    crates)
      # cargo has no "download one crate": fetch it as the dependency of a
      # throwaway package, then take it from the unpacked registry sources.
      local proj="${work}/cargo-${package}"
      mkdir -p "${proj}/src"
      : > "${proj}/src/lib.rs"
      printf '[package]\nname = "corpus-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = { version = "=%s", default-features = false }\n' \
        "${package}" "${version}" > "${proj}/Cargo.toml"
      (cd "${proj}" && CARGO_HOME="${work}/cargo-home" \
        cargo fetch -q --target x86_64-unknown-linux-gnu >&2)
      local src
      src="$(ls -d "${work}/cargo-home/registry/src/"*/"${package}-${version}")"
      cp -a "${src}/." "${dir}/"
      ;;
    goproxy)
      # A Go module through the Go module proxy's own client (go mod
      # download, the machine's GOPROXY); paths start with <module>@<version>/.
      local moddir
      moddir="$(cd "${work}" && GOMODCACHE="${work}/gomod" GOFLAGS=-modcacherw \
        GO111MODULE=on go mod download -json "${package}@${version}" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')" ||
        die "go mod download ${package}@${version}"
      mkdir -p "${dir}/${package}@${version}"
      cp -a "${moddir}/." "${dir}/${package}@${version}/"
      ;;
    *) die "unknown registry ${registry}" ;;
  esac
  echo "${dir}"
}

bad=0
while IFS='|' read -r registry package version path target sum; do
  [[ -z "${registry}" ]] && continue
  dir="$(unpack "${registry}" "${package}" "${version}")"
  file="${dir}/${path}"
  [[ -f "${file}" ]] || { echo "MISSING ${registry} ${package} ${version}: ${path}"; bad=1; continue; }
  got="$(sha256sum "${file}" | cut -d' ' -f1)"
  if [[ "${got}" != "${sum}" ]]; then
    echo "SHA256 ${target}: package has ${got}, manifest says ${sum}"; bad=1; continue
  fi
  if (( copy )); then
    mkdir -p "$(dirname "${dest}/${target}")"
    cp "${file}" "${dest}/${target}"
  fi
  committed="$(sha256sum "${dest}/${target}" 2>/dev/null | cut -d' ' -f1 || true)"
  if [[ "${committed}" != "${sum}" ]]; then
    echo "DIFFERS ${target}: committed file is not the package's"; bad=1; continue
  fi
  echo "ok ${target}  (${registry} ${package} ${version})"
done <<< "${manifest}"

# Nothing in protos/ that the manifest does not account for.
while IFS= read -r f; do
  grep -q "|${f}|" <<< "${manifest}" || { echo "UNLISTED protos/${f}"; bad=1; }
done < <(cd "${dest}" && find . -type f -name '*.proto' | sed 's|^\./||' | sort)

(( bad == 0 )) || die "mismatches above"
echo "all corpus protos match their packages"

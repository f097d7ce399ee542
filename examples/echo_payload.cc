// arenarpc_echo_payload: writes one serialized EchoRequest, the payload of
// the RPC benchmark (bench/rpc/rpc_bench.py), so that anyone can replay the
// exact load with ghz:
//
//   arenarpc_echo_payload --scale=100 --seed=7 --out=request.bin
//   ghz --insecure --async --rps=750 --duration=30s
//       --call=arenarpc.echo.EchoService.Echo --binary-file=request.bin
//       127.0.0.1:PORT
//
// The same (scale, seed) always gives the same bytes.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "echo_service.h"

ABSL_FLAG(int, scale, 100,
          "payload scale: 100 is ~130 KB, ~11,000 byte fields");
ABSL_FLAG(int, seed, 7, "seed of the deterministic content");
ABSL_FLAG(std::string, out, "", "output file (required)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string out = absl::GetFlag(FLAGS_out);
  const int scale = absl::GetFlag(FLAGS_scale);
  if (out.empty() || scale < 1) {
    std::fprintf(
        stderr,
        "usage: arenarpc_echo_payload --scale=N (>= 1) --seed=S --out=FILE\n");
    return 2;
  }
  arenarpc::echo::EchoRequest request;
  arenarpc::echo::BuildEchoRequest(
      scale, static_cast<uint32_t>(absl::GetFlag(FLAGS_seed)), &request);
  std::string bytes;
  if (!request.SerializeToString(&bytes)) {
    std::fprintf(stderr, "serialization failed\n");
    return 1;
  }
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 1;
  }
  int fields = request.payload_size();
  for (const auto& r : request.results()) {
    fields += 1;
    for (const auto& item : r.items()) fields += item.terms_size();
  }
  std::printf("wrote %s: %zu bytes, %d byte fields\n", out.c_str(),
              bytes.size(), fields);
  return 0;
}

// Built with `pkg-config --cflags --libs arenarpc-grpc` only: the gRPC
// adapters' stats link and render.
#include <cstdio>
#include <string>

#include "arenarpc/grpc/stats.h"

int main() {
  const std::string text = arenarpc::RenderPrometheusStats();
  if (text.find("arenarpc_grpc_calls_total") == std::string::npos) return 1;
  std::puts("pkg-config grpc ok");
  return 0;
}

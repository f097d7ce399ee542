// Built against an installed arenarpc: exits 0 only if the library works.
#include <google/protobuf/struct.pb.h>

#include <cstdio>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/metrics.h"
#include "arenarpc/page_pool.h"
#include "arenarpc/version.h"

int main() {
  std::string wire;
  {
    arenarpc::ScopedArena arena;
    auto* value = arena.Create<google::protobuf::Struct>();
    (*value->mutable_fields())["hello"].set_string_value("world");
    if (value->GetArena() != arena.arena()) return 1;
    wire = value->SerializeAsString();
  }
  google::protobuf::Struct parsed;
  if (!parsed.ParseFromString(wire)) return 2;
  if (parsed.fields().at("hello").string_value() != "world") return 3;
  if (arenarpc::PagePool::Default().Stats().os_pages_allocated == 0) return 4;
  // Core metrics, no gRPC linked.
  if (arenarpc::PrometheusText().find("arenarpc_arena_acquired_total 1") ==
      std::string::npos) {
    return 5;
  }
#ifdef ARENARPC_PACKAGE_VERSION
  if (std::string(arenarpc::kVersion) != ARENARPC_PACKAGE_VERSION) return 6;
#endif
  std::puts("consumer ok");
  return 0;
}

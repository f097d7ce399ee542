// What an install gives a server's methods: the allocation mode, kAuto's
// learning budget, shadow measurement, giving memory back after a burst,
// and a cap on pooled memory. Implicit from a mode.
//
//   arenarpc::ServerOptions options(arenarpc::AllocationMode::kAuto);
//   options.automatic.max_cpu_share = 0.01;   // kAuto learns on 1 % of CPU
//   options.idle_trim.idle_ms = 1000;         // trim after 1 s without calls
//   options.max_pooled_bytes = 256 << 20;     // then heap messages
//   options.max_calls_in_flight = 16;         // then RESOURCE_EXHAUSTED
//   r = mysvc::InstallMyServiceAllocators(&service, options);
//
// Process-wide settings: `automatic.max_cpu_share`, `idle_trim.idle_ms`
// and `max_pooled_bytes`; when installs set different values, the smallest
// wins (for idle_ms and max_pooled_bytes 0 means "off" and never wins; a
// max_cpu_share of 0 does). The mode, `automatic.recheck_after_s` and
// `shadow.sample_one_in` are per method.
//
// Thread safety: a plain options struct, copied by the install.
// Lifetime: independent of the service and the server.
#ifndef ARENARPC_GRPC_SERVER_OPTIONS_H_
#define ARENARPC_GRPC_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/shadow.h"

namespace arenarpc {

// kAuto (arenarpc/allocation_mode.h): per method, a few calls are served in
// each of heap, arena and reuse and timed where they run; the cheapest by
// median is kept and checked again every `recheck_after_s` (docs/MODES.md).
// `max_cpu_share`: a call is a trial only while what trials cost over the
// cheapest mode fits this share of the process's CPU plus a 5 ms credit
// (0: arena once the credit is spent).
// `prior`: a method whose calls carry `min_bytes` or more does not try heap
// unless the cheapest mode costs under `heap_ns_per_byte`. 0: off.
// `decisions_path` (empty: off): a JSON file read at install whose matching
// entry starts the method settled (one that does not: a line on stderr);
// with `save_decisions`, decisions are written to the first install's path
// off the call path, at most once a second (arenarpc/grpc/auto_decisions.h).
struct AutoPriorOptions {
  double min_bytes = 48 << 10;
  double heap_ns_per_byte = 0.5;
};

struct AutoOptions {
  double max_cpu_share = 0.02;
  double recheck_after_s = 30;
  AutoPriorOptions prior;
  std::string decisions_path;
  bool save_decisions = true;
};

// Giving memory back after a burst: after idle_ms without calls, streamed
// messages or background work, the background thread trims the pools,
// arenas, page caches and (glibc) the heap once (docs/OPERATE.md, "Memory").
struct IdleTrimOptions {
  int idle_ms = 0;  // 0: off
};

struct ServerOptions {
  ServerOptions(AllocationMode m = AllocationMode::kArena)  // NOLINT
      : mode(m) {}
  AllocationMode mode;
  ShadowOptions shadow;   // arenarpc/grpc/shadow.h
  AutoOptions automatic;  // kAuto's budget, prior, decisions file
  IdleTrimOptions idle_trim;
  // Cap on PagePool::Default()'s mapped bytes; 0: none. While over it, new
  // calls get heap messages (GrpcStats::over_cap_heap_calls) and the depots
  // are trimmed at once; calls are never failed (docs/OPERATE.md).
  uint64_t max_pooled_bytes = 0;
  // Per method (sync and callback; on the callback API only installs that
  // name the method, as the plugin's do): a call arriving while this many
  // are in flight is answered RESOURCE_EXHAUSTED before its request is
  // parsed (counted: ServedMethodStats::shed_limit). 0: no limit.
  int max_calls_in_flight = 0;
};

namespace internal {
// Starts idle trimming and sets the pooled-memory cap (src/grpc/idle_trim.cc).
void ApplyServerLimits(const ServerOptions& options);
}  // namespace internal

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_SERVER_OPTIONS_H_

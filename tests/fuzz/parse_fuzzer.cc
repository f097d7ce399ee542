// libFuzzer harness: hostile bytes parsed the arenarpc way must give what a
// fresh heap parse gives, and leave the pools consistent.
//
//   ARENARPC_FUZZ_MODE 0: parse into a message on a ScopedArena
//                      1: PooledMessage::ParseFrom
//                      2: a pooled message the caller parses (protobuf's own
//                         ParseFromArray), then returns
//
// Every input is parsed as two types: OTLP ExportTraceServiceRequest (the
// corpus, bench/corpus) and the echo service's EchoRequest (examples/). For
// each, a heap message is the reference: the arenarpc parse must succeed
// exactly when it does, with the same serialization (bytes, not
// MessageDifferencer: NaN doubles compare unequal to themselves; neither type
// has a map field, so serialization is deterministic). After
// each input no pooled message is in use, and every page held is accounted
// for by an idle arena or an idle pooled instance. ASan+UBSan catch memory
// errors; LeakSanitizer runs at exit.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/page_pool.h"
#include "echo.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

#ifndef ARENARPC_FUZZ_MODE
#error "define ARENARPC_FUZZ_MODE (0, 1 or 2)"
#endif

namespace {

using OtlpTrace =
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using Echo = arenarpc::echo::EchoRequest;

void Fail(const char* what, const char* type) {
  std::fprintf(stderr, "parse_fuzzer: %s (%s)\n", what, type);
  std::abort();
}

template <class T>
arenarpc::MessagePool<T>& Pool() {
  static auto* pool = new arenarpc::MessagePool<T>();  // lives to the end
  return *pool;
}

// Parses `wire` the arenarpc way; returns whether it parsed and, if so, the
// serialization of the result.
template <class T>
bool ParseArenarpc(std::string_view wire, std::string* out) {
  bool ok = false;
  if (ARENARPC_FUZZ_MODE == 0) {
    arenarpc::ScopedArena arena;
    T* m = arena.Create<T>();
    ok = m->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
    if (ok) *out = m->SerializeAsString();
  } else if (ARENARPC_FUZZ_MODE == 1) {
    arenarpc::PooledMessage<T> m = Pool<T>().Acquire();
    ok = m.ParseFrom(wire);
    if (ok) *out = m->SerializeAsString();
    if (!ok && m->ByteSizeLong() != 0) {
      Fail("ParseFrom failed but left content",
           T::descriptor()->name().c_str());
    }
  } else {
    arenarpc::PooledMessage<T> m = Pool<T>().Acquire();
    ok = m->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
    if (ok) *out = m->SerializeAsString();
  }
  return ok;
}

template <class T>
void Check(std::string_view wire) {
  const char* type = T::descriptor()->name().c_str();
  T reference;
  const bool want =
      reference.ParseFromArray(wire.data(), static_cast<int>(wire.size()));
  std::string got;
  const bool ok = ParseArenarpc<T>(wire, &got);
  if (ok != want)
    Fail(want ? "arenarpc failed, heap parsed" : "arenarpc parsed, heap failed",
         type);
  if (ok && got != reference.SerializeAsString()) Fail("results differ", type);
  if (ARENARPC_FUZZ_MODE != 0) {
    const arenarpc::MessagePoolStats s = Pool<T>().Stats();
    if (s.in_use != 0) Fail("a pooled message is still in use", type);
  }
}

// Pages held beyond idle arenas (one page each) and idle pooled instances
// (their arenas' bytes) would be a leak inside the pools.
void CheckPages() {
  const arenarpc::PagePoolStats p = arenarpc::PagePool::Default().Stats();
  uint64_t accounted = arenarpc::GetArenaStats().arenas_idle * p.page_size;
  if (ARENARPC_FUZZ_MODE != 0) {
    accounted += Pool<OtlpTrace>().Stats().retained_bytes;
    accounted += Pool<Echo>().Stats().retained_bytes;
  }
  if (p.pages_in_use * p.page_size > accounted) {
    std::fprintf(stderr,
                 "parse_fuzzer: %llu pages in use, %llu bytes accounted\n",
                 static_cast<unsigned long long>(p.pages_in_use),
                 static_cast<unsigned long long>(accounted));
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs every invalid UTF-8 string it rejects: noise, not news.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  Check<OtlpTrace>(wire);
  Check<Echo>(wire);
  CheckPages();
  return 0;
}

// Throwaway: what ByteSizeLong on a parsed request costs against parsing it
// (heap message), per corpus service, thread CPU, min of 5 passes, on 20
// generated requests of each service's mix (seed 1). What sizing
// a callback call's request at release costs. Built against a Release
// build's corpus libraries:
//   g++ -O3 -DNDEBUG -std=c++20 -Ibench/corpus -Ibuild/release/bench/corpus/gen
//     -Iinclude sizing.cc -Wl,--whole-archive
//     build/release/bench/corpus/libarenarpc_corpus.a
//     build/release/bench/corpus/libarenarpc_corpus_proto.a
//     -Wl,--no-whole-archive <arenarpc_corpus_payload's other link libraries>
// Run: flock /tmp/arenarpc-bench.lock ./sizing > sizing.txt
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "corpus.h"
static double Ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
int main() {
  for (const auto& s : arenarpc::corpus::Services()) {
    auto reqs = s.generate(1, 20);
    const google::protobuf::Message* proto =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(
            s.request);
    double parse = 1e18, size = 1e18, bytes = 0;
    for (int pass = 0; pass < 5; ++pass) {
      double p = 0, z = 0;
      bytes = 0;
      for (auto& r : reqs) {
        std::unique_ptr<google::protobuf::Message> m(proto->New());
        double a = Ns();
        m->ParseFromString(r);
        double b = Ns();
        size_t n = m->ByteSizeLong();
        double c = Ns();
        p += b - a;
        z += c - b;
        bytes += n;
      }
      parse = std::min(parse, p);
      size = std::min(size, z);
    }
    std::printf(
        "%-16s %10.0f B/req  parse %9.1f us  ByteSizeLong %8.1f us  ratio "
        "%.3f\n",
        s.name.c_str(), bytes / reqs.size(), parse / reqs.size() / 1e3,
        size / reqs.size() / 1e3, size / parse);
  }
}

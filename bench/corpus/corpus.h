// The corpus: gRPC services other people wrote (protos/, SOURCES.md), with
// requests shaped and sized like their production traffic (README.md).
//
//   const arenarpc::corpus::Service* s =
//   arenarpc::corpus::FindService("otlp_trace"); std::vector<std::string>
//   requests = s->generate(/*seed=*/1, /*count=*/100);
//   std::unique_ptr<google::protobuf::Message> request(
//       google::protobuf::MessageFactory::generated_factory()
//           ->GetPrototype(s->request)->New());
//   request->ParseFromString(requests[0]);
//   uint64_t checksum = s->walk(*request);   // what a handler reads
//   s->respond(*request, response);          // what it answers
//
// generate() returns a request *mix*: per block of 100 requests, an exact
// share of each kind (typical, large, huge) in a seed-dependent order, so
// any 100 consecutive requests from index 0 have the mix's proportions and
// generate(seed, n) is a prefix of generate(seed, m) for n <= m.
//
// Thread safety: Services() and FindService() are thread-safe; generate,
// walk and respond keep no state.
#ifndef ARENARPC_BENCH_CORPUS_CORPUS_H_
#define ARENARPC_BENCH_CORPUS_CORPUS_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::corpus {

struct Service {
  std::string name;    // short id, e.g. "otlp_trace"
  std::string method;  // full gRPC method path
  std::string proto;   // the service's .proto, relative to bench/corpus/protos
  const google::protobuf::Descriptor* request;
  const google::protobuf::Descriptor* response;
  std::string shape;       // one line: what the shape exercises
  std::string sizes_from;  // one line: where the sizes come from
  // `count` serialized requests of the realistic mix, deterministic in seed.
  std::vector<std::string> (*generate)(uint64_t seed, int count);
  // The handler's walk over a parsed request; returns a checksum.
  uint64_t (*walk)(const google::protobuf::Message& request);
  // Fills a realistic response for a request.
  void (*respond)(const google::protobuf::Message& request,
                  google::protobuf::Message* response);
};

// Every corpus service, in a fixed order.
const std::vector<Service>& Services();
// nullptr if unknown.
const Service* FindService(std::string_view name);

}  // namespace arenarpc::corpus

#endif  // ARENARPC_BENCH_CORPUS_CORPUS_H_

// arenarpc_corpus_payload: writes a corpus service's request mix, one
// serialized request per file, for ghz and the benchmarks.
//
//   arenarpc_corpus_payload --list          # or --list_json
//   arenarpc_corpus_payload --service=otlp_trace --seed=1 --count=100 --out=DIR
//   # DIR/otlp_trace_0000.bin ... DIR/otlp_trace_0099.bin
//   ghz --insecure --proto bench/corpus/protos/<proto>
//       --import-paths bench/corpus/protos --call <method>
//       -B DIR/otlp_trace_0000.bin -n 10 127.0.0.1:PORT
//
// The same (service, seed) always gives the same bytes; --count=N writes
// the first N requests of the mix (any 100 from the start have the mix's
// proportions, README.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "corpus.h"

ABSL_FLAG(bool, list, false, "print the service names, one per line, and exit");
ABSL_FLAG(bool, list_json, false,
          "print one JSON object per service (name, method, proto, request "
          "type), and exit");
ABSL_FLAG(std::string, service, "", "corpus service name (see --list)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the deterministic mix");
ABSL_FLAG(int, count, 100, "number of requests to write");
ABSL_FLAG(std::string, out, "", "output directory (created if missing)");
ABSL_FLAG(bool, print_response_sizes, false,
          "print \"response <file> <bytes>\": what the service answers to "
          "each request written");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_list)) {
    for (const arenarpc::corpus::Service& s : arenarpc::corpus::Services()) {
      std::printf("%s\n", s.name.c_str());
    }
    return 0;
  }
  if (absl::GetFlag(FLAGS_list_json)) {
    // Names, methods and paths are plain identifiers: no escaping needed.
    for (const arenarpc::corpus::Service& s : arenarpc::corpus::Services()) {
      std::printf(
          "{\"name\": \"%s\", \"method\": \"%s\", \"proto\": \"%s\", "
          "\"request\": \"%s\"}\n",
          s.name.c_str(), s.method.c_str(), s.proto.c_str(),
          std::string(s.request->full_name()).c_str());
    }
    return 0;
  }
  const std::string name = absl::GetFlag(FLAGS_service);
  const std::string out = absl::GetFlag(FLAGS_out);
  const int count = absl::GetFlag(FLAGS_count);
  const arenarpc::corpus::Service* service =
      arenarpc::corpus::FindService(name);
  if (service == nullptr || out.empty() || count < 1) {
    std::fprintf(stderr,
                 "usage: arenarpc_corpus_payload --service=NAME --seed=N "
                 "--count=K (>= 1) --out=DIR\n"
                 "       arenarpc_corpus_payload --list\n");
    if (!name.empty() && service == nullptr) {
      std::fprintf(stderr, "unknown service %s\n", name.c_str());
    }
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::fprintf(stderr, "cannot create %s: %s\n", out.c_str(),
                 ec.message().c_str());
    return 1;
  }
  const std::vector<std::string> requests =
      service->generate(absl::GetFlag(FLAGS_seed), count);
  std::vector<size_t> sizes;
  size_t total = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string path = absl::StrFormat("%s/%s_%04d.bin", out, name, i);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(requests[i].data(),
               static_cast<std::streamsize>(requests[i].size()));
    file.close();
    if (!file) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    sizes.push_back(requests[i].size());
    total += requests[i].size();
  }
  // What the service answers to these requests (corpus respond()).
  std::vector<size_t> response_sizes;
  for (const std::string& bytes : requests) {
    google::protobuf::MessageFactory* factory =
        google::protobuf::MessageFactory::generated_factory();
    std::unique_ptr<google::protobuf::Message> request(
        factory->GetPrototype(service->request)->New());
    std::unique_ptr<google::protobuf::Message> response(
        factory->GetPrototype(service->response)->New());
    if (!request->ParseFromString(bytes)) return 1;
    service->respond(*request, response.get());
    response_sizes.push_back(response->ByteSizeLong());
    if (absl::GetFlag(FLAGS_print_response_sizes)) {
      std::printf("response %s_%04zu.bin %zu\n", name.c_str(),
                  response_sizes.size() - 1, response_sizes.back());
    }
  }
  std::sort(response_sizes.begin(), response_sizes.end());
  std::sort(sizes.begin(), sizes.end());
  std::printf("responses: min %zu, median %zu, p90 %zu, max %zu bytes\n",
              response_sizes.front(), response_sizes[response_sizes.size() / 2],
              response_sizes[response_sizes.size() * 9 / 10],
              response_sizes.back());
  std::printf(
      "wrote %zu requests of %s (%s) to %s: min %zu, median %zu, max %zu, mean "
      "%zu bytes\n",
      sizes.size(), name.c_str(), service->method.c_str(), out.c_str(),
      sizes.front(), sizes[sizes.size() / 2], sizes.back(),
      total / sizes.size());
  return 0;
}

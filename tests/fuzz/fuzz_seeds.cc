// Writes the fuzzers' seed corpus: a few small OTLP trace requests from the
// corpus generator and a few echo requests, one file each, into argv[1].
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "corpus.h"
#include "echo.pb.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::string> seeds;
  const arenarpc::corpus::Service* otlp =
      arenarpc::corpus::FindService("otlp_trace");
  if (otlp == nullptr) return 1;
  // The smallest requests of the mix: seeds of a few KB mutate fastest.
  for (const std::string& r : otlp->generate(/*seed=*/1, /*count=*/100)) {
    if (r.size() <= 4096 && seeds.size() < 4) seeds.push_back(r);
  }
  for (int n = 0; n < 3; ++n) {
    arenarpc::echo::EchoRequest echo;
    for (int i = 0; i <= n; ++i) echo.add_payload(std::string(8 << i, 'p'));
    arenarpc::echo::Result* result = echo.add_results();
    result->set_id("r" + std::to_string(n));
    arenarpc::echo::Item* item = result->add_items();
    item->add_terms("term");
    item->set_score(0.5 * n);
    echo.set_delay_ms(n);
    seeds.push_back(echo.SerializeAsString());
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(dir + "/seed" + std::to_string(i), std::ios::binary);
    out << seeds[i];
    if (!out) return 1;
  }
  std::printf("%zu seeds in %s\n", seeds.size(), dir.c_str());
  return 0;
}

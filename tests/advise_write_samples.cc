// Writes sample requests of arenarpc.test.Node for the arenarpc_advise CLI
// test: advise_write_samples DIR COUNT [--malformed] (the last one is then
// not a valid Node).
#include <cstdlib>
#include <string>
#include <vector>

#include "advise_test_samples.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int count = std::atoi(argv[2]);
  std::vector<std::string> wires;
  for (int i = 0; i < count; ++i) {
    wires.push_back(arenarpc::test::MakeNode(i, 4 + i % 8).SerializeAsString());
  }
  if (argc > 3 && std::string(argv[3]) == "--malformed") {
    wires.back() =
        std::string("\x0a\xff\xff\xff\xff\x0f", 6);  // truncated length
  }
  arenarpc::test::WriteSamples(argv[1], wires, "");
  return 0;
}

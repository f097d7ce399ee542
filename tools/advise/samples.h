// Sample requests from a directory: every regular file `*.bin` (sorted by
// name), each one serialized message. A capture written by the gRPC
// adapters has this layout per method, plus a text file `TYPE` holding the
// request's full type name.
//
//   absl::StatusOr<arenarpc::advise::Samples> s =
//       arenarpc::advise::ReadSamples("capture/Export", 200);
//
// Thread safety: a plain function.
#ifndef ARENARPC_TOOLS_ADVISE_SAMPLES_H_
#define ARENARPC_TOOLS_ADVISE_SAMPLES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arenarpc::advise {

struct Sample {
  std::string path;  // as given: dir + "/" + file name, for error messages
  std::string wire;
};

struct Samples {
  std::string type;  // from the TYPE file, "" without one
  std::vector<Sample> samples;
};

// The first `max_samples` files (all when <= 0). NotFound for a missing
// directory, InvalidArgument for one without any *.bin file.
absl::StatusOr<Samples> ReadSamples(const std::string& dir, int max_samples);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_SAMPLES_H_

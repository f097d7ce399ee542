// Writes a method's sampled requests for arenarpc_advise: one serialized
// message per file, <dir>/<method>/NNNNNN.bin, the request type's full name
// in <dir>/<method>/TYPE. Bounded by files and bytes per method, counting
// the files a previous run left there.
//
// Thread safety: one thread at a time (the background thread).
// Lifetime: none beyond the object's; files stay.
#ifndef ARENARPC_SRC_GRPC_CAPTURE_H_
#define ARENARPC_SRC_GRPC_CAPTURE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace arenarpc::internal {

class Capture {
 public:
  Capture(std::string dir, std::string_view method, std::string type,
          int max_files, uint64_t max_bytes);

  enum class Result { kWritten, kFull, kError };
  // Writes one sample unless a bound is reached or writing failed before.
  Result Write(std::string_view bytes);

  // "/pkg.Service/Method" -> "pkg.Service.Method": a directory name.
  static std::string DirName(std::string_view method);

 private:
  bool Open();  // first Write: creates the directory, counts what is there

  const std::string dir_;
  const std::string type_;
  const int max_files_;
  const uint64_t max_bytes_;
  bool opened_ = false;
  bool failed_ = false;
  int files_ = 0;
  uint64_t bytes_ = 0;
  int next_ = 0;  // number of the next file
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_CAPTURE_H_

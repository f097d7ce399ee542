#include "samples.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"

namespace arenarpc::advise {
namespace {

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = std::move(s).str();
  return !in.bad();
}

}  // namespace

absl::StatusOr<Samples> ReadSamples(const std::string& dir, int max_samples) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(dir + ": no such directory");
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 4 && name.ends_with(".bin") && it->is_regular_file(ec)) {
      names.push_back(name);
    }
  }
  if (ec) return absl::InternalError(dir + ": " + ec.message());
  if (names.empty()) {
    return absl::InvalidArgumentError(dir + ": no sample files (*.bin)");
  }
  std::sort(names.begin(), names.end());
  if (max_samples > 0 && names.size() > static_cast<size_t>(max_samples)) {
    names.resize(max_samples);
  }

  Samples out;
  const fs::path type_file = fs::path(dir) / "TYPE";
  if (fs::is_regular_file(type_file, ec)) {
    if (!ReadFile(type_file, &out.type)) {
      return absl::InternalError(type_file.string() + ": cannot read");
    }
    out.type = std::string(absl::StripAsciiWhitespace(out.type));
  }
  for (const std::string& name : names) {
    Sample s;
    s.path = (fs::path(dir) / name).string();
    if (!ReadFile(s.path, &s.wire)) {
      return absl::InternalError(s.path + ": cannot read");
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace arenarpc::advise

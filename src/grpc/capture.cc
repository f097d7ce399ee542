#include "capture.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_format.h"

namespace arenarpc::internal {

namespace fs = std::filesystem;

Capture::Capture(std::string dir, std::string_view method, std::string type,
                 int max_files, uint64_t max_bytes)
    : dir_((fs::path(dir) / DirName(method)).string()),
      type_(std::move(type)),
      max_files_(max_files),
      max_bytes_(max_bytes) {}

std::string Capture::DirName(std::string_view method) {
  std::string out;
  for (char c : method) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                       c == '-';
    if (c == '/' || c == ' ') {
      if (!out.empty() && out.back() != '.') out.push_back('.');
    } else {
      out.push_back(plain ? c : '_');
    }
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  // Never "", "." or "..": those would leave the capture directory.
  if (out.empty() || out.find_first_not_of('.') == std::string::npos)
    out = "method";
  return out;
}

bool Capture::Open() {
  opened_ = true;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return false;
  {
    std::ofstream type(fs::path(dir_) / "TYPE", std::ios::trunc);
    type << type_ << "\n";
    if (!type) return false;
  }
  // A restarted server continues the numbering, and what is there counts
  // against the bounds: the directory stays bounded across runs.
  // (increment(ec): the range-for form would throw.)
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != 10 || name.substr(6) != ".bin") continue;
    std::error_code size_ec;
    const uintmax_t size = it->file_size(size_ec);
    ++files_;
    bytes_ += size_ec ? 0 : size;
    next_ = std::max(next_, std::atoi(name.c_str()) + 1);
  }
  return !ec;
}

Capture::Result Capture::Write(std::string_view bytes) {
  if (!opened_ && !Open()) failed_ = true;
  if (failed_) return Result::kError;
  if (files_ >= max_files_ || bytes_ + bytes.size() > max_bytes_ ||
      next_ > 999999) {
    return Result::kFull;
  }
  const fs::path final_path =
      fs::path(dir_) / absl::StrFormat("%06d.bin", next_);
  const fs::path tmp = fs::path(dir_) / absl::StrFormat(".%06d.tmp", next_);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) failed_ = true;
  }
  std::error_code ec;
  if (!failed_)
    fs::rename(tmp, final_path, ec);  // readers never see half a file
  if (failed_ || ec) {
    fs::remove(tmp, ec);
    failed_ = true;
    return Result::kError;
  }
  ++files_;
  ++next_;
  bytes_ += bytes.size();
  return Result::kWritten;
}

}  // namespace arenarpc::internal

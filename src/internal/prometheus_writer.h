// Prometheus text exposition (0.0.4) for src/metrics.cc and the gRPC stats
// (src/grpc/stats.cc), which append to the same text. Private to arenarpc.
// Thread safety: a PrometheusWriter is used by one thread.
// Lifetime: writes into the caller's string, which must outlive it.
#ifndef ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_
#define ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace arenarpc::internal {

// Label values: escape backslash, double quote and newline.
inline std::string PrometheusEscape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class PrometheusWriter {
 public:
  explicit PrometheusWriter(std::string* out) : out_(*out) {}

  // Writes HELP and TYPE once per family.
  void Family(std::string_view name, std::string_view type,
              std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help);
    out_.append("\n# TYPE ").append(name).append(" ").append(type);
    out_.append("\n");
  }
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(std::to_string(value)).append("\n");
  }
  void Value(std::string_view name, std::string_view labels, double value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(absl::StrCat(value)).append("\n");
  }
  void One(std::string_view name, std::string_view type, std::string_view help,
           uint64_t value) {
    Family(name, type, help);
    Sample(name, "", value);
  }

 private:
  std::string& out_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_

// Prometheus text exposition (0.0.4) for src/metrics.cc and the gRPC stats
// (src/grpc/stats.cc), which append to the same text. Private to arenarpc.
// Thread safety: a PrometheusWriter is used by one thread.
// Lifetime: writes into the caller's string, which must outlive it.
#ifndef ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_
#define ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace arenarpc::internal {

// Label values: escape backslash, double quote and newline.
inline std::string PrometheusEscape(const std::string& v) {
  return absl::StrReplaceAll(v,
                             {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

// (This absl's string_view is not std::string_view: hence append().)
class PrometheusWriter {
 public:
  explicit PrometheusWriter(std::string* out) : out_(*out) {}

  // HELP and TYPE, once per family. By default a name ending in _total is a
  // counter, any other a gauge.
  void Family(std::string_view name, std::string_view help,
              std::string_view type = "") {
    if (type.empty()) type = name.ends_with("_total") ? "counter" : "gauge";
    out_.append("# HELP ").append(name).append(" ").append(help);
    out_.append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  // `value`: an integer or a double.
  template <class V>
  void Sample(std::string_view name, std::string_view labels, V value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(absl::StrCat(value)).append("\n");
  }
  // Families of one unlabelled sample each, named prefix + name.
  struct One {
    const char* name;
    const char* help;
    uint64_t value;
  };
  void Ones(const char* prefix, std::initializer_list<One> ones) {
    for (const One& o : ones) {
      const std::string name = absl::StrCat(prefix, o.name);
      Family(name, o.help);
      Sample(name, "", o.value);
    }
  }

 private:
  std::string& out_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_PROMETHEUS_WRITER_H_

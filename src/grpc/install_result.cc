#include "arenarpc/grpc/install_result.h"

#include <grpc/support/log.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arenarpc {

std::string_view ServerApiName(ServerApi api) {
  switch (api) {
    case ServerApi::kSync:
      return "sync";
    case ServerApi::kCallback:
      return "callback";
    case ServerApi::kAsync:
      break;
  }
  return "async";
}

void InstallResult::Merge(const InstallResult& other) {
  if (service_.empty()) {
    service_ = other.service_;
  } else if (!other.service_.empty()) {
    absl::StrAppend(&service_, ", ", other.service_);
  }
  methods_.insert(methods_.end(), other.methods_.begin(), other.methods_.end());
}

int InstallResult::unary_methods() const {
  int n = 0;
  for (const MethodInstall& m : methods_) n += m.unary ? 1 : 0;
  return n;
}

int InstallResult::served() const {
  int n = 0;
  for (const MethodInstall& m : methods_) n += m.unary && m.served ? 1 : 0;
  return n;
}

int InstallResult::streaming_served() const {
  int n = 0;
  for (const MethodInstall& m : methods_) n += !m.unary && m.served ? 1 : 0;
  return n;
}

std::vector<MethodInstall> InstallResult::not_served() const {
  std::vector<MethodInstall> out;
  for (const MethodInstall& m : methods_) {
    if (!m.served) out.push_back(m);
  }
  return out;
}

std::string InstallResult::ToString() const {
  std::string unary_list;
  std::string streaming_list;
  std::string skipped_list;
  for (const MethodInstall& m : methods_) {
    std::string& list =
        !m.served ? skipped_list : (m.unary ? unary_list : streaming_list);
    if (!list.empty()) list += "; ";
    if (m.served) {
      absl::StrAppend(&list, m.method, ": ", std::string(ServerApiName(m.api)),
                      ", ", std::string(AllocationModeName(m.mode)));
    } else {
      absl::StrAppend(&list, m.method, " (", m.reason, ")");
    }
  }
  std::string out =
      absl::StrCat(service_.empty() ? "arenarpc" : service_, ": ");
  // A streaming-only install (StreamMethods) is not "0 of 0 unary".
  const bool unary_part = unary_methods() > 0 || streaming_list.empty();
  if (unary_part) {
    absl::StrAppend(&out, served(), " of ", unary_methods(),
                    " unary methods served");
    if (!unary_list.empty()) absl::StrAppend(&out, " (", unary_list, ")");
  }
  if (!streaming_list.empty()) {
    const int n = streaming_served();
    absl::StrAppend(&out, unary_part ? "; " : "", n, " streaming method",
                    n == 1 ? "" : "s", " served (", streaming_list, ")");
  }
  if (!skipped_list.empty())
    absl::StrAppend(&out, "; not served: ", skipped_list);
  return out;
}

absl::Status InstallResult::status() const {
  if (unary_methods() == 0 || served() > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(ToString());
}

InstallResult&& InstallResult::Finish() && {
  if (!ok()) {
    // Installs run before the server exists, often before grpc_init, which
    // is what sets gRPC's log verbosity: until then gpr_log drops even
    // errors. Set it as grpc_init would (GRPC_VERBOSITY; an explicit
    // gpr_set_log_verbosity stays).
    gpr_log_verbosity_init();
    gpr_log(GPR_ERROR, "arenarpc: nothing installed: %s", ToString().c_str());
  }
  return std::move(*this);
}

}  // namespace arenarpc

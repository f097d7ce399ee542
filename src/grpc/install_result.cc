#include "arenarpc/grpc/install_result.h"

#include <grpc/support/log.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "arenarpc/grpc/kill_switch.h"

namespace arenarpc {

bool ArenasDisabled() {
#ifdef ARENARPC_DISABLE_ARENAS
  return true;
#else
  static const bool disabled = [] {
    const char* v = std::getenv("ARENARPC_DISABLE_ARENAS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return disabled;
#endif
}

AllocationMode EffectiveAllocationMode(AllocationMode mode) {
  return ArenasDisabled() ? AllocationMode::kHeap : mode;
}

std::string_view ServerApiName(ServerApi api) {
  static constexpr std::string_view kNames[] = {"sync", "callback", "async"};
  return kNames[static_cast<int>(api)];
}

void InstallResult::Merge(const InstallResult& other) {
  if (!service_.empty() && !other.service_.empty()) service_ += ", ";
  service_ += other.service_;
  methods_.insert(methods_.end(), other.methods_.begin(), other.methods_.end());
}

// Methods that are unary (or streaming), and served if `served_only`.
static int Count(const std::vector<MethodInstall>& methods, bool unary,
                 bool served_only) {
  return static_cast<int>(std::ranges::count_if(methods, [&](const auto& m) {
    return m.unary == unary && (m.served || !served_only);
  }));
}
int InstallResult::unary_methods() const {
  return Count(methods_, true, false);
}
int InstallResult::served() const { return Count(methods_, true, true); }
int InstallResult::streaming_served() const {
  return Count(methods_, false, true);
}

std::string InstallResult::ToString() const {
  std::vector<std::string> unary, streaming, skipped;
  for (const MethodInstall& m : methods_) {
    if (!m.served) {
      skipped.push_back(absl::StrCat(m.method, " (", m.reason, ")"));
    } else {
      (m.unary ? unary : streaming)
          .push_back(absl::StrCat(m.method, ": ",
                                  std::string(ServerApiName(m.api)), ", ",
                                  std::string(AllocationModeName(m.mode))));
    }
  }
  std::string out =
      absl::StrCat(service_.empty() ? "arenarpc" : service_, ": ");
  // A streaming-only install (StreamMethods) is not "0 of 0 unary".
  const bool unary_part = unary_methods() > 0 || streaming.empty();
  if (unary_part) {
    absl::StrAppend(&out, served(), " of ", unary_methods(),
                    " unary methods served");
    if (!unary.empty())
      absl::StrAppend(&out, " (", absl::StrJoin(unary, "; "), ")");
  }
  if (!streaming.empty()) {
    absl::StrAppend(&out, unary_part ? "; " : "", streaming.size(),
                    " streaming method", streaming.size() == 1 ? "" : "s",
                    " served (", absl::StrJoin(streaming, "; "), ")");
  }
  if (!skipped.empty())
    absl::StrAppend(&out, "; not served: ", absl::StrJoin(skipped, "; "));
  return out;
}

absl::Status InstallResult::status() const {
  if (unary_methods() == 0 || served() > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(ToString());
}

InstallResult&& InstallResult::Finish() && {
  if (!ok()) {
    // Often before grpc_init, which sets gRPC's log verbosity: until then
    // gpr_log drops even errors. Set it as grpc_init would.
    gpr_log_verbosity_init();
    gpr_log(GPR_ERROR, "arenarpc: nothing installed: %s", ToString().c_str());
  }
  return std::move(*this);
}

}  // namespace arenarpc

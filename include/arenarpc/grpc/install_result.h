// What an install did, per method: never a silent nothing.
//
//   arenarpc::InstallResult r =
//       mysvc::InstallMyServiceAllocators(&service, options);
//   if (!r.ok()) {                       // unary methods, none served
//     std::cerr << r.status() << "\n";   // names each method and why
//     return 1;
//   }
//   std::cout << r.ToString() << "\n";   // "3 of 4 unary methods served ..."
//
// An install serves each unary method implemented with the sync or the
// callback API, and says why it left any other one alone (an async, raw or
// generic method, a handler that is not gRPC's generated one). A service
// with unary methods of which none could be served is an error: status()
// is FailedPrecondition and the install logs one line (GPR_ERROR).
//
// Thread safety: a value type; const methods may be called concurrently.
// Lifetime: independent of the service and the server.
#ifndef ARENARPC_GRPC_INSTALL_RESULT_H_
#define ARENARPC_GRPC_INSTALL_RESULT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arenarpc/allocation_mode.h"

namespace arenarpc {

// The gRPC server API a method is written against.
enum class ServerApi {
  kSync,      // Svc::Service: blocking virtual method, gRPC's thread pool
  kCallback,  // Svc::CallbackService: reactor, MessageAllocator hook
  kAsync,     // Svc::AsyncService: completion queue (arenarpc/grpc/async.h)
};
std::string_view ServerApiName(ServerApi api);  // "sync", "callback", "async"

struct MethodInstall {
  std::string method;  // "pkg.Service/Method"
  // false: a streaming method (the generated install never serves one; a
  // StreamMethod's report() is one, served).
  bool unary = true;
  bool served = false;
  ServerApi api = ServerApi::kSync;  // when served
  // When served, with the kill switch applied; when not served: why.
  AllocationMode mode = AllocationMode::kArena;
  std::string reason;
};

class [[nodiscard]] InstallResult {
 public:
  // `service`: the service's full name, for messages.
  explicit InstallResult(std::string service = "")
      : service_(std::move(service)) {}

  void Add(MethodInstall m) { methods_.push_back(std::move(m)); }
  // Adds another result's methods (several services installed in one go).
  void Merge(const InstallResult& other);

  // Unary methods seen, and how many of them are served.
  int unary_methods() const;
  int served() const;
  // Streaming methods served (StreamMethod reports, grpc/streaming.h); they
  // never count in served() or status().
  int streaming_served() const;
  const std::vector<MethodInstall>& methods() const { return methods_; }

  // FailedPrecondition if there are unary methods and none is served
  // (the message names each and why); else OK.
  absl::Status status() const;
  bool ok() const { return status().ok(); }
  // One line: "<service>: 2 of 3 unary methods served (A: sync, arena; B:
  // callback, arena); 1 streaming method served (D: sync, arena); not
  // served: C (async completion-queue method)".
  std::string ToString() const;

  // Called by the generated install once it is complete: logs one error
  // line if !ok(); returns *this.
  InstallResult&& Finish() &&;

 private:
  std::string service_;
  std::vector<MethodInstall> methods_;
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_INSTALL_RESULT_H_

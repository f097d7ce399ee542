// For snippets that install on a service with the generated one-liner:
// the generated header, and the names the fragments take as given.
#ifndef ARENARPC_CONSUMER_SNIPPET_FIXTURE_INSTALL_H_
#define ARENARPC_CONSUMER_SNIPPET_FIXTURE_INSTALL_H_

#include "echo.arenarpc.h"

namespace mysvc {
// The documents' stand-in for a user's generated install function.
template <class Service, class Options>
arenarpc::InstallResult InstallMyServiceAllocators(Service* service,
                                                   const Options& options) {
  return arenarpc::echo::InstallEchoServiceAllocators(service, options);
}
}  // namespace mysvc

namespace fixture {
inline arenarpc::ServerOptions options;
inline arenarpc::InstallResult r;
}  // namespace fixture

#endif  // ARENARPC_CONSUMER_SNIPPET_FIXTURE_INSTALL_H_

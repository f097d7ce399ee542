// Per-call memory for gRPC unary methods, sync or callback API, in one
// include; each header is its concept's manual:
//
//   arenarpc/grpc/server_options.h  ServerOptions: mode, kAuto's budget,
//                                   idle trimming, the pooled-memory cap
//   arenarpc/grpc/shadow.h          ShadowOptions: shadow measurement
//   arenarpc/grpc/allocators.h      the modes as grpc::MessageAllocators,
//                                   DefaultMessageAllocator/MessagePool
//   arenarpc/grpc/kill_switch.h     every mode -> kHeap
//   arenarpc/grpc/install.h         installing them on a service
//   arenarpc/grpc/stats.h           what they did
//
// Without the plugin (with it: install.h), one setter per method:
//
//   #include "arenarpc/grpc/server.h"
//
//   EchoServiceImpl service;  // an EchoService::CallbackService
//   arenarpc::InstallResult r = arenarpc::InstallMessageAllocators(
//       &service, arenarpc::AllocationMode::kAuto,
//       &EchoService::CallbackService::SetMessageAllocatorFor_Echo);
//   if (!r.ok()) std::cerr << r.status() << "\n";
//   builder.RegisterService(&service);
//   std::string metrics = arenarpc::RenderPrometheusStats();
//
// Thread safety and lifetime: see each header.
#ifndef ARENARPC_GRPC_SERVER_H_
#define ARENARPC_GRPC_SERVER_H_

#include "arenarpc/grpc/allocators.h"      // IWYU pragma: export
#include "arenarpc/grpc/install.h"         // IWYU pragma: export
#include "arenarpc/grpc/kill_switch.h"     // IWYU pragma: export
#include "arenarpc/grpc/server_options.h"  // IWYU pragma: export
#include "arenarpc/grpc/shadow.h"          // IWYU pragma: export
#include "arenarpc/grpc/stats.h"           // IWYU pragma: export

#endif  // ARENARPC_GRPC_SERVER_H_

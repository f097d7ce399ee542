// What the documented snippets leave out (scripts/doc_snippets.py): the
// messages, services and variables a fragment uses without declaring them.
// No arenarpc header here: each snippet includes what it documents, so a
// header that stops including what its example needs fails to compile.
#ifndef ARENARPC_CONSUMER_SNIPPET_FIXTURE_H_
#define ARENARPC_CONSUMER_SNIPPET_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "echo.grpc.pb.h"
#include "echo.pb.h"
#include "routeguide/route_guide.grpc.pb.h"
#include "routeguide/route_guide.pb.h"

#define LOG(severity) std::cerr

namespace fixture {

using arenarpc::echo::EchoRequest;
using arenarpc::echo::EchoResponse;
using arenarpc::echo::EchoService;
using routeguide::Point;
using routeguide::RouteGuide;
using routeguide::RouteSummary;
// The documents' stand-ins for a user's own messages.
using MyRequest = EchoRequest;
using MyResponse = EchoResponse;
using MyDoc = EchoRequest;
using Req = EchoRequest;
using Resp = EchoResponse;
using Feature = Point;

// A plain type for the object pool's examples.
struct Request {
  Request(int id, std::string payload) : id(id), payload(std::move(payload)) {}
  int id;
  std::string payload;
};
struct Node {
  Node* next = nullptr;
};

class EchoServiceImpl : public EchoService::CallbackService {};

inline EchoServiceImpl service;
inline EchoServiceImpl cb_service;
inline grpc::ServerBuilder builder;
inline grpc::CallbackServerContext* context = nullptr;
inline std::unique_ptr<EchoService::Stub> stub;
inline grpc::CompletionQueue cq;
inline grpc::Status status;
inline void* tag = nullptr;
inline std::chrono::system_clock::time_point deadline;
inline std::string wire;
inline EchoRequest prototype;

template <class... Args>
void Handle(Args&&...) {}
template <class... Args>
void Visit(Args&&...) {}
template <class... Args>
void Fill(Args&&...) {}
template <class T>
int Fail(const T&) {
  return 1;
}

}  // namespace fixture

#endif  // ARENARPC_CONSUMER_SNIPPET_FIXTURE_H_

// Generated code for a schema, built and loaded at run time: protoc
// --cpp_out for every file the program does not already link, one shared
// object compiled from the .pb.cc files, cached by content, dlopen'ed. Its
// static initializers register the files in DescriptorPool::generated_pool(),
// so MessageFactory::generated_factory() then gives generated prototypes.
// The object leaves protobuf's symbols undefined: they resolve to the
// program's libprotobuf, which must therefore be a shared library.
//
//   absl::StatusOr<arenarpc::advise::BuildResult> r =
//       arenarpc::advise::LoadGeneratedCode(*schema, {});
//   const google::protobuf::Descriptor* d =
//       google::protobuf::DescriptorPool::generated_pool()
//           ->FindMessageTypeByName("pkg.Request");
//
// Thread safety: call from one thread at a time. Lifetime: a loaded object
// stays loaded (generated_pool() points into it). A file name can be in
// generated_pool() once per process: a second schema with the same file
// name and other contents is refused.
#ifndef ARENARPC_TOOLS_ADVISE_CODEGEN_H_
#define ARENARPC_TOOLS_ADVISE_CODEGEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "schema.h"

namespace arenarpc::advise {

struct BuildOptions {
  std::string protoc;     // "": the protoc recorded when the tool was built
  std::string cxx;        // "": the C++ compiler recorded likewise
  std::string cxxflags;   // extra flags, after the defaults (-O2 ...)
  std::string cache_dir;  // "": ${XDG_CACHE_HOME:-~/.cache}/arenarpc/advise
};

struct BuildResult {
  std::vector<std::string> built;  // files compiled (or taken from the cache)
  std::string object;              // the shared object, "" if none needed
  bool from_cache = false;
  double compile_seconds = 0;  // protoc + compiler, 0 from the cache
};

// FailedPrecondition when generated code cannot be loaded at all (static
// libprotobuf, a linked file with other contents); Unavailable when a step
// fails (no protoc or compiler, a failed compile: the first lines of its
// output are in the message).
absl::StatusOr<BuildResult> LoadGeneratedCode(const Schema& schema,
                                              const BuildOptions& options);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_CODEGEN_H_

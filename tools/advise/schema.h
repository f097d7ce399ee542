// A service's schema as a FileDescriptorSet (every file with its imports,
// dependencies first) and a DescriptorPool built from it: loaded from a
// descriptor set (`protoc --descriptor_set_out --include_imports`), parsed
// from .proto files, or taken from types linked into the program.
//
//   absl::StatusOr<std::unique_ptr<arenarpc::advise::Schema>> s =
//       arenarpc::advise::LoadDescriptorSet("service.pb");
//   const google::protobuf::Descriptor* t =
//       (*s)->pool.FindMessageTypeByName("pkg.Request");
//
// Thread safety: a loaded Schema is immutable (DescriptorPool lookups are
// thread-safe). Lifetime: descriptors from `pool` live as long as the Schema.
#ifndef ARENARPC_TOOLS_ADVISE_SCHEMA_H_
#define ARENARPC_TOOLS_ADVISE_SCHEMA_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arenarpc::advise {

struct Schema {
  google::protobuf::FileDescriptorSet set;              // dependencies first
  std::string set_bytes;                                // `set` serialized
  google::protobuf::SimpleDescriptorDatabase database;  // backs `pool`
  google::protobuf::DescriptorPool pool{&database};
};

// A FileDescriptorSet; `origin` names it in errors. Every import must be
// in it.
absl::StatusOr<std::unique_ptr<Schema>> SchemaFromSet(
    google::protobuf::FileDescriptorSet set, const std::string& origin);

// A FileDescriptorSet file. Every import must be in it.
absl::StatusOr<std::unique_ptr<Schema>> LoadDescriptorSet(
    const std::string& path);

// .proto files (paths relative to a proto_path entry, or disk paths under
// one), parsed with protobuf's compiler::Importer.
absl::StatusOr<std::unique_ptr<Schema>> LoadProtos(
    const std::vector<std::string>& protos,
    const std::vector<std::string>& proto_paths);

// `file` and everything it imports, e.g. of a type linked into the program.
std::unique_ptr<Schema> SchemaOf(const google::protobuf::FileDescriptor* file);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_SCHEMA_H_

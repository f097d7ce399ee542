#include "schema.h"

#include <google/protobuf/compiler/importer.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace arenarpc::advise {
namespace {

using google::protobuf::FileDescriptor;
using google::protobuf::FileDescriptorProto;
using google::protobuf::FileDescriptorSet;

// Dependencies first, each file once.
void AddWithImports(const FileDescriptor* file, std::set<std::string>& seen,
                    FileDescriptorSet& set) {
  if (!seen.insert(std::string(file->name())).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddWithImports(file->dependency(i), seen, set);
  }
  file->CopyTo(set.add_file());
}

// Importer's error interface changed in v22+ (RecordError, string_view);
// both are defined without `override` so the one the version declares is
// the one overridden.
class ErrorList : public google::protobuf::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& file, int line, int column,
                const std::string& message) {
    Add(file, line, column, message);
  }
  void RecordError(absl::string_view file, int line, int column,
                   absl::string_view message) {
    Add(file, line, column, message);
  }
  std::vector<std::string> errors;

 private:
  void Add(absl::string_view file, int line, int column,
           absl::string_view message) {
    // Zero-based in the interface; editors count from 1.
    errors.push_back(line < 0 ? absl::StrCat(file, ": ", message)
                              : absl::StrCat(file, ":", line + 1, ":",
                                             column + 1, ": ", message));
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Schema>> SchemaFromSet(
    FileDescriptorSet set, const std::string& origin) {
  auto schema = std::make_unique<Schema>();
  std::set<std::string> names;
  for (const FileDescriptorProto& f : set.file()) names.insert(f.name());
  for (const FileDescriptorProto& f : set.file()) {
    for (const std::string& dep : f.dependency()) {
      if (names.count(dep) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": ", f.name(), " imports ", dep,
            ", which is not in the set (protoc --include_imports)"));
      }
    }
    if (!schema->database.Add(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": cannot add ", f.name(), " (twice?)"));
    }
  }
  for (const FileDescriptorProto& f : set.file()) {
    if (schema->pool.FindFileByName(f.name()) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": ", f.name(), " does not build"));
    }
  }
  if (!set.SerializeToString(&schema->set_bytes)) {
    return absl::InternalError(origin + ": cannot serialize the set");
  }
  schema->set = std::move(set);
  return schema;
}

absl::StatusOr<std::unique_ptr<Schema>> LoadDescriptorSet(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  FileDescriptorSet set;
  if (!set.ParseFromString(bytes.str()) || set.file_size() == 0) {
    return absl::InvalidArgumentError(
        path + ": not a FileDescriptorSet (protoc --descriptor_set_out)");
  }
  return SchemaFromSet(std::move(set), path);
}

absl::StatusOr<std::unique_ptr<Schema>> LoadProtos(
    const std::vector<std::string>& protos,
    const std::vector<std::string>& proto_paths) {
  google::protobuf::compiler::DiskSourceTree tree;
  for (const std::string& dir : proto_paths) tree.MapPath("", dir);
  if (proto_paths.empty()) tree.MapPath("", ".");
  ErrorList errors;
  google::protobuf::compiler::Importer importer(&tree, &errors);
  std::set<std::string> seen;
  FileDescriptorSet set;
  for (const std::string& proto : protos) {
    // A disk path under a proto_path entry names the file it maps to.
    std::string virtual_file, shadowing;
    if (tree.DiskFileToVirtualFile(proto, &virtual_file, &shadowing) !=
        google::protobuf::compiler::DiskSourceTree::SUCCESS) {
      virtual_file = proto;
    }
    const FileDescriptor* file = importer.Import(virtual_file);
    if (file == nullptr) {
      if (errors.errors.empty()) errors.errors.push_back(proto + ": not found");
      return absl::InvalidArgumentError(absl::StrJoin(errors.errors, "\n"));
    }
    AddWithImports(file, seen, set);
  }
  return SchemaFromSet(std::move(set), absl::StrJoin(protos, ","));
}

std::unique_ptr<Schema> SchemaOf(const FileDescriptor* file) {
  std::set<std::string> seen;
  FileDescriptorSet set;
  AddWithImports(file, seen, set);
  auto schema = SchemaFromSet(std::move(set), std::string(file->name()));
  return schema.ok() ? *std::move(schema) : nullptr;  // a linked file builds
}

}  // namespace arenarpc::advise

// Which fields the generated Clear() does not keep (it deletes, or on an
// arena abandons, them; by version: internal/protobuf_compat.h).
#include <google/protobuf/descriptor.h>

#include <string>
#include <unordered_set>

#include "arenarpc/internal/protobuf_compat.h"
#include "arenarpc/message_pool.h"

namespace arenarpc::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Why Clear() drops `f`'s content, or nullptr if it keeps it.
const char* DropReason(const FieldDescriptor* f) {
  if (f->is_map()) return "map field (entries are destroyed)";
  const bool object = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
                      f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  if (f->real_containing_oneof() != nullptr && object) {
    return "oneof member (destroyed when the oneof is cleared)";
  }
  if (ClearDeletesSingularMessage(f)) {
    return "proto3 message field without has-bit (deleted by Clear)";
  }
  return nullptr;
}

bool Find(const Descriptor* type, std::unordered_set<const Descriptor*>& seen,
          std::string& path) {
  if (!seen.insert(type).second) return false;
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    if (const char* why = DropReason(f)) {
      path = std::string(f->name()) + ": " + why;
      return true;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
        Find(f->message_type(), seen, path)) {
      path = std::string(f->name()) + "." + path;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ReuseLimit(const Descriptor* type) {
  std::unordered_set<const Descriptor*> seen;
  std::string path;
  Find(type, seen, path);
  return path;
}

}  // namespace arenarpc::internal

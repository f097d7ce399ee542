// What differs between the protobuf versions arenarpc supports, in one
// place (docs/PROTOBUF_VERSIONS.md). Not part of the API. Versions are
// GOOGLE_PROTOBUF_VERSION: 3.21 is 3021xxx, v23 4023xxx, v26 5026xxx.
#ifndef ARENARPC_INTERNAL_PROTOBUF_COMPAT_H_
#define ARENARPC_INTERNAL_PROTOBUF_COMPAT_H_

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/stubs/common.h>

#include <type_traits>
#include <utility>

namespace arenarpc::internal {

// Before v26 Arena::Create<T> put a message in arena memory without giving
// it the arena (its sub-objects went to the heap); v30 removed CreateMessage.
template <class T, class... Args>
T* CreateOnArena(google::protobuf::Arena* arena, Args&&... args) {
#if GOOGLE_PROTOBUF_VERSION < 5026000
  if constexpr (std::is_base_of_v<google::protobuf::MessageLite, T>) {
    return google::protobuf::Arena::CreateMessage<T>(
        arena, std::forward<Args>(args)...);
  }
#endif
  return google::protobuf::Arena::Create<T>(arena, std::forward<Args>(args)...);
}

// Up to v22 the generated Clear() deletes (on an arena: abandons) the
// sub-message of a proto3 singular message field without `optional`; v23
// gave such fields has-bits, and Clear() clears the sub-message in place.
inline constexpr bool kProto3SingularMessagesHaveHasbits =
    GOOGLE_PROTOBUF_VERSION >= 4023000;

// From v24 the generated table-driven parser gives a singular string field
// of an arena message a new std::string on every parse (the old one stays
// on the arena until reset); into a heap message it reuses the buffer.
inline constexpr bool kArenaParseRecreatesStrings =
    GOOGLE_PROTOBUF_VERSION >= 4024000;

// Whether the generated Clear() deletes the sub-message of singular message
// field `f`.
inline bool ClearDeletesSingularMessage(
    const google::protobuf::FieldDescriptor* f) {
#if GOOGLE_PROTOBUF_VERSION >= 4023000
  (void)f;
  return false;
#else
  return f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE &&
         !f->is_repeated() && f->real_containing_oneof() == nullptr &&
         !f->has_optional_keyword() &&
         f->file()->syntax() == google::protobuf::FileDescriptor::SYNTAX_PROTO3;
#endif
}

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_PROTOBUF_COMPAT_H_

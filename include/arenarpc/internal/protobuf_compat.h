// What differs between the protobuf versions arenarpc supports (3.21 through
// v33), in one place. Not part of the API.
//
// Versions are protobuf's C++ runtime versions: 3.21 is 3021xxx, v23 is
// 4023xxx, v26 is 5026xxx, v30 is 6030xxx (GOOGLE_PROTOBUF_VERSION).
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
#if GOOGLE_PROTOBUF_VERSION >= 5026000
  return google::protobuf::Arena::Create<T>(arena, std::forward<Args>(args)...);
#else
  if constexpr (std::is_base_of_v<google::protobuf::MessageLite, T>) {
    return google::protobuf::Arena::CreateMessage<T>(
        arena, std::forward<Args>(args)...);
  } else {
    return google::protobuf::Arena::Create<T>(arena,
                                              std::forward<Args>(args)...);
  }
#endif
}

// Up to v22 the generated Clear() deletes (on an arena: abandons) the
// sub-message of a proto3 singular message field without `optional`; v23
// gave such fields has-bits, and Clear() clears the sub-message in place.
inline constexpr bool kProto3SingularMessagesHaveHasbits =
    GOOGLE_PROTOBUF_VERSION >= 4023000;

// From v24 protoc's C++ generator emits the table-driven parser for every
// generated message (compiler/cpp/options.h: tctable_mode defaults to
// kTCTableAlways; 23.x defaults to kTCTableNever and emits the looping
// parser, which parses a string into the one already there). The table
// parser gives a singular string field of an arena message a new
// std::string on every parse (EpsCopyInputStream::ReadArenaString calls
// NewString): the old one and its buffer stay on the arena until it is
// reset. Into a heap message it assigns into the string already there,
// keeping its buffer. (Checked in the sources of 23.1, 23.4, 24.3 and 25.1;
// measured on 3.21 and 23.1, which reuse the string either way, and 33.6.)
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

// std::pmr memory resources on pooled pages.
//
//   // Standalone: a request's scratch data on pages of PagePool::Default().
//   arenarpc::MonotonicPageResource resource;
//   std::pmr::vector<std::pmr::string> names(&resource);
//   names.emplace_back("a string longer than the small-string buffer");
//   // ~MonotonicPageResource (or release()) returns every page at once.
//
//   // Next to protobuf messages: the same pages as the messages.
//   #include "arenarpc/arena.h"
//   arenarpc::ScopedArena arena;
//   std::pmr::vector<int> ids(arena.memory_resource());
//
// Both are monotonic: deallocate() does nothing; memory lives until
// release()/destruction (MonotonicPageResource) or the arena's reset.
// Thread safety: MonotonicPageResource is not thread-safe (as
// std::pmr::monotonic_buffer_resource); ArenaMemoryResource is, as arenas.
#ifndef ARENARPC_MEMORY_RESOURCE_H_
#define ARENARPC_MEMORY_RESOURCE_H_

#include <cstddef>
#include <memory_resource>

namespace google::protobuf {
class Arena;
}  // namespace google::protobuf

namespace arenarpc {

class PagePool;

// Bump allocation over pages of a PagePool; requests over half a page go to
// the heap (freed by release() too).
class MonotonicPageResource final : public std::pmr::memory_resource {
 public:
  MonotonicPageResource();  // uses PagePool::Default()
  explicit MonotonicPageResource(PagePool& pool) : pool_(pool) {}
  ~MonotonicPageResource() override { release(); }
  MonotonicPageResource(const MonotonicPageResource&) = delete;
  MonotonicPageResource& operator=(const MonotonicPageResource&) = delete;

  void release();  // returns all memory at once
  size_t pages_held() const { return pages_held_; }  // not counting the heap

 private:
  struct Page;   // header at the start of each page: the next page
  struct Large;  // header before each large (heap) allocation

  void* do_allocate(size_t bytes, size_t alignment) override;
  void do_deallocate(void*, size_t, size_t) override {}
  bool do_is_equal(const memory_resource& other) const noexcept override {
    return this == &other;
  }

  PagePool& pool_;
  char* cursor_ = nullptr;  // next free byte in the current page
  char* limit_ = nullptr;   // end of the current page
  Page* pages_ = nullptr;   // pages in use, newest first
  Large* large_ = nullptr;  // heap allocations, newest first
  size_t pages_held_ = 0;
};

// Allocates on a protobuf arena (non-owning): a request's other data on its
// pages.
class ArenaMemoryResource final : public std::pmr::memory_resource {
 public:
  explicit ArenaMemoryResource(google::protobuf::Arena* arena = nullptr)
      : arena_(arena) {}

 private:
  void* do_allocate(size_t bytes, size_t alignment) override;
  void do_deallocate(void*, size_t, size_t) override {}
  bool do_is_equal(const memory_resource& other) const noexcept override {
    return this == &other;
  }

  google::protobuf::Arena* arena_;
};

}  // namespace arenarpc

#endif  // ARENARPC_MEMORY_RESOURCE_H_

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
// Both are monotonic: deallocate() does nothing and memory comes back only
// when the whole resource is released, which is what makes them cheap.
//
// Thread safety: neither is thread-safe for allocation (like
// std::pmr::monotonic_buffer_resource); ArenaMemoryResource inherits the
// arena's thread safety, which is full.
// Lifetime: memory handed out lives until release()/destruction
// (MonotonicPageResource) or until the arena is reset (ArenaMemoryResource).
#ifndef ARENARPC_MEMORY_RESOURCE_H_
#define ARENARPC_MEMORY_RESOURCE_H_

#include <cstddef>
#include <memory_resource>

namespace google::protobuf {
class Arena;
}  // namespace google::protobuf

namespace arenarpc {

class PagePool;

// Bump allocation over pages of a PagePool; requests larger than half a page
// go to the heap (and are freed by release()).
class MonotonicPageResource final : public std::pmr::memory_resource {
 public:
  MonotonicPageResource();  // uses PagePool::Default()
  explicit MonotonicPageResource(PagePool& pool);
  ~MonotonicPageResource() override { release(); }
  MonotonicPageResource(const MonotonicPageResource&) = delete;
  MonotonicPageResource& operator=(const MonotonicPageResource&) = delete;

  // Returns all memory; everything allocated from it becomes invalid.
  void release();
  // Pages currently held (excluding heap-allocated large requests).
  size_t pages_held() const { return pages_held_; }

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

// Allocates on a protobuf arena, so that non-protobuf data of a request
// shares the request's pages and is freed with them. Non-owning.
class ArenaMemoryResource final : public std::pmr::memory_resource {
 public:
  explicit ArenaMemoryResource(google::protobuf::Arena* arena = nullptr)
      : arena_(arena) {}
  google::protobuf::Arena* arena() const { return arena_; }

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

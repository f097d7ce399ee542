#include "arenarpc/memory_resource.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <utility>

#include "arenarpc/internal/check.h"
#include "arenarpc/page_pool.h"

namespace arenarpc {

struct MonotonicPageResource::Page {
  Page* next;
};

struct MonotonicPageResource::Large {
  Large* next;
  void* block;  // what operator new returned
  size_t size;
  size_t alignment;
};

namespace {
char* AlignUp(char* p, size_t alignment) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((v + alignment - 1) & ~(alignment - 1));
}
}  // namespace

MonotonicPageResource::MonotonicPageResource()
    : MonotonicPageResource(PagePool::Default()) {}

void* MonotonicPageResource::do_allocate(size_t bytes, size_t alignment) {
  char* p = AlignUp(cursor_, alignment);
  if (cursor_ != nullptr && p + bytes <= limit_ && p >= cursor_) {
    cursor_ = p + bytes;
    return p;
  }
  const size_t page_size = pool_.page_size();
  if (bytes + alignment + sizeof(Page) > page_size / 2) {
    // Large: own heap block, header stored in front of the aligned payload.
    const size_t align = std::max(alignment, alignof(Large));
    const size_t header = (sizeof(Large) + align - 1) & ~(align - 1);
    const size_t size = header + bytes;
    void* block = ::operator new(size, std::align_val_t(align));
    char* payload = static_cast<char*>(block) + header;
    auto* large = reinterpret_cast<Large*>(payload - sizeof(Large));
    *large = {large_, block, size, align};
    large_ = large;
    return payload;
  }
  void* mem = pool_.Allocate();
  if (mem == nullptr) throw std::bad_alloc();  // pmr's contract
  pages_ = new (mem) Page{pages_};
  ++pages_held_;
  cursor_ = static_cast<char*>(mem) + sizeof(Page);
  limit_ = static_cast<char*>(mem) + page_size;
  p = AlignUp(cursor_, alignment);
  cursor_ = p + bytes;
  return p;
}

void MonotonicPageResource::release() {
  while (large_ != nullptr) {
    Large* l = std::exchange(large_, large_->next);
    ::operator delete(l->block, l->size, std::align_val_t(l->alignment));
  }
  while (pages_ != nullptr)
    pool_.Deallocate(std::exchange(pages_, pages_->next));
  pages_held_ = 0;
  cursor_ = limit_ = nullptr;
}

void* ArenaMemoryResource::do_allocate(size_t bytes, size_t alignment) {
  ARENARPC_CHECK(arena_ != nullptr,
                 "ArenaMemoryResource used without an arena");
  // protobuf wants sizes in multiples of 8 when alignment > 8.
  return arena_->AllocateAligned((bytes + 7) & ~size_t{7}, alignment);
}

}  // namespace arenarpc

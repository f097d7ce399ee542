#include "arenarpc/internal/thread_slots.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace arenarpc::internal {
namespace {

struct Registered {
  ThreadSlots::Owner* owner = nullptr;
  uint64_t generation = 0;  // 0: free index
};

// Leaked on purpose: threads may exit after static destructors ran.
struct Registry {
  std::mutex mu;
  std::vector<Registered> entries;
  std::vector<uint32_t> free_indices;
  uint64_t next_generation = 1;
};

Registry& GetRegistry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

// A non-trivial thread_local, touched only when a thread first Sets a slot,
// so that its destructor runs the exit hooks.
struct ThreadExitHook {
  ~ThreadExitHook() { ThreadSlots::RunExitHooks(); }
};
static thread_local ThreadExitHook exit_hook;

ThreadSlots::Key ThreadSlots::Register(Owner* owner) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  uint32_t index;
  if (!r.free_indices.empty()) {
    index = r.free_indices.back();
    r.free_indices.pop_back();
  } else {
    index = static_cast<uint32_t>(r.entries.size());
    r.entries.emplace_back();
  }
  const uint64_t generation = r.next_generation++;
  r.entries[index] = {owner, generation};
  return {index, generation};
}

void ThreadSlots::Unregister(Key key) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (key.index < r.entries.size() &&
      r.entries[key.index].generation == key.generation) {
    r.entries[key.index] = {};
    r.free_indices.push_back(key.index);
  }
}

bool ThreadSlots::Set(Key key, void* value) {
  Array& a = array_;
  if (a.dead) return false;
  (void)&exit_hook;  // odr-use: registers this thread's destructor
  if (key.index >= a.size) {
    uint32_t size = a.size ? a.size : 8;
    while (size <= key.index) size *= 2;
    auto* slots = static_cast<Slot*>(std::calloc(size, sizeof(Slot)));
    if (slots == nullptr) return false;
    if (a.size) std::memcpy(slots, a.slots, a.size * sizeof(Slot));
    std::free(a.slots);
    a.slots = slots;
    a.size = size;
  }
  a.slots[key.index] = {key.generation, value};
  return true;
}

void ThreadSlots::RunExitHooks() {
  Array& a = array_;
  a.dead = true;
  Slot* slots = a.slots;
  const uint32_t size = a.size;
  a.slots = nullptr;  // Get() misses from now on
  a.size = 0;
  Registry& r = GetRegistry();
  for (uint32_t i = 0; i < size; ++i) {
    if (slots[i].value == nullptr) continue;
    std::lock_guard<std::mutex> lock(r.mu);
    if (i < r.entries.size() && r.entries[i].generation == slots[i].generation) {
      r.entries[i].owner->OnThreadExit(slots[i].value);
    }
  }
  std::free(slots);
}

}  // namespace arenarpc::internal

#include "arenarpc/internal/thread_slots.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

struct Registered {
  ThreadSlots::Owner* owner = nullptr;  // nullptr while being unregistered
  uint64_t generation = 0;              // 0: free index
  uint32_t running = 0;  // exit hooks now calling owner->OnThreadExit
};

// Leaked on purpose: threads may exit after static destructors ran.
struct Registry {
  Mutex mu;
  CondVar hooks_done;  // some `running` dropped to 0
  std::vector<Registered> entries ABSL_GUARDED_BY(mu);
  std::vector<uint32_t> free_indices ABSL_GUARDED_BY(mu);
  uint64_t next_generation ABSL_GUARDED_BY(mu) = 1;
};

Registry& GetRegistry() {
  static Registry* r = new Registry;
  return *r;
}

// The key whose OnThreadExit this thread is running (generation 0: none),
// to turn an Unregister from inside it into an error instead of a deadlock.
thread_local constinit uint64_t running_generation = 0;

}  // namespace

// A non-trivial thread_local, touched only when a thread first Sets a slot,
// so that its destructor runs the exit hooks.
struct ThreadExitHook {
  ~ThreadExitHook() { ThreadSlots::RunExitHooks(); }
};
static thread_local ThreadExitHook exit_hook;

ThreadSlots::Key ThreadSlots::Register(Owner* owner) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  if (r.free_indices.empty()) {
    r.free_indices.push_back(static_cast<uint32_t>(r.entries.size()));
    r.entries.emplace_back();
  }
  const uint32_t index = r.free_indices.back();
  r.free_indices.pop_back();
  const uint64_t generation = r.next_generation++;
  r.entries[index] = {owner, generation, 0};
  return {index, generation};
}

void ThreadSlots::Unregister(Key key) {
  ARENARPC_CHECK(key.generation == 0 || key.generation != running_generation,
                 "ThreadSlots: an owner unregistered from its own "
                 "OnThreadExit (a pool destroyed by its own thread-exit "
                 "cleanup)");
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  if (key.index >= r.entries.size() ||
      r.entries[key.index].generation != key.generation ||
      r.entries[key.index].owner == nullptr) {
    return;
  }
  // No new hook starts for this owner; wait for the running ones, which
  // hold no lock while they run.
  r.entries[key.index].owner = nullptr;
  while (r.entries[key.index].running != 0) r.hooks_done.Wait(&r.mu);
  r.entries[key.index] = {};
  r.free_indices.push_back(key.index);
}

bool ThreadSlots::Set(Key key, void* value) {
  Array& a = array_;
  if (a.dead) return false;
  (void)&exit_hook;  // odr-use: registers this thread's destructor
  if (key.index >= a.size) {
    uint32_t size = a.size ? a.size : 8;
    while (size <= key.index) size *= 2;
    auto* slots =
        static_cast<Slot*>(std::realloc(a.slots, size * sizeof(Slot)));
    if (slots == nullptr) return false;
    std::memset(slots + a.size, 0, (size - a.size) * sizeof(Slot));
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
    Owner* owner = nullptr;
    {
      MutexLock lock(&r.mu);
      Registered& e = r.entries[i];  // i < entries.size(): Set saw its key
      if (e.generation == slots[i].generation && e.owner != nullptr) {
        owner = e.owner;
        ++e.running;  // pins the owner: Unregister waits for it
      }
    }
    if (owner == nullptr) continue;
    // Outside the lock: the cleanup may unmap, run destructors, or make and
    // destroy other pools, and other threads' exits run in parallel.
    running_generation = slots[i].generation;
    owner->OnThreadExit(slots[i].value);
    running_generation = 0;
    MutexLock lock(&r.mu);
    Registered& e = r.entries[i];
    if (--e.running == 0 && e.owner == nullptr) r.hooks_done.SignalAll();
  }
  std::free(slots);
}

}  // namespace arenarpc::internal

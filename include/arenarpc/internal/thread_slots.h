// Per-instance thread-local storage for pools that may have many instances.
//
//   class MyPool : public arenarpc::internal::ThreadSlots::Owner {
//     MyPool() : key_(ThreadSlots::Register(this)) {}
//     ~MyPool() { ThreadSlots::Unregister(key_); /* then free every cache */ }
//     Cache* cache() {  // SlowPath: new Cache, ThreadSlots::Set(key_, it)
//       auto* c = static_cast<Cache*>(ThreadSlots::Get(key_));
//       return c != nullptr ? c : SlowPath();
//     }
//     void OnThreadExit(void* cache) override;  // drain and free the cache
//   };
//
// C++ `thread_local` is per type; pools are objects. Each owner gets a key
// {index, generation}; each thread an array of {generation, value}: a
// lookup is a TLS load, a bounds check and a compare, and a reused index
// misses instead of finding a dead owner's value.
//
// Thread safety: any thread; Get and Set touch only the caller's array.
// Lifetime: when a thread exits, OnThreadExit(value) runs for each of its
// slots whose owner is registered, with no ThreadSlots lock held;
// Unregister waits for running hooks and must not be called from its own
// (checked). After its exit hook, a thread's Get returns nullptr and Set
// false.
#ifndef ARENARPC_INTERNAL_THREAD_SLOTS_H_
#define ARENARPC_INTERNAL_THREAD_SLOTS_H_

#include <cstdint>

namespace arenarpc::internal {

class ThreadSlots {
 public:
  class Owner {
   public:
    // Called on the exiting thread with the value it Set for this owner.
    virtual void OnThreadExit(void* value) = 0;

   protected:
    ~Owner() = default;
  };

  struct Key {
    uint32_t index = 0;
    uint64_t generation = 0;  // never 0 for a registered owner
  };

  static Key Register(Owner* owner);
  static void Unregister(Key key);

  // This thread's value for `key`, or nullptr if none was Set.
  static void* Get(Key key) {
    const Array& a = array_;
    if (key.index < a.size && a.slots[key.index].generation == key.generation) {
      return a.slots[key.index].value;
    }
    return nullptr;
  }

  // Stores this thread's value for `key`. Returns false if the thread is
  // exiting (its hook already ran); the value is then not stored.
  static bool Set(Key key, void* value);

 private:
  struct Slot {
    uint64_t generation;
    void* value;
  };
  struct Array {
    Slot* slots;
    uint32_t size;
    bool dead;  // the thread-exit hook ran
  };
  static void RunExitHooks();
  friend struct ThreadExitHook;

  // Trivially destructible and constant-initialised: no TLS wrapper call.
  static inline thread_local constinit Array array_{nullptr, 0, false};
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_THREAD_SLOTS_H_

// A plugin that uses arenarpc, for dlopen_plugin_test: built as a MODULE
// with its own private copy of arenarpc (hidden visibility, --exclude-libs),
// as a plugin of an application that may use arenarpc itself.
#include <google/protobuf/struct.pb.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/object_pool.h"
#include "arenarpc/page_pool.h"

#define PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct PluginItem {
  uint64_t value;
  uint64_t check;
};

// Arena, message pool, an ObjectPool instance and ObjectPool<T>::Default();
// returns the number of failed checks.
int Work(int iterations) {
  static arenarpc::MessagePool<google::protobuf::Struct> messages;
  arenarpc::ObjectPool<PluginItem> objects;
  auto& defaults = arenarpc::ObjectPool<PluginItem>::Default();
  int failures = 0;
  std::vector<PluginItem*> held;
  for (int i = 0; i < iterations; ++i) {
    arenarpc::ScopedArena arena;
    auto* s = arena.Create<google::protobuf::Struct>();
    (*s->mutable_fields())["k"].set_string_value(std::string(100, 'x'));
    auto m = messages.Acquire();
    if (!m->ParseFromString(s->SerializeAsString())) ++failures;
    if (m->fields().at("k").string_value().size() != 100) ++failures;
    const uint64_t v = static_cast<uint64_t>(i);
    held.push_back(objects.New(PluginItem{v, ~v}));
    held.push_back(defaults.New(PluginItem{v, ~v}));
    if (held.size() >= 64) {
      for (size_t j = 0; j < held.size(); ++j) {
        PluginItem* p = held[j];
        if (p->check != ~p->value) ++failures;
        (j % 2 ? defaults : objects).Delete(p);
      }
      held.clear();
    }
  }
  for (size_t j = 0; j < held.size(); ++j) {
    (j % 2 ? defaults : objects).Delete(held[j]);
  }
  return failures;
}

}  // namespace

PLUGIN_EXPORT int arenarpc_plugin_work(int iterations) {
  return Work(iterations);
}

PLUGIN_EXPORT int arenarpc_plugin_work_on_threads(int threads, int iterations) {
  std::vector<std::thread> pool;
  std::vector<int> failures(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { failures[t] = Work(iterations); });
  }
  int total = 0;
  for (int t = 0; t < threads; ++t) {
    pool[t].join();
    total += failures[t];
  }
  return total;
}

// Before dlclose: gives the plugin's process-wide pools' cached memory
// back. Their bookkeeping is never freed (see docs/OPERATE.md, "Threads and
// plugins"). On a thread of its own: a thread that used the plugin's arenarpc
// (here: pages of destroyed arenas land in its cache) keeps the plugin mapped
// until it exits.
PLUGIN_EXPORT void arenarpc_plugin_trim() {
  std::thread([] {
    arenarpc::ReleaseIdleArenas(std::chrono::milliseconds(0));
    arenarpc::PagePool::Default().FlushThreadCache();
    arenarpc::PagePool::Default().Trim();
    arenarpc::ObjectPool<PluginItem>::Default().Trim();
  }).join();
}

PLUGIN_EXPORT uint64_t arenarpc_plugin_bytes_held() {
  return arenarpc::PagePool::Default().Stats().bytes_held() +
         arenarpc::ObjectPool<PluginItem>::Default().Stats().bytes_held;
}

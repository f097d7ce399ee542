#include "arenarpc/message_pool.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <bit>
#include <deque>
#include <unordered_map>
#include <vector>

#include "arenarpc/internal/check.h"
#include "arenarpc/internal/pointer_cache.h"

namespace arenarpc::internal {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::io::CodedInputStream;

// For each message type reachable through singular message fields: its
// proto3 singular message fields without has-bit (whose Clear() deletes the
// sub-message). Built once per pool; recursive types share nodes.
struct MessagePoolCore::Plan {
  struct Node {
    struct Field {
      const FieldDescriptor* field;
      const Node* child;
    };
    std::vector<Field> fields;
  };
  std::deque<Node> nodes;  // stable addresses
  std::unordered_map<const Descriptor*, Node*> by_type;
  const Node* root = nullptr;

  static bool WithoutHasBit(const FieldDescriptor* f) {
    return f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
           !f->is_repeated() && f->real_containing_oneof() == nullptr &&
           !f->has_optional_keyword() &&
           f->file()->syntax() == FileDescriptor::SYNTAX_PROTO3;
  }

  Node* Build(const Descriptor* type) {
    if (auto it = by_type.find(type); it != by_type.end()) return it->second;
    Node* node = &nodes.emplace_back();
    by_type[type] = node;
    for (int i = 0; i < type->field_count(); ++i) {
      const FieldDescriptor* f = type->field(i);
      if (WithoutHasBit(f)) node->fields.push_back({f, Build(f->message_type())});
    }
    return node;
  }
};

// A detached, cleared sub-message kept for the field it came from.
struct Stashed {
  const FieldDescriptor* field = nullptr;
  const MessagePoolCore::Plan::Node* plan = nullptr;
  Message* sub = nullptr;  // owned here unless `lent`
  bool lent = false;       // attached to its parent for a parse
  bool present = false;    // the wire had this field (during a parse)
  std::vector<Stashed> nested;
};

struct MessagePoolCore::Entry {
  std::unique_ptr<Message> message;
  size_t peak = 0;  // largest content held, serialized bytes
  std::vector<Stashed> stash;
};

namespace {

void DeleteStash(std::vector<Stashed>& stash) {
  for (Stashed& s : stash) {
    if (!s.lent) delete s.sub;
    DeleteStash(s.nested);
  }
  stash.clear();
}

// Releases m's has-bit-less sub-messages into `stash` (recursively), then
// clears m. Everything kept is cleared, with its capacity.
void Detach(Message* m, const MessagePoolCore::Plan::Node& plan,
            std::vector<Stashed>& stash) {
  if (plan.fields.empty()) {  // the common case: no reflection call at all
    m->Clear();
    return;
  }
  const Reflection* r = m->GetReflection();
  for (const auto& f : plan.fields) {
    if (!r->HasField(*m, f.field)) continue;
    Message* sub = r->ReleaseMessage(m, f.field);
    auto it = std::find_if(stash.begin(), stash.end(),
                           [&](const Stashed& s) { return s.field == f.field; });
    if (it == stash.end()) {
      it = stash.insert(stash.end(), Stashed{f.field, f.child});
    } else if (it->sub != nullptr && it->sub != sub && !it->lent) {
      delete it->sub;  // an older copy, superseded by the one just used
    }
    it->sub = sub;
    it->lent = false;
    Detach(sub, *f.child, it->nested);
  }
  m->Clear();
}

// Lends the kept sub-messages back to `m` (which is empty) for a parse.
void Attach(Message* m, std::vector<Stashed>& stash) {
  const Reflection* r = m->GetReflection();
  for (Stashed& s : stash) {
    s.present = false;
    if (s.sub == nullptr) continue;
    Attach(s.sub, s.nested);
    r->SetAllocatedMessage(m, s.sub, s.field);
    s.lent = true;
  }
}

// After a failed parse m->Clear() deletes what was lent: forget it.
void ForgetLent(std::vector<Stashed>& stash) {
  for (Stashed& s : stash) {
    if (s.lent) {
      s.sub = nullptr;
      s.lent = false;
      ForgetLent(s.nested);
    }
  }
}

Stashed* FindLent(std::vector<Stashed>& stash, int number) {
  for (Stashed& s : stash) {
    if (s.lent && s.field->number() == number) return &s;
  }
  return nullptr;
}

bool HasLent(const std::vector<Stashed>& stash) {
  return std::any_of(stash.begin(), stash.end(), [](const Stashed& s) { return s.lent; });
}

// Marks which lent fields occur on the wire, descending into the payloads of
// those with lent children. Returns false on malformed input.
bool Scan(CodedInputStream& in, std::vector<Stashed>& stash, int end_group) {
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return end_group == 0;
    const int number = static_cast<int>(tag >> 3);
    switch (tag & 7) {
      case 0: {
        uint64_t v;
        if (!in.ReadVarint64(&v)) return false;
        break;
      }
      case 1:
        if (!in.Skip(8)) return false;
        break;
      case 5:
        if (!in.Skip(4)) return false;
        break;
      case 2: {
        uint32_t len;
        if (!in.ReadVarint32(&len)) return false;
        Stashed* s = FindLent(stash, number);
        if (s != nullptr) s->present = true;
        if (s != nullptr && HasLent(s->nested)) {
          const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(len));
          if (!Scan(in, s->nested, 0) || in.BytesUntilLimit() != 0) return false;
          in.PopLimit(limit);
        } else if (!in.Skip(static_cast<int>(len))) {
          return false;
        }
        break;
      }
      case 3: {  // group: skip its fields up to the matching end tag
        std::vector<Stashed> none;
        if (!Scan(in, none, number)) return false;
        break;
      }
      case 4:
        return number == end_group;
      default:
        return false;
    }
  }
}

// After a successful parse: sub-messages the wire did not contain go back to
// the stash (so presence matches a fresh parse); the others stay in m.
void Settle(Message* m, std::vector<Stashed>& stash) {
  const Reflection* r = m->GetReflection();
  for (Stashed& s : stash) {
    if (!s.lent) continue;
    if (s.present) {
      Settle(s.sub, s.nested);
      s.sub = nullptr;  // owned by m; Detach() takes it back on return
      s.lent = false;
    } else {
      Message* sub = r->ReleaseMessage(m, s.field);  // == s.sub, untouched
      s.lent = false;
      Detach(sub, *s.plan, s.nested);
    }
  }
}

}  // namespace

class MessagePoolCore::Cache final : public PointerCache {
 public:
  Cache(MessagePoolCore* core, const MessagePoolOptions& o)
      : PointerCache(o.idle_per_thread, o.idle_max), core_(core) {}
  ~Cache() override { Shutdown(); }

 protected:
  size_t Make(void** out, size_t n) override {
    (void)n;  // one at a time: idle instances cost memory
    auto* e = new Entry;
    e->message.reset(core_->prototype_->New());
    core_->created_.fetch_add(1, std::memory_order_relaxed);
    out[0] = e;
    return 1;
  }
  void Destroy(void* const* items, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      auto* e = static_cast<Entry*>(items[i]);
      core_->retained_.Add(-static_cast<int64_t>(e->peak));
      core_->dropped_.fetch_add(1, std::memory_order_relaxed);
      DeleteStash(e->stash);
      delete e;
    }
  }

 private:
  MessagePoolCore* const core_;
};

MessagePoolCore::MessagePoolCore(const Message* prototype,
                                 const MessagePoolOptions& options)
    : options_(options),
      prototype_(prototype),
      plan_(std::make_unique<Plan>()),
      bound_(options.hard_cap_bytes) {
  ARENARPC_CHECK(prototype != nullptr, "MessagePool: null prototype");
  plan_->root = plan_->Build(prototype->GetDescriptor());
  cache_ = std::make_unique<Cache>(this, options);
}

MessagePoolCore::~MessagePoolCore() {
  ARENARPC_DCHECK(in_use_.Sum() == 0,
                  "MessagePool destroyed while PooledMessages are alive");
  cache_.reset();
  for (Entry* e : large_) {
    DeleteStash(e->stash);
    delete e;
  }
}

Message* MessagePoolCore::MessageOf(Entry* entry) { return entry->message.get(); }

MessagePoolCore::Entry* MessagePoolCore::Acquire() {
  auto* e = static_cast<Entry*>(cache_->Pop());
  ARENARPC_CHECK(e != nullptr, "MessagePool: out of memory");
  retained_.Add(-static_cast<int64_t>(e->peak));
  in_use_.Add(1);
  return e;
}

void MessagePoolCore::Return(Entry* e, size_t size_hint) {
  ARENARPC_DCHECK(e->message->GetDescriptor() == prototype_->GetDescriptor(),
                  "MessagePool: message returned to the wrong pool");
  Message* m = e->message.get();
  size_t size = size_hint;
  if (size == 0) {
    const int cached = m->GetCachedSize();  // set if sized during this use
    size = cached > 0 ? static_cast<size_t>(cached) : m->ByteSizeLong();
  }
  Observe(size);
  e->peak = std::max(e->peak, size);
  in_use_.Add(-1);
  const bool large = e->peak > Bound();
  if (large) {
    std::lock_guard<std::mutex> lock(large_mu_);
    if (large_bytes_ + e->peak > options_.large_reserve_bytes) {
      evicted_.fetch_add(1, std::memory_order_relaxed);
      DeleteStash(e->stash);
      delete e;
      return;
    }
    large_bytes_ += e->peak;  // reserve the room; pushed below
  }
  Detach(m, *plan_->root, e->stash);
  m->ByteSizeLong();  // cached size := 0, so the next use can tell
  retained_.Add(static_cast<int64_t>(e->peak));
  if (large) {
    std::lock_guard<std::mutex> lock(large_mu_);
    large_.push_back(e);
  } else {
    cache_->Push(e);
  }
}

MessagePoolCore::Entry* MessagePoolCore::TakeLarge(size_t size) {
  std::lock_guard<std::mutex> lock(large_mu_);
  // The smallest reserved instance that held at least half this size.
  Entry* best = nullptr;
  size_t best_index = 0;
  for (size_t i = 0; i < large_.size(); ++i) {
    Entry* e = large_[i];
    if (2 * e->peak >= size && (best == nullptr || e->peak < best->peak)) {
      best = e;
      best_index = i;
    }
  }
  if (best != nullptr) {
    large_[best_index] = large_.back();
    large_.pop_back();
    large_bytes_ -= best->peak;
  }
  return best;
}

bool MessagePoolCore::Parse(Entry** entry, std::string_view wire) {
  if (wire.size() > Bound() && (*entry)->peak < wire.size()) {
    if (Entry* large = TakeLarge(wire.size())) {
      // Swap: the small (empty) instance goes back, the large one serves.
      Entry* small = *entry;
      retained_.Add(static_cast<int64_t>(small->peak) - static_cast<int64_t>(large->peak));
      cache_->Push(small);
      *entry = large;
      large_reused_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  Entry* e = *entry;
  Message* m = e->message.get();
  Attach(m, e->stash);
  // m is empty: merge == parse.
  google::protobuf::io::ArrayInputStream stream(wire.data(), static_cast<int>(wire.size()));
  bool ok = m->MergeFromBoundedZeroCopyStream(&stream, static_cast<int>(wire.size()));
  if (ok && HasLent(e->stash)) {
    CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()),
                        static_cast<int>(wire.size()));
    ok = Scan(in, e->stash, 0);
  }
  if (!ok) {
    m->Clear();  // deletes what was lent
    ForgetLent(e->stash);
    m->ByteSizeLong();
    return false;
  }
  Settle(m, e->stash);
  return true;
}

void MessagePoolCore::Observe(size_t size) {
  // Sample: the shared histogram is touched by one return in kSampleEvery
  // per thread, so threads rarely contend for its cache lines.
  static thread_local constinit uint32_t tick = 0;
  if (++tick % kSampleEvery != 0) return;
  const int bucket = std::min<int>(std::bit_width(size), kBuckets - 1);
  histogram_[bucket].fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = samples_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % 64 != 0) return;
  // Recompute the bound from the histogram (approximate under races).
  uint64_t counts[kBuckets];
  uint64_t total = 0;
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = histogram_[i].load(std::memory_order_relaxed);
    total += counts[i];
  }
  const uint64_t rank = static_cast<uint64_t>(options_.percentile * static_cast<double>(total));
  uint64_t seen = 0;
  int b = kBuckets - 1;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen > rank) {
      b = i;
      break;
    }
  }
  const double upper = b == 0 ? 1.0 : static_cast<double>(uint64_t{1} << b);  // bucket's top
  size_t bound = static_cast<size_t>(options_.slack * upper);
  bound = std::max(bound, options_.min_bound_bytes);
  bound = std::min(bound, options_.hard_cap_bytes);
  bound_.store(bound, std::memory_order_relaxed);
  if (n % 1024 == 0) {  // decay: recent sizes weigh more
    for (auto& h : histogram_) h.store(h.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
  }
}

size_t MessagePoolCore::Bound() { return bound_.load(std::memory_order_relaxed); }

MessagePoolStats MessagePoolCore::Stats() const {
  const PointerCache::Counts c = cache_->GetCounts();
  MessagePoolStats s;
  s.acquisitions = c.hits + c.misses;
  s.created = created_.load(std::memory_order_relaxed);
  s.reuse_hits = s.acquisitions > s.created ? s.acquisitions - s.created : 0;
  s.evicted_by_guard = evicted_.load(std::memory_order_relaxed);
  s.dropped_idle = dropped_.load(std::memory_order_relaxed);
  s.in_use = static_cast<uint64_t>(std::max<int64_t>(0, in_use_.Sum()));
  s.idle = c.in_depot + c.in_threads;
  s.bound_bytes = bound_.load(std::memory_order_relaxed);
  s.large_reused = large_reused_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(large_mu_);
    s.large_kept = large_.size();
  }
  s.idle += s.large_kept;
  s.retained_bytes_estimate =
      static_cast<uint64_t>(std::max<int64_t>(0, retained_.Sum()));
  return s;
}

}  // namespace arenarpc::internal

// kAuto's sampling and measuring: sampled calls are serialized on the call
// thread and queued; one low-priority thread parses them again in every
// mode (CostProbe) and feeds each method's ModeChooser.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "arenarpc/cost_probe.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/mode_chooser.h"
#include "arenarpc/page_pool.h"

namespace arenarpc::internal {

struct AutoMethod::Impl {
  std::string name;  // "Req -> Resp"
  const google::protobuf::Message* request_prototype;
  const google::protobuf::Message* response_prototype;
  ModeChooser chooser;
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> dropped{0};
  // Used by the measuring thread only.
  std::unique_ptr<CostProbe> request_probe;
  std::unique_ptr<CostProbe> response_probe;
};

namespace {

// What the queue may hold: a few samples, never much memory.
constexpr size_t kMaxQueued = 4;
constexpr size_t kMaxQueuedBytes = size_t{16} << 20;

struct Sample {
  AutoMethod::Impl* method;
  std::string request;  // empty if the request was freed early
  std::string response;
};

class Worker {
 public:
  static Worker& Get() {
    static Worker* const worker = new Worker();  // outlives every call
    return *worker;
  }

  bool TryPush(Sample&& s) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    const size_t bytes = s.request.size() + s.response.size();
    if (!lock.owns_lock() || queue_.size() >= kMaxQueued ||
        queued_bytes_ + bytes > kMaxQueuedBytes) {
      return false;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(s));
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    cv_.notify_one();
    return true;
  }

  void Register(AutoMethod::Impl* m) {
    std::lock_guard<std::mutex> lock(methods_mu_);
    methods_.push_back(m);
  }
  std::vector<AutoMethod::Impl*> Methods() {
    std::lock_guard<std::mutex> lock(methods_mu_);
    return methods_;
  }

 private:
  void Run() {
    // Below the server's threads: measuring must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      Sample s;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        s = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= s.request.size() + s.response.size();
      }
      Measure(s);
      // The probe's arena pages go where the server's threads can use them
      // (CostProbe already gave its heap copy back).
      PagePool::Default().FlushThreadCache();
    }
  }

  static void Measure(Sample& s) {
    AutoMethod::Impl& m = *s.method;
    if (m.request_probe == nullptr) {
      m.request_probe = std::make_unique<CostProbe>(m.request_prototype);
      m.response_probe = std::make_unique<CostProbe>(m.response_prototype);
    }
    ModeCosts total = m.request_probe->Measure(s.request);
    const ModeCosts response = m.response_probe->Measure(s.response);
    total.ok = total.ok && response.ok;
    for (int i = 0; i < kNumAllocationModes; ++i) total.ns[i] += response.ns[i];
    m.chooser.Observe(total);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Sample> queue_;  // guarded by mu_
  size_t queued_bytes_ = 0;   // guarded by mu_
  bool started_ = false;      // guarded by mu_

  std::mutex methods_mu_;
  std::vector<AutoMethod::Impl*> methods_;  // guarded by methods_mu_
};

uint32_t NextRandom() {
  static thread_local constinit uint64_t state = 0;
  if (state == 0) state = reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

}  // namespace

AutoMethod::AutoMethod(const google::protobuf::Message* request_prototype,
                       const google::protobuf::Message* response_prototype)
    : impl_(new Impl{std::string(request_prototype->GetDescriptor()->full_name()) +
                         " -> " +
                         std::string(response_prototype->GetDescriptor()->full_name()),
                     request_prototype, response_prototype, ModeChooser(),
                     {}, {}, nullptr, nullptr}) {
  Worker::Get().Register(impl_);
}

AllocationMode AutoMethod::mode() const { return impl_->chooser.current(); }

bool AutoMethod::ShouldSample() {
  const uint32_t one_in =
      impl_->submitted.load(std::memory_order_relaxed) < 32 ? 8 : 512;
  return NextRandom() % one_in == 0;
}

void AutoMethod::Submit(const google::protobuf::Message* request,
                        const google::protobuf::Message& response) {
  if (request == nullptr) return;  // freed early: nothing to measure
  Sample s{impl_, request->SerializeAsString(), response.SerializeAsString()};
  if (Worker::Get().TryPush(std::move(s))) {
    impl_->submitted.fetch_add(1, std::memory_order_relaxed);
  } else {
    impl_->dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace arenarpc::internal

namespace arenarpc {

std::vector<AutoMethodStats> GetAutoMethodStats() {
  std::vector<AutoMethodStats> out;
  for (internal::AutoMethod::Impl* m : internal::Worker::Get().Methods()) {
    const ModeChooser::Snapshot snap = m->chooser.snapshot();
    AutoMethodStats s;
    s.method = m->name;
    s.mode = snap.mode;
    for (int i = 0; i < kNumAllocationModes; ++i) s.cost_us[i] = snap.cost_ns[i] / 1e3;
    s.samples = snap.samples;
    s.switches = snap.switches;
    s.dropped = m->dropped.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace arenarpc

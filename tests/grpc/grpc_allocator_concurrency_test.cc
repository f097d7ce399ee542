// arenarpc::grpc's own thread-safety, under TSan, without a gRPC server.
// Debian's libgrpc is not TSan-instrumented, so no test that runs gRPC can
// run under TSan (docs/DESIGN_NOTES.md, "TSan and gRPC"). The allocators,
// holders, stats and stream arenas are plain C++ that gRPC drives from its
// threads; here the test plays gRPC's part: holders made on some threads and
// freed/released on others (as when Finish() runs on a timer thread), a metrics
// thread scraping stats and the Prometheus text meanwhile, and a stream's
// messages made on one thread and dropped on another. Messages are map-free
// (Record): Debian's libprotobuf crashes under TSan when an arena destroys a
// map field.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/grpc/internal/sync_handler.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/stream.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "grpc/grpc_test_util.h"
#include "test_util.h"

namespace arenarpc {
namespace {

using test::Record;

// A closable blocking queue: the hand-off between "gRPC threads".
template <class T>
class Queue {
 public:
  void Push(T v) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(v));
    cv_.notify_one();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

// The request of call `i`, the same bytes every time it is asked for.
std::string SerializedRecord(int i) {
  std::mt19937 rng(static_cast<uint32_t>(i));
  Record r;
  test::FillRecord(rng, /*depth=*/1, &r);
  r.set_stamp(i);
  return r.SerializeAsString();
}

class AllocatorConcurrencyTest
    : public ::testing::TestWithParam<AllocationMode> {};

TEST_P(AllocatorConcurrencyTest, HoldersMadeAndReleasedOnDifferentThreads) {
  const AllocationMode mode = GetParam();
  auto* allocator = DefaultMessageAllocator<Record, Record>(mode);
  ASSERT_NE(allocator, nullptr);
  const GrpcModeStats before = testing::ModeStats(mode);
  constexpr int kMakers = 2;
  constexpr int kPerMaker = 1500;
  using Holder = ::grpc::MessageHolder<Record, Record>;
  Queue<std::pair<int, Holder*>> queue;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::atomic<int> freed_early{0};

  std::thread scraper([&] {  // a metrics endpoint, scraped all the time
    while (!done.load()) {
      if (testing::ModeStats(mode).calls < before.calls) bad.fetch_add(1);
      if (RenderPrometheusStats().find("arenarpc_grpc_calls_total") ==
          std::string::npos) {
        bad.fetch_add(1);
      }
    }
  });
  std::vector<std::thread> makers;
  for (int m = 0; m < kMakers; ++m) {
    makers.emplace_back([&, m] {
      for (int i = 0; i < kPerMaker; ++i) {
        const int id = m * kPerMaker + i;
        Holder* h = allocator->AllocateMessages();
        // gRPC parses the request into the holder, the handler answers.
        if (!h->request()->ParseFromString(SerializedRecord(id)))
          bad.fetch_add(1);
        h->response()->CopyFrom(*h->request());
        h->response()->add_tags("answered");
        queue.Push({id, h});
      }
    });
  }
  std::vector<std::thread> releasers;
  for (int r = 0; r < 2; ++r) {
    releasers.emplace_back([&] {
      while (std::optional<std::pair<int, Holder*>> item = queue.Pop()) {
        auto [id, h] = *item;
        Record expected;
        const bool parsed = expected.ParseFromString(SerializedRecord(id));
        expected.add_tags("answered");
        if (!parsed || h->response()->SerializeAsString() !=
                           expected.SerializeAsString()) {
          bad.fetch_add(1);
        }
        if (id % 3 == 0) {  // the handler dropped the request early
          h->FreeRequest();
          freed_early.fetch_add(1);
        }
        h->Release();  // gRPC, after OnDone
      }
    });
  }
  for (std::thread& t : makers) t.join();
  queue.Close();
  for (std::thread& t : releasers) t.join();
  done.store(true);
  scraper.join();

  EXPECT_EQ(bad.load(), 0);
  const GrpcModeStats after = testing::ModeStats(mode);
  EXPECT_EQ(after.calls, before.calls + kMakers * kPerMaker);
  EXPECT_EQ(after.in_flight, before.in_flight);
  EXPECT_EQ(after.free_request_calls,
            before.free_request_calls + freed_early.load());
  if (mode == AllocationMode::kReuse) {
    EXPECT_EQ(DefaultMessagePool<Record>().Stats().in_use, 0u);
    const uint64_t fresh =
        DefaultMessagePool<Record>().Stats().fresh_arena_returns;
    if (!internal::kProto3SingularMessagesHaveHasbits) {
      // Before v23 Clear() deletes Record's proto3 singular `main`: a type
      // Clear() cannot keep whole, given a fresh arena per use.
      EXPECT_GT(fresh, 0u);
    } else {
      // From v23 Clear() keeps `main`: the pooled instances are reused.
      EXPECT_EQ(fresh, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, AllocatorConcurrencyTest, testing::AllModes(),
                         testing::ModeTestName);

// A bidi stream: the reader thread makes requests, the writer thread gets
// them, makes responses and drops both, with a few messages alive at once.
// The sync adapter's hand-off from Deserialize to RunHandler: gRPC's sync
// threads park holders under their calls and take them back, some on
// another thread (as after an interceptor that continues elsewhere), while
// stats read the count.
TEST(SyncHandoffConcurrencyTest, ParkedOnOneThreadTakenOnAnother) {
  constexpr int kCalls = 20000;
  Queue<uintptr_t> handed;
  std::atomic<int> taken{0};
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) (void)internal::ParkedHolders();
  });
  std::thread taker([&] {
    while (std::optional<uintptr_t> call = handed.Pop()) {
      const void* key = reinterpret_cast<const void*>(*call);
      EXPECT_EQ(internal::TakeCall(key).holder,
                reinterpret_cast<void*>(*call + 1));
      EXPECT_EQ(internal::TakeCall(key).holder, nullptr);  // taken once
      taken.fetch_add(1);
    }
  });
  std::thread parker([&] {
    for (int i = 0; i < kCalls; ++i) {
      const uintptr_t call = 0x10000 + uintptr_t{64} * i;
      internal::ParkCall(reinterpret_cast<const void*>(call),
                         {reinterpret_cast<void*>(call + 1), nullptr});
      handed.Push(call);
    }
    handed.Close();
  });
  parker.join();
  taker.join();
  done = true;
  scraper.join();
  EXPECT_EQ(taken.load(), kCalls);
  EXPECT_EQ(internal::ParkedHolders(), 0u);
}

// ServerOptions::max_calls_in_flight: calls admitted and ended on gRPC's
// threads at once never exceed the limit, and every refusal is counted.
TEST(InFlightLimitConcurrencyTest, NeverOverTheLimit) {
  constexpr int kMax = 3, kThreads = 4, kCalls = 20000;
  internal::InFlightLimit limit(kMax);
  internal::ShedCounters* shed = internal::ShedCountersFor("test.Limit/Calls");
  const uint64_t refused_before = shed->limit.load();
  std::atomic<int> inside{0}, most{0}, admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        if (!limit.Admit(shed)) continue;
        admitted.fetch_add(1);
        const int now = inside.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        inside.fetch_sub(1);
        limit.Done();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), kMax);
  EXPECT_EQ(admitted.load() + (shed->limit.load() - refused_before),
            uint64_t{kThreads} * kCalls);
  for (int i = 0; i < kMax; ++i) EXPECT_TRUE(limit.Admit(shed));  // all back
  EXPECT_FALSE(limit.Admit(shed));
}

TEST(StreamArenaConcurrencyTest, MessagesMadeAndDroppedOnTwoThreads) {
  StreamArena arena(/*recycle_bytes=*/16 << 10);  // rotate generations often
  Queue<StreamMessage<Record>> queue;
  std::atomic<int> bad{0};
  constexpr int kMessages = 3000;
  std::thread reader([&] {
    for (int i = 0; i < kMessages; ++i) {
      StreamMessage<Record> request = arena.Create<Record>();
      if (!request->ParseFromString(SerializedRecord(i))) bad.fetch_add(1);
      queue.Push(std::move(request));
    }
    queue.Close();
  });
  std::thread writer([&] {
    int i = 0;
    while (std::optional<StreamMessage<Record>> request = queue.Pop()) {
      if ((*request)->stamp() != i++) bad.fetch_add(1);
      StreamMessage<Record> response = arena.Create<Record>();
      const std::string title = (*request)->title();
      response->set_title(title);
      request->reset();
      if (response->title() != title) bad.fetch_add(1);
    }
    if (i != kMessages) bad.fetch_add(1);
  });
  reader.join();
  writer.join();
  EXPECT_EQ(bad.load(), 0);
  const StreamArenaStats s = arena.Stats();
  EXPECT_EQ(s.messages, 2u * kMessages);
  EXPECT_EQ(s.live_messages, 0u);
  EXPECT_GT(s.generations, 1u);
}

// A callback reactor's StreamMessages: each Next() may run on another
// thread than the last (gRPC runs OnReadDone wherever the read completed),
// handed over as gRPC does; a second stream writes at the same time. Every
// mode, the shared pools and totals touched from both threads.
TEST(StreamMessagesConcurrencyTest, NextAlternatesThreads) {
  for (AllocationMode mode : {AllocationMode::kHeap, AllocationMode::kArena,
                              AllocationMode::kReuse, AllocationMode::kAuto}) {
    StreamMethod<Record, Record> method("test.Stream/Chat", mode);
    StreamMessages<Record> in = method.Requests();
    StreamMessages<Record> out = method.Responses();
    Queue<int> to_a;
    Queue<int> to_b;
    std::atomic<int> bad{0};
    constexpr int kMessages = 1000;
    auto read = [&](int i) {
      if (!in.Next()->ParseFromString(SerializedRecord(i))) bad.fetch_add(1);
    };
    std::thread a([&] {
      while (std::optional<int> i = to_a.Pop()) {
        read(*i);
        to_b.Push(*i);  // OnReadDone, on thread b
      }
      to_b.Close();
    });
    std::thread b([&] {
      int i = 0;
      to_a.Push(i);
      while (i < kMessages) {
        if (!to_b.Pop().has_value()) break;
        if (in->stamp() != i) bad.fetch_add(1);
        if (++i < kMessages) to_a.Push(i);  // the next read, on thread a
      }
      to_a.Close();
    });
    std::thread w([&] {
      for (int i = 0; i < kMessages; ++i) out.Next()->set_stamp(i);
      out.Release();
    });
    b.join();
    a.join();
    w.join();
    in.Release();
    EXPECT_EQ(bad.load(), 0) << AllocationModeName(mode);
    EXPECT_EQ(in.messages(), uint64_t{kMessages});
    EXPECT_EQ(GetStreamTotals().live_messages, 0u);
  }
}

}  // namespace
}  // namespace arenarpc

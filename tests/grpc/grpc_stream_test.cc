// Streaming methods on StreamMessages (arenarpc/grpc/streaming.h): every
// kind (client-, server-, bidi-streaming) x sync and callback API x every
// mode, end to end over a real in-process server; bounded growth on a long
// stream; malformed and oversize messages, cancellation, deadlines and
// Shutdown mid-stream: clean statuses, every message and page back.
#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/install_result.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "arenarpc/page_pool.h"
#include "grpc/grpc_test_util.h"
#include "stream_test.grpc.pb.h"

namespace arenarpc {
namespace {

using streamtest::Chunk;
using streamtest::StreamTest;
using streamtest::Summary;
using testing::WaitFor;

// A chunk of about `bytes` whose string sizes depend on `i`, with
// sub-messages Clear() drops (inner, each item's leaf): what a single arena
// message parsed into again abandons on its arena, message after message.
void FillChunk(int i, size_t bytes, Chunk* c) {
  const size_t n = 16;
  for (size_t k = 0; k < n; ++k) {
    c->add_payload(std::string(bytes / n / 2 + (i * 7 + k) % 97, 'a' + k % 26));
  }
  c->mutable_inner()->set_blob(std::string(256 + i % 64, 'z'));
  const size_t items = bytes / 2 / 64;
  for (size_t k = 0; k < items; ++k) {
    streamtest::Inner* item = c->add_items();
    item->set_blob(std::string(16, 'b'));
    item->mutable_leaf()->set_value(std::string(24 + (i + k) % 8, 'l'));
  }
}

uint64_t ChunkBytes(const Chunk& c) { return c.ByteSizeLong(); }

// Pages handed out now, after giving back what only caches hold (idle
// pooled instances, idle arenas' first pages).
uint64_t PagesInUseAtRest() {
  DefaultMessagePool<Chunk>().ReleaseIdleCaches(std::chrono::milliseconds(0));
  DefaultMessagePool<Chunk>().Trim();
  DefaultMessagePool<Summary>().ReleaseIdleCaches(std::chrono::milliseconds(0));
  DefaultMessagePool<Summary>().Trim();
  ReleaseIdleArenas(std::chrono::milliseconds(0));
  return PagePool::Default().Stats().pages_in_use;
}

// What the server saw, for the tests to check.
struct Seen {
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> max_pages_in_use{0};  // sampled at each message
  std::atomic<uint64_t> peak_arena_bytes{0};
  std::atomic<int> ended{0};  // handlers / reactors finished
  void Message() {
    messages.fetch_add(1);
    const uint64_t p = PagePool::Default().Stats().pages_in_use;
    uint64_t m = max_pages_in_use.load();
    while (p > m && !max_pages_in_use.compare_exchange_weak(m, p)) {
    }
  }
  void Peak(uint64_t b) {
    uint64_t m = peak_arena_bytes.load();
    while (b > m && !peak_arena_bytes.compare_exchange_weak(m, b)) {
    }
  }
};

// The three methods' installs, shared by both services.
struct Methods {
  explicit Methods(AllocationMode mode, ServerApi api)
      : collect("arenarpc.streamtest.StreamTest/Collect", mode, api),
        fan("arenarpc.streamtest.StreamTest/Fan", mode, api),
        chat("arenarpc.streamtest.StreamTest/Chat", mode, api) {}
  StreamMethod<Chunk, Summary> collect;
  StreamMethod<Chunk, Chunk> fan;
  StreamMethod<Chunk, Chunk> chat;
};

// Sync API, as gRPC's route_guide writes it, one line changed per loop.
class SyncImpl final : public StreamTest::Service {
 public:
  SyncImpl(Methods* m, Seen* seen) : m_(m), seen_(seen) {}

  grpc::Status Collect(grpc::ServerContext*, grpc::ServerReader<Chunk>* reader,
                       Summary* summary) override {
    StreamMessages<Chunk> chunks = m_->collect.Requests();
    while (reader->Read(chunks.Next())) {
      seen_->Message();
      summary->set_messages(summary->messages() + 1);
      summary->set_bytes(summary->bytes() + ChunkBytes(*chunks));
    }
    seen_->Peak(chunks.peak_arena_bytes());
    seen_->ended.fetch_add(1);
    return grpc::Status::OK;
  }

  grpc::Status Fan(grpc::ServerContext* context, const Chunk* request,
                   grpc::ServerWriter<Chunk>* writer) override {
    StreamMessages<Chunk> out = m_->fan.Responses();
    grpc::Status status = grpc::Status::OK;
    for (uint32_t i = 0; i < request->count(); ++i) {
      Chunk* c = out.Next();
      *c = *request;
      c->set_count(i);
      seen_->Message();
      if (!writer->Write(*c)) {
        status = grpc::Status(grpc::StatusCode::CANCELLED, "write failed");
        break;
      }
    }
    seen_->Peak(out.peak_arena_bytes());
    seen_->ended.fetch_add(1);
    return context->IsCancelled() ? grpc::Status::CANCELLED : status;
  }

  grpc::Status Chat(grpc::ServerContext*,
                    grpc::ServerReaderWriter<Chunk, Chunk>* stream) override {
    StreamMessages<Chunk> in = m_->chat.Requests();
    StreamMessages<Chunk> out = m_->chat.Responses();
    while (stream->Read(in.Next())) {
      seen_->Message();
      Chunk* reply = out.Next();
      *reply = *in;
      if (!stream->Write(*reply)) break;
    }
    seen_->Peak(std::max(in.peak_arena_bytes(), out.peak_arena_bytes()));
    seen_->ended.fetch_add(1);
    return grpc::Status::OK;
  }

 private:
  Methods* const m_;
  Seen* const seen_;
};

// Callback API: the reactors own their StreamMessages; OnDone ends them.
class CallbackImpl final : public StreamTest::CallbackService {
 public:
  CallbackImpl(Methods* m, Seen* seen) : m_(m), seen_(seen) {}

  grpc::ServerReadReactor<Chunk>* Collect(grpc::CallbackServerContext*,
                                          Summary* summary) override {
    class Reader : public grpc::ServerReadReactor<Chunk> {
     public:
      Reader(Methods* m, Seen* seen, Summary* summary)
          : seen_(seen), summary_(summary), chunks_(m->collect.Requests()) {
        StartRead(chunks_.Next());
      }
      void OnReadDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::OK);
        seen_->Message();
        summary_->set_messages(summary_->messages() + 1);
        summary_->set_bytes(summary_->bytes() + ChunkBytes(*chunks_));
        StartRead(chunks_.Next());
      }
      void OnDone() override {
        seen_->Peak(chunks_.peak_arena_bytes());
        seen_->ended.fetch_add(1);
        delete this;
      }

     private:
      Seen* const seen_;
      Summary* const summary_;
      StreamMessages<Chunk> chunks_;
    };
    return new Reader(m_, seen_, summary);
  }

  grpc::ServerWriteReactor<Chunk>* Fan(grpc::CallbackServerContext*,
                                       const Chunk* request) override {
    class Writer : public grpc::ServerWriteReactor<Chunk> {
     public:
      Writer(Methods* m, Seen* seen, const Chunk* request)
          : seen_(seen), request_(request), out_(m->fan.Responses()) {
        Next();
      }
      void OnWriteDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::CANCELLED);
        Next();
      }
      void OnDone() override {
        seen_->Peak(out_.peak_arena_bytes());
        seen_->ended.fetch_add(1);
        delete this;
      }

     private:
      void Next() {
        if (sent_ == request_->count()) return Finish(grpc::Status::OK);
        Chunk* c = out_.Next();  // the last one was written: released
        *c = *request_;
        c->set_count(sent_++);
        seen_->Message();
        StartWrite(c);
      }
      Seen* const seen_;
      const Chunk* const request_;
      uint32_t sent_ = 0;
      StreamMessages<Chunk> out_;
    };
    return new Writer(m_, seen_, request);
  }

  grpc::ServerBidiReactor<Chunk, Chunk>* Chat(
      grpc::CallbackServerContext*) override {
    // Reads one, writes its echo, then reads the next: one read and one
    // write StreamMessages, each used by one callback at a time.
    class Bidi : public grpc::ServerBidiReactor<Chunk, Chunk> {
     public:
      Bidi(Methods* m, Seen* seen)
          : seen_(seen), in_(m->chat.Requests()), out_(m->chat.Responses()) {
        StartRead(in_.Next());
      }
      void OnReadDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::OK);
        seen_->Message();
        Chunk* reply = out_.Next();
        *reply = *in_;
        StartWrite(reply);
      }
      void OnWriteDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::CANCELLED);
        StartRead(in_.Next());
      }
      void OnDone() override {
        seen_->Peak(std::max(in_.peak_arena_bytes(), out_.peak_arena_bytes()));
        seen_->ended.fetch_add(1);
        delete this;
      }

     private:
      Seen* const seen_;
      StreamMessages<Chunk> in_;
      StreamMessages<Chunk> out_;
    };
    return new Bidi(m_, seen_);
  }

 private:
  Methods* const m_;
  Seen* const seen_;
};

class StreamServer {
 public:
  StreamServer(AllocationMode mode, ServerApi api,
               int max_receive_bytes = 16 << 20)
      : methods_(mode, api), sync_(&methods_, &seen_), cb_(&methods_, &seen_) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.SetMaxReceiveMessageSize(max_receive_bytes);
    if (api == ServerApi::kSync) {
      builder.RegisterService(&sync_);
    } else {
      builder.RegisterService(&cb_);
    }
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
  }
  ~StreamServer() { Shutdown(); }
  void Shutdown() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }
  std::shared_ptr<grpc::Channel> NewChannel() const {
    return testing::NewTestChannel("127.0.0.1:" + std::to_string(port_));
  }
  Seen& seen() { return seen_; }
  const Methods& methods() const { return methods_; }

 private:
  Methods methods_;
  Seen seen_;
  SyncImpl sync_;
  CallbackImpl cb_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

void SetDeadline(grpc::ClientContext* context, std::chrono::seconds s) {
  context->set_deadline(std::chrono::system_clock::now() + s);
}

// Every page back: kAuto's measuring thread may hold a sample's arena for
// a moment, at the baseline or now, so wait (bounded) for it to let go.
void ExpectPagesBack(uint64_t pages_before) {
  uint64_t now = 0;
  EXPECT_TRUE(WaitFor([&] {
    now = PagesInUseAtRest();
    return now <= pages_before;
  })) << now
      << " pages in use, " << pages_before << " before";
}

// Streams and pages at rest once the server's handlers all ended.
void ExpectStreamsBack(StreamServer* server, int streams,
                       uint64_t pages_before) {
  EXPECT_TRUE(WaitFor([&] { return server->seen().ended.load() >= streams; }))
      << server->seen().ended.load();
  server->Shutdown();
  const StreamTotals t = GetStreamTotals();
  EXPECT_EQ(t.live_messages, 0u);
  EXPECT_EQ(t.streams, 0u);
  ExpectPagesBack(pages_before);
}

using Param = std::tuple<AllocationMode, ServerApi>;

class GrpcStreamTest : public ::testing::TestWithParam<Param> {
 protected:
  AllocationMode mode() const { return std::get<0>(GetParam()); }
  ServerApi api() const { return std::get<1>(GetParam()); }
  // The pages in use at rest, then a server of the test's mode and API.
  void Start(int max_receive_bytes = 16 << 20) {
    pages_before_ = PagesInUseAtRest();
    server_ = std::make_unique<StreamServer>(mode(), api(), max_receive_bytes);
    stub_ = StreamTest::NewStub(server_->NewChannel());
  }
  void ExpectAllBack(int streams) {
    ExpectStreamsBack(server_.get(), streams, pages_before_);
  }

  uint64_t pages_before_ = 0;
  std::unique_ptr<StreamServer> server_;
  std::unique_ptr<StreamTest::Stub> stub_;
};

TEST_P(GrpcStreamTest, EveryKindEndToEnd) {
  const StreamTotals before = GetStreamTotals();
  Start();
  EXPECT_FALSE(server_->methods().chat.report().unary);
  EXPECT_TRUE(server_->methods().chat.report().served);
  constexpr int kMessages = 40;
  {  // client-streaming
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(60));
    Summary summary;
    auto writer = stub_->Collect(&context, &summary);
    uint64_t bytes = 0;
    for (int i = 0; i < kMessages; ++i) {
      Chunk c;
      FillChunk(i, 8 << 10, &c);
      bytes += c.ByteSizeLong();
      ASSERT_TRUE(writer->Write(c));
    }
    writer->WritesDone();
    const grpc::Status s = writer->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(summary.messages(), uint64_t{kMessages});
    EXPECT_EQ(summary.bytes(), bytes);  // parsed whole, in place
  }
  {  // server-streaming
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(60));
    Chunk request;
    FillChunk(3, 8 << 10, &request);
    request.set_count(kMessages);
    auto reader = stub_->Fan(&context, request);
    Chunk c;
    uint32_t n = 0;
    while (reader->Read(&c)) {
      EXPECT_EQ(c.count(), n);
      EXPECT_EQ(c.payload_size(), request.payload_size());
      EXPECT_EQ(c.inner().blob(), request.inner().blob());
      ++n;
    }
    const grpc::Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(n, uint32_t{kMessages});
  }
  {  // bidi
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(60));
    auto stream = stub_->Chat(&context);
    for (int i = 0; i < kMessages; ++i) {
      Chunk c;
      FillChunk(i, 8 << 10, &c);
      ASSERT_TRUE(stream->Write(c));
      Chunk echo;
      ASSERT_TRUE(stream->Read(&echo));
      EXPECT_EQ(echo.SerializeAsString(), c.SerializeAsString());
    }
    stream->WritesDone();
    const grpc::Status s = stream->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(server_->seen().messages.load(), uint64_t{3 * kMessages});
  ExpectAllBack(3);
  // Every message was counted, in the mode it ran in (kAuto: any of the
  // three; the kill switch is off here).
  const StreamTotals after = GetStreamTotals();
  uint64_t messages = 0;
  for (int i = 0; i < kNumAllocationModes; ++i) {
    messages += after.messages[i] - before.messages[i];
  }
  // Each handler's Next() before the failing last Read counts too.
  EXPECT_GE(messages, uint64_t{4 * kMessages});
  if (mode() != AllocationMode::kAuto) {
    const int m = static_cast<int>(mode());
    EXPECT_EQ(after.messages[m] - before.messages[m], messages);
  }
  if (mode() == AllocationMode::kArena) {
    EXPECT_GE(after.arena_resets - before.arena_resets,
              uint64_t{4 * kMessages});
  }
}

// A long stream of messages whose strings change size (the case where one
// arena message reused across the stream grows): pooled pages in use stay
// under a bound set by one message, not by the stream's length.
TEST_P(GrpcStreamTest, LongStreamGrowthIsBounded) {
  Start();
  constexpr int kMessages = 600;
  constexpr size_t kMessageBytes = 32 << 10;
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(120));
  Summary summary;
  auto writer = stub_->Collect(&context, &summary);
  uint64_t wire = 0;
  for (int i = 0; i < kMessages; ++i) {
    Chunk c;
    FillChunk(i, kMessageBytes, &c);
    wire += c.ByteSizeLong();
    ASSERT_TRUE(writer->Write(c));
  }
  writer->WritesDone();
  ASSERT_TRUE(writer->Finish().ok());
  EXPECT_EQ(summary.messages(), uint64_t{kMessages});
  ExpectAllBack(1);
  // One message is ~34 KB: its arena ~2-4 pages of 64 KiB at most. Growth
  // with the stream would be ~kMessages x the abandoned strings.
  const uint64_t page = PagePool::Default().Stats().page_size;
  const uint64_t bound = pages_before_ + 16 * ((4 * kMessageBytes) / page + 1);
  EXPECT_LE(server_->seen().max_pages_in_use.load(), bound)
      << "wire bytes " << wire;
  if (mode() == AllocationMode::kArena) {
    EXPECT_GT(server_->seen().peak_arena_bytes.load(), 0u);
    EXPECT_LE(server_->seen().peak_arena_bytes.load(), 4 * kMessageBytes);
  }
}

// The contrast the bound above rules out: one arena message parsed into
// again and again grows with the stream, where protobuf abandons something
// on the arena at each parse: up to v22 Clear() drops every proto3 singular
// sub-message (`inner`, each item's `leaf`); from v24 every singular string
// is re-created (internal/protobuf_compat.h). 23.x does neither: its
// Clear() keeps the sub-messages and its generated parser parses into the
// strings already there, so the message stays the size of its first parse.
TEST(StreamGrowthControl, OneReusedArenaMessageGrows) {
  ScopedArena arena;
  auto* m = arena.Create<Chunk>();
  uint64_t after_first = 0;
  for (int i = 0; i < 600; ++i) {
    Chunk c;
    FillChunk(i, 32 << 10, &c);
    ASSERT_TRUE(m->ParseFromString(c.SerializeAsString()));
    ASSERT_EQ(m->items_size(), c.items_size());
    if (i == 0) after_first = arena.SpaceAllocated();
  }
  if (!internal::kProto3SingularMessagesHaveHasbits ||
      internal::kArenaParseRecreatesStrings) {
    EXPECT_GT(arena.SpaceAllocated(), 8 * after_first);
  } else {
    // Only the payloads' and blobs' buffers grow to the longest seen.
    EXPECT_LT(arena.SpaceAllocated(), 2 * after_first);
  }
}

// Heap mode keeps one message per direction. An outgoing one is cleared at
// every Next() (the caller fills it); an incoming one is left to the parse
// that fills it, as gRPC's own loop does, and comes out exactly the new
// message, a smaller one after a larger.
TEST(StreamHeapMessages, ResponsesClearedRequestsParsedInPlace) {
  StreamMethod<Chunk, Chunk> method("streamtest.Heap/Bidi",
                                    AllocationMode::kHeap);
  StreamMessages<Chunk> out = method.Responses();
  Chunk* first = out.Next();
  FillChunk(1, 4 << 10, first);
  Chunk* second = out.Next();
  EXPECT_EQ(second, first) << "one heap message per direction";
  EXPECT_EQ(second->ByteSizeLong(), 0u) << "a response must start empty";

  StreamMessages<Chunk> in = method.Requests();
  Chunk big, small;
  FillChunk(2, 32 << 10, &big);
  FillChunk(3, 1 << 10, &small);
  ASSERT_TRUE(in.Next()->ParseFromString(big.SerializeAsString()));
  Chunk* again = in.Next();
  ASSERT_TRUE(again->ParseFromString(small.SerializeAsString()));
  EXPECT_EQ(again->SerializeAsString(), small.SerializeAsString());
}

// Bytes that are not a Chunk, mid-stream: gRPC ends the server's reads
// there (Read returns false, OnReadDone(false), as at the end of the
// stream; the handler cannot tell), so the status is the handler's; the
// message it was parsed into and the pages go back.
TEST_P(GrpcStreamTest, MalformedMessageMidStream) {
  Start();
  auto channel = server_->NewChannel();
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(60));
  const grpc::internal::RpcMethod method(
      "/arenarpc.streamtest.StreamTest/Chat",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream(grpc::internal::ClientReaderWriterFactory<
             grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel.get(), method,
                                                         &context));
  Chunk good;
  FillChunk(1, 4 << 10, &good);
  auto buffer = [](const std::string& bytes) {
    grpc::Slice slice(bytes);
    return grpc::ByteBuffer(&slice, 1);
  };
  ASSERT_TRUE(stream->Write(buffer(good.SerializeAsString())));
  grpc::ByteBuffer echo;
  ASSERT_TRUE(stream->Read(&echo));
  // Field 1, length 100, then 3 bytes: truncated.
  stream->Write(
      buffer(std::string("\x0a\x64"
                         "abc",
                         5)));
  while (stream->Read(&echo)) {
  }
  EXPECT_TRUE(stream->Finish().ok());              // the handler's status
  EXPECT_EQ(server_->seen().messages.load(), 1u);  // the bad one not seen
  ExpectAllBack(1);
}

// A message over the server's receive limit mid-stream.
TEST_P(GrpcStreamTest, OversizeMessageMidStream) {
  Start(/*max_receive_bytes=*/64 << 10);
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(60));
  Summary summary;
  auto writer = stub_->Collect(&context, &summary);
  Chunk small;
  FillChunk(1, 4 << 10, &small);
  ASSERT_TRUE(writer->Write(small));
  Chunk big;
  FillChunk(2, 256 << 10, &big);
  writer->Write(big);
  writer->WritesDone();
  const grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  ExpectAllBack(1);
}

// The client cancels a bidi stream mid-way.
TEST_P(GrpcStreamTest, ClientCancelsMidStream) {
  Start();
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(60));
  auto stream = stub_->Chat(&context);
  for (int i = 0; i < 5; ++i) {
    Chunk c;
    FillChunk(i, 8 << 10, &c);
    ASSERT_TRUE(stream->Write(c));
    Chunk echo;
    ASSERT_TRUE(stream->Read(&echo));
  }
  context.TryCancel();
  Chunk echo;
  while (stream->Read(&echo)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ExpectAllBack(1);
}

// A client-streaming call whose deadline passes mid-stream (the client
// stops writing and waits).
TEST_P(GrpcStreamTest, DeadlineMidStream) {
  Start();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  Summary summary;
  auto writer = stub_->Collect(&context, &summary);
  Chunk c;
  FillChunk(1, 8 << 10, &c);
  writer->Write(c);
  // No WritesDone: the server waits for more until the deadline.
  const grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << s.error_message();
  ExpectAllBack(1);
}

// Shutdown with streams of every kind in flight (each has had a message).
TEST_P(GrpcStreamTest, ShutdownWithStreamsInFlight) {
  Start();
  grpc::ClientContext c1, c2, c3;
  for (auto* c : {&c1, &c2, &c3}) SetDeadline(c, std::chrono::seconds(60));
  Summary summary;
  auto collect = stub_->Collect(&c1, &summary);
  Chunk c;
  FillChunk(1, 8 << 10, &c);
  ASSERT_TRUE(collect->Write(c));
  auto chat = stub_->Chat(&c2);
  ASSERT_TRUE(chat->Write(c));
  Chunk echo;
  ASSERT_TRUE(chat->Read(&echo));
  Chunk fan_request = c;
  fan_request.set_count(1000000);  // far more than gets sent
  auto fan = stub_->Fan(&c3, fan_request);
  ASSERT_TRUE(fan->Read(&echo));
  ASSERT_TRUE(WaitFor([&] { return server_->seen().messages.load() >= 3; }));
  server_->Shutdown();
  EXPECT_FALSE(collect->Finish().ok());
  while (chat->Read(&echo)) {
  }
  EXPECT_FALSE(chat->Finish().ok());
  while (fan->Read(&echo)) {
  }
  EXPECT_FALSE(fan->Finish().ok());
  EXPECT_EQ(server_->seen().ended.load(), 3);
  server_.reset();
  const StreamTotals t = GetStreamTotals();
  EXPECT_EQ(t.live_messages, 0u);
  EXPECT_EQ(t.streams, 0u);
  ExpectPagesBack(pages_before_);
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(AllocationModeName(std::get<0>(info.param))) + "_" +
         std::string(ServerApiName(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndApis, GrpcStreamTest,
    ::testing::Combine(testing::AllModes(),
                       ::testing::Values(ServerApi::kSync,
                                         ServerApi::kCallback)),
    ParamName);

// The install is reported, and kAuto's streams feed its learner: streamed
// messages are trials, timed from their Next() to their release, counted
// under the method's name.
TEST(GrpcStreamAutoTest, AutoTimesStreamedMessages) {
  StreamServer server(AllocationMode::kAuto, ServerApi::kSync);
  auto stub = StreamTest::NewStub(server.NewChannel());
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(60));
  Summary summary;
  auto writer = stub->Collect(&context, &summary);
  for (int i = 0; i < 50; ++i) {
    Chunk c;
    FillChunk(i, 8 << 10, &c);
    ASSERT_TRUE(writer->Write(c));
  }
  writer->WritesDone();
  ASSERT_TRUE(writer->Finish().ok());
  bool listed = false;
  for (const ServedMethodStats& m : GetGrpcStats().methods) {
    if (m.method == "arenarpc.streamtest.StreamTest/Collect") listed = true;
  }
  EXPECT_TRUE(listed);
  // Cumulative: a method settled by an earlier stream times no more.
  bool measured = false;
  EXPECT_TRUE(WaitFor([&] {
    for (const AutoMethodStats& m : GetAutoMethodStats()) {
      if (m.method == "arenarpc.streamtest.StreamTest/Collect" &&
          m.timed_calls > 0) {
        measured = true;
      }
    }
    return measured;
  }));
  const std::string text = RenderPrometheusStats();
  EXPECT_NE(text.find("arenarpc_grpc_streaming_messages_total"),
            std::string::npos);
}

// A StreamMethod's report in an InstallResult (what the streaming example
// prints): counted and listed as a streaming method, never as a served
// unary one, so a service whose unary methods all failed is still an error.
TEST(StreamInstallReport, CountsAsStreamingNotUnary) {
  StreamMethod<Chunk, Summary> collect("test.Report/Collect",
                                       AllocationMode::kArena);
  InstallResult streams_only("test.Report");
  streams_only.Add(collect.report());
  EXPECT_TRUE(streams_only.ok());
  EXPECT_EQ(streams_only.served(), 0);
  EXPECT_EQ(streams_only.streaming_served(), 1);
  EXPECT_EQ(streams_only.ToString(),
            "test.Report: 1 streaming method served "
            "(test.Report/Collect: sync, arena)");

  MethodInstall unary;
  unary.method = "test.Report/Get";
  unary.reason = "async completion-queue method";
  InstallResult mixed("test.Report");
  mixed.Add(unary);
  mixed.Add(collect.report());
  EXPECT_FALSE(mixed.ok());  // the unary method is not served
  EXPECT_EQ(mixed.served(), 0);
  EXPECT_EQ(mixed.ToString(),
            "test.Report: 0 of 1 unary methods served; 1 streaming method "
            "served (test.Report/Collect: sync, arena); not served: "
            "test.Report/Get (async completion-queue method)");
}

// As a unary install: the same method installed again with other kAuto or
// shadow options is refused, loudly (its report), and its streams are heap
// ones, unmeasured; the first install keeps its options.
TEST(StreamInstallReport, InstallingAgainWithOtherOptionsIsRefused) {
  ServerOptions first(AllocationMode::kAuto);
  first.automatic.recheck_after_s = 60;
  StreamMethod<Chunk, Chunk> a("test.Refuse/Chat", first);
  StreamMethod<Chunk, Chunk> same("test.Refuse/Chat", first,
                                  ServerApi::kCallback);
  EXPECT_TRUE(same.report().served);
  ServerOptions other = first;
  other.shadow.sample_one_in = 1;
  StreamMethod<Chunk, Chunk> refused("test.Refuse/Chat", other);
  EXPECT_FALSE(refused.report().served);
  EXPECT_FALSE(refused.report().unary);
  EXPECT_NE(refused.report().reason.find("other kAuto or shadow options"),
            std::string::npos);
  const uint64_t sampled = GetStreamTotals().sampled;
  StreamMessages<Chunk> in = refused.Requests();
  for (int i = 0; i < 20; ++i) {
    FillChunk(i, 1 << 10, in.Next());
    EXPECT_EQ(in.mode(), AllocationMode::kHeap);
  }
  in.Release();
  EXPECT_EQ(GetStreamTotals().sampled, sampled);
  StreamMessages<Chunk> out = a.Responses();
  EXPECT_NE(out.Next(), nullptr);
}

}  // namespace
}  // namespace arenarpc

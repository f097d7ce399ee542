// etcdserverpb.KV/Txn (Debian golang-etcd-server-dev 3.4.23): the writes a
// Kubernetes API server sends its etcd, bytes-heavy with oneofs.
//
// Kubernetes' etcd3 store writes only through Txn: create is
// If(mod_revision == 0) Then(Put); update (GuaranteedUpdate) is
// If(mod_revision == rev) Then(Put) Else(Range); delete is
// If(mod_revision == rev) Then(Range, DeleteRange) Else(Range). Values are
// objects in Kubernetes' protobuf encoding ("k8s\0" + runtime.Unknown).
// Sizes: node Leases ~300 B renewed every 10 s per node (the most frequent
// write), Events ~0.5-1.5 KB, Pods 3-15 KB (status updates, managedFields),
// EndpointSlices 1-20 KB, ConfigMaps/Secrets up to 1 MiB (the API's limit;
// etcd --max-request-bytes defaults to 1.5 MiB).
// Also etcdserverpb.KV/Range, the same server's lists: small requests,
// large responses (EtcdRangeService, below).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "corpus_internal.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::etcdserverpb::Compare;
using ::etcdserverpb::RangeRequest;
using ::etcdserverpb::RangeResponse;
using ::etcdserverpb::RequestOp;
using ::etcdserverpb::ResponseOp;
using ::etcdserverpb::TxnRequest;
using ::etcdserverpb::TxnResponse;

enum Kind {
  kLeaseRenew,
  kEventCreate,
  kPodUpdate,
  kEndpointSlice,
  kPodDelete,
  kLargeConfigMap
};

// A length-delimited protobuf field (tag, varint length, bytes).
void AppendField(int field, std::string_view bytes, std::string* out) {
  out->push_back(static_cast<char>(field << 3 | 2));
  size_t n = bytes.size();
  while (n >= 0x80) {
    out->push_back(static_cast<char>(n | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
  out->append(bytes);
}

// An object as the API server stores it: magic, TypeMeta, then ObjectMeta
// (name, namespace, uid, labels, managedFields JSON) and spec/status, here
// text and binary filler up to `bytes`.
std::string K8sObject(Rng& rng, std::string_view api_version,
                      std::string_view kind, std::string_view name, int bytes) {
  std::string type_meta;
  AppendField(1, api_version, &type_meta);
  AppendField(2, kind, &type_meta);
  std::string meta;
  AppendField(1, name, &meta);
  AppendField(3, "shop-prod", &meta);
  AppendField(5,
              Cat(rng.Hex(8), "-", rng.Hex(4), "-", rng.Hex(4), "-", rng.Hex(4),
                  "-", rng.Hex(12)),
              &meta);
  AppendField(6, rng.Digits(8), &meta);  // resourceVersion
  AppendField(11, Cat("app.kubernetes.io/name=", name.substr(0, 12)), &meta);
  std::string raw;
  AppendField(1, meta, &raw);
  // managedFields (JSON field sets) and status dominate real objects.
  while (static_cast<int>(raw.size()) < bytes - 64) {
    const int chunk =
        std::min<int>(bytes - 64 - static_cast<int>(raw.size()), 2048);
    if (rng.Chance(0.7)) {
      AppendField(2,
                  Cat("{\"f:metadata\":{\"f:labels\":{\"f:",
                      rng.Words(chunk / 2), "\":{}}}}"),
                  &raw);
    } else {
      AppendField(3, rng.Bytes(chunk / 2 + 1), &raw);
    }
  }
  std::string unknown;
  AppendField(1, type_meta, &unknown);
  AppendField(2, raw, &unknown);
  AppendField(4, "application/vnd.kubernetes.protobuf", &unknown);
  return Cat(std::string_view("k8s\0", 4), unknown);
}

void AddCompare(std::string_view key, int64_t mod_revision, TxnRequest* t) {
  Compare* c = t->add_compare();
  c->set_result(Compare::EQUAL);
  c->set_target(Compare::MOD);
  c->set_key(std::string(key));
  c->set_mod_revision(mod_revision);
}

void AddPut(std::string_view key, std::string value, int64_t lease,
            TxnRequest* t) {
  auto* put = t->add_success()->mutable_request_put();
  put->set_key(std::string(key));
  put->set_value(std::move(value));
  if (lease != 0) put->set_lease(lease);
}

void AddGet(std::string_view key,
            google::protobuf::RepeatedPtrField<RequestOp>* ops) {
  ops->Add()->mutable_request_range()->set_key(std::string(key));
}

void Make(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* t = static_cast<TxnRequest*>(m);
  const int64_t revision = rng.Uniform(10'000'000, 90'000'000);
  switch (kind) {
    case kLeaseRenew: {
      const std::string node =
          Cat("gke-prod-pool-", rng.Hex(8), "-", rng.Hex(4));
      const std::string key = Cat("/registry/leases/kube-node-lease/", node);
      AddCompare(key, revision, t);
      AddPut(key,
             K8sObject(rng, "coordination.k8s.io/v1", "Lease", node,
                       static_cast<int>(rng.Uniform(250, 400))),
             0, t);
      AddGet(key, t->mutable_failure());
      break;
    }
    case kEventCreate: {
      const std::string name =
          Cat("checkout-", rng.Hex(10), "-", rng.Hex(5), ".", rng.Hex(16));
      const std::string key = Cat("/registry/events/shop-prod/", name);
      AddCompare(key, 0, t);
      // Events expire through a lease (--event-ttl 1h).
      AddPut(key,
             K8sObject(rng, "v1", "Event", name,
                       static_cast<int>(rng.LogUniform(500, 1500))),
             rng.Uniform(1, 1LL << 62), t);
      break;
    }
    case kPodUpdate:
    case kEndpointSlice: {
      const bool pod = kind == kPodUpdate;
      const std::string name = Cat(pod ? "checkout-" : "checkout-svc-",
                                   rng.Hex(10), "-", rng.Hex(5));
      const std::string key = Cat(pod ? "/registry/pods/shop-prod/"
                                      : "/registry/endpointslices/shop-prod/",
                                  name);
      AddCompare(key, revision, t);
      AddPut(key,
             K8sObject(rng, pod ? "v1" : "discovery.k8s.io/v1",
                       pod ? "Pod" : "EndpointSlice", name,
                       static_cast<int>(pod ? rng.LogUniform(3000, 15000)
                                            : rng.LogUniform(1000, 20000))),
             0, t);
      AddGet(key, t->mutable_failure());
      break;
    }
    case kPodDelete: {
      const std::string key = Cat("/registry/pods/shop-prod/checkout-",
                                  rng.Hex(10), "-", rng.Hex(5));
      AddCompare(key, revision, t);
      AddGet(key, t->mutable_success());
      t->add_success()->mutable_request_delete_range()->set_key(key);
      AddGet(key, t->mutable_failure());
      break;
    }
    default: {
      // A ConfigMap near the 1 MiB object limit (bundled config, CRDs).
      const std::string name = Cat("shop-config-", rng.Hex(6));
      const std::string key = Cat("/registry/configmaps/shop-prod/", name);
      AddCompare(key, revision, t);
      AddPut(key,
             K8sObject(rng, "v1", "ConfigMap", name,
                       static_cast<int>(rng.Uniform(500'000, 1'000'000))),
             0, t);
      AddGet(key, t->mutable_failure());
      break;
    }
  }
}

std::vector<std::string> Generate(uint64_t seed, int count) {
  return GenerateMix(seed, count,
                     {{kLeaseRenew, 45},
                      {kEventCreate, 18},
                      {kPodUpdate, 25},
                      {kEndpointSlice, 9},
                      {kPodDelete, 2},
                      {kLargeConfigMap, 1}},
                     &Make, TxnRequest::default_instance());
}

uint64_t WalkOps(const google::protobuf::RepeatedPtrField<RequestOp>& ops);

uint64_t WalkOp(const RequestOp& op) {
  switch (op.request_case()) {
    case RequestOp::kRequestRange:
      return Mix(HashStr(op.request_range().key()),
                 HashStr(op.request_range().range_end()));
    case RequestOp::kRequestPut:
      return Mix(
          Mix(HashStr(op.request_put().key()), Touch(op.request_put().value())),
          static_cast<uint64_t>(op.request_put().lease()));
    case RequestOp::kRequestDeleteRange:
      return HashStr(op.request_delete_range().key()) * 3;
    case RequestOp::kRequestTxn:
      return Mix(WalkOps(op.request_txn().success()),
                 WalkOps(op.request_txn().failure()));
    default:
      return 0;
  }
}

uint64_t WalkOps(const google::protobuf::RepeatedPtrField<RequestOp>& ops) {
  uint64_t h = ops.size();
  for (const RequestOp& op : ops) h = Mix(h, WalkOp(op));
  return h;
}

// What etcd's apply path reads: compares (key, target, value union), then
// each op's key, value and lease.
uint64_t Walk(const google::protobuf::Message& m) {
  const auto& t = static_cast<const TxnRequest&>(m);
  uint64_t h = 0;
  for (const Compare& c : t.compare()) {
    h = Mix(h, HashStr(c.key()) ^ (c.result() * 8 + c.target()));
    switch (c.target_union_case()) {
      case Compare::kModRevision:
        h = Mix(h, static_cast<uint64_t>(c.mod_revision()));
        break;
      case Compare::kValue:
        h = Mix(h, Touch(c.value()));
        break;
      default:
        h = Mix(h, static_cast<uint64_t>(c.version() + c.create_revision() +
                                         c.lease()));
        break;
    }
  }
  return Mix(Mix(h, WalkOps(t.success())), WalkOps(t.failure()));
}

// Compares on mod_revision fail ~5% of the time under contention (another
// writer got there first); the Else branch then returns the current object.
void Respond(const google::protobuf::Message& m, google::protobuf::Message* r) {
  const auto& t = static_cast<const TxnRequest&>(m);
  auto* response = static_cast<TxnResponse*>(r);
  const uint64_t h = Walk(t);
  const int64_t revision = 50'000'000 + static_cast<int64_t>(h % 40'000'000);
  auto fill_header = [&](etcdserverpb::ResponseHeader* header) {
    header->set_cluster_id(0x1c4e7a6e3c5b9a21ULL);
    header->set_member_id(0x8e9e05c52164694dULL);
    header->set_revision(revision);
    header->set_raft_term(7);
  };
  fill_header(response->mutable_header());
  const bool conflict = !t.failure().empty() && h % 20 == 0;
  response->set_succeeded(!conflict);
  const auto& ops = conflict ? t.failure() : t.success();
  // The object a conflicting update would have written, as stored now.
  size_t object_size = 0;
  for (const RequestOp& op : t.success()) {
    if (op.has_request_put()) object_size = op.request_put().value().size();
  }
  for (const RequestOp& op : ops) {
    ResponseOp* out = response->add_responses();
    switch (op.request_case()) {
      case RequestOp::kRequestPut:
        fill_header(out->mutable_response_put()->mutable_header());
        break;
      case RequestOp::kRequestDeleteRange:
        fill_header(out->mutable_response_delete_range()->mutable_header());
        out->mutable_response_delete_range()->set_deleted(1);
        break;
      default: {
        auto* range = out->mutable_response_range();
        fill_header(range->mutable_header());
        auto* kv = range->add_kvs();
        kv->set_key(op.request_range().key());
        kv->set_create_revision(revision - 1000);
        kv->set_mod_revision(revision - 1);
        kv->set_version(12);
        kv->set_value(std::string(std::max<size_t>(object_size, 300), 'v'));
        range->set_count(1);
        break;
      }
    }
  }
}

}  // namespace

namespace {

// --- etcdserverpb.KV/Range: the API server's lists (large responses) ---
//
// kube-apiserver pages lists through etcd (limit 500, its default page),
// and its informers list at start and after each watch expires. The request
// is a prefix range; the response carries the objects: pages of Pods
// (3-15 KB each), node Leases (~300 B), Events (0.5-1.5 KB) and
// EndpointSlices (1-20 KB). The store is not simulated: the number of
// objects comes from the request (its namespace's size, in the key), so a
// request always gets the same response.
enum ListKind { kListPods, kListLeases, kListEvents, kListSlices };

struct ListShape {
  std::string_view resource, api_version, kind;
  int min_bytes, max_bytes;
};

constexpr std::array<ListShape, 4> kListShapes = {{
    {"pods", "v1", "Pod", 3'000, 15'000},
    {"leases", "coordination.k8s.io/v1", "Lease", 250, 350},
    {"events", "v1", "Event", 500, 1'500},
    {"endpointslices", "discovery.k8s.io/v1", "EndpointSlice", 1'000, 20'000},
}};

void MakeRange(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* r = static_cast<RangeRequest*>(m);
  const ListShape& shape = kListShapes[kind];
  // Objects in the listed namespace, up to one page of 500.
  int objects = 0;
  switch (kind) {
    case kListPods:
      objects = static_cast<int>(rng.Uniform(20, 150));
      break;
    case kListLeases:
      objects = static_cast<int>(rng.Uniform(100, 500));
      break;
    case kListEvents:
      objects = static_cast<int>(rng.Uniform(200, 500));
      break;
    default:
      objects = static_cast<int>(rng.Uniform(5, 40));
      break;
  }
  const std::string prefix =
      Cat("/registry/", shape.resource, "/ns-", objects, "-", rng.Hex(6), "/");
  r->set_key(prefix);
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  r->set_range_end(end);
  r->set_limit(500);
  if (rng.Chance(0.5)) r->set_serializable(true);  // informers' relists
}

std::vector<std::string> GenerateRange(uint64_t seed, int count) {
  return GenerateMix(seed, count,
                     {{kListPods, 40},
                      {kListLeases, 25},
                      {kListEvents, 20},
                      {kListSlices, 15}},
                     &MakeRange, RangeRequest::default_instance());
}

uint64_t WalkRange(const google::protobuf::Message& m) {
  const auto& r = static_cast<const RangeRequest&>(m);
  return Mix(Mix(HashStr(r.key()), HashStr(r.range_end())),
             static_cast<uint64_t>(r.limit()) + r.serializable());
}

// etcd copies stored values out of its store (bbolt, memory-mapped) into
// the response; the store here is a fixed set of objects per kind, made
// once, so a response costs the copies, not making the objects.
constexpr int kStoredPerKind = 64;

const std::vector<std::string>& StoredObjects(size_t kind) {
  static const auto* const stored = [] {
    auto* all = new std::array<std::vector<std::string>, kListShapes.size()>;
    Rng rng(0x5eed);
    for (size_t k = 0; k < kListShapes.size(); ++k) {
      const ListShape& shape = kListShapes[k];
      for (int i = 0; i < kStoredPerKind; ++i) {
        (*all)[k].push_back(K8sObject(
            rng, shape.api_version, shape.kind, Cat(shape.resource, "-", i),
            static_cast<int>(rng.Uniform(shape.min_bytes, shape.max_bytes))));
      }
    }
    return all;
  }();
  return (*stored)[kind];
}

void RespondRange(const google::protobuf::Message& m,
                  google::protobuf::Message* out) {
  const auto& r = static_cast<const RangeRequest&>(m);
  auto* response = static_cast<RangeResponse*>(out);
  // "/registry/<resource>/ns-<objects>-<id>/": the resource and the count.
  const std::string_view key = r.key();
  size_t kind = 0;
  while (kind + 1 < kListShapes.size() &&
         key.substr(10, kListShapes[kind].resource.size()) !=
             kListShapes[kind].resource) {
    ++kind;
  }
  const ListShape& shape = kListShapes[kind];
  const size_t ns = key.find("/ns-");
  const int objects =
      ns == std::string_view::npos ? 0 : std::atoi(key.data() + ns + 4);
  Rng rng(HashStr(key));
  const int64_t revision = rng.Uniform(50'000'000, 90'000'000);
  auto* header = response->mutable_header();
  header->set_cluster_id(0x1c4e7a6e3c5b9a21ULL);
  header->set_member_id(0x8e9e05c52164694dULL);
  header->set_revision(revision);
  header->set_raft_term(7);
  const int n = std::min<int>(objects, static_cast<int>(r.limit()));
  for (int i = 0; i < n; ++i) {
    const std::string name = Cat(shape.resource, "-", rng.Hex(10));
    auto* kv = response->add_kvs();
    kv->set_key(Cat(key, name));
    kv->set_create_revision(revision - rng.Uniform(1'000, 5'000'000));
    kv->set_mod_revision(revision - rng.Uniform(1, 1'000));
    kv->set_version(rng.Uniform(1, 40));
    kv->set_value(StoredObjects(kind)[rng.Uniform(0, kStoredPerKind - 1)]);
  }
  response->set_count(n);
}

}  // namespace

Service EtcdRangeService() {
  return Service{
      .name = "etcd_range",
      .method = "/etcdserverpb.KV/Range",
      .proto = "etcd/etcdserver/etcdserverpb/rpc.proto",
      .request = RangeRequest::descriptor(),
      .response = RangeResponse::descriptor(),
      .shape =
          "small request, large response: pages of mvccpb.KeyValue (keys, "
          "object values), gogoproto-annotated proto3",
      .sizes_from =
          "Kubernetes API server lists (limit 500): 40% Pods 20-150 x 3-15 "
          "KB, 25% node Leases 100-500 x ~300 B, 20% Events 200-500 x ~1 KB, "
          "15% EndpointSlices 5-40 x 1-20 KB",
      .generate = &GenerateRange,
      .walk = &WalkRange,
      .respond = &RespondRange};
}

Service EtcdService() {
  return Service{
      .name = "etcd_txn",
      .method = "/etcdserverpb.KV/Txn",
      .proto = "etcd/etcdserver/etcdserverpb/rpc.proto",
      .request = TxnRequest::descriptor(),
      .response = TxnResponse::descriptor(),
      .shape =
          "bytes-heavy (keys, object values), oneofs (Compare.target_union, "
          "RequestOp/ResponseOp), gogoproto-annotated proto3",
      .sizes_from =
          "Kubernetes API server writes: 45% node Lease renewals ~300 B, "
          "Events ~1 KB, Pods 3-15 KB, EndpointSlices; 1% ConfigMaps "
          "0.5-1 MiB",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal

// Fuzzes the readers of etcd's v3 gateway replies (coord/etcd/etcd_json.h)
// the way the etcd store and its watch streams use them: a range reply
// (header.revision, kvs), a txn reply (responses of ranges, deletes and
// puts), a lease grant and keepalive, a watch message (result, events). The
// bytes come from the network; whatever they are, the readers return a
// Status inside Parsing (which turns nlohmann's type errors into Corruption):
// an exception escaping it, or a crash, is a finding. A key-value that is
// accepted has a key, and its base64 fields decode again from their
// encoding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coord/etcd/etcd_json.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace etcd = fabps::coord::etcd;
using etcd::Json;
using fabps::Status;

Status Kvs(const Json& j) {
  for (const Json& item : etcd::ArrayField(j, "kvs")) {
    fabps::coord::KeyValue kv;
    FABPS_RETURN_IF_ERROR(etcd::ParseKeyValue(item, &kv));
    FABPS_FUZZ_CHECK(!kv.key.empty());
    std::string back;
    FABPS_FUZZ_CHECK(
        etcd::Base64Decode(etcd::Base64Encode(kv.value), &back).ok());
    FABPS_FUZZ_CHECK(back == kv.value);
  }
  int64_t count = 0;
  return etcd::Int64Field(j, "count", &count);
}

Status Reply(const Json& reply) {
  int64_t rev = 0;
  FABPS_RETURN_IF_ERROR(etcd::HeaderRevision(reply, &rev));
  FABPS_RETURN_IF_ERROR(Kvs(reply));
  for (const Json& resp : etcd::ArrayField(reply, "responses")) {
    if (resp.contains("response_range")) {
      FABPS_RETURN_IF_ERROR(Kvs(resp.at("response_range")));
    } else if (resp.contains("response_delete_range")) {
      int64_t deleted = 0;
      FABPS_RETURN_IF_ERROR(etcd::Int64Field(resp.at("response_delete_range"),
                                             "deleted", &deleted));
    }
  }
  int64_t id = 0, ttl = 0;
  FABPS_RETURN_IF_ERROR(etcd::Int64Field(reply, "ID", &id));
  FABPS_RETURN_IF_ERROR(etcd::Int64Field(reply, "TTL", &ttl));
  return Status::OK();
}

Status Watch(const Json& msg) {
  const Json& result = msg.at("result");
  int64_t rev = 0, compact = 0;
  FABPS_RETURN_IF_ERROR(etcd::HeaderRevision(result, &rev));
  (void)result.value("created", false);
  (void)result.value("canceled", false);
  FABPS_RETURN_IF_ERROR(etcd::Int64Field(result, "compact_revision", &compact));
  for (const Json& ev : etcd::ArrayField(result, "events")) {
    (void)ev.value("type", std::string());
    fabps::coord::KeyValue kv;
    FABPS_RETURN_IF_ERROR(etcd::ParseKeyValue(ev.at("kv"), &kv));
  }
  return Status::OK();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // Base64 on its own, from the raw bytes.
  std::string bytes;
  if (etcd::Base64Decode(text, &bytes).ok()) {
    std::string again;
    FABPS_FUZZ_CHECK(
        etcd::Base64Decode(etcd::Base64Encode(bytes), &again).ok());
    FABPS_FUZZ_CHECK(again == bytes);
  }
  // The watch stream parses inside Parsing; the unary calls before it.
  (void)etcd::Parsing("watch", [&]() -> Status {
    Json msg = Json::parse(text);
    if (!msg.is_object()) return Status::Corruption("not an object");
    return Watch(msg);
  });
  Json reply = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object()) return 0;
  (void)etcd::Parsing("reply", [&] { return Reply(reply); });
  return 0;
}

// JSON helpers for etcd's v3 gateway (internal to coord/etcd/): base64 for
// keys and values, int64 fields sent as strings, zero fields omitted. Every
// reader validates what it reads and reports kCorruption on bad input.
#ifndef FABPS_COORD_ETCD_ETCD_JSON_H_
#define FABPS_COORD_ETCD_ETCD_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord::etcd {

using Json = nlohmann::json;

std::string Base64Encode(const std::string& bytes);
// kCorruption on characters outside the alphabet or bad padding.
Status Base64Decode(const std::string& text, std::string* bytes);

// The int64 field `name` of object `j`: a decimal string or a number; 0 when
// absent (the gateway omits zeros). kCorruption on anything else.
Status Int64Field(const Json& j, const char* name, int64_t* out);
// The base64 field `name`; "" when absent.
Status BytesField(const Json& j, const char* name, std::string* out);

// A mvccpb.KeyValue object; the key is left absolute.
Status ParseKeyValue(const Json& j, KeyValue* kv);

// Runs `f` (which reads JSON and returns a Status or Result) and turns the
// exceptions of nlohmann::json on unexpected types into kCorruption.
template <typename F>
auto Parsing(const char* what, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const Json::exception& e) {
    return Status::Corruption(std::string("malformed etcd ") + what +
                              " reply: " + e.what());
  }
}

// header.revision of a reply.
Status HeaderRevision(const Json& reply, int64_t* rev);

// The array field `name` (empty when absent); throws a Json::exception when
// it is not an array (use inside Parsing).
const Json& ArrayField(const Json& j, const char* name);

}  // namespace fabps::coord::etcd

#endif  // FABPS_COORD_ETCD_ETCD_JSON_H_

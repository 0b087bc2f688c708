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

}  // namespace fabps::coord::etcd

#endif  // FABPS_COORD_ETCD_ETCD_JSON_H_

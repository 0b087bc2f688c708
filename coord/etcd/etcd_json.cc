#include "coord/etcd/etcd_json.h"

#include <cerrno>
#include <cstdlib>

namespace fabps::coord::etcd {

namespace {
constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // also accept the URL-safe alphabet
  if (c == '/' || c == '_') return 63;
  return -1;
}
}  // namespace

std::string Base64Encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                 (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                 uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Status Base64Decode(const std::string& text, std::string* bytes) {
  bytes->clear();
  if (text.size() % 4 != 0) {
    return Status::Corruption("base64 text of length " +
                              std::to_string(text.size()));
  }
  bytes->reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int s[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        s[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || (s[k] = Sextet(c)) < 0) {
        return Status::Corruption("bad base64 character at " +
                                  std::to_string(i + k));
      }
    }
    uint32_t v = (uint32_t(s[0]) << 18) | (uint32_t(s[1]) << 12) |
                 (uint32_t(s[2]) << 6) | uint32_t(s[3]);
    bytes->push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) bytes->push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) bytes->push_back(static_cast<char>(v & 0xff));
  }
  return Status::OK();
}

Status Int64Field(const Json& j, const char* name, int64_t* out) {
  *out = 0;
  if (!j.is_object())
    return Status::Corruption(std::string("expected an object for ") + name);
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return Status::OK();
  }
  if (!it->is_string())
    return Status::Corruption(std::string("field ") + name + " not an int64");
  const std::string& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > 20)
    return Status::Corruption(std::string("field ") + name +
                              " empty or too long");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) {
    return Status::Corruption(std::string("field ") + name + " = '" + s +
                              "' is not an int64");
  }
  *out = v;
  return Status::OK();
}

Status BytesField(const Json& j, const char* name, std::string* out) {
  out->clear();
  if (!j.is_object())
    return Status::Corruption(std::string("expected an object for ") + name);
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_string())
    return Status::Corruption(std::string("field ") + name + " not a string");
  return Base64Decode(it->get_ref<const std::string&>(), out)
      .WithContext(std::string("field ") + name);
}

Status ParseKeyValue(const Json& j, KeyValue* kv) {
  FABPS_RETURN_IF_ERROR(BytesField(j, "key", &kv->key));
  FABPS_RETURN_IF_ERROR(BytesField(j, "value", &kv->value));
  FABPS_RETURN_IF_ERROR(Int64Field(j, "create_revision", &kv->create_revision));
  FABPS_RETURN_IF_ERROR(Int64Field(j, "mod_revision", &kv->mod_revision));
  FABPS_RETURN_IF_ERROR(Int64Field(j, "version", &kv->version));
  FABPS_RETURN_IF_ERROR(Int64Field(j, "lease", &kv->lease));
  if (kv->key.empty()) return Status::Corruption("key-value without a key");
  return Status::OK();
}

Status HeaderRevision(const Json& reply, int64_t* rev) {
  auto h = reply.find("header");
  if (h == reply.end() || !h->is_object()) {
    return Status::Corruption("etcd reply without a header");
  }
  return Int64Field(*h, "revision", rev);
}

const Json& ArrayField(const Json& j, const char* name) {
  static const Json kEmpty = Json::array();
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return kEmpty;
  if (!it->is_array())
    throw Json::type_error::create(302, std::string(name) + " is not an array",
                                   nullptr);
  return *it;
}

}  // namespace fabps::coord::etcd

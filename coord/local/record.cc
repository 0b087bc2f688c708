#include "coord/local/record.h"

#include <cstring>

#include "base/crc32c.h"
#include "coord/store.h"

namespace fabps::coord::local {

void Encoder::U32(uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out_->append(b, 4);
}

void Encoder::I64(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  out_->append(b, 8);
}

void Encoder::Str(const std::string& s) {
  U32(static_cast<uint32_t>(s.size()));
  out_->append(s);
}

bool Decoder::U8(uint8_t* v) {
  if (left_ < 1) return false;
  *v = static_cast<uint8_t>(p_[0]);
  p_ += 1;
  left_ -= 1;
  return true;
}

bool Decoder::U32(uint32_t* v) {
  if (left_ < 4) return false;
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x |= uint32_t{static_cast<uint8_t>(p_[i])} << (8 * i);
  *v = x;
  p_ += 4;
  left_ -= 4;
  return true;
}

bool Decoder::I64(int64_t* v) {
  if (left_ < 8) return false;
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x |= uint64_t{static_cast<uint8_t>(p_[i])} << (8 * i);
  *v = static_cast<int64_t>(x);
  p_ += 8;
  left_ -= 8;
  return true;
}

bool Decoder::Str(std::string* s, size_t max) {
  uint32_t n = 0;
  if (!U32(&n) || n > max || n > left_) return false;
  s->assign(p_, n);
  p_ += n;
  left_ -= n;
  return true;
}

void EncodeRecord(const Record& r, std::string* out) {
  std::string payload;
  Encoder e(&payload);
  e.U8(static_cast<uint8_t>(r.type));
  switch (r.type) {
    case Record::Type::kWrite:
      e.I64(r.revision);
      e.U32(static_cast<uint32_t>(r.mutations.size()));
      for (const Mutation& m : r.mutations) {
        e.U8(m.is_put ? 1 : 2);
        e.Str(m.key);
        if (m.is_put) {
          e.Str(m.value);
          e.I64(m.lease);
        }
      }
      break;
    case Record::Type::kLeaseGrant:
      e.I64(r.lease);
      e.I64(r.ttl_seconds);
      e.I64(r.expiry_ms);
      break;
    case Record::Type::kLeaseRenew:
      e.I64(r.lease);
      e.I64(r.expiry_ms);
      break;
    case Record::Type::kLeaseRemove:
      e.I64(r.lease);
      e.I64(r.revision);
      break;
  }
  Encoder h(out);
  h.U32(static_cast<uint32_t>(payload.size()));
  h.U32(crc32c::Value(payload.data(), payload.size()));
  out->append(payload);
}

Status DecodeRecordPayload(const char* data, size_t n, Record* r) {
  Decoder d(data, n);
  uint8_t type = 0;
  if (!d.U8(&type)) return Status::Corruption("empty record");
  *r = Record();
  bool ok = true;
  switch (type) {
    case static_cast<uint8_t>(Record::Type::kWrite): {
      r->type = Record::Type::kWrite;
      uint32_t count = 0;
      ok = d.I64(&r->revision) && d.U32(&count);
      // Each mutation takes at least 5 bytes: bound the count before reserving.
      if (ok && count > d.left() / 5) {
        return Status::Corruption("write record claims " +
                                  std::to_string(count) + " mutations in " +
                                  std::to_string(d.left()) + " bytes");
      }
      for (uint32_t i = 0; ok && i < count; ++i) {
        Mutation m;
        uint8_t kind = 0;
        ok = d.U8(&kind) && (kind == 1 || kind == 2) &&
             d.Str(&m.key, kMaxKeyBytes + 128);
        m.is_put = kind == 1;
        if (ok && m.is_put)
          ok = d.Str(&m.value, kMaxValueBytes) && d.I64(&m.lease);
        if (ok) r->mutations.push_back(std::move(m));
      }
      break;
    }
    case static_cast<uint8_t>(Record::Type::kLeaseGrant):
      r->type = Record::Type::kLeaseGrant;
      ok = d.I64(&r->lease) && d.I64(&r->ttl_seconds) && d.I64(&r->expiry_ms);
      break;
    case static_cast<uint8_t>(Record::Type::kLeaseRenew):
      r->type = Record::Type::kLeaseRenew;
      ok = d.I64(&r->lease) && d.I64(&r->expiry_ms);
      break;
    case static_cast<uint8_t>(Record::Type::kLeaseRemove):
      r->type = Record::Type::kLeaseRemove;
      ok = d.I64(&r->lease) && d.I64(&r->revision);
      break;
    default:
      return Status::Corruption("unknown record type " + std::to_string(type));
  }
  if (!ok)
    return Status::Corruption("record of type " + std::to_string(type) +
                              " is malformed");
  if (d.left() != 0) {
    return Status::Corruption(std::to_string(d.left()) +
                              " stray bytes after a record of type " +
                              std::to_string(type));
  }
  return Status::OK();
}

}  // namespace fabps::coord::local

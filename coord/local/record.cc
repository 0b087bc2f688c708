#include "coord/local/record.h"

#include <cstring>

#include "base/crc32c.h"
#include "base/little_endian.h"
#include "coord/store.h"

namespace fabps::coord::local {

void EncodeRecord(const Record& r, std::string* out) {
  std::string payload;
  ByteWriter e(&payload);
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
  ByteWriter h(out);
  h.U32(static_cast<uint32_t>(payload.size()));
  h.U32(crc32c::Value(payload.data(), payload.size()));
  out->append(payload);
}

Status DecodeRecordPayload(const char* data, size_t n, Record* r) {
  ByteReader d(data, n);
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

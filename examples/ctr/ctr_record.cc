#include "examples/ctr/ctr_record.h"

#include "base/little_endian.h"

namespace fabps::examples::ctr {

void AppendCtrRecord(int label, const uint64_t* ids, int fields,
                     std::string* out) {
  out->push_back(static_cast<char>(label));
  out->push_back(static_cast<char>(fields));
  size_t at = out->size();
  out->resize(at + 8 * static_cast<size_t>(fields));
  for (int f = 0; f < fields; f++) StoreU64(out->data() + at + 8 * f, ids[f]);
}

bool ParseCtrRecord(std::string_view record, int fields, int* label,
                    uint64_t* ids) {
  if (fields < 1 || fields > kMaxFields) return false;
  if (record.size() != CtrRecordBytes(fields)) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(record.data());
  if (p[0] > 1 || p[1] != fields) return false;
  *label = p[0];
  for (int f = 0; f < fields; f++) ids[f] = LoadU64(p + 2 + 8 * f);
  return true;
}

}  // namespace fabps::examples::ctr

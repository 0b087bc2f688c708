// CTR impression records as fabps-ctr-gen writes them and the CTR trainer
// reads them (byte layout: docs/formats/ctr_record.md):
//   byte 0      label: 0 (no click) or 1 (click)
//   byte 1      F, the number of fields (1..kMaxFields)
//   bytes 2..   F feature ids, uint64 little-endian, field order
// A feature id is a 64-bit hash of (field, value). The trainer's hashed
// table (--table hashed) takes the id itself as the row id; its fixed table
// (--table fixed) maps it to a row by FeatureRow (id mod the table's rows),
// so a table smaller than the vocabulary shares rows as hashed features do.
//
// Every record comes from a file: ParseCtrRecord checks the length, the
// label and F before anything is used.
#ifndef FABPS_EXAMPLES_CTR_CTR_RECORD_H_
#define FABPS_EXAMPLES_CTR_CTR_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace fabps::examples::ctr {

constexpr int kMaxFields = 64;

inline size_t CtrRecordBytes(int fields) {
  return 2 + 8 * static_cast<size_t>(fields);
}

// Appends the record of `label` and `ids[0..fields)` to *out.
void AppendCtrRecord(int label, const uint64_t* ids, int fields,
                     std::string* out);

// On a well-formed record of exactly `fields` fields writes its label to
// *label and its ids to ids[0..fields) and returns true; false (nothing
// trusted) otherwise.
bool ParseCtrRecord(std::string_view record, int fields, int* label,
                    uint64_t* ids);

// The row of feature `id` in a fixed table of `rows` rows (> 0).
inline int64_t FeatureRow(uint64_t id, uint64_t rows) {
  return static_cast<int64_t>(id % rows);
}

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_CTR_RECORD_H_

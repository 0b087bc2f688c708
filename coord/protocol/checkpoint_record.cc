#include "coord/protocol/checkpoint_record.h"

#include <cstdio>
#include <vector>

#include "coord/protocol/job_keys.h"

namespace fabps::coord {
namespace {

bool IsDecimal(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool ParseHex32(std::string_view s, uint32_t* out) {
  if (s.size() != 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                     : -1;
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace

Result<std::string> EncodeCheckpointRecord(const CheckpointRecord& r) {
  auto bad_text = [](const std::string& s) {
    return s.find('\n') != std::string::npos ||
           s.find('\0') != std::string::npos;
  };
  if (r.dir.empty() || bad_text(r.dir) || bad_text(r.file))
    return Status::InvalidArgument(
        "checkpoint record: dir must be non-empty and neither dir nor file "
        "may contain a newline or NUL");
  if (r.file.empty() && r.crc != 0)
    return Status::InvalidArgument("checkpoint record: a crc without a file");
  if (r.file.empty() && (r.size != 0 || r.file_crc != 0))
    return Status::InvalidArgument(
        "checkpoint record: a size or file CRC without a file");
  if (r.unix_time < 0)
    return Status::InvalidArgument("checkpoint record: negative time");
  std::string v = "dir=" + r.dir + "\n";
  if (!r.file.empty()) {
    char crc[16];
    std::snprintf(crc, sizeof(crc), "%08x", r.crc);
    v += "file=" + r.file + "\ncrc=" + crc + "\n";
    if (r.size != 0) {
      char file_crc[16];
      std::snprintf(file_crc, sizeof(file_crc), "%08x", r.file_crc);
      v += "size=" + std::to_string(r.size) + "\nfilecrc=" + file_crc + "\n";
    }
  }
  v += "time=" + std::to_string(r.unix_time) + "\n";
  return v;
}

Result<CheckpointRecord> ParseCheckpointRecord(std::string_view value) {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  size_t pos = 0;
  int line = 0;
  while (pos < value.size()) {
    if (++line > 6)
      return Status::Corruption("checkpoint record: more than 6 lines");
    size_t end = value.find('\n', pos);
    if (end == std::string_view::npos)
      return Status::Corruption("checkpoint record: line " +
                                std::to_string(line) + " has no newline");
    std::string_view l = value.substr(pos, end - pos);
    size_t eq = l.find('=');
    if (eq == std::string_view::npos || l.find('\0') != std::string_view::npos)
      return Status::Corruption("checkpoint record: line " +
                                std::to_string(line) + " is not name=value");
    fields.emplace_back(l.substr(0, eq), l.substr(eq + 1));
    pos = end + 1;
  }
  // The order is fixed: dir, [file, crc, [size, filecrc,]] time.
  const bool with_file = fields.size() >= 4;
  const bool with_size = fields.size() == 6;
  const std::vector<std::string_view> want =
      with_size   ? std::vector<std::string_view>{"dir",  "file",    "crc",
                                                  "size", "filecrc", "time"}
      : with_file ? std::vector<std::string_view>{"dir", "file", "crc", "time"}
                  : std::vector<std::string_view>{"dir", "time"};
  if (fields.size() != want.size())
    return Status::Corruption(
        "checkpoint record: " + std::to_string(fields.size()) +
        " lines, want dir, [file, crc, [size, filecrc,]] time");
  for (size_t i = 0; i < want.size(); i++) {
    if (fields[i].first != want[i])
      return Status::Corruption("checkpoint record: line " +
                                std::to_string(i + 1) + " is not " +
                                std::string(want[i]) + "=");
  }
  CheckpointRecord r;
  r.dir = std::string(fields[0].second);
  if (r.dir.empty()) return Status::Corruption("checkpoint record: empty dir");
  if (with_file) {
    r.file = std::string(fields[1].second);
    if (r.file.empty())
      return Status::Corruption("checkpoint record: empty file");
    if (!ParseHex32(fields[2].second, &r.crc))
      return Status::Corruption("checkpoint record: crc is not 8 hex digits");
  }
  if (with_size) {
    if (!IsDecimal(fields[3].second, 19))
      return Status::Corruption("checkpoint record: size is not a decimal");
    r.size = std::stoull(std::string(fields[3].second));
    if (!ParseHex32(fields[4].second, &r.file_crc))
      return Status::Corruption(
          "checkpoint record: filecrc is not 8 hex digits");
  }
  std::string_view t = fields.back().second;
  if (!IsDecimal(t, 18))
    return Status::Corruption("checkpoint record: time is not a decimal");
  r.unix_time = std::stoll(std::string(t));
  return r;
}

Result<CheckpointRecord> ReadCheckpointRecord(Store* store, uint32_t index,
                                              Deadline deadline) {
  std::string key = keys::PsCheckpoint(index);
  FABPS_ASSIGN_OR_RETURN(KeyValue kv, store->Get(key, deadline));
  auto r = ParseCheckpointRecord(kv.value);
  if (!r.ok()) return r.status().WithContext(key);
  return r;
}

}  // namespace fabps::coord

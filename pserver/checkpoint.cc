#include "pserver/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <future>

#include "base/crc32c.h"
#include "base/file_util.h"
#include "base/little_endian.h"
#include "base/log.h"
#include "pserver/file_io.h"

namespace fabps::pserver {
namespace {

constexpr char kHeaderMagic[8] = {'F', 'A', 'B', 'P', 'S', 'C', 'K', '1'};
constexpr char kFooterMagic[8] = {'F', 'A', 'B', 'P', 'S', 'E', 'N', 'D'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;
constexpr size_t kRecordHeaderBytes = 4 * 4 + 8 + 8;
constexpr size_t kFooterBytes = 8 + 4 + 8 + 4;

std::string FileName(uint32_t index, uint64_t sequence) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "shard-%" PRIu32 "-%020" PRIu64 ".ckpt",
                index, sequence);
  return buf;
}

// Parses "shard-<index>-<20 digits>.ckpt"; false for anything else.
bool ParseFileName(const std::string& name, uint32_t index,
                   uint64_t* sequence) {
  std::string prefix = "shard-" + std::to_string(index) + "-";
  const std::string suffix = ".ckpt";
  if (name.size() != prefix.size() + 20 + suffix.size() ||
      name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  uint64_t v = 0;
  for (size_t i = prefix.size(); i < prefix.size() + 20; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *sequence = v;
  return true;
}

// Parses "shard-<index>-<20 digits>.ckpt" for any index.
bool ParseAnyFileName(const std::string& name, uint32_t* index,
                      uint64_t* sequence) {
  const std::string prefix = "shard-";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  uint64_t v = 0;
  size_t i = prefix.size();
  for (; i < name.size() && i < prefix.size() + 10 && name[i] >= '0' &&
         name[i] <= '9';
       ++i) {
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  if (i == prefix.size() || v > UINT32_MAX) return false;
  *index = static_cast<uint32_t>(v);
  return ParseFileName(name, *index, sequence);
}

uint64_t NowUnixMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Writes the checkpoint through `fd` (base's WriteFileDurably syncs and
// renames it); `name` names the file in errors.
Status WriteFile(const Shard& shard, int fd, const std::string& name,
                 uint64_t sequence, CheckpointInfo* info) {
  AppendFile f(fd, name);
  const std::vector<uint32_t>& ids = shard.block_ids();
  std::string header;
  ByteWriter h(&header);
  h.Raw(kHeaderMagic, sizeof(kHeaderMagic));
  h.U32(kVersion);
  h.U32(shard.index());
  h.U64(sequence);
  h.U64(NowUnixMs());
  std::string layout = shard.layout().Encode();
  h.U64(layout.size());
  h.Raw(layout.data(), layout.size());
  h.U32(static_cast<uint32_t>(ids.size()));
  info->header_crc = crc32c::Value(header.data(), header.size());
  h.U32(info->header_crc);
  uint32_t file_crc = crc32c::Value(header.data(), header.size());
  FABPS_RETURN_IF_ERROR(f.Append(header.data(), header.size()));

  // Two record buffers: while one large record is written on a helper
  // thread, the next block is copied and checksummed, so the copy and the
  // CRC hide behind the disk. Small records go through AppendFile's buffer
  // on this thread. Only one Append runs at a time (AppendFile is not
  // thread-safe): `writing` is always waited for first. The buffers are
  // reused across calls on this thread: fresh multi-MiB buffers would pay
  // their first-touch page faults on every checkpoint.
  constexpr size_t kAsyncRecordBytes = 1 << 20;
  thread_local std::string records[2];
  std::future<Status> writing;  // declared after f and records: joins first
  int cur = 0;
  for (uint32_t id : ids) {
    std::string& record = records[cur];
    // Copy under the block lock; checksum and write after releasing it.
    FABPS_RETURN_IF_ERROR(shard.ReadBlockLocked(id, [&](const BlockView& v) {
      int slots = StateSlots(v.rule);
      record.clear();
      record.reserve(kRecordHeaderBytes + v.value_bytes * (1 + slots) + 4);
      ByteWriter w(&record);
      w.U32(id);
      w.U32(static_cast<uint32_t>(v.dtype));
      w.U32(static_cast<uint32_t>(v.rule));
      w.U32(static_cast<uint32_t>(slots));
      const bool hashed = IsHashedBlock(*v.info);
      w.U64(hashed ? v.rows * v.info->row_elements : v.info->num_elements);
      w.U64(v.update_count);
      if (hashed) {
        w.Raw(v.ids, v.rows * 8);
        w.Raw(v.updated_ms, v.rows * 8);
        w.U64(v.evicted);
        w.Raw(v.evicted_ids, v.evicted * 8);
        w.Raw(v.evicted_ms, v.evicted * 8);
      }
      w.Raw(v.values, v.value_bytes);
      for (int k = 0; k < slots; ++k) w.Raw(v.state[k], v.state_bytes);
    }));
    uint32_t crc = crc32c::Value(record.data(), record.size());
    ByteWriter(&record).U32(crc);
    file_crc = crc32c::Extend(file_crc, record.data(), record.size());
    if (writing.valid()) FABPS_RETURN_IF_ERROR(writing.get());
    if (record.size() >= kAsyncRecordBytes) {
      writing = std::async(std::launch::async, [&f, &record] {
        return f.Append(record.data(), record.size());
      });
      cur ^= 1;
    } else {
      FABPS_RETURN_IF_ERROR(f.Append(record.data(), record.size()));
    }
  }
  if (writing.valid()) FABPS_RETURN_IF_ERROR(writing.get());

  std::string footer;
  ByteWriter ft(&footer);
  ft.Raw(kFooterMagic, sizeof(kFooterMagic));
  ft.U32(static_cast<uint32_t>(ids.size()));
  ft.U64(f.bytes_written() + kFooterBytes);
  ft.U32(crc32c::Value(footer.data(), footer.size()));
  FABPS_RETURN_IF_ERROR(f.Append(footer.data(), footer.size()));
  info->bytes = f.bytes_written();
  info->file_crc = crc32c::Extend(file_crc, footer.data(), footer.size());
  return f.Flush();
}

// One pass over a checkpoint file: every length is bounded by the file and
// the layout it records, every record's CRC checked before it is shown.
Status ReadRecords(const std::string& path,
                   const CheckpointHeaderVisitor& on_header,
                   const CheckpointBlockVisitor& on_block) {
  FABPS_ASSIGN_OR_RETURN(ReadFile f, ReadFile::Open(path));
  auto corrupt = [](const std::string& why) { return Status::Corruption(why); };

  // Header.
  char fixed[kFixedHeaderBytes];
  FABPS_RETURN_IF_ERROR(f.ReadExactly(fixed, sizeof(fixed), "the header"));
  if (std::memcmp(fixed, kHeaderMagic, sizeof(kHeaderMagic)) != 0) {
    return corrupt("bad magic (not a fabps checkpoint)");
  }
  ByteReader r(fixed + 8, sizeof(fixed) - 8);
  uint32_t version, index;
  uint64_t sequence, time_ms, layout_len;
  r.U32(&version);
  r.U32(&index);
  r.U64(&sequence);
  r.U64(&time_ms);
  r.U64(&layout_len);
  if (version != kVersion) {
    return corrupt("unsupported format version " + std::to_string(version));
  }
  if (layout_len > f.size() - f.position()) {
    return corrupt("layout length " + std::to_string(layout_len) +
                   " beyond the end of the file (truncated or damaged header)");
  }
  std::string layout_bytes(layout_len, '\0');
  FABPS_RETURN_IF_ERROR(
      f.ReadExactly(layout_bytes.data(), layout_len, "the layout"));
  uint32_t num_blocks, stored_crc;
  FABPS_RETURN_IF_ERROR(f.ReadExactly(&num_blocks, 4, "the header"));
  FABPS_RETURN_IF_ERROR(f.ReadExactly(&stored_crc, 4, "the header CRC"));
  uint32_t crc = crc32c::Value(fixed, sizeof(fixed));
  crc = crc32c::Extend(crc, layout_bytes.data(), layout_bytes.size());
  crc = crc32c::Extend(crc, &num_blocks, 4);
  if (crc != stored_crc) return corrupt("header CRC32C mismatch");
  Result<Layout> layout =
      Layout::Decode(layout_bytes.data(), layout_bytes.size());
  if (!layout.ok()) return corrupt("header: " + layout.status().message());
  if (index >= layout->num_pservers()) {
    return corrupt("shard index " + std::to_string(index) +
                   " outside the layout's " +
                   std::to_string(layout->num_pservers()) + " pservers");
  }
  CheckpointHeader header{index, sequence, time_ms, std::move(*layout),
                          stored_crc};
  if (on_header) FABPS_RETURN_IF_ERROR(on_header(header));
  const Layout& lay = header.layout;
  const std::vector<uint32_t> ids = lay.BlocksOf(index);
  if (num_blocks != ids.size()) {
    return corrupt("block count " + std::to_string(num_blocks) +
                   " does not match the layout (" + std::to_string(ids.size()) +
                   ")");
  }

  // Blocks.
  std::vector<char> payload;
  for (uint32_t i = 0; i < num_blocks; ++i) {
    const uint32_t id = ids[i];
    const std::string where =
        "block " + std::to_string(id) + " (record " + std::to_string(i) + ")";
    char rh[kRecordHeaderBytes];
    std::string what = where + " header";
    FABPS_RETURN_IF_ERROR(f.ReadExactly(rh, sizeof(rh), what.c_str()));
    ByteReader rr(rh, sizeof(rh));
    uint32_t rid, dtype, kind, slots;
    uint64_t elements, update_count;
    rr.U32(&rid);
    rr.U32(&dtype);
    rr.U32(&kind);
    rr.U32(&slots);
    rr.U64(&elements);
    rr.U64(&update_count);
    const BlockInfo& info = lay.blocks()[id];
    const DType want_dtype = lay.params()[info.param].dtype;
    // The payload length comes from the layout, never from the file; the
    // file's own fields are compared once the CRC has vouched for them.
    if (slots > 2)
      return corrupt(where + ": state count " + std::to_string(slots));
    // A hashed bucket's record says how many rows it holds (elements = rows
    // * R), bounded by the file before anything is allocated.
    const bool hashed = IsHashedBlock(info);
    const uint64_t left = f.size() - f.position();
    const size_t esize = DTypeSize(want_dtype);
    const uint64_t rows = hashed ? elements / info.row_elements : 0;
    if (hashed && (elements % info.row_elements != 0 ||
                   rows > left / (16 + info.row_elements * esize))) {
      return corrupt(where + ": " + std::to_string(elements) +
                     " elements are not whole rows the file can hold");
    }
    const size_t value_bytes =
        (hashed ? rows * info.row_elements : info.num_elements) * esize;
    // A hashed bucket: ids, update times and the tombstone count first; the
    // count bounds the tombstones that follow by the file.
    size_t head = 0;
    uint64_t evicted = 0;
    if (hashed) {
      head = rows * 16 + 8;
      if (head > left) return corrupt("truncated: " + where);
      payload.resize(head);
      what = where + " ids";
      FABPS_RETURN_IF_ERROR(f.ReadExactly(payload.data(), head, what.c_str()));
      std::memcpy(&evicted, payload.data() + rows * 16, 8);
      if (evicted > (left - head) / 16) {
        return corrupt(where + ": " + std::to_string(evicted) +
                       " evicted ids, more than the file holds");
      }
      head += evicted * 16;
    }
    const size_t len = head + value_bytes * (1 + slots);
    if (len > left) {
      return corrupt("truncated: " + where + " needs " + std::to_string(len) +
                     " bytes, the file has " + std::to_string(left) + " left");
    }
    const size_t already = hashed ? rows * 16 + 8 : 0;  // read above
    payload.resize(len);
    what = where + " data";
    FABPS_RETURN_IF_ERROR(
        f.ReadExactly(payload.data() + already, len - already, what.c_str()));
    char crc_bytes[4];
    what = where + " CRC";
    FABPS_RETURN_IF_ERROR(f.ReadExactly(crc_bytes, 4, what.c_str()));
    const uint32_t block_crc = LoadU32(crc_bytes);
    uint32_t got =
        crc32c::Extend(crc32c::Value(rh, sizeof(rh)), payload.data(), len);
    if (got != block_crc) return corrupt(where + ": CRC32C mismatch");
    if (rid != id || dtype != static_cast<uint32_t>(want_dtype) ||
        (!hashed && elements != info.num_elements)) {
      return corrupt(where + ": id, type or size disagree with the layout");
    }
    if (kind > static_cast<uint32_t>(RuleKind::kAdaGrad) ||
        StateSlots(static_cast<RuleKind>(kind)) != static_cast<int>(slots)) {
      return corrupt(where + ": unknown rule " + std::to_string(kind));
    }
    if (hashed) {
      // Each id once and of this bucket (what RestoreHashed takes), so that
      // a file that verifies also loads: the CRC vouches for the bytes, not
      // for the writer.
      std::vector<uint64_t> row_ids(rows);
      if (rows > 0) std::memcpy(row_ids.data(), payload.data(), rows * 8);
      for (uint64_t x : row_ids) {
        if (BucketOfId(x, info.buckets) != info.index_in_param) {
          return corrupt(where + ": id " + std::to_string(x) +
                         " is not of bucket " +
                         std::to_string(info.index_in_param));
        }
      }
      std::sort(row_ids.begin(), row_ids.end());
      auto dup = std::adjacent_find(row_ids.begin(), row_ids.end());
      if (dup != row_ids.end()) {
        return corrupt(where + ": id " + std::to_string(*dup) + " is repeated");
      }
    }
    if (on_block) {
      const char* p = payload.data();
      BlockView v;
      if (hashed) {
        v.rows = rows;
        v.ids = reinterpret_cast<const uint64_t*>(p);
        v.updated_ms = reinterpret_cast<const int64_t*>(p + rows * 8);
        v.evicted = evicted;
        v.evicted_ids = reinterpret_cast<const uint64_t*>(p + rows * 16 + 8);
        v.evicted_ms =
            reinterpret_cast<const int64_t*>(p + rows * 16 + 8 + evicted * 8);
        p += head;
      }
      v.info = &info;
      v.dtype = want_dtype;
      v.rule = static_cast<RuleKind>(kind);
      v.values = p;
      v.value_bytes = value_bytes;
      v.state[0] = slots > 0 ? p + value_bytes : nullptr;
      v.state[1] = slots > 1 ? p + 2 * value_bytes : nullptr;
      v.state_bytes = slots > 0 ? value_bytes : 0;
      v.update_count = update_count;
      FABPS_RETURN_IF_ERROR(on_block(v));
    }
  }

  // Footer.
  char footer[kFooterBytes];
  FABPS_RETURN_IF_ERROR(f.ReadExactly(footer, sizeof(footer), "the footer"));
  const uint32_t footer_crc = LoadU32(footer + kFooterBytes - 4);
  if (crc32c::Value(footer, kFooterBytes - 4) != footer_crc) {
    return corrupt("footer CRC32C mismatch");
  }
  ByteReader fr(footer + 8, kFooterBytes - 8);
  uint32_t footer_blocks;
  uint64_t length;
  fr.U32(&footer_blocks);
  fr.U64(&length);
  if (std::memcmp(footer, kFooterMagic, 8) != 0 ||
      footer_blocks != num_blocks || length != f.size() ||
      f.position() != f.size()) {
    return corrupt("footer disagrees with the file (" +
                   std::to_string(f.size()) +
                   " bytes, trailing data or wrong block count)");
  }
  return Status::OK();
}

// One pass over a checkpoint file for `shard`. With restore == false it only
// checks; with restore == true it also writes each verified block into the
// shard.
Status Scan(const std::string& path, Shard* shard, bool restore) {
  auto fits = [&](const CheckpointHeader& h) -> Status {
    if (std::string diff =
            Layout::DescribeDifference(h.layout, shard->layout());
        !diff.empty()) {
      return Status::FailedPrecondition(
          "made with a different layout (" + diff +
          "; checkpoint vs this shard); refusing to load it");
    }
    if (h.shard_index != shard->index()) {
      return Status::FailedPrecondition(
          "holds shard " + std::to_string(h.shard_index) + ", this is shard " +
          std::to_string(shard->index()));
    }
    return Status::OK();
  };
  auto block = [&](const BlockView& v) -> Status {
    const uint32_t id = v.info->id;
    RuleKind want_rule = RuleKind::kSgd;
    FABPS_RETURN_IF_ERROR(shard->ReadBlockLocked(
        id, [&](const BlockView& mine) { want_rule = mine.rule; }));
    if (v.rule != want_rule) {
      return Status::FailedPrecondition(
          "block " + std::to_string(id) + ": optimizer state is for " +
          RuleName(v.rule) + ", this shard uses " + RuleName(want_rule));
    }
    if (!restore) return Status::OK();
    if (IsHashedBlock(*v.info)) {
      return shard->RestoreHashed(id, v.rows, v.ids, v.updated_ms, v.values,
                                  v.state[0], v.state[1], v.update_count,
                                  v.evicted, v.evicted_ids, v.evicted_ms);
    }
    return shard->RestoreBlock(id, v.values, v.state[0], v.state[1],
                               v.update_count);
  };
  return ReadRecords(path, fits, block);
}

}  // namespace

Result<CheckpointInfo> WriteCheckpoint(const Shard& shard,
                                       const std::string& dir,
                                       uint64_t sequence) {
  const std::string name = FileName(shard.index(), sequence);
  CheckpointInfo info;
  info.path = dir + "/" + name;
  info.index = shard.index();
  info.sequence = sequence;
  Status s = WriteFileDurably(info.path, [&](int fd) {
    return WriteFile(shard, fd, TempPathFor(info.path), sequence, &info);
  });
  if (!s.ok()) return s.WithContext("checkpoint " + info.path);
  return info;
}

Status ReadCheckpoint(const std::string& path,
                      const CheckpointHeaderVisitor& on_header,
                      const CheckpointBlockVisitor& on_block) {
  return ReadRecords(path, on_header, on_block)
      .WithContext("checkpoint " + path);
}

Status VerifyCheckpoint(const std::string& path, const Shard& shard) {
  // Scan never writes to the shard when restore is false.
  return Scan(path, const_cast<Shard*>(&shard), /*restore=*/false)
      .WithContext("checkpoint " + path);
}

Status LoadCheckpoint(const std::string& path, Shard* shard) {
  FABPS_RETURN_IF_ERROR(VerifyCheckpoint(path, *shard));
  return Scan(path, shard, /*restore=*/true)
      .WithContext("checkpoint " + path +
                   " (changed while loading; shard partly restored)");
}

Result<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& dir,
                                                    uint32_t index) {
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<CheckpointInfo> out;
  for (const std::string& name : names) {
    CheckpointInfo info;
    if (ParseFileName(name, index, &info.sequence)) {
      info.path = dir + "/" + name;
      info.index = index;
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) {
              return a.sequence > b.sequence;
            });
  return out;
}

Result<std::vector<CheckpointInfo>> ListAllCheckpoints(const std::string& dir) {
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<CheckpointInfo> out;
  for (const std::string& name : names) {
    CheckpointInfo info;
    if (ParseAnyFileName(name, &info.index, &info.sequence)) {
      info.path = dir + "/" + name;
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) {
              return a.index != b.index ? a.index < b.index
                                        : a.sequence > b.sequence;
            });
  return out;
}

CheckpointManager::CheckpointManager(std::string dir, uint32_t index,
                                     uint32_t keep)
    : dir_(std::move(dir)), index_(index), keep_(std::max<uint32_t>(1, keep)) {}

Result<CheckpointInfo> CheckpointManager::Save(const Shard& shard) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shard.index() != index_) {
    return Status::InvalidArgument("checkpoint manager of shard " +
                                   std::to_string(index_) + " given shard " +
                                   std::to_string(shard.index()));
  }
  FABPS_ASSIGN_OR_RETURN(std::vector<CheckpointInfo> existing,
                         ListCheckpoints(dir_, index_));
  uint64_t next = existing.empty() ? 1 : existing.front().sequence + 1;
  FABPS_ASSIGN_OR_RETURN(CheckpointInfo info,
                         WriteCheckpoint(shard, dir_, next));
  // Rotation: the new file plus the keep-1 newest older ones stay.
  for (size_t i = keep_ - 1; i < existing.size(); ++i) {
    Status s = RemoveFile(existing[i].path);
    if (!s.ok()) {
      FABPS_LOG(WARNING) << "checkpoint rotation: " << s.ToString();
    }
  }
  // Temporary files left by a crash in an earlier Save.
  if (auto names = ListDir(dir_); names.ok()) {
    const std::string prefix = ".shard-" + std::to_string(index_) + "-";
    for (const std::string& n : *names) {
      if (n.compare(0, prefix.size(), prefix) == 0 && n.size() > 4 &&
          n.compare(n.size() - 4, 4, ".tmp") == 0) {
        RemoveFile(dir_ + "/" + n);
      }
    }
  }
  return info;
}

namespace {

// OK when `path` is not the recorded file or is that file: the same header
// CRC (sequence and write time) and size. Reads the header only.
Status CompareWithRecord(const std::string& path,
                         const RecordedCheckpoint& recorded) {
  const std::string name = path.substr(path.rfind('/') + 1);
  if (recorded.file.empty() || name != recorded.file) return Status::OK();
  FABPS_ASSIGN_OR_RETURN(ReadFile f, ReadFile::Open(path));
  const uint64_t bytes = f.size();
  uint32_t header_crc = 0;
  // Stops the read once the header is verified.
  const Status header_read = Status::Cancelled("header read");
  Status s = ReadCheckpoint(
      path,
      [&](const CheckpointHeader& h) {
        header_crc = h.crc;
        return header_read;
      },
      nullptr);
  if (s.code() != Status::Code::kCancelled) return s;
  if (header_crc == recorded.header_crc &&
      (recorded.bytes == 0 || bytes == recorded.bytes)) {
    return Status::OK();
  }
  char text[160];
  std::snprintf(text, sizeof(text),
                "header CRC32C %08x, %" PRIu64
                " bytes; the store recorded %08x, %" PRIu64 " bytes",
                header_crc, bytes, recorded.header_crc, recorded.bytes);
  return Status::Corruption("checkpoint " + path +
                            " is not the file its record in the store names (" +
                            text + ")");
}

}  // namespace

Result<CheckpointInfo> CheckpointManager::LoadLatest(
    Shard* shard, const RecordedCheckpoint& recorded) {
  std::lock_guard<std::mutex> lock(mu_);
  FABPS_ASSIGN_OR_RETURN(std::vector<CheckpointInfo> all,
                         ListCheckpoints(dir_, index_));
  if (all.empty()) {
    return Status::NotFound("no checkpoint of shard " + std::to_string(index_) +
                            " in " + dir_);
  }
  Status first_error;
  std::string reasons;
  for (CheckpointInfo& info : all) {
    Status s = CompareWithRecord(info.path, recorded);
    if (s.ok()) s = LoadCheckpoint(info.path, shard);
    if (s.ok()) {
      if (!first_error.ok()) {
        FABPS_LOG(WARNING) << "loaded older checkpoint " << info.path
                           << " after newer ones failed";
      }
      return info;
    }
    FABPS_LOG(WARNING) << "skipping checkpoint: " << s.ToString();
    if (first_error.ok()) first_error = s;
    reasons += (reasons.empty() ? "" : "; ") + s.message();
  }
  return Status(first_error.code(), "no loadable checkpoint of shard " +
                                        std::to_string(index_) + ": " +
                                        reasons);
}

}  // namespace fabps::pserver

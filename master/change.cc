#include "master/change.h"

#include <cstring>
#include <unordered_map>

#include "base/crc32c.h"
#include "base/little_endian.h"

namespace fabps::master {
namespace {

constexpr char kMagic[4] = {'F', 'M', 'J', '1'};

}  // namespace

const char* ChangeTypeName(Change::Type t) {
  switch (t) {
    case Change::Type::kSetDataset:
      return "SetDataset";
    case Change::Type::kDispatch:
      return "Dispatch";
    case Change::Type::kFinish:
      return "Finish";
    case Change::Type::kFail:
      return "Fail";
    case Change::Type::kNewPass:
      return "NewPass";
    case Change::Type::kSaveGrant:
      return "SaveGrant";
  }
  return "?";
}

void AppendCrc(std::string* bytes) {
  ByteWriter(bytes).U32(crc32c::Value(bytes->data(), bytes->size()));
}

Status CheckAndStripCrc(std::string_view* bytes, const char* what) {
  if (bytes->size() < 4)
    return Status::Corruption(std::string(what) + ": too short");
  std::string_view body = bytes->substr(0, bytes->size() - 4);
  uint32_t want;
  ByteReader(bytes->substr(bytes->size() - 4)).U32(&want);
  if (crc32c::Value(body.data(), body.size()) != want) {
    return Status::Corruption(std::string(what) + ": CRC32C mismatch");
  }
  *bytes = body;
  return Status::OK();
}

void EncodeDataset(const std::vector<std::string>& globs,
                   const std::vector<TaskDef>& tasks, ByteWriter* w) {
  w->U32(static_cast<uint32_t>(globs.size()));
  for (const auto& g : globs) w->Str(g);
  std::vector<std::string> files;
  std::unordered_map<std::string, uint32_t> file_index;
  for (const auto& t : tasks) {
    for (const auto& c : t.chunks) {
      if (file_index.emplace(c.path, static_cast<uint32_t>(files.size()))
              .second) {
        files.push_back(c.path);
      }
    }
  }
  w->U32(static_cast<uint32_t>(files.size()));
  for (const auto& f : files) w->Str(f);
  w->U32(static_cast<uint32_t>(tasks.size()));
  for (const auto& t : tasks) {
    w->U32(static_cast<uint32_t>(t.chunks.size()));
    for (const auto& c : t.chunks) {
      w->U32(file_index[c.path]);
      w->U64(c.offset);
      w->U32(c.records);
    }
  }
}

Status DecodeDataset(ByteReader* r, std::vector<std::string>* globs,
                     std::vector<TaskDef>* tasks) {
  auto bad = [](const char* what) {
    return Status::Corruption(std::string("dataset: ") + what);
  };
  uint32_t n;
  if (!r->U32(&n) || n > kMaxGlobs) return bad("glob count");
  globs->resize(n);
  for (auto& g : *globs) {
    if (!r->Str(&g, kMaxPathBytes)) return bad("glob");
  }
  uint32_t nfiles;
  if (!r->U32(&nfiles) || nfiles > r->left() / 4) return bad("file count");
  std::vector<std::string> files(nfiles);
  for (auto& f : files) {
    if (!r->Str(&f, kMaxPathBytes) || f.empty()) return bad("file path");
  }
  uint32_t ntasks;
  if (!r->U32(&ntasks) || ntasks > kMaxTasks || ntasks > r->left() / 4)
    return bad("task count");
  tasks->resize(ntasks);
  for (auto& t : *tasks) {
    uint32_t nchunks;
    if (!r->U32(&nchunks) || nchunks == 0 || nchunks > kMaxChunksPerTask ||
        nchunks > r->left() / 16) {
      return bad("chunk count");
    }
    t.chunks.resize(nchunks);
    for (auto& c : t.chunks) {
      uint32_t fi;
      if (!r->U32(&fi) || fi >= nfiles) return bad("file index");
      if (!r->U64(&c.offset) || !r->U32(&c.records)) return bad("chunk");
      c.path = files[fi];
    }
  }
  return Status::OK();
}

std::string EncodeChange(const Change& c) {
  std::string out(kMagic, sizeof(kMagic));
  ByteWriter w(&out);
  w.U8(static_cast<uint8_t>(c.type));
  switch (c.type) {
    case Change::Type::kSetDataset:
      EncodeDataset(c.globs, c.tasks, &w);
      break;
    case Change::Type::kDispatch:
      w.U64(c.task_id);
      w.U64(c.epoch);
      w.I64(c.time_ms);
      w.I64(c.deadline_ms);
      break;
    case Change::Type::kFinish:
      w.U64(c.task_id);
      w.U64(c.epoch);
      w.I64(c.time_ms);
      break;
    case Change::Type::kFail:
      w.U64(c.task_id);
      w.U64(c.epoch);
      w.U8(c.timed_out ? 1 : 0);
      w.U8(c.to_failed ? 1 : 0);
      break;
    case Change::Type::kNewPass:
      w.I64(c.pass);
      break;
    case Change::Type::kSaveGrant:
      w.Str(c.trainer);
      w.I64(c.deadline_ms);
      break;
  }
  AppendCrc(&out);
  return out;
}

Result<Change> DecodeChange(std::string_view bytes) {
  FABPS_RETURN_IF_ERROR(CheckAndStripCrc(&bytes, "journal record"));
  if (bytes.size() < 5 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return Status::Corruption("journal record: bad magic");
  }
  ByteReader r(bytes.substr(4));
  Change c;
  uint8_t type, b1 = 0, b2 = 0;
  r.U8(&type);
  bool ok = true;
  switch (type) {
    case 1:
      c.type = Change::Type::kSetDataset;
      FABPS_RETURN_IF_ERROR(DecodeDataset(&r, &c.globs, &c.tasks));
      break;
    case 2:
      c.type = Change::Type::kDispatch;
      ok = r.U64(&c.task_id) && r.U64(&c.epoch) && r.I64(&c.time_ms) &&
           r.I64(&c.deadline_ms);
      break;
    case 3:
      c.type = Change::Type::kFinish;
      ok = r.U64(&c.task_id) && r.U64(&c.epoch) && r.I64(&c.time_ms);
      break;
    case 4:
      c.type = Change::Type::kFail;
      ok = r.U64(&c.task_id) && r.U64(&c.epoch) && r.U8(&b1) && r.U8(&b2) &&
           b1 <= 1 && b2 <= 1;
      c.timed_out = b1 == 1;
      c.to_failed = b2 == 1;
      break;
    case 5:
      c.type = Change::Type::kNewPass;
      ok = r.I64(&c.pass);
      break;
    case 6:
      c.type = Change::Type::kSaveGrant;
      ok = r.Str(&c.trainer, kMaxTrainerBytes) && !c.trainer.empty() &&
           r.I64(&c.deadline_ms);
      break;
    default:
      return Status::Corruption("journal record: unknown type " +
                                std::to_string(type));
  }
  if (!ok) return Status::Corruption("journal record: bad fields");
  if (r.left() != 0)
    return Status::Corruption("journal record: trailing bytes");
  return c;
}

}  // namespace fabps::master

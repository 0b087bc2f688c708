#include "master/store_journal.h"

#include <cstdio>
#include <cstring>

#include "base/crc32c.h"
#include "base/little_endian.h"
#include "coord/protocol/job_keys.h"

namespace fabps::master {
namespace {

// The keys are named in coord/protocol/job_keys.h; the layout under them
// is this file's.
constexpr const auto& kJournalPrefix = coord::keys::kMasterJournalPrefix;
constexpr const auto& kPartsPrefix = coord::keys::kMasterPartsPrefix;
constexpr const auto& kHeadKey = coord::keys::kMasterSnapshotHead;
constexpr const auto& kSnapshotPrefix = coord::keys::kMasterSnapshotPrefix;
constexpr char kHeadMagic[4] = {'F', 'S', 'H', '1'};
constexpr uint64_t kMaxParts = 1 << 16;

std::string Seq(uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%020llu",
                static_cast<unsigned long long>(n));
  return buf;
}

std::string PartKey(const std::string& prefix, uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%06llu", static_cast<unsigned long long>(i));
  return prefix + buf;
}

// Parses a 20-digit decimal sequence number.
bool ParseSeq(const std::string& s, uint64_t* out) {
  if (s.size() != 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

}  // namespace

Result<std::string> StoreJournal::PutParts(const std::string& prefix,
                                           const std::string& bytes) {
  uint64_t nparts = (bytes.size() + kPartBytes - 1) / kPartBytes;
  if (nparts > kMaxParts)
    return Status::InvalidArgument("master state too large for the store");
  // Leftovers of an earlier failed attempt under the same prefix would be
  // counted as parts: clear them first.
  auto cleared =
      store_->Delete(prefix, /*prefix=*/true, store_->DefaultDeadline());
  if (!cleared.ok())
    return cleared.status().WithContext("master journal: clear " + prefix);
  for (uint64_t i = 0; i < nparts; ++i) {
    std::string part = bytes.substr(i * kPartBytes, kPartBytes);
    auto r = store_->Put(PartKey(prefix, i), part, coord::kNoLease,
                         store_->DefaultDeadline());
    if (!r.ok())
      return r.status().WithContext("master journal: put " +
                                    PartKey(prefix, i));
  }
  std::string header;
  ByteWriter w(&header);
  w.U64(nparts);
  w.U64(bytes.size());
  w.U32(crc32c::Value(bytes.data(), bytes.size()));
  return header;
}

Result<std::string> StoreJournal::GetParts(const std::string& prefix,
                                           const std::string& header) {
  ByteReader r(header);
  uint64_t nparts, size;
  uint32_t crc;
  if (!r.U64(&nparts) || !r.U64(&size) || !r.U32(&crc) || r.left() != 0 ||
      nparts > kMaxParts || size > nparts * kPartBytes) {
    return Status::Corruption("master journal: bad part header for " + prefix);
  }
  auto range = store_->Range(prefix, store_->DefaultDeadline());
  if (!range.ok())
    return range.status().WithContext("master journal: range " + prefix);
  if (range->kvs.size() != nparts) {
    return Status::Corruption("master journal: " + prefix + " has " +
                              std::to_string(range->kvs.size()) +
                              " parts, expected " + std::to_string(nparts));
  }
  std::string out;
  for (uint64_t i = 0; i < nparts; ++i) {
    const coord::KeyValue& kv = range->kvs[i];
    if (kv.key != PartKey(prefix, i) || kv.value.size() > kPartBytes ||
        out.size() + kv.value.size() > size) {
      return Status::Corruption("master journal: unexpected part " + kv.key);
    }
    out += kv.value;
  }
  if (out.size() != size || crc32c::Value(out.data(), out.size()) != crc) {
    return Status::Corruption("master journal: parts under " + prefix +
                              " fail their checksum");
  }
  return out;
}

Result<JournalContents> StoreJournal::Load() {
  JournalContents contents;
  uint64_t covered = 0;
  snapshot_gen_ = 0;
  auto head = store_->Get(kHeadKey, store_->DefaultDeadline());
  if (head.ok()) {
    const std::string& v = head->value;
    if (v.size() < 4 || std::memcmp(v.data(), kHeadMagic, 4) != 0) {
      return Status::Corruption("master journal: bad snapshot head");
    }
    ByteReader r(std::string_view(v).substr(4));
    std::string parts_header;
    if (!r.U64(&covered) || !r.U64(&snapshot_gen_) ||
        !r.Str(&parts_header, 64) || r.left() != 0 || snapshot_gen_ == 0) {
      return Status::Corruption("master journal: bad snapshot head fields");
    }
    FABPS_ASSIGN_OR_RETURN(
        contents.snapshot,
        GetParts(kSnapshotPrefix + Seq(snapshot_gen_) + "/", parts_header));
  } else if (head.status().code() != Status::Code::kNotFound) {
    return head.status().WithContext("master journal: get snapshot head");
  }
  auto range = store_->Range(kJournalPrefix, store_->DefaultDeadline());
  if (!range.ok()) return range.status().WithContext("master journal: range");
  uint64_t expect = covered + 1;
  for (const coord::KeyValue& kv : range->kvs) {
    uint64_t seq;
    if (!ParseSeq(kv.key.substr(sizeof(kJournalPrefix) - 1), &seq)) {
      return Status::Corruption("master journal: bad key " + kv.key);
    }
    if (seq <= covered)
      continue;  // cannot happen (deleted with the head); harmless
    if (seq != expect) {
      return Status::Corruption("master journal: record " +
                                std::to_string(expect) + " is missing (found " +
                                std::to_string(seq) + ")");
    }
    ++expect;
    if (kv.value.empty())
      return Status::Corruption("master journal: empty record " + kv.key);
    if (kv.value[0] == 'I') {
      contents.changes.push_back(kv.value.substr(1));
    } else if (kv.value[0] == 'P') {
      FABPS_ASSIGN_OR_RETURN(
          std::string big,
          GetParts(kPartsPrefix + Seq(seq) + "/", kv.value.substr(1)));
      contents.changes.push_back(std::move(big));
    } else {
      return Status::Corruption("master journal: bad record kind in " + kv.key);
    }
  }
  next_seq_ = expect;
  last_attempted_gen_ = snapshot_gen_;
  since_compaction_ = contents.changes.size();
  loaded_ = true;
  return contents;
}

Status StoreJournal::CommitFenced(const std::vector<coord::TxnOp>& ops,
                                  const std::string& what) {
  auto r = store_->Txn(fence_, ops, {}, store_->DefaultDeadline());
  if (!r.ok()) return r.status().WithContext("master journal: " + what);
  if (!r->succeeded) {
    return Status::FailedPrecondition(
        "master journal: " + what +
        " refused: this master no longer holds master/lock");
  }
  return Status::OK();
}

Status StoreJournal::AppendBatch(const std::vector<std::string>& changes) {
  if (!loaded_)
    return Status::FailedPrecondition("master journal: Append before Load");
  if (changes.empty()) return Status::OK();
  if (changes.size() > kMaxBatch) {
    return Status::InvalidArgument("master journal: batch of more than " +
                                   std::to_string(kMaxBatch) + " records");
  }
  uint64_t seq = next_seq_;
  std::vector<coord::TxnOp> ops;
  ops.reserve(changes.size());
  for (const std::string& change : changes) {
    std::string value;
    if (change.size() + 1 <= kInlineBytes) {
      value = "I" + change;
    } else {
      FABPS_ASSIGN_OR_RETURN(std::string header,
                             PutParts(kPartsPrefix + Seq(seq) + "/", change));
      value = "P" + header;
    }
    ops.push_back(
        coord::TxnOp::Put(kJournalPrefix + Seq(seq), std::move(value)));
    ++seq;
  }
  FABPS_RETURN_IF_ERROR(
      CommitFenced(ops, "append " + std::to_string(next_seq_)));
  next_seq_ = seq;
  since_compaction_ += changes.size();
  return Status::OK();
}

Status StoreJournal::Compact(const std::string& snapshot) {
  if (!loaded_)
    return Status::FailedPrecondition("master journal: Compact before Load");
  uint64_t covered = next_seq_ - 1;
  // A fresh generation per attempt: a Txn whose outcome is unknown may have
  // made its generation the live one, so it is never written again.
  uint64_t gen = ++last_attempted_gen_;
  std::string gen_prefix = kSnapshotPrefix + Seq(gen) + "/";
  FABPS_ASSIGN_OR_RETURN(std::string parts_header,
                         PutParts(gen_prefix, snapshot));
  std::string head(kHeadMagic, sizeof(kHeadMagic));
  ByteWriter w(&head);
  w.U64(covered);
  w.U64(gen);
  w.Str(parts_header);
  std::vector<coord::TxnOp> ops = {
      coord::TxnOp::Put(kHeadKey, head),
      coord::TxnOp::Delete(kJournalPrefix, /*prefix=*/true),
      coord::TxnOp::Delete(kPartsPrefix, /*prefix=*/true),
  };
  if (snapshot_gen_ != 0) {
    ops.push_back(
        coord::TxnOp::Delete(kSnapshotPrefix + Seq(snapshot_gen_) + "/", true));
  }
  FABPS_RETURN_IF_ERROR(CommitFenced(ops, "compaction"));
  snapshot_gen_ = gen;
  since_compaction_ = 0;
  return Status::OK();
}

}  // namespace fabps::master

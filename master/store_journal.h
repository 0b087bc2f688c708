// StoreJournal: the master's Journal kept in the coordination store.
//
// Keys (relative to the job, see coord/store.h):
//   master/journal/<seq, 20 digits>   one change; "I" + bytes up to
//                                     kInlineBytes, else "P" + a part header
//   master/parts/<seq>/<i, 6 digits>  the parts of a large change
//   master/snapshot/head              "FSH1", the last seq it covers, its
//                                     generation, part count, size, CRC32C
//   master/snapshot/<gen>/<i>         the snapshot's parts
// Every value stays under kPartBytes, well inside etcd's request limit, so
// appending a change is one small write whatever the number of tasks; a
// batch of changes is one Txn (at most kMaxBatch records, inside etcd's
// default limit of 128 operations per Txn).
// Compact writes the new snapshot's parts under a fresh generation, then in
// one Txn puts the head and deletes the journal, the large-change parts and
// the previous generation: a crash leaves either the old head with its
// journal or the new head with none.
//
// Load validates everything: head and part checksums, sizes, that journal
// sequence numbers follow the snapshot without gaps; Corruption otherwise.
//
// Fencing: only one master may write a job's journal at a time. The master
// holding master/lock (coord/lease_lock.h) passes its Fence(); every append
// and compaction then commits only while that lock is still the one it
// created, and fails with FailedPrecondition once another master took over.
//
// Thread safety: none (the dispatcher serializes calls). The Store must
// outlive the journal.
#ifndef FABPS_MASTER_STORE_JOURNAL_H_
#define FABPS_MASTER_STORE_JOURNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "coord/store.h"
#include "master/journal.h"

namespace fabps::master {

class StoreJournal : public Journal {
 public:
  static constexpr size_t kPartBytes = 512 << 10;
  static constexpr size_t kMaxBatch = 64;
  // Records larger than this are stored as parts, so that a batch of
  // ordinary records plus one large one stays far below etcd's 1.5 MiB.
  static constexpr size_t kInlineBytes = 64 << 10;

  explicit StoreJournal(coord::Store* store) : store_(store) {}

  // Compares that must hold for every write (see Fencing); none by default.
  void SetFence(std::vector<coord::Compare> fence) {
    fence_ = std::move(fence);
  }

  Result<JournalContents> Load() override;
  // One Txn putting every record (large ones' parts are put first).
  Status AppendBatch(const std::vector<std::string>& changes) override;
  Status Compact(const std::string& snapshot) override;
  size_t changes_since_compaction() const override { return since_compaction_; }

  uint64_t next_seq() const { return next_seq_; }

 private:
  // Writes `bytes` as parts under `prefix` and returns the part header.
  Result<std::string> PutParts(const std::string& prefix,
                               const std::string& bytes);
  // Reads the parts under `prefix` described by `header`.
  Result<std::string> GetParts(const std::string& prefix,
                               const std::string& header);

  // The fenced Txn of an append or compaction.
  Status CommitFenced(const std::vector<coord::TxnOp>& ops,
                      const std::string& what);

  coord::Store* store_;
  std::vector<coord::Compare> fence_;
  uint64_t next_seq_ = 1;
  uint64_t snapshot_gen_ = 0;  // 0: no snapshot yet
  uint64_t last_attempted_gen_ = 0;
  size_t since_compaction_ = 0;
  bool loaded_ = false;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_STORE_JOURNAL_H_

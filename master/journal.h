// Journal: where the master records each change before acknowledging it.
//
// The journal holds an optional snapshot plus the changes appended after it,
// as opaque byte strings (master/change.h and TaskQueues::EncodeSnapshot
// give them meaning and validate them). Append costs the same however many
// tasks there are; Compact replaces the snapshot and drops the changes it
// covers, atomically, so a crash at any point leaves either the old snapshot
// with its changes or the new one.
//
// Implementations: MemoryJournal (tests) and StoreJournal (coord::Store).
// Thread safety: none required; the dispatcher calls it under its lock.
#ifndef FABPS_MASTER_JOURNAL_H_
#define FABPS_MASTER_JOURNAL_H_

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace fabps::master {

struct JournalContents {
  std::string snapshot;              // empty when there is none
  std::vector<std::string> changes;  // after the snapshot, in order
};

class Journal {
 public:
  virtual ~Journal() = default;
  // Reads everything; Corruption when the stored data is inconsistent (a gap
  // in the sequence, a part missing, a checksum failing).
  virtual Result<JournalContents> Load() = 0;
  // Durably records `changes`, in order, atomically (all or none) and at the
  // cost of one store write. On error they may or may not be stored; the
  // caller must not acknowledge them and must Load again before appending.
  virtual Status AppendBatch(const std::vector<std::string>& changes) = 0;
  Status Append(const std::string& change) { return AppendBatch({change}); }
  // Stores `snapshot` as covering every change appended so far and deletes
  // those changes.
  virtual Status Compact(const std::string& snapshot) = 0;
  // Changes appended since the last Compact (or Load).
  virtual size_t changes_since_compaction() const = 0;
};

// In-memory journal for tests; copies may be shared to simulate restarts.
class MemoryJournal : public Journal {
 public:
  Result<JournalContents> Load() override {
    since_compaction_ = contents_.changes.size();
    return contents_;
  }
  Status AppendBatch(const std::vector<std::string>& changes) override {
    if (!fail_next_.ok()) {
      Status s = fail_next_;
      fail_next_ = Status::OK();
      return s;
    }
    contents_.changes.insert(contents_.changes.end(), changes.begin(),
                             changes.end());
    since_compaction_ += changes.size();
    ++batches_;
    return Status::OK();
  }
  Status Compact(const std::string& snapshot) override {
    contents_.snapshot = snapshot;
    contents_.changes.clear();
    since_compaction_ = 0;
    return Status::OK();
  }
  size_t changes_since_compaction() const override { return since_compaction_; }

  // Test hooks.
  JournalContents& contents() { return contents_; }
  void FailNextAppend(Status s) { fail_next_ = std::move(s); }
  size_t batches() const { return batches_; }

 private:
  JournalContents contents_;
  size_t since_compaction_ = 0;
  Status fail_next_;
  size_t batches_ = 0;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_JOURNAL_H_

#include "coord/local/local_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/file_util.h"
#include "base/little_endian.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "coord/keyspace.h"
#include "coord/lease_keeper.h"
#include "coord/local/file_util.h"
#include "coord/local/record.h"
#include "coord/local/state.h"
#include "coord/watch_queue.h"

namespace fabps::coord::local {
namespace {

using internal::HasPrefix;
using internal::WatchQueue;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

struct Subscription {
  std::string key;  // absolute
  bool prefix = false;
  int64_t start_revision = 0;
  std::shared_ptr<WatchQueue> queue;
};

// The watches of one LocalStore. Shared with the LocalWatch objects so that
// a watch may outlive its store (it then ends with kCancelled).
struct SubscriptionTable {
  std::mutex mu;
  std::map<uint64_t, Subscription> subs;
  uint64_t next_id = 1;

  void FailAll(const Status& why) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, sub] : subs) sub.queue->Fail(why);
    subs.clear();
  }
};

class LocalWatch : public Watch {
 public:
  LocalWatch(std::shared_ptr<SubscriptionTable> table, uint64_t id,
             std::shared_ptr<WatchQueue> queue)
      : table_(std::move(table)), id_(id), queue_(std::move(queue)) {}
  ~LocalWatch() override { Cancel(); }
  Status Next(std::vector<WatchEvent>* events, Deadline deadline) override {
    return queue_->Next(events, deadline);
  }
  void Cancel() override;

 private:
  const std::shared_ptr<SubscriptionTable> table_;
  const uint64_t id_;
  std::shared_ptr<WatchQueue> queue_;
  std::once_flag cancelled_;
};

class LocalStore : public Store {
 public:
  LocalStore(std::string dir, const StoreOptions& options)
      : dir_(std::move(dir)),
        options_(options),
        prefix_(internal::JobPrefix(options.job)),
        snapshot_path_(dir_ + "/SNAPSHOT") {}

  ~LocalStore() override {
    keeper_.reset();  // no renewal after this
    {
      std::lock_guard<std::mutex> lock(poll_mu_);
      stop_ = true;
    }
    poll_cv_.notify_all();
    if (poller_.joinable()) poller_.join();
    subs_->FailAll(Status::Cancelled("store closed"));
    if (log_fd_ >= 0) ::close(log_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  Status Open();

  Result<KeyValue> Get(const std::string& key, Deadline deadline) override;
  Result<RangeResult> Range(const std::string& prefix,
                            Deadline deadline) override;
  Result<int64_t> Put(const std::string& key, const std::string& value,
                      LeaseId lease, Deadline deadline) override;
  Result<int64_t> Delete(const std::string& key, bool prefix,
                         Deadline deadline) override;
  Result<TxnResult> Txn(const std::vector<Compare>& compares,
                        const std::vector<TxnOp>& then_ops,
                        const std::vector<TxnOp>& else_ops,
                        Deadline deadline) override;
  Result<Lease> GrantLease(int64_t ttl_seconds, Deadline deadline) override;
  Result<int64_t> KeepAliveOnce(LeaseId id, Deadline deadline) override;
  Status StartKeepAlive(LeaseId id, LeaseLostCallback on_lost) override;
  bool LeaseAlive(LeaseId id) const override { return keeper_->Alive(id); }
  Status Revoke(LeaseId id, Deadline deadline) override;
  Result<std::unique_ptr<Watch>> WatchKeys(const std::string& key, bool prefix,
                                           int64_t start_revision,
                                           Deadline deadline) override;
  Deadline DefaultDeadline() const override {
    return Deadline::InMs(options_.timeout_ms);
  }
  std::string Describe() const override {
    return "local:" + dir_ + " job " + options_.job;
  }

 private:
  // Holds mu_ and the file lock, with the state caught up and expired
  // leases removed. ok() tells whether all that worked.
  class Locked {
   public:
    Locked(LocalStore* s, Deadline d);
    ~Locked();
    const Status& status() const { return status_; }

   private:
    LocalStore* s_;
    std::unique_lock<std::mutex> lock_;
    bool flocked_ = false;
    Status status_;
  };

  Status Flock(Deadline d);
  Status SyncLocked();
  Status ReadLogLocked();
  Status ExpireLocked();
  Status AppendLocked(const std::vector<Record>& records);
  void DispatchLocked(const std::vector<WatchEvent>& events);
  void MaybeCompactLocked();
  Status CreateFreshLocked();
  Status OpenLogLocked(uint64_t gen);
  void PollLoop();
  std::string Abs(const std::string& key) const { return prefix_ + key; }
  KeyValue Rel(KeyValue kv) const {
    kv.key.erase(0, prefix_.size());
    return kv;
  }
  std::string LogPath(uint64_t gen) const {
    return dir_ + "/log." + std::to_string(gen);
  }

  const std::string dir_;
  const StoreOptions options_;
  const std::string prefix_;
  const std::string snapshot_path_;
  int lock_fd_ = -1;

  // mu_ guards everything below. Lock order: mu_, then the file lock.
  mutable std::mutex mu_;
  Status broken_;  // kCorruption once the files failed validation
  State state_;
  uint64_t gen_ = 0;
  int log_fd_ = -1;
  uint64_t log_offset_ = 0;
  ino_t snapshot_ino_ = 0;
  int64_t compact_revision_ =
      0;  // revision of SNAPSHOT; history starts after it
  std::vector<WatchEvent>
      history_;  // events since compact_revision_, absolute keys
  // Lock order: mu_, then subs_->mu.
  const std::shared_ptr<SubscriptionTable> subs_ =
      std::make_shared<SubscriptionTable>();

  std::unique_ptr<internal::LeaseKeeper> keeper_;
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stop_ = false;
  std::thread poller_;
};

void LocalWatch::Cancel() {
  std::call_once(cancelled_, [this] {
    {
      std::lock_guard<std::mutex> lock(table_->mu);
      table_->subs.erase(id_);
    }
    queue_->Fail(Status::Cancelled("watch cancelled"));
  });
}

// Takes `lock` by polling try_lock until `d`: in-process waits are short (one
// operation of another thread), and this keeps the wait bounded without
// timed mutexes (whose clocklock ThreadSanitizer does not understand).
bool LockUntil(std::unique_lock<std::mutex>& lock, Deadline d) {
  int64_t sleep_us = 20;
  while (!lock.try_lock()) {
    if (d.Expired()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min<int64_t>(sleep_us * 2, 1000);
  }
  return true;
}

LocalStore::Locked::Locked(LocalStore* s, Deadline d)
    : s_(s), lock_(s->mu_, std::defer_lock) {
  if (!LockUntil(lock_, d)) {
    status_ =
        Status::TimedOut("local store busy in this process past the deadline");
    return;
  }
  if (!s_->broken_.ok()) {
    status_ = s_->broken_;
    return;
  }
  status_ = s_->Flock(d);
  if (!status_.ok()) return;
  flocked_ = true;
  status_ = s_->SyncLocked();
  if (status_.ok()) status_ = s_->ExpireLocked();
}

LocalStore::Locked::~Locked() {
  if (flocked_) {
    if (status_.ok()) s_->MaybeCompactLocked();
    ::flock(s_->lock_fd_, LOCK_UN);
  }
}

Status LocalStore::Flock(Deadline d) {
  int64_t sleep_us = 50;
  while (true) {
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) return Status::OK();
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      return PosixError("flock " + dir_ + "/LOCK", errno);
    if (d.Expired()) {
      return Status::TimedOut("another process held " + dir_ +
                              "/LOCK past the deadline");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min<int64_t>(sleep_us * 2, 2000);
  }
}

Status LocalStore::OpenLogLocked(uint64_t gen) {
  int fd = ::open(LogPath(gen).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    return Status::Corruption(LogPath(gen) +
                              " is missing (SNAPSHOT names generation " +
                              std::to_string(gen) + ")");
  }
  if (fd < 0) return PosixError("open " + LogPath(gen), errno);
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = fd;
  log_offset_ = 0;
  gen_ = gen;
  return Status::OK();
}

Status LocalStore::CreateFreshLocked() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().filename().string().rfind("log.", 0) == 0) {
      return Status::Corruption(dir_ + " has log files but no SNAPSHOT");
    }
  }
  int fd =
      ::open(LogPath(1).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("create " + LogPath(1), errno);
  ::close(fd);
  State empty;
  return fabps::WriteFileAtomically(snapshot_path_, empty.EncodeSnapshot(1));
}

Status LocalStore::Open() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    return Status::IOError("create directory " + dir_ + ": " + ec.message());
  lock_fd_ =
      ::open((dir_ + "/LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return PosixError("open " + dir_ + "/LOCK", errno);
  {
    std::lock_guard<std::mutex> lock(mu_);
    FABPS_RETURN_IF_ERROR(Flock(DefaultDeadline()));
    Status s = [&]() -> Status {
      struct stat st;
      if (::stat(snapshot_path_.c_str(), &st) != 0) {
        if (errno != ENOENT) return PosixError("stat " + snapshot_path_, errno);
        FABPS_RETURN_IF_ERROR(CreateFreshLocked());
      }
      // snapshot_ino_ stays 0: SyncLocked loads SNAPSHOT and the log.
      FABPS_RETURN_IF_ERROR(SyncLocked());
      return ExpireLocked();
    }();
    ::flock(lock_fd_, LOCK_UN);
    if (!s.ok()) return s.WithContext("open local store " + dir_);
  }
  keeper_ = std::make_unique<internal::LeaseKeeper>(
      "local:" + dir_,
      [this](LeaseId id, Deadline d) { return KeepAliveOnce(id, d); });
  poller_ = std::thread([this] {
    SetThreadName("fabps-store");
    PollLoop();
  });
  return Status::OK();
}

Status LocalStore::SyncLocked() {
  struct stat st;
  if (::stat(snapshot_path_.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return broken_ = Status::Corruption(snapshot_path_ + " is missing");
    return PosixError("stat " + snapshot_path_, errno);
  }
  // A new SNAPSHOT has a new inode; after two compactions an inode number
  // may come back, but then the log we follow has been unlinked.
  struct stat log_st;
  const bool log_unlinked =
      log_fd_ >= 0 && ::fstat(log_fd_, &log_st) == 0 && log_st.st_nlink == 0;
  if (st.st_ino != snapshot_ino_ || log_unlinked) {
    // Another process compacted (or this is Open): finish the log we follow,
    // then continue from the new snapshot.
    if (log_fd_ >= 0) FABPS_RETURN_IF_ERROR(ReadLogLocked());
    std::string bytes;
    State fresh;
    uint64_t gen = 0;
    Status s = ReadSmallFile(snapshot_path_, kMaxSnapshotBytes, &bytes);
    if (s.ok()) s = fresh.DecodeSnapshot(bytes, &gen);
    if (!s.ok()) {
      if (s.code() == Status::Code::kCorruption)
        broken_ = s.WithContext(snapshot_path_);
      return s.WithContext(snapshot_path_);
    }
    bool continuous = log_fd_ < 0 || (gen == gen_ + 1 &&
                                      fresh.revision() == state_.revision());
    if (!continuous) {
      FABPS_LOG(WARNING) << Describe()
                         << ": fell behind compaction (generation " << gen_
                         << " -> " << gen << "); reloading, watches end";
      subs_->FailAll(Status::FailedPrecondition(
          "local store compacted past this watch; read again and watch anew"));
    }
    state_ = std::move(fresh);
    compact_revision_ = state_.revision();
    history_.clear();
    snapshot_ino_ = st.st_ino;
    s = OpenLogLocked(gen);
    if (!s.ok()) {
      if (s.code() == Status::Code::kCorruption) broken_ = s;
      return s;
    }
  }
  return ReadLogLocked();
}

Status LocalStore::ReadLogLocked() {
  struct stat st;
  if (::fstat(log_fd_, &st) != 0)
    return PosixError("stat " + LogPath(gen_), errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == log_offset_) return Status::OK();
  const std::string where = LogPath(gen_);
  if (size < log_offset_) {
    return broken_ = Status::Corruption(where + " shrank below offset " +
                                        std::to_string(log_offset_));
  }
  if (size - log_offset_ > (uint64_t{1} << 32)) {
    return broken_ =
               Status::Corruption(where + " has an unreasonably long tail");
  }
  std::string tail(static_cast<size_t>(size - log_offset_), '\0');
  FABPS_RETURN_IF_ERROR(PreadAll(log_fd_, tail.data(), tail.size(),
                                 static_cast<off_t>(log_offset_), where));
  size_t pos = 0;
  auto torn = [&](const char* why) -> Status {
    FABPS_LOG(WARNING) << where << ": cutting a torn record at offset "
                       << log_offset_ << " (" << (tail.size() - pos)
                       << " bytes, " << why
                       << "): a writer died before it returned";
    if (::ftruncate(log_fd_, static_cast<off_t>(log_offset_)) != 0) {
      return PosixError("truncate " + where, errno);
    }
    if (::fdatasync(log_fd_) != 0)
      return PosixError("fdatasync " + where, errno);
    return Status::OK();
  };
  while (pos < tail.size()) {
    const size_t left = tail.size() - pos;
    const char* p = tail.data() + pos;
    if (left < kRecordHeaderBytes) return torn("partial header");
    ByteReader h(p, kRecordHeaderBytes);
    uint32_t len = 0, crc = 0;
    h.U32(&len);
    h.U32(&crc);
    if (AllZero(p, left)) return torn("zero-filled");
    auto bad = [&](const std::string& why) {
      return broken_ = Status::Corruption(
                 where + " offset " + std::to_string(log_offset_) + ": " + why);
    };
    if (len == 0 || len > kMaxRecordBytes) {
      return bad("record length " + std::to_string(len) + " out of range");
    }
    if (left < kRecordHeaderBytes + len) return torn("partial record");
    const char* payload = p + kRecordHeaderBytes;
    if (crc32c::Value(payload, len) != crc)
      return bad("record checksum mismatch");
    Record r;
    Status s = DecodeRecordPayload(payload, len, &r);
    std::vector<WatchEvent> events;
    if (s.ok()) s = state_.Apply(r, &events);
    if (!s.ok()) return bad(s.message());
    DispatchLocked(events);
    pos += kRecordHeaderBytes + len;
    log_offset_ += kRecordHeaderBytes + len;
  }
  return Status::OK();
}

Status LocalStore::AppendLocked(const std::vector<Record>& records) {
  std::string bytes;
  for (const Record& r : records) EncodeRecord(r, &bytes);
  const std::string where = LogPath(gen_);
  Status s = PwriteAll(log_fd_, bytes, static_cast<off_t>(log_offset_), where);
  if (s.ok() && ::fdatasync(log_fd_) != 0)
    s = PosixError("fdatasync " + where, errno);
  if (!s.ok()) {
    // Nothing was acknowledged: take the partial append back if we can.
    if (::ftruncate(log_fd_, static_cast<off_t>(log_offset_)) != 0 ||
        ::fdatasync(log_fd_) != 0) {
      broken_ = s.WithContext("and could not undo a partial append");
    }
    return s;
  }
  for (const Record& r : records) {
    std::vector<WatchEvent> events;
    Status a = state_.Apply(r, &events);
    FABPS_CHECK_MSG(a.ok(), "own record does not apply: " << a.ToString());
    DispatchLocked(events);
  }
  log_offset_ += bytes.size();
  return Status::OK();
}

void LocalStore::DispatchLocked(const std::vector<WatchEvent>& events) {
  if (events.empty()) return;
  history_.insert(history_.end(), events.begin(), events.end());
  std::lock_guard<std::mutex> lock(subs_->mu);
  for (auto& [id, sub] : subs_->subs) {
    std::vector<WatchEvent> mine;
    for (const WatchEvent& e : events) {
      bool match =
          sub.prefix ? HasPrefix(e.kv.key, sub.key) : e.kv.key == sub.key;
      if (match && e.kv.mod_revision >= sub.start_revision) {
        WatchEvent rel = e;
        rel.kv = Rel(std::move(rel.kv));
        mine.push_back(std::move(rel));
      }
    }
    sub.queue->Push(std::move(mine));
  }
}

Status LocalStore::ExpireLocked() {
  std::vector<LeaseId> expired = state_.ExpiredLeases(WallMs());
  if (expired.empty()) return Status::OK();
  std::vector<Record> records;
  int64_t rev = state_.revision();
  for (LeaseId id : expired) {
    Record r;
    r.type = Record::Type::kLeaseRemove;
    r.lease = id;
    if (!state_.leases().at(id).keys.empty()) ++rev;
    r.revision = rev;
    records.push_back(r);
  }
  return AppendLocked(records);
}

void LocalStore::MaybeCompactLocked() {
  if (log_offset_ < static_cast<uint64_t>(options_.local_compact_log_bytes))
    return;
  const uint64_t next = gen_ + 1;
  Status s = [&]() -> Status {
    int fd = ::open(LogPath(next).c_str(),
                    O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("create " + LogPath(next), errno);
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return PosixError("fsync " + LogPath(next), errno);
    // The commit point: from here on SNAPSHOT names the new generation.
    FABPS_RETURN_IF_ERROR(fabps::WriteFileAtomically(
        snapshot_path_, state_.EncodeSnapshot(next)));
    struct stat st;
    if (::stat(snapshot_path_.c_str(), &st) != 0)
      return PosixError("stat " + snapshot_path_, errno);
    if (gen_ > 1)
      ::unlink(LogPath(gen_ - 1).c_str());  // lagging readers keep their fd
    FABPS_RETURN_IF_ERROR(OpenLogLocked(next));
    snapshot_ino_ = st.st_ino;
    compact_revision_ = state_.revision();
    history_.clear();
    return Status::OK();
  }();
  if (!s.ok()) {
    FABPS_LOG(WARNING) << Describe() << ": compaction failed: " << s.ToString();
  }
}

void LocalStore::PollLoop() {
  const auto interval = std::chrono::milliseconds(
      std::max<int64_t>(1, options_.poll_interval_ms));
  std::unique_lock<std::mutex> plock(poll_mu_);
  while (!stop_) {
    poll_cv_.wait_for(plock, interval);
    if (stop_) break;
    plock.unlock();
    {
      std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
      if (LockUntil(lock, Deadline::In(interval)) && broken_.ok()) {
        struct stat snap, log;
        bool changed = ::stat(snapshot_path_.c_str(), &snap) != 0 ||
                       snap.st_ino != snapshot_ino_ ||
                       ::fstat(log_fd_, &log) != 0 ||
                       static_cast<uint64_t>(log.st_size) != log_offset_ ||
                       log.st_nlink == 0 || state_.NextExpiryMs() <= WallMs();
        if (changed) {
          lock.unlock();
          Locked locked(this, Deadline::InMs(1000));
          if (!locked.status().ok() &&
              locked.status().code() != Status::Code::kTimedOut) {
            FABPS_LOG(WARNING)
                << Describe() << ": poll: " << locked.status().ToString();
          }
        }
      }
    }
    plock.lock();
  }
}

Result<KeyValue> LocalStore::Get(const std::string& key, Deadline deadline) {
  FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, false));
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  auto it = state_.keys().find(Abs(key));
  if (it == state_.keys().end())
    return Status::NotFound("key '" + key + "' not found");
  return Rel(it->second);
}

Result<RangeResult> LocalStore::Range(const std::string& prefix,
                                      Deadline deadline) {
  FABPS_RETURN_IF_ERROR(internal::ValidateKey(prefix, true));
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  RangeResult out;
  const std::string abs = Abs(prefix);
  for (auto it = state_.keys().lower_bound(abs);
       it != state_.keys().end() && HasPrefix(it->first, abs); ++it) {
    out.kvs.push_back(Rel(it->second));
  }
  out.revision = state_.revision();
  return out;
}

Result<int64_t> LocalStore::Put(const std::string& key,
                                const std::string& value, LeaseId lease,
                                Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(
      TxnResult r, Txn({}, {TxnOp::Put(key, value, lease)}, {}, deadline));
  return r.revision;
}

Result<int64_t> LocalStore::Delete(const std::string& key, bool prefix,
                                   Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(TxnResult r,
                         Txn({}, {TxnOp::Delete(key, prefix)}, {}, deadline));
  return r.results.at(0).deleted;
}

Result<TxnResult> LocalStore::Txn(const std::vector<Compare>& compares,
                                  const std::vector<TxnOp>& then_ops,
                                  const std::vector<TxnOp>& else_ops,
                                  Deadline deadline) {
  FABPS_RETURN_IF_ERROR(internal::ValidateTxn(compares, then_ops, else_ops));
  std::vector<Compare> cs = compares;
  for (Compare& c : cs) c.key = Abs(c.key);
  std::vector<TxnOp> then_abs = then_ops, else_abs = else_ops;
  for (auto* ops : {&then_abs, &else_abs}) {
    for (TxnOp& op : *ops) op.key = Abs(op.key);
  }
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  TxnResult result;
  Record rec;
  rec.type = Record::Type::kWrite;
  FABPS_RETURN_IF_ERROR(
      state_.PlanTxn(cs, then_abs, else_abs, &result, &rec.mutations));
  if (!rec.mutations.empty()) {
    rec.revision = state_.revision() + 1;
    FABPS_RETURN_IF_ERROR(AppendLocked({rec}));
  }
  for (TxnOpResult& r : result.results) {
    for (KeyValue& kv : r.kvs) kv = Rel(std::move(kv));
  }
  return result;
}

Result<Lease> LocalStore::GrantLease(int64_t ttl_seconds, Deadline deadline) {
  if (ttl_seconds < 1 || ttl_seconds > 1000000) {
    return Status::InvalidArgument("lease ttl " + std::to_string(ttl_seconds) +
                                   " out of [1, 1000000] s");
  }
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  Record r;
  r.type = Record::Type::kLeaseGrant;
  r.lease = state_.max_lease_id() + 1;
  r.ttl_seconds = std::max<int64_t>(ttl_seconds, 2);
  r.expiry_ms = WallMs() + r.ttl_seconds * 1000;
  FABPS_RETURN_IF_ERROR(AppendLocked({r}));
  return Lease{r.lease, r.ttl_seconds};
}

Result<int64_t> LocalStore::KeepAliveOnce(LeaseId id, Deadline deadline) {
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  auto it = state_.leases().find(id);
  if (it == state_.leases().end()) {
    return Status::NotFound("lease " + std::to_string(id) +
                            " not found (expired or revoked)");
  }
  Record r;
  r.type = Record::Type::kLeaseRenew;
  r.lease = id;
  r.ttl_seconds = it->second.ttl_seconds;
  r.expiry_ms = WallMs() + r.ttl_seconds * 1000;
  FABPS_RETURN_IF_ERROR(AppendLocked({r}));
  return r.ttl_seconds;
}

Status LocalStore::StartKeepAlive(LeaseId id, LeaseLostCallback on_lost) {
  int64_t ttl = 0;
  {
    Locked l(this, DefaultDeadline());
    FABPS_RETURN_IF_ERROR(l.status());
    auto it = state_.leases().find(id);
    if (it == state_.leases().end()) {
      return Status::NotFound("lease " + std::to_string(id) + " not found");
    }
    ttl = it->second.ttl_seconds;
  }
  // Renew now: the lease may be well into its TTL already.
  FABPS_ASSIGN_OR_RETURN(ttl, KeepAliveOnce(id, DefaultDeadline()));
  return keeper_->Add(id, ttl, std::move(on_lost));
}

Status LocalStore::Revoke(LeaseId id, Deadline deadline) {
  keeper_->Remove(id);
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  auto it = state_.leases().find(id);
  if (it == state_.leases().end()) {
    return Status::NotFound("lease " + std::to_string(id) +
                            " not found (expired or revoked)");
  }
  Record r;
  r.type = Record::Type::kLeaseRemove;
  r.lease = id;
  r.revision = state_.revision() + (it->second.keys.empty() ? 0 : 1);
  return AppendLocked({r});
}

Result<std::unique_ptr<Watch>> LocalStore::WatchKeys(const std::string& key,
                                                     bool prefix,
                                                     int64_t start_revision,
                                                     Deadline deadline) {
  FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, prefix));
  if (start_revision < 0)
    return Status::InvalidArgument("negative start revision");
  Locked l(this, deadline);
  FABPS_RETURN_IF_ERROR(l.status());
  if (start_revision == 0) start_revision = state_.revision() + 1;
  if (start_revision <= compact_revision_) {
    return Status::FailedPrecondition("watch start revision " +
                                      std::to_string(start_revision) +
                                      " is compacted (history starts after " +
                                      std::to_string(compact_revision_) + ")");
  }
  Subscription sub;
  sub.key = Abs(key);
  sub.prefix = prefix;
  sub.start_revision = start_revision;
  sub.queue = std::make_shared<WatchQueue>();
  std::vector<WatchEvent> past;
  for (const WatchEvent& e : history_) {
    bool match = prefix ? HasPrefix(e.kv.key, sub.key) : e.kv.key == sub.key;
    if (match && e.kv.mod_revision >= start_revision)
      past.push_back(WatchEvent{e.type, Rel(e.kv)});
  }
  sub.queue->Push(std::move(past));
  auto queue = sub.queue;
  std::lock_guard<std::mutex> lock(subs_->mu);
  const uint64_t id = subs_->next_id++;
  subs_->subs.emplace(id, std::move(sub));
  return std::unique_ptr<Watch>(new LocalWatch(subs_, id, std::move(queue)));
}

}  // namespace

Result<std::unique_ptr<Store>> OpenLocalStore(const std::string& dir,
                                              const StoreOptions& options) {
  FABPS_RETURN_IF_ERROR(ValidateJobName(options.job));
  if (dir.empty())
    return Status::InvalidArgument("local store spec needs a directory");
  auto store = std::make_unique<LocalStore>(dir, options);
  FABPS_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace fabps::coord::local

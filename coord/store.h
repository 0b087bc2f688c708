// coord::Store: the coordination store of a fabps job.
//
// The store is a small, strongly consistent key-value map with revisions,
// transactions, leases and watches: the etcd v3 data model. The master keeps
// its task state in it, masters race for a lease-held lock in it, pservers
// claim their index with a lease, and everyone discovers everyone through it.
//
// Two backends with the same semantics (one test suite runs over both):
//   - "etcd:http://h1:2379,http://h2:2379": a real etcd v3 cluster, reached
//     through its JSON gateway; several endpoints are tried in turn.
//   - "local:/path/to/dir": an embedded store for the processes of one job on
//     one machine, durable in a directory (a file lock, a checksummed log and
//     a snapshot); the default when no --etcd is given.
//
// Namespacing. A Store is opened for one job. Every key a caller passes is
// relative ("master/lock", "ps/3") and the store stores it under "/<job>/".
// Keys returned (in KeyValue and WatchEvent) are relative again. Two jobs on
// one etcd or one local directory never see each other's keys. Revisions and
// lease ids are those of the whole underlying store (shared by the jobs in
// it); they are only ever compared with each other.
//
// Revisions. Every write that changes something (Put, a Delete that deletes
// at least one key, a successful Txn with writes, the expiry or revocation of
// a lease that had keys) advances the store revision by exactly one; every
// key changed by that write gets it as mod_revision. Revisions are > 0 and
// strictly increase over the life of the store.
//
// Deadlines. Every call takes a Deadline. A call that cannot reach the store
// until the deadline returns kUnavailable (etcd down, all endpoints refuse);
// a call that reached the store but got no answer in time (or, local, found
// the store locked by another process until the deadline) returns kTimedOut
// (its effect is then unknown: it may or may not have been applied; the same
// holds for kUnavailable "connection lost during a write"). Writes are never
// retried by the client after they may have been sent; reads are.
// DefaultDeadline() gives now + StoreOptions::timeout_ms.
//
// Other errors: kInvalidArgument (empty key, key starting with '/', key over
// kMaxKeyBytes, value over kMaxValueBytes, ttl < 1), kNotFound (Get of an
// absent key, a lease that does not exist or has expired), kCorruption (a
// local store file failed validation), kFailedPrecondition (a watch whose
// start revision was compacted away), kIOError (the OS failed).
//
// Thread safety: every method of Store and of Watch may be called from any
// thread concurrently. A Store is shared by all threads of a process; open
// one per process (opening several in one process also works).
//
// Ownership: OpenStore returns the only owner. A Watch may outlive its Store
// (it then ends with kCancelled). Destroying a Store stops its
// background threads (keep-alive, watch); leases it kept alive are NOT
// revoked (they expire after their TTL; call Revoke for a clean hand-over).
#ifndef FABPS_COORD_STORE_H_
#define FABPS_COORD_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"

namespace fabps::coord {

using LeaseId = int64_t;
constexpr LeaseId kNoLease = 0;

// Limits shared by both backends, inside etcd's defaults (a request of at
// most 1.5 MiB, --max-txn-ops 128). Larger requests are kInvalidArgument on
// both backends alike.
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = 1 << 20;
// Per Txn: the keys and values of all compares and ops together.
constexpr size_t kMaxTxnBytes = (1 << 20) + (64 << 10);
// Per Txn: compares, then-ops and else-ops each.
constexpr size_t kMaxTxnOps = 128;

struct KeyValue {
  std::string key;              // relative to the job prefix
  std::string value;            // arbitrary bytes
  int64_t create_revision = 0;  // revision of the put that created the key
  int64_t mod_revision = 0;  // revision of the last put (or delete, in events)
  int64_t version = 0;       // number of puts since creation, 1 for a new key
  LeaseId lease = kNoLease;  // lease the key is attached to, or kNoLease
};

// A condition of a Txn on one key. Semantics follow etcd: comparing the value
// of an absent key is always false; comparing a revision or the version of an
// absent key compares against 0 (so ModRevisionEquals(k, 0) means "absent").
struct Compare {
  enum class Target { kValue, kModRevision, kCreateRevision, kVersion };
  enum class Op { kEqual, kNotEqual, kLess, kGreater };
  std::string key;
  Target target = Target::kValue;
  Op op = Op::kEqual;
  std::string value;   // for kValue (bytes compared lexicographically)
  int64_t number = 0;  // for the revision and version targets

  static Compare ValueEquals(std::string key, std::string value);
  static Compare ModRevisionEquals(std::string key, int64_t revision);
  static Compare Exists(std::string key);  // create_revision > 0
  static Compare Absent(std::string key);  // create_revision == 0
};

// One operation inside a Txn.
struct TxnOp {
  enum class Type { kGet, kPut, kDelete };
  Type type = Type::kGet;
  std::string key;
  bool prefix = false;       // kGet/kDelete: every key starting with `key`
  std::string value;         // kPut
  LeaseId lease = kNoLease;  // kPut

  static TxnOp Get(std::string key, bool prefix = false);
  static TxnOp Put(std::string key, std::string value,
                   LeaseId lease = kNoLease);
  static TxnOp Delete(std::string key, bool prefix = false);
};

struct TxnOpResult {
  std::vector<KeyValue> kvs;  // kGet: the keys found, sorted by key
  int64_t deleted = 0;        // kDelete: how many keys were deleted
};

struct TxnResult {
  bool succeeded = false;            // true: all compares held and then_ops ran
  int64_t revision = 0;              // store revision after the txn
  std::vector<TxnOpResult> results;  // one per op of the branch that ran
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // sorted by key
  int64_t revision = 0;       // store revision the read saw; watch from +1
};

struct Lease {
  LeaseId id = kNoLease;
  int64_t ttl_seconds = 0;  // as granted; may exceed the request (min 2 s)
};

// Called at most once per kept-alive lease, on the store's keep-alive thread,
// when the lease is known or must be assumed lost: the store said it does not
// exist, or no renewal succeeded for a whole TTL (the store may have expired
// it). The process must then stop acting as the owner of anything attached
// to it. Must not block for long nor destroy the Store; other Store calls
// (Revoke, GrantLease, Put, ...) are fine.
using LeaseLostCallback = std::function<void(LeaseId id, const Status& why)>;

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  // For kPut, the key as written. For kDelete, key and mod_revision (the
  // revision of the delete) only.
  KeyValue kv;
};

// A stream of the changes to one key or prefix, in revision order, each
// change exactly once, from a start revision on. Created by
// Store::WatchKeys. Backed by a queue filled by the backend (local: the
// thread that reads the log, the caller's own or the poller; etcd: the
// watch's own thread); the caller drains it with Next: no user code ever
// runs on a store thread for watches. The queue holds at most kMaxQueuedEvents
// events; past that the watch fails with kResourceExhausted.
class Watch {
 public:
  static constexpr size_t kMaxQueuedEvents = 1 << 16;
  virtual ~Watch() = default;

  // Appends all events queued now (at least one) to `*events`, waiting until
  // `deadline` for the first. Returns kTimedOut when none came in time, or
  // the error that ended the watch (kFailedPrecondition when its start
  // revision was compacted, kCancelled after Cancel). While the store is
  // unreachable the watch keeps retrying in the background and resumes from
  // the next revision it has not delivered; Next just times out meanwhile.
  virtual Status Next(std::vector<WatchEvent>* events, Deadline deadline) = 0;

  // Ends the watch; a Next in progress returns kCancelled. Idempotent.
  virtual void Cancel() = 0;
};

struct StoreOptions {
  // "local:/path/to/dir" (created if missing) or
  // "etcd:http://127.0.0.1:2379[,http://...]" (https:// for etcd with TLS).
  std::string spec;
  // Job name: [A-Za-z0-9._-]{1,64}; keys live under "/<job>/".
  std::string job;
  // Used by DefaultDeadline().
  int64_t timeout_ms = 5000;
  // etcd: the connect timeout to one endpoint before trying the next.
  int64_t connect_timeout_ms = 500;
  // local: how often the background thread looks at the log for changes by
  // other processes (watch latency) and for expired leases.
  int64_t poll_interval_ms = 10;
  // local: the log is folded into a new snapshot once it grows past this.
  int64_t local_compact_log_bytes = 4 << 20;
  // etcd with authentication enabled: "user:password". "" takes the file
  // named by $FABPS_ETCD_CREDENTIALS_FILE (one line "user:password"), and
  // with none there no authentication is attempted. A wrong user or
  // password makes every call kPermissionDenied. (Per-job isolation on a
  // shared etcd: give each job a user whose role may only read and write
  // "/<job>/".)
  std::string etcd_credentials;
  // etcd over https: the CA file of etcd's certificate ("" takes
  // $FABPS_ETCD_CA, and with none there the system's CAs), and a client
  // certificate and key for an etcd with --client-cert-auth ("" takes
  // $FABPS_ETCD_CERT and $FABPS_ETCD_KEY). A refused certificate makes calls
  // kPermissionDenied.
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
};

class Store {
 public:
  virtual ~Store() = default;

  // The value and metadata of `key`; kNotFound when absent.
  virtual Result<KeyValue> Get(const std::string& key, Deadline deadline) = 0;

  // Every key starting with `prefix` ("" = the whole job), sorted by key.
  virtual Result<RangeResult> Range(const std::string& prefix,
                                    Deadline deadline) = 0;

  // Sets `key` to `value`, attached to `lease` (kNoLease: none; a put without
  // a lease detaches the key from any lease). Returns the new revision.
  // kNotFound when `lease` does not exist. Durable when it returns OK.
  virtual Result<int64_t> Put(const std::string& key, const std::string& value,
                              LeaseId lease, Deadline deadline) = 0;

  // Deletes `key` (or every key under it with prefix = true). Returns how
  // many keys were deleted (0 is not an error).
  virtual Result<int64_t> Delete(const std::string& key, bool prefix,
                                 Deadline deadline) = 0;

  // Atomically: if every compare holds, runs then_ops, else else_ops. The
  // ops of a branch run in order (a Get sees earlier Puts of the same branch)
  // and commit at one revision. A key may be written at most once per branch,
  // counting keys under a Delete prefix (kInvalidArgument otherwise).
  // kNotFound (nothing applied) when a Put names a lease that does not exist.
  //   CAS:             Txn({ModRevisionEquals(k, rev)}, {Put(k, v)}, {Get(k)})
  //   lock:            Txn({Absent(k)}, {Put(k, me, lease)}, {Get(k)})
  //   multi-key write: Txn({}, {Put(a, x), Put(b, y), Delete(c)}, {})
  virtual Result<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& then_ops,
                                const std::vector<TxnOp>& else_ops,
                                Deadline deadline) = 0;

  // Grants a lease of `ttl_seconds` (>= 1; both backends raise it to >= 2).
  // Keys put with it are deleted when it expires or is revoked. (local:
  // expiry times are wall-clock, shared by the processes on the machine;
  // expiry is noticed within about poll_interval_ms by any process.)
  virtual Result<Lease> GrantLease(int64_t ttl_seconds, Deadline deadline) = 0;

  // Renews `id` once; returns its TTL. kNotFound when it has expired.
  virtual Result<int64_t> KeepAliveOnce(LeaseId id, Deadline deadline) = 0;

  // Renews `id` automatically on the store's background thread (about every
  // TTL/3, retrying while the store is unreachable) until Revoke or the
  // Store's destruction. `on_lost` (may be empty) runs once if it is lost.
  // Renews once first, within DefaultDeadline(), and returns that error
  // (kNotFound when it has expired, kUnavailable, ...).
  // kFailedPrecondition if `id` is already kept alive by this Store.
  virtual Status StartKeepAlive(LeaseId id, LeaseLostCallback on_lost) = 0;

  // False once a lease kept alive by this Store has been lost (the moment
  // on_lost is called) or revoked; true for other ids. Cheap, no I/O.
  virtual bool LeaseAlive(LeaseId id) const = 0;

  // Revokes `id` and deletes its keys (one revision); stops keeping it
  // alive. kNotFound when it has already expired (its keys are gone too).
  virtual Status Revoke(LeaseId id, Deadline deadline) = 0;

  // Watches `key` (or every key under it with prefix = true), delivering
  // every change with revision >= start_revision; start_revision 0 means
  // "changes after now". Typical: r = Range(p); ...; Watch(p, true,
  // r.revision + 1). A start_revision that was compacted away ends the watch
  // with kFailedPrecondition (from WatchKeys, or from the first Next).
  // kUnavailable when the watch could not be set up before `deadline`.
  virtual Result<std::unique_ptr<Watch>> WatchKeys(const std::string& key,
                                                   bool prefix,
                                                   int64_t start_revision,
                                                   Deadline deadline) = 0;

  // now + StoreOptions::timeout_ms.
  virtual Deadline DefaultDeadline() const = 0;

  // "local:/dir" or "etcd:..." and the job, for logs.
  virtual std::string Describe() const = 0;
};

// Opens the backend named by options.spec for options.job. kInvalidArgument
// for a bad spec or job name (the message lists the backends built);
// kCorruption when a local store's files fail validation. Does not contact
// etcd (the first call does), so a store may be opened while etcd is down.
Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options);

// Checks a job name: [A-Za-z0-9._-]{1,64}.
Status ValidateJobName(const std::string& job);

}  // namespace fabps::coord

#endif  // FABPS_COORD_STORE_H_

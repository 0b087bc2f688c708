// ChangeWaiter (internal to coord/protocol/): the wait behind every
// "wait until the store says so" of the protocol (discovery, the init
// election). The caller reads (Get/Range), decides it must wait, and calls
// Wait with the revision its read saw; Wait returns when a key under the
// prefix changed after that revision, so the caller reads again. A watch
// does the waiting; when the store cannot be watched (down, compacted),
// Wait pauses briefly instead so the caller retries its read.
//
// Thread safety: one thread at a time. The Store must outlive the waiter.
#ifndef FABPS_COORD_PROTOCOL_CHANGE_WAITER_H_
#define FABPS_COORD_PROTOCOL_CHANGE_WAITER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "coord/store.h"

namespace fabps::coord::internal {

class ChangeWaiter {
 public:
  // Even without a change, Wait returns after this long so that callers
  // re-read now and then (a missed wake-up costs at most this).
  static constexpr int64_t kMaxWaitMs = 1000;
  // The pause when no watch could be set up or it failed.
  static constexpr int64_t kRetryMs = 100;

  ChangeWaiter(Store* store, std::string prefix);

  // Waits for a change under the prefix after `seen_revision`, at most until
  // `deadline` (and kMaxWaitMs). False when `deadline` has passed, true
  // otherwise: the caller should read again. `seen_revision` <= 0 (the
  // read failed) just pauses kRetryMs.
  bool Wait(int64_t seen_revision, Deadline deadline);

 private:
  Store* const store_;
  const std::string prefix_;
  std::unique_ptr<Watch> watch_;
};

// The earlier of two deadlines.
inline Deadline Sooner(Deadline a, Deadline b) {
  return a.time() < b.time() ? a : b;
}

// The loop of every such wait: reads every key under `prefix` (one Range,
// so one revision) and asks `decide` about them until it answers, waiting
// for a change under the prefix between reads. decide(kvs, &why_not)
// returns the answer (a value, or an error that ends the wait), or nullopt
// after setting *why_not (why not yet). A read that fails counts as "not
// yet", its error the reason. TimedOut at `deadline`, the last reason as
// its message.
template <typename T, typename Decide>
Result<T> WatchUntil(Store* store, const std::string& prefix, Deadline deadline,
                     Decide decide) {
  ChangeWaiter waiter(store, prefix);
  Status last;
  for (;;) {
    auto r = store->Range(prefix, Sooner(deadline, store->DefaultDeadline()));
    int64_t seen = 0;
    if (r.ok()) {
      seen = r->revision;
      Status why_not;
      std::optional<Result<T>> answer = decide(r->kvs, &why_not);
      if (answer) return std::move(*answer);
      last = std::move(why_not);
    } else {
      last = r.status();
    }
    if (!waiter.Wait(seen, deadline)) return Status::TimedOut(last.ToString());
  }
}

}  // namespace fabps::coord::internal

#endif  // FABPS_COORD_PROTOCOL_CHANGE_WAITER_H_

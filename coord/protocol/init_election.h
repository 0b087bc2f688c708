// InitElection: which trainer of a job initializes the parameters.
//
// The first trainer to take init/lock (a LeaseLock with a lease it keeps
// alive) initializes; the others wait until init/done says the parameters
// exist, or take init/lock over when its holder gives it up (Abandon, a
// failed initialization) or dies (its lease runs out). init/done is
// permanent (no lease): once the parameters exist, no trainer of the job
// initializes again, restarted or not.
//
//   InitElection election(store, {"trainer 7"});
//   FABPS_ASSIGN_OR_RETURN(bool mine, election.Begin(deadline));
//   if (mine) {
//     Status s = ...initialize the pservers...;
//     if (s.ok() || pservers said "already initialized") election.Done(d);
//     else election.Abandon(d);
//   }
//
// The pservers still guard their own init (the init grant of
// pserver/daemon/ps_service.h), so a trainer whose lease ran out while it
// initialized cannot corrupt a successor's work; this election only keeps
// trainers from racing for that grant and tells the late ones that
// initialization is over.
//
// Thread safety: one thread at a time. The Store must outlive the object.
// Destroying it while holding init/lock abandons it (the Store would keep
// its lease alive otherwise); a crash leaves it to expire with the lease.
#ifndef FABPS_COORD_PROTOCOL_INIT_ELECTION_H_
#define FABPS_COORD_PROTOCOL_INIT_ELECTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/lease_lock.h"
#include "coord/store.h"

namespace fabps::coord {

struct InitElectionOptions {
  std::string owner;        // stored under init/lock and init/done
  int64_t ttl_seconds = 5;  // >= 2: a dead holder is replaced this long after
};

class InitElection {
 public:
  InitElection(Store* store, InitElectionOptions options);
  ~InitElection();

  // True: this caller holds init/lock and must initialize (then Done or
  // Abandon). False: init/done exists, the parameters are initialized.
  // Waits (on a watch) while another trainer holds init/lock, riding out
  // store outages; TimedOut at `deadline` naming the holder. True at once
  // when already holding.
  Result<bool> Begin(Deadline deadline);

  // True while this caller holds init/lock and its lease is alive.
  bool holding() const;

  // Puts init/done (unfenced: it records a fact about the pservers, true
  // whoever learnt it) and releases init/lock when held.
  Status Done(Deadline deadline);

  // Releases init/lock without init/done: the next waiter takes over at
  // once. No-op when not holding.
  void Abandon(Deadline deadline);

 private:
  Store* const store_;
  const InitElectionOptions options_;
  std::unique_ptr<LeaseLock> lock_;
};

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_INIT_ELECTION_H_

// InitElection: which trainer initializes the parameters of a job. One
// protocol, decided in one place per setup:
//
//   - With a coordination store (the trainers and the pservers use the
//     same one), the store decides, through the coordination protocol's
//     election (coord/protocol/init_election.h): the trainer that holds the
//     leased key init/lock initializes; init/done (put by the initializer
//     when it has finished) ends the question. When the initializer dies its
//     lease runs out and a waiting trainer takes init/lock over. The pservers
//     do not decide: a pserver started with --store grants BeginInitParams to
//     whoever asks (the elected trainer; a stale holder's partial work is
//     dropped and its later init calls fail) and only refuses a second
//     layout (ALREADY_INITIALIZED once initialized or recovered).
//   - Without a store, pserver 0 decides: trainers that volunteer
//     (`selected`) ask pserver 0 for its init grant, which it gives to one
//     trainer at a time and takes back when the holder goes quiet for the
//     pserver's --init-grant-timeout-ms (a dead initializer is replaced).
//     The other pservers grant to whoever holds pserver 0's grant, as above.
//
// In both, a pserver that answers ALREADY_INITIALIZED ends the election
// with "someone else did it". A job whose pservers run with --store must
// have its trainers use that store too.
//
// Thread safety: one thread at a time (PServerClient serializes).
#ifndef FABPS_TRAINER_INIT_ELECTION_H_
#define FABPS_TRAINER_INIT_ELECTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/protocol/init_election.h"
#include "coord/store.h"
#include "trainer/pserver_connection.h"

namespace fabps::trainer {

class InitElection {
 public:
  // `store` may be null (then pserver 0 decides); it and the connections
  // must outlive the election.
  InitElection(coord::Store* store, int64_t trainer_id);
  ~InitElection();

  // True when this trainer won and holds the grant of every pserver of
  // `pservers` (pserver 0 first); false when another trainer initializes or
  // did (or, without a store, this one was not `selected`). Waits until
  // `deadline` while another trainer holds the election.
  Result<bool> Begin(
      bool selected,
      const std::vector<std::unique_ptr<PServerConnection>>& pservers,
      Deadline deadline);
  // The winner finished (or found the parameters initialized): with a
  // store, puts init/done and gives init/lock up.
  void Done();
  // The winner failed: gives init/lock up so that another trainer (or a
  // later Begin) takes over.
  void Abandon();

 private:
  // Asks `ps` for its init grant until it answers GRANTED (true) or
  // ALREADY_INITIALIZED (false), or `deadline` passes.
  Result<bool> TakeGrant(PServerConnection& ps, Deadline deadline);

  coord::Store* store_;
  int64_t trainer_id_;
  std::unique_ptr<coord::InitElection> store_election_;  // with a store
  bool store_won_ = false;  // between a won Begin and Done or Abandon
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_INIT_ELECTION_H_

// LocalShares: memory that peers on this host shared with an endpoint
// (RemoteRegion::share), mapped into this process. It is the copy-free path
// of RMA on the shm provider: a write to such a region is a memcpy into the
// mapping (then the immediate data, if any, through the fabric) and a read
// is a memcpy out of it; no kernel copy, no work for the peer's progress.
//
// Map opens /proc/<pid>/fd/<fd> of the share, checks that the descriptor it
// got names the share's memfd (ShareInfo::LinkName: a random 128-bit name, so
// a reused pid or descriptor number is refused), maps the whole file
// read-write and opens a pidfd of its owner. Mappings are kept, by name,
// for the endpoint's life; a share that cannot be mapped (a process in
// another pid namespace, no permission, a wrong name) is remembered as such
// and its reason logged once, and the caller uses the fabric instead.
//
// A mapping outlives its owner (the kernel keeps the memory while it is
// mapped): OwnerAlive tells whether the owner still runs, so that an RMA to a
// dead peer fails as it would over the fabric instead of reading stale
// values. Whenever a share not seen before is mapped (a peer restarted, a
// pserver replaced its arena), mappings whose owner exited or no longer
// holds that memory are dropped, so the memory of dead peers and of
// replaced arenas is not kept alive here.
//
// Thread safe.
#ifndef FABPS_TRANSPORT_LOCAL_SHARES_H_
#define FABPS_TRANSPORT_LOCAL_SHARES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "base/shared_memory.h"
#include "base/status.h"

namespace fabps::transport {

class LocalShares {
 public:
  class Mapping {
   public:
    Mapping(const ShareInfo& share, char* base, size_t size, int pidfd)
        : share_(share), base_(base), size_(size), pidfd_(pidfd) {}
    ~Mapping();
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;

    char* base() const { return base_; }
    size_t size() const { return size_; }  // of the whole file
    // False once the process that shared the memory has exited.
    bool OwnerAlive() const;
    // True while the owner runs and still holds the memory under the
    // descriptor it named (one readlink).
    bool OwnerHoldsIt() const;

   private:
    const ShareInfo share_;
    char* base_;
    size_t size_;
    int pidfd_;
  };

  // The share's memory mapped here, or nullptr when it cannot be (see above).
  std::shared_ptr<const Mapping> Map(const ShareInfo& share);

  // How many shares are mapped now (for tests).
  size_t mapped() const;

 private:
  static Result<std::shared_ptr<const Mapping>> Open(const ShareInfo& share);
  // Drops mappings whose owner no longer holds the memory (failures stay, so
  // that a share that cannot be mapped is not tried again on every call).
  // Requires mu_.
  void DropStale();

  mutable std::mutex mu_;
  // By nonce; nullptr: could not be mapped.
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const Mapping>>
      maps_;  // guarded by mu_
};

}  // namespace fabps::transport

#endif  // FABPS_TRANSPORT_LOCAL_SHARES_H_

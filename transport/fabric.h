// The fabric abstraction: how fabps moves bytes between processes.
//
// fabps moves bulk tensors by one-sided RMA: a trainer writes gradient blocks
// straight into registered memory on a pserver (an RMA write carrying 64 bits
// of immediate data that name the block) and reads parameter blocks straight
// out of it (an RMA read). Small notifications go as two-sided messages. This
// header is the contract every backend keeps; `transport/ofi/` implements it
// over libfabric, where the provider (verbs;ofi_rxm on InfiniBand,
// tcp;ofi_rxm on Ethernet, shm on one host, sockets) is chosen by name at run
// time.
//
// Objects and lifetimes:
//   Fabric        one per process and provider: opens the provider, registers
//                 memory. Must outlive every Endpoint and MemoryRegion made
//                 from it.
//   Endpoint      a reliable-datagram endpoint (FI_EP_RDM) with its address,
//                 completion queue and peer table. One endpoint talks to any
//                 number of peers. Must outlive every Completion it returned
//                 that someone still waits on.
//   MemoryRegion  memory registered for local and remote access. The caller
//                 owns the memory and keeps it allocated while the region
//                 lives; closing the region never frees it.
//   RemoteRegion  what a peer needs to reach a region by RMA: (base, key,
//                 length), serialized to bytes for the control plane.
//   Completion    the handle of one posted operation; wait on it with a
//                 deadline or poll it.
//
// One code path for every provider: registrations always carry a descriptor,
// remote descriptors always carry the provider's key and the address the
// provider expects (virtual address or offset), and only allocated memory is
// registered. What passes on tcp and shm is therefore what runs on verbs,
// which asks for the strictest memory-registration mode.
//
// Progress: libfabric's tcp and shm providers make progress only when someone
// reads the completion queue, on the target side too. An Endpoint made with
// ProgressMode::kThread runs a thread that does so (blocking on the
// completion queue's wait object when nothing is in flight, or polling:
// FabricCapabilities::progress_thread_sleeps); with kCaller the owner must call
// Progress() (Wait() on a completion does it too). A process that is the target
// of RMA and does nothing else needs kThread.
//
// Threads: every method of Fabric, Endpoint and MemoryRegion may be called
// from any thread concurrently. Completion is safe to poll from several
// threads.
//
// One host (shm): RMA to a region a peer registered in SharedMemory is a
// memcpy through a mapping of that memory, done when Write/Read returns; see
// RemoteRegion::share and transport/local_shares.h.
//
// Errors: every operation takes a deadline. A peer that dies or stops
// answering produces an error Status in the waiter within its deadline (the
// provider's error when it reports one, TimedOut otherwise), never a hang.
// Arguments out of range (e.g. offset + length beyond a region) are refused
// locally with InvalidArgument before anything is posted.
#ifndef FABPS_TRANSPORT_FABRIC_H_
#define FABPS_TRANSPORT_FABRIC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/shared_memory.h"
#include "base/status.h"

namespace fabps::transport {

namespace internal {
struct OpState;
}  // namespace internal

class Endpoint;
class RegistrationCache;

enum class ProgressMode {
  kThread,  // a background thread of the endpoint reads its completion queue
  kCaller,  // the owner calls Endpoint::Progress() (busy-polling benchmarks)
};

struct FabricOptions {
  // The backend that implements the fabric: "ofi" (libfabric, the one built
  // today). OpenFabric refuses other names, listing the built ones.
  std::string backend = "ofi";
  // "verbs;ofi_rxm", "tcp;ofi_rxm", "shm", "sockets", or "auto": verbs when an
  // RDMA device answers, else tcp; the choice and its reason are logged and
  // available from Fabric::choice_reason().
  std::string provider = "auto";
  // Source address for providers that bind to an interface (tcp, verbs,
  // sockets), e.g. "127.0.0.1"; empty lets the provider choose. Providers
  // whose peers are found by name (shm; FabricCapabilities::
  // binds_to_interface false) ignore it, so callers may set it whatever the
  // provider.
  std::string interface_address;
  // Transfers longer than this are split into several operations; 0 means
  // the provider's maximum message size. Tests lower it to exercise splits.
  size_t max_transfer_size = 0;
  // Completion queue depth; posts that find it full are retried while
  // progress drains it, until their deadline.
  size_t cq_size = 4096;
  // shm only: regions in SharedMemory are offered to peers for the
  // copy-free path (RemoteRegion::share), and this fabric's endpoints take
  // it where peers offer it. The environment variable FABPS_SHM_DIRECT=0
  // turns it off for every fabric of the process (to compare, or to rule it
  // out).
  bool shm_direct = true;
  // Bounds of the registration cache of caller buffers.
  size_t reg_cache_max_entries = 1024;
  size_t reg_cache_max_bytes = size_t{8} << 30;
};

// What the provider under a Fabric does, where code above transport/ adapts
// to it (or a test checks it). Fixed when the fabric opens. The backend
// derives each field from what the provider reports about itself where it
// reports it, and from the provider's name, inside the backend, where it
// does not; nothing outside transport/<backend>/ compares provider names.
struct FabricCapabilities {
  // Sends of at most this many bytes, and zero-byte Writes (immediate data
  // only), are injected: copied out before the call returns, so that their
  // Completion is already done and a failure to deliver them is not
  // reported to the sender (see Endpoint::Send). 0: nothing is injected
  // (over ofi_rxm).
  size_t inject_size = 0;
  // The fabric binds to a network interface, chosen by
  // FabricOptions::interface_address (tcp, verbs, sockets). False where
  // peers are processes of this host found by name (shm): the interface
  // address is ignored.
  bool binds_to_interface = true;
  // The progress thread of a ProgressMode::kThread endpoint sleeps on the
  // completion queue's wait object while nothing large is in flight, using
  // almost no CPU when idle (tcp;ofi_rxm, verbs). False: it keeps polling
  // the queue, in steps of about 100 us when idle (shm, sockets). An
  // endpoint whose provider refuses the wait object polls too, and logs it.
  bool progress_thread_sleeps = false;
  // RMA to a peer's region that lies in SharedMemory is a memcpy through a
  // mapping of that memory (RemoteRegion::share): shm with
  // FabricOptions::shm_direct, unless FABPS_SHM_DIRECT=0.
  bool maps_peer_shared_memory = false;
  // After RemovePeer of a peer that died with transfers in flight, the
  // endpoint goes on serving its other peers. False (shm): transfers to
  // every peer queue behind the one stuck on the dead peer, and the caller
  // replaces the endpoint (as fabps clients do when they reconnect).
  bool isolates_dead_peers = true;
};

// Where a remote region is and how to reach it. `base` is the value the
// provider adds offsets to: the region's virtual address when the provider
// uses FI_MR_VIRT_ADDR, 0 otherwise. `key` is the provider's key. All peers
// of one job use the same provider, so they agree on the meaning.
//
// `share` is set by a fabric whose peers are processes of the same host (the
// shm provider) when the region lies in SharedMemory (base/shared_memory.h):
// a peer's endpoint then maps that memory and does its RMA to the region as
// a plain memory copy, no kernel copy (CMA) and no target-side progress; a
// write's immediate data still goes through the fabric, after the bytes are
// in place. An endpoint that cannot map it (another host, another pid
// namespace, a name that does not match) uses the fabric as without it.
struct RemoteRegion {
  uint64_t base = 0;
  uint64_t key = 0;
  uint64_t length = 0;
  std::optional<ShareInfo> share;

  // Little endian: magic, base, key, length (28 bytes); with a share, another
  // magic and then pid, fd, offset, nonce (60 bytes).
  std::string Serialize() const;
  // Validates size and magic; Corruption on anything else.
  static Result<RemoteRegion> Parse(const std::string& bytes);
};

// Registered memory. Made by Fabric::Register; the memory must stay
// allocated while the region lives.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
  // The descriptor peers use to reach this region by RMA.
  virtual RemoteRegion remote() const = 0;
  // True when [ptr, ptr + len) lies inside this region.
  bool Contains(const void* ptr, size_t len) const;
};

// What a two-sided receive or an RMA read/write completion reports.
struct CompletionInfo {
  size_t bytes = 0;  // bytes received (recv); requested length otherwise
};

// Handle of one posted operation. Cheap to copy; all copies name the same
// operation. A default-constructed Completion is already done with OK.
class Completion {
 public:
  Completion() = default;
  explicit Completion(std::shared_ptr<internal::OpState> s);

  // Waits until the operation completes or `deadline` passes: on a kCaller
  // endpoint driving its progress, on a kThread endpoint sleeping (after a
  // short spin) until the progress thread completes it. Returns the operation's
  // Status, or TimedOut (the operation stays posted; its memory must stay valid
  // until the endpoint is closed). With a deadline that has passed it only
  // looks: no spin, no progress driven.
  Status Wait(Deadline deadline);
  // Non-blocking: the Status when done, nullopt while in flight. Does not
  // drive progress.
  std::optional<Status> Poll() const;
  bool done() const;
  CompletionInfo info() const;

 private:
  std::shared_ptr<internal::OpState> s_;
};

// Immediate data that a peer's RMA write delivered to this endpoint; the
// write's bytes are in place when the event is seen.
struct ImmediateEvent {
  uint64_t data = 0;
};

using ImmediateHandler = std::function<void(const ImmediateEvent&)>;
using PeerId = uint64_t;

class Endpoint {
 public:
  // Destroying an endpoint stops its progress thread and closes it; pending
  // operations end with Cancelled. Bounded: if the progress thread does not
  // come back within about two seconds (stuck inside the provider, e.g. on a
  // lock in shared memory held by a peer that was killed; libfabric 1.17's
  // shm uses non-robust locks there), the endpoint is abandoned instead (an
  // error is logged; its resources leak; its handler is never called again)
  // so that the caller can go on with a fresh endpoint. Over ofi_rxm on tcp
  // (where libfabric 1.17 crashes closing a connection with a read partway
  // in) reads in flight are waited for, up to a second; a read still in
  // flight then leaves the provider's endpoint open (a warning is logged;
  // nothing drives it, so it touches no buffer of the caller's).
  virtual ~Endpoint() = default;

  // This endpoint's address as opaque bytes, to hand to peers through the
  // control plane.
  virtual std::string address() const = 0;

  // Makes a peer reachable. The same address added twice gives the same id.
  virtual Result<PeerId> AddPeer(const std::string& address) = 0;
  // Forgets a peer (e.g. before re-adding a restarted one). Operations still
  // in flight to it fail or time out.
  virtual Status RemovePeer(PeerId peer) = 0;

  // Two-sided messages. The buffer slice [offset, offset + len) of `region`
  // must stay untouched until the completion is done. A message no longer
  // than FabricCapabilities::inject_size is copied out before Send returns
  // (shm, sockets; not over ofi_rxm): its Completion is then already done,
  // and a failure to deliver it (a peer that died) is not reported to the
  // sender, who learns of it from what it waits for next (an answer that
  // does not come).
  virtual Result<Completion> Send(PeerId peer, const MemoryRegion& region,
                                  size_t offset, size_t len,
                                  Deadline deadline) = 0;
  // Posts a receive buffer; any peer's next message lands there. The
  // completion's info().bytes is the message length; a message longer than
  // `len` completes with an error.
  virtual Result<Completion> Recv(const MemoryRegion& region, size_t offset,
                                  size_t len, Deadline deadline) = 0;

  // One-sided RMA write of local [offset, offset + len) to the peer's
  // `remote` at `remote_offset`. With `immediate`, the peer's endpoint
  // reports an ImmediateEvent once all `len` bytes are in place. A write of
  // zero bytes (a notification: immediate data only) is injected where
  // small Sends are: done at once, delivery failures unreported.
  virtual Result<Completion> Write(PeerId peer, const MemoryRegion& region,
                                   size_t offset, size_t len,
                                   const RemoteRegion& remote,
                                   uint64_t remote_offset,
                                   std::optional<uint64_t> immediate,
                                   Deadline deadline) = 0;
  // One-sided RMA read of the peer's `remote` at `remote_offset` into local
  // [offset, offset + len).
  virtual Result<Completion> Read(PeerId peer, const MemoryRegion& region,
                                  size_t offset, size_t len,
                                  const RemoteRegion& remote,
                                  uint64_t remote_offset,
                                  Deadline deadline) = 0;

  // Immediate data arriving here go to `handler` when one is set (called on
  // whichever thread drives progress: keep it short and non-blocking);
  // otherwise they queue for PollImmediate/WaitImmediate. Setting a handler
  // drains nothing already queued.
  virtual void SetImmediateHandler(ImmediateHandler handler) = 0;
  virtual std::optional<ImmediateEvent> PollImmediate() = 0;
  virtual Result<ImmediateEvent> WaitImmediate(Deadline deadline) = 0;

  // Reads the completion queue once and dispatches what it finds. Returns
  // the number of completions handled. Safe from any thread.
  virtual Result<size_t> Progress() = 0;

  // Runs `fn` on this endpoint's progress thread (woken if it sleeps), soon
  // and in the order given, between two reads of the completion queue: `fn`
  // may post operations (as the immediate handler may) and must not block.
  // An endpoint whose owner drives progress (kCaller) runs `fn` right here.
  // Functions still queued when the endpoint shuts down are destroyed
  // without being run.
  virtual void RunOnProgressThread(std::function<void()> fn) = 0;
};

class Fabric {
 public:
  virtual ~Fabric() = default;

  // The provider in use, e.g. "tcp;ofi_rxm".
  virtual std::string provider() const = 0;
  // Why this provider: for "auto", which were tried and what they answered.
  virtual std::string choice_reason() const = 0;
  // The provider's largest single transfer, before our own splitting.
  virtual size_t max_message_size() const = 0;
  // What the provider does (see FabricCapabilities); the same value for
  // the fabric's whole life.
  virtual FabricCapabilities capabilities() const = 0;

  // Registers [data, data + len) for local use and remote read and write.
  // len > 0; the memory must be allocated and stay so while the region lives.
  virtual Result<std::unique_ptr<MemoryRegion>> Register(void* data,
                                                         size_t len) = 0;

  virtual Result<std::unique_ptr<Endpoint>> CreateEndpoint(
      ProgressMode mode) = 0;

  // Registrations of caller buffers, reused across calls (see
  // registration_cache.h). Owned by the fabric.
  virtual RegistrationCache& cache() = 0;
};

// Opens a fabric of options.backend by provider name. An unknown backend, or
// an unknown or non-working provider name, gives InvalidArgument listing the
// backends built or the providers that work on this machine.
Result<std::unique_ptr<Fabric>> OpenFabric(const FabricOptions& options);

// Provider names fabps knows, in order of preference for "auto".
const std::vector<std::string>& KnownProviders();

}  // namespace fabps::transport

#endif  // FABPS_TRANSPORT_FABRIC_H_

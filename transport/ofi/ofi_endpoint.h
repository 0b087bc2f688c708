// The libfabric endpoint behind transport::Endpoint: one FI_EP_RDM endpoint
// with its address vector (FI_AV_TABLE) and one completion queue for
// transmit, receive and remote CQ data. See transport/fabric.h for the
// contract.
#ifndef FABPS_TRANSPORT_OFI_OFI_ENDPOINT_H_
#define FABPS_TRANSPORT_OFI_OFI_ENDPOINT_H_

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/completion.h"
#include "transport/fabric.h"
#include "transport/local_shares.h"

namespace fabps::transport::ofi {

class OfiFabric;

// The provider's descriptor of a region registered by OfiFabric.
void* LocalDescriptor(const MemoryRegion& region);

// The endpoint proper. Callers get it wrapped in a handle (see Create) whose
// destruction calls Shutdown(); the progress thread holds a reference of its
// own, so an endpoint whose thread is stuck in the provider stays alive
// (abandoned) instead of being freed under it.
class OfiEndpoint final : public Endpoint,
                          public internal::ProgressDriver,
                          public std::enable_shared_from_this<OfiEndpoint> {
 public:
  static Result<std::unique_ptr<Endpoint>> Create(OfiFabric* fabric,
                                                  const FabricOptions& options,
                                                  ProgressMode mode);
  ~OfiEndpoint() override;

  // Stops the progress thread, waiting at most `wait` for it; returns false
  // (and abandons the thread, which keeps this object alive) if it did not
  // come back. Idempotent; called by the handle's destructor.
  bool Shutdown(std::chrono::milliseconds wait);

  std::string address() const override { return address_; }
  Result<PeerId> AddPeer(const std::string& address) override;
  Status RemovePeer(PeerId peer) override;
  Result<Completion> Send(PeerId peer, const MemoryRegion& region,
                          size_t offset, size_t len,
                          Deadline deadline) override;
  Result<Completion> Recv(const MemoryRegion& region, size_t offset, size_t len,
                          Deadline deadline) override;
  Result<Completion> Write(PeerId peer, const MemoryRegion& region,
                           size_t offset, size_t len,
                           const RemoteRegion& remote, uint64_t remote_offset,
                           std::optional<uint64_t> immediate,
                           Deadline deadline) override;
  Result<Completion> Read(PeerId peer, const MemoryRegion& region,
                          size_t offset, size_t len, const RemoteRegion& remote,
                          uint64_t remote_offset, Deadline deadline) override;
  void SetImmediateHandler(ImmediateHandler handler) override;
  std::optional<ImmediateEvent> PollImmediate() override;
  Result<ImmediateEvent> WaitImmediate(Deadline deadline) override;
  Result<size_t> Progress() override;
  void RunOnProgressThread(std::function<void()> fn) override;
  bool busy_poll() const override { return mode_ == ProgressMode::kCaller; }

 private:
  struct Op;
  // kInjectSend, kInjectWrite: fi_inject, fi_inject_write[data]; no
  // completion entry, the buffer is reusable when the post returns.
  enum class Kind { kSend, kRecv, kWrite, kRead, kInjectSend, kInjectWrite };
  // "rma write" or "rma read", for errors.
  static const char* RmaName(Kind kind);

  OfiEndpoint(OfiFabric* fabric, ProgressMode mode);
  Status Open(const FabricOptions& options);
  // Posts one provider operation, retrying on FI_EAGAIN while driving
  // progress, until `deadline`. `op` is null for the inject kinds.
  Status PostPart(Kind kind, Op* op, int part, fi_addr_t dest, void* buf,
                  size_t len, void* desc, uint64_t remote_addr, uint64_t key,
                  const uint64_t* immediate, Deadline deadline);
  Result<Completion> Rma(Kind kind, PeerId peer, const MemoryRegion& region,
                         size_t offset, size_t len, const RemoteRegion& remote,
                         uint64_t remote_offset,
                         std::optional<uint64_t> immediate, Deadline deadline);
  // A new operation of `parts` provider operations moving `bytes`, in
  // flight until Finish.
  std::shared_ptr<Op> NewOp(int parts, size_t bytes, bool read = false);
  // Whether a read is in flight.
  bool ReadsInFlight();
  // Drives progress until no read is in flight or `bound` has passed;
  // returns whether none is.
  bool DrainReads(std::chrono::milliseconds bound);
  void Finish(Op* op);
  // Takes `op` out of the in-flight list and returns the reference the list
  // held (the caller decides when it is released). Requires ops_mu_.
  std::shared_ptr<Op> Unlink(Op* op);
  struct Peer {
    fi_addr_t addr = FI_ADDR_UNSPEC;
    // The copy-free path has reached it through the fabric once (see
    // DirectRma).
    bool reached = false;
  };
  // A copy of the peer's entry, in one lookup.
  Result<Peer> FindPeer(PeerId peer);
  // The copy-free path (transport/local_shares.h) when `remote` is a share
  // this process can map: the bytes move by memcpy before it returns.
  // nullopt when it does not apply (the caller goes through the fabric).
  std::optional<Result<Completion>> DirectRma(
      Kind kind, PeerId peer, const Peer& entry, const MemoryRegion& region,
      size_t offset, size_t len, const RemoteRegion& remote,
      uint64_t remote_offset, std::optional<uint64_t> immediate,
      Deadline deadline);
  // Handles what fi_cq_read or fi_cq_sread returned (`n` entries or an
  // error code). Requires the CQ (CqReader).
  Result<size_t> Dispatch(ssize_t n, const fi_cq_data_entry* entries);
  // The idle progress thread: unless an operation is in flight, blocks in
  // fi_cq_sread for at most kBlockMs and dispatches what it read.
  Result<size_t> BlockOnCq();
  size_t RunTasks();  // runs RunOnProgressThread's queue; returns how many
  void ProgressLoop();

  OfiFabric* const fabric_;
  const ProgressMode mode_;
  size_t transfer_limit_ = 0;
  // Sends up to this size and zero-length writes (a credit: immediate data
  // only) are injected (FabricCapabilities::inject_size; 0: never, as over
  // ofi_rxm, see DescribeProvider).
  size_t inject_size_ = 0;
  bool ordered_writes_ = false;
  // rxm over tcp (libfabric 1.17), whose connections must not close with a
  // transfer partway in (see Open): a write's immediate data travel alone,
  // in a zero-byte write after its bytes, and reads in flight are waited
  // for before the endpoint closes.
  bool rxm_over_tcp_ = false;
  // The copy-free path to peers' SharedMemory
  // (FabricCapabilities::maps_peer_shared_memory); null when off.
  std::unique_ptr<LocalShares> shares_;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  // The CQ has a wait object (kThread on a provider that offers one).
  // Written before the progress thread starts, then only by it.
  std::atomic<bool> can_block_{false};
  std::atomic<bool> blocked_{false};  // the progress thread is in BlockOnCq
  // RunOnProgressThread's queue, run by ProgressLoop before each poll;
  // has_tasks_ is set while it is not empty (BlockOnCq does not sleep then).
  std::mutex tasks_mu_;
  std::vector<std::function<void()>> tasks_;
  std::atomic<bool> has_tasks_{false};
  fid_ep* ep_ = nullptr;
  std::string address_;

  std::mutex peers_mu_;
  std::map<std::string, PeerId> peer_by_address_;
  std::unordered_map<PeerId, Peer> peers_;
  PeerId next_peer_ = 1;

  std::mutex ops_mu_;
  // The operations in flight, a list through Op::prev/next; each holds
  // itself (Op::self) until Finish. Intrusive, so posting allocates nothing
  // beyond the operation itself.
  Op* inflight_ = nullptr;
  int hot_inflight_ = 0;  // of inflight_, those with hot set
  // Operations of at least this many bytes keep the progress thread polling
  // while in flight; smaller ones let it block on the CQ's wait object
  // (HotBytes() in ofi_endpoint.cc).
  const size_t hot_bytes_;

  std::mutex imm_mu_;
  std::condition_variable imm_cv_;
  std::deque<ImmediateEvent> imm_queue_;
  std::shared_ptr<ImmediateHandler> imm_handler_;

  // One reader of the CQ at a time keeps dispatch ordered. A flag rather
  // than a mutex: every poll takes it, and an exchange to take it and a
  // store to give it back cost less than a mutex's try-lock and unlock
  // (perf, shm 64 B pingpong: Progress with its lock 12 % of the client's
  // samples, 8 % with the flag). Taken through CqReader.
  std::atomic<bool> cq_busy_{false};
  class CqReader;
  std::atomic<bool> stop_{false};
  std::thread progress_thread_;
  std::mutex exit_mu_;
  std::condition_variable exit_cv_;
  bool thread_exited_ = false;
};

}  // namespace fabps::transport::ofi

#endif  // FABPS_TRANSPORT_OFI_OFI_ENDPOINT_H_

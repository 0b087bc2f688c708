#include "transport/ofi/ofi_endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "base/copy_bytes.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "transport/ofi/ofi_error.h"
#include "transport/ofi/ofi_fabric.h"

namespace fabps::transport::ofi {

// One libfabric context per provider operation. fi_context2 comes first: the
// provider owns it while the operation is posted (FI_CONTEXT2 mode).
struct PartContext {
  fi_context2 fi;
  OfiEndpoint* ep;
  void* op;
};

struct OfiEndpoint::Op : internal::OpState {
  explicit Op(int parts) : OpState(parts) {
    if (parts > 1) more.reset(new PartContext[parts]());
  }
  PartContext& ctx(int part) { return more ? more[part] : one; }

  // A one-part operation (every send, receive and RMA up to the transfer
  // limit) keeps its context inline: no allocation besides the Op.
  PartContext one{};
  std::unique_ptr<PartContext[]> more;
  bool hot = false;   // keeps the progress thread polling while in flight
  bool read = false;  // an RMA read
  // Guarded by the endpoint's ops_mu_: set while the operation is in the
  // endpoint's in-flight list, where it keeps the Op alive.
  std::shared_ptr<Op> self;
  Op* prev = nullptr;
  Op* next = nullptr;
};

namespace {
constexpr size_t kMaxAddressBytes = 1024;
constexpr int kCqBatch = 32;
// The progress thread keeps polling this long after the last completion
// (or while a hot operation is in flight, see HotBytes) before it blocks on
// the CQ's wait object: back-to-back operations then see no wake-up latency.
constexpr auto kHot = std::chrono::microseconds(300);
// An operation of at least this many bytes is hot: while it is in flight the
// progress thread polls, because the provider moves a large transfer's bytes
// only as its CQ is read and a blocked thread would wait for the wake-up
// bound between socket buffers. A smaller one (a gradient block of a small
// model, a credit) lets the thread block: its completion arrives through
// the wait object, and the core is left to the trainer's compute. 4 MiB is
// the default layout block of float32
// (docs/decisions/002-progress-polls-only-for-large-transfers.md).
constexpr size_t kDefaultHotBytes = size_t{4} << 20;
// Without a wait object to block on: stay hot (yielding) this long, then
// sleep in 100 us steps.
constexpr auto kHotPolling = std::chrono::milliseconds(20);
// A blocked progress thread wakes at least this often even when the wait
// object stays quiet, so progress that the provider's fd does not announce
// (or a provider whose wait object is a poor signal) is still driven.
constexpr int kBlockMs = 2;
// How long Shutdown waits for reads in flight before the endpoint closes
// over rxm on tcp (see Open).
constexpr int kDrainMs = 1000;

// kDefaultHotBytes, or FABPS_PROGRESS_HOT_BYTES when it holds a byte count
// (0: every operation is hot, the polling of old; a large value: none is).
size_t HotBytes() {
  const char* v = std::getenv("FABPS_PROGRESS_HOT_BYTES");
  if (v == nullptr || *v == '\0') return kDefaultHotBytes;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || errno != 0 || v[0] == '-') {
    static std::once_flag warned;
    std::call_once(warned, [v] {
      FABPS_LOG(WARNING) << "FABPS_PROGRESS_HOT_BYTES='" << v
                         << "' is not a byte count; using " << kDefaultHotBytes;
    });
    return kDefaultHotBytes;
  }
  return static_cast<size_t>(n);
}

}  // namespace

OfiEndpoint::OfiEndpoint(OfiFabric* fabric, ProgressMode mode)
    : fabric_(fabric), mode_(mode), hot_bytes_(HotBytes()) {}

namespace {

// What callers own: forwards to the shared endpoint and shuts it down, with
// a bound, when destroyed.
class EndpointHandle final : public Endpoint {
 public:
  explicit EndpointHandle(std::shared_ptr<OfiEndpoint> ep)
      : ep_(std::move(ep)) {}
  ~EndpointHandle() override { ep_->Shutdown(std::chrono::seconds(2)); }

  std::string address() const override { return ep_->address(); }
  Result<PeerId> AddPeer(const std::string& address) override {
    return ep_->AddPeer(address);
  }
  Status RemovePeer(PeerId peer) override { return ep_->RemovePeer(peer); }
  Result<Completion> Send(PeerId peer, const MemoryRegion& region,
                          size_t offset, size_t len,
                          Deadline deadline) override {
    return ep_->Send(peer, region, offset, len, deadline);
  }
  Result<Completion> Recv(const MemoryRegion& region, size_t offset, size_t len,
                          Deadline deadline) override {
    return ep_->Recv(region, offset, len, deadline);
  }
  Result<Completion> Write(PeerId peer, const MemoryRegion& region,
                           size_t offset, size_t len,
                           const RemoteRegion& remote, uint64_t remote_offset,
                           std::optional<uint64_t> immediate,
                           Deadline deadline) override {
    return ep_->Write(peer, region, offset, len, remote, remote_offset,
                      immediate, deadline);
  }
  Result<Completion> Read(PeerId peer, const MemoryRegion& region,
                          size_t offset, size_t len, const RemoteRegion& remote,
                          uint64_t remote_offset, Deadline deadline) override {
    return ep_->Read(peer, region, offset, len, remote, remote_offset,
                     deadline);
  }
  void RunOnProgressThread(std::function<void()> fn) override {
    ep_->RunOnProgressThread(std::move(fn));
  }
  void SetImmediateHandler(ImmediateHandler handler) override {
    ep_->SetImmediateHandler(std::move(handler));
  }
  std::optional<ImmediateEvent> PollImmediate() override {
    return ep_->PollImmediate();
  }
  Result<ImmediateEvent> WaitImmediate(Deadline deadline) override {
    return ep_->WaitImmediate(deadline);
  }
  Result<size_t> Progress() override { return ep_->Progress(); }

 private:
  std::shared_ptr<OfiEndpoint> ep_;
};

}  // namespace

Result<std::unique_ptr<Endpoint>> OfiEndpoint::Create(
    OfiFabric* fabric, const FabricOptions& options, ProgressMode mode) {
  std::shared_ptr<OfiEndpoint> ep(new OfiEndpoint(fabric, mode));
  FABPS_RETURN_IF_ERROR(ep->Open(options));
  return std::unique_ptr<Endpoint>(new EndpointHandle(std::move(ep)));
}

Status OfiEndpoint::Open(const FabricOptions& options) {
  fi_info* info = fabric_->info();
  transfer_limit_ = fabric_->transfer_limit();
  const FabricCapabilities caps = fabric_->capabilities();
  inject_size_ = caps.inject_size;
  if (caps.maps_peer_shared_memory) shares_ = std::make_unique<LocalShares>();
  // Over rxm on tcp (libfabric 1.17), closing the endpoint while a
  // transfer is partway in reports a CQ error entry without a context,
  // which rxm dereferences: SIGSEGV in fi_close (about 1 in 6 runs of
  // netns.job_tcp, a trainer closing while its pulls were in flight). Two
  // transfers do it: a read whose response is partway in (tcp reports it
  // twice, the second time freed), and a write with immediate data partway
  // into this endpoint. A write without immediate data fails silently
  // there and a zero-byte one has nothing partway in, so the immediate data
  // go alone after the bytes; reads are waited for (Shutdown), and an
  // endpoint whose reads do not end is left open (~OfiEndpoint). A peer
  // built elsewhere can still send a write whose immediate data ride with
  // its bytes. (fi_av_remove closes no connection: FI_AV_REMOVE_CLEANUP is
  // off by default.)
  rxm_over_tcp_ = fabric_->traits().rxm_over_tcp;
  uint64_t order = info->tx_attr->msg_order;
  ordered_writes_ = (order & (FI_ORDER_RMA_WAW | FI_ORDER_WAW)) != 0 &&
                    info->ep_attr->max_order_waw_size >= transfer_limit_;

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  int ret = fi_av_open(fabric_->domain(), &av_attr, &av_, nullptr);
  if (ret != 0) return FiError("fi_av_open", ret);

  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.size = options.cq_size;
  // The progress thread blocks on the CQ's wait object when idle; callers
  // that drive progress themselves (kCaller) never block, so they keep the
  // cheaper CQ without one, and so do providers that poll by choice
  // (FabricCapabilities::progress_thread_sleeps, ofi_fabric.cc says why). A
  // provider without wait objects gets FI_WAIT_NONE and a thread that sleeps
  // in short steps instead.
  ret = -FI_ENOSYS;
  if (mode_ == ProgressMode::kThread && caps.progress_thread_sleeps) {
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    ret = fi_cq_open(fabric_->domain(), &cq_attr, &cq_, nullptr);
    can_block_ = ret == 0;
    if (ret != 0) {
      FABPS_LOG(INFO) << "provider " << fabric_->provider()
                      << ": no CQ wait object (" << fi_strerror(-ret)
                      << "); the progress thread polls";
    }
  }
  if (ret != 0) {
    cq_attr.wait_obj = FI_WAIT_NONE;
    ret = fi_cq_open(fabric_->domain(), &cq_attr, &cq_, nullptr);
    if (ret != 0) return FiError("fi_cq_open", ret);
  }

  ret = fi_endpoint(fabric_->domain(), info, &ep_, nullptr);
  if (ret != 0) return FiError("fi_endpoint", ret);
  ret = fi_ep_bind(ep_, &av_->fid, 0);
  if (ret != 0) return FiError("fi_ep_bind(av)", ret);
  ret = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV);
  if (ret != 0) return FiError("fi_ep_bind(cq)", ret);
  ret = fi_enable(ep_);
  if (ret != 0) return FiError("fi_enable", ret);

  size_t len = 0;
  ret = fi_getname(&ep_->fid, nullptr, &len);
  if (ret != -FI_ETOOSMALL && ret != 0) return FiError("fi_getname(size)", ret);
  address_.resize(len);
  ret = fi_getname(&ep_->fid, address_.data(), &len);
  if (ret != 0) return FiError("fi_getname", ret);
  address_.resize(len);

  if (mode_ == ProgressMode::kThread) {
    // The thread owns a reference: if it ever gets stuck in the provider,
    // Shutdown abandons it and this object stays valid for it.
    progress_thread_ = std::thread([self = shared_from_this()] {
      SetThreadName("fabps-progress");
      self->ProgressLoop();
      std::lock_guard<std::mutex> l(self->exit_mu_);
      self->thread_exited_ = true;
      self->exit_cv_.notify_all();
    });
  }
  return Status::OK();
}

bool OfiEndpoint::Shutdown(std::chrono::milliseconds wait) {
  // Reads in flight end before the endpoint closes (see Open).
  if (rxm_over_tcp_ && !stop_)
    DrainReads(std::min(wait, std::chrono::milliseconds(kDrainMs)));
  stop_ = true;
  if (!progress_thread_.joinable()) return true;
  if (can_block_) fi_cq_signal(cq_);  // wake it from fi_cq_sread
  bool exited;
  {
    std::unique_lock<std::mutex> l(exit_mu_);
    exited = exit_cv_.wait_for(l, wait, [this] { return thread_exited_; });
  }
  if (exited) {
    progress_thread_.join();
    return true;
  }
  FABPS_LOG(ERROR) << "progress thread of endpoint " << this
                   << " did not stop within " << wait.count()
                   << " ms (stuck in the provider; a peer killed while "
                      "holding a lock in shared memory?): abandoning it";
  {
    std::lock_guard<std::mutex> l(imm_mu_);
    imm_handler_.reset();
  }
  progress_thread_.detach();
  return false;
}

OfiEndpoint::~OfiEndpoint() {
  stop_ = true;
  // Reached after Shutdown joined the thread, or on the abandoned thread
  // itself if it ever came back (then it is detached already).
  if (progress_thread_.joinable()) progress_thread_.detach();
  // Close the endpoint first: after this the provider touches no context.
  // Over rxm on tcp, not with a read still in flight (see Open): then the
  // provider's endpoint is left open, and as nothing drives its progress
  // any more, it touches no context and no buffer either.
  if (rxm_over_tcp_ && ReadsInFlight()) {
    FABPS_LOG(WARNING) << "endpoint " << this << ": a read is still in flight "
                       << "at close; the provider's endpoint is left open";
  } else {
    if (ep_) fi_close(&ep_->fid);
    if (cq_) fi_close(&cq_->fid);
    if (av_) fi_close(&av_->fid);
  }
  std::lock_guard<std::mutex> l(ops_mu_);
  while (inflight_ != nullptr) {
    Op* op = inflight_;
    op->driver.store(nullptr);
    while (!op->done.load())
      op->PartDone(Status::Cancelled("endpoint closed"), 0);
    std::shared_ptr<Op> last = Unlink(op);  // may free op
  }
}

Result<PeerId> OfiEndpoint::AddPeer(const std::string& address) {
  if (address.empty() || address.size() > kMaxAddressBytes) {
    return Status::InvalidArgument(
        "peer address of " + std::to_string(address.size()) +
        " bytes (expected 1.." + std::to_string(kMaxAddressBytes) + ")");
  }
  std::lock_guard<std::mutex> l(peers_mu_);
  auto it = peer_by_address_.find(address);
  if (it != peer_by_address_.end()) return it->second;
  fi_addr_t fa = FI_ADDR_UNSPEC;
  int ret = fi_av_insert(av_, address.data(), 1, &fa, 0, nullptr);
  if (ret != 1) return FiError("fi_av_insert", ret < 0 ? ret : -FI_EINVAL);
  PeerId id = next_peer_++;
  peers_[id] = Peer{fa, false};
  peer_by_address_[address] = id;
  return id;
}

Status OfiEndpoint::RemovePeer(PeerId peer) {
  std::lock_guard<std::mutex> l(peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end())
    return Status::NotFound("peer " + std::to_string(peer));
  fi_addr_t fa = it->second.addr;
  peers_.erase(it);
  for (auto a = peer_by_address_.begin(); a != peer_by_address_.end(); ++a) {
    if (a->second == peer) {
      peer_by_address_.erase(a);
      break;
    }
  }
  // Over rxm this leaves the connection open (FI_AV_REMOVE_CLEANUP unset),
  // so a read partway in from a frozen peer is no danger here (see Open).
  int ret = fi_av_remove(av_, &fa, 1, 0);
  if (ret != 0) return FiError("fi_av_remove", ret);
  return Status::OK();
}

Result<OfiEndpoint::Peer> OfiEndpoint::FindPeer(PeerId peer) {
  std::lock_guard<std::mutex> l(peers_mu_);
  auto it = peers_.find(peer);
  if (it == peers_.end())
    return Status::NotFound("unknown peer " + std::to_string(peer));
  return it->second;
}

std::shared_ptr<OfiEndpoint::Op> OfiEndpoint::NewOp(int parts, size_t bytes,
                                                    bool read) {
  auto op = std::make_shared<Op>(parts);
  op->hot = bytes >= hot_bytes_;
  op->read = read;
  op->driver.store(this);
  for (int i = 0; i < parts; i++) {
    op->ctx(i).ep = this;
    op->ctx(i).op = op.get();
  }
  {
    std::lock_guard<std::mutex> l(ops_mu_);
    op->self = op;
    op->next = inflight_;
    if (inflight_ != nullptr) inflight_->prev = op.get();
    inflight_ = op.get();
    if (op->hot) hot_inflight_++;
  }
  // A progress thread blocked on the CQ must poll while a hot operation is
  // in flight (the provider moves its bytes only when its CQ is read).
  // Ordered with BlockOnCq's check of hot_inflight_ through ops_mu_.
  if (op->hot && blocked_.load()) fi_cq_signal(cq_);
  return op;
}

bool OfiEndpoint::ReadsInFlight() {
  std::lock_guard<std::mutex> l(ops_mu_);
  for (Op* op = inflight_; op != nullptr; op = op->next) {
    if (op->read) return true;
  }
  return false;
}

bool OfiEndpoint::DrainReads(std::chrono::milliseconds bound) {
  auto deadline = Deadline::InMs(bound.count());
  while (ReadsInFlight()) {
    if (deadline.Expired()) return false;
    // Completes reads whether or not a progress thread runs (one reader at
    // a time: with the thread reading, this finds nothing and waits).
    auto r = Progress();
    if (!r.ok() || r.value() == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

std::shared_ptr<OfiEndpoint::Op> OfiEndpoint::Unlink(Op* op) {
  if (op->prev != nullptr) op->prev->next = op->next;
  if (op->next != nullptr) op->next->prev = op->prev;
  if (inflight_ == op) inflight_ = op->next;
  op->prev = op->next = nullptr;
  if (op->hot) hot_inflight_--;
  return std::move(op->self);
}

void OfiEndpoint::Finish(Op* op) {
  std::shared_ptr<Op> last;  // released after the lock: may free op
  std::lock_guard<std::mutex> l(ops_mu_);
  if (!op->self) return;  // finished already (a failed post, then its CQE)
  last = Unlink(op);
}

const char* OfiEndpoint::RmaName(Kind kind) {
  return kind == Kind::kWrite ? "rma write" : "rma read";
}

Status OfiEndpoint::PostPart(Kind kind, Op* op, int part, fi_addr_t dest,
                             void* buf, size_t len, void* desc,
                             uint64_t remote_addr, uint64_t key,
                             const uint64_t* immediate, Deadline deadline) {
  void* ctx = op != nullptr ? &op->ctx(part) : nullptr;
  for (;;) {
    ssize_t ret = 0;
    switch (kind) {
      case Kind::kSend:
        ret = fi_send(ep_, buf, len, desc, dest, ctx);
        break;
      case Kind::kRecv:
        ret = fi_recv(ep_, buf, len, desc, FI_ADDR_UNSPEC, ctx);
        break;
      case Kind::kWrite:
        ret = immediate
                  ? fi_writedata(ep_, buf, len, desc, *immediate, dest,
                                 remote_addr, key, ctx)
                  : fi_write(ep_, buf, len, desc, dest, remote_addr, key, ctx);
        break;
      case Kind::kRead:
        ret = fi_read(ep_, buf, len, desc, dest, remote_addr, key, ctx);
        break;
      case Kind::kInjectSend:
        ret = fi_inject(ep_, buf, len, dest);
        break;
      case Kind::kInjectWrite:
        ret = immediate
                  ? fi_inject_writedata(ep_, buf, len, *immediate, dest,
                                        remote_addr, key)
                  : fi_inject_write(ep_, buf, len, dest, remote_addr, key);
        break;
    }
    if (ret == 0) return Status::OK();
    if (ret != -FI_EAGAIN) return FiError("post", static_cast<int>(ret));
    // The provider is busy (connection being set up, queue full): drive
    // progress so it can drain, and try again until the deadline.
    if (deadline.Expired())
      return Status::TimedOut("post: provider busy until the deadline");
    auto r = Progress();
    if (!r.ok()) return r.status();
    if (r.value() == 0) sched_yield();
  }
}

Result<Completion> OfiEndpoint::Send(PeerId peer, const MemoryRegion& region,
                                     size_t offset, size_t len,
                                     Deadline deadline) {
  if (offset > region.size() || len > region.size() - offset) {
    return Status::InvalidArgument("send: [" + std::to_string(offset) + ", +" +
                                   std::to_string(len) +
                                   ") outside the registered region of " +
                                   std::to_string(region.size()) + " bytes");
  }
  if (len > fabric_->max_message_size())
    return Status::InvalidArgument("send: message too long");
  FABPS_ASSIGN_OR_RETURN(Peer entry, FindPeer(peer));
  const fi_addr_t dest = entry.addr;
  char* buf = static_cast<char*>(region.data()) + offset;
  if (len <= inject_size_) {
    // Copied out by the provider before the call returns: done at once, no
    // completion entry to read (what fi_pingpong does for small messages).
    Status s = PostPart(Kind::kInjectSend, nullptr, 0, dest, buf, len, nullptr,
                        0, 0, nullptr, deadline);
    if (!s.ok()) return s.WithContext("send to peer " + std::to_string(peer));
    return Completion();
  }
  auto op = NewOp(1, len);
  Status s = PostPart(Kind::kSend, op.get(), 0, dest, buf, len,
                      LocalDescriptor(region), 0, 0, nullptr, deadline);
  if (!s.ok()) {
    Finish(op.get());
    return s.WithContext("send to peer " + std::to_string(peer));
  }
  return Completion(op);
}

Result<Completion> OfiEndpoint::Recv(const MemoryRegion& region, size_t offset,
                                     size_t len, Deadline deadline) {
  if (offset > region.size() || len > region.size() - offset) {
    return Status::InvalidArgument("recv: [" + std::to_string(offset) + ", +" +
                                   std::to_string(len) +
                                   ") outside the registered region of " +
                                   std::to_string(region.size()) + " bytes");
  }
  // A posted receive waits for a peer: arriving data wakes a blocked
  // progress thread, so it keeps it polling only under the old policy
  // (FABPS_PROGRESS_HOT_BYTES=0).
  auto op = NewOp(1, 0);
  char* buf = static_cast<char*>(region.data()) + offset;
  Status s = PostPart(Kind::kRecv, op.get(), 0, FI_ADDR_UNSPEC, buf, len,
                      LocalDescriptor(region), 0, 0, nullptr, deadline);
  if (!s.ok()) {
    Finish(op.get());
    return s.WithContext("recv");
  }
  return Completion(op);
}

Result<Completion> OfiEndpoint::Write(PeerId peer, const MemoryRegion& region,
                                      size_t offset, size_t len,
                                      const RemoteRegion& remote,
                                      uint64_t remote_offset,
                                      std::optional<uint64_t> immediate,
                                      Deadline deadline) {
  return Rma(Kind::kWrite, peer, region, offset, len, remote, remote_offset,
             immediate, deadline);
}

Result<Completion> OfiEndpoint::Read(PeerId peer, const MemoryRegion& region,
                                     size_t offset, size_t len,
                                     const RemoteRegion& remote,
                                     uint64_t remote_offset,
                                     Deadline deadline) {
  return Rma(Kind::kRead, peer, region, offset, len, remote, remote_offset,
             std::nullopt, deadline);
}

Result<Completion> OfiEndpoint::Rma(Kind kind, PeerId peer,
                                    const MemoryRegion& region, size_t offset,
                                    size_t len, const RemoteRegion& remote,
                                    uint64_t remote_offset,
                                    std::optional<uint64_t> immediate,
                                    Deadline deadline) {
  const char* what = RmaName(kind);
  if (offset > region.size() || len > region.size() - offset) {
    return Status::InvalidArgument(
        std::string(what) + ": local [" + std::to_string(offset) + ", +" +
        std::to_string(len) + ") outside the registered region of " +
        std::to_string(region.size()) + " bytes");
  }
  if (remote_offset > remote.length || len > remote.length - remote_offset) {
    return Status::InvalidArgument(
        std::string(what) + ": remote [" + std::to_string(remote_offset) +
        ", +" + std::to_string(len) + ") outside the remote region of " +
        std::to_string(remote.length) + " bytes");
  }
  FABPS_ASSIGN_OR_RETURN(Peer entry, FindPeer(peer));
  const fi_addr_t dest = entry.addr;
  if (shares_ != nullptr && remote.share && len > 0) {
    auto direct = DirectRma(kind, peer, entry, region, offset, len, remote,
                            remote_offset, immediate, deadline);
    if (direct) return std::move(*direct);
  }
  if (kind == Kind::kWrite && len == 0 && inject_size_ > 0) {
    // A notification (a pserver's credit): nothing to move, nothing to
    // wait for; injected, it costs the sender no completion entry.
    const uint64_t* imm = immediate ? &*immediate : nullptr;
    Status s = PostPart(Kind::kInjectWrite, nullptr, 0, dest,
                        static_cast<char*>(region.data()) + offset, 0, nullptr,
                        remote.base + remote_offset, remote.key, imm, deadline);
    if (!s.ok())
      return s.WithContext(std::string(what) + " to peer " +
                           std::to_string(peer));
    return Completion();
  }
  const size_t limit = transfer_limit_ == 0 ? len : transfer_limit_;
  const int data_parts = len == 0 ? 1 : static_cast<int>(1 + (len - 1) / limit);
  // The immediate data's own zero-byte write, when they go alone.
  const bool alone =
      kind == Kind::kWrite && immediate && len > 0 && rxm_over_tcp_;
  const int parts = data_parts + (alone ? 1 : 0);
  auto op = NewOp(parts, len, kind == Kind::kRead);
  char* base = static_cast<char*>(region.data()) + offset;
  void* desc = LocalDescriptor(region);
  for (int i = 0; i < parts; i++) {
    size_t off = std::min(len, static_cast<size_t>(i) * limit);
    size_t n = i < data_parts ? std::min(limit, len - off) : 0;
    bool last = i == parts - 1;
    const uint64_t* imm = (last && immediate) ? &*immediate : nullptr;
    if (last && imm != nullptr && parts > 1 && !ordered_writes_) {
      // Without write-after-write ordering the immediate could overtake
      // earlier parts: wait until they are complete before the last goes.
      while (op->remaining.load() > 1) {
        if (deadline.Expired()) break;
        auto r = Progress();
        if (!r.ok()) break;
      }
    }
    Status s =
        PostPart(kind, op.get(), i, dest, base + off, n, desc,
                 remote.base + remote_offset + off, remote.key, imm, deadline);
    if (!s.ok()) {
      // Parts already posted complete on their own; the rest fail now.
      Status err =
          s.WithContext(std::string(what) + " to peer " + std::to_string(peer));
      for (int j = i; j < parts; j++) {
        if (op->PartDone(err, 0)) Finish(op.get());
      }
      if (i == 0) return err;
      return Completion(op);
    }
  }
  return Completion(op);
}

std::optional<Result<Completion>> OfiEndpoint::DirectRma(
    Kind kind, PeerId peer, const Peer& entry, const MemoryRegion& region,
    size_t offset, size_t len, const RemoteRegion& remote,
    uint64_t remote_offset, std::optional<uint64_t> immediate,
    Deadline deadline) {
  // Parse checked that share->offset + length does not overflow.
  auto m = shares_->Map(*remote.share);
  if (m == nullptr || remote.share->offset + remote.length > m->size())
    return std::nullopt;
  if (!m->OwnerAlive()) {
    return Status::Unavailable(std::string(RmaName(kind)) + " to peer " +
                               std::to_string(peer) +
                               ": its process has exited");
  }
  // libfabric's shm connects to a peer on the first operation to it, which
  // needs the peer's progress: were a write's immediate data the first, a
  // peer that is frozen then would hold the writer up until its deadline.
  // So the first transfer to a peer also writes zero bytes through the
  // fabric (no immediate data: nothing for the peer to see), as its
  // transfers through the fabric would have.
  if (!entry.reached) {
    auto c = Rma(Kind::kWrite, peer, region, offset, 0, remote, remote_offset,
                 std::nullopt, deadline);
    if (!c.ok()) return c.status();
    Status s = c->Wait(deadline);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> l(peers_mu_);
    auto it = peers_.find(peer);
    if (it != peers_.end()) it->second.reached = true;
  }
  char* far = m->base() + remote.share->offset + remote_offset;
  char* near = static_cast<char*>(region.data()) + offset;
  if (kind == Kind::kWrite) {
    CopyBytes(far, near, len);
  } else {
    CopyBytes(near, far, len);
  }
  if (kind == Kind::kRead || !immediate)
    return Result<Completion>(Completion());
  // The bytes are in place: the immediate data follow through the fabric,
  // as a write of zero bytes.
  return Rma(kind, peer, region, offset, 0, remote, remote_offset, immediate,
             deadline);
}

void OfiEndpoint::SetImmediateHandler(ImmediateHandler handler) {
  std::lock_guard<std::mutex> l(imm_mu_);
  imm_handler_ = handler
                     ? std::make_shared<ImmediateHandler>(std::move(handler))
                     : nullptr;
}

std::optional<ImmediateEvent> OfiEndpoint::PollImmediate() {
  std::lock_guard<std::mutex> l(imm_mu_);
  if (imm_queue_.empty()) return std::nullopt;
  ImmediateEvent e = imm_queue_.front();
  imm_queue_.pop_front();
  return e;
}

Result<ImmediateEvent> OfiEndpoint::WaitImmediate(Deadline deadline) {
  if (mode_ == ProgressMode::kThread) {
    // The progress thread queues events and notifies imm_cv_.
    std::unique_lock<std::mutex> l(imm_mu_);
    if (!imm_cv_.wait_until(l, deadline.time(),
                            [this] { return !imm_queue_.empty(); })) {
      return Status::TimedOut("no immediate data by the deadline");
    }
    ImmediateEvent e = imm_queue_.front();
    imm_queue_.pop_front();
    return e;
  }
  uint64_t idle = 0;
  for (;;) {
    if (auto e = PollImmediate()) return *e;
    if (deadline.Expired())
      return Status::TimedOut("no immediate data by the deadline");
    auto r = Progress();
    if (!r.ok()) return r.status();
    if (r.value() > 0) {
      idle = 0;
      continue;
    }
    if (++idle > 2000) sched_yield();
  }
}

// Holds the CQ (cq_busy_) for its scope once it got it.
class OfiEndpoint::CqReader {
 public:
  explicit CqReader(std::atomic<bool>& busy)
      : busy_(busy),
        held_(!busy.load(std::memory_order_relaxed) &&
              !busy.exchange(true, std::memory_order_acquire)) {}
  ~CqReader() {
    if (held_) busy_.store(false, std::memory_order_release);
  }
  CqReader(const CqReader&) = delete;
  CqReader& operator=(const CqReader&) = delete;
  bool held() const { return held_; }

 private:
  std::atomic<bool>& busy_;
  const bool held_;
};

Result<size_t> OfiEndpoint::Progress() {
  CqReader cq(cq_busy_);
  if (!cq.held()) return size_t{0};  // another thread is reading the CQ
  fi_cq_data_entry entries[kCqBatch];
  ssize_t n = fi_cq_read(cq_, entries, kCqBatch);
  return Dispatch(n, entries);
}

Result<size_t> OfiEndpoint::Dispatch(ssize_t n,
                                     const fi_cq_data_entry* entries) {
  if (n == -FI_EAGAIN) return size_t{0};
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    ssize_t r = fi_cq_readerr(cq_, &err, 0);
    if (r < 0) return size_t{0};
    char buf[256];
    const char* detail =
        fi_cq_strerror(cq_, err.prov_errno, err.err_data, buf, sizeof(buf));
    Status s = FiError(
        std::string("completion error (") + (detail ? detail : "") + ")",
        err.err);
    if (err.op_context != nullptr) {
      auto* pc = static_cast<PartContext*>(err.op_context);
      auto* op = static_cast<Op*>(pc->op);
      if (op->PartDone(s, 0)) Finish(op);
    } else {
      FABPS_LOG(WARNING) << "completion error without context: "
                         << s.ToString();
    }
    return size_t{1};
  }
  if (n < 0) return FiError("fi_cq_read", static_cast<int>(n));
  std::shared_ptr<ImmediateHandler> handler;
  for (ssize_t i = 0; i < n; i++) {
    const fi_cq_data_entry& e = entries[i];
    if ((e.flags & FI_REMOTE_CQ_DATA) != 0 &&
        (e.flags & FI_REMOTE_WRITE) != 0) {
      ImmediateEvent ev{e.data};
      {
        std::lock_guard<std::mutex> l(imm_mu_);
        handler = imm_handler_;
        if (!handler) {
          imm_queue_.push_back(ev);
          imm_cv_.notify_all();
        }
      }
      if (handler) (*handler)(ev);
      continue;
    }
    if (e.op_context == nullptr) continue;  // a remote event we did not ask for
    auto* pc = static_cast<PartContext*>(e.op_context);
    auto* op = static_cast<Op*>(pc->op);
    size_t bytes = (e.flags & FI_RECV) != 0 ? e.len : 0;
    if (op->PartDone(Status::OK(), bytes)) Finish(op);
  }
  return static_cast<size_t>(n);
}

Result<size_t> OfiEndpoint::BlockOnCq() {
  blocked_.store(true);
  bool idle;
  {
    std::lock_guard<std::mutex> l(ops_mu_);
    idle = hot_inflight_ == 0;
  }
  Result<size_t> r = size_t{0};
  // After blocked_ is set: a task queued before this load is seen here, one
  // queued after it sees blocked_ and signals (both seq_cst).
  if (idle && !stop_.load() && !has_tasks_.load()) {
    // Another reader holds the CQ only for one poll: wait it out.
    std::optional<CqReader> cq;
    while (!cq.emplace(cq_busy_).held()) sched_yield();
    fi_cq_data_entry entries[kCqBatch];
    // Reads the CQ (driving the provider's progress) and sleeps on its wait
    // object until a completion, fi_cq_signal or the timeout.
    ssize_t n = fi_cq_sread(cq_, entries, kCqBatch, nullptr, kBlockMs);
    if (n == -FI_ECANCELED || n == -FI_EINTR || n == -FI_ETIMEDOUT)
      n = -FI_EAGAIN;
    if (n == -FI_ENOSYS || n == -FI_EOPNOTSUPP) {
      FABPS_LOG(INFO) << "fi_cq_sread not supported by " << fabric_->provider()
                      << "; the progress thread polls";
      can_block_ = false;
      n = -FI_EAGAIN;
    }
    r = Dispatch(n, entries);
  }
  blocked_.store(false);
  return r;
}

void OfiEndpoint::RunOnProgressThread(std::function<void()> fn) {
  if (mode_ != ProgressMode::kThread) {
    fn();
    return;
  }
  {
    std::lock_guard<std::mutex> l(tasks_mu_);
    tasks_.push_back(std::move(fn));
  }
  has_tasks_.store(true);
  if (blocked_.load() && can_block_) fi_cq_signal(cq_);
}

size_t OfiEndpoint::RunTasks() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> l(tasks_mu_);
    batch.swap(tasks_);
    has_tasks_.store(false);
  }
  for (auto& fn : batch) fn();
  return batch.size();
}

void OfiEndpoint::ProgressLoop() {
  // Poll while anything happened recently or a local operation is in flight
  // (a large transfer produces no completion until it ends, and the provider
  // moves bytes only when its CQ is read); after kHot of quiet, block on the
  // CQ's wait object, which wakes on arriving data, completions, a new local
  // operation (NewOp signals) and Shutdown. Without a wait object, sleep in
  // short steps instead.
  auto last_activity = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    bool ran = has_tasks_.load() && RunTasks() > 0;
    auto r = Progress();
    if (!r.ok()) {
      FABPS_LOG(ERROR) << "progress thread: " << r.status().ToString();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    bool busy = r.value() > 0 || ran;
    if (!busy) {
      std::lock_guard<std::mutex> l(ops_mu_);
      busy = hot_inflight_ > 0;
    }
    if (busy) {
      last_activity = now;
      continue;
    }
    if (now - last_activity < (can_block_ ? kHot : kHotPolling)) {
      sched_yield();
      continue;
    }
    if (!can_block_) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    auto b = BlockOnCq();
    if (!b.ok()) {
      FABPS_LOG(ERROR) << "progress thread: " << b.status().ToString();
      continue;
    }
    if (b.value() > 0) last_activity = std::chrono::steady_clock::now();
  }
}

}  // namespace fabps::transport::ofi

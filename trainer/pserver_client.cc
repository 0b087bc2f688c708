// PServerClient composed of its parts: discovery (where the pservers are),
// connections (control plane and registration), the init election, the
// endpoint with its credit handler, the landing slots, and the one block
// iterator that both directions of the data path share.
#include "trainer/pserver_client.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "base/copy_bytes.h"
#include "base/log.h"
#include "pserver/rows_slot.h"
#include "pserver/rpc/init_config.h"
#include "pserver/wire.h"
#include "trainer/block_walk.h"
#include "trainer/init_election.h"
#include "trainer/pserver_connection.h"
#include "trainer/pserver_discovery.h"
#include "trainer/push_slots.h"
#include "trainer/row_groups.h"
#include "trainer/transfer_handle.h"
#include "transport/fabric.h"
#include "transport/registration_cache.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

struct PServerClient::Impl {
  // What this client knows of one pserver's data plane after registering.
  struct Peer {
    transport::PeerId id = 0;
    PServerRegistration reg;
  };

  PServerClientOptions options;
  std::mutex mu;  // serializes the public calls
  std::unique_ptr<PServerDiscovery> discovery;
  std::vector<std::unique_ptr<PServerConnection>> conns;  // by index
  std::unique_ptr<transport::Fabric> fabric;
  std::unique_ptr<transport::Endpoint> endpoint;
  std::vector<char> credit_buf;
  std::unique_ptr<transport::MemoryRegion> credit_mr;
  std::unique_ptr<PushSlots> slots;
  std::vector<Peer> peers;  // by index, valid while `ready`
  std::unique_ptr<Layout> layout;
  bool ready = false;
  // Set when an operation failed in a way that may mean a pserver died or
  // moved; the next data call reconnects first.
  bool broken = false;
  std::unique_ptr<InitElection> election;
  // Registered memory this client packs rows pushes and reads in: slot s of
  // pserver i is mirrored by [s * slot_bytes, (s + 1) * slot_bytes) of
  // staging[i] (used while landing slot s is taken). Made on the first rows
  // call after a registration.
  struct Staging {
    void* data = nullptr;
    size_t bytes = 0;
    std::unique_ptr<transport::MemoryRegion> mr;
    ~Staging() {
      mr.reset();
      if (data) ::munmap(data, bytes);
    }
  };
  std::vector<std::unique_ptr<Staging>> staging;  // by pserver
  struct PendingParam {
    ParamSpec spec;
    std::string values;
  };
  std::vector<PendingParam> init_params;

  Status OpenConnections(const std::vector<std::string>& addresses) {
    std::vector<std::unique_ptr<PServerConnection>> fresh;
    for (size_t i = 0; i < addresses.size(); i++) {
      FABPS_ASSIGN_OR_RETURN(auto c, PServerConnection::Open(
                                         static_cast<uint32_t>(i), addresses[i],
                                         options.rpc_timeout_ms));
      fresh.push_back(std::move(c));
    }
    conns = std::move(fresh);
    options.addresses = addresses;
    return Status::OK();
  }

  Status OpenEndpoint() {
    FABPS_ASSIGN_OR_RETURN(
        endpoint, fabric->CreateEndpoint(transport::ProgressMode::kThread));
    PushSlots* table = slots.get();
    endpoint->SetImmediateHandler([table](const transport::ImmediateEvent& e) {
      table->OnCredit(e.data);
    });
    return Status::OK();
  }

  Status Register(uint32_t i, Deadline deadline) {
    ps::TrainerHello hello;
    hello.trainer_id = options.trainer_id;
    hello.fabric_address = endpoint->address();
    hello.credit_region = credit_mr->remote().Serialize();
    hello.provider = fabric->provider();
    hello.max_slot_bytes = 0;
    FABPS_ASSIGN_OR_RETURN(PServerRegistration reg,
                           conns[i]->Register(hello, deadline));
    FABPS_ASSIGN_OR_RETURN(transport::PeerId id,
                           endpoint->AddPeer(reg.fabric_address));
    slots->Reset(i, reg.num_slots);
    peers[i] = Peer{id, std::move(reg)};
    if (staging.size() != peers.size()) staging.resize(peers.size());
    staging[i].reset();
    return Status::OK();
  }

  // With a store: looks the pservers up again and, where one now serves
  // at another address (restarted elsewhere), opens fresh connections.
  // A job re-sharded to another pserver count (cmd/reshard) is followed:
  // pushes in flight fail, the endpoint is made afresh (its progress thread
  // refers to the slot table, which is sized by the count) and the next
  // EnsureReady learns the new layout.
  Status Rediscover(Deadline deadline) {
    if (!discovery->dynamic()) return Status::OK();
    FABPS_ASSIGN_OR_RETURN(std::vector<std::string> addrs,
                           discovery->Resolve(deadline));
    if (addrs.size() != conns.size()) {
      FABPS_LOG(INFO) << "trainer " << options.trainer_id
                      << ": the job now has " << addrs.size()
                      << " pservers (was " << conns.size()
                      << "): following its new layout";
      endpoint.reset();  // joins the progress thread
      ready = false;
      slots->FailAll(Status::Unavailable("the job's pserver count changed"));
      slots = std::make_unique<PushSlots>(addrs.size());
      staging.clear();
      for (auto& c : conns) c->Close();
      FABPS_RETURN_IF_ERROR(OpenConnections(addrs));
      return OpenEndpoint();
    }
    if (addrs == options.addresses) return Status::OK();
    FABPS_LOG(INFO) << "trainer " << options.trainer_id
                    << ": the store names new pserver addresses";
    return OpenConnections(addrs);
  }

  // Waits until the parameters exist, learns the layout and registers with
  // every pserver. While pserver 0 cannot be reached, the store is asked
  // again for its address (it may have been restarted elsewhere while this
  // trainer waited for the initialization).
  Status EnsureReady(Deadline deadline) {
    if (ready) return Status::OK();
    ps::InitConfig config;
    Status st = RetryWhileNotReady(
        [&] {
          Status s = conns[0]->Call(
              "GetInitConfig", deadline,
              [&](ps::PServerClient& c) { c.GetInitConfig(config); });
          if (s.code() != Status::Code::kUnavailable) return s;
          Status found = Rediscover(deadline);
          return found.ok() ? s : found;
        },
        deadline, 50);
    if (!st.ok()) {
      return IsNotReady(st)
                 ? st.WithContext("waiting for parameter initialization")
                 : st;
    }
    FABPS_ASSIGN_OR_RETURN(pserver::InitSpec spec,
                           pserver::InitSpecFromThrift(config));
    if (spec.layout.num_pservers() != conns.size()) {
      // Re-sharded between the lookup and this answer: the next call
      // reconnects and looks again.
      return Status::Unavailable(
          "the job's layout has " + std::to_string(spec.layout.num_pservers()) +
          " pservers, this client knows " + std::to_string(conns.size()) +
          " (re-sharded meanwhile)");
    }
    layout = std::make_unique<Layout>(std::move(spec.layout));
    peers.assign(conns.size(), Peer{});
    for (uint32_t i = 0; i < conns.size(); i++)
      FABPS_RETURN_IF_ERROR(Register(i, deadline));
    ready = true;
    return Status::OK();
  }

  // Drops every connection and registration and builds them again: pushes
  // in flight fail with Unavailable, then the client waits (until
  // `deadline`) for the pservers to serve and registers anew. A fresh
  // endpoint is used because some providers (shm) keep an endpoint stuck
  // behind a transfer to a dead peer.
  Status Reconnect(Deadline deadline) {
    endpoint.reset();  // joins the progress thread: no credit after this
    ready = false;
    slots->FailAll(Status::Unavailable("pserver connection was reset"));
    for (auto& c : conns) c->Close();
    FABPS_RETURN_IF_ERROR(Rediscover(deadline));
    if (!endpoint) FABPS_RETURN_IF_ERROR(OpenEndpoint());
    FABPS_LOG(INFO) << "trainer " << options.trainer_id
                    << ": reconnecting to the pservers";
    FABPS_RETURN_IF_ERROR(EnsureReady(deadline));
    broken = false;
    return Status::OK();
  }

  // Data calls start here. A failure to get ready counts like a failed
  // call: the next one reconnects, which asks the store for the addresses
  // again (a pserver may have moved between this client's lookup and its
  // registration, while pserver 0 still answers at its old address).
  Status Prepare(Deadline deadline) {
    return Note(broken ? Reconnect(deadline) : EnsureReady(deadline));
  }

  // Whether a data call on `buffers` would start without waiting (see
  // TrySendGrads): ready, no reconnect due, and for a push a free slot on
  // each block's pserver. A buffer the layout does not know counts as
  // startable: the call refuses it before anything moves.
  bool StartsAtOnce(const std::vector<ParamBuffer>& buffers, bool push) {
    if (broken || !ready) return false;
    if (!push) return true;
    std::vector<uint32_t> need(peers.size(), 0);
    for (const ParamBuffer& b : buffers) {
      auto param = layout->FindParam(b.name);
      if (!param.ok()) return true;
      for (uint32_t id = layout->FirstBlockOf(*param);
           id < layout->num_blocks() && layout->blocks()[id].param == *param;
           id++) {
        need.at(layout->blocks()[id].pserver)++;
      }
    }
    return slots->HasFree(need);
  }

  // Records that `s` failed; returns it.
  Status Note(const Status& s) {
    if (!s.ok() && s.code() != Status::Code::kInvalidArgument &&
        s.code() != Status::Code::kNotFound) {
      broken = true;
    }
    return s;
  }

  // Writes one block of a push into a free landing slot of its pserver.
  Status PushBlock(const BlockSpan& b,
                   const std::shared_ptr<TransferHandle>& push,
                   Deadline deadline) {
    return PushBlockThen(b, push, deadline, nullptr);
  }

  // PushBlock with what follows its credit (PushSlots::AfterCredit).
  Status PushBlockThen(const BlockSpan& b,
                       const std::shared_ptr<TransferHandle>& push,
                       Deadline deadline, PushSlots::AfterCredit then) {
    const Peer& p = peers[b.pserver];
    if (b.bytes > p.reg.slot_bytes)
      return Status::Corruption("block larger than the pserver's slots");
    FABPS_ASSIGN_OR_RETURN(uint32_t slot,
                           slots->Acquire(b.pserver, b.block, push, deadline,
                                          /*hold=*/false, std::move(then)));
    return WriteIntoSlot(b.pserver, slot, *b.region, b.offset, b.bytes,
                         size_t{slot} * p.reg.slot_bytes,
                         {p.reg.trainer_index, slot, b.block}, push, deadline);
  }

  // Writes `len` bytes of `region` at `offset` into landing slot `slot` of
  // pserver `ps` at `remote_offset`, with the push word `imm`: one credit
  // part and one operation of `h`. When the write cannot start nothing
  // landed, so the slot is released and the part fails.
  Status WriteIntoSlot(uint32_t ps, uint32_t slot,
                       const transport::MemoryRegion& region, size_t offset,
                       size_t len, size_t remote_offset,
                       const pserver::wire::PushImm& imm,
                       const std::shared_ptr<TransferHandle>& h,
                       Deadline deadline) {
    const Peer& p = peers[ps];
    h->AddCreditPart();
    auto w =
        endpoint->Write(p.id, region, offset, len, p.reg.landing, remote_offset,
                        pserver::wire::EncodePush(imm), deadline);
    if (!w.ok()) {
      slots->Release(ps, slot);
      h->PartDone(w.status());
      return w.status();
    }
    h->AddOperation(*w);
    return Status::OK();
  }

  // Sync mode: whether the pservers run it (known once ready).
  bool sync() const { return !peers.empty() && peers[0].reg.sync; }
  Status CheckMode(bool with_step) {
    for (size_t i = 0; i < peers.size(); i++) {
      if (peers[i].reg.sync != with_step) {
        return Status::FailedPrecondition(
            with_step ? "a push with a step: pserver " + std::to_string(i) +
                            " runs in async mode"
                      : std::string("the pservers run in sync mode "
                                    "(--mode sync): SendGrads and SendRows "
                                    "need a step"));
      }
    }
    return Status::OK();
  }

  // Sync mode: copies one block behind a step header into the staging
  // mirror of a free landing slot and writes both with one RMA write (the
  // push word has no room for a step).
  Status PushStepBlock(const BlockSpan& b, uint64_t step,
                       const std::shared_ptr<TransferHandle>& push,
                       Deadline deadline) {
    const Peer& p = peers[b.pserver];
    const size_t len = pserver::wire::kStepHeaderBytes + b.bytes;
    if (len > p.reg.slot_bytes)
      return Status::Corruption("block larger than the pserver's slots");
    FABPS_ASSIGN_OR_RETURN(Staging * st, StagingOf(b.pserver));
    FABPS_ASSIGN_OR_RETURN(uint32_t slot,
                           slots->Acquire(b.pserver, b.block, push, deadline));
    const size_t off = size_t{slot} * p.reg.slot_bytes;
    char* at = static_cast<char*>(st->data) + off;
    pserver::wire::StepHeader h;
    h.kind = static_cast<uint32_t>(pserver::wire::PushKind::kDenseStep);
    h.block = b.block;
    h.step = step;
    std::memcpy(at, &h, sizeof(h));
    CopyBytes(at + sizeof(h),
              static_cast<const char*>(b.region->data()) + b.offset, b.bytes);
    return WriteIntoSlot(b.pserver, slot, *st->mr, off, len, off,
                         {p.reg.trainer_index, slot, b.block,
                          pserver::wire::PushKind::kDenseStep},
                         push, deadline);
  }

  Result<std::shared_ptr<TransferHandle>> SendStep(
      const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    FABPS_RETURN_IF_ERROR(CheckMode(true));
    auto handle = std::make_shared<TransferHandle>();
    FABPS_RETURN_IF_ERROR(Note(
        WalkBlocks(*layout, fabric->cache(), grads, [&](const BlockSpan& b) {
          return PushStepBlock(b, step, handle, deadline);
        })));
    return handle;
  }

  Result<uint64_t> SyncStep(Deadline deadline) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    FABPS_RETURN_IF_ERROR(CheckMode(true));
    uint64_t step = 0;
    for (auto& c : conns) {
      ps::PsStatus status;
      FABPS_RETURN_IF_ERROR(Note(c->Call(
          "GetStatus", [&](ps::PServerClient& pc) { pc.GetStatus(status); })));
      if (status.sync_step < 0)
        return Status::Corruption("pserver reports a negative sync step");
      step = std::max(step, static_cast<uint64_t>(status.sync_step));
    }
    return step;
  }

  // Where block `b` lives in its pserver's arena.
  Result<uint64_t> ArenaOffset(const BlockSpan& b) const {
    const Peer& p = peers[b.pserver];
    auto loc = p.reg.blocks.find(b.block);
    if (loc == p.reg.blocks.end() || loc->second.second != b.bytes) {
      return Status::Corruption("pserver " + std::to_string(b.pserver) +
                                " does not list block " +
                                std::to_string(b.block) + " with " +
                                std::to_string(b.bytes) + " bytes");
    }
    return loc->second.first;
  }

  // Starts reading one block of a pull from its pserver's arena.
  Status PullBlock(const BlockSpan& b,
                   const std::shared_ptr<TransferHandle>& pull,
                   Deadline deadline) {
    FABPS_ASSIGN_OR_RETURN(uint64_t at, ArenaOffset(b));
    const Peer& p = peers[b.pserver];
    auto c = endpoint->Read(p.id, *b.region, b.offset, b.bytes, p.reg.arena, at,
                            deadline);
    if (!c.ok()) return c.status();
    pull->AddOperation(*c);
    return Status::OK();
  }

  // One block of a PushPull's `params`: everything its read needs, kept
  // until the read is posted (after the walk, on the progress thread).
  struct ReadAfterPush {
    transport::PeerId peer = 0;
    transport::RemoteRegion arena;
    uint64_t arena_offset = 0;
    std::shared_ptr<transport::MemoryRegion> region;
    size_t offset = 0;
    size_t bytes = 0;

    Result<transport::Completion> Start(transport::Endpoint* ep,
                                        Deadline deadline) const {
      return ep->Read(peer, *region, offset, bytes, arena, arena_offset,
                      deadline);
    }
  };

  // A credit part handed to a task on the progress thread: finished when
  // the task runs, or with Unavailable when the endpoint closes first and
  // drops the task unrun.
  class PartOnProgressThread {
   public:
    explicit PartOnProgressThread(std::shared_ptr<TransferHandle> h)
        : h_(std::move(h)) {}
    ~PartOnProgressThread() {
      if (h_) {
        h_->PartDone(
            Status::Unavailable("endpoint closed before a pull could start"),
            /*from_pserver=*/false);
      }
    }
    PartOnProgressThread(const PartOnProgressThread&) = delete;
    PartOnProgressThread& operator=(const PartOnProgressThread&) = delete;
    TransferHandle& handle() { return *h_; }
    void Done(const Status& s) {
      h_->PartDone(s, /*from_pserver=*/false);
      h_.reset();
    }

   private:
    std::shared_ptr<TransferHandle> h_;
  };

  // What a block's credit starts in a PushPull: the read of its new
  // values, posted from the progress thread that delivered the credit (a
  // task queued there, not inside the completion dispatch, so that a busy
  // provider can be driven while the post retries). A refused push is not
  // read back; neither is anything of an abandoned transfer.
  PushSlots::AfterCredit ReadAfterCredit(std::shared_ptr<TransferHandle> h,
                                         ReadAfterPush r, Deadline deadline) {
    transport::Endpoint* ep = endpoint.get();
    return [ep, h = std::move(h), r = std::move(r),
            deadline](const Status& s) mutable {
      if (!s.ok()) {
        h->PartDone(s);
        return;
      }
      if (h->abandoned()) {
        h->PartDone(Status::Cancelled("transfer abandoned"),
                    /*from_pserver=*/false);
        return;
      }
      auto part = std::make_shared<PartOnProgressThread>(std::move(h));
      ep->RunOnProgressThread([ep, part, r = std::move(r), deadline] {
        if (part->handle().abandoned()) {
          part->Done(Status::Cancelled("transfer abandoned"));
          return;
        }
        auto c = r.Start(ep, deadline);
        if (c.ok()) part->handle().AddOperation(*c);
        part->Done(c.status());
      });
    };
  }

  // SendGrads and GetParamsAsync in one transfer: a block of a parameter
  // in both lists is read once its push is applied (its credit is back),
  // while later blocks are still being pushed.
  Result<std::shared_ptr<TransferHandle>> PushPull(
      const std::vector<ParamBuffer>& grads,
      const std::vector<ParamBuffer>& params, Deadline deadline) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    FABPS_RETURN_IF_ERROR(CheckMode(false));
    auto handle = std::make_shared<TransferHandle>();
    std::unordered_map<uint32_t, ReadAfterPush> reads;
    FABPS_RETURN_IF_ERROR(Note(WalkBlocks(
        *layout, fabric->cache(), params, [&](const BlockSpan& b) -> Status {
          FABPS_ASSIGN_OR_RETURN(uint64_t at, ArenaOffset(b));
          const Peer& p = peers[b.pserver];
          reads[b.block] = ReadAfterPush{
              p.id, p.reg.arena, at, *b.region_owner, b.offset, b.bytes};
          return Status::OK();
        })));
    Status pushed =
        WalkBlocks(*layout, fabric->cache(), grads, [&](const BlockSpan& b) {
          PushSlots::AfterCredit then;
          auto r = reads.find(b.block);
          if (r != reads.end()) {
            then = ReadAfterCredit(handle, std::move(r->second), deadline);
            reads.erase(r);
          }
          return PushBlockThen(b, handle, deadline, std::move(then));
        });
    if (!pushed.ok()) {
      // Blocks already pushed must not be read into buffers the caller
      // gets back with this error.
      handle->Abandon();
      return Note(pushed);
    }
    // Parameters only pulled: read at once.
    for (auto& [block, r] : reads) {
      auto c = r.Start(endpoint.get(), deadline);
      if (!c.ok()) {
        handle->Abandon();
        return Note(c.status());
      }
      handle->AddOperation(*c);
    }
    return handle;
  }

  // Prepares, then runs `block` on every block of `buffers`.
  Result<std::shared_ptr<TransferHandle>> Transfer(
      const std::vector<ParamBuffer>& buffers, Deadline deadline,
      Status (Impl::*block)(const BlockSpan&,
                            const std::shared_ptr<TransferHandle>&, Deadline)) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    auto handle = std::make_shared<TransferHandle>();
    FABPS_RETURN_IF_ERROR(Note(
        WalkBlocks(*layout, fabric->cache(), buffers, [&](const BlockSpan& b) {
          return (this->*block)(b, handle, deadline);
        })));
    return handle;
  }

  Result<Staging*> StagingOf(uint32_t i) {
    const Peer& p = peers[i];
    const size_t want = size_t{p.reg.num_slots} * p.reg.slot_bytes;
    if (staging[i] && staging[i]->bytes == want) return staging[i].get();
    auto st = std::make_unique<Staging>();
    st->data = ::mmap(nullptr, want, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (st->data == MAP_FAILED) {
      st->data = nullptr;
      return PosixError("mmap rows staging", errno);
    }
    st->bytes = want;
    FABPS_ASSIGN_OR_RETURN(st->mr, fabric->Register(st->data, want));
    staging[i] = std::move(st);
    return staging[i].get();
  }

  // What a rows call checks before anything moves: the parameter takes
  // rows and the values buffer has exactly n rows.
  struct RowsTarget {
    uint32_t param = 0;
    size_t row_bytes = 0;  // R * element size
  };
  Result<RowsTarget> CheckRows(const char* what, const std::string& name,
                               const int64_t* ids, size_t n, const void* values,
                               size_t bytes) {
    auto p = layout->FindParam(name);
    if (!p.ok()) {
      return Status::NotFound(std::string(what) + ": no parameter '" + name +
                              "'");
    }
    const ParamSpec& spec = layout->params()[*p];
    if (!pserver::TakesRows(spec)) {
      return Status::InvalidArgument(
          std::string(what) + ": parameter '" + name + "' has rank " +
          std::to_string(spec.shape.size()) + ": rows need rank >= 2");
    }
    RowsTarget t;
    t.param = *p;
    t.row_bytes = layout->blocks()[layout->FirstBlockOf(*p)].row_elements *
                  pserver::DTypeSize(spec.dtype);
    if (bytes != n * t.row_bytes || (n > 0 && (ids == nullptr || !values))) {
      return Status::InvalidArgument(
          std::string(what) + " '" + name + "': " + std::to_string(bytes) +
          " bytes of values for " + std::to_string(n) + " rows of " +
          std::to_string(t.row_bytes) + " bytes");
    }
    return t;
  }

  // Packs the header (kRowsStep: a step header and the count; else a rows
  // header) and the group's ids into the staging copy of a slot and
  // returns where its values go.
  static char* PackHeader(char* at, pserver::wire::PushKind kind, uint64_t step,
                          const RowGroup& g) {
    namespace wire = pserver::wire;
    const uint64_t count = g.ids.size();
    size_t ids_at = wire::kRowsHeaderBytes;
    if (kind == wire::PushKind::kRowsStep) {
      wire::StepHeader h;
      h.kind = static_cast<uint32_t>(kind);
      h.block = g.block;
      h.step = step;
      std::memcpy(at, &h, sizeof(h));
      std::memcpy(at + wire::kStepHeaderBytes, &count, sizeof(count));
      ids_at = wire::kStepRowsIdsOffset;
    } else {
      wire::RowsHeader h;
      h.kind = static_cast<uint32_t>(kind);
      h.block = g.block;
      h.count = count;
      std::memcpy(at, &h, sizeof(h));
    }
    if (count > 0) std::memcpy(at + ids_at, g.ids.data(), count * 8);
    return at + ids_at + count * 8;
  }

  template <typename T>
  static void SumInto(char* dst, const char* src, size_t row_bytes) {
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    for (size_t i = 0; i < row_bytes / sizeof(T); i++) d[i] += s[i];
  }

  // Writes `g` (header, ids, and for a push the summed rows of `values`)
  // into a landing slot of its pserver; `step` only for kRowsStep.
  Status SendRowsGroup(const RowGroup& g, pserver::wire::PushKind kind,
                       uint64_t step, const RowsTarget& t, const char* values,
                       const std::shared_ptr<TransferHandle>& h,
                       Deadline deadline, uint32_t* slot_out) {
    const Peer& p = peers[g.pserver];
    const size_t need =
        kind == pserver::wire::PushKind::kRowsStep
            ? pserver::wire::StepRowsSlotBytes(g.ids.size(), 1, t.row_bytes)
            : pserver::wire::RowsSlotBytes(g.ids.size(), 1, t.row_bytes);
    if (need > p.reg.slot_bytes) {
      return Status::Corruption("pserver " + std::to_string(g.pserver) +
                                "'s slots are too small for the rows of "
                                "block " +
                                std::to_string(g.block));
    }
    FABPS_ASSIGN_OR_RETURN(Staging * st, StagingOf(g.pserver));
    const bool read = kind == pserver::wire::PushKind::kRowsRead;
    FABPS_ASSIGN_OR_RETURN(uint32_t slot,
                           slots->Acquire(g.pserver, g.block, h, deadline,
                                          /*hold=*/read));
    const size_t off = size_t{slot} * p.reg.slot_bytes;
    char* at = static_cast<char*>(st->data) + off;
    char* out = PackHeader(at, kind, step, g);
    size_t len = static_cast<size_t>(out - at);
    if (!read) {
      // Rows of repeated ids add up in caller order.
      const bool f32 = layout->params()[t.param].dtype == DType::kFloat32;
      std::vector<bool> written(g.ids.size(), false);
      for (const auto& [pos, idx] : g.entries) {
        const char* src = values + pos * t.row_bytes;
        char* dst = out + size_t{idx} * t.row_bytes;
        if (!written[idx]) {
          std::memcpy(dst, src, t.row_bytes);
          written[idx] = true;
        } else if (f32) {
          SumInto<float>(dst, src, t.row_bytes);
        } else {
          SumInto<double>(dst, src, t.row_bytes);
        }
      }
      len = need;
    }
    FABPS_RETURN_IF_ERROR(
        WriteIntoSlot(g.pserver, slot, *st->mr, off, len, off,
                      {p.reg.trainer_index, slot, g.block, kind}, h, deadline));
    *slot_out = slot;
    return Status::OK();
  }

  // A rows push; with a step (sync mode) every block of the parameter gets
  // this trainer's share of the step, empty where no row falls in it.
  Result<std::shared_ptr<TransferHandle>> SendRows(
      const std::string& name, const int64_t* ids, size_t n, const void* values,
      size_t bytes, std::optional<uint64_t> step, Deadline deadline) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    FABPS_RETURN_IF_ERROR(CheckMode(step.has_value()));
    FABPS_ASSIGN_OR_RETURN(RowsTarget t,
                           CheckRows("SendRows", name, ids, n, values, bytes));
    FABPS_ASSIGN_OR_RETURN(
        std::vector<RowGroup> groups,
        GroupRows(*layout, t.param, ids, n, /*every_block=*/step.has_value()));
    const auto kind = step ? pserver::wire::PushKind::kRowsStep
                           : pserver::wire::PushKind::kRows;
    auto handle = std::make_shared<TransferHandle>();
    for (const RowGroup& g : groups) {
      uint32_t slot = 0;
      FABPS_RETURN_IF_ERROR(Note(SendRowsGroup(g, kind, step.value_or(0), t,
                                               static_cast<const char*>(values),
                                               handle, deadline, &slot)));
    }
    return handle;
  }

  // The groups of one rows read whose answers wait in held slots.
  struct RowsRead {
    TransferHandle* handle = nullptr;  // the pull these slots are held for
    size_t row_bytes = 0;
    char* out = nullptr;  // the caller's values
    struct Part {
      RowGroup group;
      uint32_t slot = 0;
    };
    std::vector<Part> parts;
  };

  // Reads the rows out of every held slot of `r` (when `so_far` is OK),
  // copies them to the caller's positions and frees the slots.
  Status FinishRowsRead(RowsRead& r, Status so_far, Deadline deadline) {
    std::vector<transport::Completion> reads;
    for (const auto& part : r.parts) {
      if (!so_far.ok()) break;
      const uint32_t i = part.group.pserver;
      if (!slots->Held(i, part.slot, r.handle)) {
        so_far = Status::Unavailable(
            "the connection was reset before the rows were read");
        break;
      }
      const Peer& p = peers[i];
      const size_t off = size_t{part.slot} * p.reg.slot_bytes +
                         pserver::wire::RowsValuesOffset(part.group.ids.size());
      auto c = endpoint->Read(p.id, *staging[i]->mr, off,
                              part.group.ids.size() * r.row_bytes,
                              p.reg.landing, off, deadline);
      if (!c.ok()) {
        so_far = c.status();
        break;
      }
      reads.push_back(*c);
    }
    for (auto& c : reads) {
      Status s = c.Wait(deadline);
      if (so_far.ok() && !s.ok()) so_far = s;
    }
    for (const auto& part : r.parts) {
      const uint32_t i = part.group.pserver;
      if (so_far.ok()) {
        const char* in = static_cast<const char*>(staging[i]->data) +
                         size_t{part.slot} * peers[i].reg.slot_bytes +
                         pserver::wire::RowsValuesOffset(part.group.ids.size());
        for (const auto& [pos, idx] : part.group.entries) {
          std::memcpy(r.out + pos * r.row_bytes, in + size_t{idx} * r.row_bytes,
                      r.row_bytes);
        }
      }
      slots->ReleaseHeld(i, part.slot, r.handle);
    }
    r.parts.clear();
    return so_far;
  }

  Result<std::shared_ptr<TransferHandle>> GetRows(const std::string& name,
                                                  const int64_t* ids, size_t n,
                                                  void* values, size_t bytes,
                                                  Deadline deadline) {
    FABPS_RETURN_IF_ERROR(Prepare(deadline));
    FABPS_ASSIGN_OR_RETURN(RowsTarget t,
                           CheckRows("GetRows", name, ids, n, values, bytes));
    FABPS_ASSIGN_OR_RETURN(std::vector<RowGroup> groups,
                           GroupRows(*layout, t.param, ids, n));
    auto handle = std::make_shared<TransferHandle>();
    auto read = std::make_shared<RowsRead>();
    read->handle = handle.get();
    read->row_bytes = t.row_bytes;
    read->out = static_cast<char*>(values);
    auto finish = [this, read](const Status& s, Deadline d) {
      return FinishRowsRead(*read, s, d);
    };
    std::vector<uint32_t> held(peers.size(), 0);
    for (RowGroup& g : groups) {
      if (held[g.pserver] == peers[g.pserver].reg.num_slots) {
        // Every slot of that pserver holds an answer of this pull: take
        // them out before asking for more.
        handle->SetFinish(finish);
        bool from_pserver = false;
        FABPS_RETURN_IF_ERROR(Note(handle->Wait(deadline, &from_pserver)));
        std::fill(held.begin(), held.end(), 0);
      }
      uint32_t slot = 0;
      Status s = SendRowsGroup(g, pserver::wire::PushKind::kRowsRead, 0, t,
                               nullptr, handle, deadline, &slot);
      if (!s.ok()) {
        FinishRowsRead(*read, s, deadline);  // frees what is held already
        return Note(s);
      }
      held[g.pserver]++;
      read->parts.push_back({std::move(g), slot});
    }
    handle->SetFinish(finish);
    return handle;
  }

  Status FinishInit(Deadline deadline) {
    // Every RPC below starts only before `deadline`.
    auto in_time = [&](const char* what) {
      return deadline.Expired()
                 ? Status::TimedOut(std::string("initialization not finished "
                                                "by the deadline (at ") +
                                    what + ")")
                 : Status::OK();
    };
    std::vector<ParamSpec> specs;
    for (const auto& p : init_params) specs.push_back(p.spec);
    FABPS_ASSIGN_OR_RETURN(Layout built,
                           Layout::Build(specs, options.block_elements,
                                         static_cast<uint32_t>(conns.size())));
    pserver::InitSpec spec{built, options.default_rule, options.rules};
    ps::InitConfig config = pserver::InitSpecToThrift(spec);
    for (auto& s : conns) {
      FABPS_RETURN_IF_ERROR(in_time("InitParams"));
      Status st = s->Call("InitParams", [&](ps::PServerClient& c) {
        c.InitParams(options.trainer_id, config);
      });
      if (st.code() == Status::Code::kAlreadyExists) {
        election->Done();
        return Status::OK();
      }
      FABPS_RETURN_IF_ERROR(st);
    }
    for (const auto& b : built.blocks()) {
      const auto& p = init_params[b.param];
      size_t esize = pserver::DTypeSize(p.spec.dtype);
      std::string values =
          p.values.substr(b.first_element * esize, b.num_elements * esize);
      FABPS_RETURN_IF_ERROR(in_time("InitBlock"));
      FABPS_RETURN_IF_ERROR(
          conns[b.pserver]->Call("InitBlock", [&](ps::PServerClient& c) {
            c.InitBlock(options.trainer_id, static_cast<int32_t>(b.id), values);
          }));
    }
    for (auto& s : conns) {
      bool first = false;
      FABPS_RETURN_IF_ERROR(in_time("FinishInitParams"));
      FABPS_RETURN_IF_ERROR(
          s->Call("FinishInitParams", [&](ps::PServerClient& c) {
            first = c.FinishInitParams(options.trainer_id);
          }));
      if (!first) {
        FABPS_LOG(INFO) << "pserver " << s->index()
                        << " was already initialized";
      }
    }
    init_params.clear();
    election->Done();
    return Status::OK();
  }
};

PServerClient::PServerClient(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

PServerClient::~PServerClient() {
  // The endpoint (and its progress thread, which calls OnCredit) goes first.
  if (impl_) impl_->endpoint.reset();
}

Result<std::unique_ptr<PServerClient>> PServerClient::Connect(
    const PServerClientOptions& options) {
  if (options.addresses.empty() && options.store_spec.empty())
    return Status::InvalidArgument("no pserver addresses and no store");
  if (options.addresses.size() > pserver::wire::kMaxPserverIndex) {
    return Status::InvalidArgument("too many pservers");
  }
  if (options.trainer_id < 0)
    return Status::InvalidArgument("trainer_id must be >= 0 (0: random)");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.trainer_id == 0)
    impl->options.trainer_id = RandomTrainerId();
  if (options.addresses.empty()) {
    coord::StoreOptions so;
    so.spec = options.store_spec;
    so.job = options.job;
    FABPS_ASSIGN_OR_RETURN(auto store, coord::OpenStore(so));
    impl->discovery = std::make_unique<PServerDiscovery>(std::move(store));
  } else {
    impl->discovery = std::make_unique<PServerDiscovery>(options.addresses);
  }
  FABPS_ASSIGN_OR_RETURN(
      std::vector<std::string> addresses,
      impl->discovery->Resolve(Deadline::InMs(options.init_wait_ms)));
  FABPS_RETURN_IF_ERROR(impl->OpenConnections(addresses));
  impl->election = std::make_unique<InitElection>(impl->discovery->store(),
                                                  impl->options.trainer_id);
  transport::FabricOptions fo;
  fo.provider = options.provider;
  fo.interface_address = options.interface_address;
  FABPS_ASSIGN_OR_RETURN(impl->fabric, transport::OpenFabric(fo));
  impl->credit_buf.resize(64);
  FABPS_ASSIGN_OR_RETURN(
      impl->credit_mr,
      impl->fabric->Register(impl->credit_buf.data(), impl->credit_buf.size()));
  impl->slots = std::make_unique<PushSlots>(addresses.size());
  FABPS_RETURN_IF_ERROR(impl->OpenEndpoint());
  return std::unique_ptr<PServerClient>(new PServerClient(std::move(impl)));
}

Result<bool> PServerClient::BeginInitParams(bool selected, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  Impl& m = *impl_;
  FABPS_ASSIGN_OR_RETURN(bool won,
                         m.election->Begin(selected, m.conns, deadline));
  if (won) m.init_params.clear();
  return won;
}

Result<bool> PServerClient::BeginInitParams(bool selected) {
  return BeginInitParams(selected, Deadline::InMs(impl_->options.init_wait_ms));
}

Status PServerClient::InitParam(const ParamSpec& spec, const void* data,
                                size_t bytes) {
  std::lock_guard<std::mutex> l(impl_->mu);
  uint64_t elements = 1;
  for (uint64_t d : spec.shape) elements *= d;
  if (bytes != elements * pserver::DTypeSize(spec.dtype) ||
      (bytes > 0 && data == nullptr)) {
    return Status::InvalidArgument(
        "InitParam '" + spec.name + "': " + std::to_string(bytes) +
        " bytes for " + std::to_string(elements) + " elements");
  }
  impl_->init_params.push_back(
      {spec, std::string(static_cast<const char*>(data), bytes)});
  return Status::OK();
}

Status PServerClient::FinishInitParams() {
  return FinishInitParams(Deadline::InMs(impl_->options.init_wait_ms));
}

Status PServerClient::FinishInitParams(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  Status s = impl_->FinishInit(deadline);
  // Let another trainer (or a later call) take the election over.
  if (!s.ok()) impl_->election->Abandon();
  return s;
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendGrads(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->Prepare(deadline));
  FABPS_RETURN_IF_ERROR(impl_->CheckMode(false));
  return impl_->Transfer(grads, deadline, &Impl::PushBlock);
}

Result<std::shared_ptr<PushHandle>> PServerClient::TrySendGrads(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (!impl_->StartsAtOnce(grads, /*push=*/true))
    return std::shared_ptr<PushHandle>();
  FABPS_RETURN_IF_ERROR(impl_->CheckMode(false));
  return impl_->Transfer(grads, deadline, &Impl::PushBlock);
}

Result<std::shared_ptr<PullHandle>> PServerClient::TryGetParamsAsync(
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (!impl_->StartsAtOnce(params, /*push=*/false))
    return std::shared_ptr<PullHandle>();
  return impl_->Transfer(params, deadline, &Impl::PullBlock);
}

Result<std::shared_ptr<TransferHandle>> PServerClient::PushPull(
    const std::vector<ParamBuffer>& grads,
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->PushPull(grads, params, deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendGrads(
    const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->SendStep(grads, step, deadline);
}

Result<uint64_t> PServerClient::SyncStep(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->SyncStep(deadline);
}

Result<std::shared_ptr<PullHandle>> PServerClient::GetParamsAsync(
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->Transfer(params, deadline, &Impl::PullBlock);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    const void* values, size_t bytes, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->SendRows(name, row_ids, num_rows, values, bytes, std::nullopt,
                         deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    const void* values, size_t bytes, uint64_t step, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->SendRows(name, row_ids, num_rows, values, bytes, step,
                         deadline);
}

Result<std::shared_ptr<PullHandle>> PServerClient::GetRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    void* values, size_t bytes, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->GetRows(name, row_ids, num_rows, values, bytes, deadline);
}

Status PServerClient::Wait(const std::shared_ptr<TransferHandle>& handle,
                           Deadline deadline) {
  if (!handle) return Status::InvalidArgument("null transfer handle");
  std::lock_guard<std::mutex> l(impl_->mu);
  bool from_pserver = false;
  Status s = handle->Wait(deadline, &from_pserver);
  if (!from_pserver) return impl_->Note(s);
  // A pserver refused a block: only a reset connection needs a reconnect.
  if (s.code() == Status::Code::kUnavailable) impl_->broken = true;
  return s;
}

bool PServerClient::Finished(const std::shared_ptr<TransferHandle>& handle,
                             Deadline until) {
  return handle == nullptr || handle->Finished(until);
}

Status PServerClient::GetParams(const std::vector<ParamBuffer>& params,
                                Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(auto pull, GetParamsAsync(params, deadline));
  return Wait(pull, deadline);
}

Status PServerClient::SaveModel(const std::string& dir, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  const auto& addresses = impl_->options.addresses;
  for (size_t i = 0; i < addresses.size(); i++) {
    int64_t left = deadline.RemainingMs();
    if (left <= 0) {
      return Status::TimedOut(std::to_string(i) + " of " +
                              std::to_string(addresses.size()) +
                              " pservers saved by the deadline");
    }
    // A connection of its own whose socket timeouts are what is left of
    // the deadline: a save may take longer than rpc_timeout_ms.
    FABPS_ASSIGN_OR_RETURN(
        auto conn, PServerConnection::Open(
                       static_cast<uint32_t>(i), addresses[i],
                       static_cast<int>(std::min<int64_t>(left, INT32_MAX))));
    std::string path;
    FABPS_RETURN_IF_ERROR(conn->Call(
        "SaveModel", [&](ps::PServerClient& c) { c.SaveModel(path, dir); }));
  }
  return Status::OK();
}

Result<const Layout*> PServerClient::layout(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->Prepare(deadline));
  return impl_->layout.get();
}

std::string PServerClient::provider() const {
  return impl_->fabric->provider();
}
TrainerId PServerClient::trainer_id() const {
  return impl_->options.trainer_id;
}

void PServerClient::ForgetBuffer(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->fabric->cache().Invalidate(data, bytes);
}

PServerClient::RegistrationStats PServerClient::registration_stats() const {
  transport::RegistrationCache::Stats s = impl_->fabric->cache().stats();
  return RegistrationStats{s.hits, s.misses, s.entries, s.bytes};
}

}  // namespace fabps::trainer

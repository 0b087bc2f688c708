#include "trainer/pserver_client.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "coord/lease_lock.h"
#include "coord/store.h"
#include "pserver/dtype.h"
#include "pserver/rpc/init_config.h"
#include "pserver/wire.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "transport/fabric.h"
#include "transport/registration_cache.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;
using pserver::Layout;
using transport::Completion;
using transport::RemoteRegion;

// One push: the blocks still waiting for their credit, the first error.
class PushHandle {
 public:
  std::mutex mu;
  std::condition_variable cv;
  int remaining = 0;
  Status status;
  std::vector<Completion> writes;
  void PartDone(const Status& s) {
    std::lock_guard<std::mutex> l(mu);
    if (!s.ok() && status.ok()) status = s;
    remaining--;
    cv.notify_all();
  }
};

namespace {

Status FromPsError(const ps::PsError& e) {
  switch (e.code) {
    case ps::PsErrorCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(e.message);
    case ps::PsErrorCode::NOT_FOUND:
      return Status::NotFound(e.message);
    case ps::PsErrorCode::CORRUPTION:
      return Status::Corruption(e.message);
    case ps::PsErrorCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(e.message);
    case ps::PsErrorCode::UNAVAILABLE:
      return Status::Unavailable(e.message);
    case ps::PsErrorCode::RESOURCE_EXHAUSTED:
      return Status::ResourceExhausted(e.message);
    case ps::PsErrorCode::ALREADY_EXISTS:
      return Status::AlreadyExists(e.message);
    default:
      return Status::IOError(e.message);
  }
}

struct Slot {
  std::shared_ptr<PushHandle> push;  // null: free
  uint32_t block = 0;
};

}  // namespace

struct PServerClient::Impl {
  struct Server {
    uint32_t index = 0;
    std::unique_ptr<rpc::RpcConnection<ps::PServerClient>> conn;
    bool registered = false;
    transport::PeerId peer = 0;
    RemoteRegion arena, landing;
    uint32_t trainer_index = 0;
    uint64_t slot_bytes = 0;
    std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>>
        blocks;  // id -> offset, bytes
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;
  };

  PServerClientOptions options;
  std::unique_ptr<transport::Fabric> fabric;
  std::unique_ptr<transport::Endpoint> endpoint;
  std::vector<char> credit_buf;
  std::unique_ptr<transport::MemoryRegion> credit_mr;
  std::vector<Server> servers;
  std::unique_ptr<Layout> layout;
  bool ready = false;
  // Set when an operation failed in a way that may mean a pserver died or
  // moved; the next data call reconnects first.
  bool broken = false;
  struct PendingParam {
    pserver::ParamSpec spec;
    std::string values;
  };
  std::vector<PendingParam> init_params;
  std::unique_ptr<coord::Store> store;          // with options.store_spec
  std::unique_ptr<coord::LeaseLock> init_lock;  // held while initializing

  std::unique_ptr<rpc::RpcConnection<ps::PServerClient>> MakeConn(
      const std::string& address, Status* error) {
    rpc::RpcClientOptions ro;
    *error = rpc::ParseHostPort(address, &ro);
    if (!error->ok()) return nullptr;
    ro.send_timeout_ms = options.rpc_timeout_ms;
    ro.recv_timeout_ms = options.rpc_timeout_ms;
    ro.max_frame_bytes = size_t{64} << 20;
    return std::make_unique<rpc::RpcConnection<ps::PServerClient>>(ro);
  }

  // With a store: records that the parameters exist and gives init/lock up.
  void MarkInitDone() {
    if (!store || !init_lock) return;
    auto r =
        store->Put("init/done", "trainer " + std::to_string(options.trainer_id),
                   coord::kNoLease, store->DefaultDeadline());
    if (!r.ok()) {
      FABPS_LOG(WARNING) << "putting init/done: " << r.status().ToString();
    }
    (void)init_lock->Release(store->DefaultDeadline());
    init_lock.reset();
  }

  // The pservers' addresses from the store: ps/count, then ps/<i>/addr,
  // waiting (until `deadline`) for the ones not published yet.
  Result<std::vector<std::string>> Resolve(Deadline deadline) {
    Status last;
    for (;;) {
      auto count = store->Get("ps/count", store->DefaultDeadline());
      if (count.ok()) {
        uint32_t n = 0;
        try {
          n = static_cast<uint32_t>(std::stoul(count->value));
        } catch (...) {
          n = 0;
        }
        if (n == 0 || n > pserver::wire::kMaxPserverIndex)
          return Status::Corruption("bad ps/count '" + count->value + "'");
        auto range = store->Range("ps/", store->DefaultDeadline());
        if (range.ok()) {
          std::vector<std::string> out(n);
          uint32_t found = 0;
          for (const auto& kv : range->kvs) {
            uint32_t i = 0;
            char tail[8] = {0};
            if (std::sscanf(kv.key.c_str(), "ps/%u/%7s", &i, tail) == 2 &&
                std::strcmp(tail, "addr") == 0 && i < n && out[i].empty()) {
              out[i] = kv.value;
              found++;
            }
          }
          if (found == n) return out;
          last = Status::Unavailable(std::to_string(n - found) + " of " +
                                     std::to_string(n) +
                                     " pservers not published in the store");
        } else {
          last = range.status();
        }
      } else {
        last = count.status().code() == Status::Code::kNotFound
                   ? Status::Unavailable("no ps/count in the store yet")
                   : count.status();
      }
      if (deadline.Expired())
        return last.WithContext("finding the pservers in the store");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::mutex slots_mu;  // every Server's slots and free_slots
  std::condition_variable slots_cv;

  // Runs a Thrift call on pserver `s`, turning PsError into a Status.
  template <class Fn>
  Status Call(Server& s, const std::string& what, Fn&& fn) {
    Status inner;
    Status outer = s.conn->Call(what, [&](ps::PServerClient& c) {
      try {
        fn(c);
      } catch (const ps::PsError& e) {
        inner = FromPsError(e).WithContext(what + " on pserver " +
                                           std::to_string(s.index));
      }
    });
    return outer.ok() ? inner : outer;
  }

  void OnCredit(uint64_t data) {
    pserver::wire::CreditImm c = pserver::wire::DecodeCredit(data);
    std::shared_ptr<PushHandle> push;
    {
      std::lock_guard<std::mutex> l(slots_mu);
      if (c.pserver >= servers.size() ||
          c.slot >= servers[c.pserver].slots.size()) {
        FABPS_LOG(WARNING) << "credit for unknown pserver " << c.pserver
                           << " slot " << c.slot;
        return;
      }
      Slot& slot = servers[c.pserver].slots[c.slot];
      if (!slot.push || slot.block != c.block) {
        FABPS_LOG(WARNING) << "unexpected credit from pserver " << c.pserver
                           << " slot " << c.slot << " block " << c.block;
        return;
      }
      push = std::move(slot.push);
      servers[c.pserver].free_slots.push_back(c.slot);
    }
    slots_cv.notify_all();
    Status s;
    if (c.code != Status::Code::kOk) {
      s = Status(c.code, "pserver " + std::to_string(c.pserver) +
                             " refused block " + std::to_string(c.block) +
                             " (see its log)");
    }
    push->PartDone(s);
  }

  Status Register(Server& s, Deadline deadline) {
    ps::TrainerHello hello;
    hello.trainer_id = options.trainer_id;
    hello.fabric_address = endpoint->address();
    hello.credit_region = credit_mr->remote().Serialize();
    hello.provider = fabric->provider();
    hello.max_slot_bytes = 0;
    ps::Registration reg;
    for (;;) {
      Status st = Call(s, "RegisterTrainer", [&](ps::PServerClient& c) {
        c.RegisterTrainer(reg, hello);
      });
      if (st.ok()) break;
      bool retry = st.code() == Status::Code::kFailedPrecondition ||
                   st.code() == Status::Code::kUnavailable;
      if (!retry || deadline.Expired()) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (reg.num_slots < 1 ||
        reg.num_slots > static_cast<int32_t>(pserver::wire::kMaxSlots) ||
        reg.slot_bytes <= 0 || reg.trainer_index < 0 ||
        reg.trainer_index >
            static_cast<int32_t>(pserver::wire::kMaxTrainerIndex) ||
        reg.pserver_index != static_cast<int32_t>(s.index)) {
      return Status::Corruption("pserver " + std::to_string(s.index) +
                                ": invalid registration");
    }
    FABPS_ASSIGN_OR_RETURN(s.arena, RemoteRegion::Parse(reg.arena_region));
    FABPS_ASSIGN_OR_RETURN(s.landing, RemoteRegion::Parse(reg.landing_region));
    if (s.landing.length <
        static_cast<uint64_t>(reg.num_slots) * reg.slot_bytes) {
      return Status::Corruption(
          "pserver landing region smaller than its slots");
    }
    FABPS_ASSIGN_OR_RETURN(s.peer, endpoint->AddPeer(reg.fabric_address));
    s.trainer_index = static_cast<uint32_t>(reg.trainer_index);
    s.slot_bytes = static_cast<uint64_t>(reg.slot_bytes);
    s.blocks.clear();
    for (const auto& b : reg.blocks) {
      if (b.block < 0 || b.offset < 0 || b.bytes < 0 ||
          static_cast<uint64_t>(b.offset) + b.bytes > s.arena.length) {
        return Status::Corruption("pserver " + std::to_string(s.index) +
                                  ": block location out of range");
      }
      s.blocks[static_cast<uint32_t>(b.block)] = {b.offset, b.bytes};
    }
    {
      std::lock_guard<std::mutex> l(slots_mu);
      s.slots.assign(reg.num_slots, Slot{});
      s.free_slots.clear();
      for (int i = reg.num_slots - 1; i >= 0; i--) s.free_slots.push_back(i);
    }
    s.registered = true;
    return Status::OK();
  }

  // Waits until the parameters exist, learns the layout and registers with
  // every pserver.
  Status EnsureReady(Deadline deadline) {
    if (ready) return Status::OK();
    ps::InitConfig config;
    for (;;) {
      Status st = Call(servers[0], "GetInitConfig",
                       [&](ps::PServerClient& c) { c.GetInitConfig(config); });
      if (st.ok()) break;
      bool retry = st.code() == Status::Code::kFailedPrecondition ||
                   st.code() == Status::Code::kUnavailable;
      if (!retry) return st;
      if (deadline.Expired())
        return st.WithContext("waiting for parameter initialization");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FABPS_ASSIGN_OR_RETURN(pserver::InitSpec spec,
                           pserver::InitSpecFromThrift(config));
    if (spec.layout.num_pservers() != servers.size()) {
      return Status::FailedPrecondition(
          "the job's layout has " + std::to_string(spec.layout.num_pservers()) +
          " pservers, this client knows " + std::to_string(servers.size()));
    }
    layout = std::make_unique<Layout>(std::move(spec.layout));
    for (auto& s : servers) FABPS_RETURN_IF_ERROR(Register(s, deadline));
    ready = true;
    return Status::OK();
  }

  Status OpenEndpoint() {
    FABPS_ASSIGN_OR_RETURN(
        endpoint, fabric->CreateEndpoint(transport::ProgressMode::kThread));
    Impl* raw = this;
    endpoint->SetImmediateHandler(
        [raw](const transport::ImmediateEvent& e) { raw->OnCredit(e.data); });
    return Status::OK();
  }

  // Drops every connection and registration and builds them again: pushes
  // in flight fail with Unavailable, then the client waits (until
  // `deadline`) for the pservers to serve and registers anew. A fresh
  // endpoint is used because some providers (shm) keep an endpoint stuck
  // behind a transfer to a dead peer.
  Status Reconnect(Deadline deadline) {
    endpoint
        .reset();  // joins the progress thread; no credit arrives after this
    std::vector<std::shared_ptr<PushHandle>> orphans;
    {
      std::lock_guard<std::mutex> l(slots_mu);
      for (auto& s : servers) {
        for (auto& slot : s.slots) {
          if (slot.push) orphans.push_back(std::move(slot.push));
        }
        s.slots.clear();
        s.free_slots.clear();
        s.registered = false;
      }
    }
    slots_cv.notify_all();
    for (auto& p : orphans)
      p->PartDone(Status::Unavailable("pserver connection was reset"));
    for (auto& s : servers) s.conn->Close();
    if (store) {
      // A restarted pserver may serve elsewhere now.
      FABPS_ASSIGN_OR_RETURN(std::vector<std::string> addrs, Resolve(deadline));
      if (addrs.size() != servers.size()) {
        return Status::FailedPrecondition(
            "the job now has " + std::to_string(addrs.size()) +
            " pservers, this client knows " + std::to_string(servers.size()));
      }
      for (size_t i = 0; i < servers.size(); i++) {
        Status err;
        auto conn = MakeConn(addrs[i], &err);
        FABPS_RETURN_IF_ERROR(err);
        servers[i].conn = std::move(conn);
      }
    }
    FABPS_RETURN_IF_ERROR(OpenEndpoint());
    ready = false;
    FABPS_LOG(INFO) << "trainer " << options.trainer_id
                    << ": reconnecting to the pservers";
    FABPS_RETURN_IF_ERROR(EnsureReady(deadline));
    broken = false;
    return Status::OK();
  }

  // Data calls start here.
  Status Prepare(Deadline deadline) {
    if (broken) return Reconnect(deadline);
    return EnsureReady(deadline);
  }

  // Records that `s` failed; returns it.
  Status Note(const Status& s) {
    if (!s.ok() && s.code() != Status::Code::kInvalidArgument &&
        s.code() != Status::Code::kNotFound) {
      broken = true;
    }
    return s;
  }

  // Finds `p`'s parameter and checks the buffer's size.
  Result<uint32_t> CheckBuffer(const ParamBuffer& p) {
    FABPS_ASSIGN_OR_RETURN(uint32_t idx, layout->FindParam(p.name));
    const auto& spec = layout->params()[idx];
    uint64_t elements = 1;
    for (uint64_t d : spec.shape) elements *= d;
    uint64_t want = elements * pserver::DTypeSize(spec.dtype);
    if (p.bytes != want || p.data == nullptr) {
      return Status::InvalidArgument(
          "parameter '" + p.name + "' has " + std::to_string(want) +
          " bytes, buffer has " + std::to_string(p.bytes));
    }
    return idx;
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
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.addresses.empty()) {
    coord::StoreOptions so;
    so.spec = options.store_spec;
    so.job = options.job;
    FABPS_ASSIGN_OR_RETURN(impl->store, coord::OpenStore(so));
    FABPS_ASSIGN_OR_RETURN(impl->options.addresses,
                           impl->Resolve(Deadline::InMs(options.init_wait_ms)));
  }
  if (impl->options.trainer_id == 0) {
    std::random_device rd;
    impl->options.trainer_id =
        (static_cast<int64_t>(rd()) << 31 | rd()) & INT64_MAX;
    if (impl->options.trainer_id == 0) impl->options.trainer_id = 1;
  }
  transport::FabricOptions fo;
  fo.provider = options.provider;
  fo.interface_address = options.interface_address;
  FABPS_ASSIGN_OR_RETURN(impl->fabric, transport::OpenFabric(fo));
  impl->credit_buf.resize(64);
  FABPS_ASSIGN_OR_RETURN(
      impl->credit_mr,
      impl->fabric->Register(impl->credit_buf.data(), impl->credit_buf.size()));
  FABPS_RETURN_IF_ERROR(impl->OpenEndpoint());
  const auto& addresses = impl->options.addresses;
  impl->servers.resize(addresses.size());
  for (size_t i = 0; i < addresses.size(); i++) {
    Status err;
    impl->servers[i].index = static_cast<uint32_t>(i);
    impl->servers[i].conn = impl->MakeConn(addresses[i], &err);
    FABPS_RETURN_IF_ERROR(err);
  }
  return std::unique_ptr<PServerClient>(new PServerClient(std::move(impl)));
}

Result<bool> PServerClient::BeginInitParams(bool selected) {
  Impl& m = *impl_;
  Deadline deadline = Deadline::InMs(m.options.init_wait_ms);
  if (m.store) {
    // The store decides: init/done ends the question; init/lock elects.
    coord::LeaseLockOptions lo;
    lo.ttl_seconds = 5;
    lo.value = "trainer " + std::to_string(m.options.trainer_id);
    for (;;) {
      auto done = m.store->Get("init/done", m.store->DefaultDeadline());
      if (done.ok()) return false;
      auto lock = coord::LeaseLock::TryAcquire(m.store.get(), "init/lock", lo,
                                               m.store->DefaultDeadline());
      if (lock.ok()) {
        // Initialized between our two reads? Then nothing to do.
        done = m.store->Get("init/done", m.store->DefaultDeadline());
        if (done.ok()) {
          (void)(*lock)->Release(m.store->DefaultDeadline());
          return false;
        }
        m.init_lock = std::move(*lock);
        break;
      }
      if (deadline.Expired()) {
        return Status::TimedOut("parameters not initialized by init_wait_ms: " +
                                lock.status().ToString());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    FABPS_LOG(INFO) << "trainer " << m.options.trainer_id
                    << " holds init/lock: initializing the parameters";
  } else if (!selected) {
    return false;
  }
  for (auto& s : m.servers) {
    for (;;) {
      ps::InitGrantKind::type grant{};
      Status st = m.Call(s, "BeginInitParams", [&](ps::PServerClient& c) {
        grant = c.BeginInitParams(m.options.trainer_id);
      });
      if (st.code() == Status::Code::kUnavailable && !deadline.Expired()) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(100));  // pserver (re)starting
        continue;
      }
      FABPS_RETURN_IF_ERROR(st);
      if (grant == ps::InitGrantKind::GRANTED) break;
      if (grant == ps::InitGrantKind::ALREADY_INITIALIZED) {
        m.MarkInitDone();
        return false;
      }
      if (deadline.Expired())
        return Status::TimedOut("another trainer holds the init grant");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  m.init_params.clear();
  return true;
}

Status PServerClient::InitParam(const pserver::ParamSpec& spec,
                                const void* data, size_t bytes) {
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
  Impl& m = *impl_;
  auto run = [&]() -> Status {
    std::vector<pserver::ParamSpec> specs;
    for (const auto& p : m.init_params) specs.push_back(p.spec);
    FABPS_ASSIGN_OR_RETURN(
        Layout layout, Layout::Build(specs, m.options.block_elements,
                                     static_cast<uint32_t>(m.servers.size())));
    pserver::InitSpec spec{layout, m.options.default_rule, m.options.rules};
    ps::InitConfig config = pserver::InitSpecToThrift(spec);
    for (auto& s : m.servers) {
      Status st = m.Call(s, "InitParams", [&](ps::PServerClient& c) {
        c.InitParams(m.options.trainer_id, config);
      });
      if (st.code() == Status::Code::kAlreadyExists) {
        m.MarkInitDone();
        return Status::OK();
      }
      FABPS_RETURN_IF_ERROR(st);
    }
    for (const auto& b : layout.blocks()) {
      const auto& p = m.init_params[b.param];
      size_t esize = pserver::DTypeSize(p.spec.dtype);
      std::string values =
          p.values.substr(b.first_element * esize, b.num_elements * esize);
      FABPS_RETURN_IF_ERROR(
          m.Call(m.servers[b.pserver], "InitBlock", [&](ps::PServerClient& c) {
            c.InitBlock(m.options.trainer_id, static_cast<int32_t>(b.id),
                        values);
          }));
    }
    for (auto& s : m.servers) {
      bool first = false;
      FABPS_RETURN_IF_ERROR(
          m.Call(s, "FinishInitParams", [&](ps::PServerClient& c) {
            first = c.FinishInitParams(m.options.trainer_id);
          }));
      if (!first) {
        FABPS_LOG(INFO) << "pserver " << s.index << " was already initialized";
      }
    }
    m.init_params.clear();
    m.MarkInitDone();
    return Status::OK();
  };
  Status s = run();
  if (!s.ok() && m.init_lock) {
    // Let another trainer (or a later call) take init/lock over.
    (void)m.init_lock->Release(m.store->DefaultDeadline());
    m.init_lock.reset();
  }
  return s;
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendGrads(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  Impl& m = *impl_;
  FABPS_RETURN_IF_ERROR(m.Prepare(deadline));
  auto push = std::make_shared<PushHandle>();
  // Check every buffer and register it before anything is sent, so a bad
  // argument sends nothing.
  std::vector<std::pair<uint32_t, std::shared_ptr<transport::MemoryRegion>>>
      checked;
  for (const auto& g : grads) {
    FABPS_ASSIGN_OR_RETURN(uint32_t param, m.CheckBuffer(g));
    FABPS_ASSIGN_OR_RETURN(auto region, m.fabric->cache().Get(g.data, g.bytes));
    checked.emplace_back(param, std::move(region));
  }
  for (size_t gi = 0; gi < grads.size(); gi++) {
    const ParamBuffer& g = grads[gi];
    uint32_t param = checked[gi].first;
    const auto& region = checked[gi].second;
    size_t base = static_cast<size_t>(static_cast<char*>(g.data) -
                                      static_cast<char*>(region->data()));
    size_t esize = pserver::DTypeSize(m.layout->params()[param].dtype);
    uint32_t first = m.layout->FirstBlockOf(param);
    for (uint32_t id = first;
         id < m.layout->num_blocks() && m.layout->blocks()[id].param == param;
         id++) {
      const auto& b = m.layout->blocks()[id];
      Impl::Server& s = m.servers[b.pserver];
      size_t len = b.num_elements * esize;
      if (len > s.slot_bytes)
        return Status::Corruption("block larger than the pserver's slots");
      uint32_t slot;
      {
        std::unique_lock<std::mutex> l(m.slots_mu);
        if (!m.slots_cv.wait_until(l, deadline.time(),
                                   [&] { return !s.free_slots.empty(); })) {
          return m.Note(Status::TimedOut(
              "no free landing slot on pserver " + std::to_string(s.index) +
              " (its credits stopped: dead or stuck?)"));
        }
        slot = s.free_slots.back();
        s.free_slots.pop_back();
        s.slots[slot].push = push;
        s.slots[slot].block = id;
      }
      {
        std::lock_guard<std::mutex> l(push->mu);
        push->remaining++;
      }
      uint64_t imm = pserver::wire::EncodePush({s.trainer_index, slot, id});
      auto w =
          m.endpoint->Write(s.peer, *region, base + b.first_element * esize,
                            len, s.landing, slot * s.slot_bytes, imm, deadline);
      if (!w.ok()) {
        // Nothing landed; the slot is ours again.
        {
          std::lock_guard<std::mutex> l(m.slots_mu);
          s.slots[slot].push.reset();
          s.free_slots.push_back(slot);
        }
        push->PartDone(w.status());
        return m.Note(w.status());
      }
      std::lock_guard<std::mutex> l(push->mu);
      push->writes.push_back(*w);
    }
  }
  return push;
}

Status PServerClient::Wait(const std::shared_ptr<PushHandle>& push,
                           Deadline deadline) {
  if (!push) return Status::InvalidArgument("null push handle");
  std::vector<Completion> writes;
  {
    std::lock_guard<std::mutex> l(push->mu);
    writes = push->writes;
  }
  // A failed write means no credit will come: report it now.
  for (auto& w : writes) {
    Status s = w.Wait(deadline);
    if (!s.ok()) return impl_->Note(s);
  }
  std::unique_lock<std::mutex> l(push->mu);
  if (!push->cv.wait_until(l, deadline.time(),
                           [&] { return push->remaining == 0; })) {
    return impl_->Note(Status::TimedOut(
        std::to_string(push->remaining) +
        " gradient blocks not acknowledged by their pservers by the deadline"));
  }
  if (push->status.code() == Status::Code::kUnavailable) impl_->broken = true;
  return push->status;
}

Status PServerClient::GetParams(const std::vector<ParamBuffer>& params,
                                Deadline deadline) {
  Impl& m = *impl_;
  FABPS_RETURN_IF_ERROR(m.Prepare(deadline));
  std::vector<Completion> reads;
  for (const auto& p : params) {
    FABPS_ASSIGN_OR_RETURN(uint32_t param, m.CheckBuffer(p));
    FABPS_ASSIGN_OR_RETURN(auto region, m.fabric->cache().Get(p.data, p.bytes));
    size_t base = static_cast<size_t>(static_cast<char*>(p.data) -
                                      static_cast<char*>(region->data()));
    size_t esize = pserver::DTypeSize(m.layout->params()[param].dtype);
    for (uint32_t id = m.layout->FirstBlockOf(param);
         id < m.layout->num_blocks() && m.layout->blocks()[id].param == param;
         id++) {
      const auto& b = m.layout->blocks()[id];
      Impl::Server& s = m.servers[b.pserver];
      auto loc = s.blocks.find(id);
      size_t len = b.num_elements * esize;
      if (loc == s.blocks.end() || loc->second.second != len) {
        return Status::Corruption("pserver " + std::to_string(s.index) +
                                  " does not list block " + std::to_string(id) +
                                  " with " + std::to_string(len) + " bytes");
      }
      auto c = m.endpoint->Read(s.peer, *region, base + b.first_element * esize,
                                len, s.arena, loc->second.first, deadline);
      if (!c.ok()) return m.Note(c.status());
      reads.push_back(*c);
    }
  }
  for (auto& c : reads) {
    Status s = c.Wait(deadline);
    if (!s.ok()) return m.Note(s);
  }
  return Status::OK();
}

Status PServerClient::SaveModel(const std::string& dir) {
  Impl& m = *impl_;
  for (auto& s : m.servers) {
    std::string path;
    FABPS_RETURN_IF_ERROR(m.Call(
        s, "SaveModel", [&](ps::PServerClient& c) { c.SaveModel(path, dir); }));
  }
  return Status::OK();
}

Result<const Layout*> PServerClient::layout(Deadline deadline) {
  FABPS_RETURN_IF_ERROR(impl_->Prepare(deadline));
  return impl_->layout.get();
}

std::string PServerClient::provider() const {
  return impl_->fabric->provider();
}
int64_t PServerClient::trainer_id() const { return impl_->options.trainer_id; }

void PServerClient::ForgetBuffer(const void* data, size_t bytes) {
  impl_->fabric->cache().Invalidate(data, bytes);
}

}  // namespace fabps::trainer

#include "transport/ofi/ofi_fabric.h"

#include <rdma/fi_errno.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "base/log.h"
#include "base/shm_regions.h"
#include "transport/ofi/ofi_endpoint.h"
#include "transport/ofi/ofi_error.h"

namespace fabps::transport::ofi {
namespace {

constexpr uint64_t kCaps = FI_MSG | FI_RMA | FI_READ | FI_WRITE |
                           FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
// Everything verbs may ask for; providers that need less take less.
constexpr int kMrMode =
    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

class OfiMemoryRegion final : public MemoryRegion {
 public:
  OfiMemoryRegion(fid_mr* mr, void* data, size_t len, bool virt_addr,
                  std::optional<ShareInfo> share)
      : mr_(mr),
        data_(data),
        len_(len),
        virt_addr_(virt_addr),
        share_(std::move(share)) {}
  ~OfiMemoryRegion() override { fi_close(&mr_->fid); }
  void* data() const override { return data_; }
  size_t size() const override { return len_; }
  RemoteRegion remote() const override {
    RemoteRegion r;
    r.base = virt_addr_ ? reinterpret_cast<uint64_t>(data_) : 0;
    r.key = fi_mr_key(mr_);
    r.length = len_;
    r.share = share_;
    return r;
  }
  void* desc() const { return fi_mr_desc(mr_); }

 private:
  fid_mr* mr_;
  void* data_;
  size_t len_;
  bool virt_addr_;
  std::optional<ShareInfo> share_;
};

}  // namespace

void* LocalDescriptor(const MemoryRegion& region) {
  return static_cast<const OfiMemoryRegion&>(region).desc();
}

namespace {

bool IsSocketAddress(uint32_t addr_format) {
  return addr_format == FI_SOCKADDR || addr_format == FI_SOCKADDR_IN ||
         addr_format == FI_SOCKADDR_IN6 || addr_format == FI_SOCKADDR_IB;
}

// fi_getinfo for `provider`, with `node` (when not null) as the source
// address.
Result<fi_info*> QueryProvider(const std::string& provider, const char* node) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return Status::ResourceExhausted("fi_allocinfo");
  hints->caps = kCaps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = kMrMode;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->fabric_attr->prov_name = strdup(provider.c_str());
  fi_info* info = nullptr;
  int ret = fi_getinfo(FI_VERSION(1, 17), node, nullptr, node ? FI_SOURCE : 0,
                       hints, &info);
  fi_freeinfo(hints);
  if (ret != 0) return FiError("fi_getinfo(" + provider + ")", ret);
  if (info->domain_attr->cq_data_size < 8) {
    fi_freeinfo(info);
    return Status::Unimplemented(provider +
                                 ": remote CQ data smaller than 8 bytes");
  }
  return info;
}

}  // namespace

Result<fi_info*> GetInfo(const std::string& provider,
                         const std::string& interface_address) {
  if (interface_address.empty()) return QueryProvider(provider, nullptr);
  auto bound = QueryProvider(provider, interface_address.c_str());
  if (bound.ok() && IsSocketAddress(bound.value()->addr_format)) return bound;
  // A provider whose addresses are names, not socket addresses (shm:
  // FI_ADDR_STR), takes the node as the endpoint's name instead of an
  // interface, and every endpoint would get the same one: it is asked
  // without it (FabricCapabilities::binds_to_interface false).
  auto unbound = QueryProvider(provider, nullptr);
  if (unbound.ok() && !IsSocketAddress(unbound.value()->addr_format)) {
    if (bound.ok()) fi_freeinfo(bound.value());
    return unbound;
  }
  if (unbound.ok()) fi_freeinfo(unbound.value());
  return bound;
}

ProviderTraits DescribeProvider(const fi_info* info, bool shm_direct) {
  const std::string name = info->fabric_attr->prov_name;
  const bool over_rxm = name.find("ofi_rxm") != std::string::npos;
  // libfabric 1.17 reports no attribute for what the name checks below
  // stand for; each says why it is needed.
  // shm: its peers are processes of this host (the answer's caps do not say
  // so: FI_LOCAL_COMM appears only when the hints ask for it).
  const bool shm = name == "shm";
  ProviderTraits t;
  t.same_host_only = shm;
  t.rxm_over_tcp = over_rxm && name.rfind("tcp", 0) == 0;
  FabricCapabilities& c = t.capabilities;
  // Not over ofi_rxm, whatever its inject_size: libfabric 1.17's rxm
  // crashes (SIGSEGV in its progress, under fi_cq_read) when a pserver's
  // apply threads inject credits while trainers connect (about 1 run of
  // CPServerTest.ProgramPushesAndPullsExactly in 20 on tcp; none in 100 with
  // regular writes); shm and sockets run clean.
  c.inject_size = over_rxm ? 0 : info->tx_attr->inject_size;
  c.binds_to_interface = IsSocketAddress(info->addr_format);
  // shm polls: its wait object does not announce the target-side progress
  // of large transfers, so a blocked target slows large push+pull 2-3x.
  // sockets too: with a blocking CQ, outstanding reads can stall under load
  // (the provider has its own thread). See
  // docs/decisions/001-progress-thread-blocks-on-the-cq-wait-object.md.
  c.progress_thread_sleeps = !shm && name != "sockets";
  c.maps_peer_shared_memory = shm && shm_direct;
  // shm (libfabric 1.17) queues every transfer behind one stuck on a dead
  // peer.
  c.isolates_dead_peers = !shm;
  return t;
}

std::vector<ProviderProbe> ProbeProviders(
    const std::string& interface_address) {
  std::vector<ProviderProbe> out;
  for (const auto& name : KnownProviders()) {
    ProviderProbe p;
    p.name = name;
    auto r = GetInfo(name, interface_address);
    if (r.ok()) {
      p.works = true;
      fi_freeinfo(r.value());
    } else {
      p.reason = r.status().message();
    }
    out.push_back(p);
  }
  return out;
}

OfiFabric::~OfiFabric() {
  cache_.reset();
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
}

uint64_t OfiFabric::mr_mode() const {
  return static_cast<uint64_t>(info_->domain_attr->mr_mode);
}

size_t OfiFabric::max_message_size() const {
  return info_->ep_attr->max_msg_size;
}

Result<std::unique_ptr<MemoryRegion>> OfiFabric::Register(void* data,
                                                          size_t len) {
  if (data == nullptr || len == 0) {
    return Status::InvalidArgument(
        "register: empty buffer (FI_MR_ALLOCATED needs real memory)");
  }
  fid_mr* mr = nullptr;
  uint64_t access =
      FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  uint64_t requested_key = next_key_.fetch_add(1);
  int ret =
      fi_mr_reg(domain_, data, len, access, 0, requested_key, 0, &mr, nullptr);
  if (ret != 0)
    return FiError("fi_mr_reg(" + std::to_string(len) + " bytes)", ret);
  bool virt = (mr_mode() & FI_MR_VIRT_ADDR) != 0;
  std::optional<ShareInfo> share;
  if (traits_.capabilities.maps_peer_shared_memory)
    share = FindShare(data, len);
  return std::unique_ptr<MemoryRegion>(
      new OfiMemoryRegion(mr, data, len, virt, std::move(share)));
}

Result<std::unique_ptr<Endpoint>> OfiFabric::CreateEndpoint(ProgressMode mode) {
  return OfiEndpoint::Create(this, options_, mode);
}

Result<std::unique_ptr<Fabric>> CreateOfiFabric(const FabricOptions& options) {
  std::string chosen = options.provider;
  std::string reason;
  fi_info* info = nullptr;
  if (options.provider == "auto") {
    auto verbs = GetInfo("verbs;ofi_rxm", options.interface_address);
    if (verbs.ok()) {
      info = verbs.value();
      chosen = "verbs;ofi_rxm";
      reason = "auto: verbs;ofi_rxm answered (an RDMA device is present)";
    } else {
      auto tcp = GetInfo("tcp;ofi_rxm", options.interface_address);
      if (!tcp.ok()) {
        return Status::Unavailable(
            "auto: neither verbs;ofi_rxm (" + verbs.status().message() +
            ") nor tcp;ofi_rxm (" + tcp.status().message() + ") works");
      }
      info = tcp.value();
      chosen = "tcp;ofi_rxm";
      reason = "auto: verbs;ofi_rxm unavailable (" + verbs.status().message() +
               "), using tcp;ofi_rxm";
    }
  } else {
    auto r = GetInfo(options.provider, options.interface_address);
    if (!r.ok()) {
      std::string works;
      for (const auto& p : ProbeProviders(options.interface_address)) {
        if (p.works) works += (works.empty() ? "" : ", ") + p.name;
      }
      if (works.empty()) works = "none";
      return Status::InvalidArgument(
          "provider '" + options.provider + "' does not work here (" +
          r.status().message() + "); providers that work: " + works +
          ", or auto");
    }
    info = r.value();
    reason = "requested by name";
  }
  FABPS_LOG(INFO) << "fabric provider " << chosen << " (" << reason << ")";
  const char* direct_env = std::getenv("FABPS_SHM_DIRECT");
  ProviderTraits traits = DescribeProvider(
      info, options.shm_direct &&
                !(direct_env != nullptr && std::strcmp(direct_env, "0") == 0));
  if (traits.same_host_only) {
    // A dead process that had our pid may have left its regions under the
    // names our endpoints are about to take (see base/shm_regions.h).
    static std::once_flag once;
    std::call_once(once, [] {
      int n = RemoveShmRegionsOf(::getpid());
      if (n > 0) {
        FABPS_LOG(WARNING) << "removed " << n
                           << " shm region(s) left by a dead process that "
                              "had this pid";
      }
    });
  }

  std::unique_ptr<OfiFabric> f(new OfiFabric());
  f->provider_ = chosen;
  f->reason_ = reason;
  f->options_ = options;
  f->info_ = info;
  f->traits_ = traits;
  int ret = fi_fabric(info->fabric_attr, &f->fabric_, nullptr);
  if (ret != 0) return FiError("fi_fabric(" + chosen + ")", ret);
  ret = fi_domain(f->fabric_, info, &f->domain_, nullptr);
  if (ret != 0) return FiError("fi_domain(" + chosen + ")", ret);
  size_t max_msg = info->ep_attr->max_msg_size;
  f->transfer_limit_ = options.max_transfer_size == 0
                           ? max_msg
                           : std::min(max_msg, options.max_transfer_size);
  f->cache_ = std::make_unique<RegistrationCache>(
      f.get(), options.reg_cache_max_entries, options.reg_cache_max_bytes);
  return std::unique_ptr<Fabric>(std::move(f));
}

}  // namespace fabps::transport::ofi

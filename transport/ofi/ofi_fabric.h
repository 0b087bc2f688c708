// The libfabric backend of transport::Fabric. Callers use OpenFabric() from
// transport/fabric.h, which reaches this backend through ofi_factory.h; this
// header is for the backend's own files, its tests and fabps-doctor.
#ifndef FABPS_TRANSPORT_OFI_OFI_FABRIC_H_
#define FABPS_TRANSPORT_OFI_OFI_FABRIC_H_

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <memory>
#include <string>

#include "transport/fabric.h"
#include "transport/ofi/ofi_factory.h"
#include "transport/registration_cache.h"

namespace fabps::transport::ofi {

// Asks libfabric for an RDM endpoint with messages, RMA and remote CQ data on
// `provider`, under the strictest memory-registration mode we support.
// Returns the provider's answer (caller frees with fi_freeinfo) or the error.
Result<fi_info*> GetInfo(const std::string& provider,
                         const std::string& interface_address);

// Providers among KnownProviders() that answer GetInfo on this machine, with
// the reason for each one that does not ("verbs;ofi_rxm: No data available").
struct ProviderProbe {
  std::string name;
  bool works = false;
  std::string reason;
};
std::vector<ProviderProbe> ProbeProviders(const std::string& interface_address);

// What the provider answering `info` (a GetInfo answer) does: the public
// capabilities and the quirks only this backend acts on. Every provider
// name check of the backend is here.
struct ProviderTraits {
  FabricCapabilities capabilities;
  // rxm over tcp (libfabric 1.17) crashes closing a connection with a
  // transfer partway in: a write's immediate data travel alone, in a
  // zero-byte write after its bytes, and reads in flight are waited for
  // before an endpoint closes (ofi_endpoint.cc).
  bool rxm_over_tcp = false;
  // The provider's peers are processes of this host, whose shared-memory
  // regions are named by pid (base/shm_regions.h).
  bool same_host_only = false;
};
// `shm_direct`: FabricOptions::shm_direct and FABPS_SHM_DIRECT not "0".
ProviderTraits DescribeProvider(const fi_info* info, bool shm_direct);

class OfiFabric final : public Fabric {
 public:
  ~OfiFabric() override;

  std::string provider() const override { return provider_; }
  std::string choice_reason() const override { return reason_; }
  size_t max_message_size() const override;
  FabricCapabilities capabilities() const override {
    return traits_.capabilities;
  }
  Result<std::unique_ptr<MemoryRegion>> Register(void* data,
                                                 size_t len) override;
  Result<std::unique_ptr<Endpoint>> CreateEndpoint(ProgressMode mode) override;
  RegistrationCache& cache() override { return *cache_; }

  // The memory-registration mode the provider asked for (FI_MR_* bits).
  uint64_t mr_mode() const;
  fi_info* info() const { return info_; }
  fid_domain* domain() const { return domain_; }
  size_t transfer_limit() const { return transfer_limit_; }
  const ProviderTraits& traits() const { return traits_; }

 private:
  friend Result<std::unique_ptr<Fabric>> CreateOfiFabric(
      const FabricOptions& options);
  OfiFabric() = default;

  std::string provider_;
  std::string reason_;
  FabricOptions options_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  size_t transfer_limit_ = 0;
  ProviderTraits traits_;
  std::atomic<uint64_t> next_key_{
      1};  // keys we choose when the provider does not
  std::unique_ptr<RegistrationCache> cache_;
};

}  // namespace fabps::transport::ofi

#endif  // FABPS_TRANSPORT_OFI_OFI_FABRIC_H_

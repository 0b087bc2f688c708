// The one export of the libfabric backend: what transport/fabric.cc calls
// to open a Fabric when FabricOptions::backend is "ofi". Everything else in
// transport/ofi/ (OfiFabric, OfiEndpoint, the libfabric headers) is the
// backend's own business; code above transport/ reaches it only through
// transport/fabric.h.
#ifndef FABPS_TRANSPORT_OFI_OFI_FACTORY_H_
#define FABPS_TRANSPORT_OFI_OFI_FACTORY_H_

#include <memory>

#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::transport::ofi {

// Opens options.provider ("auto", "verbs;ofi_rxm", "tcp;ofi_rxm", "shm",
// "sockets", or any other libfabric provider string) with the strictest
// memory-registration mode fabps supports. "auto" takes verbs when an RDMA
// device answers, else tcp (Unavailable when neither works); a name that
// does not work here is InvalidArgument listing the providers that do.
// The caller owns the Fabric. Thread-safe.
Result<std::unique_ptr<Fabric>> CreateOfiFabric(const FabricOptions& options);

}  // namespace fabps::transport::ofi

#endif  // FABPS_TRANSPORT_OFI_OFI_FACTORY_H_

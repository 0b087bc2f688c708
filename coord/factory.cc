#include <string>

#include "coord/etcd/etcd_store.h"
#include "coord/local/local_store.h"
#include "coord/store.h"

namespace fabps::coord {

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  FABPS_RETURN_IF_ERROR(ValidateJobName(options.job));
  if (options.timeout_ms <= 0)
    return Status::InvalidArgument("timeout_ms must be > 0");
  const std::string& spec = options.spec;
  auto colon = spec.find(':');
  std::string scheme =
      colon == std::string::npos ? spec : spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (scheme == "local") return local::OpenLocalStore(rest, options);
  if (scheme == "etcd") return etcd::OpenEtcdStore(rest, options);
  return Status::InvalidArgument("unknown coordination store spec '" + spec +
                                 "': expected local:/path/to/dir or "
                                 "etcd:http://host:port[,http://host:port...]");
}

}  // namespace fabps::coord

#include "base/advertised_address.h"

namespace fabps {

bool IsWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

Result<std::string> AdvertisedHost(const std::string& listen_host,
                                   const std::string& advertise_host) {
  const std::string& host =
      advertise_host.empty() ? listen_host : advertise_host;
  if (IsWildcardHost(host)) {
    return Status::InvalidArgument(
        "'" + host +
        "' cannot be dialed by peers: give --advertise-host, the address of "
        "this host's interface that the other hosts reach");
  }
  return host;
}

}  // namespace fabps

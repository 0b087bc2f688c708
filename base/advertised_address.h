// The address a daemon publishes for its peers to dial, as opposed to the
// one it listens on.
//
// A daemon listens on --host; peers find it by the "host:port" it puts in
// the store (master/addr, ps/<i>/addr) and by the fabric interface it binds
// to. On a machine with several interfaces the two can differ: a daemon
// that listens on every interface (--host 0.0.0.0) must still publish one
// address its peers can reach, and publishing the wildcard itself would
// send every peer to its own host. --advertise-host names that address;
// without it the daemon publishes --host, and refuses to start when --host
// is a wildcard.
#ifndef FABPS_BASE_ADVERTISED_ADDRESS_H_
#define FABPS_BASE_ADVERTISED_ADDRESS_H_

#include <string>

#include "base/status.h"

namespace fabps {

// "0.0.0.0", "::", "[::]" or "": an address that means "every interface"
// to bind(2) and nothing a peer can dial.
bool IsWildcardHost(const std::string& host);

// The host to publish: `advertise_host` when not empty, else `listen_host`.
// InvalidArgument (naming --advertise-host) when the result is a wildcard.
Result<std::string> AdvertisedHost(const std::string& listen_host,
                                   const std::string& advertise_host);

}  // namespace fabps

#endif  // FABPS_BASE_ADVERTISED_ADDRESS_H_

// The etcd backend of coord::Store: an etcd v3 cluster reached through its
// JSON gateway (HTTP/1.1 POST of JSON bodies to /v3/..., via libcurl).
//
// Why the gateway and not gRPC: Debian 12 has no etcd C++ client and no
// libgrpc++-dev on our machines; gRPC would need protoc-generated code from
// etcd's .proto files after stripping their gogoproto/google.api
// annotations, plus the gRPC stack in every binary. The gateway is part of
// every etcd v3 server, documented, needs only libcurl and nlohmann-json
// (already build dependencies), and its cost (about 1 ms a put against
// 0.7 ms) does not matter for coordination traffic.
//
// Endpoints: "http://h1:2379,http://h2:2379". Each request goes to the
// endpoint that answered last; when it cannot connect it tries the next
// ones until the deadline (kUnavailable when none answered). A write that
// may have reached a server is not sent again (kTimedOut: effect unknown).
// Leases are kept alive by a LeaseKeeper thread; each watch runs its own
// streaming request on its own thread, re-established from the next
// undelivered revision after errors.
#ifndef FABPS_COORD_ETCD_ETCD_STORE_H_
#define FABPS_COORD_ETCD_ETCD_STORE_H_

#include <memory>

#include "coord/store.h"

namespace fabps::coord::etcd {

// `endpoints` is the part of the spec after "etcd:". Does not contact etcd.
Result<std::unique_ptr<Store>> OpenEtcdStore(const std::string& endpoints,
                                             const StoreOptions& options);

}  // namespace fabps::coord::etcd

#endif  // FABPS_COORD_ETCD_ETCD_STORE_H_

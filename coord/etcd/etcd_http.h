// EtcdHttp: unary JSON calls to etcd's v3 gateway over libcurl, with an
// endpoint list and fail-over (internal to coord/etcd/).
//
// Thread safety: Call may run on many threads at once; each call borrows a
// curl handle from a pool (keeping its connection alive between calls).
#ifndef FABPS_COORD_ETCD_ETCD_HTTP_H_
#define FABPS_COORD_ETCD_ETCD_HTTP_H_

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/etcd/etcd_json.h"

namespace fabps::coord::etcd {

// Largest response body accepted (etcd's own limit for a range is 2 GiB, but
// ours are bounded by kMaxValueBytes per key; a whole job range stays small).
constexpr size_t kMaxResponseBytes = 256u << 20;

// Parses "http://a:1,https://b:2" into a list; kInvalidArgument when empty
// or an entry is not http(s)://host:port.
Result<std::vector<std::string>> ParseEndpoints(const std::string& spec);

// Maps a gRPC status code carried by the gateway's error body to a Status.
Status StatusFromGrpc(int64_t code, const std::string& message);

class EtcdHttp {
 public:
  EtcdHttp(std::vector<std::string> endpoints, int64_t connect_timeout_ms);
  ~EtcdHttp();
  EtcdHttp(const EtcdHttp&) = delete;
  EtcdHttp& operator=(const EtcdHttp&) = delete;

  // POSTs `body` to `path` ("/v3/kv/put") and returns the parsed JSON reply.
  // Tries endpoints in turn until `deadline` while none can be connected to
  // (kUnavailable at the end). After a request may have reached a server,
  // only `idempotent` calls are tried again elsewhere; others return
  // kTimedOut or kUnavailable ("effect unknown"). Errors from etcd are
  // mapped with StatusFromGrpc.
  Result<Json> Call(const std::string& path, const Json& body,
                    Deadline deadline, bool idempotent);

  // etcd authentication (user and password): every call then carries a
  // token from /v3/auth/authenticate, fetched on first use and again when
  // etcd says it is no longer valid. Call before any Call.
  void SetCredentials(std::string user, std::string password);
  bool has_credentials() const { return !user_.empty(); }

  // TLS to https:// endpoints: the CA file that signs etcd's certificate
  // ("" for the system's CAs), and this client's certificate and key for an
  // etcd run with --client-cert-auth ("" for none). Call before any Call.
  void SetTls(std::string ca_file, std::string cert_file, std::string key_file);
  // Applies the TLS files to a curl handle (a no-op without any).
  void ApplyTls(void* curl) const;
  // The current token (authenticating first when there is none). Only with
  // credentials. PermissionDenied for a wrong user or password.
  Result<std::string> Token(Deadline deadline);

  const std::vector<std::string>& endpoints() const { return endpoints_; }
  // The endpoint that answered last (where calls start).
  size_t preferred() const { return preferred_.load(); }
  void set_preferred(size_t i) { preferred_.store(i % endpoints_.size()); }
  int64_t connect_timeout_ms() const { return connect_timeout_ms_; }

 private:
  void* TakeHandle();
  void ReturnHandle(void* h);
  // Call with an explicit Authorization token ("" for none).
  Result<Json> CallWithToken(const std::string& path, const Json& body,
                             Deadline deadline, bool idempotent,
                             const std::string& token);

  const std::vector<std::string> endpoints_;
  const int64_t connect_timeout_ms_;
  std::atomic<size_t> preferred_{0};
  std::mutex mu_;
  std::vector<void*> pool_;  // idle CURL* handles
  std::string user_, password_;
  std::string ca_file_, cert_file_, key_file_;
  std::mutex token_mu_;
  std::string token_;  // "" until authenticated
};

// Once per process, before any curl use.
void EnsureCurlInitialized();

}  // namespace fabps::coord::etcd

#endif  // FABPS_COORD_ETCD_ETCD_HTTP_H_

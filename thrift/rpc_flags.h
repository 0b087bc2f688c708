// The command-line flags every fabps daemon offers for its control-plane
// server's limits (thrift/rpc_server.h), with their allowed ranges: a bad
// value is a one-line error naming the flag (CLI11).
#ifndef FABPS_THRIFT_RPC_FLAGS_H_
#define FABPS_THRIFT_RPC_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>

#include "thrift/rpc_server.h"

namespace fabps::rpc {

// Adds --max-connections, --frame-timeout-ms, --first-request-timeout-ms,
// --idle-timeout-ms and the TLS files --tls-cert, --tls-key, --tls-ca
// (thrift/tls.h; each must name a readable file), writing into `o` (whose
// values are the defaults).
inline void AddRpcServerFlags(CLI::App& app, RpcServerOptions* o) {
  constexpr int64_t kDayMs = 86'400'000;
  app.add_option("--max-connections", o->max_connections,
                 "control connections kept open at once (the idlest is "
                 "evicted past it)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--frame-timeout-ms", o->frame_timeout_ms,
                 "a request frame must arrive, and a reply be read, within "
                 "this (0: off)")
      ->check(CLI::Range(int64_t{0}, kDayMs));
  app.add_option("--first-request-timeout-ms", o->first_request_timeout_ms,
                 "a new connection must start a request within this (0: off)")
      ->check(CLI::Range(int64_t{0}, kDayMs));
  app.add_option("--idle-timeout-ms", o->idle_timeout_ms,
                 "close connections idle between requests this long (0: off)")
      ->check(CLI::Range(int64_t{0}, kDayMs));
  auto* cert = app.add_option("--tls-cert", o->tls.cert_file,
                              "serve TLS with this PEM certificate (chain); "
                              "needs --tls-key (default: $FABPS_TLS_CERT)")
                   ->check(CLI::ExistingFile);
  auto* key = app.add_option("--tls-key", o->tls.key_file,
                             "the PEM private key of --tls-cert "
                             "(default: $FABPS_TLS_KEY)")
                  ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  app.add_option("--tls-ca", o->tls.ca_file,
                 "with TLS, require client certificates signed by this PEM "
                 "CA (default: $FABPS_TLS_CA)")
      ->check(CLI::ExistingFile)
      ->needs(cert);
}

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_FLAGS_H_

// The command-line flags every fabps daemon offers for its control-plane
// server's limits (thrift/rpc_server.h), with their allowed ranges: a bad
// value is a one-line error naming the flag (CLI11).
#ifndef FABPS_THRIFT_RPC_FLAGS_H_
#define FABPS_THRIFT_RPC_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>

#include "thrift/rpc_server.h"

namespace fabps::rpc {

// Adds --max-connections, --frame-timeout-ms, --first-request-timeout-ms
// and --idle-timeout-ms, writing into `o` (whose values are the defaults).
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
}

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_FLAGS_H_

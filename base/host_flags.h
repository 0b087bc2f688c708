// --host and --advertise-host, the same in every daemon (header only, like
// base/cli.h, so that fabps_base does not compile CLI11). What they mean is
// in base/advertised_address.h.
#ifndef FABPS_BASE_HOST_FLAGS_H_
#define FABPS_BASE_HOST_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "base/advertised_address.h"

namespace fabps {

// Adds --host (into *host, whose value is the default) and
// --advertise-host (into *advertise_host); `published_as` names the store
// key peers read the address from, for --help.
inline void AddHostFlags(CLI::App& app, std::string* host,
                         std::string* advertise_host,
                         const std::string& published_as) {
  app.add_option("--host", *host,
                 "address to listen on (0.0.0.0: every interface, with "
                 "--advertise-host)");
  app.add_option("--advertise-host", *advertise_host,
                 "the address published in " + published_as +
                     " for peers to dial (default: --host)");
}

// After parsing: sets *advertise_host to the host to publish. Returns -1
// when there is one, else prints "<program>: --host: <why>" and returns 2
// (the exit code of a bad flag).
inline int ResolveAdvertisedHost(const char* program, const std::string& host,
                                 std::string* advertise_host) {
  auto advertised = AdvertisedHost(host, *advertise_host);
  if (!advertised.ok()) {
    std::fprintf(stderr, "%s: --host: %s\n", program,
                 advertised.status().message().c_str());
    return 2;
  }
  *advertise_host = *advertised;
  return -1;
}

}  // namespace fabps

#endif  // FABPS_BASE_HOST_FLAGS_H_

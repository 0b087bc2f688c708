// A trainer process for tests where the initializer must die: wins the
// init election (BeginInitParams returns true), prints "holding the init
// election" and then waits, without ever finishing, until it is killed.
//
//   init_holder PROVIDER ADDR...          pservers given, pserver 0 decides
//   init_holder PROVIDER --store SPEC JOB  the store decides
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "trainer/pserver_client.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: init_holder PROVIDER (ADDR... | --store SPEC JOB)\n");
    return 2;
  }
  fabps::trainer::PServerClientOptions o;
  o.provider = argv[1];
  o.interface_address = "127.0.0.1";  // shm ignores it
  o.init_wait_ms = 30000;
  if (std::strcmp(argv[2], "--store") == 0) {
    if (argc != 5) return 2;
    o.store_spec = argv[3];
    o.job = argv[4];
  } else {
    for (int i = 2; i < argc; i++) o.addresses.push_back(argv[i]);
  }
  auto c = fabps::trainer::PServerClient::Connect(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  auto won = (*c)->BeginInitParams(true);
  if (!won.ok() || !*won) {
    std::fprintf(
        stderr, "did not win: %s\n",
        won.ok() ? "another trainer" : won.status().ToString().c_str());
    return 1;
  }
  std::printf("holding the init election\n");
  std::fflush(stdout);
  for (;;) ::pause();  // until the test kills this process
}

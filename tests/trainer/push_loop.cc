// A trainer process for tests where a trainer must die mid-push: waits for
// the parameters, then pushes gradients of 1.0 into "many" forever, printing
// "pushing" once the first push was applied and "pushed 20" after 20.
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/pserver_client.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: push_loop PROVIDER BLOCK_ELEMENTS ADDR...\n");
    return 2;
  }
  fabps::trainer::PServerClientOptions o;
  o.provider = argv[1];
  o.interface_address = "127.0.0.1";  // shm ignores it
  o.block_elements = std::stoull(argv[2]);
  for (int i = 3; i < argc; i++) o.addresses.push_back(argv[i]);
  auto c = fabps::trainer::PServerClient::Connect(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  auto layout = (*c)->layout(fabps::Deadline::InMs(30000));
  if (!layout.ok()) {
    std::fprintf(stderr, "%s\n", layout.status().ToString().c_str());
    return 1;
  }
  auto idx = (*layout)->FindParam("many");
  if (!idx.ok()) return 1;
  const size_t n = fabps::protocol::ElementCount((*layout)->params()[*idx]);
  std::vector<float> g(n, 1.0f);
  for (long i = 0;; i++) {
    auto h = (*c)->SendGrads({{"many", g.data(), n * sizeof(float)}},
                             fabps::Deadline::InMs(30000));
    if (!h.ok()) return 1;
    if (i == 0) {
      if (!(*c)->Wait(*h, fabps::Deadline::InMs(30000)).ok()) return 1;
      std::printf("pushing\n");
      std::fflush(stdout);
    } else if (!(*c)->Wait(*h, fabps::Deadline::InMs(30000)).ok()) {
      return 1;
    }
    if (i == 19) {
      std::printf("pushed 20\n");
      std::fflush(stdout);
    }
  }
}

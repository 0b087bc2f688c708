// A fabric peer for tests that need a real second process: opens the
// provider, registers a buffer, writes "<address hex> <region hex>" to the
// file named by --out (atomically), then serves RMA and counts immediate
// data until SIGTERM or SIGKILL. With --write-to "<address hex> <region
// hex>" it also writes its whole buffer there with immediate data (1, 2,
// ...), one write after another, until stopped or a write fails.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/transport/peer_line.h"
#include "transport/fabric.h"

namespace {
using fabps::Deadline;
using fabps::Status;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// Writes all of `mr` to the target named by `spec`, again and again.
Status WriteUntilStopped(fabps::transport::Endpoint* ep,
                         const fabps::transport::MemoryRegion& mr,
                         const std::string& spec) {
  FABPS_ASSIGN_OR_RETURN(auto target, fabps::transport::ParsePeerLine(spec));
  FABPS_ASSIGN_OR_RETURN(auto peer, ep->AddPeer(target.address));
  const size_t len = std::min<size_t>(mr.size(), target.region.length);
  for (uint64_t n = 1; !g_stop; n++) {
    FABPS_ASSIGN_OR_RETURN(auto c, ep->Write(peer, mr, 0, len, target.region, 0,
                                             n, Deadline::InMs(20000)));
    FABPS_RETURN_IF_ERROR(c.Wait(Deadline::InMs(20000)));
  }
  return Status::OK();
}
}  // namespace

int main(int argc, char** argv) {
  std::string provider = "tcp;ofi_rxm", out, write_to;
  size_t size = size_t{64} << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--provider")
      provider = v;
    else if (k == "--out")
      out = v;
    else if (k == "--size")
      size = std::stoull(v);
    else if (k == "--write-to")
      write_to = v;
    else {
      std::fprintf(stderr, "fabric_peer: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "fabric_peer: --out FILE is required\n");
    return 2;
  }
  signal(SIGTERM, OnSignal);
  fabps::transport::FabricOptions o;
  o.provider = provider;
  o.interface_address = "127.0.0.1";  // shm ignores it
  auto fabric = fabps::transport::OpenFabric(o);
  if (!fabric.ok()) {
    std::fprintf(stderr, "fabric_peer: %s\n",
                 fabric.status().ToString().c_str());
    return 1;
  }
  auto ep = (*fabric)->CreateEndpoint(fabps::transport::ProgressMode::kThread);
  if (!ep.ok()) {
    std::fprintf(stderr, "fabric_peer: %s\n", ep.status().ToString().c_str());
    return 1;
  }
  std::vector<char> buf(size);
  auto mr = (*fabric)->Register(buf.data(), buf.size());
  if (!mr.ok()) {
    std::fprintf(stderr, "fabric_peer: %s\n", mr.status().ToString().c_str());
    return 1;
  }
  std::atomic<uint64_t> imms{0};
  (*ep)->SetImmediateHandler(
      [&](const fabps::transport::ImmediateEvent&) { imms++; });
  {
    std::ofstream f(out + ".tmp");
    f << fabps::transport::EncodePeerLine((*ep)->address(), (*mr)->remote())
      << "\n";
  }
  if (std::rename((out + ".tmp").c_str(), out.c_str()) != 0) return 1;
  if (!write_to.empty()) {
    Status s = WriteUntilStopped(ep->get(), **mr, write_to);
    if (!s.ok() && !g_stop) {
      std::fprintf(stderr, "fabric_peer: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::printf("fabric_peer: %llu immediate events\n",
              static_cast<unsigned long long>(imms.load()));
  return 0;
}

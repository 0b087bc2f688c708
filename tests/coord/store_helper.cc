// A separate process for the coord store tests (several processes sharing
// one store). Usage:
//   coord_store_helper lock SPEC JOB KEY ME   exit 0 if it took KEY, 3 if not
//   coord_store_helper hold SPEC JOB KEY VALUE TTL
//       puts KEY=VALUE with a kept-alive lease and sleeps (up to 120 s) until
//       killed; exit 4 if the lease is lost.
//   coord_store_helper put SPEC JOB KEY VALUE
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "coord/store.h"

using fabps::coord::Compare;
using fabps::coord::OpenStore;
using fabps::coord::StoreOptions;
using fabps::coord::TxnOp;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s lock|hold|put SPEC JOB KEY ...\n", argv[0]);
    return 2;
  }
  const std::string cmd = argv[1];
  StoreOptions opts;
  opts.spec = argv[2];
  opts.job = argv[3];
  const std::string key = argv[4];
  auto store = OpenStore(opts);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  auto& s = **store;
  if (cmd == "lock" && argc == 6) {
    auto r = s.Txn({Compare::Absent(key)}, {TxnOp::Put(key, argv[5])},
                   {TxnOp::Get(key)}, s.DefaultDeadline());
    if (!r.ok()) {
      std::fprintf(stderr, "txn: %s\n", r.status().ToString().c_str());
      return 1;
    }
    std::printf("%s %s\n", argv[5], r->succeeded ? "won" : "lost");
    return r->succeeded ? 0 : 3;
  }
  if (cmd == "put" && argc == 6) {
    auto r = s.Put(key, argv[5], fabps::coord::kNoLease, s.DefaultDeadline());
    if (!r.ok()) {
      std::fprintf(stderr, "put: %s\n", r.status().ToString().c_str());
      return 1;
    }
    return 0;
  }
  if (cmd == "hold" && argc == 7) {
    auto lease = s.GrantLease(std::stoll(argv[6]), s.DefaultDeadline());
    if (!lease.ok()) {
      std::fprintf(stderr, "grant: %s\n", lease.status().ToString().c_str());
      return 1;
    }
    std::atomic<bool> lost{false};
    auto st = s.StartKeepAlive(
        lease->id,
        [&](fabps::coord::LeaseId, const fabps::Status&) { lost = true; });
    auto put = s.Put(key, argv[5], lease->id, s.DefaultDeadline());
    if (!st.ok() || !put.ok()) {
      std::fprintf(stderr, "keepalive/put failed\n");
      return 1;
    }
    std::printf("READY\n");
    std::fflush(stdout);
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < end) {
      if (lost) return 4;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }
  std::fprintf(stderr, "bad arguments\n");
  return 2;
}

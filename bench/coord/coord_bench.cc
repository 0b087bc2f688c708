// Coordination store throughput: Put and a CAS Txn, on the local store and
// on a real etcd (started here on free loopback ports when etcd is
// installed; FABPS_BENCH_ETCD=http://host:port uses a running one instead).
// Each iteration is one synchronous, durable operation; items/s = ops/s.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "coord/store.h"
#include "tests/util/etcd_server.h"
#include "tests/util/subprocess.h"

namespace fabps::coord {
namespace {

struct Env {
  fabps::testing::TempDir dir;
  std::unique_ptr<fabps::testing::EtcdServer> etcd;
  std::string etcd_url;
};

// Created on first use, destroyed by main() so that the etcd started here
// is stopped (by PID) and its directory removed when the benchmark ends.
std::unique_ptr<Env>& EnvSlot() {
  static std::unique_ptr<Env> env;
  return env;
}

Env& TheEnv() {
  std::unique_ptr<Env>& env = EnvSlot();
  if (!env) {
    env = std::make_unique<Env>();
    if (const char* url = std::getenv("FABPS_BENCH_ETCD")) {
      env->etcd_url = url;
    } else if (!fabps::testing::EtcdServer::BinaryPath().empty()) {
      auto s = fabps::testing::EtcdServer::Start();
      if (s.ok()) {
        env->etcd = std::move(*s);
        env->etcd_url = env->etcd->client_url();
      }
    }
  }
  return *env;
}

std::unique_ptr<Store> OpenFor(benchmark::State& state, bool etcd,
                               const std::string& job) {
  StoreOptions o;
  o.job = job;
  if (etcd) {
    if (TheEnv().etcd_url.empty()) {
      state.SkipWithError("etcd not available");
      return nullptr;
    }
    o.spec = "etcd:" + TheEnv().etcd_url;
  } else {
    o.spec = "local:" + TheEnv().dir.File("store");
  }
  auto s = OpenStore(o);
  if (!s.ok()) {
    state.SkipWithError(s.status().ToString().c_str());
    return nullptr;
  }
  return std::move(*s);
}

// Arg 0: backend (0 local, 1 etcd); arg 1: value bytes.
void BM_Put(benchmark::State& state) {
  auto store = OpenFor(state, state.range(0) == 1, "bench-put");
  if (!store) return;
  const std::string value(static_cast<size_t>(state.range(1)), 'v');
  int64_t i = 0;
  for (auto _ : state) {
    auto r = store->Put("k/" + std::to_string(i++ % 64), value, kNoLease,
                        store->DefaultDeadline());
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 1 ? "etcd" : "local");
}

// A compare-and-swap on one key, as the master's state updates do.
void BM_TxnCas(benchmark::State& state) {
  auto store = OpenFor(state, state.range(0) == 1, "bench-txn");
  if (!store) return;
  auto r = store->Put("state", "0", kNoLease, store->DefaultDeadline());
  if (!r.ok()) {
    state.SkipWithError(r.status().ToString().c_str());
    return;
  }
  int64_t rev = *r;
  const std::string value(static_cast<size_t>(state.range(1)), 's');
  for (auto _ : state) {
    auto t = store->Txn({Compare::ModRevisionEquals("state", rev)},
                        {TxnOp::Put("state", value)}, {TxnOp::Get("state")},
                        store->DefaultDeadline());
    if (!t.ok() || !t->succeeded) {
      state.SkipWithError(t.ok() ? "CAS lost" : t.status().ToString().c_str());
      break;
    }
    rev = t->revision;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 1 ? "etcd" : "local");
}

// Reads (no fsync): Get of one key.
void BM_Get(benchmark::State& state) {
  auto store = OpenFor(state, state.range(0) == 1, "bench-get");
  if (!store) return;
  if (!store->Put("k", "v", kNoLease, store->DefaultDeadline()).ok()) {
    state.SkipWithError("put failed");
    return;
  }
  for (auto _ : state) {
    auto g = store->Get("k", store->DefaultDeadline());
    if (!g.ok()) {
      state.SkipWithError(g.status().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 1 ? "etcd" : "local");
}

BENCHMARK(BM_Put)
    ->ArgsProduct({{0, 1}, {64, 4096}})
    ->UseRealTime()
    ->MinTime(1.0);
// Four clients, each with its own Store (as four processes would be), 64 B.
BENCHMARK(BM_Put)
    ->Args({0, 64})
    ->Args({1, 64})
    ->Threads(4)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK(BM_TxnCas)->ArgsProduct({{0, 1}, {64}})->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_Get)->Args({0, 0})->Args({1, 0})->UseRealTime()->MinTime(1.0);

void StopEnv() { EnvSlot().reset(); }

}  // namespace
}  // namespace fabps::coord

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fabps::coord::StopEnv();
  return 0;
}

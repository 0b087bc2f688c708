// Trainers against real fabps-pserver processes over a real fabric:
// exactness of SGD, Adam against a reference, one initializer, dead peers,
// checkpoint recovery.
#include "trainer/pserver_client.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "tests/trainer/client_params.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "tests/util/proc_scan.h"
#include "tests/util/wait_until.h"
#include "transport/fabric.h"

namespace fabps::trainer {
namespace {

using testing::PServerCluster;

using testing::ClientOptions;
using testing::ConnectAndInit;
using testing::Elements;
using testing::GradValue;
using testing::InitAll;
using testing::InitValue;
using testing::kBlock;
using testing::kMs;
using testing::Specs;

class PServerClientTest : public transport::testing::ProviderTest {};

// Three trainers push 4 steps each at once; every trainer then sees every
// update exactly once. `pserver_args` go to each pserver.
void ThreeTrainersAreExact(const std::string& provider,
                           std::vector<std::string> pserver_args) {
  PServerCluster cluster(provider, 2, std::move(pserver_args));
  ASSERT_TRUE(cluster.StartAll().ok());
  const int kTrainers = 3, kSteps = 4;
  std::vector<std::unique_ptr<PServerClient>> clients;
  for (int t = 0; t < kTrainers; t++) {
    auto c = PServerClient::Connect(ClientOptions(cluster, provider));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(*c));
  }
  auto sel = clients[0]->BeginInitParams(true);
  ASSERT_TRUE(sel.ok() && *sel) << sel.status().ToString();
  ASSERT_TRUE(InitAll(clients[0].get()).ok());
  for (int t = 1; t < kTrainers; t++) {
    auto s = clients[t]->BeginInitParams(false);
    ASSERT_TRUE(s.ok() && !*s);
  }
  auto specs = Specs();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kTrainers; t++) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<float>> g(specs.size());
      for (int step = 0; step < kSteps; step++) {
        std::vector<ParamBuffer> bufs;
        for (size_t p = 0; p < specs.size(); p++) {
          g[p].resize(Elements(specs[p]));
          for (size_t i = 0; i < g[p].size(); i++)
            g[p][i] = GradValue(t, step, p, i);
          bufs.push_back(
              {specs[p].name, g[p].data(), g[p].size() * sizeof(float)});
        }
        auto h = clients[t]->SendGrads(bufs, Deadline::InMs(kMs));
        if (!h.ok() || !clients[t]->Wait(*h, Deadline::InMs(kMs)).ok())
          failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  for (int t = 0; t < kTrainers; t++) {
    for (size_t p = 0; p < specs.size(); p++) {
      std::vector<float> got(Elements(specs[p]), -1e9f);
      ASSERT_TRUE(clients[t]
                      ->GetParams({{specs[p].name, got.data(),
                                    got.size() * sizeof(float)}},
                                  Deadline::InMs(kMs))
                      .ok());
      for (size_t i = 0; i < got.size(); i++) {
        float want = InitValue(p, i);
        for (int tt = 0; tt < kTrainers; tt++)
          for (int step = 0; step < kSteps; step++)
            want -= GradValue(tt, step, p, i);
        ASSERT_EQ(got[i], want)
            << specs[p].name << "[" << i << "] seen by trainer " << t;
      }
    }
  }
}

TEST_P(PServerClientTest, SgdFromThreeTrainersIsExact) {
  ThreeTrainersAreExact(GetParam(), {});
}

// Every block's apply handed to a worker: the worker hands its credit to
// the progress thread (DataPlane::SendCredit), which posts it.
TEST_P(PServerClientTest, SgdFromThreeTrainersIsExactWhenAppliesAreHandedOff) {
  ThreeTrainersAreExact(GetParam(), {"--inline-apply-kb", "0"});
}

TEST_P(PServerClientTest, AdamMatchesReference) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = PServerClient::Connect(
      ClientOptions(cluster, GetParam(), RuleKind::kAdam, 0.01));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->BeginInitParams(true).value());
  ASSERT_TRUE(InitAll(c->get()).ok());
  auto specs = Specs();
  const size_t p = 2;  // "many": several blocks on both pservers
  size_t n = Elements(specs[p]);
  std::vector<double> w(n), m(n, 0), v(n, 0);
  for (size_t i = 0; i < n; i++) w[i] = InitValue(p, i);
  std::vector<float> g(n), got(n);
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8, lr = 0.01;
  for (int step = 1; step <= 5; step++) {
    for (size_t i = 0; i < n; i++) g[i] = GradValue(0, step, p, i) * 0.5f;
    auto h = (*c)->SendGrads({{specs[p].name, g.data(), n * sizeof(float)}},
                             Deadline::InMs(kMs));
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE((*c)->Wait(*h, Deadline::InMs(kMs)).ok());
    for (size_t i = 0; i < n; i++) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double mh = m[i] / (1 - std::pow(b1, step)),
             vh = v[i] / (1 - std::pow(b2, step));
      w[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
  }
  ASSERT_TRUE((*c)->GetParams({{specs[p].name, got.data(), n * sizeof(float)}},
                              Deadline::InMs(kMs))
                  .ok());
  for (size_t i = 0; i < n; i++)
    ASSERT_NEAR(got[i], w[i], 1e-4 * (1 + std::fabs(w[i]))) << i;
}

TEST_P(PServerClientTest, OnlyOneTrainerInitializes) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  const int kTrainers = 3;
  std::atomic<int> initializers{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kTrainers; t++) {
    threads.emplace_back([&] {
      auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
      if (!c.ok()) return void(errors++);
      auto sel = (*c)->BeginInitParams(true);  // everyone volunteers
      if (!sel.ok()) return void(errors++);
      if (*sel) {
        initializers++;
        if (!InitAll(c->get()).ok()) errors++;
      }
      std::vector<float> one(1);
      if (!(*c)->GetParams({{"one", one.data(), sizeof(float)}},
                           Deadline::InMs(kMs))
               .ok() ||
          one[0] != InitValue(0, 0)) {
        errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(initializers.load(), 1);
}

// Starts `cluster`; a trainer that initialized every parameter has pulled
// "many" into `many`. Null (with the failure recorded) otherwise.
std::unique_ptr<PServerClient> StartAndPull(PServerCluster& cluster,
                                            const std::string& provider,
                                            std::vector<float>* many) {
  Status started = cluster.StartAll();
  EXPECT_TRUE(started.ok()) << started.ToString();
  if (!started.ok()) return nullptr;
  auto c = ConnectAndInit(cluster, provider);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return nullptr;
  many->assign(3 * (kBlock + 5), 1.0f);
  Status pulled = (*c)->GetParams({{"many", many->data(), many->size() * 4}},
                                  Deadline::InMs(kMs));
  EXPECT_TRUE(pulled.ok()) << pulled.ToString();
  return pulled.ok() ? std::move(c.value()) : nullptr;
}

TEST_P(PServerClientTest, DeadPserverFailsWithinDeadline) {
  PServerCluster cluster(GetParam(), 2);
  std::vector<float> many;
  auto c = StartAndPull(cluster, GetParam(), &many);
  ASSERT_NE(c, nullptr);
  cluster.proc(1).Kill();
  auto start = std::chrono::steady_clock::now();
  Status s;
  for (int i = 0; i < 20 && s.ok(); i++) {
    auto h = c->SendGrads({{"many", many.data(), many.size() * 4}},
                          Deadline::InMs(2000));
    s = h.ok() ? c->Wait(*h, Deadline::InMs(2000)) : h.status();
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_FALSE(s.ok()) << "pushes to a dead pserver kept succeeding";
  EXPECT_LT(secs, 30.0);
  std::printf("error seen: %s after %.1f s\n", s.ToString().c_str(), secs);
}

// True when this process maps a pserver's SharedMemory: the shm provider's
// copy-free path (transport/local_shares.h) is in use.
bool MapsPserverMemory() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:fabps-") != std::string::npos) return true;
  }
  return false;
}

// A pull from a pserver that was killed fails (within its deadline) instead
// of handing back the last values: over shm the trainer reads the pserver's
// arena through its own mapping, which outlives the pserver.
TEST_P(PServerClientTest, PullFromADeadPserverFails) {
  PServerCluster cluster(GetParam(), 1);
  std::vector<float> many;
  auto c = StartAndPull(cluster, GetParam(), &many);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(many[kBlock + 7], InitValue(2, kBlock + 7));
  EXPECT_EQ(MapsPserverMemory(), GetParam() == "shm");
  cluster.proc(0).Kill();
  auto start = std::chrono::steady_clock::now();
  Status s = c->GetParams({{"many", many.data(), many.size() * 4}},
                          Deadline::InMs(5000));
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_FALSE(s.ok()) << "a pull from a dead pserver succeeded";
  EXPECT_LT(secs, 20.0);
  std::printf("error seen: %s after %.1f s\n", s.ToString().c_str(), secs);
}

TEST_P(PServerClientTest, RestartedPserverServesItsCheckpoint) {
  PServerCluster cluster(GetParam(), 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  std::vector<float> before(3 * (kBlock + 5));
  {
    auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->BeginInitParams(true).value());
    ASSERT_TRUE(InitAll(c->get()).ok());
    std::vector<float> g(before.size(), 2.0f);
    auto h = (*c)->SendGrads({{"many", g.data(), g.size() * 4}},
                             Deadline::InMs(kMs));
    ASSERT_TRUE(h.ok() && (*c)->Wait(*h, Deadline::InMs(kMs)).ok());
    ASSERT_TRUE((*c)->GetParams({{"many", before.data(), before.size() * 4}},
                                Deadline::InMs(kMs))
                    .ok());
  }
  // SIGTERM: the pserver checkpoints and exits 0; it comes back from it.
  auto st = cluster.proc(0).Stop(20000);
  ASSERT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0)
      << testing::ReadFileOrEmpty(cluster.log(0));
  ASSERT_TRUE(cluster.Start(0).ok());
  auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->BeginInitParams(true).value())
      << "a recovered pserver is initialized";
  std::vector<float> after(before.size(), -1);
  ASSERT_TRUE((*c)->GetParams({{"many", after.data(), after.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  EXPECT_EQ(after, before);
}

TEST_P(PServerClientTest, WrongSizesAndNamesAreRefused) {
  PServerCluster cluster(GetParam(), 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> buf(10);
  auto h = (*c)->SendGrads({{"block", buf.data(), buf.size() * 4}},
                           Deadline::InMs(kMs));
  EXPECT_EQ(h.status().code(), Status::Code::kInvalidArgument);
  auto h2 = (*c)->SendGrads({{"nope", buf.data(), 4}}, Deadline::InMs(kMs));
  EXPECT_EQ(h2.status().code(), Status::Code::kNotFound);
  EXPECT_FALSE(
      (*c)->GetParams({{"one", buf.data(), 8}}, Deadline::InMs(kMs)).ok());
}

// Pulls started asynchronously beside each other are waited on like pushes.
TEST_P(PServerClientTest, AsyncPullsAreWaitedOnLikePushes) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto specs = Specs();
  std::vector<float> g(Elements(specs[2]), 3.0f);
  auto h =
      (*c)->SendGrads({{"many", g.data(), g.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok() && (*c)->Wait(*h, Deadline::InMs(kMs)).ok());
  std::vector<float> many(g.size(), -1), block(kBlock, -1);
  auto pm = (*c)->GetParamsAsync({{"many", many.data(), many.size() * 4}},
                                 Deadline::InMs(kMs));
  auto pb = (*c)->GetParamsAsync({{"block", block.data(), block.size() * 4}},
                                 Deadline::InMs(kMs));
  ASSERT_TRUE(pm.ok()) << pm.status().ToString();
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  ASSERT_TRUE((*c)->Wait(*pb, Deadline::InMs(kMs)).ok());
  ASSERT_TRUE((*c)->Wait(*pm, Deadline::InMs(kMs)).ok());
  for (size_t i = 0; i < many.size(); i++)
    ASSERT_EQ(many[i], InitValue(2, i) - 3.0f) << i;
  for (size_t i = 0; i < block.size(); i++)
    ASSERT_EQ(block[i], InitValue(1, i)) << i;
  // A bad buffer starts nothing.
  EXPECT_EQ(
      (*c)->GetParamsAsync({{"nope", block.data(), 4}}, Deadline::InMs(kMs))
          .status()
          .code(),
      Status::Code::kNotFound);
}

// Finished waits in slices and judges nothing: false while the pserver is
// frozen, however often it is asked, then true once the push is applied;
// Wait then reports it OK (a Wait that timed out would have failed the step
// and marked the client for a reconnect).
TEST_P(PServerClientTest, FinishedWaitsInSlicesWithoutBreakingTheClient) {
  PServerCluster cluster(GetParam(), 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> g(kBlock, 1.0f), block(kBlock);
  ASSERT_TRUE((*c)->GetParams({{"block", block.data(), block.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  EXPECT_TRUE(PServerClient::Finished(nullptr, Deadline::InMs(0)));
  ASSERT_TRUE(cluster.proc(0).Signal(SIGSTOP).ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return testing::AllThreadsStopped(cluster.proc(0).pid()); },
      Deadline::InMs(10000)));
  auto h =
      (*c)->SendGrads({{"block", g.data(), g.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  for (int i = 0; i < 5; i++)
    EXPECT_FALSE(PServerClient::Finished(*h, Deadline::InMs(20)));
  ASSERT_TRUE(cluster.proc(0).Signal(SIGCONT).ok());
  auto end = Deadline::InMs(kMs);
  while (!PServerClient::Finished(*h, Deadline::InMs(20)))
    ASSERT_FALSE(end.Expired()) << "the push never finished";
  EXPECT_TRUE((*c)->Wait(*h, Deadline::InMs(kMs)).ok());
  std::vector<float> after(kBlock);
  ASSERT_TRUE((*c)->GetParams({{"block", after.data(), after.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  for (size_t i = 0; i < kBlock; i++) ASSERT_EQ(after[i], block[i] - 1.0f);
}

// The Try calls start what needs no wait and leave the rest, untouched, to
// the waiting calls: not before the parameters exist or this client has
// registered with the pservers, not when a pserver has
// fewer free slots than the push has blocks for it (3 blocks of "many"
// against 2 slots; 1 block while both are taken by a frozen pserver).
TEST_P(PServerClientTest, TryCallsStartOnlyWhatNeedsNoWait) {
  PServerCluster cluster(GetParam(), 1, {"--slots-per-trainer", "2"});
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> block(kBlock, -1), g(kBlock, 1.0f);
  auto early = (*c)->TryGetParamsAsync(
      {{"block", block.data(), block.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(*early, nullptr);  // not initialized: it would wait
  ASSERT_TRUE((*c)->BeginInitParams(true).value());
  ASSERT_TRUE(InitAll(c->get()).ok());
  auto unregistered = (*c)->TrySendGrads({{"block", g.data(), g.size() * 4}},
                                         Deadline::InMs(kMs));
  ASSERT_TRUE(unregistered.ok()) << unregistered.status().ToString();
  EXPECT_EQ(*unregistered, nullptr);  // registering takes RPCs: a wait
  ASSERT_TRUE((*c)->GetParams({{"block", block.data(), block.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());

  auto push = (*c)->TrySendGrads({{"block", g.data(), g.size() * 4}},
                                 Deadline::InMs(kMs));
  ASSERT_TRUE(push.ok()) << push.status().ToString();
  ASSERT_NE(*push, nullptr);
  ASSERT_TRUE((*c)->Wait(*push, Deadline::InMs(kMs)).ok());
  auto pull = (*c)->TryGetParamsAsync(
      {{"block", block.data(), block.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(pull.ok() && *pull != nullptr);
  ASSERT_TRUE((*c)->Wait(*pull, Deadline::InMs(kMs)).ok());
  for (size_t i = 0; i < kBlock; i++)
    ASSERT_EQ(block[i], InitValue(1, i) - 1.0f) << i;
  EXPECT_EQ((*c)->TrySendGrads({{"nope", g.data(), 4}}, Deadline::InMs(kMs))
                .status()
                .code(),
            Status::Code::kNotFound);

  std::vector<float> many(Elements(Specs()[2]), 1.0f);
  auto three = (*c)->TrySendGrads({{"many", many.data(), many.size() * 4}},
                                  Deadline::InMs(kMs));
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(*three, nullptr);
  auto waited = (*c)->SendGrads({{"many", many.data(), many.size() * 4}},
                                Deadline::InMs(kMs));
  ASSERT_TRUE(waited.ok() && (*c)->Wait(*waited, Deadline::InMs(kMs)).ok());

  ASSERT_TRUE(cluster.proc(0).Signal(SIGSTOP).ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return testing::AllThreadsStopped(cluster.proc(0).pid()); },
      Deadline::InMs(10000)));
  std::vector<std::shared_ptr<PushHandle>> held;
  for (int i = 0; i < 2; i++) {
    auto h = (*c)->TrySendGrads({{"block", g.data(), g.size() * 4}},
                                Deadline::InMs(kMs));
    ASSERT_TRUE(h.ok() && *h != nullptr) << i;
    held.push_back(*h);
  }
  auto full = (*c)->TrySendGrads({{"block", g.data(), g.size() * 4}},
                                 Deadline::InMs(kMs));
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(*full, nullptr);  // both slots wait for the frozen pserver
  ASSERT_TRUE(cluster.proc(0).Signal(SIGCONT).ok());
  for (auto& h : held) ASSERT_TRUE((*c)->Wait(h, Deadline::InMs(kMs)).ok());
  ASSERT_TRUE((*c)->GetParams({{"block", block.data(), block.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  for (size_t i = 0; i < kBlock; i++)  // 1 + 2 pushes of 1, none lost
    ASSERT_EQ(block[i], InitValue(1, i) - 3.0f) << i;
}

// The pserver's threads carry names (top -H, perf, /proc): its fabric's
// progress thread, its apply workers and its control-plane server; so does
// the trainer library's progress thread in this process.
TEST_P(PServerClientTest, ThreadsAreNamed) {
  // Every push handed to an apply worker (small ones are applied by the
  // progress thread otherwise).
  PServerCluster cluster(GetParam(), 1, {"--inline-apply-kb", "0"});
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> g(kBlock, 1.0f);
  auto h =
      (*c)->SendGrads({{"block", g.data(), g.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE((*c)->Wait(*h, Deadline::InMs(kMs)).ok());
  auto has = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::string> ps = testing::ThreadNames(cluster.proc(0).pid());
  std::string all;
  for (const auto& n : ps) all += n + " ";
  EXPECT_TRUE(has(ps, "fabps-progress")) << all;
  EXPECT_TRUE(has(ps, "fabps-apply")) << all;
  EXPECT_TRUE(has(ps, "fabps-rpc")) << all;
  EXPECT_TRUE(has(testing::ThreadNames(::getpid()), "fabps-progress"));
}

// One client shared by threads: calls are serialized inside, nothing is
// lost.
TEST_P(PServerClientTest, ClientSharedByThreadsIsExact) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const int kThreads = 3, kPushes = 10;
  size_t n = Elements(Specs()[2]);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      std::vector<float> g(n, 1.0f), w(n);
      for (int i = 0; i < kPushes; i++) {
        auto h =
            (*c)->SendGrads({{"many", g.data(), n * 4}}, Deadline::InMs(kMs));
        if (!h.ok() || !(*c)->Wait(*h, Deadline::InMs(kMs)).ok()) errors++;
        if (!(*c)->GetParams({{"many", w.data(), n * 4}}, Deadline::InMs(kMs))
                 .ok())
          errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);
  std::vector<float> w(n);
  ASSERT_TRUE(
      (*c)->GetParams({{"many", w.data(), n * 4}}, Deadline::InMs(kMs)).ok());
  for (size_t i = 0; i < n; i++)
    ASSERT_EQ(w[i], InitValue(2, i) - kThreads * kPushes) << i;
}

// SaveModel keeps its deadline: a passed one saves nothing.
TEST_P(PServerClientTest, SaveModelHasADeadline) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::string dir = cluster.dir().File("saved");
  EXPECT_EQ((*c)->SaveModel(dir, Deadline::InMs(0)).code(),
            Status::Code::kTimedOut);
  EXPECT_FALSE(std::filesystem::exists(dir));
  Status s = (*c)->SaveModel(dir, Deadline::InMs(kMs));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(std::filesystem::is_empty(dir));
}

// The init calls keep their deadlines: a passed one sends nothing and a
// later call finishes; a trainer that waits for the holder's grant times
// out at its deadline.
TEST_P(PServerClientTest, InitCallsKeepTheirDeadlines) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->BeginInitParams(true, Deadline::InMs(kMs)).value());
  auto specs = Specs();
  std::vector<std::vector<float>> values(specs.size());
  for (size_t p = 0; p < specs.size(); p++) {
    values[p].resize(Elements(specs[p]));
    for (size_t i = 0; i < values[p].size(); i++)
      values[p][i] = InitValue(p, i);
    ASSERT_TRUE((*c)->InitParam(specs[p], values[p].data(),
                                values[p].size() * sizeof(float))
                    .ok());
  }
  EXPECT_EQ((*c)->FinishInitParams(Deadline::InMs(0)).code(),
            Status::Code::kTimedOut);
  // The grant is still held: another selected trainer waits, until its
  // deadline.
  auto other = PServerClient::Connect(ClientOptions(cluster, GetParam()));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(
      (*other)->BeginInitParams(true, Deadline::InMs(300)).status().code(),
      Status::Code::kTimedOut);
  Status s = (*c)->FinishInitParams(Deadline::InMs(kMs));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE((*other)->BeginInitParams(true, Deadline::InMs(kMs)).value());
  std::vector<float> got(values[2].size(), -1);
  ASSERT_TRUE((*other)
                  ->GetParams({{"many", got.data(), got.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  EXPECT_EQ(got, values[2]);
}

FABPS_INSTANTIATE_TCP_AND_SHM(PServerClientTest);

}  // namespace
}  // namespace fabps::trainer

namespace fabps::trainer {
namespace {

TEST_P(PServerClientTest, ClientRidesOutAPserverRestart) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = ConnectAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> init(3 * (kBlock + 5)), g(init.size(), 1.0f),
      got(init.size());
  ASSERT_TRUE((*c)->GetParams({{"many", init.data(), init.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  // kill -9: the pserver comes back from the checkpoint it wrote at init.
  cluster.proc(1).Kill();
  ASSERT_TRUE(cluster.Start(1).ok());
  Status s;
  int failed_steps = 0;
  for (int step = 0; step < 3; step++) {
    auto h = (*c)->SendGrads({{"many", g.data(), g.size() * 4}},
                             Deadline::InMs(10000));
    s = h.ok() ? (*c)->Wait(*h, Deadline::InMs(5000)) : h.status();
    if (!s.ok()) failed_steps++;
  }
  EXPECT_LE(failed_steps, 1)
      << "only the step that met the dead pserver may fail";
  ASSERT_TRUE((*c)->GetParams({{"many", got.data(), got.size() * 4}},
                              Deadline::InMs(kMs))
                  .ok());
  // Blocks on the restarted pserver 1 came back from the init values and
  // missed the failed step; each block saw whole steps only.
  auto layout = (*c)->layout(Deadline::InMs(kMs));
  ASSERT_TRUE(layout.ok());
  uint32_t param = (*layout)->FindParam("many").value();
  for (const auto& b : (*layout)->blocks()) {
    if (b.param != param) continue;
    // A failed step may have reached some blocks before it failed.
    float want = init[b.first_element] - got[b.first_element];
    ASSERT_TRUE(want == 3.0f || want == 3.0f - failed_steps)
        << "block " << b.id << ": " << want;
    if (b.pserver == 1) {
      EXPECT_EQ(want, 3.0f - failed_steps) << "restarted from init";
    }
    for (uint64_t i = b.first_element; i < b.first_element + b.num_elements;
         i++) {
      ASSERT_EQ(init[i] - got[i], want) << "element " << i << " of block "
                                        << b.id << " on pserver " << b.pserver;
    }
  }
}

}  // namespace
}  // namespace fabps::trainer

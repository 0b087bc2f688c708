// PServerClient::PushPull against real fabps-pserver processes: every block
// is read back after its own push is applied (exact SGD step by step, also
// with fewer landing slots than blocks and with trainers side by side),
// parameters named in only one list are only pushed or only pulled, a bad
// argument moves nothing, and a transfer given up reads nothing more.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/trainer/client_params.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "tests/util/proc_scan.h"
#include "tests/util/wait_until.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {
namespace {

using testing::ClientOptions;
using testing::ConnectAndInit;
using testing::Elements;
using testing::GradValue;
using testing::InitAll;
using testing::InitValue;
using testing::kBlock;
using testing::kMs;
using testing::PServerCluster;
using testing::Specs;

class PushPullTest : public transport::testing::ProviderTest {};

// Buffers for every parameter of Specs(): gradients of (trainer, step) and
// room for the values read back.
struct StepBuffers {
  std::vector<std::vector<float>> grads, values;
  std::vector<ParamBuffer> grad_list, value_list;

  void Fill(int trainer, int step) {
    auto specs = Specs();
    grads.resize(specs.size());
    values.resize(specs.size());
    grad_list.clear();
    value_list.clear();
    for (size_t p = 0; p < specs.size(); p++) {
      grads[p].resize(Elements(specs[p]));
      for (size_t i = 0; i < grads[p].size(); i++)
        grads[p][i] = GradValue(trainer, step, p, i);
      values[p].assign(Elements(specs[p]), -1e9f);
      grad_list.push_back(
          {specs[p].name, grads[p].data(), grads[p].size() * sizeof(float)});
      value_list.push_back(
          {specs[p].name, values[p].data(), values[p].size() * sizeof(float)});
    }
  }
};

// Starts the cluster's pservers and a trainer that initialized them.
Result<std::unique_ptr<PServerClient>> StartAndInit(
    PServerCluster& cluster, const std::string& provider) {
  FABPS_RETURN_IF_ERROR(cluster.StartAll());
  return ConnectAndInit(cluster, provider);
}

// Pulls every parameter of Specs() and expects element i of parameter p to
// be want(p, i).
void ExpectPulled(PServerClient* c,
                  const std::function<float(size_t, size_t)>& want) {
  auto specs = Specs();
  for (size_t p = 0; p < specs.size(); p++) {
    std::vector<float> got(Elements(specs[p]));
    ASSERT_TRUE(c->GetParams({{specs[p].name, got.data(), got.size() * 4}},
                             Deadline::InMs(kMs))
                    .ok());
    for (size_t i = 0; i < got.size(); i++)
      ASSERT_EQ(got[i], want(p, i)) << specs[p].name << "[" << i << "]";
  }
}

// One trainer, step by step: what each PushPull reads is exactly the
// values after that step's push, in every block. Two landing slots per
// pserver for "many"'s 4 blocks: pushes wait for credits while the reads
// those credits start are under way. Every apply goes to a worker thread,
// so a read that did not wait for its credit could overtake it (also over
// tcp, where the connection keeps a read behind the write).
TEST_P(PushPullTest, EachBlockIsReadAfterItsPushIsApplied) {
  PServerCluster cluster(
      GetParam(), 2, {"--slots-per-trainer", "2", "--inline-apply-kb", "0"});
  auto c = StartAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto specs = Specs();
  std::vector<std::vector<float>> want(specs.size());
  for (size_t p = 0; p < specs.size(); p++) {
    want[p].resize(Elements(specs[p]));
    for (size_t i = 0; i < want[p].size(); i++) want[p][i] = InitValue(p, i);
  }
  StepBuffers b;
  for (int step = 0; step < 5; step++) {
    b.Fill(0, step);
    auto h = (*c)->PushPull(b.grad_list, b.value_list, Deadline::InMs(kMs));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    Status s = (*c)->Wait(*h, Deadline::InMs(kMs));
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t p = 0; p < specs.size(); p++) {
      for (size_t i = 0; i < want[p].size(); i++) {
        want[p][i] -= b.grads[p][i];
        ASSERT_EQ(b.values[p][i], want[p][i])
            << specs[p].name << "[" << i << "] after step " << step;
      }
    }
  }
}

// Three trainers push and pull side by side; afterwards every update is
// in exactly once.
TEST_P(PushPullTest, TrainersSideBySideAreExact) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  const int kTrainers = 3, kSteps = 4;
  std::vector<std::unique_ptr<PServerClient>> clients;
  for (int t = 0; t < kTrainers; t++) {
    auto c = PServerClient::Connect(ClientOptions(cluster, GetParam()));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE((*c)->BeginInitParams(t == 0).ok());
    if (t == 0) {
      ASSERT_TRUE(InitAll(c->get()).ok());
    }
    clients.push_back(std::move(*c));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kTrainers; t++) {
    threads.emplace_back([&, t] {
      StepBuffers b;
      for (int step = 0; step < kSteps; step++) {
        b.Fill(t, step);
        auto h = clients[t]->PushPull(b.grad_list, b.value_list,
                                      Deadline::InMs(kMs));
        if (!h.ok() || !clients[t]->Wait(*h, Deadline::InMs(kMs)).ok())
          failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  ExpectPulled(clients[1].get(), [&](size_t p, size_t i) {
    float want = InitValue(p, i);
    for (int t = 0; t < kTrainers; t++)
      for (int step = 0; step < kSteps; step++)
        want -= GradValue(t, step, p, i);
    return want;
  });
}

// A parameter only in `grads` is pushed and not read; one only in `params`
// is read at once, whatever the pushes do.
TEST_P(PushPullTest, ParametersInOneListAreOnlyPushedOrOnlyPulled) {
  PServerCluster cluster(GetParam(), 2);
  auto c = StartAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  StepBuffers b;
  b.Fill(0, 0);
  // grads: "one", "many"; params: "many", "block".
  std::vector<ParamBuffer> grads = {b.grad_list[0], b.grad_list[2]};
  std::vector<ParamBuffer> params = {b.value_list[2], b.value_list[1]};
  auto h = (*c)->PushPull(grads, params, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE((*c)->Wait(*h, Deadline::InMs(kMs)).ok());
  EXPECT_EQ(b.values[0][0], -1e9f);  // "one" was not read
  for (size_t i = 0; i < b.values[1].size(); i++)
    ASSERT_EQ(b.values[1][i], InitValue(1, i)) << "block[" << i << "]";
  for (size_t i = 0; i < b.values[2].size(); i++)
    ASSERT_EQ(b.values[2][i], InitValue(2, i) - b.grads[2][i])
        << "many[" << i << "]";
  float one = 0;
  ASSERT_TRUE(
      (*c)->GetParams({{"one", &one, sizeof(one)}}, Deadline::InMs(kMs)).ok());
  EXPECT_EQ(one, InitValue(0, 0) - b.grads[0][0]);  // "one" was pushed
}

// A bad buffer in either list moves nothing: no push is applied, no value
// read. Sync pservers refuse a PushPull (it has no step).
TEST_P(PushPullTest, BadArgumentsMoveNothing) {
  PServerCluster cluster(GetParam(), 1);
  auto c = StartAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  StepBuffers b;
  b.Fill(0, 0);
  std::vector<float> short_buf(3);
  std::vector<ParamBuffer> bad_grads = b.grad_list;
  bad_grads.push_back({"block", short_buf.data(), short_buf.size() * 4});
  auto h = (*c)->PushPull(bad_grads, b.value_list, Deadline::InMs(kMs));
  EXPECT_EQ(h.status().code(), Status::Code::kInvalidArgument);
  std::vector<ParamBuffer> bad_params = b.value_list;
  bad_params.push_back({"nope", short_buf.data(), 4});
  h = (*c)->PushPull(b.grad_list, bad_params, Deadline::InMs(kMs));
  EXPECT_EQ(h.status().code(), Status::Code::kNotFound);
  for (const auto& v : b.values) {
    for (float x : v) ASSERT_EQ(x, -1e9f);
  }
  ExpectPulled(c->get(), InitValue);

  PServerCluster sync(GetParam(), 1, {"--mode", "sync", "--num-trainers", "1"});
  auto s = StartAndInit(sync, GetParam());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->PushPull(b.grad_list, b.value_list, Deadline::InMs(kMs))
                .status()
                .code(),
            Status::Code::kFailedPrecondition);
}

// A transfer whose Wait timed out reads nothing more into the caller's
// buffers: the pserver, frozen while the push is in flight, applies it once
// it resumes and credits every block, and those credits finish the transfer
// without starting its reads. The push itself is not undone.
TEST_P(PushPullTest, AbandonedTransferReadsNothingMore) {
  PServerCluster cluster(GetParam(), 1);
  auto c = StartAndInit(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  StepBuffers b;
  b.Fill(0, 0);
  // Registered with the pserver (the first data call's RPCs) before it
  // freezes; then the buffers hold what no read gives again.
  ASSERT_TRUE((*c)->GetParams(b.value_list, Deadline::InMs(kMs)).ok());
  b.Fill(0, 0);
  ASSERT_TRUE(cluster.proc(0).Signal(SIGSTOP).ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return testing::AllThreadsStopped(cluster.proc(0).pid()); },
      Deadline::InMs(10000)));
  auto h = (*c)->PushPull(b.grad_list, b.value_list, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ((*c)->Wait(*h, Deadline::InMs(300)).code(),
            Status::Code::kTimedOut);
  ASSERT_TRUE(cluster.proc(0).Signal(SIGCONT).ok());
  // Every credit comes and finishes its part (Finished records nothing
  // and keeps the client's endpoint, which delivers them).
  auto end = Deadline::InMs(kMs);
  while (!PServerClient::Finished(*h, Deadline::InMs(20)))
    ASSERT_FALSE(end.Expired()) << "the credits never came";
  for (const auto& v : b.values) {
    for (float x : v) ASSERT_EQ(x, -1e9f) << "a read landed after Wait gave up";
  }
  ExpectPulled(c->get(), [&](size_t p, size_t i) {
    return InitValue(p, i) - b.grads[p][i];
  });
}

FABPS_INSTANTIATE_TCP_AND_SHM(PushPullTest);

}  // namespace
}  // namespace fabps::trainer

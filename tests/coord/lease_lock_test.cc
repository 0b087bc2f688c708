// LeaseLock over both backends: one owner at a time, take-over after release
// or lease expiry, first-free index claims, fencing of a deposed owner, and
// loss of the lease when the store goes away.
#include "coord/lease_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class LeaseLockTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    auto env = BackendEnv::Create(GetParam());
    if (!env.ok() && env.status().code() == Code::kNotFound)
      GTEST_SKIP() << env.status().ToString();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(*env);
    for (auto* s : {&a_, &b_}) {
      auto st = env_->Open("locks");
      ASSERT_TRUE(st.ok()) << st.status().ToString();
      *s = std::move(*st);
    }
  }
  static LeaseLockOptions Opts(const std::string& who, int64_t ttl = 2) {
    LeaseLockOptions o;
    o.ttl_seconds = ttl;
    o.value = who;
    o.retry_ms = 50;
    return o;
  }
  Deadline D(int64_t ms = 5000) const { return Deadline::InMs(ms); }

  std::unique_ptr<BackendEnv> env_;
  std::unique_ptr<Store> a_, b_;  // two "processes"
};

TEST_P(LeaseLockTest, OneOwnerAndTakeOverAfterRelease) {
  auto la = LeaseLock::TryAcquire(a_.get(), "master/lock", Opts("a"), D());
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  EXPECT_TRUE((*la)->held());
  auto lb = LeaseLock::TryAcquire(b_.get(), "master/lock", Opts("b"), D());
  ASSERT_EQ(lb.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(lb.status().message().find("'a'"), std::string::npos)
      << lb.status().ToString();
  auto got = b_->Get("master/lock", D());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, "a");
  EXPECT_EQ(got->lease, (*la)->lease());

  std::atomic<bool> done{false};
  Result<std::unique_ptr<LeaseLock>> waited = Status::Unavailable("not yet");
  std::thread waiter([&] {
    waited = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(20000));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done.load()) << "acquired a held lock";
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*la)->Release(D()).ok());
  EXPECT_FALSE((*la)->held());
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  got = a_->Get("master/lock", D());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, "b");
}

TEST_P(LeaseLockTest, DeadOwnersLockExpiresAndIsTakenOver) {
  auto la = LeaseLock::TryAcquire(a_.get(), "master/lock", Opts("a"), D());
  ASSERT_TRUE(la.ok());
  int64_t ttl = 2;
  // The owner "dies": its store (and keep-alive) goes away, nothing revoked.
  la->reset();
  a_.reset();
  auto start = std::chrono::steady_clock::now();
  auto lb = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(20000));
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, ttl + 4.0) << "take-over took longer than the TTL allows";
}

TEST_P(LeaseLockTest, FirstFreeIndexAndReclaim) {
  uint32_t i0 = 99, i1 = 99, i2 = 99;
  auto l0 = LeaseLock::AcquireFirstFree(a_.get(), "ps/", "/lock", 2, Opts("x"),
                                        D(), {}, &i0);
  auto l1 = LeaseLock::AcquireFirstFree(b_.get(), "ps/", "/lock", 2, Opts("y"),
                                        D(), {}, &i1);
  ASSERT_TRUE(l0.ok() && l1.ok());
  EXPECT_EQ(i0, 0u);
  EXPECT_EQ(i1, 1u);
  // All taken: a third waits until its deadline.
  auto l2 = LeaseLock::AcquireFirstFree(b_.get(), "ps/", "/lock", 2, Opts("z"),
                                        D(600), {}, &i2);
  EXPECT_EQ(l2.status().code(), Code::kTimedOut);
  // Cancelled waits end at once.
  l2 = LeaseLock::AcquireFirstFree(
      b_.get(), "ps/", "/lock", 2, Opts("z"), D(20000), [] { return true; },
      &i2);
  EXPECT_EQ(l2.status().code(), Code::kCancelled);
  // Index 0 frees up: the next claimant gets exactly that one.
  ASSERT_TRUE((*l0)->Release(D()).ok());
  l2 = LeaseLock::AcquireFirstFree(b_.get(), "ps/", "/lock", 2, Opts("z"), D(),
                                   {}, &i2);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  EXPECT_EQ(i2, 0u);
}

TEST_P(LeaseLockTest, FenceStopsADeposedOwner) {
  auto la = LeaseLock::TryAcquire(a_.get(), "master/lock", Opts("a"), D());
  ASSERT_TRUE(la.ok());
  Compare fence_a = (*la)->Fence();
  auto w = a_->Txn({fence_a}, {TxnOp::Put("master/state", "a1")}, {}, D());
  ASSERT_TRUE(w.ok() && w->succeeded);
  // a is deposed (its lease revoked behind its back); b takes over.
  ASSERT_TRUE(b_->Revoke((*la)->lease(), D()).ok());
  auto lb = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(10000));
  ASSERT_TRUE(lb.ok());
  // Same key, same value shape: only the create revision tells them apart.
  w = a_->Txn({fence_a}, {TxnOp::Put("master/state", "a2")}, {}, D());
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->succeeded) << "a deposed owner's fenced write went through";
  w = b_->Txn({(*lb)->Fence()}, {TxnOp::Put("master/state", "b1")}, {}, D());
  ASSERT_TRUE(w.ok() && w->succeeded);
  // a learns it lost the lease within about a TTL.
  for (int i = 0; i < 100 && (*la)->held(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE((*la)->held());
}

TEST_P(LeaseLockTest, StoreGoneForLongerThanTheTtlLosesTheLock) {
  if (GetParam() != Backend::kEtcd) GTEST_SKIP() << "needs a store to stop";
  std::atomic<int> lost{0};
  LeaseLockOptions o = Opts("a");
  o.on_lost = [&](const Status&) { lost++; };
  auto la = LeaseLock::TryAcquire(a_.get(), "master/lock", o, D());
  ASSERT_TRUE(la.ok());
  ASSERT_TRUE(env_->etcd()->Stop().ok());
  for (int i = 0; i < 100 && (*la)->held(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE((*la)->held()) << "kept acting as owner with etcd down";
  EXPECT_EQ(lost.load(), 1);
  ASSERT_TRUE(env_->etcd()->Restart().ok());
  // After etcd is back the lock can be taken again (the old lease expired).
  auto lb = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(20000));
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, LeaseLockTest,
                         ::testing::Values(Backend::kLocal, Backend::kEtcd),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return BackendName(info.param);
                         });

}  // namespace
}  // namespace fabps::coord::testing

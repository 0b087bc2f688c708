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

class LeaseLockTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    a_ = std::move(store_);
    b_ = OpenStoreOrDie();
    ASSERT_TRUE(a_ && b_);
  }
  static LeaseLockOptions Opts(const std::string& who, int64_t ttl = 2) {
    LeaseLockOptions o;
    o.ttl_seconds = ttl;
    o.value = who;
    o.retry_ms = 50;
    return o;
  }

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

  // The waiter asks `cancelled` after each attempt that found the lock
  // taken: two such answers prove it tried and was refused.
  std::atomic<bool> done{false};
  std::atomic<int> refused{0};
  Result<std::unique_ptr<LeaseLock>> waited = Status::Unavailable("not yet");
  std::thread waiter([&] {
    waited = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(20000),
                                [&] { return ++refused, false; });
    done = true;
  });
  EXPECT_TRUE(
      WaitUntil([&] { return refused.load() >= 2 || done.load(); }, D(10000)));
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

TEST_P(LeaseLockTest, FirstFreeKeyAndReclaim) {
  const std::vector<std::string> keys = {"k/0", "k/1"};
  size_t i0 = 99, i1 = 99, i2 = 99;
  auto l0 = LeaseLock::AcquireAny(a_.get(), keys, Opts("x"), D(), {}, &i0);
  auto l1 = LeaseLock::AcquireAny(b_.get(), keys, Opts("y"), D(), {}, &i1);
  ASSERT_TRUE(l0.ok() && l1.ok());
  EXPECT_EQ(i0, 0u);
  EXPECT_EQ(i1, 1u);
  // All taken: a third waits until its deadline.
  auto l2 = LeaseLock::AcquireAny(b_.get(), keys, Opts("z"), D(600), {}, &i2);
  EXPECT_EQ(l2.status().code(), Code::kTimedOut);
  // Cancelled waits end at once.
  l2 = LeaseLock::AcquireAny(
      b_.get(), keys, Opts("z"), D(20000), [] { return true; }, &i2);
  EXPECT_EQ(l2.status().code(), Code::kCancelled);
  EXPECT_EQ(LeaseLock::AcquireAny(b_.get(), {}, Opts("z"), D(), {}, &i2)
                .status()
                .code(),
            Code::kInvalidArgument);
  // Key 0 frees up: the next claimant gets exactly that one.
  ASSERT_TRUE((*l0)->Release(D()).ok());
  l2 = LeaseLock::AcquireAny(b_.get(), keys, Opts("z"), D(), {}, &i2);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  EXPECT_EQ(i2, 0u);
}

TEST_P(LeaseLockTest, PutIfHeldIsFenced) {
  auto la = LeaseLock::TryAcquire(a_.get(), "l", Opts("a"), D());
  ASSERT_TRUE(la.ok());
  ASSERT_TRUE((*la)->PutIfHeld("l-leased", "1", true, D()).ok());
  ASSERT_TRUE((*la)->PutIfHeld("l-durable", "1", false, D()).ok());
  EXPECT_EQ(b_->Get("l-leased", D())->lease, (*la)->lease());
  EXPECT_EQ(b_->Get("l-durable", D())->lease, kNoLease);
  ASSERT_TRUE(b_->Revoke((*la)->lease(), D()).ok());
  EXPECT_EQ((*la)->PutIfHeld("l-durable", "2", false, D()).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(b_->Get("l-durable", D())->value, "1");
  EXPECT_EQ(b_->Get("l-leased", D()).status().code(), Code::kNotFound);
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
  EXPECT_TRUE(WaitUntil([&] { return !(*la)->held(); }, D(10000)));
}

TEST_P(LeaseLockTest, StoreGoneForLongerThanTheTtlLosesTheLock) {
  if (GetParam() != Backend::kEtcd) GTEST_SKIP() << "needs a store to stop";
  std::atomic<int> lost{0};
  LeaseLockOptions o = Opts("a");
  o.on_lost = [&](const Status&) { lost++; };
  auto la = LeaseLock::TryAcquire(a_.get(), "master/lock", o, D());
  ASSERT_TRUE(la.ok());
  ASSERT_TRUE(env_->etcd()->Stop().ok());
  EXPECT_TRUE(WaitUntil([&] { return !(*la)->held(); }, D(10000)))
      << "kept acting as owner with etcd down";
  // held() turns false first, then on_lost runs (on the keep-alive's
  // thread): wait for it rather than read it at once.
  EXPECT_TRUE(WaitUntil([&] { return lost.load() > 0; }, D(10000)))
      << "on_lost never ran";
  EXPECT_EQ(lost.load(), 1);
  ASSERT_TRUE(env_->etcd()->Restart().ok());
  // After etcd is back the lock can be taken again (the old lease expired).
  auto lb = LeaseLock::Acquire(b_.get(), "master/lock", Opts("b"), D(20000));
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
}

FABPS_INSTANTIATE_OVER_BACKENDS(LeaseLockTest);

}  // namespace
}  // namespace fabps::coord::testing

// PserverClaim over both backends: distinct indices for concurrent
// claimers, agreement on ps/count, take-over of a dead owner's index,
// fencing of a deposed owner, and the checkpoint record.
#include "coord/protocol/pserver_claim.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "coord/protocol/job_keys.h"
#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class PserverClaimTest : public BackendTest {
 protected:
  static PserverClaimOptions Opts(uint32_t n, const std::string& owner) {
    PserverClaimOptions o;
    o.num_pservers = n;
    o.ttl_seconds = 2;
    o.owner = owner;
    o.retry_ms = 50;
    return o;
  }
};

TEST_P(PserverClaimTest, ConcurrentClaimersGetDistinctIndices) {
  constexpr int kClaimers = 3;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kClaimers; i++) stores.push_back(OpenStoreOrDie());
  std::vector<Result<std::unique_ptr<PserverClaim>>> claims;
  for (int i = 0; i < kClaimers; i++)
    claims.emplace_back(Status::Unavailable("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaimers; i++) {
    threads.emplace_back([&, i] {
      claims[i] = PserverClaim::Claim(
          stores[i].get(), Opts(kClaimers, "p" + std::to_string(i)), D(20000));
    });
  }
  for (auto& t : threads) t.join();
  std::set<uint32_t> indices;
  for (auto& c : claims) {
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE((*c)->held());
    indices.insert((*c)->index());
  }
  EXPECT_EQ(indices, (std::set<uint32_t>{0, 1, 2}));
  EXPECT_EQ(store_->Get(keys::kPsCount, D())->value, "3");
  for (uint32_t i = 0; i < kClaimers; i++) {
    auto lock = store_->Get(keys::PsLock(i), D());
    ASSERT_TRUE(lock.ok()) << keys::PsLock(i);
    EXPECT_NE(lock->lease, kNoLease);
  }
  // All taken: one more waits until its deadline.
  auto extra = PserverClaim::Claim(store_.get(), Opts(kClaimers, "x"), D(600));
  EXPECT_EQ(extra.status().code(), Code::kTimedOut)
      << extra.status().ToString();
  // And ends at once when cancelled.
  extra = PserverClaim::Claim(store_.get(), Opts(kClaimers, "x"), D(20000),
                              [] { return true; });
  EXPECT_EQ(extra.status().code(), Code::kCancelled);
}

TEST_P(PserverClaimTest, TheJobsCountMustMatch) {
  auto a = PserverClaim::Claim(store_.get(), Opts(2, "a"), D());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = PserverClaim::Claim(store_.get(), Opts(3, "b"), D());
  EXPECT_EQ(b.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("ps/count 2"), std::string::npos)
      << b.status().ToString();
  ASSERT_TRUE(store_->Put(keys::kPsCount, "two", kNoLease, D()).ok());
  b = PserverClaim::Claim(store_.get(), Opts(2, "b"), D());
  EXPECT_EQ(b.status().code(), Code::kCorruption) << b.status().ToString();
  PserverClaimOptions bad = Opts(2, "b");
  bad.index = 2;
  EXPECT_EQ(PserverClaim::Claim(store_.get(), bad, D()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      PserverClaim::Claim(store_.get(), Opts(0, "b"), D()).status().code(),
      Code::kInvalidArgument);
}

TEST_P(PserverClaimTest, TheJobsModeMustMatch) {
  PserverClaimOptions sync2 = Opts(2, "a");
  sync2.mode = {true, 2};
  auto a = PserverClaim::Claim(store_.get(), sync2, D());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto v = store_->Get(keys::kPsMode, D());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, "sync 2");
  for (keys::PsMode other : {keys::PsMode{}, keys::PsMode{true, 3}}) {
    PserverClaimOptions o = Opts(2, "b");
    o.mode = other;
    auto b = PserverClaim::Claim(store_.get(), o, D());
    EXPECT_EQ(b.status().code(), Code::kFailedPrecondition);
    EXPECT_NE(b.status().message().find("ps/mode 'sync 2'"), std::string::npos)
        << b.status().ToString();
  }
  sync2.owner = "b";
  auto b = PserverClaim::Claim(store_.get(), sync2, D());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE((*a)->index(), (*b)->index());
}

// The owner dies (its process, here its Store, goes away without a word):
// its address vanishes with its lease, and a replacement takes the index.
TEST_P(PserverClaimTest, ADeadOwnersIndexIsTakenOver) {
  auto dying_store = OpenStoreOrDie();
  auto dying = PserverClaim::Claim(dying_store.get(), Opts(1, "dying"), D());
  ASSERT_TRUE(dying.ok()) << dying.status().ToString();
  ASSERT_EQ((*dying)->index(), 0u);
  ASSERT_TRUE((*dying)->PublishAddress("10.0.0.1:1", D()).ok());
  ASSERT_TRUE(
      (*dying)->RecordCheckpoint({"/ckpt/ps-0", "f", 7, 100}, D()).ok());
  dying->reset();
  dying_store.reset();

  auto next = PserverClaim::Claim(store_.get(), Opts(1, "next"), D(20000));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ((*next)->index(), 0u);
  EXPECT_EQ(store_->Get(keys::PsAddr(0), D()).status().code(), Code::kNotFound)
      << "the dead owner's address outlived its lease";
  EXPECT_EQ(store_->Get(keys::PsLock(0), D())->value, "next");
  // The record outlives its writer: the replacement recovers from it.
  auto last = ReadCheckpointRecord(store_.get(), 0, D());
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(*last, (CheckpointRecord{"/ckpt/ps-0", "f", 7, 100}));
}

TEST_P(PserverClaimTest, ReleaseHandsTheIndexOver) {
  auto first = PserverClaim::Claim(store_.get(), Opts(1, "first"), D());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->PublishAddress("10.0.0.1:1", D()).ok());
  auto other = OpenStoreOrDie();
  PserverClaimOptions exact = Opts(1, "second");
  exact.index = 0;
  Result<std::unique_ptr<PserverClaim>> second = Status::Unavailable("");
  std::thread t(
      [&] { second = PserverClaim::Claim(other.get(), exact, D(20000)); });
  ASSERT_TRUE((*first)->Release(D()).ok());
  EXPECT_FALSE((*first)->held());
  t.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->index(), 0u);
  EXPECT_EQ(store_->Get(keys::PsAddr(0), D()).status().code(), Code::kNotFound);
}

TEST_P(PserverClaimTest, ADeposedOwnerCannotWrite) {
  auto a = PserverClaim::Claim(store_.get(), Opts(1, "a"), D());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->PublishAddress("a:1", D()).ok());
  auto other = OpenStoreOrDie();
  ASSERT_TRUE(other->Revoke((*a)->lease(), D()).ok());  // a is deposed
  auto b = PserverClaim::Claim(other.get(), Opts(1, "b"), D(20000));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE((*b)->PublishAddress("b:1", D()).ok());
  ASSERT_TRUE((*b)->RecordCheckpoint({"/b", "", 0, 2}, D()).ok());

  EXPECT_EQ((*a)->PublishAddress("a:2", D()).code(), Code::kFailedPrecondition);
  EXPECT_EQ((*a)->RecordCheckpoint({"/a", "", 0, 3}, D()).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(store_->Get(keys::PsAddr(0), D())->value, "b:1");
  EXPECT_EQ(ReadCheckpointRecord(store_.get(), 0, D())->dir, "/b");
  EXPECT_TRUE(WaitUntil([&] { return !(*a)->held(); }, D(10000)));
}

TEST_P(PserverClaimTest, TheNewestCheckpointRecordIsRead) {
  EXPECT_EQ(ReadCheckpointRecord(store_.get(), 0, D()).status().code(),
            Code::kNotFound);
  auto c = PserverClaim::Claim(store_.get(), Opts(2, "c"), D());
  ASSERT_TRUE(c.ok());
  uint32_t i = (*c)->index();
  ASSERT_TRUE((*c)->RecordCheckpoint({"/d", "shard-1", 1, 10}, D()).ok());
  ASSERT_TRUE((*c)->RecordCheckpoint({"/d", "shard-2", 2, 20}, D()).ok());
  auto last = ReadCheckpointRecord(store_.get(), i, D());
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(*last, (CheckpointRecord{"/d", "shard-2", 2, 20}));
  EXPECT_EQ(store_->Get(keys::PsCheckpoint(i), D())->lease, kNoLease);
  EXPECT_EQ((*c)->RecordCheckpoint({"", "", 0, 1}, D()).code(),
            Code::kInvalidArgument);
  // A damaged record is reported with its key, not half-read.
  ASSERT_TRUE(
      store_->Put(keys::PsCheckpoint(i), "dir=/d\n", kNoLease, D()).ok());
  last = ReadCheckpointRecord(store_.get(), i, D());
  EXPECT_EQ(last.status().code(), Code::kCorruption);
  EXPECT_NE(last.status().message().find(keys::PsCheckpoint(i)),
            std::string::npos)
      << last.status().ToString();
}

FABPS_INSTANTIATE_OVER_BACKENDS(PserverClaimTest);

}  // namespace
}  // namespace fabps::coord::testing

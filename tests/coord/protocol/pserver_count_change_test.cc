// PserverCountChange over both backends: refused while a pserver of the job
// holds an index; while it runs no pserver of either count can claim; its
// commit sets ps/count and the records and clears the indices it dropped;
// abandoned, it leaves the job as it was.
#include "coord/protocol/pserver_count_change.h"

#include <gtest/gtest.h>

#include "coord/protocol/job_keys.h"
#include "coord/protocol/pserver_claim.h"
#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class PserverCountChangeTest : public BackendTest {
 protected:
  static PserverClaimOptions Opts(uint32_t n, std::optional<uint32_t> index) {
    PserverClaimOptions o;
    o.num_pservers = n;
    o.index = index;
    o.ttl_seconds = 2;
    o.owner = "pserver";
    o.retry_ms = 50;
    return o;
  }
  // A job that ran `n` pservers: each claimed, recorded a checkpoint and
  // published an address, then released its claim.
  void RanPservers(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      auto c = PserverClaim::Claim(store_.get(), Opts(n, i), D());
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ASSERT_TRUE((*c)->PublishAddress("h:" + std::to_string(i), D()).ok());
      ASSERT_TRUE((*c)->RecordCheckpoint(
                          {"/old/ps-" + std::to_string(i), "f", 1, 5}, D())
                      .ok());
      ASSERT_TRUE((*c)->Release(D()).ok());
    }
  }
  static std::vector<CheckpointRecord> Records(uint32_t n) {
    std::vector<CheckpointRecord> r;
    for (uint32_t i = 0; i < n; ++i) {
      r.push_back({"/new/ps-" + std::to_string(i), "g", 2, 6, 100, 7});
    }
    return r;
  }
};

TEST_P(PserverCountChangeTest, RefusedWhileAPserverOfTheJobRuns) {
  EXPECT_EQ(
      PserverCountChange::Begin(store_.get(), 3, "t", D()).status().code(),
      Code::kFailedPrecondition);  // no ps/count: never ran
  RanPservers(2);
  auto running = PserverClaim::Claim(store_.get(), Opts(2, 1), D());
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  auto change = PserverCountChange::Begin(store_.get(), 3, "t", D());
  ASSERT_EQ(change.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(change.status().message().find("ps/1/lock held by 'pserver'"),
            std::string::npos)
      << change.status().ToString();
  // Nothing was taken: the other index is still free for a pserver.
  EXPECT_EQ(store_->Get(keys::PsLock(0), D()).status().code(), Code::kNotFound);
  EXPECT_EQ(
      PserverCountChange::Begin(store_.get(), 0, "t", D()).status().code(),
      Code::kInvalidArgument);
}

TEST_P(PserverCountChangeTest, GrowHoldsEveryIndexThenCommits) {
  RanPservers(2);
  auto change = PserverCountChange::Begin(store_.get(), 3, "t", D());
  ASSERT_TRUE(change.ok()) << change.status().ToString();
  EXPECT_EQ((*change)->old_count(), 2u);
  // Meanwhile no pserver of the old count (nor index 2 of the new) claims.
  auto old = PserverClaim::Claim(store_.get(), Opts(2, 0), D(300));
  EXPECT_EQ(old.status().code(), Code::kTimedOut) << old.status().ToString();
  auto grown = PserverClaim::Claim(store_.get(), Opts(3, 2), D(300));
  EXPECT_EQ(grown.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ((*change)->Commit(Records(2), D()).code(), Code::kInvalidArgument);
  ASSERT_TRUE((*change)->Commit(Records(3), D()).ok());
  EXPECT_EQ(store_->Get(keys::kPsCount, D())->value, "3");
  for (uint32_t i = 0; i < 3; ++i) {
    auto rec = ReadCheckpointRecord(store_.get(), i, D());
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    EXPECT_EQ(*rec, Records(3)[i]);
  }
  // The indices are free at once: a pserver of the new count claims.
  auto c = PserverClaim::Claim(store_.get(), Opts(3, 2), D(5000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
}

TEST_P(PserverCountChangeTest, ShrinkDropsTheIndicesBeyondTheNewCount) {
  RanPservers(3);
  auto change = PserverCountChange::Begin(store_.get(), 1, "t", D());
  ASSERT_TRUE(change.ok()) << change.status().ToString();
  ASSERT_TRUE((*change)->Commit(Records(1), D()).ok());
  EXPECT_EQ(store_->Get(keys::kPsCount, D())->value, "1");
  auto left = store_->Range(keys::kPsPrefix, D());
  ASSERT_TRUE(left.ok());
  std::vector<std::string> names;
  for (const KeyValue& kv : left->kvs) names.push_back(kv.key);
  EXPECT_EQ(names, (std::vector<std::string>{"ps/0/checkpoint", "ps/count",
                                             "ps/mode"}));
}

TEST_P(PserverCountChangeTest, AbandonedChangeLeavesTheJobAsItWas) {
  RanPservers(2);
  {
    auto change = PserverCountChange::Begin(store_.get(), 4, "t", D());
    ASSERT_TRUE(change.ok()) << change.status().ToString();
  }
  EXPECT_EQ(store_->Get(keys::kPsCount, D())->value, "2");
  EXPECT_EQ(ReadCheckpointRecord(store_.get(), 1, D())->dir, "/old/ps-1");
  auto c = PserverClaim::Claim(store_.get(), Opts(2, 1), D(5000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
}

// A pserver killed (or whose release never reached the store) leaves its
// lock until the lease runs out: the wait names it until then, and returns
// once the store expired it, after which a change may begin.
TEST_P(PserverCountChangeTest, WaitForLocksFreeOutlastsAStaleLease) {
  RanPservers(2);
  EXPECT_TRUE(WaitForPserverLocksFree(store_.get(), D(1000)).ok());
  auto lease = store_->GrantLease(1, D());
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_TRUE(
      store_->Put(keys::PsLock(1), "killed pserver", lease->id, D()).ok());
  Status early = WaitForPserverLocksFree(store_.get(), D(200));
  EXPECT_EQ(early.code(), Code::kTimedOut) << early.ToString();
  EXPECT_NE(early.message().find("ps/1/lock held by 'killed pserver'"),
            std::string::npos)
      << early.ToString();
  Status freed = WaitForPserverLocksFree(store_.get(), D(15000));
  ASSERT_TRUE(freed.ok()) << freed.ToString();
  EXPECT_EQ(store_->Get(keys::PsLock(1), D()).status().code(), Code::kNotFound);
  auto change = PserverCountChange::Begin(store_.get(), 1, "t", D());
  EXPECT_TRUE(change.ok()) << change.status().ToString();
}

FABPS_INSTANTIATE_OVER_BACKENDS(PserverCountChangeTest);

}  // namespace
}  // namespace fabps::coord::testing

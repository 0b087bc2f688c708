// Discovery and the master election over both backends: lookups wait for
// the address to appear (woken by the store, not by a timer), time out
// with an error that says what is missing, and follow a new leader.
#include "coord/protocol/discovery.h"

#include <gtest/gtest.h>

#include <thread>

#include "coord/protocol/job_keys.h"
#include "coord/protocol/master_election.h"
#include "coord/protocol/pserver_claim.h"
#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class DiscoveryTest : public BackendTest {
 protected:
  std::unique_ptr<PserverClaim> ClaimIndex(Store* store, uint32_t n,
                                           uint32_t index) {
    PserverClaimOptions o;
    o.num_pservers = n;
    o.index = index;
    o.ttl_seconds = 2;
    o.owner = "ps" + std::to_string(index);
    auto c = PserverClaim::Claim(store, o, D());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  static MasterElectionOptions Candidate(const std::string& who) {
    MasterElectionOptions o;
    o.ttl_seconds = 2;
    o.identity = who;
    o.retry_ms = 50;
    return o;
  }
};

TEST_P(DiscoveryTest, FindPserversWaitsForTheLastAddress) {
  auto ps0 = ClaimIndex(store_.get(), 2, 0);
  ASSERT_TRUE(ps0);
  ASSERT_TRUE(ps0->PublishAddress("10.0.0.1:100", D()).ok());
  auto finder_store = OpenStoreOrDie();
  Result<std::vector<std::string>> found = Status::Unavailable("not run");
  std::thread finder(
      [&] { found = FindPservers(finder_store.get(), D(30000)); });
  // It cannot finish before ps/1/addr exists: it is waiting now.
  auto ps1 = ClaimIndex(store_.get(), 2, 1);
  ASSERT_TRUE(ps1);
  ASSERT_TRUE(ps1->PublishAddress("10.0.0.2:200", D()).ok());
  finder.join();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (std::vector<std::string>{"10.0.0.1:100", "10.0.0.2:200"}));
}

TEST_P(DiscoveryTest, FindPserversTimesOutSayingWhatIsMissing) {
  auto none = FindPservers(store_.get(), D(300));
  EXPECT_EQ(none.status().code(), Code::kTimedOut);
  EXPECT_NE(none.status().message().find("ps/count"), std::string::npos)
      << none.status().ToString();

  auto ps1 = ClaimIndex(store_.get(), 3, 1);
  ASSERT_TRUE(ps1);
  ASSERT_TRUE(ps1->PublishAddress("10.0.0.2:200", D()).ok());
  // Foreign keys under ps/ neither count nor confuse.
  ASSERT_TRUE(store_->Put("ps/x/addr", "junk", kNoLease, D()).ok());
  ASSERT_TRUE(store_->Put("ps/7/addr", "junk", kNoLease, D()).ok());
  ASSERT_TRUE(store_->Put("ps/00/addr", "junk", kNoLease, D()).ok());
  auto start = SteadyClock::now();
  auto partial = FindPservers(store_.get(), D(500));
  EXPECT_GE(SteadyClock::now() - start, std::chrono::milliseconds(450));
  EXPECT_EQ(partial.status().code(), Code::kTimedOut);
  EXPECT_NE(partial.status().message().find("2 of 3"), std::string::npos)
      << partial.status().ToString();
  EXPECT_NE(partial.status().message().find("i = 0, 2"), std::string::npos)
      << partial.status().ToString();
}

TEST_P(DiscoveryTest, FindPserversRefusesABadCount) {
  ASSERT_TRUE(store_->Put(keys::kPsCount, "0", kNoLease, D()).ok());
  auto r = FindPservers(store_.get(), D(20000));
  EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
}

// The address a pserver published goes with it: a client that looks again
// waits for the replacement's.
TEST_P(DiscoveryTest, FindPserversSeesAReplacement) {
  auto gone_store = OpenStoreOrDie();
  auto gone = ClaimIndex(gone_store.get(), 1, 0);
  ASSERT_TRUE(gone && gone->PublishAddress("old:1", D()).ok());
  EXPECT_EQ(*FindPservers(store_.get(), D()),
            std::vector<std::string>{"old:1"});
  ASSERT_TRUE(gone->Release(D()).ok());
  EXPECT_EQ(FindPservers(store_.get(), D(300)).status().code(),
            Code::kTimedOut);
  auto repl = ClaimIndex(store_.get(), 1, 0);
  ASSERT_TRUE(repl && repl->PublishAddress("new:1", D()).ok());
  EXPECT_EQ(*FindPservers(store_.get(), D()),
            std::vector<std::string>{"new:1"});
}

TEST_P(DiscoveryTest, WaitForMasterWaitsForTheLeadersAddress) {
  EXPECT_EQ(LookupMaster(store_.get(), D()).status().code(),
            Code::kUnavailable);
  auto waiter_store = OpenStoreOrDie();
  Result<std::string> found = Status::Unavailable("not run");
  std::thread waiter(
      [&] { found = WaitForMaster(waiter_store.get(), D(30000)); });
  auto lead = MasterElection::Win(store_.get(), Candidate("m1"), D());
  ASSERT_TRUE(lead.ok()) << lead.status().ToString();
  ASSERT_TRUE((*lead)->PublishAddress("10.0.0.9:7164", D()).ok());
  waiter.join();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, "10.0.0.9:7164");
  EXPECT_EQ(*LookupMaster(store_.get(), D()), "10.0.0.9:7164");
}

TEST_P(DiscoveryTest, WaitForMasterTimesOut) {
  auto r = WaitForMaster(store_.get(), D(300));
  EXPECT_EQ(r.status().code(), Code::kTimedOut);
  EXPECT_NE(r.status().message().find("master/addr"), std::string::npos)
      << r.status().ToString();
}

// One leader at a time; when it dies a standby wins, and discovery follows.
TEST_P(DiscoveryTest, AStandbyMasterTakesOverFromADeadLeader) {
  auto leader_store = OpenStoreOrDie();
  auto leader = MasterElection::Win(leader_store.get(), Candidate("m1"), D());
  ASSERT_TRUE(leader.ok());
  ASSERT_TRUE((*leader)->PublishAddress("m1:1", D()).ok());
  auto early = MasterElection::Win(store_.get(), Candidate("m2"), D(300));
  EXPECT_EQ(early.status().code(), Code::kTimedOut);
  Compare old_fence = (*leader)->Fence();
  leader->reset();
  leader_store.reset();  // dies: its lease runs out
  auto standby = MasterElection::Win(store_.get(), Candidate("m2"), D(20000));
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  EXPECT_EQ(LookupMaster(store_.get(), D()).status().code(), Code::kUnavailable)
      << "the dead leader's address outlived its lease";
  ASSERT_TRUE((*standby)->PublishAddress("m2:1", D()).ok());
  EXPECT_EQ(*WaitForMaster(store_.get(), D()), "m2:1");
  // The old leader's fence no longer holds.
  auto w = store_->Txn({old_fence}, {TxnOp::Put("x", "old")}, {}, D());
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->succeeded);
  auto w2 =
      store_->Txn({(*standby)->Fence()}, {TxnOp::Put("x", "new")}, {}, D());
  ASSERT_TRUE(w2.ok());
  EXPECT_TRUE(w2->succeeded);
}

FABPS_INSTANTIATE_OVER_BACKENDS(DiscoveryTest);

}  // namespace
}  // namespace fabps::coord::testing

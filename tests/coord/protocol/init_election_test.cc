// InitElection over both backends: one initializer among several trainers,
// the others learn that initialization is over, and a dead or failed
// initializer is replaced.
#include "coord/protocol/init_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "coord/protocol/job_keys.h"
#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class InitElectionTest : public BackendTest {
 protected:
  static InitElectionOptions Trainer(int id) {
    return {"trainer " + std::to_string(id), /*ttl_seconds=*/2};
  }
};

TEST_P(InitElectionTest, OneOfSeveralTrainersInitializes) {
  constexpr int kTrainers = 4;
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<InitElection>> elections;
  for (int i = 0; i < kTrainers; i++) {
    stores.push_back(OpenStoreOrDie());
    elections.push_back(
        std::make_unique<InitElection>(stores[i].get(), Trainer(i)));
  }
  std::vector<Result<bool>> begun(kTrainers, Status::Unavailable("not run"));
  std::atomic<int> returned{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kTrainers; i++) {
    threads.emplace_back([&, i] {
      begun[i] = elections[i]->Begin(D(30000));
      returned++;
    });
  }
  // Only a winner can return before init/done exists.
  ASSERT_TRUE(WaitUntil([&] { return returned.load() > 0; }, D(20000)));
  auto lock = store_->Get(keys::kInitLock, D());
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  int winner = -1;
  for (int i = 0; i < kTrainers; i++)
    if (lock->value == Trainer(i).owner) winner = i;
  ASSERT_GE(winner, 0) << lock->value;
  EXPECT_TRUE(elections[winner]->holding());
  EXPECT_EQ(store_->Get(keys::kInitDone, D()).status().code(), Code::kNotFound);
  ASSERT_TRUE(elections[winner]->Done(D()).ok());
  EXPECT_FALSE(elections[winner]->holding());
  for (auto& t : threads) t.join();
  int winners = 0;
  for (int i = 0; i < kTrainers; i++) {
    ASSERT_TRUE(begun[i].ok()) << i << ": " << begun[i].status().ToString();
    winners += *begun[i] ? 1 : 0;
    EXPECT_EQ(*begun[i], i == winner) << i;
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(store_->Get(keys::kInitDone, D())->value, Trainer(winner).owner);
  EXPECT_EQ(store_->Get(keys::kInitLock, D()).status().code(), Code::kNotFound);
  // A trainer that comes later (a restart) does not initialize again.
  InitElection late(store_.get(), Trainer(99));
  auto r = late.Begin(D());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

// The initializer dies holding init/lock (its Store, its process, gone):
// a waiting trainer takes over once the lease runs out.
TEST_P(InitElectionTest, AWaiterTakesOverWhenTheWinnersLeaseDies) {
  auto dying_store = OpenStoreOrDie();
  auto dying = std::make_unique<InitElection>(dying_store.get(), Trainer(1));
  auto first = dying->Begin(D());
  ASSERT_TRUE(first.ok() && *first);
  InitElection waiting(store_.get(), Trainer(2));
  Result<bool> second = Status::Unavailable("not run");
  std::thread t([&] { second = waiting.Begin(D(30000)); });
  // The crash: neither Done nor Abandon. Release the object's lock without
  // revoking by destroying the Store first (the keep-alive stops with it).
  dying_store.reset();
  dying.release();  // its Store is gone: no call on it may run any more
  t.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(*second);
  EXPECT_TRUE(waiting.holding());
  EXPECT_EQ(store_->Get(keys::kInitLock, D())->value, Trainer(2).owner);
}

TEST_P(InitElectionTest, AbandonHandsOverAtOnce) {
  auto other = OpenStoreOrDie();
  InitElection a(store_.get(), Trainer(1));
  ASSERT_TRUE(*a.Begin(D()));
  InitElection b(other.get(), Trainer(2));
  Result<bool> rb = Status::Unavailable("not run");
  std::thread t([&] { rb = b.Begin(D(30000)); });
  a.Abandon(D());
  EXPECT_FALSE(a.holding());
  t.join();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  EXPECT_TRUE(*rb);
  EXPECT_EQ(store_->Get(keys::kInitDone, D()).status().code(), Code::kNotFound);
}

TEST_P(InitElectionTest, AWaiterTimesOutNamingTheHolder) {
  auto other = OpenStoreOrDie();
  InitElection a(store_.get(), Trainer(1));
  ASSERT_TRUE(*a.Begin(D()));
  ASSERT_TRUE(*a.Begin(D()));  // holding already: true again, at once
  InitElection b(other.get(), Trainer(2));
  auto rb = b.Begin(D(400));
  EXPECT_EQ(rb.status().code(), Code::kTimedOut);
  EXPECT_NE(rb.status().message().find("trainer 1"), std::string::npos)
      << rb.status().ToString();
  EXPECT_FALSE(b.holding());
}

FABPS_INSTANTIATE_OVER_BACKENDS(InitElectionTest);

}  // namespace
}  // namespace fabps::coord::testing

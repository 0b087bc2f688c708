// The coord::Store suite, run over both backends: every case here must pass
// on the local store and on a real etcd with the same results.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <thread>

#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class StoreTest : public BackendTest {};

TEST_P(StoreTest, PutGetDelete) {
  Store& s = *store_;
  auto miss = s.Get("a", D());
  EXPECT_EQ(miss.status().code(), Code::kNotFound);

  auto r1 = s.Put("a", std::string("v1\0\xff", 4), kNoLease, D());
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto g1 = s.Get("a", D());
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  EXPECT_EQ(g1->key, "a");
  EXPECT_EQ(g1->value, std::string("v1\0\xff", 4));
  EXPECT_EQ(g1->create_revision, *r1);
  EXPECT_EQ(g1->mod_revision, *r1);
  EXPECT_EQ(g1->version, 1);
  EXPECT_EQ(g1->lease, kNoLease);

  auto r2 = s.Put("a", "", kNoLease, D());
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(*r2, *r1 + 1);
  auto g2 = s.Get("a", D());
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->value, "");
  EXPECT_EQ(g2->create_revision, *r1);
  EXPECT_EQ(g2->mod_revision, *r2);
  EXPECT_EQ(g2->version, 2);

  auto d = s.Delete("a", false, D());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 1);
  EXPECT_EQ(s.Get("a", D()).status().code(), Code::kNotFound);
  auto d2 = s.Delete("a", false, D());
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(*d2, 0);
  // A recreated key starts over.
  auto r3 = s.Put("a", "x", kNoLease, D());
  ASSERT_TRUE(r3.ok());
  auto g3 = s.Get("a", D());
  EXPECT_EQ(g3->create_revision, *r3);
  EXPECT_EQ(g3->version, 1);
}

TEST_P(StoreTest, RejectsBadKeysAndValues) {
  Store& s = *store_;
  EXPECT_EQ(s.Put("", "v", kNoLease, D()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(s.Put("/abs", "v", kNoLease, D()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(s.Put(std::string(kMaxKeyBytes + 1, 'k'), "v", kNoLease, D())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(s.Put("k", std::string(kMaxValueBytes + 1, 'v'), kNoLease, D())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(s.GrantLease(0, D()).status().code(), Code::kInvalidArgument);
  // The limits are the same on both backends, and the largest allowed pass.
  auto big = s.Put("big", std::string(kMaxValueBytes, 'b'), kNoLease, D());
  EXPECT_TRUE(big.ok()) << big.status().ToString();
  std::vector<TxnOp> many;
  for (size_t i = 0; i < kMaxTxnOps; ++i) {
    many.push_back(TxnOp::Put("m/" + std::to_string(i), "v"));
  }
  auto full = s.Txn({}, many, {}, D());
  EXPECT_TRUE(full.ok()) << full.status().ToString();
  many.push_back(TxnOp::Put("m/last", "v"));
  EXPECT_EQ(s.Txn({}, many, {}, D()).status().code(), Code::kInvalidArgument);
  const std::string half(kMaxTxnBytes / 2, 'h');
  auto two_halves =
      s.Txn({}, {TxnOp::Put("h1", half), TxnOp::Put("h2", half)}, {}, D());
  EXPECT_EQ(two_halves.status().code(), Code::kInvalidArgument);
  auto just_fits = s.Txn(
      {},
      {TxnOp::Put("h1", half.substr(16)), TxnOp::Put("h2", half.substr(16))},
      {}, D());
  EXPECT_TRUE(just_fits.ok()) << just_fits.status().ToString();
  EXPECT_EQ(s.Put("k", "v", 123456789, D()).status().code(), Code::kNotFound);
  StoreOptions bad;
  bad.spec = "zookeeper:foo";
  bad.job = "j";
  EXPECT_EQ(OpenStore(bad).status().code(), Code::kInvalidArgument);
  bad.spec = env_->spec();
  bad.job = "a/b";
  EXPECT_EQ(OpenStore(bad).status().code(), Code::kInvalidArgument);
}

TEST_P(StoreTest, RangeAndDeletePrefix) {
  Store& s = *store_;
  for (const char* k : {"ps/2", "ps/0", "ps/1", "psx", "master/addr"}) {
    ASSERT_TRUE(s.Put(k, std::string("v-") + k, kNoLease, D()).ok());
  }
  auto r = s.Range("ps/", D());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kvs.size(), 3u);
  EXPECT_EQ(r->kvs[0].key, "ps/0");
  EXPECT_EQ(r->kvs[1].key, "ps/1");
  EXPECT_EQ(r->kvs[2].key, "ps/2");
  EXPECT_EQ(r->kvs[2].value, "v-ps/2");
  EXPECT_GE(r->revision, r->kvs[0].mod_revision);
  auto all = s.Range("", D());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kvs.size(), 5u);
  auto d = s.Delete("ps/", true, D());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 3);
  all = s.Range("", D());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 2u);
  EXPECT_EQ(all->kvs[0].key, "master/addr");
  EXPECT_EQ(all->kvs[1].key, "psx");
}

TEST_P(StoreTest, TxnCompareAndSwap) {
  Store& s = *store_;
  auto r1 = s.Put("state", "v1", kNoLease, D());
  ASSERT_TRUE(r1.ok());
  // CAS on mod revision: the first wins, a stale one fails and reads the
  // current value.
  auto ok = s.Txn({Compare::ModRevisionEquals("state", *r1)},
                  {TxnOp::Put("state", "v2")}, {TxnOp::Get("state")}, D());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->succeeded);
  EXPECT_EQ(ok->revision, *r1 + 1);
  ASSERT_EQ(ok->results.size(), 1u);
  auto stale = s.Txn({Compare::ModRevisionEquals("state", *r1)},
                     {TxnOp::Put("state", "v3")}, {TxnOp::Get("state")}, D());
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded);
  ASSERT_EQ(stale->results.size(), 1u);
  ASSERT_EQ(stale->results[0].kvs.size(), 1u);
  EXPECT_EQ(stale->results[0].kvs[0].value, "v2");
  EXPECT_EQ(stale->revision, *r1 + 1);  // nothing written

  // Value compares; a value compare on an absent key is false.
  auto v = s.Txn({Compare::ValueEquals("state", "v2")}, {}, {}, D());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->succeeded);
  auto absent_value = s.Txn({Compare::ValueEquals("nothing", "")}, {}, {}, D());
  ASSERT_TRUE(absent_value.ok());
  EXPECT_FALSE(absent_value->succeeded);
  Compare less;
  less.key = "state";
  less.target = Compare::Target::kValue;
  less.op = Compare::Op::kLess;
  less.value = "v9";
  auto l = s.Txn({less}, {}, {}, D());
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->succeeded);
  Compare version;
  version.key = "state";
  version.target = Compare::Target::kVersion;
  version.op = Compare::Op::kEqual;
  version.number = 2;
  auto ver = s.Txn({version}, {}, {}, D());
  ASSERT_TRUE(ver.ok());
  EXPECT_TRUE(ver->succeeded);

  // Create-if-absent.
  auto c1 = s.Txn({Compare::Absent("lock")}, {TxnOp::Put("lock", "me")},
                  {TxnOp::Get("lock")}, D());
  ASSERT_TRUE(c1.ok());
  EXPECT_TRUE(c1->succeeded);
  auto c2 = s.Txn({Compare::Absent("lock")}, {TxnOp::Put("lock", "you")},
                  {TxnOp::Get("lock")}, D());
  ASSERT_TRUE(c2.ok());
  EXPECT_FALSE(c2->succeeded);
  EXPECT_EQ(c2->results[0].kvs.at(0).value, "me");
  auto e = s.Txn({Compare::Exists("lock")}, {}, {}, D());
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->succeeded);
}

TEST_P(StoreTest, TxnMultiKeyIsAtomicAndOrdered) {
  Store& s = *store_;
  ASSERT_TRUE(s.Put("todo/1", "t1", kNoLease, D()).ok());
  ASSERT_TRUE(s.Put("todo/2", "t2", kNoLease, D()).ok());
  auto t = s.Txn({},
                 {TxnOp::Put("pending/1", "t1"), TxnOp::Delete("todo/1"),
                  TxnOp::Get("pending/", true), TxnOp::Delete("todo/", true)},
                 {}, D());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->succeeded);
  ASSERT_EQ(t->results.size(), 4u);
  EXPECT_EQ(t->results[1].deleted, 1);
  ASSERT_EQ(t->results[2].kvs.size(), 1u);  // a get sees the put before it
  EXPECT_EQ(t->results[2].kvs[0].value, "t1");
  EXPECT_EQ(t->results[3].deleted, 1);  // todo/2 only: todo/1 already went
  auto p = s.Get("pending/1", D());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->mod_revision, t->revision);
  auto todo = s.Range("todo/", D());
  ASSERT_TRUE(todo.ok());
  EXPECT_TRUE(todo->kvs.empty());
  // One revision for the whole txn.
  auto r = s.Range("", D());
  EXPECT_EQ(r->revision, t->revision);

  EXPECT_EQ(s.Txn({}, {TxnOp::Put("a", "1"), TxnOp::Put("a", "2")}, {}, D())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      s.Txn({}, {TxnOp::Put("x/a", "1"), TxnOp::Delete("x/", true)}, {}, D())
          .status()
          .code(),
      Code::kInvalidArgument);
  // A put with a missing lease applies nothing.
  EXPECT_EQ(s.Txn({}, {TxnOp::Put("b", "1"), TxnOp::Put("c", "1", 987654321)},
                  {}, D())
                .status()
                .code(),
            Code::kNotFound);
  EXPECT_EQ(s.Get("b", D()).status().code(), Code::kNotFound);
}

TEST_P(StoreTest, LeaseExpiryRemovesKeys) {
  Store& s = *store_;
  auto lease = s.GrantLease(1, D());
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_GE(lease->ttl_seconds, 2);  // both backends raise 1 to 2
  auto rev = s.Put("ps/0", "addr", lease->id, D());
  ASSERT_TRUE(rev.ok()) << rev.status().ToString();
  ASSERT_TRUE(s.Put("keep", "x", kNoLease, D()).ok());
  auto g = s.Get("ps/0", D());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->lease, lease->id);
  auto w = s.WatchKeys("ps/0", false, *rev + 1, D());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(15000));
  ASSERT_EQ(events.size(), 1u) << "lease did not expire within 15 s";
  EXPECT_EQ(events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(events[0].kv.key, "ps/0");
  EXPECT_EQ(s.Get("ps/0", D()).status().code(), Code::kNotFound);
  EXPECT_TRUE(s.Get("keep", D()).ok());
  EXPECT_EQ(s.KeepAliveOnce(lease->id, D()).status().code(), Code::kNotFound);
  EXPECT_EQ(s.Put("ps/0", "again", lease->id, D()).status().code(),
            Code::kNotFound);
}

TEST_P(StoreTest, KeepAliveKeepsKeysAndRevokeRemovesThem) {
  Store& s = *store_;
  auto lease = s.GrantLease(2, D());
  ASSERT_TRUE(lease.ok());
  std::atomic<int> lost{0};
  ASSERT_TRUE(s.StartKeepAlive(lease->id, [&](LeaseId, const Status&) {
                 lost++;
               }).ok());
  EXPECT_EQ(s.StartKeepAlive(lease->id, nullptr).code(),
            Code::kFailedPrecondition);
  auto r1 = s.Put("master/lock", "me", lease->id, D());
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(s.Put("master/addr", "127.0.0.1:1", lease->id, D()).ok());
  auto w = s.WatchKeys("master/", true, 0, D());
  ASSERT_TRUE(w.ok());
  // Well past the TTL no delete may come: the watch sees no event at all
  // (the wait ends early, and the test fails, on the first one).
  std::vector<WatchEvent> none;
  EXPECT_EQ(w->get()
                ->Next(&none, Deadline::InMs(lease->ttl_seconds * 1000 + 1500))
                .code(),
            Code::kTimedOut);
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(s.Get("master/lock", D()).ok());
  EXPECT_TRUE(s.LeaseAlive(lease->id));
  EXPECT_EQ(lost.load(), 0);

  ASSERT_TRUE(s.Revoke(lease->id, D()).ok());
  EXPECT_FALSE(s.LeaseAlive(lease->id));
  EXPECT_EQ(s.Get("master/lock", D()).status().code(), Code::kNotFound);
  EXPECT_EQ(s.Get("master/addr", D()).status().code(), Code::kNotFound);
  auto events = WaitEvents(w->get(), 2, Deadline::InMs(5000));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(events[1].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(events[0].kv.mod_revision,
            events[1].kv.mod_revision);  // one revision
  EXPECT_EQ(s.Revoke(lease->id, D()).code(), Code::kNotFound);
  EXPECT_EQ(lost.load(), 0);  // revoked, not lost
}

TEST_P(StoreTest, LeaseLostCallbackWhenRevokedElsewhere) {
  auto other = env_->Open(Job());
  ASSERT_TRUE(other.ok());
  Store& s = *store_;
  auto lease = s.GrantLease(2, D());
  ASSERT_TRUE(lease.ok());
  std::atomic<int> lost{0};
  Status why;
  std::mutex mu;
  ASSERT_TRUE(s.StartKeepAlive(lease->id, [&](LeaseId id, const Status& st) {
                 std::lock_guard<std::mutex> l(mu);
                 why = st;
                 lost++;
               }).ok());
  ASSERT_TRUE((*other)->Revoke(lease->id, D()).ok());
  WaitUntil([&] { return lost.load() > 0; }, Deadline::InMs(10000));
  ASSERT_EQ(lost.load(), 1);
  EXPECT_FALSE(s.LeaseAlive(lease->id));
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(why.code(), Code::kNotFound) << why.ToString();
}

TEST_P(StoreTest, WatchDeliversEveryChangeInOrder) {
  Store& s = *store_;
  auto before = s.Put("w/old", "0", kNoLease, D());
  ASSERT_TRUE(before.ok());
  auto w = s.WatchKeys("w/", true, 0, D());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto single = s.WatchKeys("w/k3", false, 0, D());
  ASSERT_TRUE(single.ok());
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    std::string k = "w/k" + std::to_string(i % 5);
    if (i % 7 == 6) {
      ASSERT_TRUE(s.Delete(k, false, D()).ok());
    } else {
      ASSERT_TRUE(s.Put(k, std::to_string(i), kNoLease, D()).ok());
    }
    ASSERT_TRUE(s.Put("other", "x", kNoLease, D()).ok());  // not watched
  }
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(200));
  // Count what we expect: deletes of absent keys produce nothing.
  std::map<std::string, bool> present;
  std::vector<std::pair<WatchEvent::Type, std::string>> expected;
  for (int i = 0; i < n; ++i) {
    std::string k = "w/k" + std::to_string(i % 5);
    if (i % 7 == 6) {
      if (present[k]) expected.emplace_back(WatchEvent::Type::kDelete, k);
      present[k] = false;
    } else {
      expected.emplace_back(WatchEvent::Type::kPut, k);
      present[k] = true;
    }
  }
  auto more = WaitEvents(w->get(), expected.size() - events.size(),
                         Deadline::InMs(10000));
  events.insert(events.end(), more.begin(), more.end());
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].type, expected[i].first) << i;
    EXPECT_EQ(events[i].kv.key, expected[i].second) << i;
    if (i > 0) {
      EXPECT_GT(events[i].kv.mod_revision, events[i - 1].kv.mod_revision);
    }
  }
  auto k3 = WaitEvents(single->get(), 1, Deadline::InMs(5000));
  ASSERT_FALSE(k3.empty());
  EXPECT_EQ(k3[0].kv.key, "w/k3");

  // A watch from an earlier revision replays history, including w/old.
  auto replay = s.WatchKeys("w/", true, *before, D());
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  auto past =
      WaitEvents(replay->get(), expected.size() + 1, Deadline::InMs(10000));
  ASSERT_EQ(past.size(), expected.size() + 1);
  EXPECT_EQ(past[0].kv.key, "w/old");
  EXPECT_EQ(past[0].kv.value, "0");

  (*w)->Cancel();
  std::vector<WatchEvent> after;
  EXPECT_EQ((*w)->Next(&after, Deadline::InMs(1000)).code(), Code::kCancelled);
}

TEST_P(StoreTest, WatchOutlivesItsStore) {
  auto other = env_->Open(Job());
  ASSERT_TRUE(other.ok());
  auto w = (*other)->WatchKeys("k", false, 0, D());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(store_->Put("k", "v", kNoLease, D()).ok());
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(5000));
  ASSERT_EQ(events.size(), 1u);
  other->reset();  // the store goes first: the watch ends, safely
  std::vector<WatchEvent> more;
  EXPECT_EQ((*w)->Next(&more, Deadline::InMs(5000)).code(), Code::kCancelled);
}

TEST_P(StoreTest, TwoJobsDoNotSeeEachOther) {
  auto a = env_->Open("jobA-" + Job().substr(0, 40));
  auto b = env_->Open("jobB-" + Job().substr(0, 40));
  ASSERT_TRUE(a.ok() && b.ok());
  Store& sa = **a;
  Store& sb = **b;
  auto wb = sb.WatchKeys("", true, 0, D());
  ASSERT_TRUE(wb.ok());
  ASSERT_TRUE(sa.Put("master/addr", "A", kNoLease, D()).ok());
  ASSERT_TRUE(sb.Put("master/addr", "B", kNoLease, D()).ok());
  EXPECT_EQ(sa.Get("master/addr", D())->value, "A");
  EXPECT_EQ(sb.Get("master/addr", D())->value, "B");
  auto lock = sa.Txn({Compare::Absent("init/lock")},
                     {TxnOp::Put("init/lock", "a")}, {}, D());
  ASSERT_TRUE(lock.ok());
  EXPECT_TRUE(lock->succeeded);
  auto lockb = sb.Txn({Compare::Absent("init/lock")},
                      {TxnOp::Put("init/lock", "b")}, {}, D());
  ASSERT_TRUE(lockb.ok());
  EXPECT_TRUE(lockb->succeeded);  // a different job's lock
  ASSERT_TRUE(sa.Delete("", true, D()).ok());
  auto ra = sa.Range("", D());
  auto rb = sb.Range("", D());
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_TRUE(ra->kvs.empty());
  ASSERT_EQ(rb->kvs.size(), 2u);
  auto events = WaitEvents(wb->get(), 2, Deadline::InMs(5000));
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) EXPECT_EQ(e.type, WatchEvent::Type::kPut);
  std::vector<WatchEvent> extra;
  EXPECT_EQ((*wb)->Next(&extra, Deadline::InMs(300)).code(), Code::kTimedOut);
}

TEST_P(StoreTest, LockRaceHasExactlyOneWinner) {
  const int kClients = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kClients; ++i) {
    auto s = env_->Open(Job());
    ASSERT_TRUE(s.ok());
    stores.push_back(std::move(*s));
  }
  for (int round = 0; round < 3; ++round) {
    const std::string key = "master/lock" + std::to_string(round);
    std::atomic<int> ready{0};
    std::atomic<int> winners{0};
    std::vector<std::string> seen(kClients);
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back([&, i] {
        ready++;
        while (ready.load() < kClients) std::this_thread::yield();
        auto r = stores[i]->Txn({Compare::Absent(key)},
                                {TxnOp::Put(key, std::to_string(i))},
                                {TxnOp::Get(key)}, Deadline::InMs(10000));
        if (!r.ok()) {
          seen[i] = "error " + r.status().ToString();
          return;
        }
        if (r->succeeded) {
          winners++;
          seen[i] = std::to_string(i);
        } else {
          seen[i] = r->results.at(0).kvs.at(0).value;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1);
    auto holder = store_->Get(key, D());
    ASSERT_TRUE(holder.ok());
    for (int i = 0; i < kClients; ++i)
      EXPECT_EQ(seen[i], holder->value) << "client " << i;
  }
}

TEST_P(StoreTest, SeveralProcessesShareTheStore) {
  Store& s = *store_;
  auto w = s.WatchKeys("ps/", true, 0, D());
  ASSERT_TRUE(w.ok());
  // A process that holds a lease-bound key.
  auto holder = fabps::testing::Subprocess::Start(
      {HelperBinary(), "hold", env_->spec(), Job(), "ps/0", "pserver-0", "2"},
      env_->dir() + "/holder.log");
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  auto put = WaitEvents(w->get(), 1, Deadline::InMs(15000));
  ASSERT_EQ(put.size(), 1u)
      << fabps::testing::ReadFileOrEmpty(env_->dir() + "/holder.log");
  EXPECT_EQ(put[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(put[0].kv.value, "pserver-0");

  // Lock race between processes: exactly one exits 0.
  std::vector<fabps::testing::Subprocess> racers;
  for (int i = 0; i < 4; ++i) {
    auto p = fabps::testing::Subprocess::Start(
        {HelperBinary(), "lock", env_->spec(), Job(), "init/lock",
         "p" + std::to_string(i)},
        env_->dir() + "/racer.log");
    ASSERT_TRUE(p.ok());
    racers.push_back(std::move(*p));
  }
  int won = 0, lost = 0;
  for (auto& p : racers) {
    auto st = p.Wait(30000);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_TRUE(WIFEXITED(*st));
    if (WEXITSTATUS(*st) == 0) won++;
    if (WEXITSTATUS(*st) == 3) lost++;
  }
  EXPECT_EQ(won, 1) << fabps::testing::ReadFileOrEmpty(env_->dir() +
                                                       "/racer.log");
  EXPECT_EQ(lost, 3);

  // The holder dies without revoking: its key goes when the lease expires,
  // noticed by this process.
  holder->Kill();
  auto del = WaitEvents(w->get(), 1, Deadline::InMs(20000));
  ASSERT_EQ(del.size(), 1u) << "lease of a killed process did not expire";
  EXPECT_EQ(del[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(s.Get("ps/0", D()).status().code(), Code::kNotFound);
}

// A lease owner that stalls past its TTL (here: SIGSTOP) loses the lease to
// the store; when it runs again its keep-alive learns so and it stops.
TEST_P(StoreTest, StalledLeaseOwnerLearnsItLostTheLease) {
  Store& s = *store_;
  auto w = s.WatchKeys("ps/", true, 0, D());
  ASSERT_TRUE(w.ok());
  auto holder = fabps::testing::Subprocess::Start(
      {HelperBinary(), "hold", env_->spec(), Job(), "ps/1", "pserver-1", "2"},
      env_->dir() + "/stalled.log");
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  auto put = WaitEvents(w->get(), 1, Deadline::InMs(15000));
  ASSERT_EQ(put.size(), 1u)
      << fabps::testing::ReadFileOrEmpty(env_->dir() + "/stalled.log");
  ASSERT_TRUE(holder->Signal(SIGSTOP).ok());
  auto del = WaitEvents(w->get(), 1, Deadline::InMs(20000));
  ASSERT_TRUE(holder->Signal(SIGCONT).ok());
  ASSERT_EQ(del.size(), 1u) << "the stalled owner's lease did not expire";
  EXPECT_EQ(del[0].type, WatchEvent::Type::kDelete);
  auto st = holder->Wait(20000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 4)
      << "the owner did not notice it lost its lease";
}

FABPS_INSTANTIATE_OVER_BACKENDS(StoreTest);

}  // namespace
}  // namespace fabps::coord::testing

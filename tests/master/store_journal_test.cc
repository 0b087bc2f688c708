// StoreJournal over the embedded local coordination store.
#include "master/store_journal.h"

#include <gtest/gtest.h>

#include "master/task_dispatcher.h"
#include "tests/master/test_dataset.h"
#include "tests/util/subprocess.h"

namespace fabps::master {
namespace {

std::unique_ptr<coord::Store> OpenLocal(const std::string& dir) {
  coord::StoreOptions o;
  o.spec = "local:" + dir;
  o.job = "jobA";
  auto s = coord::OpenStore(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(StoreJournal, AppendCompactLoad) {
  testing::TempDir dir;
  std::string big(1300 << 10, 'x');  // needs 3 parts
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>(i);
  {
    auto store = OpenLocal(dir.File("store"));
    StoreJournal j(store.get());
    auto c = j.Load();
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->snapshot.empty() && c->changes.empty());
    ASSERT_TRUE(j.Append("one").ok());
    ASSERT_TRUE(j.Append(big).ok());
    ASSERT_TRUE(j.Compact("snap-1").ok());
    ASSERT_TRUE(j.Append("three").ok());
    ASSERT_TRUE(j.Compact(big).ok());  // a snapshot of several parts
    ASSERT_TRUE(j.Append("four").ok());
    ASSERT_TRUE(j.Append(big).ok());
  }
  auto store = OpenLocal(dir.File("store"));
  StoreJournal j(store.get());
  auto c = j.Load();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->snapshot, big);
  ASSERT_EQ(c->changes.size(), 2u);
  EXPECT_EQ(c->changes[0], "four");
  EXPECT_EQ(c->changes[1], big);
  EXPECT_EQ(j.changes_since_compaction(), 2u);
  // Compaction removed what it covered: only the two newest records remain.
  auto keys = store->Range("master/journal/", store->DefaultDeadline());
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->kvs.size(), 2u);
  auto old_parts = store->Range("master/snapshot/00000000000000000001/",
                                store->DefaultDeadline());
  ASSERT_TRUE(old_parts.ok());
  EXPECT_TRUE(old_parts->kvs.empty());
}

TEST(StoreJournal, BatchIsOneTxnAndKeepsOrder) {
  testing::TempDir dir;
  auto store = OpenLocal(dir.File("store"));
  std::string big(200 << 10, 'b');  // above kInlineBytes: stored in parts
  StoreJournal j(store.get());
  ASSERT_TRUE(j.Load().ok());
  ASSERT_TRUE(j.AppendBatch({"a", big, "c"}).ok());
  ASSERT_TRUE(j.AppendBatch({"d"}).ok());
  EXPECT_EQ(j.next_seq(), 5u);
  StoreJournal again(store.get());
  auto c = again.Load();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->changes, (std::vector<std::string>{"a", big, "c", "d"}));
  std::vector<std::string> too_many(StoreJournal::kMaxBatch + 1, "x");
  EXPECT_EQ(again.AppendBatch(too_many).code(), Status::Code::kInvalidArgument);
}

TEST(StoreJournal, GapAndDamageAreCorruption) {
  testing::TempDir dir;
  auto store = OpenLocal(dir.File("store"));
  {
    StoreJournal j(store.get());
    ASSERT_TRUE(j.Load().ok());
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(j.Append("r" + std::to_string(i)).ok());
  }
  auto d = store->Delete("master/journal/00000000000000000002", false,
                         store->DefaultDeadline());
  ASSERT_TRUE(d.ok());
  StoreJournal j(store.get());
  auto c = j.Load();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kCorruption);
  EXPECT_NE(c.status().message().find("missing"), std::string::npos);
  ASSERT_TRUE(store
                  ->Put("master/journal/00000000000000000002", "Zjunk",
                        coord::kNoLease, store->DefaultDeadline())
                  .ok());
  EXPECT_EQ(j.Load().status().code(), Status::Code::kCorruption);
  ASSERT_TRUE(store
                  ->Put("master/snapshot/head", "FSH1garbage", coord::kNoLease,
                        store->DefaultDeadline())
                  .ok());
  EXPECT_EQ(j.Load().status().code(), Status::Code::kCorruption);
}

TEST(StoreJournal, DispatcherResumesFromStoreAndJournalStaysBounded) {
  testing::TempDir dir;
  std::string glob = testing::MakeDataset(dir.path(), 2, 10, 3);  // 20 chunks
  FakeClock clock;
  DispatcherOptions opts;
  opts.chunks_per_task = 1;
  opts.compact_every = 16;
  DispatchedTask pending;
  {
    auto store = OpenLocal(dir.File("store"));
    StoreJournal j(store.get());
    auto d = TaskDispatcher::Open(&j, &clock, opts);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE((*d)->SetDataset({glob}).ok());
    // Two and a half passes of work: many more changes than compact_every.
    for (int i = 0; i < 50; ++i) {
      auto r = (*d)->GetTask((*d)->GetStatus().pass, "t");
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->result, GetTaskResult::kTask);
      auto f = (*d)->TaskFinished(r->task.id, r->task.epoch);
      ASSERT_TRUE(f.ok() && f.value());
    }
    auto r = (*d)->GetTask(2, "t");
    ASSERT_EQ(r->result, GetTaskResult::kTask);
    pending = r->task;
    auto keys = store->Range("master/journal/", store->DefaultDeadline());
    ASSERT_TRUE(keys.ok());
    EXPECT_LT(keys->kvs.size(), 16u);
    for (const auto& kv : keys->kvs) EXPECT_LT(kv.value.size(), 64u);
  }
  auto store = OpenLocal(dir.File("store"));
  StoreJournal j(store.get());
  auto d = TaskDispatcher::Open(&j, &clock, opts);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  DispatcherStatus st = (*d)->GetStatus();
  EXPECT_EQ(st.pass, 2);
  EXPECT_EQ(st.done, 10u);
  EXPECT_EQ(st.pending, 1u);
  EXPECT_EQ(st.todo, 9u);
  auto f = (*d)->TaskFinished(pending.id, pending.epoch);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f.value());
}

}  // namespace
}  // namespace fabps::master

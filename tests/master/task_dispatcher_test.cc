// Dispatch semantics of TaskDispatcher over a MemoryJournal and a FakeClock.
#include "master/task_dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "base/deadline.h"
#include "master/change.h"
#include "tests/master/test_dataset.h"
#include "tests/util/subprocess.h"

namespace fabps::master {
namespace {

using ChunkKey = std::pair<std::string, uint64_t>;

bool Val(Result<bool> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && r.value();
}

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    glob_ = testing::MakeDataset(dir_.path(), 3, 4, 5);
  }  // 12 chunks

  std::unique_ptr<TaskDispatcher> Open(DispatcherOptions opts = {}) {
    auto d = TaskDispatcher::Open(&journal_, &clock_, opts);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : nullptr;
  }
  DispatchedTask MustGet(TaskDispatcher* d, int64_t pass) {
    auto r = d->GetTask(pass, "t");
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->result, GetTaskResult::kTask);
    return r->task;
  }

  testing::TempDir dir_;
  std::string glob_;
  MemoryJournal journal_;
  FakeClock clock_;
};

TEST_F(DispatcherTest, EveryChunkExactlyOncePerPassWithConcurrentTrainers) {
  DispatcherOptions opts;
  opts.chunks_per_task = 2;
  opts.compact_every = 7;
  auto d = Open(opts);
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  std::mutex mu;
  std::map<int64_t, std::map<ChunkKey, int>> seen;  // pass -> chunk -> count
  auto trainer = [&](int id) {
    for (int64_t pass = 0; pass < 3;) {
      auto r = d->GetTask(pass, "trainer-" + std::to_string(id));
      ASSERT_TRUE(r.ok());
      if (r->result == GetTaskResult::kPassFinished) {
        ++pass;
        continue;
      }
      if (r->result == GetTaskResult::kNoTaskNow) {
        std::this_thread::yield();
        continue;
      }
      ASSERT_EQ(r->result, GetTaskResult::kTask);
      {
        std::lock_guard<std::mutex> l(mu);
        for (const auto& c : r->task.chunks) ++seen[pass][{c.path, c.offset}];
      }
      auto f = d->TaskFinished(r->task.id, r->task.epoch);
      ASSERT_TRUE(f.ok());
      EXPECT_TRUE(*f);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(trainer, i);
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 3u);
  for (const auto& [pass, chunks] : seen) {
    EXPECT_EQ(chunks.size(), 12u) << "pass " << pass;
    for (const auto& [k, n] : chunks)
      EXPECT_EQ(n, 1) << k.first << "@" << k.second;
  }
  EXPECT_EQ(d->GetStatus().trainers.size(), 4u);
  EXPECT_EQ(d->GetStatus().pass, 3);
}

TEST_F(DispatcherTest, TimeoutRedispatchesAndStaleEpochIsIgnored) {
  DispatcherOptions opts;
  opts.chunks_per_task = 12;  // one task
  opts.task_timeout_ms = 1000;
  auto d = Open(opts);
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  DispatchedTask first = MustGet(d.get(), 0);
  EXPECT_EQ(first.deadline_ms, clock_.NowMs() + 1000);
  EXPECT_EQ(d->GetTask(0, "t")->result, GetTaskResult::kNoTaskNow);
  clock_.AdvanceMs(999);
  EXPECT_EQ(d->GetTask(0, "t")->result, GetTaskResult::kNoTaskNow);
  clock_.AdvanceMs(1);
  DispatchedTask second = MustGet(d.get(), 0);
  EXPECT_EQ(second.id, first.id);
  EXPECT_EQ(second.epoch, first.epoch + 1);
  EXPECT_FALSE(Val(d->TaskFinished(first.id, first.epoch)));  // stale: ignored
  EXPECT_FALSE(Val(d->TaskFailed(first.id, first.epoch)));
  EXPECT_EQ(d->GetStatus().pending, 1u);
  EXPECT_TRUE(Val(d->TaskFinished(second.id, second.epoch)));
  EXPECT_FALSE(
      Val(d->TaskFinished(second.id, second.epoch)));  // twice: ignored
  EXPECT_FALSE(Val(d->TaskFinished(12345, 1)));        // unknown id
  DispatcherStatus st = d->GetStatus();
  EXPECT_EQ(st.pass, 1);
  EXPECT_EQ(st.todo, 1u);
  EXPECT_EQ(d->GetTask(0, "t")->result, GetTaskResult::kPassFinished);
}

TEST_F(DispatcherTest, FailureMaxHonoured) {
  DispatcherOptions opts;
  opts.chunks_per_task = 6;  // two tasks
  opts.task_failure_max = 2;
  auto d = Open(opts);
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  DispatchedTask a = MustGet(d.get(), 0);
  DispatchedTask other = MustGet(d.get(), 0);
  ASSERT_TRUE(Val(d->TaskFinished(other.id, other.epoch)));
  // Task a fails twice and comes back each time; the third failure is past
  // the maximum.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Val(d->TaskFailed(a.id, a.epoch)));
    if (i < 2) {
      DispatchedTask again = MustGet(d.get(), 0);
      EXPECT_EQ(again.id, a.id);
      a = again;
    }
  }
  DispatcherStatus st = d->GetStatus();
  EXPECT_EQ(st.failed, 1u);
  ASSERT_EQ(st.failed_tasks.size(), 1u);
  EXPECT_EQ(st.failed_tasks[0], a.id);
  EXPECT_EQ(st.pass, 1);  // the other task was done: a new pass began
  DispatchedTask b = MustGet(d.get(), 1);
  EXPECT_NE(b.id, a.id);
  // Once b fails past the maximum too, every task has failed.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Val(d->TaskFailed(b.id, b.epoch)));
    if (i < 2) b = MustGet(d.get(), 1);
  }
  EXPECT_EQ(d->GetTask(1, "t")->result, GetTaskResult::kAllFailed);
}

TEST_F(DispatcherTest, SetDatasetFirstCallWins) {
  auto d = Open();
  EXPECT_EQ(d->GetTask(0, "t").status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ(d->SetDataset({dir_.File("nothing-*")}).code(),
            Status::Code::kNotFound);
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  EXPECT_TRUE(d->SetDataset({glob_}).ok());
  Status s = d->SetDataset({glob_, dir_.File("other")});
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("already set"), std::string::npos);
}

TEST_F(DispatcherTest, CorruptDatasetFileIsReportedWithFileAndOffset) {
  std::string bad = dir_.File("data-9");
  FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("this is not recordio at all, just text", f);
  std::fclose(f);
  auto d = Open();
  Status s = d->SetDataset({glob_});
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("data-9 offset 0"), std::string::npos)
      << s.ToString();
}

// Captures the full observable state for restart comparisons.
std::string Describe(TaskDispatcher* d) {
  DispatcherStatus s = d->GetStatus();
  return "pass=" + std::to_string(s.pass) + " todo=" + std::to_string(s.todo) +
         " pending=" + std::to_string(s.pending) +
         " done=" + std::to_string(s.done) +
         " failed=" + std::to_string(s.failed);
}

TEST_F(DispatcherTest, RestartResumesExactlyIncludingDeadlines) {
  for (size_t compact_every : {size_t{1000}, size_t{3}}) {
    journal_.contents() = JournalContents();
    DispatcherOptions opts;
    opts.chunks_per_task = 1;
    opts.task_timeout_ms = 5000;
    opts.compact_every = compact_every;
    std::vector<DispatchedTask> pending;
    std::set<uint64_t> done;
    std::string before;
    {
      auto d = Open(opts);
      ASSERT_TRUE(d->SetDataset({glob_}).ok());
      for (int i = 0; i < 8; ++i) {
        DispatchedTask t = MustGet(d.get(), 0);
        clock_.AdvanceMs(100);
        if (i % 2 == 0) {
          ASSERT_TRUE(Val(d->TaskFinished(t.id, t.epoch)));
          done.insert(t.id);
        } else {
          pending.push_back(t);
        }
      }
      before = Describe(d.get());
    }
    auto d = Open(opts);  // the "new master" on the same journal
    EXPECT_EQ(Describe(d.get()), before);
    // Done tasks are not handed out again in this pass; pending ones are not
    // lost: they finish with their old epoch.
    ASSERT_TRUE(Val(d->TaskFinished(pending[0].id, pending[0].epoch)));
    for (int i = 0; i < 4; ++i) {
      DispatchedTask t = MustGet(d.get(), 0);
      EXPECT_EQ(done.count(t.id), 0u);
      ASSERT_TRUE(Val(d->TaskFinished(t.id, t.epoch)));
    }
    EXPECT_EQ(d->GetTask(0, "t")->result, GetTaskResult::kNoTaskNow);
    // Pending deadlines survived: pending[1] (dispatched at 400 ms past the
    // first) expires exactly at its old deadline.
    clock_.AdvanceMs(pending[1].deadline_ms - clock_.NowMs() - 1);
    EXPECT_EQ(d->GetStatus().pending, 3u);
    clock_.AdvanceMs(1);
    EXPECT_EQ(d->GetStatus().pending, 2u);
    clock_.AdvanceMs(100000);
  }
}

TEST_F(DispatcherTest, JournalFailureIsNotAcknowledged) {
  auto d = Open();
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  journal_.FailNextAppend(Status::Unavailable("store down"));
  auto r = d->GetTask(0, "t");
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(d->GetStatus().pending, 0u);
  DispatchedTask t = MustGet(d.get(), 0);
  EXPECT_EQ(t.epoch, 1u);
}

TEST_F(DispatcherTest, AdaptiveTimeoutFollowsAverageDuration) {
  DispatcherOptions opts;
  opts.chunks_per_task = 1;
  opts.task_timeout_ms = 60000;
  opts.adaptive_timeout = true;
  opts.adaptive_factor = 2.0;
  opts.adaptive_min_ms = 50;
  auto d = Open(opts);
  ASSERT_TRUE(d->SetDataset({glob_}).ok());
  EXPECT_EQ(d->GetStatus().task_timeout_ms, 60000);
  for (int i = 0; i < 3; ++i) {
    DispatchedTask t = MustGet(d.get(), 0);
    clock_.AdvanceMs(400);
    ASSERT_TRUE(Val(d->TaskFinished(t.id, t.epoch)));
  }
  EXPECT_EQ(d->GetStatus().task_timeout_ms, 800);
  DispatchedTask t = MustGet(d.get(), 0);
  EXPECT_EQ(t.deadline_ms, clock_.NowMs() + 800);
}

TEST_F(DispatcherTest, BadJournalRecordsAreCorruption) {
  {
    auto d = Open();
    ASSERT_TRUE(d->SetDataset({glob_}).ok());
    MustGet(d.get(), 0);
  }
  // A flipped byte fails the CRC.
  journal_.contents().changes[1][6] ^= 1;
  auto d = TaskDispatcher::Open(&journal_, &clock_, {});
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  journal_.contents().changes[1][6] ^= 1;
  // A valid record that does not apply (finishing a task never dispatched).
  Change c;
  c.type = Change::Type::kFinish;
  c.task_id = 2;
  c.epoch = 1;
  journal_.contents().changes.push_back(EncodeChange(c));
  d = TaskDispatcher::Open(&journal_, &clock_, {});
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  EXPECT_NE(d.status().message().find("not pending"), std::string::npos);
}

// A journal that is slow (so concurrent calls pile up into batches) and
// fails every 13th batch.
class FlakySlowJournal : public MemoryJournal {
 public:
  Status AppendBatch(const std::vector<std::string>& changes) override {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    if (++calls_ % 13 == 0)
      return Status::Unavailable("injected store failure");
    records_ += changes.size();
    return MemoryJournal::AppendBatch(changes);
  }
  size_t records() const { return records_; }

 private:
  size_t calls_ = 0;
  size_t records_ = 0;
};

TEST(GroupCommit, ConcurrentCallsWithStoreFailuresStayConsistent) {
  testing::TempDir dir;
  std::string glob = testing::MakeDataset(dir.path(), 2, 10, 1);  // 20 chunks
  FlakySlowJournal journal;
  FakeClock clock;
  DispatcherOptions opts;
  opts.chunks_per_task = 1;
  opts.task_timeout_ms = 5000;
  opts.task_failure_max = 1000;
  opts.compact_every = 25;
  auto d = TaskDispatcher::Open(&journal, &clock, opts);
  ASSERT_TRUE(d.ok());
  Status set;
  for (int i = 0; i < 5 && !(set = (*d)->SetDataset({glob})).ok(); ++i) {
  }
  ASSERT_TRUE(set.ok()) << set.ToString();
  std::atomic<int> errors{0};
  auto trainer = [&](int id) {
    Deadline deadline = Deadline::InMs(60'000);
    int64_t pass = 0;
    while (pass < 3 && !deadline.Expired()) {
      auto r = (*d)->GetTask(pass, "t" + std::to_string(id));
      if (!r.ok()) {
        ++errors;
        continue;
      }
      if (r->result == GetTaskResult::kPassFinished) {
        pass = r->pass;
      } else if (r->result == GetTaskResult::kTask) {
        if (!(*d)->TaskFinished(r->task.id, r->task.epoch).ok()) ++errors;
      } else {
        ASSERT_EQ(r->result, GetTaskResult::kNoTaskNow);
        clock.AdvanceMs(1000);  // lost finishes come back by timeout
      }
    }
    EXPECT_EQ(pass, 3);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) threads.emplace_back(trainer, i);
  for (auto& t : threads) t.join();
  EXPECT_GT(errors.load(), 0);  // the failures did happen
  // The live state is exactly what a new master rebuilds from the journal.
  std::string live = Describe(d->get());
  auto reopened = TaskDispatcher::Open(&journal, &clock, opts);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(Describe(reopened->get()), live);
  std::printf("%zu records in %zu batches\n", journal.records(),
              journal.batches());
}

TEST(ChangeCodec, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  Change c;
  c.type = Change::Type::kSetDataset;
  c.globs = {"/a/*"};
  c.tasks.resize(3);
  for (auto& t : c.tasks) t.chunks.push_back({"/a/x", 32, 7});
  std::string good = EncodeChange(c);
  auto back = DecodeChange(good);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tasks.size(), 3u);
  EXPECT_EQ(back->tasks[2].chunks[0].path, "/a/x");
  for (int i = 0; i < 20000; ++i) {
    std::string s = good;
    s.resize(rng() % (good.size() + 1));
    for (int k = 0; k < 3 && !s.empty(); ++k)
      s[rng() % s.size()] = static_cast<char>(rng());
    (void)DecodeChange(s);
    (void)TaskQueues::DecodeSnapshot(s);
    // Past the CRC too: mutate the body and re-checksum it.
    std::string body = good.substr(0, good.size() - 4);
    body.resize(rng() % (body.size() + 1));
    for (int k = 0; k < 2 && !body.empty(); ++k)
      body[rng() % body.size()] = static_cast<char>(rng());
    AppendCrc(&body);
    (void)DecodeChange(body);
  }
  TaskQueues q;
  ASSERT_TRUE(q.Apply(c).ok());
  std::string snap = q.EncodeSnapshot();
  ASSERT_TRUE(TaskQueues::DecodeSnapshot(snap).ok());
  for (size_t cut = 0; cut < snap.size(); ++cut) {
    EXPECT_FALSE(TaskQueues::DecodeSnapshot(snap.substr(0, cut)).ok());
  }
}

TEST_F(DispatcherTest, SaveModelGrantedToOneTrainerAtATime) {
  auto d = Open();
  EXPECT_TRUE(Val(d->RequestSaveModel("a", 1000)));
  EXPECT_FALSE(Val(d->RequestSaveModel("b", 1000)));
  EXPECT_TRUE(Val(d->RequestSaveModel("a", 1000)));
  clock_.AdvanceMs(1000);
  EXPECT_TRUE(Val(d->RequestSaveModel("b", 1000)));
  EXPECT_FALSE(Val(d->RequestSaveModel("a", 1000)));
  EXPECT_FALSE(d->RequestSaveModel("", 1000).ok());
  EXPECT_FALSE(d->RequestSaveModel("a", -1).ok());
}

// The grant is journaled: a dispatcher reopened on the journal (a new
// master) keeps it until it runs out, through a snapshot too.
TEST_F(DispatcherTest, SaveGrantSurvivesReopenAndSnapshot) {
  {
    auto d = Open();
    EXPECT_TRUE(Val(d->RequestSaveModel("a", 5000)));
  }
  {
    auto d = Open();
    EXPECT_FALSE(Val(d->RequestSaveModel("b", 5000)));
    EXPECT_TRUE(Val(d->RequestSaveModel("a", 5000)));  // renewed
  }
  TaskQueues q;
  Change grant;
  grant.type = Change::Type::kSaveGrant;
  grant.trainer = "trainer-7";
  grant.deadline_ms = 12345;
  auto decoded = DecodeChange(EncodeChange(grant));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(q.Apply(*decoded).ok());
  auto back = TaskQueues::DecodeSnapshot(q.EncodeSnapshot());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->save_holder(), "trainer-7");
  EXPECT_EQ(back->save_until_ms(), 12345);
  // A snapshot without a grant (as older masters wrote) has none.
  auto empty = TaskQueues::DecodeSnapshot(TaskQueues().EncodeSnapshot());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->save_holder(), "");
  grant.trainer = "";
  EXPECT_EQ(DecodeChange(EncodeChange(grant)).status().code(),
            Status::Code::kCorruption);
  clock_.AdvanceMs(5000);
  auto d = Open();
  EXPECT_TRUE(Val(d->RequestSaveModel("b", 5000)));  // the grant ran out
}

}  // namespace
}  // namespace fabps::master

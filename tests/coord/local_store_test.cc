// Cases only the local backend has: durability across reopen, validation of
// its files, torn tails, compaction with several processes following.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "tests/coord/store_test_util.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class LocalStoreTest : public ::testing::Test {
 protected:
  std::string Spec() const { return "local:" + dir_.File("store"); }
  Result<std::unique_ptr<Store>> Open(int64_t compact_bytes = 4 << 20,
                                      int64_t poll_ms = 10) {
    StoreOptions o;
    o.spec = Spec();
    o.job = "job";
    o.local_compact_log_bytes = compact_bytes;
    o.poll_interval_ms = poll_ms;
    return OpenStore(o);
  }
  std::string File(const std::string& name) const {
    return dir_.File("store/" + name);
  }
  Deadline D() const { return Deadline::InMs(5000); }

  void FlipByte(const std::string& path, off_t offset) {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    char c = 0;
    ASSERT_EQ(::pread(fd, &c, 1, offset), 1);
    c ^= 0x5a;
    ASSERT_EQ(::pwrite(fd, &c, 1, offset), 1);
    ::close(fd);
  }
  off_t Size(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    return static_cast<off_t>(f.tellg());
  }

  fabps::testing::TempDir dir_;
};

TEST_F(LocalStoreTest, SurvivesReopen) {
  int64_t rev = 0;
  LeaseId lease = 0;
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Put("a", "1", kNoLease, D()).ok());
    auto l = (*s)->GrantLease(60, D());
    ASSERT_TRUE(l.ok());
    lease = l->id;
    auto r = (*s)->Put("b", "2", lease, D());
    ASSERT_TRUE(r.ok());
    rev = *r;
  }
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto b = (*s)->Get("b", D());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->value, "2");
  EXPECT_EQ(b->lease, lease);
  EXPECT_EQ(b->mod_revision, rev);
  auto r = (*s)->Put("c", "3", kNoLease, D());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, rev + 1);
  EXPECT_TRUE((*s)->KeepAliveOnce(lease, D()).ok());
  auto l2 = (*s)->GrantLease(5, D());
  ASSERT_TRUE(l2.ok());
  EXPECT_GT(l2->id, lease);
}

TEST_F(LocalStoreTest, LeaseExpiresWhileNoProcessIsRunning) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok());
    auto l = (*s)->GrantLease(2, D());
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE((*s)->Put("ephemeral", "x", l->id, D()).ok());
    ASSERT_TRUE((*s)->Put("durable", "y", kNoLease, D()).ok());
  }
  // A new process notices the expiry from the times in the log (no keeper
  // of the lease is left): wait for the delete, not for a fixed time.
  auto s = Open();
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(WaitUntilAbsent(s->get(), "ephemeral", Deadline::InMs(15000)));
  EXPECT_EQ((*s)->Get("ephemeral", D()).status().code(), Code::kNotFound);
  EXPECT_TRUE((*s)->Get("durable", D()).ok());
}

TEST_F(LocalStoreTest, CorruptLogIsReported) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE((*s)->Put("k" + std::to_string(i), std::string(100, 'x'),
                            kNoLease, D())
                      .ok());
    }
  }
  FlipByte(File("log.1"), Size(File("log.1")) / 2);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kCorruption) << s.status().ToString();
  EXPECT_NE(s.status().message().find("log.1"), std::string::npos)
      << s.status().ToString();
}

TEST_F(LocalStoreTest, CorruptionSeenByARunningStore) {
  auto s = Open();
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Put("k", "v", kNoLease, D()).ok());
  auto other = Open();
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Put("k2", std::string(200, 'v'), kNoLease, D()).ok());
  // Damage the record `other` just wrote, before `s` reads it. `s` may have
  // read it already through its poller; then only a new open sees it.
  FlipByte(File("log.1"), Size(File("log.1")) - 50);
  auto third = Open();
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), Code::kCorruption);
}

TEST_F(LocalStoreTest, CorruptSnapshotIsReported) {
  {
    auto s = Open(/*compact_bytes=*/512);
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE((*s)->Put("k" + std::to_string(i), std::string(64, 'x'),
                            kNoLease, D())
                      .ok());
    }
  }
  FlipByte(File("SNAPSHOT"), Size(File("SNAPSHOT")) - 10);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kCorruption) << s.status().ToString();
  // A truncated snapshot as well.
  ASSERT_EQ(::truncate(File("SNAPSHOT").c_str(), 12), 0);
  auto t = Open();
  EXPECT_EQ(t.status().code(), Code::kCorruption) << t.status().ToString();
}

TEST_F(LocalStoreTest, TornTailIsCutAndEarlierWritesKept) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Put("a", "1", kNoLease, D()).ok());
    ASSERT_TRUE((*s)->Put("b", "2", kNoLease, D()).ok());
  }
  // A writer that died mid-append: a header promising more than is there.
  {
    std::ofstream f(File("log.1"), std::ios::binary | std::ios::app);
    const char partial[] = {0x40, 0, 0, 0, 1, 2, 3, 4, 1, 9};
    f.write(partial, sizeof(partial));
  }
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->Get("b", D())->value, "2");
  ASSERT_TRUE((*s)->Put("c", "3", kNoLease, D()).ok());
  s->reset();
  auto again = Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->Get("c", D())->value, "3");
}

TEST_F(LocalStoreTest, LockHeldElsewhereTimesOut) {
  auto s = Open();
  ASSERT_TRUE(s.ok());
  // Another holder of the store lock (as a stuck process would be).
  int fd = ::open(File("LOCK").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto start = SteadyClock::now();
  auto r = (*s)->Put("k", "v", kNoLease, Deadline::InMs(300));
  EXPECT_EQ(r.status().code(), Code::kTimedOut) << r.status().ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
  ::flock(fd, LOCK_UN);
  ::close(fd);
  EXPECT_TRUE((*s)->Put("k", "v", kNoLease, D()).ok());
}

TEST_F(LocalStoreTest, CompactionKeepsStateAndFollowers) {
  auto writer = Open(/*compact_bytes=*/2048);
  auto follower = Open(/*compact_bytes=*/2048);
  ASSERT_TRUE(writer.ok() && follower.ok());
  auto w = (*follower)->WatchKeys("k/", true, 0, D());
  ASSERT_TRUE(w.ok());
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE((*writer)
                    ->Put("k/" + std::to_string(i % 17), std::to_string(i),
                          kNoLease, D())
                    .ok());
    // Let the follower keep up now and then, as a live process would.
    if (i % 20 == 0) {
      ASSERT_TRUE((*follower)->Get("k/0", D()).ok());
    }
  }
  auto events = WaitEvents(w->get(), n, Deadline::InMs(20000));
  ASSERT_EQ(events.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(events[i].kv.value, std::to_string(i));
  EXPECT_LT(Size(File("log.1")), 0);  // log.1 was removed by later compactions
  auto r = (*follower)->Range("k/", D());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kvs.size(), 17u);
  writer->reset();
  follower->reset();
  auto re = Open();
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  auto r2 = (*re)->Range("k/", D());
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->kvs.size(), 17u);
  EXPECT_EQ(r2->kvs[0].value, "289");  // "k/0" was last written at i = 17 * 17
  EXPECT_EQ(r2->revision, r->revision);
  // History before the last snapshot is gone.
  EXPECT_EQ((*re)->WatchKeys("k/", true, 1, D()).status().code(),
            Code::kFailedPrecondition);
}

// A process that sleeps through several compactions (no polling here) cannot
// replay what it missed: its watches end, and its reads see the new state.
TEST_F(LocalStoreTest, FollowerBehindSeveralCompactionsReloads) {
  auto writer = Open(/*compact_bytes=*/1024);
  auto sleeper = Open(/*compact_bytes=*/1 << 30, /*poll_ms=*/600000);
  ASSERT_TRUE(writer.ok() && sleeper.ok());
  auto w = (*sleeper)->WatchKeys("k/", true, 0, D());
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*writer)
                    ->Put("k/" + std::to_string(i % 5), std::to_string(i),
                          kNoLease, D())
                    .ok());
  }
  auto g = (*sleeper)->Get("k/4", D());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->value, "199");
  std::vector<WatchEvent> events;
  Status end;
  for (int i = 0; i < 3 && end.ok(); ++i) {
    end = (*w)->Next(&events, Deadline::InMs(2000));
  }
  EXPECT_EQ(end.code(), Code::kFailedPrecondition) << end.ToString();
  // New writes reach the sleeper again.
  ASSERT_TRUE((*writer)->Put("k/0", "fresh", kNoLease, D()).ok());
  EXPECT_EQ((*sleeper)->Get("k/0", D())->value, "fresh");
}

}  // namespace
}  // namespace fabps::coord::testing

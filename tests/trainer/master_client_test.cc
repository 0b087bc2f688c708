// MasterClient against a real fabps-master process.
#include "trainer/master_client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "recordio/reader.h"
#include "tests/master/master_process.h"
#include "tests/master/test_dataset.h"
#include "tests/util/etcd_server.h"

namespace fabps::trainer {
namespace {

using testing::MasterProcess;

class MasterClientTest : public ::testing::Test {
 protected:
  void StartMaster(const std::vector<std::string>& extra) {
    auto m = MasterProcess::Start(dir_.File("state"), dir_.File("master.log"),
                                  extra);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
  }
  std::unique_ptr<MasterClient> NewClient(TrainerId id) {
    MasterClientOptions o;
    o.master_address = master_.address();
    o.trainer_id = id;
    o.wait_for_task_ms = 60'000;
    auto c = MasterClient::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  void TearDown() override {
    if (HasFailure()) {
      std::fprintf(stderr, "%s\n",
                   testing::ReadFileOrEmpty(dir_.File("master.log")).c_str());
    }
  }
  // A client (id 1) that finds the master through `store`, set to read pass 0
  // of the dataset `glob`.
  static Result<std::unique_ptr<MasterClient>> StorePassReader(
      const std::string& store, const std::string& glob) {
    MasterClientOptions o;
    o.store_spec = store;
    o.job = "test";
    o.trainer_id = 1;
    FABPS_ASSIGN_OR_RETURN(auto c, MasterClient::Create(o));
    FABPS_RETURN_IF_ERROR(c->SetDataset({glob}));
    FABPS_RETURN_IF_ERROR(c->StartGetRecords(0));
    return c;
  }
  // Reads the rest of the pass; false on error (reported).
  static bool ReadPass(MasterClient* c, std::vector<std::string>* out,
                       size_t limit = SIZE_MAX) {
    std::string_view rec;
    while (out->size() < limit) {
      auto more = c->NextRecord(&rec);
      EXPECT_TRUE(more.ok()) << more.status().ToString();
      if (!more.ok()) return false;
      if (!more.value()) break;
      out->emplace_back(rec);
    }
    return true;
  }

  // Starts a leader and, once it serves, a standby (which writes its port
  // file only when it has taken master/lock) on `store` with `flags`.
  void StartLeaderAndStandby(const std::vector<std::string>& flags,
                             MasterProcess* leader,
                             testing::Subprocess* standby) {
    const testing::TempDir& dir = dir_;
    auto l = MasterProcess::Start(dir.File("m1"), dir.File("m1.log"), flags);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    *leader = std::move(l).value();
    std::vector<std::string> argv = {
        testing::BuiltBinary("master/fabps-master"),
        "--port",
        "0",
        "--port-file",
        dir.File("m2.port"),
        "--job",
        "test"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto s = testing::Subprocess::Start(argv, dir.File("m2.log"));
    ASSERT_TRUE(s.ok());
    *standby = std::move(s).value();
  }
  // Kills the leader and waits (up to 30 s) until the standby serves;
  // returns the seconds it took.
  double KillLeaderAndAwaitStandby(MasterProcess* leader,
                                   testing::Subprocess* standby) {
    leader->proc.Kill();
    auto killed = std::chrono::steady_clock::now();
    Deadline d = Deadline::InMs(30'000);
    while (testing::ReadFileOrEmpty(dir_.File("m2.port")).empty() &&
           !d.Expired() && standby->running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(testing::ReadFileOrEmpty(dir_.File("m2.port")).empty())
        << testing::ReadFileOrEmpty(dir_.File("m2.log"));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         killed)
        .count();
  }

  // Two masters on one store: the standby takes over within the lease TTL
  // when the leader is killed, resumes its state exactly (every record read
  // exactly once in the pass), and the client finds it through master/addr.
  void StandbyTakesOver(const std::string& store) {
    const testing::TempDir& dir = dir_;
    std::string glob = testing::MakeDataset(dir.path(), 2, 5, 4);  // 40 records
    std::vector<std::string> flags = {
        "--chunks-per-task", "1", "--store", store, "--lease-ttl", "2"};
    MasterProcess leader;
    testing::Subprocess standby;
    StartLeaderAndStandby(flags, &leader, &standby);
    auto c = StorePassReader(store, glob);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<std::string> records;
    ASSERT_TRUE(ReadPass(c->get(), &records, 14));
    EXPECT_TRUE(testing::ReadFileOrEmpty(dir.File("m2.port")).empty())
        << "the standby served while the leader held the lock";
    double secs = KillLeaderAndAwaitStandby(&leader, &standby);
    std::printf("standby took over %.2f s after the leader was killed\n", secs);
    EXPECT_LT(secs, 2 + 5.0) << "take-over slower than TTL + margin";
    ASSERT_TRUE(ReadPass(c->get(), &records));
    std::map<std::string, int> count;
    for (const auto& r : records) ++count[r];
    EXPECT_EQ(count.size(), 40u);
    for (const auto& [r, n] : count) EXPECT_EQ(n, 1) << r;
    // A clean stop releases the lock at once.
    auto st = standby.Stop(10'000);
    ASSERT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  }

  testing::TempDir dir_;
  MasterProcess master_;
};

TEST_F(MasterClientTest, SeveralTrainersReadEveryRecordOncePerPass) {
  std::string glob =
      testing::MakeDataset(dir_.path(), 3, 4, 10);  // 120 records
  StartMaster({"--chunks-per-task", "2"});
  std::mutex mu;
  std::map<int64_t, std::map<std::string, int>> seen;
  auto trainer = [&](int id) {
    auto c = NewClient(100 + id);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(c->SetDataset({glob}).ok());
    for (int64_t pass = 0; pass < 2; ++pass) {
      ASSERT_TRUE(c->StartGetRecords(pass).ok());
      std::vector<std::string> records;
      ASSERT_TRUE(ReadPass(c.get(), &records));
      std::lock_guard<std::mutex> l(mu);
      for (const auto& r : records) ++seen[pass][r];
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back(trainer, i);
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [pass, records] : seen) {
    EXPECT_EQ(records.size(), 120u) << "pass " << pass;
    for (const auto& [r, n] : records) EXPECT_EQ(n, 1) << r;
  }
  auto c = NewClient(99);
  auto st = c->GetStatus();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pass, 2);
  EXPECT_EQ(st->trainers.size(), 3u);
  // The master names a trainer by its id in decimal.
  EXPECT_NE(std::find(st->trainers.begin(), st->trainers.end(), "101"),
            st->trainers.end());
  EXPECT_EQ(st->failed, 0);
}

// One id type for both clients: 0 picks a random positive id, negative ones
// are refused.
TEST(MasterClientOptionsTest, TrainerIdZeroIsRandomNegativeIsRefused) {
  MasterClientOptions o;
  o.master_address = "127.0.0.1:1";
  auto c = MasterClient::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT((*c)->trainer_id(), 0);
  o.trainer_id = 5;
  c = MasterClient::Create(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->trainer_id(), 5);
  o.trainer_id = -1;
  EXPECT_EQ(MasterClient::Create(o).status().code(),
            Status::Code::kInvalidArgument);
}

TEST_F(MasterClientTest, UnreadableChunkIsReportedFailedAndSkipped) {
  std::string glob =
      testing::MakeDataset(dir_.path(), 2, 3, 5);  // 6 chunks, 30 records
  StartMaster({"--chunks-per-task", "1", "--task-failure-max", "0"});
  auto c = NewClient(1);
  ASSERT_TRUE(c->SetDataset({glob}).ok());
  // Damage the second chunk of data-1 after the master indexed the files.
  auto refs = recordio::IndexFile(dir_.File("data-1"));
  ASSERT_TRUE(refs.ok());
  int fd = ::open(dir_.File("data-1").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char b = 0;
  ASSERT_EQ(::pwrite(fd, &b, 1,
                     static_cast<off_t>((*refs)[1].offset +
                                        recordio::kHeaderSize + 3)),
            1);
  ::close(fd);
  ASSERT_TRUE(c->StartGetRecords(0).ok());
  std::vector<std::string> records;
  ASSERT_TRUE(ReadPass(c.get(), &records));
  EXPECT_EQ(records.size(), 25u);
  for (const auto& r : records)
    EXPECT_EQ(r.find("f1-c1-"), std::string::npos) << r;
  EXPECT_EQ(c->tasks_reported_failed(), 1);
  auto st = c->GetStatus();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->failed, 1);
  EXPECT_EQ(st->pass, 1);
}

TEST_F(MasterClientTest, MasterKilledMidPassIsRiddenOutThroughTheStore) {
  std::string glob = testing::MakeDataset(dir_.path(), 2, 5, 4);  // 40 records
  std::string store = "local:" + dir_.File("store");
  std::vector<std::string> flags = {"--chunks-per-task", "1", "--store", store};
  StartMaster(flags);
  auto c = StorePassReader(store, glob);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<std::string> records;
  ASSERT_TRUE(ReadPass(c->get(), &records, 14));
  master_.proc.Kill();
  StartMaster(flags);  // a new port, published under master/addr
  ASSERT_TRUE(ReadPass(c->get(), &records));
  std::map<std::string, int> count;
  for (const auto& r : records) ++count[r];
  EXPECT_EQ(count.size(), 40u);
  for (const auto& [r, n] : count) EXPECT_EQ(n, 1) << r;
}

TEST_F(MasterClientTest, StandbyMasterTakesOverOnTheLocalStore) {
  StandbyTakesOver("local:" + dir_.File("store"));
}

TEST_F(MasterClientTest, StandbyMasterTakesOverOnEtcd) {
  if (testing::EtcdServer::BinaryPath().empty()) GTEST_SKIP() << "no etcd";
  auto etcd = testing::EtcdServer::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  StandbyTakesOver("etcd:" + (*etcd)->client_url());
}

// The save election's grant is journaled: trainer 1 holds it, the leading
// master is killed in the middle of the election (trainer 2 was refused and
// asks again), and the standby that takes over still refuses trainer 2 and
// still grants trainer 1.
TEST_F(MasterClientTest, SaveGrantSurvivesAMasterFailover) {
  std::string store = "local:" + dir_.File("store");
  MasterProcess leader;
  testing::Subprocess standby;
  StartLeaderAndStandby({"--store", store, "--lease-ttl", "2"}, &leader,
                        &standby);
  auto client = [&](TrainerId id) {
    MasterClientOptions o;
    o.store_spec = store;
    o.job = "test";
    o.trainer_id = id;
    auto c = MasterClient::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  };
  auto one = client(1), two = client(2);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  auto r = one->RequestSaveModel(600'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
  r = two->RequestSaveModel(600'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  KillLeaderAndAwaitStandby(&leader, &standby);
  r = two->RequestSaveModel(600'000);  // finds the new master in the store
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r) << "the new master forgot the grant";
  r = one->RequestSaveModel(600'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r) << "the holder lost its grant";
  auto st = standby.Stop(10'000);
  ASSERT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
}

// etcd gone past the lease TTL: the leader can no longer know it is the
// only master, so it stops (exit 3) rather than risk two.
TEST_F(MasterClientTest, MasterWhoseLeaseIsLostStops) {
  if (testing::EtcdServer::BinaryPath().empty()) GTEST_SKIP() << "no etcd";
  auto etcd = testing::EtcdServer::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  StartMaster({"--store", "etcd:" + (*etcd)->client_url(), "--lease-ttl", "2"});
  ASSERT_TRUE((*etcd)->Stop().ok());
  auto r = master_.proc.Wait(20'000);
  ASSERT_TRUE(r.ok()) << "the master kept serving with its lease lost";
  EXPECT_TRUE(WIFEXITED(*r) && WEXITSTATUS(*r) == 3) << *r;
  EXPECT_NE(testing::ReadFileOrEmpty(dir_.File("master.log"))
                .find("lost master/lock"),
            std::string::npos);
}

TEST(MasterClientOptions, BadOptionsRejected) {
  MasterClientOptions o;
  EXPECT_EQ(MasterClient::Create(o).status().code(),
            Status::Code::kInvalidArgument);
  o.master_address = "nohostport";
  EXPECT_EQ(MasterClient::Create(o).status().code(),
            Status::Code::kInvalidArgument);
  o.master_address = "127.0.0.1:1";
  o.rpc_timeout_ms = 0;
  EXPECT_EQ(MasterClient::Create(o).status().code(),
            Status::Code::kInvalidArgument);
  o.rpc_timeout_ms = 100;
  auto c = MasterClient::Create(o);
  ASSERT_TRUE(c.ok());
  std::string_view rec;
  EXPECT_EQ((*c)->NextRecord(&rec).status().code(),
            Status::Code::kFailedPrecondition);
}

TEST(MasterClientOptions, UnreachableMasterIsUnavailableAfterRetries) {
  MasterClientOptions o;
  o.master_address = "127.0.0.1:" + std::to_string(testing::FreeTcpPort());
  o.rpc_timeout_ms = 200;
  o.rpc_retry_ms = 300;
  auto c = MasterClient::Create(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->SetDataset({"/x"}).code(), Status::Code::kUnavailable);
}

}  // namespace
}  // namespace fabps::trainer

// The real fabps-master over Thrift: dispatch across concurrent clients,
// timeouts, failures, restarts, bad peers and bad flags.
#include "tests/master/master_process.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/master/test_dataset.h"
#include "tests/util/etcd_server.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"

namespace fabps {
namespace {

namespace gen = rpc::master;
using Conn = rpc::RpcConnection<gen::MasterClient>;
using testing::MasterProcess;

std::unique_ptr<Conn> Connect(int port) {
  rpc::RpcClientOptions o;
  o.port = port;
  o.recv_timeout_ms = 10'000;
  return std::make_unique<Conn>(o);
}

gen::GetTaskReply GetTask(Conn* c, int64_t pass, const std::string& who = "t") {
  gen::GetTaskReply r;
  Status s = c->Call("GetTask",
                     [&](gen::MasterClient& m) { m.GetTask(r, pass, who); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

bool Finished(Conn* c, int64_t id, int64_t epoch) {
  bool ok = false;
  Status s = c->Call("TaskFinished", [&](gen::MasterClient& m) {
    ok = m.TaskFinished(id, epoch);
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ok;
}

bool Failed(Conn* c, int64_t id, int64_t epoch) {
  bool ok = false;
  Status s = c->Call("TaskFailed", [&](gen::MasterClient& m) {
    ok = m.TaskFailed(id, epoch);
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ok;
}

gen::MasterStatus GetStatus(Conn* c) {
  gen::MasterStatus st;
  Status s = c->Call("Status", [&](gen::MasterClient& m) { m.Status(st); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return st;
}

void SetDataset(Conn* c, const std::string& glob) {
  Status s = c->Call("SetDataset",
                     [&](gen::MasterClient& m) { m.SetDataset({glob}); });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

class MasterProcessTest : public ::testing::Test {
 protected:
  void StartMaster(const std::vector<std::string>& extra) {
    auto m = MasterProcess::Start(dir_.File("state"), dir_.File("master.log"),
                                  extra);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
  }
  void TearDown() override {
    if (HasFailure())
      std::fprintf(stderr, "%s\n",
                   testing::ReadFileOrEmpty(dir_.File("master.log")).c_str());
  }
  // Sets a dataset, finishes some tasks, keeps some pending, SIGKILLs the
  // master and checks that a new one on the same store resumes exactly.
  void RunRestartScenario(const std::vector<std::string>& store_flags);

  testing::TempDir dir_;
  MasterProcess master_;
};

TEST_F(MasterProcessTest, ConcurrentClientsGetEveryChunkOncePerPass) {
  std::string glob = testing::MakeDataset(dir_.path(), 4, 6, 2);  // 24 chunks
  StartMaster({"--chunks-per-task", "2"});
  SetDataset(Connect(master_.port).get(), glob);
  std::mutex mu;
  std::map<int64_t, std::map<std::pair<std::string, int64_t>, int>> seen;
  auto trainer = [&](int id) {
    auto c = Connect(master_.port);
    Deadline deadline = Deadline::InMs(60'000);
    for (int64_t pass = 0; pass < 2 && !deadline.Expired();) {
      gen::GetTaskReply r =
          GetTask(c.get(), pass, "trainer-" + std::to_string(id));
      if (r.result == gen::GetTaskResult::PASS_FINISHED) {
        ++pass;
      } else if (r.result == gen::GetTaskResult::TASK) {
        {
          std::lock_guard<std::mutex> l(mu);
          for (const auto& ch : r.task.chunks)
            ++seen[pass][{ch.path, ch.offset}];
        }
        EXPECT_TRUE(Finished(c.get(), r.task.id, r.task.epoch));
      } else {
        ASSERT_EQ(r.result, gen::GetTaskResult::NO_TASK_NOW);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(trainer, i);
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [pass, chunks] : seen) {
    EXPECT_EQ(chunks.size(), 24u);
    for (const auto& [k, n] : chunks)
      EXPECT_EQ(n, 1) << "pass " << pass << " " << k.first;
  }
  gen::MasterStatus st = GetStatus(Connect(master_.port).get());
  EXPECT_EQ(st.pass_id, 2);
  EXPECT_EQ(st.trainers.size(), 4u);
}

TEST_F(MasterProcessTest,
       TimeoutRedispatchesStaleEpochIgnoredFailureMaxHonoured) {
  std::string glob = testing::MakeDataset(dir_.path(), 1, 2, 1);
  StartMaster({"--chunks-per-task", "1", "--task-timeout", "200",
               "--task-failure-max", "1", "--expire-interval-ms", "10"});
  auto c = Connect(master_.port);
  SetDataset(c.get(), glob);
  gen::GetTaskReply first = GetTask(c.get(), 0);
  ASSERT_EQ(first.result, gen::GetTaskResult::TASK);
  gen::GetTaskReply other = GetTask(c.get(), 0);
  ASSERT_EQ(other.result, gen::GetTaskResult::TASK);
  ASSERT_TRUE(Finished(c.get(), other.task.id, other.task.epoch));
  // Never finish `first`: it times out and comes back with a new epoch.
  gen::GetTaskReply again;
  Deadline deadline = Deadline::InMs(20'000);
  do {
    again = GetTask(c.get(), 0);
    if (again.result != gen::GetTaskResult::TASK)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (again.result != gen::GetTaskResult::TASK && !deadline.Expired());
  ASSERT_EQ(again.result, gen::GetTaskResult::TASK);
  EXPECT_EQ(again.task.id, first.task.id);
  EXPECT_EQ(again.task.epoch, first.task.epoch + 1);
  EXPECT_FALSE(Finished(c.get(), first.task.id, first.task.epoch));  // stale
  // A second failure (the timeout was the first) is past --task-failure-max 1.
  EXPECT_TRUE(Failed(c.get(), again.task.id, again.task.epoch));
  gen::MasterStatus st = GetStatus(c.get());
  EXPECT_EQ(st.failed, 1);
  ASSERT_EQ(st.failed_tasks.size(), 1u);
  EXPECT_EQ(st.failed_tasks[0], first.task.id);
  EXPECT_EQ(st.pass_id, 1);
}

void MasterProcessTest::RunRestartScenario(
    const std::vector<std::string>& store_flags) {
  std::string glob = testing::MakeDataset(dir_.path(), 2, 5, 1);  // 10 chunks
  std::vector<std::string> flags = {"--chunks-per-task", "1", "--compact-every",
                                    "4"};
  StartMaster(flags);
  std::set<int64_t> done;
  std::vector<gen::Task> pending;
  {
    auto c = Connect(master_.port);
    SetDataset(c.get(), glob);
    for (int i = 0; i < 7; ++i) {
      gen::GetTaskReply r = GetTask(c.get(), 0);
      ASSERT_EQ(r.result, gen::GetTaskResult::TASK);
      if (i < 4) {
        ASSERT_TRUE(Finished(c.get(), r.task.id, r.task.epoch));
        done.insert(r.task.id);
      } else {
        pending.push_back(r.task);
      }
    }
  }
  master_.proc.Kill();  // SIGKILL: no clean shutdown
  StartMaster(flags);
  auto c = Connect(master_.port);
  gen::MasterStatus st = GetStatus(c.get());
  EXPECT_EQ(st.pass_id, 0);
  EXPECT_EQ(st.done, 4);
  EXPECT_EQ(st.pending, 3);
  EXPECT_EQ(st.todo, 3);
  // Pending tasks are not lost: they finish with the epoch they were given.
  for (const auto& t : pending) EXPECT_TRUE(Finished(c.get(), t.id, t.epoch));
  // Nothing done is handed out again in this pass.
  for (int i = 0; i < 3; ++i) {
    gen::GetTaskReply r = GetTask(c.get(), 0);
    ASSERT_EQ(r.result, gen::GetTaskResult::TASK);
    EXPECT_EQ(done.count(r.task.id), 0u);
    EXPECT_TRUE(Finished(c.get(), r.task.id, r.task.epoch));
  }
  EXPECT_EQ(GetTask(c.get(), 0).result, gen::GetTaskResult::PASS_FINISHED);
  EXPECT_EQ(GetStatus(c.get()).pass_id, 1);
}

TEST_F(MasterProcessTest, KilledAndRestartedMasterResumesExactly) {
  RunRestartScenario({});
}

TEST_F(MasterProcessTest, KilledAndRestartedMasterResumesExactlyOnEtcd) {
  if (testing::EtcdServer::BinaryPath().empty())
    GTEST_SKIP() << "no etcd binary";
  auto etcd = testing::EtcdServer::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  RunRestartScenario({"--store", "etcd:" + (*etcd)->client_url()});
}

TEST_F(MasterProcessTest, DifferentDatasetRefusedClearly) {
  std::string glob = testing::MakeDataset(dir_.path(), 1, 1, 1);
  StartMaster({});
  auto c = Connect(master_.port);
  SetDataset(c.get(), glob);
  SetDataset(c.get(), glob);  // the same again is fine
  gen::MasterError err;
  bool threw = false;
  Status s = c->Call("SetDataset", [&](gen::MasterClient& m) {
    try {
      m.SetDataset({dir_.File("other-*")});
    } catch (const gen::MasterError& e) {
      err = e;
      threw = true;
    }
  });
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(threw);
  EXPECT_EQ(err.code, gen::ErrorCode::FAILED_PRECONDITION);
  EXPECT_NE(err.message.find("already set"), std::string::npos);
}

// The IDL promises NOT_FOUND for a glob that matches nothing; a glob in a
// directory that does not exist is such a glob (UNAVAILABLE would make the
// client retry for its whole deadline).
TEST_F(MasterProcessTest, GlobInMissingDirectoryIsNotFound) {
  StartMaster({});
  auto c = Connect(master_.port);
  for (const std::string& glob :
       {dir_.File("no-such-dir/*"), dir_.File("no-such-dir/sub/part-*"),
        dir_.File("none-*")}) {
    gen::MasterError err;
    bool threw = false;
    Status s = c->Call("SetDataset", [&](gen::MasterClient& m) {
      try {
        m.SetDataset({glob});
      } catch (const gen::MasterError& e) {
        err = e;
        threw = true;
      }
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(threw) << glob;
    EXPECT_EQ(err.code, gen::ErrorCode::NOT_FOUND)
        << glob << ": " << err.message;
    EXPECT_NE(err.message.find(glob), std::string::npos) << err.message;
  }
  EXPECT_FALSE(GetStatus(c.get()).has_dataset);
}

// Raw bytes to the master's port, then check it still serves.
void SendRaw(int port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  timeval tv{0, 200'000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256];
  (void)::recv(fd, buf, sizeof(buf), 0);
  ::close(fd);
}

TEST_F(MasterProcessTest, BadPeersDoNotHurtTheMaster) {
  std::string glob = testing::MakeDataset(dir_.path(), 1, 2, 1);
  StartMaster({});
  SendRaw(master_.port,
          std::string("\x7f\xff\xff\xff", 4) + "huge frame");  // 2 GiB frame
  SendRaw(master_.port, std::string("\x00\x00\x00\x10", 4) +
                            "garbagegarbage!!");  // not thrift
  // A well-framed call whose list claims 2^31 elements.
  std::string lie = std::string("\x80\x01\x00\x01", 4) +
                    std::string("\x00\x00\x00\x0a", 4) + "SetDataset" +
                    std::string("\x00\x00\x00\x01", 4) +
                    std::string("\x0f\x00\x01\x0b\x7f\xff\xff\xff", 8);
  uint32_t n = htonl(static_cast<uint32_t>(lie.size()));
  SendRaw(master_.port, std::string(reinterpret_cast<char*>(&n), 4) + lie);
  SendRaw(master_.port, "");
  auto c = Connect(master_.port);
  SetDataset(c.get(), glob);
  EXPECT_EQ(GetTask(c.get(), 0).result, gen::GetTaskResult::TASK);
  EXPECT_TRUE(master_.proc.running());
}

TEST(MasterFlags, BadFlagIsOneLineNamingFlagAndRange) {
  testing::TempDir dir;
  auto p = testing::Subprocess::Start(
      {testing::BuiltBinary("master/fabps-master"), "--task-failure-max", "-1"},
      dir.File("log"));
  ASSERT_TRUE(p.ok());
  auto st = p->Wait(20'000);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 2);
  std::string log = testing::ReadFileOrEmpty(dir.File("log"));
  EXPECT_NE(log.find("--task-failure-max"), std::string::npos) << log;
  EXPECT_NE(log.find("0 to 1000"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

}  // namespace
}  // namespace fabps

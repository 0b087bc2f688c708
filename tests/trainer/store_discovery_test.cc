// Pservers and trainers that find each other through a real etcd: pservers
// claim their index with a lease and publish their address; trainers elect
// the initializer through init/lock; a pserver killed with SIGKILL is
// replaced by a new process that takes the free index back, recovers its
// checkpoint and serves on a new port, and the trainers find it there. A
// second job on the same etcd is not disturbed. A trainer follows its job
// re-sharded to another pserver count while it runs (2 -> 3 -> 1).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "coord/protocol/checkpoint_record.h"
#include "coord/protocol/job_keys.h"
#include "coord/store.h"
#include "pserver/checkpoint.h"
#include "tests/trainer/init_race.h"
#include "tests/util/etcd_server.h"
#include "tests/util/raw_socket.h"
#include "tests/util/subprocess.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {
namespace {

using fabps::testing::BuiltBinary;
using fabps::testing::EtcdServer;
using fabps::testing::ReadFileOrEmpty;
using fabps::testing::SilentListener;
using fabps::testing::Subprocess;
using fabps::testing::TempDir;

constexpr uint64_t kBlock = 1024;
constexpr uint64_t kElements = 3 * kBlock + 5;  // blocks on both pservers
constexpr int64_t kMs = 30000;

class StoreDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EtcdServer::BinaryPath().empty()) GTEST_SKIP() << "no etcd";
    auto e = EtcdServer::Start();
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    etcd_ = std::move(*e);
    store_ = "etcd:" + etcd_->client_url();
  }
  void TearDown() override {
    if (HasFailure()) {
      for (int i = 0; i < started_; i++) {
        std::fprintf(stderr, "--- pserver process %d\n%s\n", i,
                     ReadFileOrEmpty(Log(i)).c_str());
      }
    }
  }
  std::string Log(int i) const {
    return dir_.File("ps-proc-" + std::to_string(i) + ".log");
  }
  // Starts a pserver process that claims any free index of `job`, with a
  // lease of `ttl` seconds (short, so that a lost claim shows quickly; a
  // test that only stops its pservers with SIGTERM takes a longer one, which
  // a loaded machine's slow etcd does not expire).
  Subprocess StartPserver(const std::string& job, int num, int ttl = 2) {
    int i = started_++;
    auto p = Subprocess::Start(
        {BuiltBinary("pserver/daemon/fabps-pserver"), "--provider",
         "tcp;ofi_rxm", "--host", "127.0.0.1", "--num-pservers",
         std::to_string(num), "--store", store_, "--job", job, "--lease-ttl",
         std::to_string(ttl), "--checkpoint-dir", dir_.File("ckpt-" + job),
         "--save-period", "1", "--apply-threads", "1"},
        Log(i));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(*p) : Subprocess();
  }
  PServerClientOptions Options(const std::string& job) const {
    PServerClientOptions o;
    o.store_spec = store_;
    o.job = job;
    o.provider = "tcp;ofi_rxm";
    o.interface_address = "127.0.0.1";
    o.block_elements = kBlock;
    o.default_rule.learning_rate = 1.0;  // w -= g: exact on integers
    o.init_wait_ms = kMs;
    return o;
  }
  // The coordination store of `job` on the test's etcd.
  Result<std::unique_ptr<coord::Store>> OpenStore(const std::string& job) {
    coord::StoreOptions so;
    so.spec = store_;
    so.job = job;
    return coord::OpenStore(so);
  }
  // Waits up to 20 s for `key` to exist (a pserver's claim to be
  // published); false when it did not.
  static bool WaitForKey(coord::Store* st, const std::string& key) {
    Deadline d = Deadline::InMs(20000);
    while (!st->Get(key, Deadline::InMs(2000)).ok()) {
      if (d.Expired()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }
  // The number of checkpoints pserver `i` recorded (the version of
  // ps/<i>/checkpoint; 0 before the first).
  static int64_t Checkpoints(coord::Store* st, int i) {
    auto kv = st->Get(coord::keys::PsCheckpoint(i), Deadline::InMs(2000));
    return kv.ok() ? kv->version : 0;
  }
  // Waits up to 20 s until pserver `i` has recorded at least `n`
  // checkpoints; false when it did not.
  static bool WaitForCheckpoints(coord::Store* st, int i, int64_t n) {
    Deadline d = Deadline::InMs(20000);
    while (Checkpoints(st, i) < n) {
      if (d.Expired()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }
  static Status Push(PServerClient* c, float g) {
    std::vector<float> grad(kElements, g);
    auto h = c->SendGrads({{"w", grad.data(), grad.size() * 4}},
                          Deadline::InMs(10000));
    if (!h.ok()) return h.status();
    return c->Wait(*h, Deadline::InMs(10000));
  }
  // Connects to `job` through the store and initializes "w" to `value`
  // (this client must win init/lock).
  static Result<std::unique_ptr<PServerClient>> ConnectAndInit(
      const PServerClientOptions& o, float value) {
    FABPS_ASSIGN_OR_RETURN(auto c, PServerClient::Connect(o));
    FABPS_ASSIGN_OR_RETURN(bool init, c->BeginInitParams(false));
    if (!init) return Status::FailedPrecondition("did not win init/lock");
    std::vector<float> v(kElements, value);
    FABPS_RETURN_IF_ERROR(c->InitParam({"w", DType::kFloat32, {kElements}},
                                       v.data(), v.size() * 4));
    FABPS_RETURN_IF_ERROR(c->FinishInitParams());
    return c;
  }
  static Result<std::vector<float>> Pull(PServerClient* c) {
    std::vector<float> w(kElements, -1);
    FABPS_RETURN_IF_ERROR(
        c->GetParams({{"w", w.data(), w.size() * 4}}, Deadline::InMs(10000)));
    return w;
  }

  TempDir dir_;
  std::unique_ptr<EtcdServer> etcd_;
  std::string store_;
  int started_ = 0;
};

TEST_F(StoreDiscoveryTest, PserverReplacedThroughTheStoreKeepsItsShard) {
  std::vector<Subprocess> ps;
  ps.push_back(StartPserver("j", 2));
  ps.push_back(StartPserver("j", 2));
  // Two trainers race for init/lock (not selected: the store decides).
  auto race = testing::RaceForInit(2, Options("j"), kElements, 100.0f,
                                   /*selected=*/false);
  ASSERT_EQ(race.errors, 0);
  EXPECT_EQ(race.initializers, 1);
  auto& clients = race.clients;

  ASSERT_TRUE(Push(clients[0].get(), 1.0f).ok());
  ASSERT_TRUE(Push(clients[1].get(), 2.0f).ok());
  auto w = Pull(clients[1].get());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (float v : *w) ASSERT_EQ(v, 97.0f);

  // A second job on the same etcd: its own ps/0, its own count.
  Subprocess other = StartPserver("other", 1);
  {
    auto c = ConnectAndInit(Options("other"), 5.0f);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE(Push(c->get(), 1.0f).ok());
    auto ov = Pull(c->get());
    ASSERT_TRUE(ov.ok());
    for (float x : *ov) ASSERT_EQ(x, 4.0f);
  }

  // Wait until a periodic checkpoint (every second) covers the pushes: the
  // second one recorded after they were applied began after them. Then
  // kill a pserver of job j and start a replacement.
  auto jst = OpenStore("j");
  ASSERT_TRUE(jst.ok()) << jst.status().ToString();
  ASSERT_TRUE(WaitForCheckpoints(jst->get(), 1, Checkpoints(jst->get(), 1) + 2))
      << "pserver 1 recorded no checkpoint after the pushes";
  ps[1].Kill();
  ps.push_back(StartPserver("j", 2));
  // The trainers' next steps may fail while the index is free; they
  // reconnect, finding the replacement through ps/<i>/addr.
  Status s;
  auto deadline = Deadline::InMs(40000);
  do {
    s = Push(clients[0].get(), 3.0f);
  } while (!s.ok() && !deadline.Expired());
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The other trainer's first call after the death fails (it was talking to
  // the dead process) and marks it for reconnection; the next one works.
  w = Pull(clients[1].get());
  if (!w.ok()) {
    std::printf("first pull after the replacement: %s\n",
                w.status().ToString().c_str());
    w = Pull(clients[1].get());
  }
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // Pushes that failed were not applied anywhere or were applied on the
  // surviving pserver only; blocks of the replaced pserver hold checkpoint
  // plus later updates: 97 - 3 per applied push. Every block must show the
  // same number of applied pushes as the surviving pserver's blocks, or one
  // fewer (a step half-applied when the pserver died).
  for (float v : *w) {
    EXPECT_LE(v, 94.0f);
    EXPECT_EQ(static_cast<int>(97.0f - v) % 3, 0) << v;
  }
  // The job's other trainer works on, and the other job was not touched.
  ASSERT_TRUE(Push(clients[1].get(), 3.0f).ok());
  auto st = OpenStore("j");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto count = (*st)->Get(coord::keys::kPsCount, Deadline::InMs(5000));
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->value, "2");
  auto meta = (*st)->Get(coord::keys::PsCheckpoint(1), Deadline::InMs(5000));
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_NE(meta->value.find("dir="), std::string::npos);
  for (auto& p : ps) p.Stop(10000);
  other.Stop(10000);
}

// A trainer that connected before the initialization finds a pserver that
// was replaced (at another port) while it waited: its wait for the
// parameters asks the store again instead of retrying the dead address.
TEST_F(StoreDiscoveryTest, WaitForInitFollowsAPserverReplacedElsewhere) {
  auto st = OpenStore("moved");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  // Leases of 6 s, not 2: under ctest -j3 beside two busy loops etcd once
  // left keepalives unanswered for 2 s, and both pservers gave up their
  // claims and exited. The replacement waits for the killed one's lease.
  constexpr int kTtl = 6;
  std::vector<Subprocess> ps;
  ps.push_back(StartPserver("moved", 2, kTtl));
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::PsAddr(0)));
  ps.push_back(StartPserver("moved", 2, kTtl));
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::PsAddr(1)));
  auto old_addr = (*st)->Get(coord::keys::PsAddr(0), Deadline::InMs(5000));
  ASSERT_TRUE(old_addr.ok());

  auto waiter = PServerClient::Connect(Options("moved"));
  ASSERT_TRUE(waiter.ok()) << waiter.status().ToString();

  ps[0].Kill();
  ps.push_back(StartPserver("moved", 2, kTtl));
  Deadline d = Deadline::InMs(30000);
  for (;;) {
    auto a = (*st)->Get(coord::keys::PsAddr(0), Deadline::InMs(2000));
    if (a.ok() && a->value != old_addr->value) break;
    ASSERT_FALSE(d.Expired()) << "no replacement published ps/0/addr";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto init = ConnectAndInit(Options("moved"), 7.0f);
  ASSERT_TRUE(init.ok()) << init.status().ToString();

  auto w = Pull(waiter->get());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (float v : *w) ASSERT_EQ(v, 7.0f);
  ASSERT_TRUE(Push(waiter->get(), 2.0f).ok());
  w = Pull(init->get());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (float v : *w) ASSERT_EQ(v, 5.0f);
  for (auto& p : ps) p.Stop(10000);
}

// A trainer that looked the pservers up while one was being replaced holds
// its old address (here: a port that accepts and never answers, as when the
// dead pserver's port was taken by another process). Pserver 0 still
// answers, so the trainer's registration, not its wait for the parameters,
// is what fails; the next call asks the store again and finds the
// replacement (it used to retry the old address until its steps ran out).
TEST_F(StoreDiscoveryTest, RegistrationThatFailsLooksThePserversUpAgain) {
  auto st = OpenStore("stale");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::vector<Subprocess> ps;  // ps[i] claims index i
  ps.push_back(StartPserver("stale", 2));
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::PsAddr(0)));
  ps.push_back(StartPserver("stale", 2));
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::PsAddr(1)));
  auto init = ConnectAndInit(Options("stale"), 7.0f);
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  ASSERT_TRUE(WaitForCheckpoints(st->get(), 1, Checkpoints(st->get(), 1) + 2))
      << "pserver 1 recorded no checkpoint after the initialization";

  SilentListener silent;
  ASSERT_TRUE(silent.ok());
  const std::string stale = silent.address();

  ps[1].Kill();
  ASSERT_TRUE((*st)
                  ->Put(coord::keys::PsAddr(1), stale, coord::kNoLease,
                        Deadline::InMs(5000))
                  .ok());
  auto opts = Options("stale");
  opts.rpc_timeout_ms = 2000;
  auto late = PServerClient::Connect(opts);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  std::vector<float> w(kElements, -1);
  Status first =
      (*late)->GetParams({{"w", w.data(), w.size() * 4}}, Deadline::InMs(3000));
  EXPECT_FALSE(first.ok()) << "registered at a port that never answers";

  ps.push_back(StartPserver("stale", 2));
  Deadline d = Deadline::InMs(30000);
  for (;;) {
    auto a = (*st)->Get(coord::keys::PsAddr(1), Deadline::InMs(2000));
    if (a.ok() && a->value != stale) break;
    ASSERT_FALSE(d.Expired()) << "no replacement published ps/1/addr";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto pulled = Pull(late->get());
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  for (float v : *pulled) ASSERT_EQ(v, 7.0f);
  ASSERT_TRUE(Push(late->get(), 2.0f).ok());
  for (auto& p : ps) p.Stop(10000);
}

// etcd down for a few seconds (less than the lease TTL): the data path does
// not need it, leases are renewed when it is back, nobody stops serving.
TEST_F(StoreDiscoveryTest, EtcdDownForSecondsIsRiddenOut) {
  std::vector<Subprocess> ps;
  for (int i = 0; i < 2; i++) {
    ps.push_back(Subprocess::Start(
                     {BuiltBinary("pserver/daemon/fabps-pserver"), "--provider",
                      "tcp;ofi_rxm", "--host", "127.0.0.1", "--num-pservers",
                      "2", "--store", store_, "--job", "j", "--lease-ttl", "8",
                      "--checkpoint-dir", dir_.File("ckpt"), "--save-period",
                      "1", "--apply-threads", "1"},
                     Log(started_++))
                     .value());
  }
  auto c = ConnectAndInit(Options("j"), 50.0f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(etcd_->Stop().ok());
  // Training goes on while etcd is down (periodic checkpoints too; their
  // records in the store fail and are logged).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int pushes = 0;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(Push(c->get(), 1.0f).ok()) << "push " << pushes;
    pushes++;
  }
  ASSERT_TRUE(etcd_->Restart().ok());
  // Each pserver records a checkpoint again: a fenced put, which works only
  // while its claim (and so its lease) survived the outage.
  auto st = OpenStore("j");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  for (int i = 0; i < 2; i++) {
    ASSERT_TRUE(WaitForCheckpoints(st->get(), i, Checkpoints(st->get(), i) + 1))
        << "pserver " << i << " recorded no checkpoint after etcd came back";
  }
  for (auto& p : ps) ASSERT_TRUE(p.running()) << "a pserver stopped serving";
  ASSERT_TRUE(Push(c->get(), 1.0f).ok());
  pushes++;
  auto w = Pull(c->get());
  ASSERT_TRUE(w.ok());
  for (float v : *w) ASSERT_EQ(v, 50.0f - pushes);
  // The claims are still there, so a replacement would find them taken.
  EXPECT_TRUE((*st)->Get(coord::keys::PsAddr(0), Deadline::InMs(5000)).ok());
  EXPECT_TRUE((*st)->Get(coord::keys::PsAddr(1), Deadline::InMs(5000)).ok());
  for (auto& p : ps) p.Stop(10000);
}

// etcd gone for longer than the lease TTL: the pserver can no longer know
// that its index is still its own, so it stops serving (exit 3) rather than
// risk a second owner.
TEST_F(StoreDiscoveryTest, PserverWhoseLeaseIsLostStopsServing) {
  Subprocess p = StartPserver("j", 1);  // --lease-ttl 2
  auto st = OpenStore("j");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::PsAddr(0)));
  ASSERT_TRUE(p.running());
  auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(etcd_->Stop().ok());
  auto r = p.Wait(20000);
  ASSERT_TRUE(r.ok()) << "the pserver kept serving with its lease lost";
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped)
          .count();
  EXPECT_TRUE(WIFEXITED(*r) && WEXITSTATUS(*r) == 3) << *r;
  EXPECT_LT(secs, 2 + 10.0) << "took longer than the TTL and a margin";
  EXPECT_NE(ReadFileOrEmpty(Log(0)).find("lost the claim"), std::string::npos);
  ASSERT_TRUE(etcd_->Restart().ok());
}

// A pserver started while etcd is down keeps trying the store, and SIGTERM
// still ends it at once (exit 0: it had claimed nothing).
TEST_F(StoreDiscoveryTest, SigtermEndsAPserverWaitingForTheStore) {
  ASSERT_TRUE(etcd_->Stop().ok());
  Subprocess p = StartPserver("j", 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFileOrEmpty(Log(0)).find("retrying") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(ReadFileOrEmpty(Log(0)).find("retrying"), std::string::npos)
      << "the pserver did not try the store";
  ASSERT_TRUE(p.Signal(SIGTERM).ok());
  // At most one store call (5 s) runs before the signal is looked at.
  auto r = p.Wait(15000);
  ASSERT_TRUE(r.ok()) << "SIGTERM did not end a pserver waiting for etcd";
  EXPECT_TRUE(WIFEXITED(*r) && WEXITSTATUS(*r) == 0) << *r;
  ASSERT_TRUE(etcd_->Restart().ok());
}

TEST_F(StoreDiscoveryTest, MismatchedPserverCountIsRefused) {
  Subprocess a = StartPserver("j", 2);
  // Wait for a's claim (ps/count is put first).
  auto st = OpenStore("j");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WaitForKey(st->get(), coord::keys::kPsCount));
  Subprocess b = StartPserver("j", 3);
  auto r = b.Wait(20000);
  ASSERT_TRUE(r.ok()) << "a pserver with the wrong count kept running";
  EXPECT_TRUE(WIFEXITED(*r) && WEXITSTATUS(*r) == 2);
  EXPECT_NE(ReadFileOrEmpty(Log(1)).find("ps/count"), std::string::npos);
  a.Stop(10000);
}

// The store records each checkpoint's file, header CRC and size; a
// restarted pserver compares the recorded file before loading it, and when
// it is another file (here: the previous checkpoint copied over it, whose
// every CRC is good) says so and loads the previous one.
TEST_F(StoreDiscoveryTest, SwappedCheckpointIsDetectedByItsRecordedHeaderCrc) {
  Subprocess ps = StartPserver("crc", 1);
  auto c = ConnectAndInit(Options("crc"), 10.0f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto st = OpenStore("crc");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  // Two checkpoints recorded after a push (w = 9), then another push
  // (w = 8) and two more: the last two files differ in content.
  ASSERT_TRUE(Push(c->get(), 1.0f).ok());
  ASSERT_TRUE(WaitForCheckpoints(st->get(), 0, Checkpoints(st->get(), 0) + 2));
  ASSERT_TRUE(Push(c->get(), 1.0f).ok());
  ASSERT_TRUE(WaitForCheckpoints(st->get(), 0, Checkpoints(st->get(), 0) + 2));
  ps.Kill();
  auto record = coord::ReadCheckpointRecord(st->get(), 0, Deadline::InMs(5000));
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  ASSERT_NE(record->size, 0u);
  // Files newer than the record (written just before the kill, never
  // recorded) are dropped: the recorded one is the newest.
  auto files = pserver::ListCheckpoints(record->dir, 0);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  size_t newest = 0;
  while (newest < files->size() &&
         (*files)[newest].path != record->dir + "/" + record->file) {
    ASSERT_EQ(::unlink((*files)[newest].path.c_str()), 0);
    ++newest;
  }
  ASSERT_LT(newest + 1, files->size()) << "no previous checkpoint";
  const std::string corrupt = (*files)[newest].path;
  const std::string previous = (*files)[newest + 1].path;
  uint32_t header_crc = 0;
  ASSERT_TRUE(pserver::ReadCheckpoint(
                  corrupt,
                  [&](const pserver::CheckpointHeader& h) {
                    header_crc = h.crc;
                    return Status::OK();
                  },
                  nullptr)
                  .ok());
  EXPECT_EQ(header_crc, record->crc);
  // What the previous file holds: the values the pserver must serve.
  std::vector<float> expected;
  ASSERT_TRUE(pserver::ReadCheckpoint(
                  previous, nullptr,
                  [&](const pserver::BlockView& v) {
                    const float* f = static_cast<const float*>(v.values);
                    expected.insert(expected.end(), f, f + v.value_bytes / 4);
                    return Status::OK();
                  })
                  .ok());
  ASSERT_EQ(expected.size(), kElements);
  // The previous file, good and of the same size, under the recorded name.
  ASSERT_TRUE(std::filesystem::copy_file(
      previous, corrupt, std::filesystem::copy_options::overwrite_existing));

  Subprocess again = StartPserver("crc", 1);
  auto d = Deadline::InMs(kMs);
  std::string log;
  while ((log = ReadFileOrEmpty(Log(1))).find("recovered from") ==
             std::string::npos &&
         !d.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(log.find("recovered from " + previous), std::string::npos) << log;
  EXPECT_NE(log.find(corrupt + " is not the file its record in the store "
                               "names"),
            std::string::npos)
      << log;
  auto w = Pull(c->get());
  if (!w.ok()) w = Pull(c->get());  // the first call finds the old one dead
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(*w, expected);
  again.Stop(10000);
}

// The job's pservers stop (each checkpoints and releases its index),
// fabps-reshard re-cuts their checkpoints for another count, and that many
// pservers start: a trainer that stayed up follows, re-registering with the
// new layout on its next call, and finds every value as it was; its pushes
// apply on the new pservers. 2 -> 3 -> 1.
TEST_F(StoreDiscoveryTest, TrainerFollowsItsJobReshardedToAnotherCount) {
  std::vector<Subprocess> ps;
  ps.push_back(StartPserver("rs", 2, 10));
  ps.push_back(StartPserver("rs", 2, 10));
  auto c = ConnectAndInit(Options("rs"), 10.0f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(Push(c->get(), 1.0f).ok());
  float expect = 9.0f;
  for (int count : {3, 1}) {
    for (auto& p : ps) {
      auto code = p.Stop(20000);
      ASSERT_TRUE(code.ok() && WIFEXITED(*code) && WEXITSTATUS(*code) == 0);
    }
    ps.clear();
    const std::string log = dir_.File("reshard-" + std::to_string(count));
    auto tool = Subprocess::Start(
        {BuiltBinary("cmd/reshard/fabps-reshard"), "--store", store_, "--job",
         "rs", "--num-pservers", std::to_string(count)},
        log);
    ASSERT_TRUE(tool.ok()) << tool.status().ToString();
    auto code = tool->Wait(60000);
    ASSERT_TRUE(code.ok() && WIFEXITED(*code) && WEXITSTATUS(*code) == 0)
        << ReadFileOrEmpty(log);
    for (int i = 0; i < count; ++i) ps.push_back(StartPserver("rs", count, 10));
    // The first call may still meet the old processes' addresses (and
    // marks the client for reconnection); the next ones follow the store.
    Result<std::vector<float>> w = Status::Unavailable("not pulled");
    Deadline d = Deadline::InMs(kMs);
    while (!(w = Pull(c->get())).ok() && !d.Expired()) {
    }
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (float v : *w) ASSERT_EQ(v, expect) << "after re-sharding to " << count;
    ASSERT_TRUE(Push(c->get(), 2.0f).ok());
    expect -= 2.0f;
    w = Pull(c->get());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (float v : *w) ASSERT_EQ(v, expect) << "pushed with " << count;
  }
  for (auto& p : ps) p.Stop(10000);
}

}  // namespace
}  // namespace fabps::trainer

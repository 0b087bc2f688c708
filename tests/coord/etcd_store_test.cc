// Cases only the etcd backend has: endpoint fail-over and etcd going away
// for a while and coming back.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "coord/etcd/etcd_http.h"
#include "tests/coord/store_test_util.h"
#include "tests/util/etcd_server.h"
#include "tests/util/subprocess.h"
#include "tests/util/test_ca.h"

namespace fabps::coord::testing {
namespace {

using Code = Status::Code;

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = BackendEnv::Create(Backend::kEtcd);
    if (!env.ok() && env.status().code() == Code::kNotFound) {
      GTEST_SKIP() << env.status().ToString();
    }
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(*env);
  }
  Deadline D() const { return Deadline::InMs(5000); }
  std::unique_ptr<BackendEnv> env_;
};

// Runs etcdctl against the test's etcd; OK when it exits 0.
Status Etcdctl(const std::string& url, std::vector<std::string> args,
               const fabps::testing::TempDir& dir) {
  std::vector<std::string> argv = {"/usr/bin/etcdctl", "--endpoints=" + url};
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = fabps::testing::Subprocess::Start(argv, dir.File("etcdctl.log"));
  if (!p.ok()) return p.status();
  auto st = p->Wait(20000);
  if (!st.ok()) return st.status();
  if (!WIFEXITED(*st) || WEXITSTATUS(*st) != 0) {
    return Status::IOError("etcdctl failed: " + fabps::testing::ReadFileOrEmpty(
                                                    dir.File("etcdctl.log")));
  }
  return Status::OK();
}

// etcd with authentication on: a job's user (whose role may only touch
// "/authjob/") works with user:password, including leases and watches; a
// wrong password or another job's keys are PermissionDenied.
TEST_F(EtcdStoreTest, UserAndPasswordWithAPerJobRole) {
  if (fabps::testing::ReadFileOrEmpty("/usr/bin/etcdctl").empty())
    GTEST_SKIP() << "no etcdctl";
  fabps::testing::TempDir dir;
  const std::string url = env_->etcd()->client_url();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"user", "add", "root:rootpw"},
           {"user", "grant-role", "root", "root"},
           {"role", "add", "jobrole"},
           {"role", "grant-permission", "jobrole", "--prefix=true", "readwrite",
            "/authjob/"},
           {"user", "add", "fabps:fabpspw"},
           {"user", "grant-role", "fabps", "jobrole"},
           {"auth", "enable"}}) {
    ASSERT_TRUE(Etcdctl(url, args, dir).ok()) << args[0] << " " << args[1];
  }
  StoreOptions o;
  o.spec = "etcd:" + url;
  o.job = "authjob";
  o.etcd_credentials = "fabps:fabpspw";
  auto s = OpenStore(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto put = (*s)->Put("k", "v", kNoLease, D());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  auto got = (*s)->Get("k", D());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, "v");
  auto lease = (*s)->GrantLease(5, D());
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_TRUE((*s)->Put("leased", "x", lease->id, D()).ok());
  ASSERT_TRUE((*s)->StartKeepAlive(lease->id, nullptr).ok());
  auto w = (*s)->WatchKeys("w/", true, 0, D());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*s)->Put("w/1", "a", kNoLease, D()).ok());
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(10000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kv.key, "w/1");
  ASSERT_TRUE((*s)->Revoke(lease->id, D()).ok());

  // Another job's keys are out of this user's reach.
  o.job = "otherjob";
  auto other = OpenStore(o);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->Put("k", "v", kNoLease, D()).status().code(),
            Code::kPermissionDenied);
  // A wrong password, or none, gets nothing.
  o.job = "authjob";
  o.etcd_credentials = "fabps:wrong";
  auto bad = OpenStore(o);
  ASSERT_TRUE(bad.ok());
  auto r = (*bad)->Get("k", D());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied)
      << r.status().ToString();
  o.etcd_credentials = "";
  auto none = OpenStore(o);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->Get("k", D()).ok());
  o.etcd_credentials = "no-colon";
  EXPECT_EQ(OpenStore(o).status().code(), Code::kInvalidArgument);
}

// etcd serving https with client-certificate authentication (certificates
// of a throw-away CA): a store with the CA and a client certificate works,
// leases and watches included; without the client certificate, trusting
// another CA, or with a missing file, it is refused with a clear error.
TEST(EtcdTlsTest, HttpsWithClientCertificates) {
  using fabps::testing::EtcdServer;
  using fabps::testing::TestCa;
  if (EtcdServer::BinaryPath().empty()) GTEST_SKIP() << "etcd not installed";
  fabps::testing::TempDir dir;
  auto ca = TestCa::Make(dir.path(), "ca");
  auto other = TestCa::Make(dir.path(), "other");
  ASSERT_TRUE(ca.ok() && other.ok()) << ca.status().ToString();
  auto server = ca->Issue("etcd", "IP:127.0.0.1,DNS:localhost");
  auto client = ca->Issue("client", "DNS:fabps");
  ASSERT_TRUE(server.ok() && client.ok()) << server.status().ToString();
  auto etcd = EtcdServer::Start(20000, {server->cert, server->key, ca->pem()});
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  ASSERT_EQ((*etcd)->client_url().rfind("https://", 0), 0u);

  StoreOptions good;
  good.spec = "etcd:" + (*etcd)->client_url();
  good.job = "tlsjob";
  good.etcd_ca_file = ca->pem();
  good.etcd_cert_file = client->cert;
  good.etcd_key_file = client->key;
  auto s = OpenStore(good);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto put = (*s)->Put("k", "v", kNoLease, Deadline::InMs(5000));
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  auto lease = (*s)->GrantLease(5, Deadline::InMs(5000));
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_TRUE((*s)->StartKeepAlive(lease->id, nullptr).ok());
  auto w = (*s)->WatchKeys("w/", true, 0, Deadline::InMs(5000));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*s)->Put("w/1", "a", lease->id, Deadline::InMs(5000)).ok());
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(10000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kv.value, "a");

  auto refused = [&](StoreOptions o) {
    auto st = OpenStore(o);
    if (!st.ok()) return st.status();
    return (*st)->Get("k", Deadline::InMs(3000)).status();
  };
  StoreOptions no_cert = good;
  no_cert.etcd_cert_file = no_cert.etcd_key_file = "";
  Status r = refused(no_cert);
  EXPECT_EQ(r.code(), Code::kPermissionDenied) << r.ToString();
  std::printf("no client certificate: %s\n", r.ToString().c_str());
  StoreOptions wrong_ca = good;
  wrong_ca.etcd_ca_file = other->pem();
  r = refused(wrong_ca);
  EXPECT_EQ(r.code(), Code::kPermissionDenied) << r.ToString();
  std::printf("etcd of another CA: %s\n", r.ToString().c_str());
  StoreOptions missing = good;
  missing.etcd_cert_file = dir.File("absent.pem");
  r = refused(missing);
  EXPECT_EQ(r.code(), Code::kInvalidArgument) << r.ToString();
  EXPECT_NE(r.message().find("absent.pem"), std::string::npos);
  StoreOptions plain = good;
  plain.spec =
      "etcd:http://127.0.0.1:" + std::to_string((*etcd)->client_port());
  EXPECT_FALSE(refused(plain).ok());
  // The good store still works after all that.
  auto got = (*s)->Get("k", Deadline::InMs(5000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->value, "v");
}

TEST_F(EtcdStoreTest, FailsOverToALiveEndpoint) {
  StoreOptions o;
  // The first endpoint refuses connections (nothing listens there).
  o.spec =
      "etcd:http://127.0.0.1:" + std::to_string(fabps::testing::FreeTcpPort()) +
      "," + env_->etcd()->client_url();
  o.job = "failover";
  auto s = OpenStore(o);
  ASSERT_TRUE(s.ok());
  auto r = (*s)->Put("k", "v", kNoLease, D());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*s)->Get("k", D())->value, "v");
  auto w = (*s)->WatchKeys("k", false, *r, D());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(WaitEvents(w->get(), 1, D()).size(), 1u);

  o.spec =
      "etcd:http://127.0.0.1:" + std::to_string(fabps::testing::FreeTcpPort());
  auto dead = OpenStore(o);
  ASSERT_TRUE(dead.ok());  // opening does not contact etcd
  auto start = SteadyClock::now();
  auto g = (*dead)->Get("k", Deadline::InMs(800));
  EXPECT_EQ(g.status().code(), Code::kUnavailable) << g.status().ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(
      (*dead)->WatchKeys("k", false, 0, Deadline::InMs(500)).status().code(),
      Code::kUnavailable);
}

TEST_F(EtcdStoreTest, EtcdDownForAWhileThenBack) {
  auto s = env_->Open("outage", 2000);
  ASSERT_TRUE(s.ok());
  Store& st = **s;
  auto r0 = st.Put("state", "before", kNoLease, D());
  ASSERT_TRUE(r0.ok());
  auto w = st.WatchKeys("state", false, 0, D());
  ASSERT_TRUE(w.ok());
  // A long lease survives a short outage; a 2 s one is given up.
  auto long_lease = st.GrantLease(30, D());
  auto short_lease = st.GrantLease(2, D());
  ASSERT_TRUE(long_lease.ok() && short_lease.ok());
  std::atomic<int> long_lost{0}, short_lost{0};
  ASSERT_TRUE(st.StartKeepAlive(long_lease->id, [&](LeaseId, const Status&) {
                  long_lost++;
                }).ok());
  ASSERT_TRUE(st.StartKeepAlive(short_lease->id, [&](LeaseId, const Status&) {
                  short_lost++;
                }).ok());

  ASSERT_TRUE(env_->etcd()->Stop().ok());
  auto start = SteadyClock::now();
  auto put = st.Put("state", "during", kNoLease, Deadline::InMs(1000));
  EXPECT_EQ(put.status().code(), Code::kUnavailable) << put.status().ToString();
  auto get = st.Get("state", Deadline::InMs(1000));
  EXPECT_EQ(get.status().code(), Code::kUnavailable) << get.status().ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(6));

  // Down for longer than the short lease's TTL.
  WaitUntil([&] { return short_lost.load() > 0; }, Deadline::InMs(10000));
  EXPECT_EQ(short_lost.load(), 1);
  EXPECT_FALSE(st.LeaseAlive(short_lease->id));

  ASSERT_TRUE(env_->etcd()->Restart().ok());
  auto after = st.Put("state", "after", kNoLease, Deadline::InMs(10000));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(st.Get("state", D())->value, "after");
  // The watch re-established itself and delivers the change made after.
  auto events = WaitEvents(w->get(), 1, Deadline::InMs(15000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kv.value, "after");
  EXPECT_EQ(events[0].kv.mod_revision, *after);
  EXPECT_TRUE(st.LeaseAlive(long_lease->id));
  EXPECT_EQ(long_lost.load(), 0);
  EXPECT_TRUE(st.KeepAliveOnce(long_lease->id, D()).ok());
}

TEST_F(EtcdStoreTest, WatchFromACompactedRevisionFails) {
  auto s = env_->Open("compacted");
  ASSERT_TRUE(s.ok());
  int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = (*s)->Put("k", std::to_string(i), kNoLease, D());
    ASSERT_TRUE(r.ok());
    last = *r;
  }
  etcd::EtcdHttp http({env_->etcd()->client_url()}, 500);
  auto c = http.Call("/v3/kv/compaction",
                     {{"revision", std::to_string(last)}, {"physical", true}},
                     D(), false);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto w = (*s)->WatchKeys("k", false, 1, D());
  Status end = w.status();
  if (w.ok()) {
    std::vector<WatchEvent> events;
    end = (*w)->Next(&events, Deadline::InMs(5000));
    EXPECT_TRUE(events.empty());
  }
  EXPECT_EQ(end.code(), Code::kFailedPrecondition) << end.ToString();
  // From the compaction revision on, history is still there.
  auto ok = (*s)->WatchKeys("k", false, last, D());
  ASSERT_TRUE(ok.ok());
  auto events = WaitEvents(ok->get(), 1, D());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kv.value, "4");
}

}  // namespace
}  // namespace fabps::coord::testing

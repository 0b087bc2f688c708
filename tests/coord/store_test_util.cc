#include "tests/coord/store_test_util.h"

#include <cctype>
#include <thread>

namespace fabps::coord::testing {

std::string BackendName(Backend b) {
  return b == Backend::kLocal ? "local" : "etcd";
}

Result<std::unique_ptr<BackendEnv>> BackendEnv::Create(Backend b) {
  std::unique_ptr<BackendEnv> env(new BackendEnv());
  env->backend_ = b;
  if (b == Backend::kEtcd) {
    if (fabps::testing::EtcdServer::BinaryPath().empty()) {
      return Status::NotFound(
          "etcd is not installed (Debian package etcd-server)");
    }
    FABPS_ASSIGN_OR_RETURN(env->etcd_, fabps::testing::EtcdServer::Start());
  }
  return env;
}

std::string BackendEnv::spec() const {
  if (backend_ == Backend::kLocal) return "local:" + dir_.File("store");
  return "etcd:" + etcd_->client_url();
}

Result<std::unique_ptr<Store>> BackendEnv::Open(const std::string& job,
                                                int64_t timeout_ms) {
  StoreOptions o;
  o.spec = spec();
  o.job = job;
  o.timeout_ms = timeout_ms;
  return OpenStore(o);
}

std::vector<WatchEvent> WaitEvents(Watch* w, size_t n, Deadline deadline) {
  std::vector<WatchEvent> out;
  while (out.size() < n) {
    Status s = w->Next(&out, deadline);
    if (!s.ok()) break;
  }
  return out;
}

std::string HelperBinary() {
  return fabps::testing::BuiltBinary("tests/coord/coord_store_helper");
}

bool WaitUntilAbsent(Store* store, const std::string& key, Deadline deadline) {
  while (!deadline.Expired()) {
    auto r = store->Range(key, store->DefaultDeadline());
    if (!r.ok()) return false;
    bool present = false;
    for (const KeyValue& kv : r->kvs) present |= kv.key == key;
    if (!present) return true;
    auto w = store->WatchKeys(key, false, r->revision + 1, deadline);
    if (!w.ok()) return false;
    std::vector<WatchEvent> events;
    while (deadline.Expired() == false) {
      Status s = (*w)->Next(&events, deadline);
      if (!s.ok()) break;
      for (const WatchEvent& e : events)
        if (e.type == WatchEvent::Type::kDelete) return true;
      events.clear();
    }
  }
  return false;
}

void BackendTest::SetUp() {
  auto env = BackendEnv::Create(GetParam());
  if (!env.ok() && env.status().code() == Status::Code::kNotFound)
    GTEST_SKIP() << env.status().ToString();
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  env_ = std::move(*env);
  store_ = OpenStoreOrDie();
}

std::unique_ptr<Store> BackendTest::OpenStoreOrDie() {
  auto s = env_->Open(Job());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string BackendTest::Job() const {
  std::string name =
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string job;
  for (char c : name)
    job += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  return job.substr(0, 60);
}

}  // namespace fabps::coord::testing

#include "tests/coord/store_test_util.h"

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

}  // namespace fabps::coord::testing

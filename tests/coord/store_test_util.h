// Shared set-up for the coord store tests: a backend (a local directory or a
// real etcd started for the test) from which stores for any job are opened.
#ifndef FABPS_TESTS_COORD_STORE_TEST_UTIL_H_
#define FABPS_TESTS_COORD_STORE_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "coord/store.h"
#include "tests/util/etcd_server.h"
#include "tests/util/subprocess.h"

namespace fabps::coord::testing {

enum class Backend { kLocal, kEtcd };
std::string BackendName(Backend b);

class BackendEnv {
 public:
  // Starts etcd for kEtcd; NotFound when etcd is not installed.
  static Result<std::unique_ptr<BackendEnv>> Create(Backend b);

  Backend backend() const { return backend_; }
  // The spec stores are opened with ("local:/tmp/..." or "etcd:http://...").
  std::string spec() const;
  Result<std::unique_ptr<Store>> Open(const std::string& job,
                                      int64_t timeout_ms = 5000);
  fabps::testing::EtcdServer* etcd() { return etcd_.get(); }
  const std::string& dir() const { return dir_.path(); }

 private:
  Backend backend_ = Backend::kLocal;
  fabps::testing::TempDir dir_;
  std::unique_ptr<fabps::testing::EtcdServer> etcd_;
};

// Collects events from `w` until there are at least `n` or `deadline` passes.
std::vector<WatchEvent> WaitEvents(Watch* w, size_t n, Deadline deadline);

// The path of the helper binary.
std::string HelperBinary();

}  // namespace fabps::coord::testing

#endif  // FABPS_TESTS_COORD_STORE_TEST_UTIL_H_

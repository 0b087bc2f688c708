// Shared set-up for the coord store tests: a backend (a local directory or a
// real etcd started for the test) from which stores for any job are opened.
#ifndef FABPS_TESTS_COORD_STORE_TEST_UTIL_H_
#define FABPS_TESTS_COORD_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coord/store.h"
#include "tests/util/etcd_server.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"

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

// Waits until `key` is absent (a lease expired, a lock was released),
// watching for its delete; false when `deadline` passes first.
bool WaitUntilAbsent(Store* store, const std::string& key, Deadline deadline);

// Polls a condition until a deadline (one home: tests/util/wait_until.h).
using fabps::testing::WaitUntil;

// The fixture of the suites run over both backends: a backend, and stores
// opened on it for one job named after the test (each store stands for one
// process of the job). Skips when etcd is not installed.
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  // Another "process" of the test's job; fails the test when it cannot.
  std::unique_ptr<Store> OpenStoreOrDie();
  // The test's name as a job name.
  std::string Job() const;
  Deadline D(int64_t ms = 5000) const { return Deadline::InMs(ms); }

  std::unique_ptr<BackendEnv> env_;
  std::unique_ptr<Store> store_;
};

#define FABPS_INSTANTIATE_OVER_BACKENDS(suite)                             \
  INSTANTIATE_TEST_SUITE_P(                                                \
      Backends, suite,                                                     \
      ::testing::Values(::fabps::coord::testing::Backend::kLocal,          \
                        ::fabps::coord::testing::Backend::kEtcd),          \
      [](const ::testing::TestParamInfo<::fabps::coord::testing::Backend>& \
             info) {                                                       \
        return ::fabps::coord::testing::BackendName(info.param);           \
      })

}  // namespace fabps::coord::testing

#endif  // FABPS_TESTS_COORD_STORE_TEST_UTIL_H_
